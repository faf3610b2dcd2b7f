"""Data-parallel learners of the distributed agents (`execution_spec.num_learners` > 1 with a
`ray_spec`): IMPALA's and Ape-X's learner as 2 Ray actors in one learner group.

Each case runs in a fresh interpreter (a local Ray of 2 CPUs, started with
`ray.init(num_cpus=2, include_dashboard=False, _temp_dir=<short path>)` and always shut down; the
only process it kills is a learner its own executor started). Checked:
- 2 learners, each updating on half of the batch's rows, give the losses and weights of one agent
  updating on the whole batch (3 Adam steps; Ape-X's new priorities too, in the batch's order);
- a short run updates through the group, the learners' weights stay equal, and a checkpoint's
  `learner/` (rank 0's) loads back into the group and into a single agent;
- a killed learner ends the next update at once with `RLGraphDistributedError` naming its rank.
Without Ray (inline mode) or with a batch the learners cannot split evenly, the spec is refused.
"""
import json
import os
import subprocess
import sys
import textwrap

import pytest

from rlgraph.backend_system import is_backend_installed
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

pytest.importorskip("ray", reason="Ray is not installed (install the '.[test]' extra)")

CHILD = textwrap.dedent('''
    import json, os, shutil, signal, sys, tempfile, time
    import numpy as np
    import ray
    from rlgraph.agents import Agent
    from rlgraph.execution.learner_sync import shared_weight_names
    from rlgraph.execution.ray import ApexExecutor, IMPALAExecutor

    BACKEND, WITH_APEX = sys.argv[1], sys.argv[2] == "apex"
    T = 10
    CARTPOLE = {"type": "openai-gym", "gym_env": "CartPole-v1"}
    NET = [{"type": "dense", "units": 16, "activation": "tanh"}]
    RESOURCES = {"num_cpus_per_worker": 0.5, "num_cpus_per_learner": 0.5}
    IMPALA = {"type": "impala", "backend": BACKEND, "discount": 0.99, "worker_sample_size": T,
              "fifo_queue_spec": {"capacity": 16}, "reward_clipping": None, "network_spec": NET,
              "update_spec": {"batch_size": 4}, "optimizer_spec": {"type": "adam", "learning_rate": 0.01},
              "execution_spec": {"seed": 2, "torch_num_threads": 1, "num_learners": 2, "ray_spec": {
                  "executor_spec": dict(RESOURCES, num_sample_workers=1, weight_sync_steps=T)}}}
    APEX = {"type": "apex", "backend": BACKEND, "discount": 0.99, "n_step": 3, "double_q": True, "dueling_q": True,
            "network_spec": NET, "update_spec": {"batch_size": 8, "sync_interval": 50},
            "optimizer_spec": {"type": "adam", "learning_rate": 0.01, "clip_grad_norm": 1.0},
            "execution_spec": {"seed": 3, "torch_num_threads": 1, "num_learners": 2, "ray_spec": {
                "executor_spec": dict(RESOURCES, num_sample_workers=1, num_replay_workers=1,
                                      num_cpus_per_replay_actor=0.5, num_worker_samples=50),
                "apex_replay_spec": {"memory_spec": {"capacity": 1000}, "min_sample_memory_size": 100}}}}

    def reference(executor, config):
        """A single agent (no group) with the group's initial weights and optimizer state."""
        seed = config["execution_spec"]["seed"]
        agent = Agent.from_spec(dict(executor.learner_config(config), execution_spec={"seed": seed}),
                                state_space=executor.state_space, action_space=executor.action_space)
        names = shared_weight_names(executor.local_agent)
        agent.graph_executor.set_weights(executor.local_agent.graph_executor.get_weights(names))
        return agent

    def max_diff(a, b):
        return max(float(np.max(np.abs(np.asarray(a[k], np.float64) - b[k]))) for k in b)

    def workload(n):
        return {"num_timesteps": n, "report_interval": n, "report_interval_min_seconds": 0}

    rng = np.random.RandomState(0)
    out = {}
    temp_dir = tempfile.mkdtemp(prefix="r", dir="/tmp")  # Short: Ray's socket paths have a length limit.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir)
    try:
        executor = IMPALAExecutor(CARTPOLE, IMPALA)
        try:
            group, single = executor.learner_group, reference(executor, IMPALA)
            start = single.get_weights()
            b = 4
            batch = dict(states=rng.normal(size=(b, T, 4)).astype(np.float32),
                         bootstrap_states=rng.normal(size=(b, 4)).astype(np.float32),
                         actions=rng.randint(0, 2, size=(b, T)),
                         action_probs=rng.dirichlet(np.ones(2), size=(b, T)).astype(np.float32),
                         rewards=rng.uniform(-1, 1, size=(b, T)).astype(np.float32),
                         terminals=rng.uniform(size=(b, T)) < 0.2)
            losses = [(group.update(batch)[0], float(single.update(batch).loss)) for _ in range(3)]
            expected = single.get_weights()
            out["impala"] = {"losses": losses, "diff": max_diff(group.policy_weights(), expected),
                             "moved": max_diff(expected, start), "pids": group.pids, "driver": os.getpid(),
                             "versions": executor.local_agent.num_updates}
            result = executor.execute_workload(workload(400))
            group.check_weights()
            executor.sync_local_agent()
            path = executor.store_checkpoint(os.path.join(temp_dir, "impala"))
            stored = executor.local_agent.get_weights()
            executor.load_checkpoint(path)
            loaded = Agent.from_spec(dict(executor.learner_config(IMPALA), execution_spec={"seed": 9}),
                                     state_space=executor.state_space, action_space=executor.action_space)
            loaded.load_model(os.path.join(path, "learner"))
            out["impala"].update(updates=result["updates"], learner_updates=result["learner_updates"],
                                 stored_vs_rank0=max_diff(group.policy_weights(), stored),
                                 single_vs_rank0=max_diff(loaded.get_weights(), stored))
            os.kill(group.pids[1], signal.SIGKILL)
            began = time.monotonic()
            try:
                group.update(batch)
                out["impala"]["killed"] = "no error"
            except Exception as error:
                out["impala"]["killed"] = f"{type(error).__name__}: {error}"
            out["impala"]["killed_seconds"] = time.monotonic() - began
        finally:
            executor.terminate()
        if WITH_APEX:
            executor = ApexExecutor(CARTPOLE, APEX)
            try:
                group, single = executor.learner_group, reference(executor, APEX)
                n = 8
                batch = dict(states=rng.normal(size=(n, 4)).astype(np.float32), actions=rng.randint(0, 2, size=n),
                             rewards=rng.uniform(-3, 3, size=n).astype(np.float32), terminals=np.arange(n) % 3 == 2,
                             next_states=rng.normal(size=(n, 4)).astype(np.float32),
                             importance_weights=rng.uniform(0.2, 1, size=n).astype(np.float32))
                steps = [(group.learn_from_batch(dict(batch)), single.learn_from_batch(dict(batch))) for _ in range(3)]
                out["apex"] = {"losses": [(a[0], float(b[0])) for a, b in steps],
                               "priorities": max(float(np.max(np.abs(a[2] - b[2]))) for a, b in steps),
                               "diff": max_diff(group.policy_weights(), single.get_weights())}
                result = executor.execute_workload(workload(600))
                group.check_weights()
                path = executor.store_checkpoint(os.path.join(temp_dir, "apex"))
                executor.load_checkpoint(path)
                out["apex"]["updates"] = result["learner_updates"]
            finally:
                executor.terminate()
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
    print("RESULT " + json.dumps(out))
''')


