"""Smoke tests of the `apex` benchmark: a --quick run in inline mode per backend (no Ray), checked
for structure and consistency; no speed is asserted."""
import json

import numpy as np
import pytest

from rlgraph.backend_system import is_backend_installed
from rlgraph.benchmarks import BENCHMARKS, apex, run_benchmark
from rlgraph.environments import Environment


def _quick_inline(backend, out, *options):
    return run_benchmark("apex", ["--quick", "--mode", "inline", "--backend", backend, "--timesteps", "50",
                                  "--overhead-timesteps", "100", "--out", str(out), *options])


def _check_runs(runs, names, workers, envs, timed_steps):
    assert list(runs) == names
    assert [runs[name]["workers"] for name in runs] == workers
    assert [runs[name]["env"] for name in runs] == envs
    assert [runs[name]["timed_steps"] for name in runs] == timed_steps
    for name, run in runs.items():
        assert len(run["rounds"]) == 1, name
        measured = run["rounds"][0]
        assert measured["timesteps"] >= run["timed_steps"], name  # A workload ends on whole sample tasks.
        assert measured["frames_per_s"] == pytest.approx(measured["timesteps"] / measured["seconds"], rel=1e-6)
        assert run["frames_per_s"] == measured["frames_per_s"]  # The median of one round.


def test_quick_inline_run_reports_four_runs_and_two_ratios(backend, tmp_path, capsys):
    out = tmp_path / "apex.json"
    result = _quick_inline(backend, out)
    assert (result["mode"], result["workers"], result["rounds"], result["ray_cpus"]) == ("inline", 2, 1, None)
    r = result["backends"][backend]
    runs = r["runs"]
    _check_runs(runs, ["scaling-1", "scaling-2", "overhead-executor", "overhead-local"], [1, 2, 1, 0],
                ["SleepyCartPole"] * 2 + ["CartPole-v1"] * 2, [50, 100, 100, 100])
    # The learner learns in the scaling runs and idles in the overhead run.
    assert runs["scaling-1"]["rounds"][0]["learner_updates"] > 0
    assert runs["overhead-executor"]["rounds"][0]["learner_updates"] == 0
    assert "updates_per_s" not in runs["overhead-local"]

    ratios = r["ratios"]
    assert set(ratios) == {"scaling", "overhead"}
    assert ratios["scaling"]["value"] == pytest.approx(runs["scaling-2"]["frames_per_s"] /
                                                       runs["scaling-1"]["frames_per_s"])
    assert ratios["overhead"]["value"] == pytest.approx(runs["overhead-executor"]["frames_per_s"] /
                                                        runs["overhead-local"]["frames_per_s"])
    assert (ratios["scaling"]["target"], ratios["overhead"]["target"]) == (1.5, 0.8)  # 0.75 per worker
    for entry in ratios.values():
        assert entry["meets_target"] == (entry["value"] >= entry["target"])
    assert r["agent_config"]["backend"] == backend
    assert result["config"] == apex.CONFIG_FILE

    printed = capsys.readouterr().out
    assert f"Ape-X, {backend}, mode inline" in printed
    assert "2 workers / 1 worker (SleepyCartPole)" in printed and "executor / SingleThreadedWorker" in printed
    saved = json.loads(out.read_text())
    assert saved["backends"][backend]["ratios"] == ratios and "python" in saved["environment"]


def test_learner_idle_adds_the_scaling_runs_without_learning(tmp_path):
    backend = "pytorch" if is_backend_installed("pytorch") else "tf"
    r = _quick_inline(backend, tmp_path / "apex.json", "--learner-idle")["backends"][backend]
    runs = r["runs"]
    _check_runs(runs, ["scaling-1", "scaling-2", "idle-scaling-1", "idle-scaling-2", "overhead-executor",
                       "overhead-local"], [1, 2, 1, 2, 1, 0], ["SleepyCartPole"] * 4 + ["CartPole-v1"] * 2,
                [50, 100, 50, 100, 100, 100])
    for name in ("idle-scaling-1", "idle-scaling-2", "overhead-executor"):
        assert runs[name]["rounds"][0]["learner_updates"] == 0, name
    assert r["ratios"]["scaling_learner_idle"] == {"value": pytest.approx(runs["idle-scaling-2"]["frames_per_s"] /
                                                                          runs["idle-scaling-1"]["frames_per_s"])}


