"""`rlgraph benchmark impala`: the quick inline run's structure, the peer's settings and the built-in config copy.

The figures themselves are machine-dependent and belong in docs/performance.md, not here.
"""
import json

import gymnasium
import numpy as np
import pytest

from rlgraph.backend_system import is_backend_installed
from rlgraph.benchmarks import BENCHMARKS, impala
from rlgraph.benchmarks.sleepy_gym import SleepyGymCartPole


def test_quick_inline_run_reports_every_run_and_the_scaling(tmp_path):
    backend = "pytorch" if is_backend_installed("pytorch") else "tf"
    out = tmp_path / "impala.json"
    result = impala.main(["--quick", "--mode", "inline", "--no-rllib", "--backend", backend, "--out", str(out)])
    assert (result["mode"], result["actors"], result["timesteps_per_actor"]) == ("inline", [1, 2], 200)
    measured = result["backends"][backend]
    assert sorted(measured["runs"]) == ["CartPole-v1-1", "CartPole-v1-2", "SleepyCartPole-1", "SleepyCartPole-2"]
    for name, run in measured["runs"].items():
        for kind in ("single", "executor"):
            assert run[kind]["frames_per_s"] > 0, (name, kind)
        # The single agent's loop is update() calls; the executor learns once 8 rows of 50 steps are
        # queued, which a quick timed workload of 200 steps per actor may not reach.
        assert run["single"]["updates"] > 0 and run["executor"]["updates"] >= 0, name
    for kind in ("single", "executor"):
        expected = measured["runs"]["SleepyCartPole-2"][kind]["frames_per_s"] / \
            measured["runs"]["SleepyCartPole-1"][kind]["frames_per_s"]
        assert measured[f"scaling_{kind}"] == pytest.approx(expected)
    assert json.loads(out.read_text())["benchmark"] == "impala"
    assert "impala" in BENCHMARKS


def test_builtin_spec_equals_the_shipped_config():
    with open(impala.CONFIG_FILE) as handle:
        shipped = json.load(handle)
    assert impala.IMPALA_CARTPOLE_SPEC == {k: v for k, v in shipped.items()
                                           if k not in ("environment_spec", "training_spec")}


def test_benchmark_config_sets_actors_mode_and_seed():
    config = impala.impala_config(impala.IMPALA_CARTPOLE_SPEC, "pytorch", "inline", 4)
    executor = config["execution_spec"]["ray_spec"]["executor_spec"]
    assert (executor["mode"], executor["num_sample_workers"], executor["num_cpus_per_worker"]) == ("inline", 4, 0.25)
    assert config["execution_spec"]["seed"] == impala.SEED and config["backend"] == "pytorch"
    assert "backend" not in impala.IMPALA_CARTPOLE_SPEC  # (The shipped spec is not changed.)


def test_sleepy_gym_cartpole_sleeps_and_steps_like_cartpole(monkeypatch):
    slept = []
    monkeypatch.setattr("rlgraph.benchmarks.sleepy_gym.time.sleep", slept.append)
    sleepy, plain = SleepyGymCartPole(0.003), gymnasium.make("CartPole-v1")
    np.testing.assert_array_equal(sleepy.reset(seed=3)[0], plain.reset(seed=3)[0])
    for action in (0, 1, 1):
        ours, theirs = sleepy.step(action), plain.step(action)
        np.testing.assert_array_equal(ours[0], theirs[0])
        assert ours[1:3] == theirs[1:3]
    assert slept == [0.003] * 3
