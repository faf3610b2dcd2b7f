"""DDPG's two networks: the deterministic actor mu(s) and the critic Q(s, a)."""
from __future__ import annotations

from typing import Any

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.action_adapters.pre_network import make_pre_network
from rlgraph.components.component import Component
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.components.neural_networks.neural_network import NeuralNetwork
from rlgraph.spaces import FloatBox
from rlgraph.utils.decorators import graph_fn, rlgraph_api

# The output layers start near zero: weights and biases uniform in [-3e-3, 3e-3], as in the DDPG
# paper (section 7, https://arxiv.org/abs/1509.02971), so that the first actions sit at the middle
# of the bounds and the first Q-values near 0.
HEAD_INIT = {"type": "uniform", "minval": -3e-3, "maxval": 3e-3}


def _network(spec: Any) -> Component:
    return spec if isinstance(spec, Component) else NeuralNetwork.from_spec(spec)


class DeterministicActor(Component):
    """mu(s): a network, an optional pre-network, a linear layer of prod(action shape) units, then a
    map onto the bounds.

    With `squash` (default) the output z becomes

        a = low + (tanh(z) + 1) / 2 * (high - low)          [B, *action_shape]

    which always lies inside [low, high] (per element). Without `squash` the actor returns z
    itself (reshaped): the DDPG core clips it to the bounds for acting, and training keeps it near
    them through gradient inverting (Hausknecht & Stone 2016, https://arxiv.org/abs/1511.04143).

    Args:
        network_spec: The hidden layers (a list of layer specs or a `NeuralNetwork`).
        action_space: A FloatBox with finite bounds (checked by the agent).
        squash: Map the output onto the bounds with tanh.
        pre_network_spec: Layers between the network and the action layer, as an action adapter's
            (`make_pre_network`; the agent's `action_adapter_spec.pre_network_spec`). Default: none.
        weights_spec: Initializer of the action layer's kernel (default `HEAD_INIT`).
        biases_spec: Initializer of its bias (default `HEAD_INIT`).
        scope: Default "actor".

    API:
        get_action(nn_inputs) -> mu(s) [B, *action_shape].
    """

    def __init__(self, network_spec: Any, action_space: FloatBox, squash: bool = True, pre_network_spec: Any = None,
                 weights_spec: Any = None, biases_spec: Any = None, scope: str = "actor", **kwargs):
        super().__init__(scope=scope, **kwargs)
        self.action_shape = tuple(action_space.shape)
        self.low = np.asarray(action_space.low, np.float32)
        self.high = np.asarray(action_space.high, np.float32)
        self.squash = bool(squash)
        self.network = _network(network_spec)
        self.pre_network = make_pre_network(pre_network_spec, f"{type(self).__name__}(pre_network_spec)")
        units = int(np.prod(self.action_shape)) if self.action_shape else 1
        self.action_layer = DenseLayer(units=units, weights_spec=HEAD_INIT if weights_spec is None else weights_spec,
                                       biases_spec=HEAD_INIT if biases_spec is None else biases_spec,
                                       scope="action-layer")
        self.add_components(*[c for c in (self.network, self.pre_network, self.action_layer) if c is not None])

    @rlgraph_api
    def get_action(self, nn_inputs):
        x = self.network.apply(nn_inputs)["output"]
        if self.pre_network is not None:
            x = self.pre_network.apply(x)["output"]
        return self._graph_fn_to_action(self.action_layer.apply(x))

    @graph_fn
    def _graph_fn_to_action(self, z):
        shape = [-1, *self.action_shape]
        if get_backend() == "tf":
            import tensorflow as tf
            z = tf.reshape(z, shape)
            if not self.squash:
                return z
            return self.low + 0.5 * (tf.tanh(z) + 1.0) * (self.high - self.low)
        import torch
        z = z.reshape(shape)
        if not self.squash:
            return z
        low, high = (torch.as_tensor(b, dtype=z.dtype) for b in (self.low, self.high))
        return low + 0.5 * (torch.tanh(z) + 1.0) * (high - low)


class QCritic(Component):
    """Q(s, a): the flattened state and action, concatenated, through a network and a linear unit.

        x = concat(flatten(s), flatten(a))                   [B, state_size + action_size]
        Q(s, a) = q_layer(network(x))                        [B]

    (The DDPG paper feeds the action into the second layer; feeding it with the state into the
    first, as TD3 does (https://arxiv.org/abs/1802.09477), keeps the network a plain layer list.)

    Args:
        network_spec: The hidden layers (a list of layer specs or a `NeuralNetwork`).
        weights_spec: Initializer of the Q unit's kernel (default `HEAD_INIT`).
        biases_spec: Initializer of its bias (default `HEAD_INIT`).
        scope: Default "critic".

    API:
        get_q_values(states, actions) -> Q [B].
    """

    def __init__(self, network_spec: Any, weights_spec: Any = None, biases_spec: Any = None, scope: str = "critic",
                 **kwargs):
        super().__init__(scope=scope, **kwargs)
        self.network = _network(network_spec)
        self.q_layer = DenseLayer(units=1, weights_spec=HEAD_INIT if weights_spec is None else weights_spec,
                                  biases_spec=HEAD_INIT if biases_spec is None else biases_spec, scope="q-layer")
        self.add_components(self.network, self.q_layer)

    @rlgraph_api
    def get_q_values(self, states, actions):
        x = self._graph_fn_state_action(states, actions)
        return self._graph_fn_squeeze(self.q_layer.apply(self.network.apply(x)["output"]))

    @graph_fn
    def _graph_fn_state_action(self, states, actions):
        # Static feature sizes, so that the network's first layer sees a fixed input size.
        state_size = int(np.prod(states.shape[1:]))
        action_size = int(np.prod(actions.shape[1:]))
        if get_backend() == "tf":
            import tensorflow as tf
            states = tf.reshape(tf.cast(states, tf.float32), [-1, state_size])
            actions = tf.reshape(tf.cast(actions, tf.float32), [-1, action_size])
            return tf.concat([states, actions], axis=-1)
        import torch
        states = states.to(torch.float32).reshape(-1, state_size)
        actions = actions.to(torch.float32).reshape(-1, action_size)
        return torch.cat([states, actions], dim=-1)

    @graph_fn
    def _graph_fn_squeeze(self, q):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.squeeze(q, axis=-1)
        return q.squeeze(-1)
