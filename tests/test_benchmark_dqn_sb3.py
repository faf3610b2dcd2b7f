"""Smoke test of the `dqn-sb3` benchmark: a --quick run per backend, checked for structure and sanity."""
import importlib.util
import json
import sys

import pytest

from rlgraph.benchmarks import BENCHMARKS, run_benchmark
from rlgraph.benchmarks import dqn_vs_sb3
from rlgraph.environments.env_utils import RLGraphMissingDependencyError

needs_sb3 = pytest.mark.skipif(importlib.util.find_spec("stable_baselines3") is None,
                               reason="needs stable-baselines3 (the '.[bench]' or '.[test]' extras)")


@pytest.fixture
def restore_torch_threads():
    import torch
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


@needs_sb3
def test_quick_run_writes_per_seed_rows_and_a_consistent_summary(backend, tmp_path, restore_torch_threads):
    out = tmp_path / "r.json"
    result = run_benchmark("dqn-sb3", ["--quick", "--backends", backend, "--out", str(out)])
    written = json.loads(out.read_text())
    assert {"benchmark", "steps", "seeds", "threads", "flush_denormal", "hyperparameters", "runs", "summary",
            "environment"} <= set(written)
    assert written["summary"] == result["summary"]  # JSON keeps floats exactly.
    mine, peer = f"rlgraph-{backend}", "sb3"

    # One row per library and seed; --quick is one seed of 600 steps with updates from step 100.
    assert [(r["library"], r["seed"]) for r in written["runs"]] == [(mine, 1), (peer, 1)]
    for row in written["runs"]:
        assert row["env_steps"] >= 600
        assert row["wall_s"] > 0 and row["steps_per_s"] > 0
        assert row["steps_per_s"] == pytest.approx(row["env_steps"] / row["wall_s"])
        assert row["num_updates"] > 0
        assert row["final_return"] >= 1.0  # Every CartPole episode earns at least one reward.

    summary = written["summary"]
    assert set(summary) == {mine, peer}
    assert summary[mine]["ratio_vs_sb3"] == pytest.approx(summary[mine]["steps_per_s"] / summary[peer]["steps_per_s"])
    assert summary[mine]["target_ratio"] == dqn_vs_sb3.TARGET_RATIOS[backend]
    assert summary[mine]["meets_target"] == (summary[mine]["ratio_vs_sb3"] >= summary[mine]["target_ratio"])


def test_rlgraph_config_matches_the_sb3_settings():
    hp = dqn_vs_sb3.HYPERPARAMETERS
    base = json.loads(open(dqn_vs_sb3.DEFAULT_CONFIG).read())
    config = dqn_vs_sb3.rlgraph_config(base, hp, "pytorch", steps=50_000, seed=3, threads=1)
    assert (config["double_q"], config["dueling_q"], config["huber_loss"]) == (False, False, True)
    assert config["memory_spec"]["capacity"] == 100_000
    assert config["optimizer_spec"] == {"type": "adam", "learning_rate": 2.3e-3, "epsilon": 1e-8,
                                      "clip_grad_norm": 10.0}
    assert config["update_spec"] == dict(base["update_spec"], update_interval=256, steps_before_update=1000,
                                         batch_size=64, sync_interval=10, update_steps=128)
    decay = config["exploration_spec"]["epsilon_spec"]["decay_spec"]
    assert (decay["from"], decay["to"], decay["stop_percentage"]) == (1.0, 0.04, 0.16)
    assert config["execution_spec"]["max_timesteps"] == 50_000
    assert [layer["units"] for layer in config["network_spec"]] == [256, 256]


def test_missing_sb3_names_the_bench_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)  # Makes `import stable_baselines3` fail.
    with pytest.raises(RLGraphMissingDependencyError, match=r'\.\[bench\]') as info:
        dqn_vs_sb3.main(["--quick", "--out", str(tmp_path / "r.json")])
    assert info.value.package == "stable-baselines3"
    assert not (tmp_path / "r.json").exists()
    assert "dqn-sb3" in BENCHMARKS
