"""`rlgraph benchmark zoo`: a --quick run of both libraries (its log, its summary against
rl_statistics, the docs section and plots, resuming and merging it), resuming from a hand-made
log, pair selection, the TF subset and the markdown writer."""
import argparse
import json

import numpy as np
import pytest
from sb3_peer_helpers import needs_sb3

from rlgraph.backend_system import is_backend_installed
from rlgraph.benchmarks import rl_statistics as stats
from rlgraph.benchmarks import zoo, zoo_report
from rlgraph.benchmarks.learning import BOOTSTRAP_REPS
from rlgraph.utils.rlgraph_errors import RLGraphError


BACKENDS = [backend for backend in ("pytorch", "tf") if is_backend_installed(backend)][:1]  # (One is enough here.)
LIBRARIES = [f"rlgraph-{backend}" for backend in BACKENDS] + ["sb3"]


@pytest.fixture(scope="module")
def quick_study(tmp_path_factory):
    """A --quick study: dqn/CartPole-v1 and sac/Pendulum-v1, rlgraph (PyTorch) and SB3, seeds 1 and 2,
    in one process (the zoo's configs on TF: test_zoo_configs.py; the run loop on TF:
    test_benchmark_learning.py)."""
    pytest.importorskip("stable_baselines3", reason="needs stable-baselines3 (the '.[bench]' or '.[test]' extras)")
    folder = tmp_path_factory.mktemp("zoo")
    (folder / "docs").mkdir()
    (folder / "docs" / "performance.md").write_text(f"# Performance\n\nbefore\n\n{zoo_report.START}\nold\n"
                                                    f"{zoo_report.END}\n\nafter\n")
    out = folder / "zoo.json"
    result = zoo.main(["--quick", "--backends", *BACKENDS, "--jobs", "1", "--out", str(out),
                       "--write-docs", str(folder / "docs")])
    return folder, out, result


def test_quick_study_logs_every_run_and_its_table_is_rl_statistics_of_the_runs(quick_study):
    folder, out, result = quick_study
    assert sorted((r["pair"], r["library"], r["seed"]) for r in result["runs"]) == [
        (pair, library, seed) for pair in ("dqn/CartPole-v1", "sac/Pendulum-v1")
        for library in sorted(LIBRARIES) for seed in (1, 2)]
    logged = [json.loads(line) for line in (folder / "zoo.runs.jsonl").read_text().splitlines()]
    assert sorted(map(zoo.run_key, logged)) == sorted(map(zoo.run_key, result["runs"]))
    for run in result["runs"]:
        # --quick: 2 evaluations of 2 episodes over 1,000 (DQN) or 300 (SAC) steps.
        assert [step for step, _ in run["curve"]] == {"dqn/CartPole-v1": [500, 1000], "sac/Pendulum-v1": [150, 300]}[
            run["pair"]]
        assert run["final_return"] == run["curve"][-1][1] and run["train_s"] > 0
    written = json.loads(out.read_text())
    assert written["summary"] == result["summary"] and written["failed"] == []
    rows = {(row[0], row[4]): row for row in zoo_report.table_rows(result["summary"])}
    assert len(rows) == 2 * len(BACKENDS)  # One row per (pair, rlgraph backend).
    for pair, zoo_score in (("dqn/CartPole-v1", "500.0 ± 0.0"), ("sac/Pendulum-v1", "-157.0 ± 88.7")):
        finals = {library: [r["final_return"] for r in sorted(result["runs"], key=lambda r: r["seed"])
                            if r["pair"] == pair and r["library"] == library] for library in LIBRARIES}
        entry = result["summary"][pair]["libraries"]
        for library in LIBRARIES:
            iqm, low, high = stats.stratified_bootstrap_ci(finals[library], stats.iqm, reps=BOOTSTRAP_REPS, seed=0)
            assert entry[library]["final_return"]["iqm"] == iqm and entry[library]["final_return"]["ci"] == [low, high]
            if library == "sb3":
                continue
            p, p_low, p_high = stats.probability_of_improvement_ci(finals[library], finals["sb3"],
                                                                   reps=BOOTSTRAP_REPS, seed=0)
            assert entry[library]["final_return"]["p_improvement_vs_sb3"] == {"p": p, "ci": [p_low, p_high]}
            sb3 = entry["sb3"]["final_return"]
            assert rows[(pair, library)] == [
                pair, {"dqn/CartPole-v1": "1,000", "sac/Pendulum-v1": "300"}[pair], zoo_score,
                f"{sb3['iqm']:.1f} [{sb3['ci'][0]:.1f}, {sb3['ci'][1]:.1f}]", library,
                f"{iqm:.1f} [{low:.1f}, {high:.1f}]", f"{p:.2f} [{p_low:.2f}, {p_high:.2f}]",
                f"{entry['sb3']['median_train_s']:.1f}", f"{entry[library]['median_train_s']:.1f}", "2/2"]
    docs = (folder / "docs" / "performance.md").read_text()
    assert docs.startswith("# Performance\n\nbefore\n\n") and docs.endswith(f"{zoo_report.END}\n\nafter\n")
    assert "old" not in docs and "| dqn/CartPole-v1 | 1,000 | 500.0 ± 0.0 |" in docs
    for env in ("cartpole-v1", "pendulum-v1"):
        assert f"](images/zoo-{env}.png)" in docs
        assert (folder / "docs" / "images" / f"zoo-{env}.png").stat().st_size > 1000


