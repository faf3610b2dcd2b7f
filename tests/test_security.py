"""Safe files and bad input: what a config, a spec file or a checkpoint can and cannot make rlgraph do."""
import importlib
import json
import os
from collections import OrderedDict

import pytest
import yaml

from agent_helpers import _spec
from rlgraph.agents import Agent
from rlgraph.cli.main import main
from rlgraph.components import Component
from rlgraph.components.common.time_dependent_parameters import TimeDependentParameter
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.environments import Environment, GridWorld
from rlgraph.execution.training import apply_overrides, make_agent_and_env, resolve_config
from rlgraph.graphs.graph_executor import GraphExecutor
from rlgraph.spaces import FloatBox, IntBox, Space
from rlgraph.utils import spec_files, specifiable
from rlgraph.utils.rlgraph_errors import RLGraphSpecError
from rlgraph.utils.specifiable import load_json_text, load_spec_file, load_yaml_text

# --- Specs and config files -------------------------------------------------------------------
# Every payload below writes a marker file when it is called; each test asserts the marker is absent.


def _payloads(marker):
    """(dotted "type", positional args) pairs that would create `marker` if a spec called them."""
    path = str(marker)
    return [("os.system", [f"touch '{path}'"]), ("posix.system", [f"touch '{path}'"]),
            ("subprocess.call", [["touch", path]]), ("subprocess.check_call", [["touch", path]]),
            ("builtins.eval", [f"open({path!r}, 'w').close()"]), ("builtins.exec", [f"open({path!r}, 'w').close()"])]


PAYLOAD_NAMES = [name for name, _ in _payloads("x")]


def _payload(marker, name):
    return dict(_payloads(marker))[name]


@pytest.mark.parametrize("name", PAYLOAD_NAMES)
def test_payloads_are_live_when_called_directly(tmp_path, name):
    # The control: each payload really creates the marker, so its absence elsewhere means something.
    marker = tmp_path / "marker"
    module_name, _, attr = name.rpartition(".")
    getattr(importlib.import_module(module_name), attr)(*_payload(marker, name))
    assert marker.exists()


@pytest.mark.parametrize("family", [Component, Space, Environment, Agent, TimeDependentParameter, GraphExecutor])
@pytest.mark.parametrize("name", PAYLOAD_NAMES)
def test_dotted_function_type_never_runs(tmp_path, family, name):
    marker = tmp_path / "marker"
    with pytest.raises(RLGraphSpecError, match="not a class") as info:
        family.from_spec({"type": name, "_args": _payload(marker, name)})
    assert repr(name) in str(info.value) and family.__name__ in str(info.value)
    assert not marker.exists()


def test_class_outside_the_family_is_refused():
    for family, outsider in [(Component, "rlgraph.spaces.FloatBox"), (Component, "collections.OrderedDict"),
                             (Space, "rlgraph.components.Component"), (Environment, "rlgraph.agents.DQNAgent"),
                             (TimeDependentParameter, "rlgraph.components.layers.nn.dense_layer.DenseLayer")]:
        with pytest.raises(RLGraphSpecError, match="class of another family") as info:
            family.from_spec({"type": outsider})
        assert family.spec_family().__name__ in str(info.value) and outsider in str(info.value)
    # Class and callable objects handed in code obey the same rule.
    with pytest.raises(RLGraphSpecError, match="another family"):
        Component.from_spec({"type": FloatBox})
    with pytest.raises(RLGraphSpecError, match="another family"):
        Space.from_spec(OrderedDict)
    with pytest.raises(RLGraphSpecError, match="cannot use this as a type"):
        Component.from_spec(lambda: None)


@pytest.mark.parametrize("path", [".os.system", "os..system", "os.system()", "os.system;x", "builtins.__import__ "])
def test_malformed_dotted_paths_are_refused(path):
    with pytest.raises(RLGraphSpecError):
        Component.from_spec({"type": path})


