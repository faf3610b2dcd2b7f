"""`rlgraph train --resume` of a distributed run (Ape-X, IMPALA; actors inline, so no Ray): the
executor loads the run's newest checkpoint (learner, replay shards, counters) and the loop goes on
from the checkpoint's state, appending to the run's logs, as a single-process run resumes."""
import csv
import json

import pytest

from rlgraph.execution.ray import ApexExecutor, IMPALAExecutor
from rlgraph.execution.training import train
from rlgraph.utils.rlgraph_errors import RLGraphError

CARTPOLE = {"type": "openai-gym", "gym_env": "CartPole-v1"}
NET = [{"type": "dense", "units": 16, "activation": "tanh"}]
INLINE = 'execution_spec.ray_spec.executor_spec.mode="inline"'


def _apex():
    with open("configs/apex_cartpole.json") as handle:
        config = json.load(handle)
    config.update(backend="pytorch", network_spec=NET)
    config["update_spec"].update(batch_size=16, sync_interval=100)
    ray_spec = config["execution_spec"]["ray_spec"]
    ray_spec["executor_spec"].update(num_worker_samples=25, weight_sync_steps=50)
    ray_spec["apex_replay_spec"].update(memory_spec={"capacity": 1000}, min_sample_memory_size=64)
    config["training_spec"].update(num_timesteps=400, evaluation_interval=200, evaluation_episodes=1,
                                   log_interval=100, checkpoint_interval=300, stop_at_return=None)
    return config


def _impala():
    return {"type": "single-impala", "backend": "pytorch", "num_workers": 2, "num_worker_environments": 2,
            "worker_sample_size": 10, "fifo_queue_spec": {"capacity": 16}, "reward_clipping": None,
            "network_spec": NET, "update_spec": {"batch_size": 4},
            "optimizer_spec": {"type": "adam", "learning_rate": 0.005}, "environment_spec": CARTPOLE,
            "training_spec": {"num_timesteps": 400, "evaluation_interval": 200, "evaluation_episodes": 1,
                              "log_interval": 100, "checkpoint_interval": 300}}


def _rows(run):
    with open(run / "episodes.csv") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("make, executor", [(_apex, ApexExecutor), (_impala, IMPALAExecutor)], ids=["apex", "impala"])
def test_a_distributed_run_resumes_from_its_newest_checkpoint(tmp_path, monkeypatch, make, executor):
    run = tmp_path / "run"
    overrides = [INLINE] if make is _apex else []
    first = train(make(), seed=3, overrides=overrides, output_dir=str(run), progress=False)
    assert first["timesteps"] >= 400
    final = run / "checkpoints" / "final"
    state = json.loads((final / "train_state.json").read_text())
    assert state["steps"] == first["timesteps"] and state["episodes"] == first["episodes"]
    assert [list(e) for e in first["evaluations"]] == state["evaluations"]
    rows_before = _rows(run)
    updates_before = json.loads((final / "learner" / "agent_state.json").read_text())

    with pytest.raises(RLGraphError, match="the run is complete"):
        train(resume=str(run), progress=False)

    loaded = []
    load = executor.load_checkpoint

    def load_checkpoint(self, path):
        load(self, path)
        loaded.append((path, self.env_timesteps, self.agent_config["execution_spec"]["seed"]))
    monkeypatch.setattr(executor, "load_checkpoint", load_checkpoint)
    second = train(resume=str(run), num_timesteps=800, progress=False)
    assert [path for path, _, _ in loaded] == [str(final)]
    assert loaded[0][1] == first["timesteps"]  # The executor's counters came back before the loop went on.
    assert loaded[0][2] == 3 + first["timesteps"]  # Seeded apart: the workers do not replay the first episodes.
    assert second["timesteps"] >= 800 and second["episodes"] > first["episodes"]
    # The evaluations of the first part are kept; the new ones come after them.
    steps = [step for step, _ in second["evaluations"]]
    assert steps[:len(first["evaluations"])] == [step for step, _ in first["evaluations"]]
    assert steps == sorted(steps) and steps[-1] >= 800
    # episodes.csv: the first part's rows, then the resumed part's, steps never going back.
    rows = _rows(run)
    assert rows[:len(rows_before)] == rows_before and len(rows) > len(rows_before)
    assert [int(r["step"]) for r in rows] == sorted(int(r["step"]) for r in rows)
    state = json.loads((final / "train_state.json").read_text())
    assert state["steps"] == second["timesteps"]
    executor_state = json.loads((final / "executor_state.json").read_text())
    assert executor_state["env_timesteps"] == second["timesteps"]
    after = json.loads((final / "learner" / "agent_state.json").read_text())
    assert after != updates_before  # The learner trained on from the checkpoint.
    assert (run / "config.json").exists() and json.loads((final / "config.json").read_text())[
        "training_spec"]["num_timesteps"] == 800
