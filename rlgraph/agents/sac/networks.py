"""`SACCritic`: the Q-network of `SACAgent`, and the checks of the action spaces SAC supports."""
from __future__ import annotations

import math
from typing import Any, List, Optional

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
# Discrete container actions: the most joint actions the critics enumerate (one Q output each).
MAX_JOINT_ACTIONS = 4096


class SACCritic(Component):
    """A soft Q-function: a network of `network_spec` layers and a linear head "q-head".

    - Continuous actions (`num_actions` None): Q(s, a) = head(net([flat(s), flat(a)])) [B]; the
      state leaves and the action leaves (a Dict/Tuple of FloatBoxes in `action_space.flatten()`
      order) are flattened to [B, -1] each and concatenated, states first.
    - Discrete actions (`num_actions` n): Q(s, .) = head(net(s)) [B, n], one value per action
      (discrete SAC, Christodoulou 2019, https://arxiv.org/abs/1910.07207). For a Dict/Tuple of
      IntBoxes n is the number of joint actions, prod_k n_k, in the order of `joint_action_index`.

    Args:
        network_spec: A list of layer specs (or a `NeuralNetwork`) before the head.
        num_actions: n for a discrete action space, None for continuous actions.
        weights_spec: Initializer of the head's kernel (default: the layer default, Glorot uniform).
        biases_spec: Initializer of its bias (default 0).
        scope: Default "critic".

    API:
        get_q_values(states, actions=None): Q(s, a) [B] (continuous; `actions` nested like the
            action space) or Q(s, .) [B, n] (discrete; `actions` not given).
    """

    def __init__(self, network_spec: Any, num_actions: Optional[int] = None, weights_spec: Any = None,
                 biases_spec: Any = None, scope: str = "critic", **kwargs):
        super().__init__(scope=scope, **kwargs)
        self.num_actions = num_actions
        self.network = network_spec if isinstance(network_spec, Component) else NeuralNetwork.from_spec(network_spec)
        self.head = DenseLayer(units=num_actions or 1, weights_spec=weights_spec, biases_spec=biases_spec,
                               scope="q-head")
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
    """"continuous" for a bounded FloatBox or a Dict/Tuple of them; "discrete" for one IntBox of shape ()
    or a Dict/Tuple of them (at most `MAX_JOINT_ACTIONS` joint actions).

    Raises:
        RLGraphSpecError: For any other action space (a container mixing IntBox and FloatBox leaves,
            multi-discrete IntBoxes, BoolBoxes, unbounded FloatBoxes, too many joint actions), naming
            the leaf.
    """
    flat = action_space.flatten() if isinstance(action_space, ContainerSpace) else {"": action_space}
    discrete = [key for key, leaf in flat.items() if isinstance(leaf, IntBox)]
    if discrete and len(discrete) == len(flat):
        for key, leaf in flat.items():
            if leaf.shape != ():
                raise RLGraphSpecError("SAC takes one discrete action per IntBox", where=f"{where}(action_space{key})",
                                       expected="IntBox(n) of shape ()", received=str(leaf),
                                       hint="split a multi-discrete action into a Dict or Tuple of IntBox(n) leaves.")
        count = joint_action_count(action_space)
        if count > MAX_JOINT_ACTIONS:
            raise RLGraphSpecError("too many joint discrete actions: the critics have one output per joint action",
                                   where=f"{where}(action_space)", expected=f"at most {MAX_JOINT_ACTIONS}",
                                   received=f"{count} ({str(action_space)[:120]})",
                                   hint="use fewer or smaller IntBox leaves.")
        return "discrete"
    for key, leaf in flat.items():
        at = f"{where}(action_space{key})"
        if not isinstance(leaf, FloatBox):
            raise RLGraphSpecError("SAC supports IntBoxes or bounded FloatBoxes (alone or in a Dict/Tuple), "
                                   "not both in one action space", where=at,
                                   expected="FloatBox(low, high) leaves, or IntBox(n) leaves", received=str(leaf),
                                   hint="a container mixing discrete and continuous leaves is not supported: the "
                                        "discrete critics enumerate the joint actions, the continuous ones take "
                                        "sampled actions as inputs.")
        bounds = leaf.global_bounds
        if bounds is False or not (np.isfinite(bounds[0]) and np.isfinite(bounds[1])):
            raise RLGraphSpecError("SAC needs bounded continuous actions (one finite low and high)", where=at,
                                   received=str(leaf), hint="give the FloatBox bounds, e.g. low=-1.0, high=1.0; "
                                                            "the policy squashes its Gaussian into them.")
    return "continuous"


def discrete_leaf_sizes(action_space: Space) -> List[int]:
    """[n_1, ..., n_K]: the categories of the IntBox leaves in `action_space.flatten()` order ([n]
    for one IntBox)."""
    flat = action_space.flatten() if isinstance(action_space, ContainerSpace) else {"": action_space}
    return [int(leaf.num_categories) for leaf in flat.values()]


def joint_action_count(action_space: Space) -> int:
    """N = prod_k n_k, the number of joint actions of IntBox leaves."""
    return int(np.prod(discrete_leaf_sizes(action_space), dtype=np.int64))


def joint_action_index(actions: Any, leaf_sizes: List[int]) -> Any:
    """The joint index j = sum_k a_k * prod_{m > k} n_m of leaf actions a_k ([B] each, nested like the
    action space, leaves in `flatten()` order): row-major (C) order, as `np.ravel_multi_index`.
    Works on numpy arrays and on int tensors of either backend.

    >>> joint_action_index({"a": np.array([2, 0]), "b": np.array([1, 1])}, [3, 2]).tolist()  # 2 * 2 + 1, 0 * 2 + 1
    [5, 1]
    """
    leaves = list(flatten_op(actions).values())
    index = leaves[0]
    for leaf, n in zip(leaves[1:], leaf_sizes[1:]):
        index = index * n + leaf
    return index


def default_target_entropy(action_space: Space, mode: str) -> float:
    """-dim(A) for continuous actions (Haarnoja et al. 2018, https://arxiv.org/abs/1812.05905);
    0.98 * log(N) for N (joint) discrete actions (Christodoulou 2019, https://arxiv.org/abs/1910.07207),
    for a container of IntBoxes 0.98 * sum_k log(n_k), the sum of the leaves' maximal entropies."""
    if mode == "discrete":
        return DISCRETE_TARGET_ENTROPY_SCALE * sum(math.log(n) for n in discrete_leaf_sizes(action_space))
    flat = action_space.flatten() if isinstance(action_space, ContainerSpace) else {"": action_space}
    return -float(sum(int(np.prod(leaf.shape, dtype=np.int64)) for leaf in flat.values()))
