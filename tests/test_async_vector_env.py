"""`AsyncVectorEnv`: the contract of `SequentialVectorEnv` (same trajectories for the same seed and
actions, per-env resets, the same errors) with each environment in a subprocess, and
`training_spec.vectorization`."""
import gc
import json
import multiprocessing
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rlgraph.backend_system import is_backend_installed
from rlgraph.environments import AsyncVectorEnv, Environment, SequentialVectorEnv
from rlgraph.environments.async_vector_env import ChildTraceback
from rlgraph.environments.env_utils import ENV_MODULE_IMPORT_VARIABLE
from rlgraph.execution.training import resolve_config, train, training_envs
from rlgraph.utils.rlgraph_errors import RLGraphEnvError, RLGraphError, RLGraphSpecError

REPO = Path(__file__).resolve().parents[1]
CARTPOLE = {"type": "openai-gym", "gym_env": "CartPole-v1"}
# tests/envs_for_tests.py: the copy seeded `fail_seed` fails at its `fail_at`-th step (subprocesses
# import the module through the gym id, as the test process does: tests using it take the fixture
# `env_module_ids`, the opt-in to such ids).
FAILING = {"type": "openai-gym", "gym_env": "envs_for_tests:RLGraphTest/Failing-v0", "fail_seed": 11, "fail_at": 3}
BACKEND = "pytorch" if is_backend_installed("pytorch") else "tf"


@pytest.fixture
def env_module_ids(monkeypatch):
    """Env ids may import their module part ("module:EnvId"), here and in the subprocesses, as in
    `allow_env_module_import()` and `rlgraph train --allow-env-module-import`."""
    monkeypatch.setenv(ENV_MODULE_IMPORT_VARIABLE, "1")


def _run_both(env_spec, num_envs, steps, seed):
    """Steps a SequentialVectorEnv and an AsyncVectorEnv with the same random actions, resetting
    finished envs; returns ([results of the sequential one], [of the async one], episode ends)."""
    runs, ends = [], 0
    for cls in (SequentialVectorEnv, AsyncVectorEnv):
        envs = cls(num_envs, env_spec, seed=seed)
        rng = np.random.default_rng(0)
        results = [envs.reset_all()]
        for _ in range(steps):
            out = envs.step(rng.integers(0, envs.action_space.num_categories, size=num_envs))
            results.append(out)
            for i in np.flatnonzero(out[2]):
                results.append((i, envs.reset(i)))
                ends += cls is AsyncVectorEnv
        results.append([envs.render(i) for i in range(num_envs)])
        envs.terminate()
        runs.append(results)
    return runs[0], runs[1], ends


def _assert_same(expected, actual):
    assert len(expected) == len(actual)
    for a, b in zip(expected, actual):
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype
            np.testing.assert_array_equal(a, b)
        elif isinstance(a, (tuple, list)):
            _assert_same(a, b)
        else:
            assert a == b


def test_cartpole_trajectories_equal_the_sequential_ones_across_resets():
    sequential, asynchronous, ends = _run_both(CARTPOLE, num_envs=3, steps=200, seed=7)
    assert ends >= 10  # Random actions end CartPole episodes after ~20 steps: many resets.
    _assert_same(sequential, asynchronous)


def test_grid_world_trajectories_renders_and_handles():
    spec = {"type": "grid-world", "world": "4x4", "max_episode_steps": 10}
    sequential, asynchronous, ends = _run_both(spec, num_envs=3, steps=200, seed=2)
    assert ends >= 20
    _assert_same(sequential, asynchronous)
    assert isinstance(asynchronous[-1][0], str)  # GridWorld renders text.
    # get_env(i) is a handle whose calls run in env i's subprocess; a "seed" in the spec is the base seed.
    envs = Environment.from_spec({"type": "async-vector-env", "num_environments": 2, "env_spec": dict(spec, seed=4)})
    assert isinstance(envs, AsyncVectorEnv) and str(envs) == "AsyncVectorEnv(2 x GridWorld(4x4, state='discr'))"
    handle = envs.get_env(1)
    assert str(handle) == "GridWorld(4x4, state='discr')" and handle.action_space == envs.action_space
    assert handle.reset() == 0 and handle.step(1)[:3] == (1, 0.0, False)
    assert envs.step([2, 2])[0].tolist() == [4, 5]  # Env 1 went on from state 1.
    assert handle.seed(5) == 5
    envs.terminate()


