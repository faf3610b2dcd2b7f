"""`SharedValueFunctionPolicy`: a policy with a state-value head on its network's output."""
from __future__ import annotations

from typing import Any

from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.components.policies.policy import Policy
from rlgraph.utils.decorators import rlgraph_api


class SharedValueFunctionPolicy(Policy):
    """A `Policy` plus a value head V(s) = value_activation(h @ w + b) on the shared network output h.

    Actor and critic share the network (as in A3C, https://arxiv.org/abs/1602.01783); the value
    head is a one-unit `DenseLayer` scoped "value-function-node".

    Args:
        network_spec: The shared network (see `Policy`).
        value_weights_spec: Initializer of the value head's kernel.
        value_biases_spec: Initializer of its bias.
        value_activation: Its activation (default linear).
        scope: Default "shared-value-function-policy".
        **kwargs: Further `Policy` arguments (`action_space`, `action_adapter_spec`, ...).

    API (besides `Policy`'s; all take `nn_inputs` and optional `internal_states`):
        get_state_values: V(s) [B, 1].
        get_state_values_and_parameters: (V(s) [B, 1], parameters nested like the action space).
        get_state_values_logits_probabilities_log_probs: (V(s), logits, probabilities, log_probs).
        get_state_values_log_prob_and_entropy(nn_inputs, actions): (V(s), log pi(actions), entropies).
    Each reads both heads from one pass of the network.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, IntBox
    >>> policy = SharedValueFunctionPolicy([{"type": "dense", "units": 2, "weights_spec": 1.0}],
    ...                                    value_weights_spec=0.5, action_space=IntBox(2))
    >>> test = ComponentTest(policy, input_spaces=dict(nn_inputs=FloatBox(shape=(2,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("get_state_values", np.ones((1, 2), np.float32))).tolist()  # h = [2, 2]
    [[2.0]]
    """

    def __init__(self, network_spec: Any, value_weights_spec: Any = None, value_biases_spec: Any = None,
                 value_activation: Any = None, scope: str = "shared-value-function-policy", **kwargs):
        super().__init__(network_spec, scope=scope, **kwargs)
        self.value_network = DenseLayer(units=1, weights_spec=value_weights_spec, biases_spec=value_biases_spec,
                                        activation=value_activation, scope="value-function-node")
        self.add_components(self.value_network)

    # Each API below runs the shared network once and reads both heads from its output (a conv net's
    # forward pass is most of a PPO minibatch step's cost).
    @rlgraph_api
    def get_state_values(self, nn_inputs, internal_states=None):
        """V(s) [B, 1]."""
        return self.value_network.apply(self._nn_output(nn_inputs, internal_states)["output"])

    @rlgraph_api
    def get_state_values_and_parameters(self, nn_inputs, internal_states=None):
        """(V(s) [B, 1], distribution parameters nested like the action space)."""
        out = self._nn_output(nn_inputs, internal_states)["output"]
        return self.value_network.apply(out), self._nest(self._adapters_of(out, "get_parameters"))

    @rlgraph_api
    def get_state_values_logits_probabilities_log_probs(self, nn_inputs, internal_states=None):
        """(V(s) [B, 1], logits, probabilities, log_probs); the last three as in `Policy`."""
        out = self._nn_output(nn_inputs, internal_states)["output"]
        logits, probabilities, log_probs = self._logits_probabilities_log_probs_of(out)
        return self.value_network.apply(out), logits, probabilities, log_probs

    @rlgraph_api(must_be_complete=False)
    def get_state_values_log_prob_and_entropy(self, nn_inputs, actions, internal_states=None):
        """(V(s) [B, 1], log pi(actions | nn_inputs), entropies): what a policy-gradient loss reads,
        from one pass of the network (the last two nested, as `get_log_prob_and_entropy`'s)."""
        out = self._nn_output(nn_inputs, internal_states)["output"]
        log_probs, entropies = self._log_prob_and_entropy_of(self._adapters_of(out, "get_parameters"), actions)
        return self.value_network.apply(out), log_probs, entropies
