"""`rlgraph train` never loses a run: SIGINT/SIGTERM and env failures save a checkpoint, `--resume`
continues a run (agent, counters, logs), an existing run directory is never overwritten, and the
checkpoints kept (retention, `save_replay`, `best`)."""
import csv
import json
import logging
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from rlgraph.agents import Agent
from rlgraph.cli.main import main
from rlgraph.environments import GridWorld
from rlgraph.execution import SingleThreadedWorker
from rlgraph.execution.run_state import LoopState, StopOnSignals, trim_csv
from rlgraph.execution.training import make_agent_and_env, resolve_config, train
from rlgraph.utils.checkpoint_dir import read_json
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphInterrupted, RLGraphSpecError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _grid_config(saver_spec=None, **training):
    """A DQN on the 4x4 grid world (updates every 4 steps from step 40 on), 400 steps in chunks of 25."""
    with open(os.path.join(ROOT, "configs", "dqn_gridworld_4x4.json")) as handle:
        config = json.load(handle)
    config["update_spec"].update(steps_before_update=40, batch_size=8, update_interval=4)
    config["environment_spec"]["max_episode_steps"] = 20
    config["training_spec"] = dict(dict(num_timesteps=400, evaluation_interval=0, evaluation_episodes=1,
                                        stop_at_return=None, checkpoint_interval=0, log_interval=25), **training)
    config["execution_spec"] = {"seed": 3, "max_timesteps": 400}
    if saver_spec is not None:
        config["saver_spec"] = saver_spec
    return config


def _cartpole_config(path):
    """A small CartPole DQN that runs until it is stopped (1e6 steps)."""
    with open(os.path.join(ROOT, "configs", "dqn_cartpole.json")) as handle:
        config = json.load(handle)
    config["memory_spec"]["capacity"] = 1000
    config["network_spec"] = [{"type": "dense", "units": 16, "activation": "relu", "scope": "hidden-1"}]
    config["update_spec"].update(update_interval=16, steps_before_update=64, batch_size=16, update_steps=1)
    config["execution_spec"]["max_timesteps"] = 1000
    config["training_spec"] = {"num_timesteps": 1_000_000, "evaluation_interval": 0, "stop_at_return": None,
                               "checkpoint_interval": 0, "log_interval": 20}
    path.write_text(json.dumps(config))
    return path


def _rows(path):
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def _signal_at(monkeypatch, call, signal_number=signal.SIGINT):
    """GridWorld.step sends `signal_number` to this process at its `call`-th call."""
    calls = []
    original = GridWorld.step

    def step(self, actions, set_discrete_pos=None):
        calls.append(1)
        if len(calls) == call:
            os.kill(os.getpid(), signal_number)
        return original(self, actions, set_discrete_pos)
    monkeypatch.setattr(GridWorld, "step", step)
    return calls


def _record_agents(monkeypatch):
    """{checkpoint path: (weights, counters)} of every store_model, and the same right after each load_model."""
    stored, loaded = {}, []

    def state(agent):
        rng = agent.graph_executor.get_rng_state()
        return agent.get_weights(), (agent.timesteps, agent.num_updates, agent.last_sync_timestep), rng

    original_store, original_load = Agent.store_model, Agent.load_model

    def store_model(self, path=None, *args, **kwargs):
        written = original_store(self, path, *args, **kwargs)
        stored[written] = state(self)
        return written

    def load_model(self, path=None):
        original_load(self, path)
        loaded.append((path, state(self)))
    monkeypatch.setattr(Agent, "store_model", store_model)
    monkeypatch.setattr(Agent, "load_model", load_model)
    return stored, loaded


