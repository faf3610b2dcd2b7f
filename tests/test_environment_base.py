"""The abstract `Environment` base: spaces from specs, seeding, abstract methods."""
import numpy as np
import pytest

from rlgraph.environments import Environment
from rlgraph.spaces import FloatBox, IntBox


class CountingEnv(Environment):
    """Counts up by the action; terminal at 3."""

    def __init__(self, **kwargs):
        super().__init__(state_space={"type": "int-box", "low": 0, "high": 10},
                         action_space=IntBox(2), **kwargs)
        self.count = 0

    def reset(self):
        self.count = 0
        return self.count

    def step(self, actions):
        self.count += int(actions)
        return self.count, 1.0, self.count >= 3, {}


def test_spaces_from_specs_and_steps():
    env = CountingEnv()
    assert env.state_space == IntBox(0, 10) and env.action_space == IntBox(2)
    assert env.reset() == 0
    assert [env.step(1)[:3] for _ in range(3)] == [(1, 1.0, False), (2, 1.0, False), (3, 1.0, True)]
    assert env.render() is None and env.terminate() is None
    assert str(env) == "CountingEnv(state_space=IntBox(shape=(), dtype=int32, low=0, high=10), " \
                       "action_space=IntBox(shape=(), dtype=int32, low=0, high=2))"


def test_seed_makes_space_samples_reproducible():
    env = CountingEnv(seed=7)
    first = env.action_space.sample(10)
    assert env.seed(7) == 7
    np.testing.assert_array_equal(env.action_space.sample(10), first)


def test_abstract_methods_must_be_implemented():
    class Incomplete(Environment):
        def reset(self):
            return 0

    with pytest.raises(TypeError, match="step"):
        Incomplete(FloatBox(), IntBox(2))
