"""Vector environments: several copies of one environment stepped together with batched data."""
from __future__ import annotations

import abc
from typing import Any, Callable, List, Optional, Union

import numpy as np

from rlgraph.environments.env_utils import resolve_seed
from rlgraph.environments.environment import Environment
from rlgraph.utils import nest
from rlgraph.utils.rlgraph_errors import RLGraphEnvError, RLGraphError


def _stack(items: List[Any]) -> Any:
    """Stacks a list of (possibly nested) states into one structure of arrays with a leading [N] rank."""
    if not isinstance(items[0], (dict, tuple, list)):
        return np.stack(items)  # Plain arrays or numbers (the common case, once per step).
    return nest.map_structure(lambda *leaves: np.stack([np.asarray(leaf) for leaf in leaves]), *items)


def check_num_environments(num_environments: Any, where: str) -> int:
    """`num_environments` as an int >= 1, else an `RLGraphError` naming `where`."""
    if isinstance(num_environments, bool) or not isinstance(num_environments, (int, np.integer)) \
            or num_environments < 1:
        raise RLGraphError("invalid number of environments", where=f"{where}(num_environments)",
                           expected="an int >= 1", received=repr(num_environments))
    return int(num_environments)


def split_actions(actions: Any, num_environments: int, where: str) -> List[Any]:
    """The action of each environment: rows of an array [N, ...], of each leaf of a nested
    structure of such arrays, or the items of a list of N actions."""
    if isinstance(actions, list):
        if len(actions) != num_environments:
            raise RLGraphError("one action per environment is needed", where=where,
                               expected=f"{num_environments} actions", received=f"{len(actions)} actions")
        return actions
    if isinstance(actions, np.ndarray):
        return list(actions)
    return [nest.map_structure(lambda batch, i=i: batch[i], actions) for i in range(num_environments)]


def step_error(error: BaseException, env: Any, index: int, action: Any) -> RLGraphEnvError:
    """The error of environment `index` (named by `str(env)`) whose `step(action)` raised `error`
    (raise it `from error`, so that the environment's own exception stays its cause)."""
    return RLGraphEnvError(f"the environment raised {type(error).__name__}: {error}", where=f"{env}.step(action)",
                           env_index=index, received=f"action {action!r} for env {index}")


class VectorEnv(Environment, metaclass=abc.ABCMeta):
    """Holds `num_environments` environments built from one spec; actions and results are batched.

    There is no automatic reset: when `terminals[i]` is True the caller (the worker) resets that
    environment with `reset(i)` before stepping it again; stepping a finished environment is
    up to that environment.

    Args:
        num_environments: How many environments.
        env_spec: A spec dict for `Environment.from_spec` (e.g. ``{"type": "grid-world"}``), an
            Environment (only with one environment), or a callable returning a new Environment.
        seed: Base seed: environment i is seeded with seed + i. Without it, a "seed" in a spec
            dict is the base seed; otherwise the environments are left unseeded.

    Raises:
        RLGraphError: For an invalid count or a spec that does not give Environments.
    """

    def __init__(self, num_environments: int, env_spec: Union[dict, Environment, Callable[[], Environment]],
                 seed: Optional[int] = None):
        self.num_environments = check_num_environments(num_environments, type(self).__name__)
        if isinstance(env_spec, dict) and seed is None:
            seed = env_spec.get("seed")
        self.environments = [self._make_env(env_spec, index) for index in range(self.num_environments)]
        super().__init__(self.environments[0].state_space, self.environments[0].action_space)
        if seed is not None:
            self.seed(seed)

    def _make_env(self, env_spec: Any, index: int) -> Environment:
        where = f"{type(self).__name__}(env_spec)"
        if isinstance(env_spec, Environment):
            if self.num_environments > 1:
                raise RLGraphError("one Environment object cannot serve several environments", where=where,
                                   expected="a spec dict or a callable that makes a new Environment",
                                   received=f"{env_spec} for num_environments={self.num_environments}")
            return env_spec
        if isinstance(env_spec, (dict, str)):
            spec = dict(env_spec, seed=None) if isinstance(env_spec, dict) and "seed" in env_spec else env_spec
            env = Environment.from_spec(spec)
        elif callable(env_spec):
            env = env_spec()
        else:
            env = None
        if not isinstance(env, Environment):
            raise RLGraphError("the env spec does not give an Environment", where=where,
                               expected="a spec dict, an Environment, or a callable returning an Environment",
                               received=repr(env if env is not None else env_spec))
        return env

    def get_env(self, index: int = 0) -> Environment:
        """The environment at `index`."""
        return self.environments[index]

    def seed(self, seed: Optional[int] = None) -> int:
        """Seeds environment i with seed + i.

        Returns:
            The base seed used.
        """
        seed = resolve_seed(seed)
        for index, env in enumerate(self.environments):
            env.seed(seed + index)
        return seed

    @abc.abstractmethod
    def reset(self, index: int = 0) -> Any:
        """Resets the environment at `index` and returns its state (no batch rank)."""

    @abc.abstractmethod
    def reset_all(self) -> Any:
        """Resets all environments.

        Returns:
            The states batched: arrays [N, ...] (nested like the state space for containers).
        """

    @abc.abstractmethod
    def step(self, actions: Any) -> tuple:
        """Steps every environment with its action.

        Args:
            actions: Batched actions: an array [N, ...] (a nested structure of such arrays for
                container action spaces), or a list of N single actions.

        Returns:
            (states [N, ...], rewards [N], terminals [N] bool, infos: a list of N dicts).
        """

    def render(self, index: int = 0) -> Any:
        """Renders the environment at `index`."""
        return self.environments[index].render()

    def terminate(self) -> None:
        """Terminates all environments."""
        for env in self.environments:
            env.terminate()

    def __str__(self) -> str:
        return f"{type(self).__name__}({self.num_environments} x {self.environments[0]})"


class SequentialVectorEnv(VectorEnv):
    """Steps its environments one after the other in this process.

    >>> envs = SequentialVectorEnv(2, {"type": "grid-world", "world": "2x2"}, seed=3)
    >>> envs.reset_all().tolist()
    [0, 0]
    >>> states, rewards, terminals, infos = envs.step(np.array([1, 2]))
    >>> states.tolist(), rewards.tolist(), terminals.tolist()
    ([1, 2], [-1.0, 0.0], [True, False])
    """

    def reset(self, index: int = 0) -> Any:
        return self.environments[index].reset()

    def reset_all(self) -> Any:
        return _stack([env.reset() for env in self.environments])

    def step(self, actions: Any) -> tuple:
        per_env = split_actions(actions, self.num_environments, f"{type(self).__name__}.step")
        results = []
        for index, (env, action) in enumerate(zip(self.environments, per_env)):
            try:
                results.append(env.step(action))
            except Exception as error:  # Any env failure: say which env, keep the original as the cause.
                raise step_error(error, env, index, action) from error
        states, rewards, terminals, infos = zip(*results)
        return (_stack(list(states)), np.asarray(rewards, dtype=np.float32), np.asarray(terminals, dtype=bool),
                list(infos))