def test_family_classes_by_dotted_path_and_in_code_still_work(tmp_path):
    from components_for_tests import Scale
    assert isinstance(Component.from_spec({"type": "components_for_tests.Scale", "w_init": 2.0}), Scale)
    spec_file = tmp_path / "layer.json"
    spec_file.write_text(json.dumps({"type": "rlgraph.components.layers.nn.dense_layer.DenseLayer", "units": 2}))
    assert isinstance(Component.from_spec(str(spec_file)), DenseLayer)
    assert isinstance(Component.from_spec({"type": DenseLayer, "units": 2}), DenseLayer)
    assert Space.from_spec("rlgraph.spaces.int_box.IntBox", high=3) == IntBox(3)
    assert isinstance(Environment.from_spec({"type": "rlgraph.environments.grid_world.GridWorld"}), GridWorld)
    assert TimeDependentParameter.from_spec(["exponential", 1.0, 0.1]).value_at(0.0) == pytest.approx(1.0)


def _agent_payload_specs(marker, backend):
    """Agent configs carrying a payload at the top level and inside nested specs."""
    command = [f"touch '{marker}'"]
    base = dict(_spec(backend), type="dqn")
    return {"top-level": {"type": "os.system", "_args": command},
            "memory_spec": dict(base, memory_spec={"type": "os.system", "_args": command}),
            "network_spec": dict(base, network_spec=[{"type": "subprocess.call", "_args": [["touch", str(marker)]]}]),
            "optimizer_spec": dict(base, optimizer_spec={"type": "posix.system", "_args": command}),
            "exploration_spec": dict(base, exploration_spec={"type": "builtins.eval",
                                                             "_args": [f"open({str(marker)!r}, 'w').close()"]})}


def test_agent_config_dict_payloads_never_run(tmp_path, backend):
    marker = tmp_path / "marker"
    for where, spec in _agent_payload_specs(marker, backend).items():
        with pytest.raises(RLGraphSpecError, match="not a class|cannot use this as a type"):
            Agent.from_spec(spec)
        assert not marker.exists(), where


def _jsonable(spec):
    """The spec with its spaces (FloatBox(4) states, IntBox(3) actions) written as a file holds them."""
    spaces = {"state_space": {"type": "float-box", "shape": [4]}, "action_space": {"type": "int-box", "high": 3}}
    return {k: spaces.get(k, v) for k, v in spec.items()}


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_agent_config_file_payloads_never_run(tmp_path, backend, suffix):
    marker = tmp_path / "marker"
    for where, spec in _agent_payload_specs(marker, backend).items():
        config = tmp_path / f"{where}{suffix}"
        config.write_text(json.dumps(_jsonable(spec)) if suffix == ".json" else yaml.safe_dump(_jsonable(spec)))
        with pytest.raises(RLGraphSpecError, match="not a class|cannot use this as a type"):
            Agent.from_spec(str(config))
        assert not marker.exists(), where


def _gridworld_config(tmp_path, name="config", **changes):
    config = json.loads(open("configs/dqn_gridworld_4x4.json").read())
    config["training_spec"].update(num_timesteps=20, evaluation_interval=0, log_interval=10)
    config.update(changes)
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(config))
    return path


def test_set_override_payloads_never_run(tmp_path, backend):
    marker = tmp_path / "marker"
    config = json.loads(_gridworld_config(tmp_path, backend=backend).read_text())
    for overrides in (["type=os.system", f'_args=["touch {marker}"]'],
                      ["memory_spec.type=subprocess.call", f'memory_spec._args=[["touch", "{marker}"]]'],
                      ["environment_spec.type=os.system", f'environment_spec._args=["touch {marker}"]']):
        with pytest.raises(RLGraphSpecError, match="not a class"):
            make_agent_and_env(resolve_config(apply_overrides(config, overrides)))
        assert not marker.exists(), overrides


