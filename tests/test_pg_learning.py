"""Learning tests: PPO and A2C solve CartPole-v1 with the shipped configs.

Seeds run in parallel spawn processes (one per core, one backend thread each); each run stops
at its first greedy evaluation with a mean return >= 475. The full-length figures (100k steps
for PPO, 500k for A2C, more seeds) are in docs/performance.md.
"""
import pytest
from backend_marks import needs_tf

from test_learning import CARTPOLE_TARGET, _run_seeds

pytestmark = pytest.mark.learning


def test_ppo_cartpole_pytorch():
    """PPO reaches a greedy mean return >= 475 within 50k env steps for 3 of 3 seeds."""
    solved = _run_seeds("configs/ppo_cartpole.json", "pytorch", [1, 2, 3],
                        ["training_spec.num_timesteps=50000", f"training_spec.stop_at_return={CARTPOLE_TARGET}"])
    assert all(solved), solved


@needs_tf
def test_ppo_cartpole_tf():
    """The same on TensorFlow for 1 seed."""
    solved = _run_seeds("configs/ppo_cartpole.json", "tf", [1],
                        ["training_spec.num_timesteps=50000", f"training_spec.stop_at_return={CARTPOLE_TARGET}"])
    assert all(solved), solved


@pytest.mark.parametrize("backend", ["pytorch", pytest.param("tf", marks=needs_tf)])
def test_a2c_cartpole(backend):
    """A2C reaches a greedy mean return >= 475 within 150k env steps for 2 of 2 seeds."""
    solved = _run_seeds("configs/a2c_cartpole.json", backend, [1, 2],
                        ["training_spec.num_timesteps=150000", f"training_spec.stop_at_return={CARTPOLE_TARGET}"])
    assert all(solved), solved
