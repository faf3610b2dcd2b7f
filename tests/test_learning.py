"""Learning tests: DQN solves GridWorld 4x4 and CartPole-v1 with the shipped configs.

Seeds run in parallel worker processes (one per core, each with one backend thread), so the
CartPole tests take a few minutes on a 2-core machine. Each test prints, per seed, the step at
which the greedy evaluation first reached the target and the wall time.
"""
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor

import pytest

from rlgraph.execution.training import train

pytestmark = pytest.mark.learning

CARTPOLE_TARGET = 475.0


def _run(config, backend, seed, overrides):
    overrides = list(overrides) + ["execution_spec.torch_num_threads=1", "execution_spec.tf_num_threads=1"]
    summary = train(config, backend=backend, seed=seed, overrides=overrides, progress=False)
    return seed, summary["solved_at_step"], summary["best_evaluation"], summary["wall_time"], summary["timesteps"]


def _run_seeds(config, backend, seeds, overrides=()):
    workers = max(1, min(len(seeds), os.cpu_count() or 1))
    context = multiprocessing.get_context("spawn")  # No forked TF/torch state.
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        results = list(pool.map(_run, [config] * len(seeds), [backend] * len(seeds), seeds,
                                [overrides] * len(seeds)))
    for seed, solved_at, best, wall, steps in results:
        print(f"{config} {backend} seed {seed}: target reached at step {solved_at} (best evaluation {best:.1f}, "
              f"{steps} steps, {wall:.1f} s)")
    return [r[1] is not None for r in results]


@pytest.mark.parametrize("backend", ["pytorch", "tf"])
def test_dqn_solves_grid_world_4x4(backend):
    """The greedy policy reaches the goal (return 1.0) within 5000 steps for every seed."""
    solved = _run_seeds("configs/dqn_gridworld_4x4.json", backend, [1, 2, 3])
    assert all(solved), solved


def test_dqn_cartpole_pytorch():
    """Mean greedy return >= 475 over 5 episodes within 50k steps for at least 4 of 5 seeds."""
    solved = _run_seeds("configs/dqn_cartpole.json", "pytorch", [1, 2, 3, 4, 5],
                        [f"training_spec.stop_at_return={CARTPOLE_TARGET}"])
    assert sum(solved) >= 4, solved


def test_dqn_cartpole_tf():
    """The same on TensorFlow for at least 2 of 3 seeds."""
    solved = _run_seeds("configs/dqn_cartpole_tf.json", "tf", [1, 2, 3],
                        [f"training_spec.stop_at_return={CARTPOLE_TARGET}"])
    assert sum(solved) >= 2, solved