def test_cli_train_refuses_payloads(tmp_path, capsys):
    marker = tmp_path / "marker"
    touch = [f"touch {marker}"]
    runs = [[str(_gridworld_config(tmp_path, "memory", memory_spec={"type": "os.system", "_args": touch}))],
            [str(_gridworld_config(tmp_path, "env", environment_spec={"type": "os.system", "_args": touch}))],
            [str(_gridworld_config(tmp_path, "clean")), "--set", "optimizer_spec.type=posix.system",
             "--set", f"optimizer_spec._args={json.dumps(touch)}"]]
    for argv in runs:
        status = main(["train", *argv, "--backend", "pytorch", "--output-dir", str(tmp_path / "run"), "--no-progress"])
        assert status == 2, argv
        assert "not a class" in capsys.readouterr().err
        assert not marker.exists(), argv


@pytest.mark.parametrize("text", ["!!python/object/apply:os.system ['touch {marker}']",
                                  "type: !!python/name:os.system\n_args: ['touch {marker}']",
                                  "x: !!python/object/new:subprocess.call [['touch', '{marker}']]"])
def test_yaml_python_tags_are_refused(tmp_path, text):
    marker = tmp_path / "marker"
    config = tmp_path / "config.yaml"
    config.write_text(text.format(marker=marker))
    with pytest.raises(RLGraphSpecError, match="cannot parse spec file") as info:
        Agent.from_spec(str(config))
    assert "python/" in str(info.value)
    assert not marker.exists()


