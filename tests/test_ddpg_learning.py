"""Learning test: DDPG swings up Pendulum-v1 (PyTorch) with the shipped config, shrunk to fit the suite.

The config's networks (256 x 256) and batch (256) become 64 x 64 and 128, which learn as fast per
env step on Pendulum and take a third of the compute. The seeds run in parallel spawn processes
with one backend thread each. Measured on the 2-core machine: seeds 1 to 6 passed -300 after 4000
or 5000 env steps; the test takes ~40 s on a quiet machine (~32 s per seed), up to ~100 s per seed
when other jobs load it. The full config's figures over 20k steps: docs/agents.md ("DDPG").
"""
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import pytest

from rlgraph.execution.training import train

pytestmark = pytest.mark.learning

CONFIG = "configs/ddpg_pendulum.json"
TARGET = -300.0
HIDDEN = '[{"type": "dense", "units": 64, "activation": "relu", "scope": "hidden-1"}, ' \
         '{"type": "dense", "units": 64, "activation": "relu", "scope": "hidden-2"}]'
SMALL = [f"network_spec={HIDDEN}", f"critic_network_spec={HIDDEN}", "update_spec.batch_size=128",
         "training_spec.num_timesteps=10000", "training_spec.evaluation_interval=1000",
         f"training_spec.stop_at_return={TARGET}"]


def _run(seed):
    overrides = SMALL + ["execution_spec.torch_num_threads=1", "execution_spec.tf_num_threads=1"]
    summary = train(CONFIG, backend="pytorch", seed=seed, overrides=overrides, progress=False)
    return seed, summary["solved_at_step"], summary["best_evaluation"], summary["wall_time"], summary["timesteps"]


def test_ddpg_pendulum_pytorch():
    """Mean greedy return >= -300 over 5 episodes within 10k env steps, for both seeds."""
    seeds = [1, 2]
    context = multiprocessing.get_context("spawn")  # No forked torch state.
    with ProcessPoolExecutor(max_workers=max(1, min(len(seeds), os.cpu_count() or 1)), mp_context=context) as pool:
        results = list(pool.map(_run, seeds))
    for seed, solved_at, best, wall, steps in results:
        print(f"{CONFIG} pytorch seed {seed}: {TARGET} reached at step {solved_at} (best evaluation {best:.1f}, "
              f"{steps} steps, {wall:.1f} s)")
    assert all(r[1] is not None for r in results), results
