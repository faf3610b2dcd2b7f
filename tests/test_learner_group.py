"""Data-parallel learners (`rlgraph.utils.learner_group`, `rlgraph.execution.learners`, the
`horovod-optimizer` spec): 2 learner processes on halves of a batch give the weights of 1 learner on
the whole batch (DQN, PPO and IMPALA update steps, both backends); `rlgraph train --learners 2`
learns CartPole, resumes, and its checkpoint loads into a single agent; a killed learner ends the
run with a clear error instead of a hang; bad specs are refused.
"""
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from rlgraph.components import Component
from rlgraph.components.optimizers.horovod_optimizer import HorovodOptimizer
from rlgraph.execution.learners import train_learners
from rlgraph.execution.run_config import make_agent_and_env, resolve_config
from rlgraph.execution.training import train
from rlgraph.utils import learner_group
from rlgraph.utils.rlgraph_errors import RLGraphDistributedError, RLGraphSpecError

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
CHILD_TIMEOUT_S = 240


def test_two_learners_on_half_batches_equal_one_learner_on_the_whole_batch(backend, tmp_path):
    addresses = ",".join(learner_group.free_local_addresses(2))
    outs = [tmp_path / f"rank-{rank}.json" for rank in range(2)]
    children = [subprocess.Popen([sys.executable, os.path.join(HERE, "learner_group_child.py"), str(rank), "2",
                                  backend, addresses, str(outs[rank])], cwd=ROOT, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, text=True) for rank in range(2)]
    try:
        errors = [child.communicate(timeout=CHILD_TIMEOUT_S)[1] for child in children]
    finally:
        for child in children:
            child.kill()
    assert [child.returncode for child in children] == [0, 0], errors
    results = [json.loads(out.read_text()) for out in outs]
    for result in results:
        for case in ("dqn", "ppo", "impala"):
            # Adam steps of 0.01 moved the weights; the group's weights are the whole batch's to float precision.
            assert result[case]["moved"] > 1e-3, (case, result[case])
            assert result[case]["max_diff"] < 1e-6, (case, result[case])
        assert result["broadcast"] == {"w": [1.0, 1.0, 1.0], "n": 7, "dtype": "int64"}  # Rank 0's values.
        assert result["gathered"] == [0.5, 1.5]
        assert "rank(s) [1] differ from rank 0's" in result["divergence"]
    assert results[0]["dqn"] == results[1]["dqn"]


def test_horovod_optimizer_spec_is_its_local_optimizer():
    optimizer = Component.from_spec({"type": "horovod-optimizer", "scope": "opt",
                                     "local_optimizer": {"type": "adam", "learning_rate": 0.01, "clip_grad_norm": 2.0}})
    assert type(optimizer).__name__ == "AdamOptimizer"
    assert (optimizer.global_scope, optimizer.clip_grad_norm) == ("opt", 2.0)
    assert type(Component.from_spec({"type": "data-parallel-optimizer",
                                     "local_optimizer": {"type": "sgd", "learning_rate": 0.1}})).__name__ == "SGDOptimizer"
    with pytest.raises(RLGraphSpecError, match="a local optimizer spec is required"):
        HorovodOptimizer()
    with pytest.raises(RLGraphSpecError, match="must update in this process"):
        HorovodOptimizer(local_optimizer={"type": "optimizer", "learning_rate": 0.1})


def test_learner_group_join_refuses_bad_arguments():
    with pytest.raises(RLGraphSpecError, match="unknown learner-group backend"):
        learner_group.join(0, 2, "mxnet", ["127.0.0.1:1", "127.0.0.1:2"])
    with pytest.raises(RLGraphSpecError, match=r"rank must be in \[0, size\)"):
        learner_group.join(2, 2, "pytorch", ["127.0.0.1:1", "127.0.0.1:2"])
    assert learner_group.current() is None


def test_multi_learner_specs_are_checked_before_any_process_starts(tmp_path):
    with pytest.raises(RLGraphSpecError, match="execution_spec.num_learners"):
        train("configs/ppo_cartpole.json", learners=0, output_dir=str(tmp_path / "a"), progress=False)
    # A distributed config's learners are Ray actors (test_ray_learner_group.py): not without Ray.
    with pytest.raises(RLGraphSpecError, match="data-parallel learners need Ray"):
        train("configs/apex_cartpole.json", learners=2, progress=False,
              overrides=["execution_spec.ray_spec.executor_spec.mode=inline"])
    with pytest.raises(RLGraphSpecError, match="--learners is for agents that train in one process"):
        train_learners(resolve_config("configs/apex_cartpole.json", overrides=["execution_spec.num_learners=2"]))
    with pytest.raises(RLGraphSpecError, match="hooks of a multi-learner run must be names"):
        train("configs/ppo_cartpole.json", learners=2, hooks=[lambda *a: None], progress=False)


