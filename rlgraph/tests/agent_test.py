"""`AgentTest`: drive an agent through a worker step by step and check env, agent and variables."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rlgraph.tests.test_util import recursive_assert_almost_equal
from rlgraph.utils.rlgraph_errors import RLGraphError


class AgentTest:
    """Steps a `SingleThreadedWorker` and compares what it sees with expected values.

    Args:
        worker: A `SingleThreadedWorker` (its agent and its vector env are checked).
        seed: Seeds numpy's global generator once more before the first step.

    >>> from rlgraph.agents import DQNAgent
    >>> from rlgraph.environments import GridWorld
    >>> from rlgraph.execution import SingleThreadedWorker
    >>> env = GridWorld("2x2")
    >>> agent = DQNAgent(state_space=env.state_space, action_space=env.action_space, backend="pytorch",
    ...                  preprocessing_spec=[{"type": "reshape", "flatten": True, "flatten_categories": 4}],
    ...                  network_spec=[{"type": "dense", "units": 4}], update_spec={"do_updates": False})
    >>> test = AgentTest(SingleThreadedWorker(agent, env, seed=1))
    >>> _ = test.step(3)
    >>> test.check_agent("max_timesteps", 3)   # the worker sets the schedules' horizon
    """

    def __init__(self, worker: Any, seed: Optional[int] = 10):
        self.worker = worker
        self.agent = worker.agent
        if seed is not None:
            np.random.seed(seed)
        self.started = False

    def step(self, num_timesteps: int, use_exploration: bool = True, reset: bool = False) -> dict:
        """Runs `num_timesteps` env steps (continuing the episodes unless `reset`); returns the stats."""
        stats = self.worker.execute_timesteps(num_timesteps, use_exploration=use_exploration,
                                              reset=reset or not self.started)
        self.started = True
        return stats

    def check_env(self, prop: str, expected_value: Any, decimals: int = 7, index: int = 0) -> None:
        """Asserts that attribute `prop` of env `index` has `expected_value`."""
        env = self.worker.vector_env.get_env(index)
        recursive_assert_almost_equal(_attribute(env, prop), expected_value, decimals=decimals)

    def check_agent(self, prop: str, expected_value: Any, decimals: int = 7, key_or_index: Any = None) -> None:
        """Asserts that attribute `prop` of the agent (optionally `[key_or_index]` of it) has `expected_value`."""
        value = _attribute(self.agent, prop)
        if key_or_index is not None:
            value = value[key_or_index]
        recursive_assert_almost_equal(value, expected_value, decimals=decimals)

    def check_var(self, variable: str, expected_value: Any, decimals: int = 7) -> None:
        """Asserts that the agent's variable (global name) holds `expected_value`."""
        recursive_assert_almost_equal(self.agent.graph_executor.read_variable_values(variable), expected_value,
                                      decimals=decimals)


def _attribute(obj: Any, prop: str) -> Any:
    if not hasattr(obj, prop):
        raise RLGraphError(f"{type(obj).__name__} has no attribute '{prop}'", where="AgentTest")
    return getattr(obj, prop)
