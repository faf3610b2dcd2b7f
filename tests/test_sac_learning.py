"""Learning test: SAC swings Pendulum-v1 up with the shipped config (PyTorch 2 seeds, TF 1).

Two seeds run in parallel worker processes (one per core, one backend thread each), as in
tests/test_learning.py; each prints the step at which the greedy evaluation (5 episodes) first
reached the target and its wall time. The full 20k-step figures (3 PyTorch seeds, one TF seed)
are in docs/agents/sac.md.
"""
import pytest

from test_learning import _run_seeds

pytestmark = pytest.mark.learning

PENDULUM_TARGET = -400.0


@pytest.mark.parametrize("backend, seeds", [("pytorch", [1, 2]), ("tf", [1])])
def test_sac_pendulum(backend, seeds):
    """Mean greedy return >= -400 within 6000 env steps for every seed, evaluated every 500 steps
    (measured on PyTorch: both seeds at step 3500, 78 s for the test on the 2-core machine)."""
    solved = _run_seeds("configs/sac_pendulum.json", backend, seeds,
                        ["training_spec.num_timesteps=6000", "training_spec.evaluation_interval=500",
                         f"training_spec.stop_at_return={PENDULUM_TARGET}"])
    assert all(solved), solved