@pytest.mark.learning
def test_two_learners_learn_cartpole_resume_and_load_into_one_agent(tmp_path):
    """PPO with 2 learners (PyTorch; TF's run path is tested above) reaches a greedy mean return >= 475
    within 30k steps per learner; the run resumes as a 2-learner run, and its checkpoint loads into a
    single agent, whose best checkpoint plays as the run's evaluation said.

    One seed: that two learners on half batches take exactly the steps of one learner on the whole
    batch is the equivalence test above, and PPO's reliability over seeds is test_pg_learning.py's."""
    from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
    run = str(tmp_path / "seed-2")
    summary = train("configs/ppo_cartpole.json", backend="pytorch", seed=2, learners=2, num_timesteps=30_000,
                    output_dir=run, progress=False,
                    overrides=["training_spec.evaluation_interval=2000", "training_spec.stop_at_return=475"])
    assert summary["solved"], summary["evaluations"]
    print("solved at", summary["solved_at_step"], "wall", round(summary["wall_time"]))
    assert summary["num_learners"] == 2 and summary["total_timesteps"] == 2 * summary["timesteps"]

    config = json.loads(open(os.path.join(run, "config.json")).read())
    assert config["execution_spec"]["num_learners"] == 2
    resumed = train(resume=run, num_timesteps=summary["timesteps"] + 1000, progress=False)
    assert resumed["num_learners"] == 2 and resumed["timesteps"] == summary["timesteps"] + 1000

    agent, env_spec = make_agent_and_env(resolve_config(config))  # One agent, in this process.
    agent.load_model(os.path.join(run, "checkpoints", "best"))  # The evaluation that solved the task.
    worker = SingleThreadedWorker(agent, env_spec, num_environments=1, seed=100)
    returns = worker.evaluate(3, config["training_spec"]["max_timesteps_per_episode"])["episode_returns"]
    worker.terminate()
    agent.terminate()
    assert np.mean(returns) >= 400, returns


def test_a_short_two_learner_run_writes_one_run_folder(backend, tmp_path):
    """The run path on both backends (the learning test below trains on PyTorch only: TF's group takes
    the same steps, see the equivalence test, at several ms more per update)."""
    run = tmp_path / "run"
    summary = train("configs/ppo_cartpole.json", backend=backend, seed=4, learners=2, num_timesteps=1000,
                    output_dir=str(run), progress=False, overrides=["training_spec.evaluation_interval=500"])
    assert (summary["num_learners"], summary["timesteps"], summary["total_timesteps"]) == (2, 1000, 2000)
    assert [step for step, _ in summary["evaluations"]] == [504, 1000]  # (8 envs: steps come in eights.)
    config = json.loads((run / "config.json").read_text())
    assert config["execution_spec"]["num_learners"] == 2 and config["backend"] == backend
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["best", "final"]
    assert len((run / "evaluations.csv").read_text().splitlines()) == 3  # Header + rank 0's two evaluations.


def test_a_killed_learner_ends_the_run_with_a_clear_error(tmp_path):
    config = resolve_config("configs/ppo_cartpole.json", backend="pytorch", num_timesteps=10_000_000,
                            overrides=["execution_spec.num_learners=2", "training_spec.evaluation_interval=0"])
    outcome = {}

    def run():
        try:
            train_learners(config, progress=False, timeout=CHILD_TIMEOUT_S)
        except BaseException as error:  # noqa: BLE001 - inspected by the test.
            outcome["error"] = error
    thread = threading.Thread(target=run)
    thread.start()
    pid = _wait_for_learner(1, timeout=120)
    time.sleep(3.0)  # Training by now (or building: either way the group must not hang).
    os.kill(pid, signal.SIGKILL)
    thread.join(timeout=60)
    assert not thread.is_alive(), "the launcher hangs after a learner was killed"
    error = outcome.get("error")
    assert isinstance(error, RLGraphDistributedError), error
    assert "learner rank 1 was killed by signal 9" in str(error)
    assert "give --output-dir" in str(error)
    assert _learner_pids() == {}  # The other learner was stopped too.


def _learner_pids():
    """{rank: pid} of this process's learner children (their command line names spec-RANK.json)."""
    pids = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read().split(b"\0")
        except OSError:
            continue
        if parent == os.getpid() and b"rlgraph.execution.learner_process" in cmdline:
            name = os.path.basename(cmdline[-2].decode() if cmdline[-1] == b"" else cmdline[-1].decode())
            pids[int(name[len("spec-"):-len(".json")])] = int(entry)
    return pids


def _wait_for_learner(rank, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        pid = _learner_pids().get(rank)
        if pid is not None:
            return pid
        time.sleep(0.1)
    raise AssertionError(f"learner rank {rank} did not start")


def test_learner_scaling_benchmark_quick(tmp_path):
    from rlgraph.benchmarks import learner_scaling
    out = tmp_path / "learners.json"
    # (One learner per contender: the group itself is tested above; this checks the report.)
    result = learner_scaling.main(["--quick", "--backends", "pytorch", "--learners", "1", "--updates", "5",
                                   "--out", str(out)])
    runs = {(r["contender"], r["learners"]): r for r in result["runs"]}
    assert set(runs) == {("rlgraph", 1), ("raw-ddp", 1)}
    for run in runs.values():
        assert run["samples_per_s"] == pytest.approx(64 * 5 / run["seconds"])
        assert run["scaling"] == 1.0  # (The smallest group measured is the base.)
    assert json.loads(out.read_text())["batch_size"] == 64
