"""Benchmark smoke tests: the act, update, build and replay benchmarks run (--quick) and report sane figures.

No speed is asserted: the checks are structure (keys, rows) and sanity (positive times,
overhead within the total, ratios that match their parts).
"""
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rlgraph.backend_system import is_backend_installed
from rlgraph.benchmarks import BENCHMARKS, act_overhead, build_time, common, replay, update_overhead
from rlgraph.utils.rlgraph_errors import RLGraphBackendUnavailableError, RLGraphSpecError

REPO = Path(__file__).resolve().parents[1]


def test_act_overhead_quick(backend, device, tmp_path):
    out = tmp_path / "act.json"
    result = act_overhead.main(["--quick", "--backends", backend, "--calls", "50", "--out", str(out),
                                "--device", device])
    assert result["device"] == device
    r = result["backends"][backend]
    # The raw function holds the agent's policy weights: the same greedy actions on 200 states.
    assert r["actions_match"] is True
    assert r["epsilon"] == pytest.approx(1.0 - 0.96 * 0.5)  # time 0.08 of a decay over 0.16
    for mode in ("greedy", "explore"):
        m = r[mode]
        assert m["rlgraph_us"] > 0 and m["raw_us"] > 0
        assert m["ratio"] == pytest.approx(m["rlgraph_us"] / m["raw_us"])
        if backend == "tf":
            assert m["ratio_vs_concrete"] == pytest.approx(m["rlgraph_us"] / m["raw_concrete_us"])
    assert r["greedy"]["target"] == 1.15
    assert json.loads(out.read_text())["backends"][backend]["actions_match"] is True


def test_update_overhead_quick(backend, device, tmp_path):
    out = tmp_path / "update.json"
    result = update_overhead.main(["--quick", "--backends", backend, "--calls", "10", "--out", str(out),
                                   "--device", device])
    assert result["device"] == device
    r = result["backends"][backend]
    # Same weights, batch, loss and Adam rule: the first three losses agree.
    assert r["losses_match"] is True
    ours, theirs = r["first_losses"]["rlgraph"], r["first_losses"]["raw"]
    assert ours == pytest.approx(theirs, rel=1e-3) and ours[0] != ours[1] != ours[2]
    assert r["ratio"] == pytest.approx(r["rlgraph_us"] / r["raw_us"])
    assert json.loads(out.read_text())["batch_size"] == 64


def test_a_device_the_backend_does_not_see_is_refused(backend, tmp_path):
    for main in (act_overhead.main, update_overhead.main):
        with pytest.raises(RLGraphSpecError, match=r"execution_spec\.device asks for 'cuda:64'"):
            main(["--quick", "--backends", backend, "--device", "cuda:64", "--out", str(tmp_path / "x.json")])


def test_policy_layers_read_the_online_and_target_networks():
    agent, _, _ = act_overhead.make_agent("pytorch" if is_backend_installed("pytorch") else "tf")
    online, target = act_overhead.policy_layers(agent), act_overhead.policy_layers(agent, "target_policy")
    assert [k.shape for k, _ in online] == [(4, 256), (256, 256), (256, 2)]
    assert [b.shape for _, b in online] == [(256,), (256,), (2,)]
    weights = agent.graph_executor.get_weights()
    np.testing.assert_array_equal(online[2][0], weights["agent/policy/action-adapter-0/action-layer/kernel"])
    np.testing.assert_array_equal(online[0][1], weights["agent/policy/neural-network/hidden-1/bias"])
    np.testing.assert_array_equal(target[0][0], weights["agent/target-policy/neural-network/hidden-1/kernel"])


