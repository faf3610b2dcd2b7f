"""What the smoke tests of the Stable-Baselines3 peer benchmarks (dqn-sb3, ppo-sb3, sac-sb3) share."""
import importlib.util
import json
import sys

import pytest

from rlgraph.benchmarks import BENCHMARKS, run_benchmark
from rlgraph.environments.env_utils import RLGraphMissingDependencyError

needs_sb3 = pytest.mark.skipif(importlib.util.find_spec("stable_baselines3") is None,
                               reason="needs stable-baselines3 (the '.[bench]' or '.[test]' extras)")


def quick_run(name: str, backend: str, tmp_path) -> tuple:
    """(returned, written) results of `rlgraph benchmark NAME --quick --backends BACKEND`; torch's
    thread count is restored afterwards."""
    import torch
    threads = torch.get_num_threads()
    out = tmp_path / "r.json"
    try:
        result = run_benchmark(name, ["--quick", "--backends", backend, "--out", str(out)])
    finally:
        torch.set_num_threads(threads)
    written = json.loads(out.read_text())
    assert {"benchmark", "env", "steps", "seeds", "threads", "flush_denormal", "hyperparameters", "runs", "summary",
            "environment"} <= set(written)
    assert written["benchmark"] == name
    assert written["summary"] == result["summary"]  # JSON keeps floats exactly.
    return result, written


def check_rows(written: dict, backend: str, min_steps: int) -> dict:
    """Checks one rlgraph and one SB3 row of seed 1 (--quick); returns them by library."""
    mine, peer = f"rlgraph-{backend}", "sb3"
    assert [(r["library"], r["seed"]) for r in written["runs"]] == [(mine, 1), (peer, 1)]
    for row in written["runs"]:
        assert row["env_steps"] >= min_steps
        assert row["wall_s"] > 0 and row["steps_per_s"] == pytest.approx(row["env_steps"] / row["wall_s"])
        assert 0 < row["update_s"] < row["wall_s"]
        assert row["collect_s"] == pytest.approx(row["wall_s"] - row["update_s"])
        assert row["num_updates"] > 0
    assert {"act_s", "env_s"} <= set(written["runs"][0])
    return {row["library"]: row for row in written["runs"]}


def check_summary(written: dict, backend: str, target_ratios: dict) -> None:
    """The summary's ratio is rlgraph's mean steps/s over SB3's, judged against `target_ratios`."""
    summary, mine, peer = written["summary"], f"rlgraph-{backend}", "sb3"
    assert set(summary) == {mine, peer}
    assert summary[mine]["ratio_vs_sb3"] == pytest.approx(summary[mine]["steps_per_s"] / summary[peer]["steps_per_s"])
    target = target_ratios.get(backend)
    assert summary[mine]["target_ratio"] == target
    assert summary[mine]["meets_target"] == (None if target is None else summary[mine]["ratio_vs_sb3"] >= target)


def check_missing_sb3(module, name: str, monkeypatch, tmp_path) -> None:
    """Without stable-baselines3, `module.main` names the bench extra before any run."""
    monkeypatch.setitem(sys.modules, "stable_baselines3", None)  # Makes `import stable_baselines3` fail.
    with pytest.raises(RLGraphMissingDependencyError, match=r'\.\[bench\]') as info:
        module.main(["--quick", "--out", str(tmp_path / "r.json")])
    assert info.value.package == "stable-baselines3"
    assert not (tmp_path / "r.json").exists()
    assert name in BENCHMARKS


def zoo_agent_and_sb3_model(pair, backend: str = "pytorch") -> tuple:
    """(rlgraph agent, SB3 model) of a zoo pair (a `ZooPair`), both seeded 1: the agent built from
    `zoo_configs.rlgraph_config` for the pair's env spaces (no env, no training), the model from
    `zoo_configs.make_sb3_model` (its own vec env; close it with `model.get_env().close()`)."""
    import gymnasium as gym

    from rlgraph.agents import Agent
    from rlgraph.benchmarks import zoo_configs
    from rlgraph.spaces import space_from_gym
    config = zoo_configs.rlgraph_config(pair, backend=backend, seed=1)
    for key in ("environment_spec", "training_spec", "about"):
        config.pop(key)
    env = gym.make(pair.env_id)
    try:
        agent = Agent.from_spec(config, state_space=space_from_gym(env.observation_space),
                                action_space=space_from_gym(env.action_space))
    finally:
        env.close()
    return agent, zoo_configs.make_sb3_model(pair, seed=1)
