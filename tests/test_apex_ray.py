"""Ape-X on a real Ray: one local Ray of 2 CPUs for the module (started and shut down by the
fixture, never by the executors), sample workers and a replay shard of 0.5 CPUs each.

Each executor costs a few seconds (actors import their backend and build their agents), so the
tests are few: a short workload per backend, a worker killed with SIGKILL mid-run, and actors
that ask for more resources than the cluster has. The `ray start` cluster test is in
tests/test_apex_ray_cluster.py (Ray is initialized once per process).

The kill test runs on PyTorch only: restarts are the executor's bookkeeping, which does not
depend on the backend, and `test_workload_on_ray` runs the Ray path on both backends (a TF run
on Ray costs twice the time of a PyTorch one here).
"""
import os
import signal
import time

import numpy as np
import pytest

from rlgraph.backend_system import is_backend_installed
from rlgraph.execution.ray import ApexExecutor
from rlgraph.utils.rlgraph_errors import RLGraphDistributedError
from ray_helpers import local_ray_session

ray = pytest.importorskip("ray", reason="Ray is not installed (install the '.[test]' extra)")

pytestmark = pytest.mark.slow

CARTPOLE = {"type": "openai-gym", "gym_env": "CartPole-v1"}
NUM_WORKER_SAMPLES = 50


@pytest.fixture(scope="module")
def local_ray():
    """A Ray of 2 CPUs in this process for the module; always shut down afterwards."""
    with local_ray_session(ray):
        yield


def apex_cartpole_config(backend, seed=1, **executor):
    """Ape-X on CartPole: 2 workers (epsilon 0.4 and 0.4^8) of 50 env steps per task, one shard."""
    executor_spec = dict(num_sample_workers=2, num_replay_workers=1, num_worker_samples=NUM_WORKER_SAMPLES,
                         num_cpus_per_worker=0.5, num_cpus_per_replay_actor=0.5, weight_sync_steps=100)
    executor_spec.update(executor)
    return {"type": "apex", "backend": backend, "discount": 0.99, "n_step": 3,
            "network_spec": [{"type": "dense", "units": 32, "activation": "relu"}],
            "update_spec": {"batch_size": 64, "sync_interval": 100},
            "optimizer_spec": {"type": "adam", "learning_rate": 3e-3},
            "execution_spec": {"seed": seed, "ray_spec": {
                "executor_spec": executor_spec, "worker_spec": {"ray_constant_exploration": True},
                "apex_replay_spec": {"memory_spec": {"capacity": 20000}, "min_sample_memory_size": 500}}}}


def _workload(num_timesteps):
    return {"num_timesteps": num_timesteps, "report_interval": 1000, "report_interval_min_seconds": 0}


def test_workload_on_ray(local_ray, backend):
    executor = ApexExecutor(CARTPOLE, apex_cartpole_config(backend))
    try:
        result = executor.execute_workload(_workload(2000))
        steps = result["timesteps_executed"]
        assert steps >= 2000 and steps % NUM_WORKER_SAMPLES == 0
        assert result["env_frames"] == steps == executor.env_timesteps
        assert result["episodes"] == len(result["episode_returns"]) > 0
        assert all(r >= 1.0 for r in result["episode_returns"])  # CartPole pays 1 per step.
        # The actors are processes of their own.
        pids = result["worker_pids"] + result["shard_pids"]
        assert os.getpid() not in pids and len(set(pids)) == 3
        # Each worker runs one task more than was collected (actor calls run in order, so the
        # statistics call waits for it).
        by_worker = executor.result_by_worker()
        assert [w["pid"] for w in by_worker["workers"]] == result["worker_pids"]
        assert sum(by_worker["episode_timesteps"]) == steps + 2 * NUM_WORKER_SAMPLES
        shard = executor.replay_statistics()[0]
        assert 0 < shard["size"] == shard["inserted"] <= steps + 2 * NUM_WORKER_SAMPLES
        assert shard["pid"] == result["shard_pids"][0]
        # The learner ran and its weights reached the workers.
        assert result["updates"] > 0
        with executor.learner.lock:  # (The learner thread goes on learning from queued batches.)
            assert result["learner_updates"] <= executor.learner.version == executor.local_agent.num_updates
        assert all(w["weights_set"] >= 1 for w in by_worker["workers"])
        assert max(w["version"] for w in by_worker["workers"]) > 0
        assert np.isfinite(result["mean_loss"]) and result["restarts"] == 0
    finally:
        executor.terminate()
    assert ray.is_initialized()  # The executor did not start this Ray, so it leaves it running.


def _greedy_return(executor, episodes=5):
    from rlgraph.execution import SingleThreadedWorker
    worker = SingleThreadedWorker(executor.local_agent, CARTPOLE, seed=7)
    with executor.learner.lock:
        return worker.evaluate(episodes)["mean_episode_return"]


def test_killed_worker_is_replaced_and_the_run_learns(local_ray):
    if not is_backend_installed("pytorch"):
        pytest.skip(reason="PyTorch is not installed")
    executor = ApexExecutor(CARTPOLE, apex_cartpole_config("pytorch"))
    try:
        returns, driver_sizes, shard_sizes, killed = [], [], [], None
        for chunk in range(5):
            result = executor.execute_workload(_workload(2000))
            returns += result["episode_returns"]
            driver_sizes.append(executor.shards[0].size)  # (What the executor last heard from the shard.)
            shard_sizes.append(executor.replay_statistics()[0]["size"])
            if chunk == 1:
                killed = executor.workers[0].pid
                os.kill(killed, signal.SIGKILL)
        assert executor.num_restarts == 1 and executor.workload_results[-1]["restarts"] == 1
        assert [(r["kind"], r["index"]) for r in executor.restart_log] == [("sample worker", 0)]
        assert executor.workers[0].pid not in (killed, os.getpid())
        assert executor.records_lost == 0
        # The shard is untouched by the worker's death: its size never drops (capacity 20000).
        for sizes in (driver_sizes, shard_sizes):
            assert sizes == sorted(sizes) and sizes[-1] > sizes[1] > 0
        # Learning goes on: the last episodes are longer than the first (about 10 steps at first;
        # seeds 1-3 reached 60-100 for the last 20 and greedy returns of 100-200).
        first, last = np.mean(returns[:20]), np.mean(returns[-20:])
        greedy = _greedy_return(executor)
        print(f"first 20 episodes {first:.1f}, last 20 {last:.1f}, greedy {greedy:.1f}")
        assert last > max(2.0 * first, 30.0) and greedy > 30.0
    finally:
        executor.terminate()


def test_too_many_requested_resources_fail_fast(local_ray):
    backend = "pytorch" if is_backend_installed("pytorch") else "tf"
    for executor_spec, resource, key in (({"num_cpus_per_worker": 2}, "CPUs", "num_cpus_per_worker"),
                                         ({"num_gpus_per_worker": 1}, "GPUs", "num_gpus_per_worker")):
        start = time.monotonic()
        with pytest.raises(RLGraphDistributedError) as info:
            ApexExecutor(CARTPOLE, apex_cartpole_config(backend, **executor_spec))
        assert time.monotonic() - start < 60.0  # (Ray would wait forever for the resources.)
        message = str(info.value)
        assert f"more {resource}" in message and key in message
    # No actor is left behind (freed resources show up in Ray's view with a small delay).
    deadline = time.monotonic() + 30.0
    while ray.available_resources().get("CPU") != 2.0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ray.available_resources().get("CPU") == 2.0
