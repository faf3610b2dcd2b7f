"""Hostile env ids and hook names (issue 34): what a config file, a checkpoint's config.json or the
command line may make rlgraph import.

- gymnasium imports the module part of "module:EnvId" before it looks the id up, so an env id
  with a ":" is refused wherever it comes from (environment_spec.gym_env, an Atari game, --env,
  train(env=...), the reward_threshold lookup, vector and async envs), unless the command line
  says --allow-env-module-import (then an unknown module is an RLGraphSpecError too).
- A hook named in a config file may come only from a module imported already, from rlgraph, from
  an `rlgraph.hooks` entry point, or from an installed distribution that requires rlgraph; a
  `__main__` module is refused from every source.
- A dotted spec "type" ("package.module.Class", in any spec: a config, a spec file, a checkpoint's
  config.json) follows the same rule, without the entry points (from every source: a spec does
  not say where it came from).

Every "evil" module here writes a marker file when it is imported: the tests check that it never is.
"""
import json
import os
import sys

import pytest

from rlgraph.cli.main import main
from rlgraph.utils.module_imports import TRUSTED_MODULES_VARIABLE
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

pytest.importorskip("gymnasium")

EVIL_SOURCE = '''
import pathlib
pathlib.Path({marker!r}).write_text("imported")
'''

# A module that registers an env, as gymnasium's "module:EnvId" form expects (for the opt-in).
REGISTERING_SOURCE = '''
import pathlib
import gymnasium
pathlib.Path({marker!r}).write_text("imported")
gymnasium.register(id="RlgraphTestRegistered-v0", entry_point="gymnasium.envs.classic_control:CartPoleEnv",
                   max_episode_steps=50)
'''


