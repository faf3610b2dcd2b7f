"""`rlgraph train` / `rlgraph evaluate` on IMPALA configs, with the actors inline (both backends):
the shipped configs/impala_cartpole.json with its mode overridden on the command line, and a
single-impala config without ray_spec, which `train` runs on the IMPALA executor too."""
import csv
import json
import threading

import numpy as np

from rlgraph.cli.main import main
from rlgraph.execution.distributed_training import executor_class
from rlgraph.execution.ray import IMPALAExecutor
from rlgraph.execution.training import apply_overrides, is_distributed, resolve_config, train

# As a shell passes `--set execution_spec.ray_spec.executor_spec.mode='"inline"'`: the value is JSON.
INLINE = 'execution_spec.ray_spec.executor_spec.mode="inline"'
CARTPOLE = {"type": "openai-gym", "gym_env": "CartPole-v1"}


def test_the_override_is_parsed_as_json_or_as_text():
    # (A shell that drops the quotes passes mode=inline: not JSON, so the text itself.)
    for item in (INLINE, INLINE.replace('"', "")):
        config = apply_overrides({"execution_spec": {"ray_spec": {}}}, [item])
        assert config == {"execution_spec": {"ray_spec": {"executor_spec": {"mode": "inline"}}}}


def test_train_shipped_config_inline_and_evaluate(capsys, tmp_path, backend):
    out = tmp_path / "run"
    assert main(["train", "configs/impala_cartpole.json", "--steps", "2000", "--set", INLINE, "--backend", backend,
                 "--seed", "1", "--output-dir", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    # 2 actors x rollouts of 50 steps: one chunk of 2000 steps (log_interval 2000).
    assert "rlgraph train: 2000 steps" in printed and f"on {backend}" in printed
    assert "learner:" in printed and "0 actor restarts" in printed
    config = json.loads((out / "config.json").read_text())
    assert config["execution_spec"]["ray_spec"]["executor_spec"]["mode"] == "inline"
    assert config["training_spec"]["num_timesteps"] == 2000 and config["backend"] == backend
    final = out / "checkpoints" / "final"
    for name in ("executor_state.json", "config.json", "manifest.json", "learner/agent_state.json"):
        assert (final / name).exists(), name
    assert (out / "learning_curve.png").exists()
    state = json.loads((final / "executor_state.json").read_text())
    assert state["executor"] == "IMPALAExecutor" and state["env_timesteps"] == 2000
    with open(out / "episodes.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) > 10 and all(row["step"] == "2000" for row in rows)
    # CartPole pays 1 per step: each return is its episode's length.
    assert all(float(row["return"]) == float(row["length"]) for row in rows)

    assert main(["evaluate", str(final), "--episodes", "1"]) == 0
    assert "1 greedy episodes" in capsys.readouterr().out


def test_single_impala_config_without_ray_spec_trains(tmp_path, backend):
    config = {"type": "single-impala", "backend": backend, "num_workers": 2, "num_worker_environments": 2,
              "worker_sample_size": 10, "fifo_queue_spec": {"capacity": 16}, "reward_clipping": None,
              "network_spec": [{"type": "dense", "units": 16, "activation": "tanh"}],
              "update_spec": {"batch_size": 4}, "optimizer_spec": {"type": "adam", "learning_rate": 0.005},
              "environment_spec": CARTPOLE,
              "training_spec": {"num_timesteps": 1000, "evaluation_interval": 500, "evaluation_episodes": 1,
                                "log_interval": 250}}
    summary = train(config, seed=4, output_dir=str(tmp_path), progress=False)
    # Rounds of 2 actors x 2 envs x 10 steps = 40 steps: chunks of 250 end at 280, 520, 760, 1000.
    assert summary["timesteps"] == 1000 and summary["backend"] == backend
    assert [step for step, _ in summary["evaluations"]] == [520, 1000]
    # 25 rounds of 4 rows: 25 updates of 4 rows.
    assert summary["num_updates"] == 25 and summary["restarts"] == 0 and summary["records_lost"] == 0
    assert np.isfinite(summary["mean_policy_lag"]) and summary["episodes"] > 0
    stats = summary["executor_statistics"]
    assert len(stats["worker_pids"]) == 2 and stats["total_timesteps"] == 1000
    # The executor's actors, not the single agent's own threads, collected the rollouts.
    assert not [t.name for t in threading.enumerate() if t.name.startswith("impala-actor")]
    final = tmp_path / "checkpoints" / "final"
    saved = json.loads((final / "config.json").read_text())
    assert saved["type"] == "single-impala" and "ray_spec" not in saved["execution_spec"]
    state = json.loads((final / "executor_state.json").read_text())
    assert state["env_timesteps"] == 1000


def test_a_failed_distributed_run_closes_its_logs(tmp_path, monkeypatch):
    """A distributed run that fails after its first chunk raises that error, with its logs closed
    as a single-process run leaves them: the logged episodes in episodes.csv and the curve drawn."""
    config = {"type": "single-impala", "backend": "pytorch", "num_workers": 2, "num_worker_environments": 2,
              "worker_sample_size": 10, "fifo_queue_spec": {"capacity": 16},
              "network_spec": [{"type": "dense", "units": 8}], "update_spec": {"batch_size": 4},
              "environment_spec": CARTPOLE, "training_spec": {"num_timesteps": 1000, "log_interval": 250}}
    workload = IMPALAExecutor.execute_workload
    calls = []

    def fail_second(executor, spec):
        calls.append(spec)
        if len(calls) == 2:
            raise RuntimeError("the cluster went away")
        return workload(executor, spec)
    monkeypatch.setattr(IMPALAExecutor, "execute_workload", fail_second)
    try:
        train(config, seed=4, output_dir=str(tmp_path), progress=False)
    except RuntimeError as error:
        assert str(error) == "the cluster went away"
    else:
        raise AssertionError("the run did not fail")
    with open(tmp_path / "episodes.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and all(row["step"] == "280" for row in rows)  # (The first chunk: 7 rounds of 40 steps.)
    assert (tmp_path / "learning_curve.png").stat().st_size > 1000


def test_the_shipped_config_is_read_as_distributed():
    resolved = resolve_config("configs/impala_cartpole.json", overrides=[INLINE])
    assert is_distributed(resolved) and executor_class(resolved) is IMPALAExecutor
