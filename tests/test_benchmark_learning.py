"""The learning-quality seed study (`rlgraph benchmark learning`): a --quick run per backend, the
summary statistics on hand-made runs, merging, seeds parsing, variants and the evaluation loop."""
import json
import math

import gymnasium as gym
import numpy as np
import pytest
from sb3_peer_helpers import needs_sb3

from rlgraph.benchmarks import learning, rl_statistics
from rlgraph.utils.rlgraph_errors import RLGraphError


@needs_sb3
def test_quick_study_writes_runs_summary_and_plot(backend, tmp_path):
    out = tmp_path / "learning.json"
    result = learning.main(["--quick", "--backends", backend, "--jobs", "2", "--out", str(out)])
    # --quick: seeds 1 and 2, 600 steps, an evaluation of 2 episodes every 300 steps.
    assert sorted((r["library"], r["seed"]) for r in result["runs"]) == [
        (f"rlgraph-{backend}", 1), (f"rlgraph-{backend}", 2), ("sb3", 1), ("sb3", 2)]
    for run in result["runs"]:
        steps = [step for step, _ in run["curve"]]
        assert steps[0] == 300 and steps[-1] >= 600 and len(steps) == 2
        assert run["final_return"] == run["curve"][-1][1] >= 1.0  # Every CartPole episode earns >= 1.
        assert run["env_steps"] >= 600 and run["train_s"] > 0
    written = json.loads(out.read_text())
    assert set(written["summary"]) == {f"rlgraph-{backend}/baseline", "sb3"}
    mine = written["summary"][f"rlgraph-{backend}/baseline"]
    low, high = mine["final_return"]["ci"]
    assert low <= mine["final_return"]["iqm"] <= high
    p = mine["auc"]["p_improvement_vs_sb3"]
    assert 0.0 <= p["ci"][0] <= p["p"] <= p["ci"][1] <= 1.0
    assert (tmp_path / "learning.png").stat().st_size > 1000
    assert len((tmp_path / "learning.runs.jsonl").read_text().splitlines()) == 4


@pytest.mark.parametrize("algo", ["ppo", "sac"])
def test_quick_study_of_ppo_and_sac(algo, tmp_path):
    # (One process runs both seeds: the parallel path is the test above's; each spawned process costs
    # its imports, about 7 s of CPU.)
    result = learning.main(["--quick", "--algo", algo, "--peer", "none", "--jobs", "1",
                            "--out", str(tmp_path / "study.json")])
    assert set(result["summary"]) == {"rlgraph-pytorch/baseline"}
    for run in result["runs"]:
        # PPO's 8 envs step together: 300 steps round up to 304.
        assert [step for step, _ in run["curve"]] == [304 if algo == "ppo" else 300, 600]
        assert run["env_steps"] == 600
        # CartPole earns >= 1 per episode; Pendulum's 200 steps cost at most 16.27 each.
        assert run["final_return"] >= 1.0 if algo == "ppo" else -3300.0 <= run["final_return"] <= 0.0


def _run(library, seed, final, auc, steps_to=None, variant="baseline"):
    return {"algo": "dqn", "library": library, "variant": "-" if library == "sb3" else variant, "seed": seed,
            "steps": 1000, "eval_interval": 500, "eval_episodes": 2, "final_return": final, "auc": auc,
            "steps_to_threshold": steps_to, "env_steps": 1000, "train_s": 2.0,
            "curve": [[500, auc], [1000, final]]}


def test_summary_statistics_of_hand_made_runs():
    finals = [100.0, 200.0, 300.0, 400.0, 500.0, 500.0, 500.0, 500.0]
    runs = [_run("rlgraph-pytorch", s, f, f / 2, 1000 if f >= 475 else None) for s, f in enumerate(finals)]
    runs += [_run("sb3", s, 50.0, 10.0) for s in range(8)]
    summary = learning.summarize(runs, threshold=475.0, reps=500)
    mine = summary["rlgraph-pytorch/baseline"]
    # IQM of 8 runs: the mean of the middle 4 sorted values (300, 400, 500, 500).
    assert mine["final_return"]["iqm"] == pytest.approx(425.0)
    assert mine["final_return"]["mean"] == pytest.approx(np.mean(finals))
    assert mine["reached_threshold"] == 0.5 and mine["median_steps_to_threshold"] == 1000.0
    assert mine["train_steps_per_s"] == pytest.approx(500.0)
    # Every rlgraph run beats every SB3 run: P(X > Y) = 1 with a zero-width interval.
    assert mine["final_return"]["p_improvement_vs_sb3"] == {"p": 1.0, "ci": [1.0, 1.0]}
    assert summary["sb3"]["final_return"]["iqm"] == 50.0 and summary["sb3"]["final_return"]["ci"] == [50.0, 50.0]


