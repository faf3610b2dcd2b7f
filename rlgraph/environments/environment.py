"""`Environment`: the base class of every environment adapter (gymnasium, grid worlds, ...)."""
from __future__ import annotations

import abc
from typing import Any, Optional

import numpy as np

from rlgraph.spaces import Space
from rlgraph.utils.specifiable import Specifiable


class Environment(Specifiable, abc.ABC):
    """An MDP the agent acts in: it owns a state space and an action space.

    Args:
        state_space: The space of observations (a Space or a space spec).
        action_space: The space of actions (a Space or a space spec).
        seed: Optional random seed (see `seed`).
    """

    # Constructor arguments that a greedy evaluation sets in a training spec of this environment, so
    # that it scores the task itself (e.g. AtariEnv: full games, raw rewards); see
    # `rlgraph.execution.env_ids.evaluation_env_spec`.
    evaluation_settings: dict = {}

    def __init__(self, state_space: Any, action_space: Any, seed: Optional[int] = None):
        self.state_space = Space.from_spec(state_space)
        self.action_space = Space.from_spec(action_space)
        self.rng = np.random.default_rng()  # The env's own randomness; `seed` reseeds it.
        if seed is not None:
            self.seed(seed)

    def seed(self, seed: Optional[int] = None) -> int:
        """Seeds the environment's randomness (`rng` and the spaces' samples); None uses the current
        epoch seconds.

        Returns:
            The seed actually used.

        Raises:
            RLGraphError: For a negative seed.
        """
        from rlgraph.environments.env_utils import resolve_seed
        seed = resolve_seed(seed)
        self.rng = np.random.default_rng(seed)
        self.state_space.seed(seed)
        self.action_space.seed(seed + 1)
        return seed

    @abc.abstractmethod
    def reset(self) -> Any:
        """Resets the environment and returns the initial state."""

    @abc.abstractmethod
    def step(self, actions: Any) -> tuple:
        """Executes `actions` (members of `action_space`).

        Returns:
            (next_state, reward, terminal, info).
        """

    def render(self) -> Any:
        """Renders the current state (subclasses that can render return e.g. an RGB array); default: None."""
        return None

    def terminate(self) -> None:
        """Releases resources (windows, emulators, processes); default: nothing to release."""

    def __str__(self) -> str:
        return f"{type(self).__name__}(state_space={self.state_space}, action_space={self.action_space})"
