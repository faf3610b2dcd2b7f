"""`ValueFunction`: a state-value network V(s), a network of its own with a one-unit output layer."""
from __future__ import annotations

from typing import Any

from rlgraph.components.component import Component
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.components.neural_networks.neural_network import NeuralNetwork
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class ValueFunction(Component):
    """V(s) = w^T h(s) + b, with h a `NeuralNetwork` separate from the policy's.

    The baseline of policy-gradient agents (PPO, actor-critic) when the config gives a
    `value_function_spec`; without one they put a value head on the policy's own network
    (`SharedValueFunctionPolicy`).

    Args:
        network_spec: The hidden layers (a list of layer specs, a `NeuralNetwork` or its spec).
        weights_spec: Initializer of the output layer's kernel (default: the layer default).
        biases_spec: Initializer of its bias.
        scope: Default "value-function".

    Raises:
        RLGraphSpecError: For a missing network spec.

    API:
        value_output(nn_inputs) -> V(s) [B, 1].

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> vf = ValueFunction([{"type": "dense", "units": 2, "weights_spec": 1.0}], weights_spec=0.5)
    >>> test = ComponentTest(vf, input_spaces=dict(nn_inputs=FloatBox(shape=(2,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("value_output", np.ones((1, 2), np.float32))).tolist()  # h = [2, 2]
    [[2.0]]
    """

    def __init__(self, network_spec: Any, weights_spec: Any = None, biases_spec: Any = None,
                 scope: str = "value-function", **kwargs):
        super().__init__(scope=scope, **kwargs)
        if network_spec is None:
            raise RLGraphSpecError("a value function needs its network", where=f"{type(self).__name__}(network_spec)",
                                   hint='give e.g. [{"type": "dense", "units": 64, "activation": "tanh"}].')
        self.network = network_spec if isinstance(network_spec, Component) else NeuralNetwork.from_spec(network_spec)
        self.value_layer = DenseLayer(units=1, weights_spec=weights_spec, biases_spec=biases_spec,
                                      scope="value-function-node")
        self.add_components(self.network, self.value_layer)

    @rlgraph_api
    def value_output(self, nn_inputs):
        """V(s) [B, 1]."""
        return self.value_layer.apply(self.network.apply(nn_inputs)["output"])