def test_merge_combines_files_and_refuses_different_settings(tmp_path):
    first = [_run("rlgraph-pytorch", s, 400.0 + s, 200.0) for s in (1, 2)] + [_run("sb3", 1, 300.0, 100.0)]
    second = [_run("rlgraph-tf", s, 450.0, 250.0) for s in (1, 2)] + [_run("sb3", 2, 350.0, 120.0)]
    (tmp_path / "a.json").write_text(json.dumps({"runs": first}))
    (tmp_path / "b.runs.jsonl").write_text("\n".join(json.dumps(r) for r in second) + "\n")
    result = learning.main(["--merge", str(tmp_path / "a.json"), str(tmp_path / "b.runs.jsonl"),
                            "--out", str(tmp_path / "merged.json")])
    assert set(result["summary"]) == {"rlgraph-pytorch/baseline", "rlgraph-tf/baseline", "sb3"}
    assert result["summary"]["sb3"]["runs"] == 2
    assert result["summary"]["rlgraph-tf/baseline"]["final_return"]["p_improvement_vs_sb3"]["p"] == 1.0
    other = dict(_run("sb3", 3, 1.0, 1.0), steps=2000)
    (tmp_path / "c.json").write_text(json.dumps({"runs": [other]}))
    with pytest.raises(RLGraphError, match="run settings"):
        learning.main(["--merge", str(tmp_path / "a.json"), str(tmp_path / "c.json"), "--out", ""])


def test_parse_seeds_ranges_and_errors():
    assert learning.parse_seeds(["1..3", "7"]) == [1, 2, 3, 7]
    for bad in (["x"], ["5..2"], ["1", "1"], ["-1"]):
        with pytest.raises(RLGraphError, match="--seeds"):
            learning.parse_seeds(bad)


def test_unknown_variant_is_refused(tmp_path):
    with pytest.raises(RLGraphError, match="unknown variant") as info:
        learning.main(["--variants", "bogus", "--peer", "none", "--out", str(tmp_path / "x.json")])
    assert "glorot-init" in str(info.value)


def _job(variant, backend="pytorch"):
    from rlgraph.benchmarks import dqn_vs_sb3
    return {"algo": "dqn", "library": f"rlgraph-{backend}", "variant": variant, "seed": 3, "steps": 1000,
            "eval_interval": 500, "eval_episodes": 2, "hyperparameters": dict(dqn_vs_sb3.HYPERPARAMETERS),
            "overrides": ["update_spec.batch_size=32"]}


def test_every_dqn_variant_builds_and_changes_one_factor(backend):
    from rlgraph.execution.training import make_agent_and_env, resolve_config
    baseline = learning.rlgraph_study_config(_job("baseline", backend))
    assert baseline["update_spec"]["batch_size"] == 32  # --set reaches every rlgraph run.
    for variant in learning.VARIANTS["dqn"]:
        config = learning.rlgraph_study_config(_job(variant, backend))
        changed = sorted(key for key in set(config) | set(baseline) if config.get(key) != baseline.get(key))
        assert len(changed) <= 2, (variant, changed)  # One factor (init touches network + adapter).
        assert (variant == "baseline") == (not changed)
    for variant, check in (("baseline", _fan_in_uniform), ("glorot-init", _glorot)):
        agent, _ = make_agent_and_env(resolve_config(learning.rlgraph_study_config(_job(variant, backend))))
        try:
            weights = {name: value for name, value in agent.get_weights().items() if "target" not in name}
            kernels = {name: value for name, value in weights.items() if name.endswith("kernel")}
            assert sorted(value.shape for value in kernels.values()) == [(4, 256), (256, 2), (256, 256)]
            for name, kernel in kernels.items():
                check(kernel, weights[name[:-len("kernel")] + "bias"])
        finally:
            agent.terminate()


def _fan_in_uniform(kernel, bias):
    """torch.nn.Linear's draw: weights and bias uniform in +-1/sqrt(fan_in), the kernel's fan-in."""
    bound = 1.0 / math.sqrt(kernel.shape[0])
    for value in (kernel, bias):
        assert np.all(np.abs(value) <= bound) and np.any(value != 0.0)
        assert value.size < 100 or np.abs(value).max() > 0.9 * bound  # Spans the range.


def _glorot(kernel, bias):
    bound = math.sqrt(6.0 / sum(kernel.shape))
    assert np.all(np.abs(kernel) <= bound) and np.abs(kernel).max() > 0.9 * bound
    assert np.all(bias == 0.0)


def test_greedy_returns_steps_envs_side_by_side_with_the_documented_seeds():
    envs = [gym.make("CartPole-v1") for _ in range(3)]
    returns = learning.greedy_returns(envs, lambda states: np.zeros(len(states), dtype=np.int64), int, seed=4)
    expected = []
    for i in range(3):
        env = gym.make("CartPole-v1")
        env.reset(seed=learning.EVAL_SEED_BASE + 1000 * 4 + i)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, _ = env.step(0)
            total += reward
            done = terminated or truncated
        expected.append(total)
    assert returns == expected


def test_area_under_curve_is_in_return_units():
    # A trapezoid over [0, 10]: mean of (0 + 10) / 2 on the first half and 10 on the second.
    assert rl_statistics.area_under_curve([0, 5, 10], [0.0, 10.0, 10.0]) == pytest.approx(7.5)