@pytest.fixture
def evil(tmp_path, monkeypatch):
    """(module name, marker path): a module on sys.path and in the working directory, next to a
    config, that writes the marker when imported."""
    name = f"rlgraph_test_evil_{os.getpid()}"
    marker = tmp_path / "marker.txt"
    (tmp_path / f"{name}.py").write_text(EVIL_SOURCE.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    yield name, marker
    sys.modules.pop(name, None)


def _config(tmp_path, gym_env, **training):
    config = json.loads(open(os.path.join(os.path.dirname(__file__), "..", "configs", "dqn_cartpole.json")).read())
    config["network_spec"] = [{"type": "dense", "units": 8, "activation": "relu"}]
    config["memory_spec"]["capacity"] = 64
    config["update_spec"].update(update_interval=4, steps_before_update=1000, batch_size=8, update_steps=1)
    config["training_spec"].update(num_timesteps=8, evaluation_interval=0, log_interval=8, stop_at_return=None,
                                   max_timesteps_per_episode=20, **training)
    config["execution_spec"]["max_timesteps"] = 8
    config["summary_spec"] = {"summary_interval": 0}
    config["environment_spec"] = {"type": "openai-gym", "gym_env": gym_env}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    return path


def _train(config, out, *extra):
    return main(["train", str(config), "--backend", "pytorch", "--steps", "8", "--no-progress",
                 "--output-dir", str(out), *extra])


# --- Environment ids --------------------------------------------------------------------------------------------
def test_rlgraph_train_refuses_a_module_in_the_config_env_id(evil, tmp_path, capsys):
    name, marker = evil
    assert _train(_config(tmp_path, f"{name}:CartPole-v1"), tmp_path / "run") == 2
    err = capsys.readouterr().err
    assert "environment_spec.gym_env" in err and "--allow-env-module-import" in err
    assert not marker.exists() and name not in sys.modules


def test_rlgraph_train_refuses_a_module_in_env(evil, tmp_path, capsys):
    name, marker = evil
    assert _train(_config(tmp_path, "CartPole-v1"), tmp_path / "run", "--env", f"{name}:CartPole-v1") == 2
    assert "--env" in capsys.readouterr().err
    assert main(["train", "--algo", "dqn", "--env", f"{name}:CartPole-v1", "--output-dir", str(tmp_path / "r")]) == 2
    assert "rlgraph train --algo dqn --env: an environment id may not name a module" in capsys.readouterr().err
    assert not marker.exists() and name not in sys.modules


def test_a_standard_library_module_in_an_env_id_is_refused(monkeypatch, capsys):
    from rlgraph.execution.training import train
    monkeypatch.delitem(sys.modules, "this", raising=False)
    config = json.loads(open(os.path.join(os.path.dirname(__file__), "..", "configs", "dqn_cartpole.json")).read())
    with pytest.raises(RLGraphSpecError, match="may not name a module") as error:
        train(config, env="this:CartPole-v1", num_timesteps=4, progress=False)
    assert "train(env, --env)" in str(error.value)
    assert "this" not in sys.modules and "Beautiful is better" not in capsys.readouterr().out


def test_rlgraph_evaluate_refuses_a_module_in_a_checkpoint_config(evil, tmp_path, capsys):
    import hashlib
    name, marker = evil
    assert _train(_config(tmp_path, "CartPole-v1"), tmp_path / "run") == 0
    checkpoint = tmp_path / "run" / "checkpoints" / "final"
    config = json.loads((checkpoint / "config.json").read_text())
    config["environment_spec"]["gym_env"] = f"{name}:CartPole-v1"
    data = json.dumps(config).encode()
    (checkpoint / "config.json").write_bytes(data)  # The manifest made to match: a checkpoint someone sent.
    manifest = json.loads((checkpoint / "manifest.json").read_text())
    manifest["files"]["config.json"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    (checkpoint / "manifest.json").write_text(json.dumps(manifest))
    capsys.readouterr()
    assert main(["evaluate", str(checkpoint), "--episodes", "1"]) == 2
    assert "environment_spec.gym_env" in capsys.readouterr().err
    assert not marker.exists() and name not in sys.modules


def test_every_adapter_refuses_a_module_in_an_env_id(evil):
    from rlgraph.environments import OpenAIGymEnv, SequentialVectorEnv
    from rlgraph.execution.env_ids import reward_threshold
    name, marker = evil
    with pytest.raises(RLGraphSpecError, match=r"OpenAIGymEnv\(gym_env\)"):
        OpenAIGymEnv(f"{name}:CartPole-v1")
    with pytest.raises(RLGraphSpecError, match="may not name a module"):
        SequentialVectorEnv(2, {"type": "openai-gym", "gym_env": f"{name}:CartPole-v1"})
    with pytest.raises(RLGraphSpecError, match="may not name a module"):
        reward_threshold(f"{name}:CartPole-v1")
    # gymnasium's legacy-gym shims make the id in their `env_id` argument with old gym's make.
    with pytest.raises(RLGraphSpecError, match=r"env_id"):
        OpenAIGymEnv("GymV26Environment-v0", env_id=f"{name}:CartPole-v1")
    assert not marker.exists() and name not in sys.modules


def test_the_atari_game_refuses_a_module(evil):
    pytest.importorskip("ale_py")
    pytest.importorskip("cv2")
    from rlgraph.environments import AtariEnv
    name, marker = evil
    with pytest.raises(RLGraphSpecError, match=r"AtariEnv\(game\)"):
        AtariEnv(f"{name}:Pong-v5")
    assert not marker.exists() and name not in sys.modules


def test_an_async_env_refuses_a_module_in_its_subprocesses(evil):
    from rlgraph.environments.async_vector_env import AsyncVectorEnv
    name, marker = evil
    with pytest.raises(RLGraphSpecError, match="may not name a module"):
        AsyncVectorEnv(1, {"type": "openai-gym", "gym_env": f"{name}:CartPole-v1"})
    assert not marker.exists()


@pytest.mark.parametrize("bad", ["CartPole-v1 ", "../CartPole-v1", "a/b/CartPole-v1", "", "Cart\nPole-v1"])
def test_env_ids_are_ids(bad):
    from rlgraph.environments import OpenAIGymEnv
    with pytest.raises(RLGraphSpecError, match="not an environment id"):
        OpenAIGymEnv(bad)


def test_the_opt_in_imports_the_module(tmp_path, monkeypatch, capsys):
    from rlgraph.environments import OpenAIGymEnv, allow_env_module_import
    name, marker = f"rlgraph_test_registering_{os.getpid()}", tmp_path / "registered.txt"
    (tmp_path / f"{name}.py").write_text(REGISTERING_SOURCE.format(marker=str(marker)))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        with allow_env_module_import():
            with pytest.raises(RLGraphSpecError, match="cannot import the module") as error:
                OpenAIGymEnv("rlgraph_no_such_module_xyz:CartPole-v1")
            assert "OpenAIGymEnv(gym_env)" in str(error.value)
            env = OpenAIGymEnv(f"{name}:RlgraphTestRegistered-v0")
            assert env.state_space.shape == (4,) and marker.exists()
            env.terminate()
        assert os.environ.get("RLGRAPH_ALLOW_ENV_MODULE_IMPORT") is None
        with pytest.raises(RLGraphSpecError, match="may not name a module"):  # Only inside the opt-in.
            OpenAIGymEnv(f"{name}:RlgraphTestRegistered-v0")
        # The command line's opt-in, for a config's id.
        config = _config(tmp_path, f"{name}:RlgraphTestRegistered-v0")
        assert _train(config, tmp_path / "run", "--allow-env-module-import") == 0, capsys.readouterr().err
        assert os.environ.get("RLGRAPH_ALLOW_ENV_MODULE_IMPORT") is None
    finally:
        sys.modules.pop(name, None)
        import gymnasium
        gymnasium.registry.pop("RlgraphTestRegistered-v0", None)


# --- Hooks ------------------------------------------------------------------------------------------------------
def test_a_hook_in_a_main_module_is_refused(tmp_path, capsys, monkeypatch):
    from rlgraph.execution.hooks import load_hook
    monkeypatch.delitem(sys.modules, "certifi.__main__", raising=False)
    for where, from_config in (("training_spec.hooks[0]", True), ("--hook", False)):
        with pytest.raises(RLGraphSpecError, match="__main__") as error:
            load_hook("certifi.__main__:Hook", where, from_config=from_config)
        assert where in str(error.value)
    config = _config(tmp_path, "CartPole-v1", hooks=["certifi.__main__:Hook"])
    assert _train(config, tmp_path / "run") == 2  # Before: certifi's command line ran and exited with 2.
    assert "__main__" in capsys.readouterr().err and "certifi.__main__" not in sys.modules


def _distribution(tmp_path, name, requires=(), entry_point=None):
    """An installed distribution `name` (dist-info on sys.path) with a hooks module that writes a marker."""
    package = tmp_path / name
    package.mkdir()
    (package / "__init__.py").write_text("")
    marker = tmp_path / f"{name}.marker"
    (package / "hooks.py").write_text(EVIL_SOURCE.format(marker=str(marker)) +
                                      "from rlgraph.execution.hooks import Hook\n\nclass Recorder(Hook):\n    pass\n")
    info = tmp_path / f"{name}-1.0.dist-info"
    info.mkdir()
    metadata = ["Metadata-Version: 2.1", f"Name: {name}", "Version: 1.0"]
    metadata += [f"Requires-Dist: {requirement}" for requirement in requires]
    (info / "METADATA").write_text("\n".join(metadata) + "\n")
    (info / "top_level.txt").write_text(name + "\n")
    (info / "RECORD").write_text(f"{name}/__init__.py,,\n{name}/hooks.py,,\n")
    if entry_point is not None:
        (info / "entry_points.txt").write_text(f"[rlgraph.hooks]\nrecorder = {entry_point}\n")
    return marker


@pytest.mark.parametrize("requires, entry_point, allowed", [
    ((), None, False),                                   # Any installed package: no longer.
    (("numpy>=1",), None, False),
    (("rlgraph>=0.1",), None, True),                     # A package made for rlgraph (pip install -e .).
    ((), "{name}.hooks:Recorder", True),                 # A declared rlgraph.hooks entry point.
    ((), "{name}.hooks:Other", False),                   # Another class of the module is not declared.
])
def test_config_hooks_come_from_declared_packages(tmp_path, monkeypatch, requires, entry_point, allowed):
    from rlgraph.execution.hooks import Hook, load_hook
    name = f"rlgraph_test_dist_{len(requires)}_{entry_point is not None}_{allowed}"
    marker = _distribution(tmp_path, name, requires, entry_point and entry_point.format(name=name))
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        if allowed:
            assert isinstance(load_hook(f"{name}.hooks:Recorder", "training_spec.hooks[0]", from_config=True), Hook)
            assert marker.exists()
        else:
            with pytest.raises(RLGraphSpecError, match="rlgraph.hooks") as error:
                load_hook(f"{name}.hooks:Recorder", "training_spec.hooks[0]", from_config=True)
            assert "training_spec.hooks[0]" in str(error.value)
            assert not marker.exists() and f"{name}.hooks" not in sys.modules
    finally:
        for module in (name, f"{name}.hooks"):
            sys.modules.pop(module, None)


# --- Dotted spec types -------------------------------------------------------------------------------------------
# A config's "type": "package.module.Class" is resolved by importing the module, and importing runs its top-level
# code. The same rule as for hooks named in a config decides which modules may be imported for it.
COMPONENT_SOURCE = "from rlgraph.components import Component\n\nclass Planted(Component):\n    pass\n"


def _planted_module(tmp_path, name):
    """A module file `name`.py on sys.path (as one lying next to a config or in the working directory
    would be) that defines a Component subclass and writes a marker when it is imported."""
    marker = tmp_path / f"{name}.marker"
    (tmp_path / f"{name}.py").write_text(EVIL_SOURCE.format(marker=str(marker)) + COMPONENT_SOURCE)
    return marker


@pytest.mark.parametrize("spec_of", [lambda n: {"type": f"{n}.Planted"}, lambda n: f"{n}.Planted",
                                     lambda n: {"type": "dqn", "network_spec": [{"type": f"{n}.Planted"}]}])
def test_a_dotted_type_never_imports_a_module_lying_around(tmp_path, monkeypatch, spec_of):
    from rlgraph.agents import Agent
    from rlgraph.components import Component
    name = "rlgraph_test_planted_spec_module"
    marker = _planted_module(tmp_path, name)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(TRUSTED_MODULES_VARIABLE, "")  # (Restored afterwards: trust lasts as long as the process.)
    spec = spec_of(name)
    family = Agent if isinstance(spec, dict) and spec.get("type") == "dqn" else Component
    try:
        with pytest.raises(RLGraphSpecError, match="imported already") as error:
            family.from_spec(spec, **({"state_space": {"type": "float-box", "shape": [2]},
                                       "action_space": {"type": "int-box", "high": 2}} if family is Agent else {}))
        message = str(error.value)
        assert f"{name}.Planted" in message and f"import {name}" in message  # The hint says what to do.
        assert not marker.exists() and name not in sys.modules
        # Imported by the user's own code first, the same spec resolves (and nothing is imported for it).
        module = __import__(name)
        marker.unlink()
        assert isinstance(Component.from_spec({"type": f"{name}.Planted"}), module.Planted)
        assert not marker.exists()
    finally:
        sys.modules.pop(name, None)


@pytest.mark.parametrize("requires, allowed", [((), False), (("numpy>=1",), False), (("rlgraph>=0.1",), True)])
def test_a_dotted_type_may_import_an_installed_package_made_for_rlgraph(tmp_path, monkeypatch, requires, allowed):
    from rlgraph.components import Component
    name = f"rlgraph_test_spec_dist_{len(requires)}_{allowed}"
    marker = _distribution(tmp_path, name, requires)
    (tmp_path / name / "layers.py").write_text(COMPONENT_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(TRUSTED_MODULES_VARIABLE, "")
    try:
        if allowed:
            assert type(Component.from_spec({"type": f"{name}.layers.Planted"})).__name__ == "Planted"
        else:
            with pytest.raises(RLGraphSpecError, match="imported already"):
                Component.from_spec({"type": f"{name}.layers.Planted"})
            assert f"{name}.layers" not in sys.modules and name not in sys.modules
        assert not marker.exists()  # (The package's hooks module was never named.)
    finally:
        for module in (name, f"{name}.layers"):
            sys.modules.pop(module, None)


def test_a_dotted_type_in_a_main_module_is_refused(monkeypatch):
    from rlgraph.components import Component
    monkeypatch.delitem(sys.modules, "certifi.__main__", raising=False)
    with pytest.raises(RLGraphSpecError, match="__main__"):
        Component.from_spec({"type": "certifi.__main__.Component"})
    assert "certifi.__main__" not in sys.modules


def test_rlgraph_train_refuses_a_dotted_type_of_a_module_lying_around(tmp_path, monkeypatch, capsys):
    """`rlgraph train` with a config naming a planted module: exit status 2, nothing imported."""
    name = "rlgraph_test_planted_cli_module"
    marker = _planted_module(tmp_path, name)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(TRUSTED_MODULES_VARIABLE, "")
    config = _config(tmp_path, "CartPole-v1")
    with open(config) as handle:
        spec = json.load(handle)
    spec["network_spec"] = [{"type": f"{name}.Planted"}]
    with open(config, "w") as handle:
        json.dump(spec, handle)
    try:
        assert _train(config, tmp_path / "run") == 2
        assert "imported already" in capsys.readouterr().err
        assert not marker.exists() and name not in sys.modules
    finally:
        sys.modules.pop(name, None)


def test_an_async_vector_env_of_a_user_env_class_the_parent_imported(tmp_path, monkeypatch):
    """A dotted env type of a module the user's code imported: the parent vouches for it, so the env
    subprocesses (fresh interpreters) may import it; not imported by the user, it is refused in the
    parent before any subprocess starts."""
    from rlgraph.environments import AsyncVectorEnv
    name = "rlgraph_test_user_envs"
    marker = tmp_path / f"{name}.marker"
    (tmp_path / f"{name}.py").write_text(EVIL_SOURCE.format(marker=str(marker)) +
                                         "from rlgraph.environments import GridWorld\n\nclass MyGrid(GridWorld):\n"
                                         "    def __str__(self):\n        return 'MyGrid'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv(TRUSTED_MODULES_VARIABLE, "")  # (Restored afterwards: trust lasts as long as the process.)
    spec = {"type": f"{name}.MyGrid", "world": "2x2"}
    try:
        with pytest.raises(RLGraphSpecError, match="imported already"):
            AsyncVectorEnv(2, spec)
        assert not marker.exists() and name not in sys.modules
        __import__(name)  # The user's own code.
        env = AsyncVectorEnv(2, spec, seed=3)
        try:
            assert "MyGrid" in env.environments[0].description and env.reset_all().shape == (2,)
        finally:
            env.terminate()
        assert name in os.environ[TRUSTED_MODULES_VARIABLE].split(",")
    finally:
        sys.modules.pop(name, None)


def test_trust_goes_only_to_imported_modules_of_dotted_types(monkeypatch):
    """What a process hands on to the processes it starts: the modules of a spec's dotted types that it has
    imported, at any depth of the spec; not a module it never imported, not a type name, not a __main__."""
    from rlgraph.utils.module_imports import trust_spec_modules, trusted_modules
    monkeypatch.setenv(TRUSTED_MODULES_VARIABLE, "")
    monkeypatch.delitem(sys.modules, "rlgraph_test_never_imported", raising=False)
    spec = {"type": "dqn", "network_spec": [{"type": "json.decoder.JSONDecoder"}, {"type": "dense"}],
            "memory_spec": {"type": "rlgraph_test_never_imported.Memory"}, "x": [{"type": "__main__.Thing"}]}
    trust_spec_modules(spec, {"type": "rlgraph.environments.GridWorld"})
    assert trusted_modules() == {"json.decoder"}
