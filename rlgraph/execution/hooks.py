"""Step hooks: callables that a worker runs after every environment step (as vinci's hooks).

A hook is any callable `hook(agent, data)`; `data` is a `StepData`. Hooks export what they
need themselves (print, write files, collect lists) and return nothing. A `Hook` subclass can
also react to episode ends (`on_episode_end`).

>>> from rlgraph.execution.hooks import Hook, StepData
>>> class CountRewards(Hook):
...     def __init__(self):
...         self.total = 0.0
...     def __call__(self, agent, data):
...         self.total += data.reward
>>> hook = CountRewards()
>>> hook(None, StepData(step=1, episode=1, episode_step=1, env_id=0, observation=0, action=1, reward=2.0,
...                     observation_1=1, done=False, episode_reward=2.0, training=True))
>>> hook.total
2.0
"""
from __future__ import annotations

from typing import Any, Hashable, List, NamedTuple


class StepData(NamedTuple):
    """What happened in one environment step.

    Attributes:
        step: The worker's env-step count (1-based, over all envs).
        episode: The episode number of this env step (1-based, over all envs of the worker).
        episode_step: The step within the episode (1-based).
        env_id: The environment (index in the vector env).
        observation: The state before the step (as the env returned it).
        action: The action taken.
        reward: The reward received.
        observation_1: The state after the step.
        done: Whether the episode ended with this step (terminal or truncated).
        episode_reward: The return of the episode so far (including `reward`).
        training: Whether the worker explores and learns (False in evaluation).
    """
    step: int
    episode: int
    episode_step: int
    env_id: Hashable
    observation: Any
    action: Any
    reward: float
    observation_1: Any
    done: bool
    episode_reward: float
    training: bool


class Hook:
    """Base of stateful hooks: `__call__` after each step, `on_episode_end` after each episode."""

    def __call__(self, agent: Any, data: StepData) -> None:
        """Called after every env step."""

    def on_episode_end(self, agent: Any, data: StepData) -> None:
        """Called after the last step of each episode (after `__call__`)."""


class EpisodeReturnsHook(Hook):
    """Collects (worker step, episode return, episode length) at every episode end."""

    def __init__(self):
        self.records: List[tuple] = []

    def on_episode_end(self, agent: Any, data: StepData) -> None:
        self.records.append((data.step, data.episode_reward, data.episode_step))