# --- Interrupting and resuming in this process ------------------------------------------------------
def test_sigint_checkpoints_and_resume_continues_exactly(backend, tmp_path, monkeypatch):
    run = str(tmp_path / "run")
    config = _grid_config(num_timesteps=300, checkpoint_interval=50, saver_spec={"max_checkpoints": 2})
    config["backend"] = backend
    stored, loaded = _record_agents(monkeypatch)
    _signal_at(monkeypatch, 137)
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with pytest.raises(RLGraphInterrupted) as info:
        train(config, output_dir=run, progress=False)
    error = info.value
    # The step that got the signal finishes, then the chunk ends: a checkpoint at step 137.
    assert (error.step, error.signal_number, error.run_dir) == (137, signal.SIGINT, run)
    assert error.checkpoint == os.path.join(run, "checkpoints", "step-137")
    assert f"rlgraph train --resume {run}" in str(error) and "stopped by SIGINT at step 137 of 300" in str(error)
    state = LoopState.from_json(read_json(os.path.join(error.checkpoint, "train_state.json"), "test"), "test")
    episodes = _rows(os.path.join(run, "episodes.csv"))
    assert state.steps == 137 and state.episode_count == len(episodes) and state.next_checkpoint == 150
    assert os.path.isfile(os.path.join(run, "learning_curve.png"))
    # Retention counts the interrupt checkpoint: step-50 went when step-137 came.
    assert sorted(os.listdir(os.path.join(run, "checkpoints"))) == ["step-100", "step-137"]
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers  # Restored.

    # An interrupted process may have logged past its checkpoint (killed later): those rows go.
    with open(os.path.join(run, "episodes.csv"), "a") as handle:
        handle.write(f"150,{len(episodes) + 1},1.0,13\n")
    monkeypatch.undo()
    interrupted = stored
    _, loaded = _record_agents(monkeypatch)
    summary = train(resume=run, progress=False)
    # The resumed agent is the checkpointed one, bit for bit (weights, counters; PyTorch: RNG too).
    (path, (weights, counters, rng)), = loaded
    saved_weights, saved_counters, saved_rng = interrupted[error.checkpoint]
    assert path == error.checkpoint and counters == saved_counters and counters[1] > 0
    assert sorted(weights) == sorted(saved_weights)
    for name, value in weights.items():
        assert value.dtype == saved_weights[name].dtype and np.array_equal(value, saved_weights[name]), name
    if backend == "pytorch":  # (TF's stateful random ops cannot be restored, see agent_state.py.)
        assert np.array_equal(rng["backend"], saved_rng["backend"])
    assert np.array_equal(rng["numpy"][1], saved_rng["numpy"][1]) and rng["numpy"][2] == saved_rng["numpy"][2]
    assert summary["timesteps"] == 300 and summary["checkpoint"] == os.path.join(run, "checkpoints", "final")
    rows = _rows(os.path.join(run, "episodes.csv"))
    steps = [int(r["step"]) for r in rows]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    assert [int(r["episode"]) for r in rows] == list(range(1, len(rows) + 1))
    assert any(s > 137 for s in steps) and summary["episodes"] == len(rows)
    assert sorted(os.listdir(os.path.join(run, "checkpoints"))) == ["final", "step-250", "step-300"]


def test_a_second_signal_while_saving_quits_and_leaves_the_checkpoints_intact(tmp_path, monkeypatch):
    import rlgraph.agents.agent_checkpoints as agent_module
    from rlgraph.utils.checkpoint_dir import verify_checkpoint
    run = tmp_path / "run"
    calls = _signal_at(monkeypatch, 120)
    save_agent_state = agent_module.save_agent_state

    def interrupted_save(directory, agent):
        if len(calls) >= 120:  # The save after the first signal: a second one comes in the middle.
            os.kill(os.getpid(), signal.SIGINT)
        save_agent_state(directory, agent)
    monkeypatch.setattr(agent_module, "save_agent_state", interrupted_save)
    with pytest.raises(KeyboardInterrupt):
        train(dict(_grid_config(checkpoint_interval=50), backend="pytorch"), output_dir=str(run), progress=False)
    # No step-120, no temporary directory; the earlier checkpoints load; the logs are closed.
    assert sorted(os.listdir(run / "checkpoints")) == ["step-100", "step-50"]
    for name in ("step-50", "step-100"):
        verify_checkpoint(str(run / "checkpoints" / name), None, "test")
    assert (run / "learning_curve.png").is_file()
    monkeypatch.undo()
    assert train(resume=str(run), progress=False, num_timesteps=150)["timesteps"] == 150


def test_env_failure_writes_a_checkpoint_then_reraises_naming_the_env(tmp_path, monkeypatch, capsys):
    # The env breaks, not the agent: the run saves it, then fails naming the env; --resume goes on.
    calls, original = [], GridWorld.step

    def failing_step(self, actions, set_discrete_pos=None):
        calls.append(1)
        if len(calls) == 90:
            raise ZeroDivisionError("the env broke")
        return original(self, actions, set_discrete_pos)
    monkeypatch.setattr(GridWorld, "step", failing_step)
    config, run = tmp_path / "grid.json", tmp_path / "run"
    config.write_text(json.dumps(_grid_config(num_timesteps=150)))
    assert main(["train", str(config), "--backend", "pytorch", "--output-dir", str(run), "--no-progress"]) == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    checkpoint = run / "checkpoints" / "step-89"
    assert last.startswith("rlgraph train: GridWorld(4x4") and "raised ZeroDivisionError: the env broke" in last
    assert "worker's env step 90" in last and f"a checkpoint at step 89 is in {checkpoint}" in last
    assert f"rlgraph train --resume {run}" in last
    assert read_json(str(checkpoint / "train_state.json"), "test")["steps"] == 89
    assert (run / "learning_curve.png").is_file() and not (run / "checkpoints" / "final").exists()
    logged = _rows(run / "episodes.csv")

    monkeypatch.undo()
    assert main(["train", "--resume", str(run), "--no-progress"]) == 0
    assert "150 steps" in capsys.readouterr().out
    rows = _rows(run / "episodes.csv")
    assert rows[:len(logged)] == logged and int(rows[len(logged)]["step"]) > 89
    assert [int(r["episode"]) for r in rows] == list(range(1, len(rows) + 1))


