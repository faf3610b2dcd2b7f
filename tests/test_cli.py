"""The `rlgraph` console script."""
import json
import subprocess
import sys

import pytest
from backend_marks import needs_tf

import rlgraph
from rlgraph.cli.main import EXIT_UNAVAILABLE, main
from config_helpers import tiny_config_file


def test_info(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"rlgraph {rlgraph.__version__}" in out and "backend tf" in out and "default backend: pytorch" in out


def _tiny_config(tmp_path):
    return tiny_config_file(tmp_path, "dqn_gridworld_4x4.json", num_timesteps=300, evaluation_interval=150,
                            log_interval=100, checkpoint_interval=200, stop_at_return=None)


@pytest.mark.parametrize("backend", ["pytorch", pytest.param("tf", marks=needs_tf)])
def test_train_evaluate_visualize(capsys, tmp_path, backend):
    out = tmp_path / "run"
    assert main(["train", str(_tiny_config(tmp_path)), "--backend", backend, "--seed", "1", "--output-dir", str(out),
                 "--set", "optimizer_spec.learning_rate=0.01", "--no-progress", "--device", "cpu"]) == 0
    printed = capsys.readouterr().out
    assert "300 steps" in printed and f"on {backend}" in printed
    config = json.loads((out / "config.json").read_text())
    assert config["optimizer_spec"]["learning_rate"] == 0.01 and config["backend"] == backend
    assert config["execution_spec"]["seed"] == 1 and config["execution_spec"]["device"] == "cpu"
    for name in ("episodes.csv", "evaluations.csv", "learning_curve.png", "checkpoints/final/agent_state.json", "checkpoints/final/manifest.json",
                 "checkpoints/step-200/config.json"):
        assert (out / name).exists(), name
    assert (out / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert any(p.name.startswith("events.out.tfevents") for p in (out / "tensorboard").iterdir())
    evaluations = (out / "evaluations.csv").read_text().splitlines()
    assert evaluations[0].startswith("step,mean_return") and [line.split(",")[0] for line in evaluations[1:]] == \
        ["150", "300"]

    assert main(["evaluate", str(out / "checkpoints" / "final"), "--episodes", "2"]) == 0
    assert "2 greedy episodes" in capsys.readouterr().out
    # --device replaces the run's device (a GPU this machine does not have is refused, naming the key).
    assert main(["evaluate", str(out / "checkpoints" / "final"), "--episodes", "1", "--device", "cuda:64"]) == 2
    assert "execution_spec.device asks for 'cuda:64'" in capsys.readouterr().err
    assert main(["evaluate", str(out / "checkpoints" / "final"), "--episodes", "1", "--device", "auto"]) == 0

    svg = tmp_path / "graph.svg"
    assert main(["visualize", str(_tiny_config(tmp_path)), "--backend", backend, "--output", str(svg)]) == 0
    text = svg.read_text()
    assert text.startswith("<svg") or "<svg" in text[:200]
    assert "target-policy" in text and "update_from_memory" in text
    dot = tmp_path / "graph.dot"
    assert main(["visualize", str(_tiny_config(tmp_path)), "--backend", backend, "--output", str(dot)]) == 0
    assert dot.read_text().startswith("digraph")


def test_train_with_a_missing_config(capsys):
    assert main(["train", "no/such/config.json"]) == 2
    assert "spec file not found" in capsys.readouterr().err


def test_train_rejects_unknown_keys(capsys, tmp_path):
    config = json.loads(open("configs/dqn_cartpole.json").read())
    config["update_spec"]["batch_sise"] = 3
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(config))
    assert main(["train", str(path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "batch_sise" in err and "batch_size" in err
    assert main(["train", "configs/dqn_cartpole.json", "--set", "training_spec.num_timestepz=5"]) == 2
    assert "num_timesteps" in capsys.readouterr().err
    assert main(["train", "configs/dqn_cartpole.json", "--set", "nonsense"]) == 2


def test_log_level_prints_rlgraphs_messages_while_the_command_runs(capsys, tmp_path):
    """--log-level info shows the build log (here the frame replay a "mem-prioritized-replay" of Atari
    frames becomes, with its bytes); without it only warnings print, and the logger is as before after."""
    from rlgraph.utils.util import root_logger
    config = json.loads(open("configs/dqn_pong.json").read())
    config["memory_spec"] = {"type": "mem-prioritized-replay", "capacity": 500}
    config["update_spec"]["steps_before_update"] = 1000
    path = tmp_path / "pong.json"
    path.write_text(json.dumps(config))
    level, handlers = root_logger.level, list(root_logger.handlers)
    argv = ["train", str(path), "--backend", "pytorch", "--steps", "20", "--no-progress",
            "--set", "training_spec.evaluation_interval=0"]
    assert main(argv + ["--output-dir", str(tmp_path / "a"), "--log-level", "info"]) == 0
    err = capsys.readouterr().err
    assert "rlgraph.agents.replay_access: mem-prioritized-replay: the states are stacks of 4 frames" in err
    assert "rlgraph.components.memories.frame_replay: FrameReplay: capacity 500 (" in err
    assert (root_logger.level, root_logger.handlers) == (level, handlers)
    assert main(argv + ["--output-dir", str(tmp_path / "b")]) == 0
    assert "FrameReplay" not in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(argv + ["--log-level", "loud"])
    assert "invalid choice: 'loud'" in capsys.readouterr().err


def test_evaluate_without_a_checkpoint(capsys, tmp_path):
    assert main(["evaluate", str(tmp_path)]) == 2
    assert "has no manifest.json" in capsys.readouterr().err


def test_benchmark_list(capsys):
    from rlgraph.benchmarks import BENCHMARKS
    assert main(["benchmark", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == list(BENCHMARKS)
    assert all(description in line for line, (_, description) in zip(lines, BENCHMARKS.values()))


def test_benchmark_unknown_name(capsys):
    assert main(["benchmark", "replai", "--quick"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rlgraph benchmark: unknown benchmark 'replai'") and "did you mean 'replay'?" in err


def test_benchmark_missing_dependency(capsys, monkeypatch):
    import rlgraph.benchmarks
    from rlgraph.environments import RLGraphMissingDependencyError

    def needs_a_package(name, options):
        raise RLGraphMissingDependencyError("stable-baselines3", where=f"rlgraph benchmark {name}",
                                            hint="pip install stable-baselines3")
    monkeypatch.setattr(rlgraph.benchmarks, "run_benchmark", needs_a_package)
    assert main(["benchmark", "dqn-sb3"]) == EXIT_UNAVAILABLE
    err = capsys.readouterr().err
    assert "'stable-baselines3' is needed but not installed" in err and "pip install" in err


def test_benchmark_replay_quick(capsys, tmp_path):
    out = tmp_path / "replay.json"
    assert main(["benchmark", "replay", "--quick", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "MemPrioritizedReplay" in printed and f"wrote {out}" in printed
    data = json.loads(out.read_text())
    assert data["benchmark"] == "replay" and data["quick"] and data["capacity"] == 2000
    assert {row["memory"] for row in data["records_per_s"]} >= {"MemPrioritizedReplay", "list baseline"}


def test_version_flag():
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0


def test_console_script_is_installed():
    result = subprocess.run([sys.executable, "-m", "rlgraph.cli.main", "info"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and "rlgraph" in result.stdout


def test_evaluate_uses_the_bytes_it_verified(capsys, tmp_path, monkeypatch):
    """A config.json swapped after the checkpoint was read and verified is never used: the config
    and the agent come from the verified bytes (here the swapped one names an env id that would
    import a module)."""
    from rlgraph.utils import checkpoint_files
    out = tmp_path / "run"
    assert main(["train", str(_tiny_config(tmp_path)), "--backend", "pytorch", "--seed", "1", "--output-dir",
                 str(out), "--no-progress"]) == 0
    capsys.readouterr()
    final = out / "checkpoints" / "final"
    read = checkpoint_files.read_checkpoint

    def read_then_swap(path, kind, where):
        files = read(path, kind, where)
        config = json.loads((final / "config.json").read_text())
        config["environment_spec"] = {"type": "openai-gym", "gym_env": "os:Evil-v0"}
        (final / "config.json").write_text(json.dumps(config))
        return files

    monkeypatch.setattr(checkpoint_files, "read_checkpoint", read_then_swap)
    assert main(["evaluate", str(final), "--episodes", "1"]) == 0
    assert "1 greedy episodes" in capsys.readouterr().out


def test_a_resumed_run_may_change_its_device(capsys, tmp_path):
    """`--device` with `--resume` replaces the run's execution_spec.device (a run may continue on another
    machine); a device the backend does not see is refused before anything is trained."""
    out = tmp_path / "run"
    assert main(["train", str(_tiny_config(tmp_path)), "--backend", "pytorch", "--seed", "1", "--output-dir",
                 str(out), "--no-progress", "--steps", "200"]) == 0
    capsys.readouterr()
    assert main(["train", "--resume", str(out), "--steps", "300", "--device", "cuda:64", "--no-progress"]) == 2
    assert "execution_spec.device asks for 'cuda:64'" in capsys.readouterr().err
    assert main(["train", "--resume", str(out), "--steps", "300", "--device", "cpu", "--no-progress"]) == 0
    assert "300 steps" in capsys.readouterr().out