def test_quick_study_resumes_from_its_log_and_merges(quick_study, monkeypatch):
    folder, out, result = quick_study

    def no_runs(*args, **kwargs):
        raise AssertionError("a finished run ran again")

    monkeypatch.setattr(zoo, "run_jobs", no_runs)
    again = zoo.main(["--quick", "--backends", *BACKENDS, "--jobs", "1", "--out", str(folder / "zoo.json")])
    assert again["reused"] == 4 * len(LIBRARIES) and again["runs"] == json.loads(json.dumps(result["runs"]))
    assert again["summary"] == result["summary"]
    merged = zoo.main(["--merge", str(folder / "zoo.runs.jsonl"), str(out), "--out", ""])
    assert merged["summary"] == result["summary"]


def _fake_run(job):
    return dict(job, curve=[[job["steps"], 1.0]], final_return=float(job["seed"]), auc=1.0, steps_to_threshold=None,
                env_steps=job["steps"], train_s=1.0, eval_s=0.1)


@needs_sb3
def test_resume_runs_only_what_the_log_lacks(tmp_path, monkeypatch):
    argv = ["--pairs", "dqn/CartPole-v1", "--seeds", "1..3", "--steps", "100", "--out", str(tmp_path / "z.json")]
    ran = []

    def fake_run_jobs(jobs, num_jobs, log_path, run, label, failures, initializer):
        with open(log_path, "a") as log:
            for job in jobs:
                ran.append((job["library"], job["seed"]))
                log.write(json.dumps(_fake_run(job)) + "\n")
        return [_fake_run(job) for job in jobs]

    monkeypatch.setattr(zoo, "run_jobs", fake_run_jobs)
    first = zoo.main(["--pairs", "dqn/CartPole-v1", "--seeds", "1", "--steps", "100",
                      "--out", str(tmp_path / "z.json")])
    assert sorted(ran) == [("rlgraph-pytorch", 1), ("sb3", 1)] and first["reused"] == 0
    log = tmp_path / "z.runs.jsonl"
    other_budget = dict(_fake_run(first["runs"][0]), seed=2, steps=200)  # Another budget: not reused.
    with open(log, "a") as handle:
        handle.write(json.dumps(other_budget) + "\n" + '{"benchmark": "zoo", "pair": "dqn/Cart')  # Cut off.
    ran.clear()
    result = zoo.main(argv)
    assert sorted(ran) == [("rlgraph-pytorch", 2), ("rlgraph-pytorch", 3), ("sb3", 2), ("sb3", 3)]
    assert result["reused"] == 2 and len(result["runs"]) == 6
    ran.clear()
    assert zoo.main(argv)["reused"] == 6 and ran == []
    zoo.main(argv + ["--fresh"])
    assert len(ran) == 6


def test_pairs_by_name_algorithm_or_environment_and_an_unknown_name():
    assert [p.name for p in zoo.select_pairs(["dqn/CartPole-v1"])] == ["dqn/CartPole-v1"]
    assert [p.env_id for p in zoo.select_pairs(["dqn"])] == ["CartPole-v1", "Acrobot-v1", "MountainCar-v0",
                                                               "LunarLander-v3"]
    # Table order, each pair once.
    assert [p.name for p in zoo.select_pairs(["sac/Pendulum-v1", "Pendulum-v1", "ppo/Pendulum-v1"])] == [
        "ppo/Pendulum-v1", "a2c/Pendulum-v1", "sac/Pendulum-v1", "td3/Pendulum-v1", "ddpg/Pendulum-v1"]
    assert len(zoo.select_pairs(None)) == len(zoo.select_pairs(["all"])) == 27
    with pytest.raises(RLGraphError, match="--pairs") as info:
        zoo.main(["--pairs", "dqn/CartPole", "--out", ""])
    message = str(info.value)
    assert "dqn/CartPole" in message and "dqn/CartPole-v1" in message and "Pendulum-v1" in message
    assert "did you mean" in message
    with pytest.raises(RLGraphError, match="--tf-pairs"):
        zoo.main(["--tf-pairs", "bogus", "--out", ""])


