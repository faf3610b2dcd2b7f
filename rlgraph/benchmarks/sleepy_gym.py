"""`SleepyGymCartPole`: gymnasium's CartPole-v1 whose step sleeps first (the peer library's latency-bound env)."""
from __future__ import annotations

import time

import gymnasium


class SleepyGymCartPole(gymnasium.Wrapper):
    """CartPole-v1 whose `step` sleeps `step_sleep` seconds (as `rlgraph.benchmarks.apex.SleepyCartPole`)."""

    def __init__(self, step_sleep: float = 0.002):
        super().__init__(gymnasium.make("CartPole-v1"))
        self.step_sleep = float(step_sleep)

    def step(self, action):
        time.sleep(self.step_sleep)
        return self.env.step(action)
