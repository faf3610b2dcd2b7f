"""`BatchApply`: runs a sub-component's API method on [B, T, ...] data by folding T into B."""
from __future__ import annotations

from typing import Any, Union

from rlgraph.backend_system import get_backend
from rlgraph.components.common.leading_ranks import leaf_spaces, map_leaf_spaces, require_ranks
from rlgraph.components.component import Component
from rlgraph.spaces import Space
from rlgraph.utils import nest
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class BatchApply(Component):
    """Applies `sub_component.<api_method_name>` to inputs with batch and time ranks, for
    sub-components that take a batch rank only (dense layers, networks, preprocessors): the
    input [B, T, ...] is folded into [B*T, ...], passed through the API method, and each result
    [B*T, ...] is unfolded back into [B, T, ...]. Time-major inputs [T, B, ...] fold into [T*B, ...]
    and come back time-major. Sonnet's `BatchApply` does the same.

    Container inputs are folded leaf by leaf (every leaf needs both ranks); the API method's
    results may be nested differently (e.g. a network that takes a Dict and returns one tensor):
    each of their leaves is unfolded with the B and T of the input. The API method must take one
    argument and keep the B*T rows.

    `ReShape(fold_time_rank=True)` / `ReShape(unfold_time_rank=True)` do this for a single tensor;
    BatchApply folds whole containers, so it has its own two graph functions (reshapes).

    Args:
        sub_component: The component (or its spec) to apply; it becomes a sub-component.
        api_method_name: The API method of `sub_component` to call (default "apply").
        scope: Default "batch-apply".

    Raises:
        RLGraphSpecError: If `sub_component` has no API method `api_method_name`.
        RLGraphSpaceError: At build, if a leaf of the input lacks the batch or time rank.

    API:
        apply(inputs) -> the API method's result, each leaf [B, T, ...] (or [T, B, ...]).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.components.layers.preprocessing.multiply import Multiply
    >>> batch_apply = BatchApply(Multiply(factor=2.0))
    >>> test = ComponentTest(batch_apply, input_spaces=dict(inputs=FloatBox(add_batch_rank=True,
    ...                      add_time_rank=True)), backend="pytorch")
    >>> test.test(("apply", np.array([[1.0, 2.0, 3.0]], np.float32))).tolist()
    [[2.0, 4.0, 6.0]]
    """

    def __init__(self, sub_component: Union[Component, dict], api_method_name: str = "apply",
                 scope: str = "batch-apply", **kwargs):
        super().__init__(scope=scope, **kwargs)
        if not isinstance(sub_component, Component):
            sub_component = Component.from_spec(sub_component)
        if api_method_name not in sub_component.api_methods:
            raise RLGraphSpecError(f"the sub-component has no API method '{api_method_name}'",
                                   where=f"{type(self).__name__}(api_method_name)",
                                   expected=f"one of {sorted(sub_component.api_methods)}",
                                   received=repr(api_method_name))
        self.sub_component = sub_component
        self.api_method_name = api_method_name
        self.add_components(sub_component)

    def check_input_spaces(self, input_spaces, action_space=None):
        space, where = input_spaces["inputs"], f"{self.global_scope}.apply(inputs)"
        require_ranks(space, where, batch=True, time=True)
        layouts = {leaf.time_major for _, leaf in leaf_spaces(space)}
        if len(layouts) > 1:
            raise RLGraphSpaceError(space, "the leaves mix batch-major and time-major layouts", where=where,
                                    expected="all leaves batch-major or all time-major")

    @rlgraph_api
    def apply(self, inputs):
        """The sub-component's API method applied to every (batch, time) item of `inputs`."""
        folded = self._graph_fn_fold(inputs)
        applied = getattr(self.sub_component, self.api_method_name)(folded)
        return self._graph_fn_unfold(applied, inputs)

    # Folding merges two ranks into one: no traced shape shows that, so the spaces are declared.
    @graph_fn(output_space=lambda self, inputs: map_leaf_spaces(
        inputs, lambda leaf: leaf.with_extra_ranks(add_batch_rank=True, add_time_rank=False, time_major=False)))
    def _graph_fn_fold(self, inputs):
        if get_backend() == "tf":
            import tensorflow as tf
            return nest.map_structure(lambda x: tf.reshape(x, tf.concat([[-1], tf.shape(x)[2:]], axis=0)), inputs)
        return nest.map_structure(lambda x: x.reshape((-1,) + tuple(x.shape[2:])), inputs)

    @graph_fn(output_space="_unfolded_space")
    def _graph_fn_unfold(self, applied, original):
        reference = nest.flatten(original)[0]  # Any leaf of the input: they all have the same B and T.
        if get_backend() == "tf":
            import tensorflow as tf
            lead = tf.shape(reference)[:2]
            return nest.map_structure(lambda x: tf.reshape(x, tf.concat([lead, tf.shape(x)[1:]], axis=0)), applied)
        lead = tuple(reference.shape[:2])
        return nest.map_structure(lambda x: x.reshape(lead + tuple(x.shape[1:])), applied)

    def _unfolded_space(self, applied: Space, original: Space) -> Any:
        time_major = leaf_spaces(original)[0][1].time_major
        return map_leaf_spaces(applied, lambda leaf: leaf.with_extra_ranks(
            add_batch_rank=True, add_time_rank=True, time_major=time_major))