def _alias_bomb(levels=9, width=9):
    lines = ['a0: &a0 ["lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


def _merge_bomb(levels=9, width=9):
    lines = ["m0: &m0 {k0: 0, k1: 1, k2: 2}"]
    lines += [f"m{i}: &m{i} {{<<: [" + ", ".join([f"*m{i - 1}"] * width) + "]}" for i in range(1, levels + 1)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("bomb", [_alias_bomb, _merge_bomb])
def test_yaml_alias_bombs_are_refused_before_expanding(tmp_path, bomb):
    # 9 levels of 9 aliases: under 1 KB of text, 9**9 (387 million) nodes once expanded.
    config = tmp_path / "bomb.yaml"
    config.write_text(bomb())
    assert len(bomb()) < 1024
    with pytest.raises(RLGraphSpecError, match="YAML aliases expand too far"):
        load_spec_file(str(config))
    with pytest.raises(RLGraphSpecError, match="YAML aliases expand too far"):
        Agent.from_spec(str(config))
    assert main(["train", str(config), "--no-progress"]) == 2


def test_yaml_moderate_anchor_reuse_and_merge_keys_still_work():
    text = "net: &net [{type: dense, units: 8}]\npolicy: {network_spec: *net}\nbase: &b {x: 1}\nmore: {<<: *b, y: 2}\n"
    assert load_yaml_text(text) == {"net": [{"type": "dense", "units": 8}],
                                    "policy": {"network_spec": [{"type": "dense", "units": 8}]},
                                    "base": {"x": 1}, "more": {"x": 1, "y": 2}}
    assert load_yaml_text(_alias_bomb(levels=3, width=3))["a3"][2][2][2] == ["lol"]


def test_cyclic_yaml_alias_is_refused():
    with pytest.raises(RLGraphSpecError, match="nests too deeply"):
        load_yaml_text("a: &a [*a]")


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_oversized_spec_file_is_refused(tmp_path, suffix):
    config = tmp_path / f"big{suffix}"
    config.write_text('{"type": "dqn", "pad": "' + "x" * specifiable.MAX_SPEC_FILE_BYTES + '"}')
    with pytest.raises(RLGraphSpecError, match="spec text too large") as info:
        Agent.from_spec(str(config))
    assert str(specifiable.MAX_SPEC_FILE_BYTES) in str(info.value)
    with pytest.raises(RLGraphSpecError, match="too large"):
        load_json_text(" " * (specifiable.MAX_SPEC_FILE_BYTES + 1))


@pytest.mark.parametrize("depth", [specifiable.MAX_SPEC_DEPTH + 1, 5000, 200000])
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_deep_nesting_is_refused(tmp_path, suffix, depth):
    config = tmp_path / f"deep{suffix}"
    config.write_text("[" * depth + "]" * depth)
    with pytest.raises(RLGraphSpecError, match="nests too deeply"):
        load_spec_file(str(config))


def test_limits_keep_specs_at_the_bounds():
    depth = specifiable.MAX_SPEC_DEPTH
    assert load_json_text("[" * depth + "]" * depth) is not None
    assert load_yaml_text("[" * depth + "]" * depth) is not None


def test_set_values_are_bounded():
    with pytest.raises(RLGraphSpecError, match="--set: spec nests too deeply"):
        apply_overrides({}, ["network_spec=" + "[" * 100000 + "]" * 100000])
    with pytest.raises(RLGraphSpecError, match="--set: spec text too large"):
        apply_overrides({}, ["name=" + "x" * (specifiable.MAX_SPEC_FILE_BYTES + 1)])
    assert apply_overrides({}, ["a.b=[1, 2]", "c=plain text"]) == {"a": {"b": [1, 2]}, "c": "plain text"}


@pytest.mark.parametrize("content", ["null", "42", "[1, 2]", '"os.system"', '"dqn"'])
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_config_files_that_are_not_mappings_are_refused(tmp_path, capsys, suffix, content):
    config = tmp_path / f"config{suffix}"
    config.write_text(content)
    with pytest.raises(RLGraphSpecError, match="must be a mapping"):
        Agent.from_spec(str(config), state_space=FloatBox(shape=(2,)), action_space=IntBox(2))
    with pytest.raises(RLGraphSpecError, match="must be a mapping"):
        resolve_config(str(config))
    assert main(["train", str(config), "--no-progress"]) == 2
    assert "must be a mapping" in capsys.readouterr().err


@pytest.mark.parametrize("spec", [None, 42, [1, 2], 1.5])
def test_agent_from_spec_refuses_non_mapping_configs(spec):
    with pytest.raises(RLGraphSpecError):
        Agent.from_spec(spec)
    with pytest.raises(RLGraphSpecError, match="must be a mapping"):
        resolve_config(spec)


def test_space_from_spec_none_is_refused():
    with pytest.raises(RLGraphSpecError, match="no space given"):
        Space.from_spec(None)
    with pytest.raises(RLGraphSpecError, match="abstract"):
        Space.from_spec(add_batch_rank=True)
    assert FloatBox.from_spec(None) == FloatBox()  # A concrete class still means itself.


def test_size_limit_is_the_module_constant(tmp_path, monkeypatch):
    monkeypatch.setattr(spec_files, "MAX_SPEC_FILE_BYTES", 64)  # (Where spec files are read.)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"type": "dqn", "pad": "x" * 100}))
    assert os.path.getsize(config) > 64
    with pytest.raises(RLGraphSpecError, match="too large"):
        load_spec_file(str(config))


# --- Checkpoints -------------------------------------------------------------------------------
# A checkpoint directory someone else made: every file's payload would write a marker when unpickled
# or executed; the manifest is made consistent with the crafted file, so only the loader's refusal to
# unpickle (not the digest check) stands between the payload and the machine.


class _MarkerPayload:
    """Unpickling this creates the file `path`."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


_CKPT_SPEC = {"type": "dqn", "network_spec": [{"type": "dense", "units": 4}], "dueling_q": False,
              "memory_spec": {"type": "replay-memory", "capacity": 8}, "observe_spec": {"buffer_size": 4},
              "execution_spec": {"seed": 1}}


def _checkpoint(tmp_path, backend):
    agent = Agent.from_spec(_CKPT_SPEC, backend=backend, state_space=FloatBox(shape=(4,)), action_space=IntBox(2))
    state = FloatBox(shape=(4,)).sample()
    agent.observe(state, 1, None, 1.0, state, False)
    return agent, agent.store_model(str(tmp_path / "ckpt"), add_timestep=False)


def _replace_consistently(path, name, data):
    import hashlib
    with open(os.path.join(path, name), "wb") as handle:
        handle.write(data)
    manifest_file = os.path.join(path, "manifest.json")
    manifest = json.load(open(manifest_file))
    manifest["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    json.dump(manifest, open(manifest_file, "w"))


def _pickled_npz(marker):
    import io
    import numpy as np
    buffer = io.BytesIO()
    np.savez(buffer, **{"rng/numpy_keys": np.array([_MarkerPayload(str(marker))], dtype=object)})
    return buffer.getvalue()


def _pickled_torch_file(marker):
    import io
    import pickle
    buffer = io.BytesIO()
    pickle.dump({"policy/kernel": _MarkerPayload(str(marker))}, buffer, protocol=2)
    return buffer.getvalue()


@pytest.mark.parametrize("target", ["agent_state.npz", "model", "agent_state.pkl (legacy)"])
def test_checkpoint_payloads_never_run(tmp_path, backend, target):
    from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError
    marker = tmp_path / "payload-ran"
    agent, path = _checkpoint(tmp_path, backend)
    if target == "agent_state.npz":
        _replace_consistently(path, "agent_state.npz", _pickled_npz(marker))
    elif target == "model":
        if backend != "pytorch":
            pytest.skip(reason="TF checkpoints hold no pickles: tf.train.load_checkpoint reads tensors only")
        _replace_consistently(path, "model.pt", _pickled_torch_file(marker))
    else:
        import pickle
        os.remove(os.path.join(path, "manifest.json"))
        with open(os.path.join(path, "agent_state.pkl"), "wb") as handle:
            pickle.dump(_MarkerPayload(str(marker)), handle)
    with pytest.raises(RLGraphCheckpointError):
        agent.load_model(path)
    assert not marker.exists()


def test_python_memory_payload_never_runs(tmp_path, backend):
    import io
    import numpy as np
    from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError
    marker = tmp_path / "payload-ran"
    agent = Agent.from_spec(dict(_CKPT_SPEC, memory_spec={"type": "mem-prioritized-replay", "capacity": 8}),
                            backend=backend,
                            state_space=FloatBox(shape=(4,)), action_space=IntBox(2))
    state = FloatBox(shape=(4,)).sample()
    agent.observe(state, 1, None, 1.0, state, True)
    path = agent.store_model(str(tmp_path / "ckpt"), add_timestep=False)
    buffer = io.BytesIO()
    np.savez(buffer, priorities=np.array([_MarkerPayload(str(marker))], dtype=object))
    _replace_consistently(path, "python_memory.npz", buffer.getvalue())
    with pytest.raises(RLGraphCheckpointError):
        agent.load_model(path)
    assert not marker.exists() and agent.memory_size() == 1


def test_checkpoint_files_outside_the_directory_are_never_read(tmp_path, backend):
    """A symlink (or a manifest entry) that leads out of the checkpoint is refused before reading."""
    from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError
    agent, path = _checkpoint(tmp_path, backend)
    outside = tmp_path / "elsewhere.npz"
    os.replace(os.path.join(path, "agent_state.npz"), outside)
    os.symlink(outside, os.path.join(path, "agent_state.npz"))
    with pytest.raises(RLGraphCheckpointError, match="outside the checkpoint"):
        agent.load_model(path)


def test_checkpoint_config_payload_never_runs_in_evaluate(tmp_path, capsys):
    """`rlgraph evaluate` on a downloaded run whose config.json (manifest-consistent) names os.system."""
    marker = tmp_path / "payload-ran"
    agent, path = _checkpoint(tmp_path, "pytorch")
    config = dict(_CKPT_SPEC, environment_spec={"type": "grid-world", "world": "2x2"},
                  network_spec=[{"type": "os.system", "_args": [f"touch '{marker}'"]}])
    _replace_consistently(path, "config.json", json.dumps(config).encode())
    assert main(["evaluate", path, "--episodes", "1"]) != 0
    assert not marker.exists()
    assert "os.system" in capsys.readouterr().err
