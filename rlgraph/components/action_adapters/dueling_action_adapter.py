"""`DuelingActionAdapter`: Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a') (Wang et al. 2015)."""
from __future__ import annotations

from typing import Any

from rlgraph.backend_system import get_backend
from rlgraph.components.action_adapters.action_adapter import ActionAdapter, reshape_last
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.spaces import IntBox
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class DuelingActionAdapter(ActionAdapter):
    """Dueling Q-values for a discrete action space (https://arxiv.org/abs/1511.06581).

    The network output x goes through two hidden streams; the state-value stream ends in one unit
    V(s), the advantage stream in the action layer A(s, a) ([B, *s, n], reshaped as in
    `ActionAdapter`). Then

        Q(s, a) = V(s) + A(s, a) - mean_a' A(s, a'),

    the mean taken over the n actions of each action element. The Q-values serve as the logits.

    Args:
        action_space: An IntBox(n) (any shape s).
        units_state_value_stream: Units of the hidden state-value layer.
        units_advantage_stream: Units of the hidden advantage layer.
        weights_spec_state_value_stream: Initializer of the hidden state-value layer's kernel (also
            used for the V head).
        biases_spec_state_value_stream: Initializer of its bias (also used for the V head).
        activation_state_value_stream: Its activation (default "relu").
        weights_spec_advantage_stream: Initializer of the hidden advantage layer's kernel.
        biases_spec_advantage_stream: Initializer of its bias.
        activation_advantage_stream: Its activation (default "relu").
        pre_network_spec: The original RLgraph's form of the hidden advantage layer: one dense
            layer spec (e.g. [{"type": "dense", "units": 256}]); its units, activation (linear if
            not given), weights_spec and biases_spec replace the four advantage-stream arguments
            above (see `advantage_stream_from_pre_network`). The adapter's pre-network *is* its
            advantage stream, so the state-value stream reads the network output directly.
        scope: Default "dueling-action-adapter".
        **kwargs: Further `ActionAdapter` arguments (`weights_spec`/`biases_spec` of the A head).

    Raises:
        RLGraphSpaceError: If the action space is not an IntBox.
        RLGraphSpecError: If `pre_network_spec` is not one dense layer.

    API:
        get_dueling_output(nn_output): (state_value [B], advantages [B, *s, n], q_values [B, *s, n]).
        get_parameters(nn_output): The q-values (the logits of a `Categorical`).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, IntBox
    >>> adapter = DuelingActionAdapter(IntBox(2), units_state_value_stream=2, units_advantage_stream=2,
    ...                                weights_spec=np.array([[1.0, 0.0], [0.0, 3.0]], np.float32),
    ...                                weights_spec_advantage_stream=np.eye(2, dtype=np.float32),
    ...                                weights_spec_state_value_stream=1.0)
    >>> test = ComponentTest(adapter, input_spaces=dict(nn_output=FloatBox(shape=(2,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> v, a, q = test.test(("get_dueling_output", np.array([[1.0, 1.0]], np.float32)))
    >>> v.tolist(), a.tolist(), q.tolist()  # V = 4, A = [1, 3], Q = 4 + A - 2
    ([4.0], [[1.0, 3.0]], [[3.0, 5.0]])
    """

    def __init__(self, action_space: Any, units_state_value_stream: int, units_advantage_stream: int,
                 weights_spec_state_value_stream: Any = None, biases_spec_state_value_stream: Any = None,
                 activation_state_value_stream: Any = "relu", weights_spec_advantage_stream: Any = None,
                 biases_spec_advantage_stream: Any = None, activation_advantage_stream: Any = "relu",
                 pre_network_spec: Any = None, scope: str = "dueling-action-adapter", **kwargs):
        super().__init__(action_space, scope=scope, **kwargs)
        if pre_network_spec is not None:
            stream = advantage_stream_from_pre_network(pre_network_spec, f"{type(self).__name__}(pre_network_spec)")
            units_advantage_stream = stream["units_advantage_stream"]
            activation_advantage_stream = stream["activation_advantage_stream"]
            weights_spec_advantage_stream = stream.get("weights_spec_advantage_stream", weights_spec_advantage_stream)
            biases_spec_advantage_stream = stream.get("biases_spec_advantage_stream", biases_spec_advantage_stream)
        if not isinstance(self.action_space, IntBox):
            raise RLGraphSpaceError(self.action_space, "dueling Q-values need a discrete action space",
                                    where=f"{type(self).__name__}(action_space)", expected="IntBox(n)")
        self.dense_layer_state_value_stream = DenseLayer(
            units=units_state_value_stream, weights_spec=weights_spec_state_value_stream,
            biases_spec=biases_spec_state_value_stream, activation=activation_state_value_stream,
            scope="dense-layer-state-value-stream")
        self.state_value_node = DenseLayer(units=1, weights_spec=weights_spec_state_value_stream,
                                           biases_spec=biases_spec_state_value_stream, scope="state-value-node")
        self.dense_layer_advantage_stream = DenseLayer(
            units=units_advantage_stream, weights_spec=weights_spec_advantage_stream,
            biases_spec=biases_spec_advantage_stream, activation=activation_advantage_stream,
            scope="dense-layer-advantage-stream")
        self.add_components(self.dense_layer_state_value_stream, self.state_value_node,
                            self.dense_layer_advantage_stream)

    @rlgraph_api
    def get_action_layer_output(self, nn_output):
        """The raw advantage-head output [B, prod(s) * n] (after the hidden advantage layer)."""
        return self.action_layer.apply(self.dense_layer_advantage_stream.apply(nn_output))

    @rlgraph_api
    def get_dueling_output(self, nn_output):
        """(state_value [B], advantages [B, *s, n], q_values [B, *s, n])."""
        state_value = self.state_value_node.apply(self.dense_layer_state_value_stream.apply(nn_output))
        return self._graph_fn_dueling(state_value, self.get_action_layer_output(nn_output))

    @rlgraph_api
    def get_parameters(self, nn_output):
        """The dueling q-values [B, *s, n]."""
        _, _, q_values = self.get_dueling_output(nn_output)
        return q_values

    @graph_fn(returns=3)
    def _graph_fn_dueling(self, state_value, action_layer_output):
        advantages = self.to_parameters(action_layer_output)
        v = reshape_last(state_value, (1,) * (len(self.action_shape) + 1))
        if get_backend() == "tf":
            import tensorflow as tf
            mean_advantage = tf.reduce_mean(advantages, axis=-1, keepdims=True)
        else:
            mean_advantage = advantages.mean(dim=-1, keepdim=True)
        return state_value[..., 0], advantages, v + advantages - mean_advantage


