"""Explorations: epsilon-greedy for discrete actions, noise for continuous ones."""
from rlgraph.components.explorations.epsilon_exploration import EpsilonExploration
from rlgraph.components.explorations.exploration import Exploration
from rlgraph.components.explorations.noise import *  # noqa: F401,F403
from rlgraph.components.explorations.noise import __all__ as _noise_all

__all__ = ["Exploration", "EpsilonExploration"] + _noise_all
