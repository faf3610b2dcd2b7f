"""`SACCritic`: the Q-network of `SACAgent`, and the checks of the action spaces SAC supports."""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.components.neural_networks.neural_network import NeuralNetwork
from rlgraph.spaces import FloatBox, IntBox, Space
from rlgraph.spaces.containers import ContainerSpace
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.nest import flatten_op
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

# Discrete actions: the default target entropy is this share of the largest entropy, log(n).
DISCRETE_TARGET_ENTROPY_SCALE = 0.98


class SACCritic(Component):
    """A soft Q-function: a network of `network_spec` layers and a linear head "q-head".

    - Continuous actions (`num_actions` None): Q(s, a) = head(net([flat(s), flat(a)])) [B]; the
      state leaves and the action leaves (a Dict/Tuple of FloatBoxes in `action_space.flatten()`
      order) are flattened to [B, -1] each and concatenated, states first.
    - Discrete actions (`num_actions` n): Q(s, .) = head(net(s)) [B, n], one value per action
      (discrete SAC, Christodoulou 2019, https://arxiv.org/abs/1910.07207).

    Args:
        network_spec: A list of layer specs (or a `NeuralNetwork`) before the head.
        num_actions: n for a discrete action space, None for continuous actions.
        scope: Default "critic".

    API:
        get_q_values(states, actions=None): Q(s, a) [B] (continuous; `actions` nested like the
            action space) or Q(s, .) [B, n] (discrete; `actions` not given).
    """

    def __init__(self, network_spec: Any, num_actions: Optional[int] = None, scope: str = "critic", **kwargs):
        super().__init__(scope=scope, **kwargs)
        self.num_actions = num_actions
        self.network = network_spec if isinstance(network_spec, Component) else NeuralNetwork.from_spec(network_spec)
        self.head = DenseLayer(units=num_actions or 1, scope="q-head")
        self.add_components(self.network, self.head)

    @rlgraph_api
    def get_q_values(self, states, actions=None):
        inputs = states if actions is None else self._graph_fn_state_action_inputs(states, actions)
        q = self.head.apply(self.network.apply(inputs)["output"])
        return q if self.num_actions else self._graph_fn_squeeze(q)

    @graph_fn
    def _graph_fn_state_action_inputs(self, states, actions):
        """[B, d_s + d_a]: every state leaf, then every action leaf, flattened to [B, -1] (float)."""
        leaves = list(flatten_op(states).values()) + list(flatten_op(actions).values())
        if get_backend() == "tf":
            import tensorflow as tf
            rows = tf.shape(leaves[0])[0]
            return tf.concat([tf.reshape(tf.cast(x, tf.float32), [rows, -1]) for x in leaves], axis=-1)
        import torch
        rows = leaves[0].shape[0]
        return torch.cat([x.reshape(rows, -1).to(torch.float32) for x in leaves], dim=-1)

    @graph_fn
    def _graph_fn_squeeze(self, q):
        """[B, 1] -> [B]."""
        return q[:, 0]


def sac_action_mode(action_space: Space, where: str) -> str:
    """"continuous" for a bounded FloatBox or a Dict/Tuple of them, "discrete" for one IntBox of shape ().

    Raises:
        RLGraphSpecError: For any other action space (discrete leaves in a container, multi-discrete
            IntBoxes, BoolBoxes, unbounded FloatBoxes), naming the leaf.
    """
    flat = action_space.flatten() if isinstance(action_space, ContainerSpace) else {"": action_space}
    if isinstance(action_space, IntBox):
        if action_space.shape != ():
            raise RLGraphSpecError("SAC takes one discrete action per step", where=f"{where}(action_space)",
                                   expected="IntBox(n) of shape ()", received=str(action_space),
                                   hint="a multi-discrete action has no one-value-per-action Q-network here.")
        return "discrete"
    for key, leaf in flat.items():
        at = f"{where}(action_space{key})"
        if not isinstance(leaf, FloatBox):
            raise RLGraphSpecError("SAC supports one IntBox, or FloatBoxes (alone or in a Dict/Tuple)", where=at,
                                   expected="FloatBox(low, high) leaves, or a single IntBox(n)",
                                   received=str(leaf),
                                   hint="discrete leaves in a container space (mixed or all discrete) are not "
                                        "supported: the critic would need the joint action's values.")
        bounds = leaf.global_bounds
        if bounds is False or not (np.isfinite(bounds[0]) and np.isfinite(bounds[1])):
            raise RLGraphSpecError("SAC needs bounded continuous actions (one finite low and high)", where=at,
                                   received=str(leaf), hint="give the FloatBox bounds, e.g. low=-1.0, high=1.0; "
                                                            "the policy squashes its Gaussian into them.")
    return "continuous"


def default_target_entropy(action_space: Space, mode: str) -> float:
    """-dim(A) for continuous actions (Haarnoja et al. 2018, https://arxiv.org/abs/1812.05905);
    0.98 * log(n) for n discrete actions (Christodoulou 2019, https://arxiv.org/abs/1910.07207)."""
    if mode == "discrete":
        return DISCRETE_TARGET_ENTROPY_SCALE * math.log(action_space.num_categories)
    flat = action_space.flatten() if isinstance(action_space, ContainerSpace) else {"": action_space}
    return -float(sum(int(np.prod(leaf.shape, dtype=np.int64)) for leaf in flat.values()))