def test_tf_runs_only_on_its_subset():
    args = argparse.Namespace(seeds=[1, 2], pairs=zoo.select_pairs(["CartPole-v1"]), backends=["pytorch", "tf"],
                              tf_pairs=zoo.select_pairs(list(zoo.TF_PAIRS)), eval_interval=None, evaluations=20,
                              eval_episodes=10, budgets={name: 1000 for name in ("dqn/CartPole-v1", "ppo/CartPole-v1",
                                                                                  "a2c/CartPole-v1")},
                              hyperparameters={name: {} for name in ("dqn/CartPole-v1", "ppo/CartPole-v1",
                                                                     "a2c/CartPole-v1")})
    jobs = zoo.make_jobs(args)
    assert {(j["pair"], j["library"]) for j in jobs if j["library"] == "rlgraph-tf"} == {
        ("dqn/CartPole-v1", "rlgraph-tf"), ("ppo/CartPole-v1", "rlgraph-tf")}
    assert len(jobs) == 2 * (3 + 3 + 2) and {j["eval_interval"] for j in jobs} == {50}
    assert [j["library"] for j in jobs[:6]] == ["rlgraph-pytorch", "rlgraph-tf", "sb3", "sb3", "rlgraph-tf",
                                                "rlgraph-pytorch"]  # The order alternates.


def test_the_markdown_writer_replaces_only_its_section(tmp_path):
    path = tmp_path / "performance.md"
    path.write_text(f"intro\n{zoo_report.START}\nold table\n{zoo_report.END}\noutro\n")
    zoo_report.replace_section(str(path), "new table\n")
    assert path.read_text() == f"intro\n{zoo_report.START}\nnew table\n{zoo_report.END}\noutro\n"
    zoo_report.replace_section(str(path), "newer")
    assert path.read_text() == f"intro\n{zoo_report.START}\nnewer\n{zoo_report.END}\noutro\n"
    other = tmp_path / "other.md"
    other.write_text("# Title\n")
    zoo_report.replace_section(str(other), "table")  # No markers yet: the section goes at the end.
    assert other.read_text() == f"# Title\n\n{zoo_report.START}\ntable\n{zoo_report.END}\n"
    path.write_text(f"{zoo_report.END}\n{zoo_report.START}\n")
    with pytest.raises(RLGraphError, match="markers"):
        zoo_report.replace_section(str(path), "x")


def test_list_prints_every_pair(capsys):
    result = zoo.main(["--list"])
    assert len(result["pairs"]) == 27 and sum(p["tf"] for p in result["pairs"]) == len(zoo.TF_PAIRS)
    printed = capsys.readouterr().out
    assert "dqn/CartPole-v1" in printed and "50,000" in printed and "-76.6 ± 11.8" in printed


def test_a_failed_run_is_reported_and_left_out_of_the_log(tmp_path):
    from rlgraph.benchmarks.learning import run_jobs
    failures, log = [], tmp_path / "z.runs.jsonl"
    bad = {"benchmark": "zoo", "pair": "dqn/NoSuchEnv-v0", "library": "sb3", "seed": 1}
    assert run_jobs([bad], 1, str(log), run=zoo.run_zoo_job, label=zoo._label, failures=failures) == []
    assert failures == [dict(bad, error="KeyError: 'dqn/NoSuchEnv-v0'")]
    assert log.read_text() == ""  # The next invocation runs it again.


def test_an_evaluation_leaves_the_running_state_statistics_as_they_were(backend):
    """a2c/Acrobot-v1 normalizes its states (the zoo's VecNormalize) with running statistics,
    which every get_action updates: the study's evaluations must not."""
    from rlgraph.benchmarks import zoo_configs
    from rlgraph.benchmarks.zoo_table import BY_NAME
    from rlgraph.execution.training import make_agent_and_env, resolve_config
    config = zoo_configs.rlgraph_config(BY_NAME["a2c/Acrobot-v1"], backend=backend, seed=1, steps=1000)
    agent, _ = make_agent_and_env(resolve_config(config))
    try:
        states = np.random.default_rng(0).normal(size=(8, 6)).astype(np.float32)
        agent.get_action(states)  # Training's states: count 8.
        names = [name for name in agent.graph_executor.get_weights() if "/preprocessor-stack/" in name]
        training = agent.get_weights(names)
        assert sorted(name.rsplit("/", 1)[1] for name in names) == ["count", "m2", "mean"]
        count = next(name for name in names if name.endswith("/count"))
        assert training[count] == 8
        with agent.preprocessor_state_kept():
            agent.get_action(states * 3.0 + 1.0, use_exploration=False)
            assert agent.get_weights([count])[count] == 16  # Moved while evaluating...
        after = agent.get_weights(names)
        for name in names:  # ... and back afterwards.
            np.testing.assert_array_equal(after[name], training[name])
    finally:
        agent.terminate()
