"""`DuelingPolicy`: a policy whose discrete action heads are dueling Q-value heads."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any

from rlgraph.components.action_adapters.dueling_action_adapter import DuelingActionAdapter
from rlgraph.components.component import Component
from rlgraph.components.policies.policy import Policy
from rlgraph.spaces import Space
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class DuelingPolicy(Policy):
    """A `Policy` with one `DuelingActionAdapter` per (IntBox) action leaf (https://arxiv.org/abs/1511.06581).

    The logits of each leaf are the dueling Q-values Q = V + A - mean(A), so `get_q_values` gives
    them and the deterministic action is argmax_a Q(s, a).

    Args:
        network_spec: The shared network (see `Policy`).
        action_space: IntBox(n) or a Dict/Tuple of IntBoxes.
        units_state_value_stream: Units of each adapter's hidden state-value layer.
        units_advantage_stream: Units of each adapter's hidden advantage layer.
        weights_spec_state_value_stream: See `DuelingActionAdapter`.
        biases_spec_state_value_stream: See `DuelingActionAdapter`.
        activation_state_value_stream: See `DuelingActionAdapter`.
        weights_spec_advantage_stream: See `DuelingActionAdapter`.
        biases_spec_advantage_stream: See `DuelingActionAdapter`.
        activation_advantage_stream: See `DuelingActionAdapter`.
        scope: Default "dueling-policy".
        **kwargs: Further `Policy` arguments (`action_adapter_spec` goes to every adapter, keyed
            per action if wanted; its `pre_network_spec`, the original RLgraph's advantage stream of
            one dense layer, sets that adapter's advantage-stream arguments, see
            `DuelingActionAdapter`).

    Raises:
        RLGraphSpaceError: If an action leaf is not an IntBox.

    API (besides `Policy`'s):
        get_state_values_advantages_q_values(nn_inputs, internal_states=None): (state_values [B],
            advantages [B, *s, n], q_values [B, *s, n]), each nested like the action space.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, IntBox
    >>> policy = DuelingPolicy([{"type": "dense", "units": 3}], action_space=IntBox(2),
    ...                        units_state_value_stream=2, units_advantage_stream=2)
    >>> test = ComponentTest(policy, input_spaces=dict(nn_inputs=FloatBox(shape=(2,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> v, a, q = test.test(("get_state_values_advantages_q_values", np.ones((4, 2), np.float32)))
    >>> bool(np.allclose(q, v[:, None] + a - a.mean(axis=-1, keepdims=True), atol=1e-6))
    True
    """

    def __init__(self, network_spec: Any, action_space: Any = None, units_state_value_stream: int = 128,
                 units_advantage_stream: int = 128, weights_spec_state_value_stream: Any = None,
                 biases_spec_state_value_stream: Any = None, activation_state_value_stream: Any = "relu",
                 weights_spec_advantage_stream: Any = None, biases_spec_advantage_stream: Any = None,
                 activation_advantage_stream: Any = "relu", scope: str = "dueling-policy", **kwargs):
        self.dueling_spec = dict(
            units_state_value_stream=units_state_value_stream, units_advantage_stream=units_advantage_stream,
            weights_spec_state_value_stream=weights_spec_state_value_stream,
            biases_spec_state_value_stream=biases_spec_state_value_stream,
            activation_state_value_stream=activation_state_value_stream,
            weights_spec_advantage_stream=weights_spec_advantage_stream,
            biases_spec_advantage_stream=biases_spec_advantage_stream,
            activation_advantage_stream=activation_advantage_stream)
        super().__init__(network_spec, action_space=action_space, scope=scope, **kwargs)

    def _make_action_adapter(self, leaf: Space, index: int, parameterization: str) -> Component:
        # The adapter spec's own stream settings (the original RLgraph's configs put them there)
        # win over the policy's defaults; a "type" there may only name the dueling adapter.
        spec = self._leaf_adapter_spec(index)
        type_ = spec.pop("type", None)
        if type_ is not None and Component.resolve_type(type_) is not DuelingActionAdapter:
            raise RLGraphSpecError("a dueling policy builds dueling action adapters",
                                   where=f"{type(self).__name__}(action_adapter_spec.type)",
                                   expected='"dueling-action-adapter" (or no type)', received=repr(type_),
                                   hint="use a plain policy (dueling_q false) for other adapters.")
        return DuelingActionAdapter(leaf, scope=f"dueling-action-adapter-{index}", **{**self.dueling_spec, **spec})

    @rlgraph_api
    def get_state_values_advantages_q_values(self, nn_inputs, internal_states=None):
        """(state_values, advantages, q_values), each nested like the action space."""
        flat = self._map_adapters("get_dueling_output", nn_inputs, internal_states)
        return tuple(self._nest(OrderedDict((k, v[i]) for k, v in flat.items())) for i in range(3))

