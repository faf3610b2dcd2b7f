"""`rlgraph train` / `rlgraph evaluate` on Ape-X configs: inline (both backends) and once on Ray
(PyTorch: the training loop does not depend on the backend, and tests/test_apex_ray.py runs the
executor on Ray with both)."""
import csv
import json
import os
import shutil
import tempfile

import pytest

from rlgraph.cli.main import main
from rlgraph.execution.ray import ApexExecutor
from rlgraph.execution.training import train

INLINE = "execution_spec.ray_spec.executor_spec.mode=inline"


def _tiny_apex_config(num_timesteps=400):
    """configs/apex_cartpole.json, shrunk: small net, replay and batches, random acting (short
    episodes); 400 steps, checkpoints and evaluations every 300 and 200 steps (mode left at
    "ray": tests pick it)."""
    with open("configs/apex_cartpole.json") as handle:
        config = json.load(handle)
    config["network_spec"] = [{"type": "dense", "units": 16, "activation": "relu"}]
    config["update_spec"].update(batch_size=16, sync_interval=100)
    config["exploration_spec"]["epsilon_spec"]["decay_spec"] = {"type": "constant", "value": 1.0}
    ray_spec = config["execution_spec"]["ray_spec"]
    ray_spec["executor_spec"].update(num_worker_samples=25, weight_sync_steps=50)
    ray_spec["apex_replay_spec"].update(memory_spec={"capacity": 1000}, min_sample_memory_size=64)
    config["training_spec"].update(num_timesteps=num_timesteps, evaluation_interval=200, evaluation_episodes=2,
                                   log_interval=100, checkpoint_interval=300, stop_at_return=None)
    return config


@pytest.fixture
def recorded_workloads(monkeypatch):
    """The executor's workload results and, at its end, every worker's statistics."""
    seen = {"results": [], "workers": None}
    execute, terminate = ApexExecutor.execute_workload, ApexExecutor.terminate

    def execute_workload(self, workload):
        seen["results"].append(execute(self, workload))
        return seen["results"][-1]

    def terminate_(self):
        if not self.terminated:
            seen["workers"] = self.result_by_worker()
        terminate(self)
    monkeypatch.setattr(ApexExecutor, "execute_workload", execute_workload)
    monkeypatch.setattr(ApexExecutor, "terminate", terminate_)
    return seen


def test_train_and_evaluate_inline(capsys, tmp_path, backend, recorded_workloads):
    path, out = tmp_path / "apex.json", tmp_path / "run"
    path.write_text(json.dumps(_tiny_apex_config()))
    assert main(["train", str(path), "--backend", backend, "--seed", "2", "--output-dir", str(out), "--no-progress",
                 "--set", INLINE]) == 0
    printed = capsys.readouterr().out
    assert "400 steps" in printed and f"on {backend}" in printed and "learner:" in printed
    config = json.loads((out / "config.json").read_text())
    assert config["execution_spec"]["ray_spec"]["executor_spec"]["mode"] == "inline"
    for name in ("learning_curve.png", "checkpoints/step-300/config.json", "checkpoints/step-300/learner",
                 "checkpoints/final/executor_state.json", "checkpoints/final/replay-0.npz",
                 "checkpoints/final/learner/agent_state.json", "checkpoints/final/manifest.json"):
        assert (out / name).exists(), name
    assert any(p.name.startswith("events.out.tfevents") for p in (out / "tensorboard").iterdir())
    with open(out / "evaluations.csv") as handle:
        assert [row["step"] for row in csv.DictReader(handle)] == ["200", "400"]

    # episodes.csv: the executor's episodes in the order it reported them, each with the step
    # count of its chunk; every one of them a worker's episode.
    with open(out / "episodes.csv") as handle:
        rows = list(csv.DictReader(handle))
    results = recorded_workloads["results"]
    assert [r["timesteps_executed"] for r in results] == [100, 100, 100, 100]
    assert [float(row["return"]) for row in rows] == [ret for r in results for ret in r["episode_returns"]]
    assert [int(row["step"]) for row in rows] == [100 * (i + 1) for i, r in enumerate(results)
                                                  for _ in r["episode_returns"]]
    assert [row["episode"] for row in rows] == [str(i + 1) for i in range(len(rows))]
    worker_returns = [ret for returns in recorded_workloads["workers"]["episode_rewards"] for ret in returns]
    assert len(rows) > 10 and all(worker_returns.count(float(row["return"])) >= 1 for row in rows)

    assert main(["evaluate", str(out / "checkpoints" / "final"), "--episodes", "2"]) == 0
    assert "2 greedy episodes" in capsys.readouterr().out


def test_ray_address_needs_a_distributed_config(capsys):
    assert main(["train", "configs/dqn_gridworld_4x4.json", "--ray-address", "127.0.0.1:6379", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "--ray-address" in err and "needs a distributed config" in err and "ray_spec" in err


@pytest.fixture
def local_ray():
    ray = pytest.importorskip("ray")
    temp_dir = tempfile.mkdtemp(prefix="r", dir="/tmp")  # Short: Ray's socket paths have a length limit.
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp_dir)
    yield ray
    ray.shutdown()
    shutil.rmtree(temp_dir, ignore_errors=True)


def test_train_on_ray(local_ray, tmp_path):
    config = _tiny_apex_config(num_timesteps=2000)
    config["training_spec"].update(evaluation_interval=1000, checkpoint_interval=0, log_interval=500)
    summary = train(config, backend="pytorch", seed=3, output_dir=str(tmp_path), progress=False)
    assert summary["timesteps"] >= 2000 and [e[0] for e in summary["evaluations"]][:1] >= [1000]
    stats = summary["executor_statistics"]
    assert len(set(stats["worker_pids"])) == 2 and os.getpid() not in stats["worker_pids"]
    assert summary["num_updates"] > 0 and summary["restarts"] == 0
    assert os.path.isfile(os.path.join(summary["checkpoint"], "learner", "agent_state.json"))
    assert local_ray.is_initialized()  # The executor leaves a Ray it did not start running.
