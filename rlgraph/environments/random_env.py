"""`RandomEnv`: random states, rewards and terminals, whatever the actions (for tests and benchmarks)."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rlgraph.environments.env_utils import resolve_seed
from rlgraph.environments.environment import Environment
from rlgraph.spaces import FloatBox, Space
from rlgraph.utils.rlgraph_errors import RLGraphError


class RandomEnv(Environment):
    """Samples states from `state_space` and rewards from `reward_space`; ends episodes at random.

    Args:
        state_space: The space of the states (a Space or a spec).
        action_space: The space of the actions (a Space or a spec); actions are ignored.
        reward_space: The space rewards are sampled from (default: an unbounded FloatBox, i.e.
            standard normal rewards).
        terminal_prob: The probability that a step is terminal.
        deterministic: Whether every `reset` re-seeds the env, so that each episode repeats the
            same states, rewards and terminals (without `seed`, a seed is drawn at construction).
        seed: Seed for reproducible samples.

    >>> env = RandomEnv(state_space=FloatBox(shape=(2,)), action_space=IntBox(3), deterministic=True)
    >>> first = env.reset(); np.array_equal(env.reset(), first)
    True
    """

    def __init__(self, state_space: Any, action_space: Any, reward_space: Any = None, terminal_prob: float = 0.1,
                 deterministic: bool = False, seed: Optional[int] = None):
        if isinstance(terminal_prob, bool) or not isinstance(terminal_prob, (int, float)) \
                or not 0.0 <= terminal_prob <= 1.0:
            raise RLGraphError("invalid probability", where="RandomEnv(terminal_prob)", expected="a float in [0, 1]",
                               received=repr(terminal_prob))
        self.reward_space = Space.from_spec(reward_space if reward_space is not None else FloatBox())
        self.terminal_prob = float(terminal_prob)
        self.deterministic = bool(deterministic)
        self._terminal_rng = np.random.default_rng()
        super().__init__(state_space, action_space)
        self._seed: Optional[int] = None
        if seed is not None or self.deterministic:
            self.seed(seed)

    def seed(self, seed: Optional[int] = None) -> int:
        """Seeds states, actions, rewards and terminals (each from its own derived seed).

        Returns:
            The seed used.
        """
        seed = resolve_seed(seed)
        super().seed(seed)
        self.reward_space.seed(seed + 2)
        self._terminal_rng = np.random.default_rng(seed + 3)
        self._seed = seed
        return seed

    def reset(self) -> Any:
        """Returns a random state (with `deterministic`, the same sequence restarts).

        Returns:
            A sample of `state_space`.
        """
        if self.deterministic:
            self.seed(self._seed)
        return self.state_space.sample()

    def step(self, actions: Any = None) -> tuple:
        """Ignores `actions`; samples the next state, a reward and whether the episode ends.

        Returns:
            (state, reward, terminal, info) with info {"terminated": terminal, "truncated": False}.
        """
        state = self.state_space.sample()
        reward = self.reward_space.sample()
        reward = float(reward) if np.ndim(reward) == 0 else reward
        terminal = bool(self._terminal_rng.random() < self.terminal_prob)
        return state, reward, terminal, {"terminated": terminal, "truncated": False}
