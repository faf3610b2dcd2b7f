"""`IMPALAExecutor` on a real Ray: one local Ray of 2 CPUs for the module (started and shut down
by the fixture, never by the executor), 2 actors of 0.5 CPUs on CartPole with a tiny net.

PyTorch only: each Ray actor is a process of its own that imports its backend and builds its
agent (a TF actor costs several times a PyTorch one here), and one backend keeps this file under
a minute. The executor's logic does not depend on the backend, and tests/test_impala_executor.py
runs it (inline) on both.
"""
import os
import shutil
import signal
import tempfile

import numpy as np
import pytest

from rlgraph.backend_system import is_backend_installed
from rlgraph.execution.ray import IMPALAExecutor

ray = pytest.importorskip("ray", reason="Ray is not installed (install the '.[test]' extra)")

pytestmark = pytest.mark.slow

CARTPOLE = {"type": "openai-gym", "gym_env": "CartPole-v1"}
T = 20  # env steps per rollout


@pytest.fixture(scope="module")
def local_ray():
    """A Ray of 2 CPUs in this process for the module; always shut down afterwards."""
    if ray.is_initialized():
        pytest.fail("Ray is already initialized in this process; the Ray tests start their own")
    # A local Ray needs no token; without this, Ray >= 2.5x sets RAY_AUTH_MODE=token in this process
    # (which a later test connecting to a `ray start` cluster would then send) and writes
    # ~/.ray/auth_token. The previous value comes back afterwards.
    previous_auth = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    temp_dir = tempfile.mkdtemp(prefix="r", dir="/tmp")  # Short: Ray's socket paths have a length limit.
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir)
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
        if previous_auth is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = previous_auth


def _config():
    return {"type": "impala", "backend": "pytorch", "discount": 0.99, "worker_sample_size": T,
            "fifo_queue_spec": {"capacity": 16}, "reward_clipping": None,
            "network_spec": [{"type": "dense", "units": 16, "activation": "tanh"}],
            "update_spec": {"batch_size": 4}, "optimizer_spec": {"type": "adam", "learning_rate": 0.005},
            "execution_spec": {"seed": 2, "torch_num_threads": 1, "ray_spec": {
                "executor_spec": {"num_sample_workers": 2, "num_cpus_per_worker": 0.5, "weight_sync_steps": T},
                "worker_spec": {"num_worker_environments": 1}}}}


def _workload(num_timesteps):
    return {"num_timesteps": num_timesteps, "report_interval": 500, "report_interval_min_seconds": 0}


def test_killed_actor_is_replaced_and_the_run_goes_on(local_ray):
    if not is_backend_installed("pytorch"):
        pytest.skip(reason="PyTorch is not installed")
    executor = IMPALAExecutor(CARTPOLE, _config())
    try:
        first = executor.execute_workload(_workload(1000))
        assert first["timesteps_executed"] >= 1000 and first["timesteps_executed"] % T == 0
        assert first["env_frames"] == first["timesteps_executed"] == executor.env_timesteps
        assert first["updates"] > 0 and np.isfinite(first["mean_loss"])
        assert first["max_policy_lag"] >= first["mean_policy_lag"] >= 0
        assert first["episodes"] == len(first["episode_returns"]) > 0
        assert all(r >= 1.0 for r in first["episode_returns"])  # CartPole pays 1 per step.
        # The actors are processes of their own, and the learner's weights reached them.
        pids = [actor.pid for actor in executor.actors_list]
        assert first["worker_pids"] == pids and len(set(pids)) == 2 and os.getpid() not in pids
        by_worker = executor.result_by_worker()
        assert [w["pid"] for w in by_worker["workers"]] == pids
        assert max(w["version"] for w in by_worker["workers"]) > 0

        killed = executor.actors_list[0].pid  # (An actor this test's executor started.)
        os.kill(killed, signal.SIGKILL)
        second = executor.execute_workload(_workload(1000))
        assert executor.num_restarts == second["restarts"] == 1
        assert [(r["kind"], r["index"]) for r in executor.restart_log] == [("IMPALA actor", 0)]
        fresh = executor.actors_list[0].pid
        assert fresh not in (killed, os.getpid(), pids[1])
        assert second["timesteps_executed"] >= 1000 and second["updates"] > 0
        assert executor.env_timesteps == first["timesteps_executed"] + second["timesteps_executed"]
        # The new actor works: it reports, with the learner's weights, and has collected steps.
        stats = executor.result_by_worker(0)
        assert stats["pid"] == fresh and stats["timesteps"] > 0 and stats["weights_set"] >= 1
        assert stats["version"] >= first["learner_updates"]
    finally:
        executor.terminate()
    assert ray.is_initialized()  # The executor did not start this Ray, so it leaves it running.
