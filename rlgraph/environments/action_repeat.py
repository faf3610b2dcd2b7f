"""`ActionRepeatEnv`: repeats each action a fixed number of steps (frame skipping around any env)."""
from __future__ import annotations

from typing import Any, Optional

from rlgraph.environments.environment import Environment
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class ActionRepeatEnv(Environment):
    """Wraps an environment so that one `step` runs the action `repeat` times.

    The rewards of the inner steps are summed; the episode stops early when an inner step ends
    it (that step's state, terminal flag and info come back). Ape-X sample workers use it for
    `worker_spec.worker_frame_skip`.

    Args:
        env_spec: The inner environment: a spec, an `Environment` or a callable making one.
        repeat: Steps per action (>= 1).
        seed: Seeds the inner environment.

    >>> env = ActionRepeatEnv({"type": "grid-world", "world": "2x2"}, repeat=2)
    >>> _ = env.reset()
    >>> state, reward, terminal, info = env.step(1)  # "right" into the hole: the first inner step ends it
    >>> reward, terminal
    (-1.0, True)
    """

    def __init__(self, env_spec: Any = None, repeat: int = 1, seed: Optional[int] = None):
        if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
            raise RLGraphSpecError("repeat must be an integer >= 1", where="ActionRepeatEnv(repeat)",
                                   received=repr(repeat))
        if isinstance(env_spec, Environment):
            env = env_spec
        elif callable(env_spec) and not isinstance(env_spec, (dict, str)):
            env = env_spec()
        else:
            env = Environment.from_spec(env_spec)
        self.env = env
        self.repeat = repeat
        super().__init__(env.state_space, env.action_space)
        if seed is not None:
            self.seed(seed)

    def seed(self, seed: Optional[int] = None) -> int:
        if not hasattr(self, "env"):
            return super().seed(seed)
        used = self.env.seed(seed)
        super().seed(used)
        return used

    def reset(self) -> Any:
        return self.env.reset()

    def step(self, actions: Any) -> tuple:
        total = 0.0
        for _ in range(self.repeat):
            state, reward, terminal, info = self.env.step(actions)
            total += float(reward)
            if terminal:
                break
        return state, total, terminal, info

    def render(self) -> Any:
        return self.env.render()

    def terminate(self) -> None:
        self.env.terminate()
