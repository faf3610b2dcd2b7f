"""Gymnasium environments for tests that need one in a subprocess: importing this module (e.g.
through the gym id "envs_for_tests:RLGraphTest/Failing-v0") registers them."""
import os

import gymnasium
import numpy as np


class FailingEnv(gymnasium.Env):
    """Counts up; the copy reset with seed `fail_seed` fails at its `fail_at`-th step: it raises
    ValueError ("raise") or its process exits with code 3 ("exit"). With `close_marker`, `close()`
    writes the file "<close_marker>-<seed of the last reset>"."""

    observation_space = gymnasium.spaces.Box(0.0, 100.0, shape=(1,), dtype=np.float32)
    action_space = gymnasium.spaces.Discrete(2)

    def __init__(self, fail_seed=11, fail_at=3, how="raise", close_marker=None):
        self.fail_seed, self.fail_at, self.how, self.close_marker = fail_seed, fail_at, how, close_marker
        self.seed_used, self.steps = None, 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        if seed is not None:
            self.seed_used = seed
        self.steps = 0
        return np.zeros(1, dtype=np.float32), {}

    def step(self, action):
        self.steps += 1
        if self.seed_used == self.fail_seed and self.steps == self.fail_at:
            self._fail()
        return np.full(1, self.steps, dtype=np.float32), float(action), self.steps >= 5, False, {}

    def close(self):
        if self.close_marker:
            with open(f"{self.close_marker}-{self.seed_used}", "w") as handle:
                handle.write("closed")

    def _fail(self):
        if self.how == "exit":
            os._exit(3)
        raise ValueError(f"step {self.steps} of the copy seeded {self.seed_used} failed")


gymnasium.register("RLGraphTest/Failing-v0", entry_point=FailingEnv)