def test_an_env_exception_comes_back_as_the_sequential_error(env_module_ids):
    errors = {}
    for cls in (SequentialVectorEnv, AsyncVectorEnv):
        envs = cls(3, FAILING, seed=10)  # Env 1 gets seed 11: its 3rd step raises.
        envs.reset_all()
        envs.step(np.array([1, 0, 1]))
        envs.step(np.array([1, 0, 1]))
        with pytest.raises(RLGraphEnvError) as info:
            envs.step(np.array([1, 0, 1]))
        errors[cls] = info.value
        if cls is AsyncVectorEnv:
            # All replies were read: the pipes stay in step and the envs go on (env 1's 4th step).
            assert envs.step(np.array([0, 0, 0]))[0][:, 0].tolist() == [4.0, 4.0, 4.0]
            # Through env 1's handle the exception comes as the env raised it (as get_env(1).step in turn).
            handle = envs.get_env(1)
            handle.reset()
            handle.step(0), handle.step(0)
            with pytest.raises(ValueError, match="step 3 of the copy seeded 11 failed") as raw:
                handle.step(0)
            assert isinstance(raw.value.__cause__, ChildTraceback)
        envs.terminate()
    sequential, asynchronous = errors[SequentialVectorEnv], errors[AsyncVectorEnv]
    assert str(asynchronous) == str(sequential)
    assert asynchronous.env_index == sequential.env_index == 1
    assert "OpenAIGymEnv(envs_for_tests:RLGraphTest/Failing-v0).step(action)" in str(asynchronous)
    assert "raised ValueError: step 3 of the copy seeded 11 failed" in str(asynchronous)
    cause = asynchronous.__cause__
    assert type(cause) is ValueError and str(cause) == "step 3 of the copy seeded 11 failed"
    # The subprocess's traceback text is chained to the env's exception.
    assert isinstance(cause.__cause__, ChildTraceback)
    assert "envs_for_tests.py" in str(cause.__cause__) and "in _fail" in str(cause.__cause__)


def test_a_worker_names_a_failing_async_env_as_a_sequential_one(env_module_ids):
    from rlgraph.agents import Agent
    from rlgraph.execution import SingleThreadedWorker
    errors = []
    for envs in (SequentialVectorEnv(3, FAILING, seed=10), AsyncVectorEnv(3, FAILING, seed=10)):
        agent = Agent.from_spec({"type": "random"}, state_space=envs.state_space, action_space=envs.action_space,
                                backend=BACKEND)
        worker = SingleThreadedWorker(agent, envs)
        with pytest.raises(RLGraphEnvError) as info:
            worker.execute_timesteps(30)
        errors.append(info.value)
        assert worker.interrupted_stats["timesteps_executed"] == 6
        worker.terminate()
        agent.terminate()
    assert str(errors[1]) == str(errors[0])
    assert (errors[1].env_index, errors[1].step) == (1, 8)  # Env 1's 3rd step: the worker's 2 * 3 + 2nd.
    assert "env 1 of 3 in step 3 of its episode" in str(errors[1])


def test_a_dead_subprocess_gives_an_env_error(env_module_ids):
    envs = AsyncVectorEnv(3, dict(FAILING, how="exit"), seed=10)
    envs.reset_all()
    envs.step([0, 0, 0])
    envs.step([0, 0, 0])
    with pytest.raises(RLGraphEnvError, match=r"subprocess died. Received exit code 3 of process") as info:
        envs.step([0, 0, 0])
    assert info.value.env_index == 1 and isinstance(info.value.__cause__, ChildProcessError)
    assert "Failing-v0).step: the environment's subprocess died" in str(info.value)
    with pytest.raises(RLGraphEnvError, match=r"subprocess is gone. Received the subprocess of env 1 died"):
        envs.reset(0)
    envs.terminate()
    assert [p.exitcode for p in envs.processes] == [0, 3, 0]


def test_a_killed_subprocess_gives_an_env_error():
    envs = AsyncVectorEnv(2, {"type": "grid-world", "world": "2x2"}, seed=0)
    envs.reset_all()
    envs.processes[1].kill()
    envs.processes[1].join()
    with pytest.raises(RLGraphEnvError, match=r"subprocess died. Received exit code -9 of process") as info:
        envs.step([0, 0])
    assert info.value.env_index == 1 and isinstance(info.value.__cause__, ChildProcessError)
    envs.terminate()
    assert [p.exitcode for p in envs.processes] == [0, -9]


def test_terminate_leaves_no_subprocess():
    envs = AsyncVectorEnv(3, CARTPOLE, seed=0)
    processes = envs.processes
    assert all(p.is_alive() for p in processes) and len({p.pid for p in processes}) == 3
    envs.terminate()
    envs.terminate()  # Idempotent.
    assert [p.exitcode for p in processes] == [0, 0, 0]  # Closed (not killed) and reaped.
    assert not set(multiprocessing.active_children()) & set(processes)
    with pytest.raises(RLGraphError, match=r"AsyncVectorEnv.step: the environments are terminated"):
        envs.step([0, 0, 0])
    # An AsyncVectorEnv that nobody terminates closes its subprocesses when it is collected.
    envs = AsyncVectorEnv(2, CARTPOLE, seed=0)
    processes = envs.processes
    del envs
    gc.collect()
    assert [p.exitcode for p in processes] == [0, 0]