def test_sleepy_cartpole_sleeps_before_each_cartpole_step(monkeypatch):
    slept = []
    monkeypatch.setattr(apex.time, "sleep", slept.append)
    sleepy = Environment.from_spec(apex.sleepy_env_spec(0.002))
    plain = Environment.from_spec(apex.PLAIN_ENV)
    assert isinstance(sleepy, apex.SleepyCartPole) and sleepy.state_space == plain.state_space
    sleepy.seed(3)
    plain.seed(3)
    np.testing.assert_array_equal(sleepy.reset(), plain.reset())
    for action in (0, 1, 1):
        ours, theirs = sleepy.step(action), plain.step(action)
        np.testing.assert_array_equal(ours[0], theirs[0])
        assert ours[1:3] == theirs[1:3]
    assert slept == [0.002] * 3


def test_builtin_spec_equals_the_shipped_config():
    with open(apex.CONFIG_FILE) as handle:
        shipped = json.load(handle)
    spec, source = apex.load_apex_spec()
    assert source == apex.CONFIG_FILE
    assert spec == apex.APEX_CARTPOLE_SPEC == {k: v for k, v in shipped.items()
                                               if k not in ("environment_spec", "training_spec")}


def test_benchmark_config_changes_only_workers_envs_cpus_learner_start_seed_and_threads():
    spec = apex.APEX_CARTPOLE_SPEC
    config = apex.apex_config(spec, "tf", "ray", 4, 2, 300)
    ray_spec = config["execution_spec"].pop("ray_spec")
    assert config["execution_spec"] == {"seed": 1, "torch_num_threads": 1, "tf_num_threads": 1}
    shipped = spec["execution_spec"]["ray_spec"]
    assert ray_spec["executor_spec"] == dict(shipped["executor_spec"], mode="ray", num_sample_workers=4,
                                             num_cpus_per_worker=0.25, num_cpus_per_replay_actor=0.25)
    assert ray_spec["worker_spec"] == {"num_worker_environments": 2}
    assert ray_spec["apex_replay_spec"] == dict(shipped["apex_replay_spec"], min_sample_memory_size=300)
    assert {k: v for k, v in config.items() if k not in ("backend", "execution_spec")} == \
        {k: v for k, v in spec.items() if k != "execution_spec"}
    assert config["backend"] == "tf" and "backend" not in spec  # (The spec is not changed.)


def test_local_config_is_the_executor_agent_without_ray_or_updates():
    config = apex.apex_config(apex.APEX_CARTPOLE_SPEC, "pytorch", "ray", 1, 1, apex.LEARNER_IDLE)
    local = apex.local_agent_config(config)
    assert "ray_spec" not in local["execution_spec"] and "ray_spec" in config["execution_spec"]
    assert local["update_spec"] == dict(config["update_spec"], do_updates=False)
    assert local["memory_spec"] == {"type": "mem-prioritized-replay", "capacity": 50000, "alpha": 0.6, "beta": 0.4,
                                    "epsilon": 1e-6, "frame_stack": None, "store_frames_once": "auto"}
    same = {key for key in config if key not in ("memory_spec", "update_spec", "execution_spec")}
    assert {key: local[key] for key in same} == {key: config[key] for key in same}


def test_registered_with_its_options():
    assert BENCHMARKS["apex"][0] == "rlgraph.benchmarks.apex"
    with pytest.raises(SystemExit):
        apex.main(["--backend", "jax"])
