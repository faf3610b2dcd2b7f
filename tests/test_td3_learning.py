"""Learning test: TD3 swings up Pendulum-v1 with the shipped config, shrunk to fit the suite's budget.

The config (rl-baselines3-zoo's TD3 settings: 400 x 300 networks, batch 256, 10k random steps
first, tau 0.005) needs ~15k env steps. Here the networks become 64 x 64, the batch 128, the
random steps 1000, and tau 0.02 (the targets follow 4x faster; with 0.005 seed 1 needed 5000 steps
instead of 3500); policy delay, target smoothing and the Gaussian noise stay. One seed per backend,
each in a spawned process with one backend thread (`test_learning._run_seeds`); greedy evaluation
(5 episodes) every 500 steps. Measured on the 2-core machine: PyTorch seeds 1 to 4 reached -400 at
step 3500, 3000, 3500, 3000; TF seeds 1 to 4 at 3000, 3000, 3500, 3500; 12-16 CPU seconds per
seed; the whole file 30 CPU seconds (29.5 s wall) on a quiet machine. The full config's figures: docs/agents/td3.md.
"""
import pytest
from backend_marks import needs_tf

from test_ddpg_learning import HIDDEN
from test_learning import _run_seeds

pytestmark = pytest.mark.learning

CONFIG = "configs/td3_pendulum.json"
TARGET = -400.0
SMALL = [f"network_spec={HIDDEN}", f"critic_network_spec={HIDDEN}", "update_spec.batch_size=128",
         "random_steps=1000", "update_spec.steps_before_update=1000", "target_actor_update=0.02",
         "target_critic_update=0.02", "training_spec.num_timesteps=5000", "training_spec.evaluation_interval=500",
         f"training_spec.stop_at_return={TARGET}"]


@pytest.mark.parametrize("backend", ["pytorch", pytest.param("tf", marks=needs_tf)])
def test_td3_pendulum(backend):
    """Mean greedy return >= -400 over 5 episodes within 5000 env steps (seed 1)."""
    solved = _run_seeds(CONFIG, backend, [1], SMALL)
    assert all(solved), solved
