"""`ContainerSplitter`: splits a Dict or Tuple input into its top-level parts, in a given order."""
from __future__ import annotations

from typing import Optional, Union

from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.spaces import Dict, Space, Tuple
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class ContainerSplitter(PreprocessLayer):
    """Splits a container into its top-level parts: `split(inputs)` returns a tuple whose item i is
    `inputs[output_order[i]]` (parts may be containers themselves). `ContainerMerger` does the
    reverse.

    For a Dict, `output_order` names keys: `ContainerSplitter("b", "a")` splits {a: x, b: y} into
    (y, x). Keys left out of `output_order` are dropped. For a Tuple, `output_order` holds indices
    (`ContainerSplitter(2, 0)` splits (x, y, z) into (z, x)), or is left out together with
    `tuple_length=n`: all n items in their order.

    Splitting only routes data (no backend code runs). As a layer, `apply` does the same as `split`.

    Args:
        *output_order: Dict keys, or tuple indices, in the order of the outputs.
        tuple_length: For a Tuple split without `output_order`: its length (the number of outputs).
        scope: Default "container-splitter".

    Raises:
        RLGraphSpecError: If neither or both of `output_order` and `tuple_length` are given, or
            `output_order` mixes keys and indices or repeats one.
        RLGraphSpaceError: At build, if the input is not a Dict/Tuple as `output_order` implies,
            a key or index is not in it, or its length differs from `tuple_length`.

    API:
        split(inputs) -> tuple of the parts, in `output_order`.
        split_into_dict(inputs) -> dict key -> part (Dict splitters only).

    >>> from rlgraph.tests import ComponentTest
    >>> space = Dict(a=FloatBox(), b=IntBox(3), add_batch_rank=True)
    >>> test = ComponentTest(ContainerSplitter("b", "a"), input_spaces=dict(inputs=space), backend="pytorch")
    >>> b, a = test.test(("split", dict(a=np.array([0.5], np.float32), b=np.array([2]))))
    >>> b.tolist(), a.tolist()
    ([2], [0.5])
    """

    def __init__(self, *output_order: Union[str, int], tuple_length: Optional[int] = None,
                 scope: str = "container-splitter", **kwargs):
        super().__init__(scope=scope, **kwargs)
        where = type(self).__name__
        if tuple_length is not None:
            if output_order:
                raise RLGraphSpecError("give either output_order or tuple_length", where=where,
                                       received=f"output_order={list(output_order)}, tuple_length={tuple_length}")
            if isinstance(tuple_length, bool) or not isinstance(tuple_length, int) or tuple_length < 1:
                raise RLGraphSpecError("tuple_length must be an int >= 1", where=f"{where}(tuple_length)",
                                       received=repr(tuple_length))
            output_order = tuple(range(tuple_length))
        if not output_order:
            raise RLGraphSpecError("nothing to split into", where=where,
                                   expected="output_order (dict keys or tuple indices) or tuple_length")
        if all(isinstance(k, str) for k in output_order):
            self.container_type = Dict
        elif all(isinstance(k, int) and not isinstance(k, bool) and k >= 0 for k in output_order):
            self.container_type = Tuple
        else:
            raise RLGraphSpecError("output_order must hold only dict keys (str) or only tuple indices (int >= 0)",
                                   where=f"{where}(output_order)", received=list(output_order))
        if len(set(output_order)) != len(output_order):
            raise RLGraphSpecError("output_order repeats an entry", where=f"{where}(output_order)",
                                   received=list(output_order))
        self.output_order = tuple(output_order)
        self.tuple_length = tuple_length
        if self.container_type is Dict:
            # Only a Dict splitter has this API method (as in the original RLgraph).
            rlgraph_api(_split_into_dict, component=self, name="split_into_dict")

    def get_preprocessed_space(self, space: Space) -> tuple:
        """The spaces of the outputs: a tuple of `space`'s parts in `output_order`."""
        self._check_space(space)
        return tuple(space[k] for k in self.output_order)

    def check_input_spaces(self, input_spaces, action_space=None):
        self._check_space(input_spaces["inputs"])

    def _check_space(self, space: Space) -> None:
        where = f"{self.global_scope}.split(inputs)"
        kind = "Dict" if self.container_type is Dict else "Tuple"
        if not isinstance(space, self.container_type):
            raise RLGraphSpaceError(space, f"the input must be a {kind} (output_order {list(self.output_order)})",
                                    where=where, expected=f"a {kind} space")
        if self.container_type is Dict:
            missing = [k for k in self.output_order if k not in space]
            if missing:
                raise RLGraphSpaceError(space, f"key(s) {missing} of output_order are not in the input", where=where,
                                        expected=f"keys among {sorted(space.keys())}", received=f"keys {missing}")
            return
        if self.tuple_length is not None and len(space) != self.tuple_length:
            raise RLGraphSpaceError(space, "the input tuple's length differs from tuple_length", where=where,
                                    expected=f"{self.tuple_length} items", received=f"{len(space)} items")
        bad = [i for i in self.output_order if i >= len(space)]
        if bad:
            raise RLGraphSpaceError(space, f"index(es) {bad} of output_order are outside the input tuple",
                                    where=where, expected=f"indices < {len(space)}", received=f"indices {bad}")

    @rlgraph_api
    def split(self, inputs) -> tuple:
        """The parts of `inputs`, as a tuple in `output_order`."""
        return tuple(inputs[k] for k in self.output_order)

    @rlgraph_api
    def apply(self, inputs) -> tuple:
        """Same as `split` (the layer interface)."""
        return tuple(inputs[k] for k in self.output_order)


def _split_into_dict(splitter: ContainerSplitter, inputs) -> dict:
    """The parts of a Dict input as a dict key -> part (only the keys in `output_order`)."""
    return {k: inputs[k] for k in splitter.output_order}