def test_build_time_quick(backend, tmp_path):
    out = tmp_path / "build.json"
    result = build_time.main(["--quick", "--backends", backend, "--out", str(out)])
    assert result["repeats"] == 1 and list(result["backends"]) == [backend]
    assert result["config"].endswith(os.path.join("configs", "dqn_cartpole.json"))
    r = result["backends"][backend]
    for key in ("total_build_time", "backend_time", "raw_build_time", "construct_time"):
        assert r[key] > 0, key
    assert 0 <= r["build_overhead"] <= r["total_build_time"]
    assert r["overhead_share"] == pytest.approx(r["build_overhead"] / r["total_build_time"])
    assert r["ratio_to_raw"] == pytest.approx(r["total_build_time"] / r["raw_build_time"])
    assert r["budget"] == {"pytorch": 0.025, "tf": 0.5}[backend]
    assert r["within_budget"] == (r["total_build_time"] <= r["budget"])
    assert r["backend_time"] + r["build_overhead"] == pytest.approx(r["total_build_time"])  # one sample
    assert r["first_build"]["total_build_time"] > 0
    counters = r["counters"]
    assert counters["component_count"] > 10 and counters["variable_count"] > 10 and counters["passes"] >= 1
    assert counters["api_methods"] >= 5
    saved = json.loads(out.read_text())
    assert saved["backends"][backend]["ratio_to_raw"] == pytest.approx(r["ratio_to_raw"])
    assert "python" in saved["environment"]


def test_builtin_spec_equals_the_shipped_config():
    with open(REPO / "configs" / "dqn_cartpole.json") as handle:
        config = json.load(handle)
    spec, source = common.load_agent_spec()
    assert source == common.CONFIG_FILE
    assert spec == common.DQN_CARTPOLE_SPEC == {k: v for k, v in config.items()
                                                    if k not in ("environment_spec", "training_spec")}


def test_backend_selection(monkeypatch):
    assert common.select_backends(["torch", "pytorch"], "x") == ["pytorch"]
    monkeypatch.setattr(common, "is_backend_installed", lambda name: name == "pytorch")
    assert common.select_backends(None, "x") == ["pytorch"]
    with pytest.raises(RLGraphBackendUnavailableError, match="'tf' is not available"):
        common.select_backends(["tf"], "rlgraph benchmark build (--backends)")
    monkeypatch.setattr(common, "is_backend_installed", lambda name: False)
    with pytest.raises(RLGraphBackendUnavailableError, match="neither TensorFlow nor PyTorch"):
        common.select_backends(None, "x")


def test_replay_quick(tmp_path):
    out = tmp_path / "replay.json"
    result = replay.main(["--quick", "--rounds", "5", "--out", str(out)])
    assert (result["capacity"], result["batch_size"], result["rounds"]) == (2000, 64, 5)
    backends = [b for b in ("tf", "pytorch") if is_backend_installed(b)]
    rows = {(r["memory"], r["backend"], r["record"]): r for r in result["records_per_s"]}
    expected = {("MemPrioritizedReplay", "numpy", kind) for kind in replay.RECORDS}
    expected |= {("list baseline", "python", kind) for kind in ("atari", "cartpole")}
    expected |= {("FrameReplay", "numpy", "atari-stack")}
    expected |= {("PrioritizedReplay", backend, "cartpole") for backend in backends}
    assert set(rows) == expected
    for row in rows.values():
        for op in replay.OPERATIONS:
            assert math.isfinite(row[op]) and row[op] > 0, (row, op)
    for kind in ("atari", "cartpole"):
        for op in replay.OPERATIONS:
            assert result["ratio"][kind][op] == pytest.approx(
                rows["MemPrioritizedReplay", "numpy", kind][op] / rows["list baseline", "python", kind][op])
    naive, frames = rows["MemPrioritizedReplay", "numpy", "atari-stack"], rows["FrameReplay", "numpy", "atari-stack"]
    assert result["frame_replay_ratio"]["bytes"] == pytest.approx(frames["bytes"] / naive["bytes"])
    # Each frame once instead of 8 times per record, plus the pool's bookkeeping, whole blocks of
    # frames and ids: 0.26 at this small capacity (0.17 at 100,000, 0.14 at 1M).
    assert frames["bytes"] < naive["bytes"] / 3
    assert json.loads(out.read_text())["records_per_s"] == result["records_per_s"]


