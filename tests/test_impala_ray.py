"""`IMPALAExecutor` on a real Ray: a local Ray of 2 CPUs, 2 actors of 0.5 CPUs on CartPole with a
tiny net; one actor is killed with SIGKILL and the run goes on.

The run happens in a fresh interpreter (`python -c`): in the suite's process an earlier test has
connected to a `ray start` cluster and shut down, and a local Ray started afterwards in that
process sometimes cancels its first actors ("all references to the actor were removed ... the
actor never ran"), which is Ray's in-process state, not the executor's behaviour. The child starts
Ray with `ray.init(num_cpus=2, include_dashboard=False, _temp_dir=<short path>)`, always shuts it
down, and kills only a pid its own executor started.

PyTorch only: each Ray actor is a process of its own that imports its backend and builds its
agent (a TF actor costs several times a PyTorch one here), and one backend keeps this file under
a minute. The executor's logic does not depend on the backend, and tests/test_impala_executor.py
runs it (inline) on both.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from rlgraph.backend_system import is_backend_installed

pytest.importorskip("ray", reason="Ray is not installed (install the '.[test]' extra)")

pytestmark = pytest.mark.slow

CHILD = textwrap.dedent('''
    import json, os, shutil, signal, tempfile
    import numpy as np
    import ray
    from rlgraph.execution.ray import IMPALAExecutor

    T = 20  # env steps per rollout
    CARTPOLE = {"type": "openai-gym", "gym_env": "CartPole-v1"}
    CONFIG = {"type": "impala", "backend": "pytorch", "discount": 0.99, "worker_sample_size": T,
              "fifo_queue_spec": {"capacity": 16}, "reward_clipping": None,
              "network_spec": [{"type": "dense", "units": 16, "activation": "tanh"}],
              "update_spec": {"batch_size": 4}, "optimizer_spec": {"type": "adam", "learning_rate": 0.005},
              "execution_spec": {"seed": 2, "torch_num_threads": 1, "ray_spec": {
                  "executor_spec": {"num_sample_workers": 2, "num_cpus_per_worker": 0.5, "weight_sync_steps": T},
                  "worker_spec": {"num_worker_environments": 1}}}}

    def workload(n):
        return {"num_timesteps": n, "report_interval": 500, "report_interval_min_seconds": 0}

    temp_dir = tempfile.mkdtemp(prefix="r", dir="/tmp")  # Short: Ray's socket paths have a length limit.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir)
    out = {}
    try:
        executor = IMPALAExecutor(CARTPOLE, CONFIG)
        try:
            first = executor.execute_workload(workload(1000))
            pids = [actor.pid for actor in executor.actors_list]
            by_worker = executor.result_by_worker()
            killed = executor.actors_list[0].pid  # (An actor this process's executor started.)
            os.kill(killed, signal.SIGKILL)
            second = executor.execute_workload(workload(1000))
            fresh = executor.actors_list[0].pid
            out = {"first": {k: first[k] for k in ("timesteps_executed", "env_frames", "updates", "mean_loss",
                                                   "max_policy_lag", "mean_policy_lag", "episodes",
                                                   "episode_returns", "worker_pids", "learner_updates")},
                   "second": {k: second[k] for k in ("timesteps_executed", "updates", "restarts")},
                   "env_timesteps": executor.env_timesteps,
                   "pids": pids, "driver_pid": os.getpid(), "killed": killed, "fresh": fresh,
                   "worker_result_pids": [w["pid"] for w in by_worker["workers"]],
                   "worker_versions": [w["version"] for w in by_worker["workers"]],
                   "num_restarts": executor.num_restarts,
                   "restart_log": [[r["kind"], r["index"]] for r in executor.restart_log],
                   "fresh_stats": {k: executor.result_by_worker(0)[k] for k in ("pid", "timesteps", "weights_set",
                                                                                 "version")}}
        finally:
            executor.terminate()
        out["ray_still_up"] = ray.is_initialized()  # The executor did not start this Ray: it leaves it.
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
    print("RESULT " + json.dumps(out))
''')


def test_killed_actor_is_replaced_and_the_run_goes_on():
    if not is_backend_installed("pytorch"):
        pytest.skip(reason="PyTorch is not installed")
    env = dict(os.environ, RAY_AUTH_MODE="disabled")  # A local Ray needs no token (none is written).
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, timeout=300, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    r = json.loads(lines[-1][len("RESULT "):])
    first, second, T = r["first"], r["second"], 20
    assert first["timesteps_executed"] >= 1000 and first["timesteps_executed"] % T == 0
    assert first["env_frames"] == first["timesteps_executed"]
    assert first["updates"] > 0 and first["mean_loss"] == first["mean_loss"]  # (Not NaN.)
    assert first["max_policy_lag"] >= first["mean_policy_lag"] >= 0
    assert first["episodes"] == len(first["episode_returns"]) > 0
    assert all(ret >= 1.0 for ret in first["episode_returns"])  # CartPole pays 1 per step.
    # The actors are processes of their own, and the learner's weights reached them.
    assert first["worker_pids"] == r["pids"] == r["worker_result_pids"] and len(set(r["pids"])) == 2
    assert r["driver_pid"] not in r["pids"] and max(r["worker_versions"]) > 0
    # The killed actor was replaced once and the run went on.
    assert r["num_restarts"] == second["restarts"] == 1 and r["restart_log"] == [["IMPALA actor", 0]]
    assert r["fresh"] not in (r["killed"], r["driver_pid"], r["pids"][1])
    assert second["timesteps_executed"] >= 1000 and second["updates"] > 0
    assert r["env_timesteps"] == first["timesteps_executed"] + second["timesteps_executed"]
    stats = r["fresh_stats"]  # The new actor works: it reports, with the learner's weights, and has steps.
    assert stats["pid"] == r["fresh"] and stats["timesteps"] > 0 and stats["weights_set"] >= 1
    assert stats["version"] >= first["learner_updates"]
    assert r["ray_still_up"]