@pytest.mark.parametrize("backend, cases", [("pytorch", "apex"), ("tf", "impala")])
def test_two_ray_learners_equal_one_learner_and_a_lost_learner_ends_the_run(backend, cases):
    """(Ape-X on PyTorch only: its learner is the same group code; each TF actor costs ~20 s here.)"""
    if not is_backend_installed(backend):
        pytest.skip(reason=f"{backend} is not installed")
    env = dict(os.environ, RAY_AUTH_MODE="disabled")  # A local Ray needs no token (none is written).
    done = subprocess.run([sys.executable, "-c", CHILD, backend, cases], capture_output=True, text=True,
                          timeout=400, env=env)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stdout[-3000:] + done.stderr[-3000:]
    r = json.loads(lines[-1][len("RESULT "):])
    impala = r["impala"]
    for group_loss, single_loss in impala["losses"]:  # (The mean of the two halves' mean losses.)
        assert group_loss == pytest.approx(single_loss, rel=1e-5)
    assert impala["moved"] > 1e-3 and impala["diff"] < 1e-6
    assert len(set(impala["pids"])) == 2 and impala["driver"] not in impala["pids"]
    assert impala["versions"] == 3  # The executor's agent counts the group's updates.
    assert impala["updates"] > 0 and impala["learner_updates"] >= 3 + impala["updates"]
    assert impala["stored_vs_rank0"] == 0.0 and impala["single_vs_rank0"] == 0.0
    assert impala["killed"].startswith("RLGraphDistributedError") and "learner rank 1 died" in impala["killed"]
    assert "load_checkpoint" in impala["killed"] and impala["killed_seconds"] < 30
    if cases == "apex":
        apex = r["apex"]
        for group_loss, single_loss in apex["losses"]:
            assert group_loss == pytest.approx(single_loss, rel=1e-5)
        assert apex["priorities"] < 1e-5 and apex["diff"] < 1e-6 and apex["updates"] > 3


