"""`Exploration`: epsilon-greedy discrete actions and noisy continuous actions."""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.components.explorations.epsilon_exploration import EpsilonExploration
from rlgraph.components.explorations.noise.noise import Noise
from rlgraph.spaces import FloatBox, IntBox, Space
from rlgraph.utils import torch_random
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError


class Exploration(Component):
    """Turns a policy's actions into exploring actions.

    Discrete actions (`IntBox` leaves, also inside a container): each batch item b explores with
    probability epsilon(t) (an `EpsilonExploration` sub-component, scope "epsilon-exploration");
    an exploring item gets a uniform random action in [low, high) for every element of every
    IntBox leaf (one decision per item, shared by all leaves). Continuous actions (one `FloatBox`
    leaf): a noise sub-component's draw is added to every item and the result clipped to the
    space's bounds (where finite).

    Which parts exist follows the specs: `noise_spec` given -> noise; `epsilon_spec` given, or
    no `noise_spec` -> epsilon-greedy (default decay: linear 1.0 -> 0.1). Leaves that no part
    handles (FloatBox without noise) pass through unchanged.

    The bounds and categories come from the build's `action_space` if there is one (it must have
    the structure of `actions`), else from the `actions` space.

    Args:
        epsilon_spec: Spec of the `EpsilonExploration`, e.g. {"decay_spec": ["linear", 1.0, 0.05]}.
        noise_spec: Spec of the `Noise`, e.g. {"type": "gaussian", "stddev": 0.1} or
            {"type": "ornstein-uhlenbeck", "sigma": 0.2}.
        scope: Default "exploration".

    Raises:
        RLGraphSpecError: For bad specs.
        RLGraphSpaceError: (at build time) for actions without batch rank, unbounded or non-int/
            float leaves, IntBox leaves without epsilon-greedy, or an action space that does not
            match `actions`.

    API:
        get_action(actions, time_percentage, use_exploration=True) -> actions like `actions`
            ([B, ...] per leaf). time_percentage is a scalar or [B] in [0, 1]; with
            use_exploration False the actions come back unchanged.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import IntBox
    >>> exploration = Exploration(epsilon_spec={"decay_spec": 1.0})  # always explore
    >>> test = ComponentTest(exploration, input_spaces=dict(actions=IntBox(3, add_batch_rank=True),
    ...                      time_percentage=float), backend="pytorch")
    >>> out = test.test(("get_action", [np.zeros(100, dtype=np.int32), 0.5]))
    >>> sorted(set(out.tolist()))
    [0, 1, 2]
    """

    def __init__(self, epsilon_spec: Any = None, noise_spec: Any = None, scope: str = "exploration", **kwargs):
        super().__init__(scope=scope, **kwargs)
        self.epsilon_exploration = None
        self.noise = None
        if epsilon_spec is not None or noise_spec is None:
            self.epsilon_exploration = EpsilonExploration.from_spec(epsilon_spec)
            self.add_components(self.epsilon_exploration)
        if noise_spec is not None:
            self.noise = Noise.from_spec(noise_spec)
            self.add_components(self.noise)
        self.leaf_spaces: Dict[str, Space] = {}  # Auto-key -> action leaf (no ranks), set at build.
        self._scalar_bounds: Dict[str, tuple] = {}

    def check_input_spaces(self, input_spaces, action_space=None):
        where = f"{self.global_scope}.get_action(actions)"
        actions = input_spaces["actions"]
        flat_actions = actions.flatten()
        if not all(leaf.has_batch_rank for leaf in flat_actions.values()):
            raise RLGraphSpaceError(actions, "actions need a batch rank", where=where,
                                    expected="a space with add_batch_rank=True")
        space = actions if action_space is None else action_space
        flat = space.flatten()
        if list(flat) != list(flat_actions) or \
                any(type(flat[k]) is not type(flat_actions[k]) or flat[k].shape != flat_actions[k].shape
                    for k in flat):
            raise RLGraphSpaceError(actions, "the actions do not match the action space", where=where,
                                    expected=action_space, hint="pass actions of the agent's action space.")
        self.leaf_spaces = {key: leaf.strip_ranks() for key, leaf in flat.items()}
        # IntBox leaves whose elements all share one range [low, high): python ints for a plain randint.
        self._scalar_bounds = {key: (int(leaf.low.flat[0]), int(leaf.high.flat[0]))
                               for key, leaf in self.leaf_spaces.items()
                               if isinstance(leaf, IntBox) and np.all(leaf.low == leaf.low.flat[0])
                               and np.all(leaf.high == leaf.high.flat[0])}
        floats = [leaf for leaf in self.leaf_spaces.values() if isinstance(leaf, FloatBox)]
        for key, leaf in self.leaf_spaces.items():
            if isinstance(leaf, IntBox):
                if self.epsilon_exploration is None:
                    raise RLGraphSpaceError(leaf, f"discrete action '{key or 'actions'}' but no epsilon-greedy part",
                                            where=where, hint="pass epsilon_spec as well as noise_spec.")
                if not _int_bounded(leaf):
                    raise RLGraphSpaceError(leaf, "discrete actions need bounds for random actions", where=where,
                                            expected="e.g. IntBox(num_actions)")
            elif not isinstance(leaf, FloatBox):
                raise RLGraphSpaceError(leaf, "only IntBox and FloatBox actions can explore", where=where,
                                        expected="IntBox or FloatBox leaves")
        if self.noise is not None:
            if len(floats) != 1:
                raise RLGraphSpaceError(space, f"noise needs exactly one continuous action, found {len(floats)}",
                                        where=where, hint="drop noise_spec for purely discrete actions.")
            self.noise.set_action_space(floats[0])

    @rlgraph_api
    def get_action(self, actions, time_percentage, use_exploration=True):
        """Exploring actions; see the class docstring."""
        if self.epsilon_exploration is not None:
            do_explore = self.epsilon_exploration.do_explore(actions, time_percentage)
            actions = self._graph_fn_epsilon_greedy(actions, do_explore, use_exploration)
        if self.noise is not None:
            actions = self._graph_fn_add_noise(actions, self.noise.get_noise(), use_exploration)
        return actions

    @graph_fn(flatten_ops={"actions"}, split_ops=True, add_auto_key_as_first_param=True)
    def _graph_fn_epsilon_greedy(self, key, actions, do_explore, use_exploration):
        space = self.leaf_spaces[key]
        if not isinstance(space, IntBox):
            return actions
        bounds = self._scalar_bounds.get(key)
        if get_backend() == "tf":
            import tensorflow as tf
            if bounds is not None and actions.dtype in (tf.int32, tf.int64):
                random_actions = tf.random.uniform(tf.shape(actions), bounds[0], bounds[1], dtype=actions.dtype)
            else:
                low, high = space.low.astype(np.float64), space.high.astype(np.float64)
                u = tf.random.uniform(tf.shape(actions), dtype=tf.float64)
                random_actions = tf.cast(tf.floor(low + u * (high - low)), actions.dtype)
            mask = tf.logical_and(do_explore, tf.cast(use_exploration, tf.bool))
            if actions.shape.rank != 1:
                mask = tf.reshape(mask, tf.concat([tf.shape(mask), tf.ones([tf.rank(actions) - 1], tf.int32)], 0))
            return tf.where(mask, random_actions, actions)
        import torch
        if not use_exploration:
            return actions  # Greedy acting skips the random draws.
        if bounds is not None:
            # The same range for every element (e.g. IntBox(n)): one randint.
            random_actions = torch_random.randint(bounds[0], bounds[1], actions.shape, dtype=actions.dtype,
                                                  device=actions.device)
        else:
            low, high = space.low.astype(np.float64), space.high.astype(np.float64)
            u = torch_random.rand(actions.shape, dtype=torch.float64, device=actions.device)
            low_t, high_t = (torch.as_tensor(b, device=actions.device) for b in (low, high))
            random_actions = torch.floor(low_t + u * (high_t - low_t)).to(actions.dtype)
        mask = do_explore if actions.dim() == 1 else do_explore.reshape(tuple(do_explore.shape) +
                                                                        (1,) * (actions.dim() - 1))
        return torch.where(mask, random_actions, actions)

    @graph_fn(flatten_ops={"actions"}, split_ops=True, add_auto_key_as_first_param=True)
    def _graph_fn_add_noise(self, key, actions, noise, use_exploration):
        space = self.leaf_spaces[key]
        if not isinstance(space, FloatBox):
            return actions
        low, high = space.low, space.high
        bounded = bool(np.any(np.isfinite(low)) or np.any(np.isfinite(high)))
        if get_backend() == "tf":
            import tensorflow as tf
            noisy = actions + tf.cast(noise, actions.dtype)
            if bounded:
                noisy = tf.clip_by_value(noisy, tf.constant(low, actions.dtype), tf.constant(high, actions.dtype))
            return tf.where(tf.cast(use_exploration, tf.bool), noisy, actions)
        import torch
        noisy = actions + noise.to(device=actions.device, dtype=actions.dtype)
        if bounded:
            low_t, high_t = (torch.as_tensor(b, dtype=actions.dtype, device=actions.device) for b in (low, high))
            noisy = torch.minimum(torch.maximum(noisy, low_t), high_t)
        return torch.where(torch.as_tensor(use_exploration, dtype=torch.bool, device=actions.device), noisy, actions)


def _int_bounded(space: IntBox) -> bool:
    """Whether no element of an IntBox spans its dtype's whole range (IntBox() without bounds)."""
    info = np.iinfo(space.dtype)
    return not bool(np.any((space.low == info.min) & (space.high == info.max)))
