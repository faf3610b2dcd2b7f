"""`ContainerMerger`: merges n inputs into one Dict (under given keys) or one Tuple."""
from __future__ import annotations

from typing import Any, Union

from rlgraph.components.component import Component
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.nest import DICT_KEY_RULE, is_valid_dict_key
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class ContainerMerger(Component):
    """Merges the inputs of `merge(*inputs)` into one container: a dict under the keys given to the
    constructor (in call order), or a tuple. Inputs may themselves be containers; they are nested
    as they are, except that `merge_tuples_into_one=True` splices tuple inputs into the result.

    Merging only routes data (no backend code runs): the result's parts are the inputs themselves.
    `ContainerSplitter` does the reverse.

    Args:
        *input_names_or_num_items: The dict keys, one per input in call order (each a valid Dict
            key: non-empty, no "/", not of the form "_T<n>_"); or a single int n: merge n inputs
            into a tuple; or nothing: merge any number of inputs into a tuple.
        merge_tuples_into_one: Tuple output only: the items of tuple inputs become items of the
            result ((a, b) and c give (a, b, c) instead of ((a, b), c)).
        is_tuple: Merge into a tuple (implied by an int, by no arguments, and by
            `merge_tuples_into_one`).
        scope: Default "container-merger".

    Raises:
        RLGraphSpecError: For keys that are not valid Dict keys or repeat, or keys together with
            `is_tuple`/`merge_tuples_into_one`.
        RLGraphSpaceError: At build, if the number of inputs differs from the number of keys (or n).

    API:
        merge(*inputs) -> dict key -> input (in key order) or tuple of inputs.

    >>> from rlgraph.tests import ComponentTest
    >>> merger = ContainerMerger("state", "reward")
    >>> test = ComponentTest(merger, input_spaces=dict(inputs=[FloatBox(shape=(2,)), FloatBox()]),
    ...                      backend="pytorch")
    >>> out = test.test(("merge", [np.array([1.0, 2.0], np.float32), np.float32(0.5)]))
    >>> out["state"].tolist(), float(out["reward"])
    ([1.0, 2.0], 0.5)
    """

    def __init__(self, *input_names_or_num_items: Union[str, int], merge_tuples_into_one: bool = False,
                 is_tuple: bool = False, scope: str = "container-merger", **kwargs):
        super().__init__(scope=scope, **kwargs)
        where = f"{type(self).__name__}(input_names_or_num_items)"
        items = list(input_names_or_num_items)
        self.merge_tuples_into_one = bool(merge_tuples_into_one)
        self.num_items = None  # Expected number of inputs for a tuple (None: any).
        self.dict_keys = None
        if len(items) == 1 and isinstance(items[0], int) and not isinstance(items[0], bool):
            if items[0] < 1:
                raise RLGraphSpecError("the number of items must be >= 1", where=where, received=items[0])
            self.num_items = items[0]
        elif items:
            bad = [k for k in items if not is_valid_dict_key(k)]
            if bad:
                raise RLGraphSpecError("dict keys must be strings that are valid Dict keys", where=where,
                                       expected=DICT_KEY_RULE + " (or a single int for a tuple)",
                                       received=repr(bad[0]))
            if len(set(items)) != len(items):
                raise RLGraphSpecError("dict keys must be unique", where=where, received=items)
            if is_tuple or merge_tuples_into_one:
                raise RLGraphSpecError("dict keys exclude is_tuple and merge_tuples_into_one", where=where,
                                       received=f"keys {items}", hint="pass an int (or nothing) to merge a tuple.")
            self.dict_keys = tuple(items)
        self.is_tuple = self.dict_keys is None

    def check_input_spaces(self, input_spaces, action_space=None):
        count = sum(1 for key in input_spaces if key.startswith("inputs["))
        wanted = len(self.dict_keys) if self.dict_keys is not None else self.num_items
        if wanted is not None and count != wanted:
            what = f"one per key {list(self.dict_keys)}" if self.dict_keys is not None else \
                "as given to the constructor"
            raise RLGraphSpaceError(None, "wrong number of inputs", where=f"{self.global_scope}.merge(inputs)",
                                    expected=f"{wanted} inputs ({what})", received=f"{count} inputs")

    @rlgraph_api
    def merge(self, *inputs) -> Any:
        """The inputs as one dict (under the constructor's keys) or one tuple."""
        if self.dict_keys is not None:
            return dict(zip(self.dict_keys, inputs))
        if not self.merge_tuples_into_one:
            return tuple(inputs)
        out = []
        for item in inputs:
            out.extend(item if isinstance(item, tuple) else (item,))
        return tuple(out)
