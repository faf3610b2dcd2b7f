"""`BaselineActionAdapter`: an action adapter with one extra unit for a state value V(s)."""
from __future__ import annotations

from typing import Any

from rlgraph.components.action_adapters.action_adapter import ActionAdapter
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class BaselineActionAdapter(ActionAdapter):
    """An `ActionAdapter` whose action layer has one more unit, read as the state value V(s).

    Unit 0 of the action layer is V(s) [B, 1]; the remaining units become the distribution
    parameters exactly as in `ActionAdapter` (actor-critic heads sharing one layer).

    Args:
        action_space: One primitive action space (see `ActionAdapter`).
        scope: Default "baseline-action-adapter".
        **kwargs: Further `ActionAdapter` arguments (not `add_units`, which is 1).

    API:
        get_state_values_and_parameters(nn_output): (state_values [B, 1], parameters).
        get_state_values_and_logits(nn_output): Alias (reference name).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, IntBox
    >>> adapter = BaselineActionAdapter(IntBox(2), weights_spec=0.0, biases_spec=np.array([5.0, 1.0, 2.0], np.float32))
    >>> test = ComponentTest(adapter, input_spaces=dict(nn_output=FloatBox(shape=(3,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> v, logits = test.test(("get_state_values_and_parameters", np.ones((1, 3), np.float32)))
    >>> v.tolist(), logits.tolist()
    ([[5.0]], [[1.0, 2.0]])
    """

    def __init__(self, action_space: Any, scope: str = "baseline-action-adapter", **kwargs):
        if kwargs.get("add_units", 1) != 1:
            raise RLGraphSpecError("a baseline adapter has exactly one extra unit",
                                   where=f"{type(self).__name__}(add_units)", received=repr(kwargs["add_units"]))
        if kwargs.get("use_sde"):
            raise RLGraphSpecError("use_sde needs a policy whose value function has its own network",
                                   where=f"{type(self).__name__}(use_sde)",
                                   hint="give the agent a value_function_spec (a policy without a value head).")
        kwargs["add_units"] = 1
        super().__init__(action_space, scope=scope, **kwargs)

    @rlgraph_api
    def get_state_values_and_parameters(self, nn_output):
        """(state_values [B, 1], distribution parameters)."""
        return self._graph_fn_state_values_and_parameters(self.get_action_layer_output(nn_output))

    @rlgraph_api
    def get_state_values_and_logits(self, nn_output):
        """Alias of `get_state_values_and_parameters` (reference name)."""
        return self.get_state_values_and_parameters(nn_output)

    @graph_fn(returns=2)
    def _graph_fn_state_values_and_parameters(self, action_layer_output):
        return action_layer_output[..., 0:1], self.to_parameters(action_layer_output[..., 1:])