def test_the_subprocesses_close_at_interpreter_exit(tmp_path, env_module_ids):
    # Each env's gym close() writes a file: an env closed by the exit handler (not killed) leaves one.
    script = ("import sys; sys.path.insert(0, sys.argv[1])\n"
              "from rlgraph.environments import AsyncVectorEnv\n"
              "if __name__ == '__main__':\n"
              "    envs = AsyncVectorEnv(2, {'type': 'gym', 'gym_env': 'envs_for_tests:RLGraphTest/Failing-v0',\n"
              "                              'close_marker': sys.argv[2]}, seed=0)\n"
              "    envs.reset_all()\n"
              "    print(envs.step([0, 1])[1].tolist())\n")
    result = subprocess.run([sys.executable, "-c", script, str(REPO / "tests"), str(tmp_path / "closed")],
                            capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[0.0, 1.0]"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["closed-0", "closed-1"]


def test_specs_that_cannot_go_to_a_subprocess_are_refused():
    with pytest.raises(RLGraphError, match=r"AsyncVectorEnv\(env_spec\): the env spec must be plain data") as info:
        AsyncVectorEnv(2, {"type": "grid-world", "world": object()})
    assert "object at env_spec.world" in str(info.value) and "SequentialVectorEnv" in str(info.value)
    with pytest.raises(RLGraphError, match=r"function at env_spec"):
        AsyncVectorEnv(2, lambda: None)
    with pytest.raises(RLGraphError, match=r"AsyncVectorEnv\(start_method\): unknown start method"):
        AsyncVectorEnv(2, CARTPOLE, start_method="fork")
    with pytest.raises(RLGraphError, match=r"AsyncVectorEnv\(num_environments\): invalid number"):
        AsyncVectorEnv(0, CARTPOLE)
    # What building the env raises in a subprocess comes back as itself; no subprocess is left.
    with pytest.raises(RLGraphSpecError, match="no-such-env") as info:
        AsyncVectorEnv(2, {"type": "no-such-env"})
    assert isinstance(info.value.__cause__, ChildTraceback)
    assert not [p for p in multiprocessing.active_children() if p.name.startswith("rlgraph-env-")]


def test_forkserver_gives_the_same_steps():
    spec = {"type": "grid-world", "world": "4x4"}
    steps = []
    for start_method in ("spawn", "forkserver"):
        envs = AsyncVectorEnv(2, spec, seed=1, start_method=start_method)
        envs.reset_all()
        steps.append([envs.step([1, 2])[0].tolist(), envs.step([2, 1])[0].tolist()])
        envs.terminate()
    assert steps[0] == steps[1] == [[1, 4], [5, 5]]


# --- training_spec.vectorization ------------------------------------------------------------------------
def _tiny_config(vectorization):
    config = json.loads((REPO / "configs" / "dqn_gridworld_4x4.json").read_text())
    config["training_spec"].update(num_timesteps=300, evaluation_interval=0, log_interval=100, stop_at_return=None,
                                   num_environments=3, vectorization=vectorization)
    config["environment_spec"]["max_episode_steps"] = 30
    config["update_spec"]["steps_before_update"] = 30
    return config


def test_train_with_async_envs_gives_the_episodes_of_sync_envs(tmp_path):
    # The DQN agent is deterministic given its seed and the envs give the same states: the same run.
    rows = {}
    for vectorization in ("sync", "async"):
        out = tmp_path / vectorization
        summary = train(_tiny_config(vectorization), backend=BACKEND, seed=4, progress=False, output_dir=str(out))
        assert summary["timesteps"] == 300 and summary["num_updates"] > 100
        rows[vectorization] = (out / "episodes.csv").read_text().splitlines()
    assert len(rows["sync"]) > 5 and rows["async"] == rows["sync"]


def test_training_envs_by_vectorization():
    spec = {"type": "grid-world", "world": "2x2"}
    base = resolve_config(_tiny_config("sync"))["training_spec"]
    assert training_envs(spec, base, 0) is spec
    assert training_envs(spec, dict(base, vectorization="async", num_environments=1), 0) is spec
    envs = training_envs(spec, dict(base, vectorization="async"), 0)
    assert isinstance(envs, AsyncVectorEnv) and envs.num_environments == 3
    envs.terminate()


def test_bad_vectorization_values_are_refused():
    with pytest.raises(RLGraphSpecError, match=r"train\(training_spec.vectorization\): training_spec.vectorization "
                                               r"must be one of \['sync', 'async', 'envpool'\]") as info:
        resolve_config(_tiny_config("asnyc"))
    assert "received 'asnyc'" in str(info.value) and "did you mean 'async'?" in str(info.value)
    with pytest.raises(RLGraphSpecError, match=r"must be one of"):
        resolve_config(_tiny_config(True))
    # A distributed run's workers step their own envs.
    with pytest.raises(RLGraphSpecError, match=r"train\(training_spec.vectorization\): vectorization 'async' is for "
                                               r"runs in one worker"):
        train(str(REPO / "configs" / "apex_cartpole.json"), overrides=["training_spec.vectorization=async"],
              progress=False)