def test_list_baseline_samples_by_priority():
    memory = replay.ListPrioritizedReplay(capacity=3, alpha=1.0, beta=1.0, seed=0)
    memory.insert_records({"x": [10.0, 11.0, 12.0]})
    memory.update_records([0, 1, 2], [1.0, 0.0, 3.0])  # priorities 1, ~0, 3 (+ epsilon)
    batch, indices, weights = memory.get_records(4)  # One draw per unit of priority mass.
    assert indices == [0, 2, 2, 2] and batch["x"].tolist() == [10.0, 12.0, 12.0, 12.0]
    # w_i = (N P(i))^-beta / max_j w_j; the max belongs to the ~0 priority: w_i = p_min / p_i.
    assert weights == pytest.approx([1e-6, 1e-6 / 3, 1e-6 / 3, 1e-6 / 3], rel=1e-3)


def test_runners_exist_for_every_benchmark():
    for module, _ in BENCHMARKS.values():
        name = module.rsplit(".", 1)[1]
        text = (REPO / "benchmarks" / f"{name}.py").read_text()
        assert f"from {module} import main" in text and 'if __name__ == "__main__":' in text, name


def test_performance_doc_covers_every_benchmark():
    """docs/performance.md lists each benchmark by name and module, and the commands it shows exist."""
    text = (REPO / "docs" / "performance.md").read_text()
    for name, (module, _) in BENCHMARKS.items():
        assert f"| `{name}` | `{module}` |" in text, name
    for command in re.findall(r"rlgraph benchmark ([a-z0-9-]+)", text):
        assert command == "list" or command in BENCHMARKS, command
    for module in re.findall(r"python -m (?:pyinstrument -m )?benchmarks\.([a-z0-9_]+)", text):
        assert (REPO / "benchmarks" / f"{module}.py").exists(), module


def test_python_m_runners(tmp_path):
    out = tmp_path / "replay.json"
    result = subprocess.run([sys.executable, "-m", "benchmarks.replay", "--quick", "--rounds", "5", "--out", str(out)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"wrote {out}" in result.stdout and json.loads(out.read_text())["benchmark"] == "replay"
    # The older script keeps working as a module (it puts tests/ on sys.path itself).
    backend = "pytorch" if is_backend_installed("pytorch") else "tf"
    result = subprocess.run([sys.executable, "-m", "benchmarks.build_and_call_overhead", "--backends", backend,
                             "--calls", "5"], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"{backend}: 51 components" in result.stdout


def test_async_envs_quick(tmp_path):
    if not all(importlib.util.find_spec(module) for module in ("ale_py", "cv2")):
        pytest.skip(reason="the atari extra (ale-py, OpenCV) is not installed")
    from rlgraph.benchmarks import async_envs
    config, env_spec, source = async_envs.load_config()
    assert source == async_envs.CONFIG_FILE and env_spec == async_envs.PONG_ENV_SPEC == config["environment_spec"]
    out = tmp_path / "async.json"
    backend = "pytorch" if is_backend_installed("pytorch") else "tf"
    result = async_envs.main(["--quick", "--agent", "--backend", backend, "--steps", "20", "--out", str(out)])
    assert (result["num_environments"], result["steps_per_round"], result["rounds"]) == (4, 20, 1)
    assert list(result["runs"]) == ["Pong, random actions", "CartPole + 2 ms sleep, random actions",
                                    f"Pong, DQN acting ({backend})"]
    for run in result["runs"].values():
        for contender in ("sequential", "async"):
            assert math.isfinite(run[contender]["frames_per_s"]) and run[contender]["frames_per_s"] > 0
        assert run["speed_up"] == pytest.approx(run["async"]["frames_per_s"] / run["sequential"]["frames_per_s"])
    if importlib.util.find_spec("envpool"):  # (The test extra has it: EnvPool runs the Atari rows.)
        runs = result["runs"]
        assert "envpool" not in runs["CartPole + 2 ms sleep, random actions"]
        for name in ("Pong, random actions", f"Pong, DQN acting ({backend})"):
            assert runs[name]["envpool"]["frames_per_s"] > 0 and runs[name]["envpool_speed_up"] == pytest.approx(
                runs[name]["envpool"]["frames_per_s"] / runs[name]["sequential"]["frames_per_s"])
    assert json.loads(out.read_text())["benchmark"] == "async-envs"
