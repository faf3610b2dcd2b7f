"""The python side of `EnvironmentStepper`: making its environments (from a spec or a factory) and stepping one."""
from __future__ import annotations

import copy
from typing import Any, Callable, List, Optional

import numpy as np

from rlgraph.utils import nest
from rlgraph.utils.environment_maker import make_environment
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError


class EnvironmentMaker:
    """Makes a new environment at each call, from a spec (through `make_environment`: the maker that
    `rlgraph.environments` registers) or with a factory; checks that what comes out is one.

    Args:
        spec: The environment spec, or None.
        factory: The zero-argument factory, or None (exactly one of `spec` and `factory` is given).
        owner: The stepper's class name, for error messages.
    """

    def __init__(self, spec: Any, factory: Optional[Callable[[], Any]], owner: str):
        self.spec, self.factory, self.owner = spec, factory, owner
        self.source = f"environment_spec={spec!r}" if factory is None else f"environment={factory!r}"

    @classmethod
    def from_arguments(cls, spec: Any, factory: Any, name: str) -> "EnvironmentMaker":
        """The maker of a stepper's environments from its `environment_spec` / `environment` arguments
        (`name`: the stepper's class name).

        Raises:
            RLGraphSpecError: For both or neither, an object as spec (an `Environment` is refused
                without importing its class: a spec is a dict or a name), or a factory that is not callable.
        """
        if spec is not None and factory is not None:
            raise RLGraphSpecError("environment_spec and environment both given", where=f"{name}(environment)",
                                   hint="give a spec (environment_spec) or a factory (environment), not both.")
        if spec is None and factory is None:
            raise RLGraphSpecError("no environment given", where=f"{name}(environment_spec)",
                                   expected="environment_spec={'type': 'grid-world', 'world': '2x2'} or "
                                            "environment=a zero-argument factory")
        if spec is not None and not isinstance(spec, (dict, str)):
            raise RLGraphSpecError("environment_spec must be a spec, not an Environment object", received=repr(spec),
                                   where=f"{name}(environment_spec)", expected="a dict or a type name",
                                   hint="pass the dict the environment is made from, e.g. {'type': 'openai-gym', "
                                        "'gym_env': 'CartPole-v1', 'seed': 1}, or a factory (environment=lambda: "
                                        "OpenAIGymEnv('CartPole-v1')): the stepper makes the environment anew after the "
                                        "build and for copies.")
        if factory is not None and not callable(factory):
            raise RLGraphSpecError("environment must be a zero-argument factory, not an Environment object",
                                   where=f"{name}(environment)", received=repr(factory)[:120],
                                   hint="wrap the construction in a function, e.g. environment=lambda: GridWorld('2x2'): "
                                        "the stepper makes the environment anew after the build and for copies.")
        return cls(spec, factory, name)

    def __deepcopy__(self, memo: dict) -> "EnvironmentMaker":
        # A copied stepper calls the same factory (each call makes a new environment anyway); a spec is copied.
        return EnvironmentMaker(copy.deepcopy(self.spec, memo), self.factory, self.owner)

    def __call__(self) -> Any:
        """A new environment."""
        if self.factory is None:
            return make_environment(copy.deepcopy(self.spec), where=f"{self.owner}(environment_spec)")
        environment = self.factory()
        if not all(callable(getattr(environment, name, None)) for name in ("reset", "step", "terminate")):
            raise RLGraphSpecError("the environment factory made no environment", where=f"{self.owner}(environment)",
                                   expected="an Environment (reset, step, terminate, state_space, action_space)",
                                   received=repr(environment)[:120],
                                   hint="the factory must return a new environment at each call.")
        return environment


class EnvironmentRunner:
    """The python side of an `EnvironmentStepper`: the environment, its current state (flat leaves,
    each [1, ...]) and the running episode's return. Its methods take and return numpy arrays."""

    def __init__(self, maker: "EnvironmentMaker", state_leaves: list, action_keys: List[str]):
        self.maker = maker
        self.state_leaves = state_leaves
        self.action_keys = action_keys
        self.environment = None
        self.state: Optional[list] = None
        self.episode_return = 0.0

    def __deepcopy__(self, memo: dict) -> "EnvironmentRunner":
        # A copied stepper makes its own environment when it first steps.
        return EnvironmentRunner(copy.deepcopy(self.maker, memo), copy.deepcopy(self.state_leaves, memo),
                                  list(self.action_keys))

    def begin(self, started: Any) -> list:
        """The current state; a fresh environment's first state unless `started`."""
        if not bool(started) or self.environment is None:
            self.close()
            self.environment = self.maker()
            self._new_episode()
        return self.state

    def step(self, *flat_actions: np.ndarray) -> list:
        """Acts with the actions (flat leaves, each [1, ...]); resets the environment at a terminal."""
        actions = nest.unflatten_op({key: value[0] for key, value in zip(self.action_keys, flat_actions)})
        next_state, reward, terminal, _ = self.environment.step(actions)
        self.episode_return += float(reward)
        episode_return = self.episode_return
        if terminal:
            self._new_episode()
        else:
            self.state = self._flat_state(next_state)
        return self.state + [np.array([reward], np.float32), np.array([bool(terminal)]),
                             np.array([episode_return], np.float32)]

    def close(self) -> None:
        """Closes the environment (the next `begin` makes a new one)."""
        if self.environment is not None:
            self.environment.terminate()
        self.environment, self.state = None, None

    def _new_episode(self) -> None:
        self.state = self._flat_state(self.environment.reset())
        self.episode_return = 0.0

    def _flat_state(self, state: Any) -> list:
        flat = nest.flatten_op(state)
        out = []
        for key, leaf in self.state_leaves:
            value = np.asarray(flat.get(key), dtype=leaf.dtype) if key in flat else None
            if value is None or value.shape != tuple(leaf.shape):
                raise RLGraphError("the environment returned a state that does not fit its state space",
                                   where=f"EnvironmentStepper({self.maker.source})",
                                   expected=f"{key or 'the state'}: {leaf}",
                                   received=repr(flat.get(key)) if key in flat else f"no item {key!r}")
            out.append(value[None])
        return out
