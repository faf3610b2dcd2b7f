"""Learning test: DDPG swings up Pendulum-v1 with the shipped config, shrunk to fit the suite.

The config's networks (256 x 256) and batch (256) become 64 x 64 and 128, which learn as fast per
env step on Pendulum and take a third of the compute. The seeds run in parallel spawn processes
with one backend thread each (`test_learning._run_seeds`). Measured on the 2-core machine (PyTorch):
seeds 1 to 6 passed -300 after 4000 or 5000 env steps; ~32 s per seed on a quiet machine, up to
~100 s when other jobs load it. The full config's figures over 20k steps: docs/agents/ddpg.md.
"""
import pytest
from backend_marks import needs_tf

from test_learning import _run_seeds

pytestmark = pytest.mark.learning

CONFIG = "configs/ddpg_pendulum.json"
TARGET = -300.0
HIDDEN = '[{"type": "dense", "units": 64, "activation": "relu", "scope": "hidden-1"}, ' \
         '{"type": "dense", "units": 64, "activation": "relu", "scope": "hidden-2"}]'
SMALL = [f"network_spec={HIDDEN}", f"critic_network_spec={HIDDEN}", "update_spec.batch_size=128",
         "training_spec.num_timesteps=10000", "training_spec.evaluation_interval=1000",
         f"training_spec.stop_at_return={TARGET}"]


@pytest.mark.parametrize("backend, seeds", [("pytorch", [1, 2]), pytest.param("tf", [1], marks=needs_tf)])
def test_ddpg_pendulum(backend, seeds):
    """Mean greedy return >= -300 over 5 episodes within 10k env steps, for every seed."""
    solved = _run_seeds(CONFIG, backend, seeds, SMALL)
    assert all(solved), solved