def _impala_config(batch_size, **execution):
    return {"type": "impala", "worker_sample_size": 5, "update_spec": {"batch_size": batch_size},
            "network_spec": [{"type": "dense", "units": 4}],
            "execution_spec": dict({"num_learners": 2}, **execution)}


@pytest.mark.parametrize("batch_size, match", [(4, r"need Ray.*mode \"ray\""), (3, r"divisor of .*batch_size \(3\)")])
def test_learner_groups_that_cannot_work_are_refused(batch_size, match):
    """Inline mode has no processes for the learners; 2 learners cannot halve a batch of 3 rows."""
    from rlgraph.execution.ray import IMPALAExecutor
    inline = {"ray_spec": {"executor_spec": {"mode": "inline", "num_sample_workers": 1}}}
    with pytest.raises(RLGraphSpecError, match=match):
        IMPALAExecutor({"type": "openai-gym", "gym_env": "CartPole-v1"}, _impala_config(batch_size, **inline))


def test_rows_split_evenly_or_not_at_all():
    import numpy as np

    from rlgraph.execution.ray.learner_group import split_rows
    batch = {"a": np.arange(6), "b": {"c": np.arange(12).reshape(6, 2)}}
    halves = split_rows(batch, 2, "test")
    np.testing.assert_array_equal(halves[1]["a"], [3, 4, 5])
    np.testing.assert_array_equal(np.concatenate([h["b"]["c"] for h in halves]), batch["b"]["c"])
    with pytest.raises(RLGraphSpecError, match="multiple of 4 rows"):
        split_rows(batch, 4, "test")


def test_ray_learners_benchmark_quick(tmp_path):
    """`rlgraph benchmark ray-learners --quick` (PyTorch) runs its three contenders and writes their figures."""
    if not is_backend_installed("pytorch"):
        pytest.skip(reason="PyTorch is not installed")
    out = tmp_path / "ray-learners.json"
    env = dict(os.environ, RAY_AUTH_MODE="disabled")
    done = subprocess.run([sys.executable, "-m", "benchmarks.ray_learners", "--quick", "--backends", "pytorch",
                           "--out", str(out)], capture_output=True, text=True, timeout=300, env=env,
                          cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    run = json.loads(out.read_text())["runs"][0]
    assert run["backend"] == "pytorch"
    assert all(run[f"{k}_samples_per_s"] > 0 for k in ("driver", "ray", "processes"))
    assert "ray scaling" in done.stdout and "ray / processes" in done.stdout