# --- rlgraph train in a subprocess: real signals ---------------------------------------------------------
def _start_training(tmp_path):
    run, config = tmp_path / "run", _cartpole_config(tmp_path / "c.json")
    with open(tmp_path / "stderr.txt", "w") as err:
        process = subprocess.Popen([sys.executable, "-m", "rlgraph.cli.main", "train", str(config), "--backend",
                                    "pytorch", "--seed", "1", "--output-dir", str(run), "--no-progress"],
                                   cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.time() + 60
    while time.time() < deadline and process.poll() is None:
        episodes = run / "episodes.csv"
        if episodes.is_file() and len(episodes.read_text().splitlines()) > 3:
            break
        time.sleep(0.1)
    assert process.poll() is None, (tmp_path / "stderr.txt").read_text()
    return process, run


@pytest.mark.parametrize("signal_number, status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_to_rlgraph_train_saves_and_says_how_to_resume(tmp_path, capsys, signal_number, status):
    process, run = _start_training(tmp_path)
    try:
        process.send_signal(signal_number)
        assert process.wait(timeout=60) == status
    finally:
        if process.poll() is None:
            process.kill()
    err = (tmp_path / "stderr.txt").read_text()
    name = "SIGINT" if signal_number == signal.SIGINT else "SIGTERM"
    assert f"{name} received: finishing the current env step" in err and "Traceback" not in err
    assert f"stopped by {name} at step" in err and f"rlgraph train --resume {run}" in err
    (checkpoint,) = os.listdir(run / "checkpoints")
    step = int(checkpoint[len("step-"):])
    assert read_json(str(run / "checkpoints" / checkpoint / "train_state.json"), "test")["steps"] == step
    assert (run / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = _rows(run / "episodes.csv")
    assert rows and int(rows[-1]["step"]) <= step
    if signal_number == signal.SIGINT:  # (The resume itself does not depend on the signal: tested once.)
        _check_resume_continues(run, step, checkpoint, rows, capsys)


def _check_resume_continues(run, step, checkpoint, rows, capsys):
    """Resumed: the step counter and the episode numbers go on, the CSV has no duplicate steps."""
    assert main(["train", "--resume", str(run), "--steps", str(step + 60), "--no-progress"]) == 0
    assert f"{step + 60} steps" in capsys.readouterr().out
    more = _rows(run / "episodes.csv")
    steps = [int(r["step"]) for r in more]
    assert more[:len(rows)] == rows and len(more) > len(rows) and steps == sorted(set(steps))
    assert [int(r["episode"]) for r in more] == list(range(1, len(more) + 1))
    assert sorted(os.listdir(run / "checkpoints")) == sorted([checkpoint, "final"])
    assert json.loads((run / "config.json").read_text())["training_spec"]["num_timesteps"] == step + 60


# --- What a run refuses -------------------------------------------------------------------------------
def test_an_existing_run_directory_is_never_reused(tmp_path, capsys):
    config = tmp_path / "grid.json"
    config.write_text(json.dumps(_grid_config()))
    run = tmp_path / "run"
    run.mkdir()
    (run / "episodes.csv").write_text("step,episode,return,length\n")
    assert main(["train", str(config), "--output-dir", str(run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rlgraph train: train(output_dir, --output-dir): the output directory is not empty")
    assert f"rlgraph train --resume {run}" in err and "another --output-dir" in err
    with pytest.raises(RLGraphError, match="the output directory is not empty"):
        train(str(config), output_dir=str(run), progress=False)
    # A resumed run keeps its config, and needs a checkpoint to start from.
    assert main(["train", "--resume", str(run), "--set", "optimizer_spec.learning_rate=0.1"]) == 2
    assert "a resumed run keeps the config it started with" in capsys.readouterr().err
    with pytest.raises(RLGraphSpecError, match=r"keeps the config.*Received backend, seed"):
        train(resume=str(run), backend="tf", seed=3)
    with pytest.raises(RLGraphError, match="no run directory to resume"):
        train(resume=str(run))
    (run / "config.json").write_text(config.read_text())
    with pytest.raises(RLGraphError, match="the run has no checkpoint to resume from"):
        train(resume=str(run))


def test_a_complete_run_is_not_resumed_and_a_distributed_one_is(tmp_path):
    from rlgraph.execution.run_state import ResumePoint
    from rlgraph.execution.training import resumed_config
    point = ResumePoint(str(tmp_path), str(tmp_path / "checkpoints" / "final"), LoopState(steps=400), _grid_config())
    with pytest.raises(RLGraphError, match=r"the run is complete: it trained 400 of 400 steps.*--steps N"):
        resumed_config(point, None)
    assert resumed_config(point, 500)["training_spec"]["num_timesteps"] == 500
    point.state.steps, point.state.solved_at = 200, 200
    with pytest.raises(RLGraphError, match="reached stop_at_return at step 200"):
        resumed_config(point, None)
    with open(os.path.join(ROOT, "configs", "impala_cartpole.json")) as handle:
        point.config = json.load(handle)
    # (tests/test_distributed_resume.py resumes one.)
    assert resumed_config(point, 10 ** 6)["training_spec"]["num_timesteps"] == 10 ** 6


# --- Which checkpoints are kept ---------------------------------------------------------------------------
@pytest.mark.parametrize("memory", ["replay-memory", "mem-prioritized-replay"])
def test_save_replay_false_leaves_the_memory_out(backend, tmp_path, caplog, memory):
    config = resolve_config(dict(_grid_config(), memory_spec={"type": memory, "capacity": 500}), backend=backend)
    agent, env_spec = make_agent_and_env(config)
    worker = SingleThreadedWorker(agent, env_spec, seed=1)
    worker.execute_timesteps(60)
    full = agent.store_model(str(tmp_path / "full"), add_timestep=False)
    lean = agent.store_model(str(tmp_path / "lean"), add_timestep=False, save_replay=False)

    def size(path):
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)
    assert size(lean) < size(full) / 2 and read_json(os.path.join(lean, "manifest.json"), "t")["replay"] is False
    twin, _ = make_agent_and_env(config)
    with caplog.at_level(logging.WARNING):
        twin.load_model(lean)
    assert [r.message for r in caplog.records].count(next(r.message for r in caplog.records
                                                         if "without its replay memory" in r.message)) == 1
    assert twin.memory_size() == 0 < agent.memory_size() and twin.timesteps == agent.timesteps
    memory_names = set(agent._replay_variable_names())
    for name, value in agent.get_weights().items():
        if name not in memory_names:
            assert np.array_equal(value, twin.get_weights([name])[name]), name
    # Training goes on: the memory fills again before updates resume.
    stats = SingleThreadedWorker(twin, env_spec, seed=2).execute_timesteps(60)
    assert twin.memory_size() > 0 and stats["num_updates"] > 0
    for each in (worker, agent, twin):
        each.terminate()


def test_a_run_without_replay_in_its_checkpoints_resumes(tmp_path, monkeypatch):
    run = str(tmp_path / "run")
    _signal_at(monkeypatch, 70, signal.SIGTERM)
    config = dict(_grid_config(saver_spec={"save_replay": False}, num_timesteps=200), backend="pytorch")
    with pytest.raises(RLGraphInterrupted, match="stopped by SIGTERM at step 70") as info:
        train(config, output_dir=run, progress=False)
    assert not read_json(os.path.join(info.value.checkpoint, "manifest.json"), "t")["replay"]
    monkeypatch.undo()
    summary = train(resume=run, progress=False)
    assert summary["timesteps"] == 200 and summary["num_updates"] > 0


def test_the_best_evaluation_keeps_its_checkpoint(tmp_path, monkeypatch, capsys):
    returns = iter([1.0, 5.0, 3.0, 5.0])

    def evaluate(self, num_episodes, max_timesteps_per_episode=0):
        value = next(returns)
        return {"mean_episode_return": value, "min_episode_return": value, "max_episode_return": value}
    monkeypatch.setattr(SingleThreadedWorker, "evaluate", evaluate)
    run = tmp_path / "run"
    summary = train(dict(_grid_config(evaluation_interval=50, num_timesteps=200), backend="pytorch"),
                    output_dir=str(run), progress=False)
    assert summary["evaluations"] == [(50, 1.0), (100, 5.0), (150, 3.0), (200, 5.0)]
    best = run / "checkpoints" / "best"
    assert read_json(str(best / "best.json"), "t") == {"step": 100, "mean_return": 5.0}  # (Not the later tie.)
    assert read_json(str(best / "manifest.json"), "t")["step"] <= 100 < read_json(
        str(run / "checkpoints" / "final" / "manifest.json"), "t")["step"]
    monkeypatch.undo()
    assert main(["evaluate", str(best), "--episodes", "1"]) == 0
    assert "1 greedy episodes" in capsys.readouterr().out


# --- The pieces ---------------------------------------------------------------------------------------
def test_a_stop_request_ends_a_worker_call_after_the_current_step(backend):
    config = resolve_config(_grid_config(), backend=backend)
    agent, env_spec = make_agent_and_env(config)
    worker = SingleThreadedWorker(agent, env_spec, num_environments=2, seed=1,
                                  hooks=[lambda a, data: data.step == 7 and worker.request_stop()])
    stats = worker.execute_timesteps(40)
    # Both envs finish the worker step in which the request came (steps 7 and 8).
    assert stats["timesteps_executed"] == 8 == worker.total_steps and agent.timesteps == 6
    assert worker.execute_timesteps(40)["timesteps_executed"] == 0  # Until the request is withdrawn.
    worker.stop_requested = False
    assert worker.execute_timesteps(4, reset=False)["timesteps_executed"] == 4
    worker.terminate()
    agent.terminate()


def test_signal_handlers_are_restored_and_a_second_signal_quits():
    before = signal.getsignal(signal.SIGTERM)
    requests = []
    with pytest.raises(KeyboardInterrupt):
        with StopOnSignals(lambda: requests.append(1)) as signals:
            assert signal.getsignal(signal.SIGTERM) == signals._handle
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.01)
            assert requests == [1] and signals.name == "SIGTERM"
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)
    assert signal.getsignal(signal.SIGTERM) == before


def test_trim_csv_drops_the_rows_after_a_step(tmp_path):
    path = tmp_path / "episodes.csv"
    path.write_text("step,episode,return,length\n10,1,1.0,10\n20,2,2.0,10\n30,3,3.0,10\n")
    assert trim_csv(str(path), 20) == 1 and trim_csv(str(path), 20) == 0
    assert path.read_text().splitlines() == ["step,episode,return,length", "10,1,1.0,10", "20,2,2.0,10"]


def test_evaluations_run_on_the_evaluation_settings_of_the_env(monkeypatch):
    """Training on a CartPole that ends episodes at a lost life (it has none): the evaluator's env
    spec turns that off (AtariEnv's turns off reward clipping too), the training env keeps it."""
    import rlgraph.execution.single_threaded_worker as stw
    made = []
    original = stw.SingleThreadedWorker.__init__

    def recording_init(self, agent, env_spec, *args, **kwargs):
        made.append(env_spec)
        original(self, agent, env_spec, *args, **kwargs)

    monkeypatch.setattr(stw.SingleThreadedWorker, "__init__", recording_init)
    config = {"type": "dqn", "network_spec": [{"type": "dense", "units": 8}],
              "environment_spec": {"type": "openai-gym", "gym_env": "CartPole-v1", "episodic_life": True},
              "training_spec": {"num_timesteps": 30, "evaluation_interval": 15, "evaluation_episodes": 1},
              "execution_spec": {"seed": 1}, "backend": "pytorch"}
    summary = train(config, progress=False)
    assert len(summary["evaluations"]) == 2
    episodic = [spec.get("episodic_life") for spec in made if isinstance(spec, dict)]
    assert episodic == [True, False], made  # The training worker's, then the evaluator's.


def test_an_evaluation_updates_the_best_return_and_the_solved_step():
    run = LoopState(steps=100, evaluations=[(100, 5.0)])
    assert run.note_evaluation(False) and run.best_return == 5.0 and run.solved_at is None
    run.steps = 200
    run.evaluations.append((200, 3.0))
    assert not run.note_evaluation(True) and run.best_return == 5.0 and run.solved_at == 200
    run.steps = 300
    run.evaluations.append((300, 5.0))  # Equal is not better: the earlier best checkpoint stays.
    assert not run.note_evaluation(True) and run.solved_at == 200
    run.evaluations.append((400, float("nan")))
    assert not run.note_evaluation(False) and run.best_return == 5.0
    assert not LoopState(steps=10).note_evaluation(False)  # No evaluation (a rank that does not evaluate).