# Keys of a dense-layer spec and the advantage-stream argument each one becomes.
_ADVANTAGE_LAYER_KEYS = {"units": "units_advantage_stream", "activation": "activation_advantage_stream",
                         "weights_spec": "weights_spec_advantage_stream",
                         "biases_spec": "biases_spec_advantage_stream"}


def advantage_stream_from_pre_network(pre_network_spec: Any, where: str) -> dict:
    """The advantage-stream arguments of a `DuelingActionAdapter` from the original RLgraph's
    `action_adapter_spec.pre_network_spec`.

    The original's dueling policy ran the adapter's pre-network and action layer as the advantage
    stream; its configs give one dense layer there, e.g. [{"type": "dense", "units": 256}], which is
    this adapter's hidden advantage layer. Its activation defaults to linear, as the original's
    dense layers did.

    Args:
        pre_network_spec: The spec.
        where: The argument in errors.

    Raises:
        RLGraphSpecError: For anything but one dense layer (the adapter has one hidden advantage layer).
    """
    layers = [pre_network_spec] if isinstance(pre_network_spec, dict) else pre_network_spec
    layer = layers[0] if isinstance(layers, (list, tuple)) and len(layers) == 1 else None
    ok = isinstance(layer, dict) and "units" in layer and set(layer) <= {"type", "scope", *_ADVANTAGE_LAYER_KEYS}
    if ok and "type" in layer:
        ok = str(layer["type"]).lower().replace("_", "-") in ("dense", "dense-layer", "fc", "fc-layer")
    if not ok:
        raise RLGraphSpecError("a dueling adapter's pre_network_spec must be one dense layer", where=where,
                               expected='[{"type": "dense", "units": n, "activation": ...}] (keys type, units, '
                                        'activation, weights_spec, biases_spec, scope)',
                               received=repr(pre_network_spec),
                               hint="the advantage stream has one hidden layer (units_advantage_stream); put "
                                    "further layers into network_spec.")
    out = {new: layer[old] for old, new in _ADVANTAGE_LAYER_KEYS.items() if old in layer}
    out.setdefault("activation_advantage_stream", None)
    return out
