"""`Agent.export_policy` (rlgraph/agents/policy_export.py): the greedy policy as TorchScript, ONNX or a
TF SavedModel, written from either backend, loaded without rlgraph; `read_metadata`; the refusals
(formats, stateful preprocessors, paths, a policy that does not reproduce the agent, agents without a
spec, recurrent IMPALA, missing packages); and `rlgraph export`.

The acceptance test exports four agents (DQN with preprocessing, DQN with Dict states and actions,
PPO with bounded continuous actions, IMPALA) per backend in all three formats once (a module-scoped
fixture), and loads every export in one fresh interpreter per backend that cannot import rlgraph.
Networks are small (two dense layers of 16 units at most), so each export takes about a second.
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the policy exports need PyTorch (the '.[torch]' extra)")
tf = pytest.importorskip("tensorflow", reason="the policy exports need TensorFlow (the '.[tf]' extra)")

from rlgraph.agents import Agent, DQNAgent, IMPALAAgent  # noqa: E402
from rlgraph.agents.policy_export import POLICY_FORMATS, load_and_run, read_metadata  # noqa: E402
from rlgraph.backend_system import BACKENDS, is_backend_installed  # noqa: E402
from rlgraph.spaces import Dict, FloatBox, IntBox  # noqa: E402
from rlgraph.utils.rlgraph_errors import RLGraphExportError  # noqa: E402
from config_helpers import tiny_config_file  # noqa: E402

# (torch.jit.save/load warn that TorchScript is deprecated in favour of torch.export.)
pytestmark = pytest.mark.filterwarnings(r"ignore:`torch\.jit\.(save|load)` is deprecated:DeprecationWarning")

FORMATS = ("torchscript", "onnx", "savedmodel")
SUFFIXES = {"torchscript": ".pt", "onnx": ".onnx", "savedmodel": "-savedmodel"}
#: The runtime that loads each format (it is skipped, with its reason, when not installed).
RUNTIMES = {"torchscript": ("torch",), "onnx": ("onnx", "onnxscript", "onnxruntime"), "savedmodel": ("tensorflow",)}
NUM_STATES = 1000
NET = [{"type": "dense", "units": 16, "activation": "tanh"}, {"type": "dense", "units": 16, "activation": "tanh"}]
SMALL_NET = [{"type": "dense", "units": 8, "activation": "tanh"}]
DQN_MEMORY = {"memory_spec": {"type": "replay-memory", "capacity": 64}, "update_spec": {"batch_size": 8}}
#: The agents of the cross-process acceptance test (plus `backend=` when built).
AGENTS = {
    # (a) Plain states and actions; the (stateless) preprocessing is part of the export.
    "dqn": dict(type="dqn", state_space=FloatBox(shape=(4,)), action_space=IntBox(3), network_spec=NET,
                preprocessing_spec=[{"type": "multiply", "factor": -0.5}, {"type": "divide", "divisor": 0.25}],
                execution_spec={"seed": 1}, **DQN_MEMORY),
    # (b) Container states and actions: one named input/output per leaf.
    "dqn-dict": dict(type="dqn", state_space=Dict(a=FloatBox(shape=(3,)), b=FloatBox(shape=(2,))),
                     action_space=Dict(x=IntBox(2), y=IntBox(3)),
                     network_spec={"type": "multi-input-stream-nn",
                                   "input_network_specs": {"a": [{"type": "dense", "units": 4}], "b": []},
                                   "post_network_spec": [{"type": "dense", "units": 8}]},
                     execution_spec={"seed": 2}, **DQN_MEMORY),
    # (c) Bounded continuous actions (compared within 1e-5).
    "ppo": dict(type="ppo", state_space=FloatBox(shape=(3,)), action_space=FloatBox(low=-2.0, high=2.0, shape=(1,)),
                network_spec=NET, value_function_spec=SMALL_NET, execution_spec={"seed": 3}),
    # (d) IMPALA: the greedy action is an argmax of the logits inside the exported graph.
    "impala": dict(type="impala", state_space=FloatBox(shape=(4,)), action_space=IntBox(3), network_spec=NET,
                   worker_sample_size=4, execution_spec={"seed": 4}),
}

# The program run in a fresh interpreter: its first statements make `import rlgraph` (and of any
# rlgraph submodule) fail; then it loads every export listed in manifest.json with the format's own
# runtime and writes the actions for the saved states (whole batch and first row) as .npz.
LOADER = r'''
import sys


class BlockRLGraph:
    """A meta path finder that refuses rlgraph and its submodules."""

    def find_spec(self, name, path=None, target=None):
        if name == "rlgraph" or name.startswith("rlgraph."):
            raise ImportError(f"{name} is blocked in this process")
        return None


sys.meta_path.insert(0, BlockRLGraph())

try:
    import rlgraph  # noqa: F401
    import_error = None
except ImportError as error:
    import_error = str(error)

import json

import numpy as np
import onnxruntime
import tensorflow as tf
import torch

with open("manifest.json") as handle:
    manifest = json.load(handle)
report = {"import_error": import_error, "onnx": {}}
for entry in manifest:
    with np.load(entry["states"], allow_pickle=False) as data:
        states = {name: data[name] for name in entry["inputs"]}
    results = {}
    if entry["format"] == "torchscript":
        policy = torch.jit.load(entry["path"])

        def run(feeds):
            with torch.no_grad():
                inputs = {name: torch.from_numpy(value) for name, value in feeds.items()}
                out = policy(inputs["states"] if list(inputs) == ["states"] else inputs)
            return {"actions": out.numpy()} if isinstance(out, torch.Tensor) else {k: v.numpy() for k, v in out.items()}
    elif entry["format"] == "onnx":
        session = onnxruntime.InferenceSession(entry["path"], providers=["CPUExecutionProvider"])
        names = [o.name for o in session.get_outputs()]
        report["onnx"][entry["agent"]] = {"inputs": [i.name for i in session.get_inputs()], "outputs": names}

        def run(feeds):
            return dict(zip(names, session.run(None, feeds)))
    else:
        policy = tf.saved_model.load(entry["path"])

        def run(feeds):
            out = policy.greedy_actions(feeds["states"] if list(feeds) == ["states"] else feeds)
            return {"actions": out.numpy()} if tf.is_tensor(out) else {k: v.numpy() for k, v in out.items()}
        served = policy.signatures["serving_default"](**{name: tf.constant(v) for name, v in states.items()})
        results.update({f"serving.{k}": v.numpy() for k, v in served.items()})
    for batch, feeds in (("full", states), ("one", {name: v[:1] for name, v in states.items()})):
        results.update({f"{batch}.{k}": v for k, v in run(feeds).items()})
    np.savez(entry["result"], **results)
report["rlgraph_modules"] = sorted(m for m in sys.modules if m == "rlgraph" or m.startswith("rlgraph."))
with open("report.json", "w") as handle:
    json.dump(report, handle)
'''


# --- Helpers -------------------------------------------------------------------------------------------
def _require(*formats):
    for format_ in formats:
        for module in RUNTIMES[format_]:
            pytest.importorskip(module, reason=f"the {format_} export needs {module} (the '.[export]' extra)")


def _names(space):
    keys = list(space.flatten().keys())
    return ["states"] if keys == [""] else [k.lstrip("/") for k in keys]


def _flat_states(space, n, seed):
    """{input name: array [n, ...]} with values around the preprocessors' clip range."""
    rng = np.random.RandomState(seed)
    return {name: (2.0 * rng.normal(size=(n, *leaf.shape))).astype(leaf.dtype)
            for name, leaf in zip(_names(space), space.flatten().values())}


def _nested(flat):
    return flat["states"] if list(flat) == ["states"] else dict(flat)


def _flat_actions(actions):
    return dict(actions) if isinstance(actions, dict) else {"actions": np.asarray(actions)}


def _assert_actions(received, expected, what):
    """Discrete actions: identical (values and dtype); continuous ones: within 1e-5."""
    assert sorted(received) == sorted(expected), what
    for key, want in expected.items():
        got = received[key]
        assert got.dtype == want.dtype and got.shape == want.shape, \
            f"{what} {key}: {got.dtype} {got.shape} instead of {want.dtype} {want.shape}"
        if want.dtype.kind == "f":
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5, err_msg=f"{what} {key}")
        else:
            np.testing.assert_array_equal(got, want, err_msg=f"{what} {key}")


def _leftovers(directory):
    """Temporary export entries (".NAME.tmp-*") in `directory`."""
    return [name for name in os.listdir(directory) if ".tmp-" in name]


def _tree(directory):
    """{relative path: bytes} of every file below `directory`."""
    files = {}
    for root, _, names in os.walk(directory):
        for name in names:
            full = os.path.join(root, name)
            with open(full, "rb") as handle:
                files[os.path.relpath(full, directory)] = handle.read()
    return files


def _dqn(backend, **overrides):
    spec = dict(AGENTS["dqn"], backend=backend)
    spec.update(overrides)
    return Agent.from_spec(spec)


def _own_format(backend):
    return "savedmodel" if backend == "tf" else "torchscript"


def _other_format(backend):
    return "torchscript" if backend == "tf" else "savedmodel"


# --- Cross-process loading without rlgraph (the acceptance test) ---------------------------------------
@pytest.fixture(scope="module", params=BACKENDS)
def exported(request, tmp_path_factory):
    """Every agent of AGENTS built on the backend, exported in every format; then one fresh
    interpreter (which cannot import rlgraph) loads all the exports. Returns the agents' greedy
    actions, the loader's actions and report, and the exports' paths."""
    backend = request.param
    if not is_backend_installed(backend):
        pytest.skip(f"backend {backend!r} is not installed")
    _require(*FORMATS)
    directory = tmp_path_factory.mktemp(f"exports-{backend}")
    expected, manifest = {}, []
    for index, (name, spec) in enumerate(AGENTS.items()):
        agent = Agent.from_spec(dict(spec, backend=backend))
        states = _flat_states(agent.state_space, NUM_STATES, seed=10 + index)
        np.savez(directory / f"states-{name}.npz", **states)
        expected[name] = _flat_actions(agent.get_action(_nested(states), use_exploration=False))
        if name == "dqn":
            # The preprocessing (x -> -2 x) matters: without it most greedy actions differ.
            raw = agent.get_action(_nested(states), use_exploration=False, apply_preprocessing=False)
            assert (raw != expected[name]["actions"]).mean() > 0.2
        for format_ in FORMATS:
            path = agent.export_policy(str(directory / f"{name}{SUFFIXES[format_]}"), format_)
            manifest.append(dict(agent=name, format=format_, path=path, states=f"states-{name}.npz",
                                 inputs=list(states), result=f"actions-{name}-{format_}.npz"))
        agent.terminate()
    (directory / "manifest.json").write_text(json.dumps(manifest))
    (directory / "load_exports.py").write_text(LOADER)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    process = subprocess.run([sys.executable, "load_exports.py"], cwd=str(directory), env=env, capture_output=True,
                             text=True, timeout=300)
    report = json.loads((directory / "report.json").read_text()) if process.returncode == 0 else None
    received = {}
    if process.returncode == 0:
        for entry in manifest:
            with np.load(directory / entry["result"], allow_pickle=False) as data:
                received[entry["agent"], entry["format"]] = {k: data[k] for k in data.files}
    return dict(backend=backend, directory=directory, expected=expected, received=received, report=report,
                process=process, paths={(e["agent"], e["format"]): e["path"] for e in manifest})


def test_every_export_reproduces_the_greedy_actions_without_rlgraph(exported):
    process = exported["process"]
    assert process.returncode == 0, f"the loader failed:\n{process.stdout[-2000:]}\n{process.stderr[-4000:]}"
    report = exported["report"]
    assert report["import_error"] == "rlgraph is blocked in this process"  # `import rlgraph` failed there,
    assert report["rlgraph_modules"] == []  # and no rlgraph module was loaded by any runtime.
    assert len(exported["received"]) == len(AGENTS) * len(FORMATS)
    for (name, format_), results in exported["received"].items():
        what = f"{exported['backend']} {name} as {format_}"
        expected = exported["expected"][name]
        assert all(len(v) == NUM_STATES for v in expected.values())
        _assert_actions({k[len("full."):]: v for k, v in results.items() if k.startswith("full.")}, expected, what)
        _assert_actions({k[len("one."):]: v for k, v in results.items() if k.startswith("one.")},
                        {k: v[:1] for k, v in expected.items()}, f"{what} (batch of 1)")
        if format_ == "savedmodel":
            _assert_actions({k[len("serving."):]: v for k, v in results.items() if k.startswith("serving.")},
                            expected, f"{what} (serving_default)")


def test_onnx_inputs_and_outputs_are_named_by_the_spaces(exported):
    assert exported["process"].returncode == 0, exported["process"].stderr[-4000:]
    names = exported["report"]["onnx"]
    assert names["dqn"] == {"inputs": ["states"], "outputs": ["actions"]}
    assert names["dqn-dict"] == {"inputs": ["a", "b"], "outputs": ["x", "y"]}
    assert names["ppo"] == {"inputs": ["states"], "outputs": ["actions"]}


def test_read_metadata_describes_every_export(exported):
    backend = exported["backend"]
    agent_classes = {"dqn": "DQNAgent", "dqn-dict": "DQNAgent", "ppo": "PPOAgent", "impala": "IMPALAAgent"}
    for (name, format_), path in exported["paths"].items():
        metadata = read_metadata(path)
        assert metadata["export_format"] == format_ and metadata["agent"] == agent_classes[name], (name, format_)
        assert metadata["agent_backend"] == backend and metadata["preprocessing"] is True
    plain = read_metadata(exported["paths"]["dqn", "onnx"])
    assert plain["inputs"] == {"states": {"shape": [None, 4], "dtype": "float32"}}
    action_dtype = str(exported["expected"]["dqn"]["actions"].dtype)
    assert plain["outputs"] == {"actions": {"shape": [None], "dtype": action_dtype}}
    container = read_metadata(exported["paths"]["dqn-dict", "savedmodel"])
    assert container["inputs"] == {"a": {"shape": [None, 3], "dtype": "float32"},
                                   "b": {"shape": [None, 2], "dtype": "float32"}}
    assert list(container["outputs"]) == ["x", "y"]
    assert all(v["shape"] == [None] and v["dtype"] == str(exported["expected"]["dqn-dict"][k].dtype)
               for k, v in container["outputs"].items())
    continuous = read_metadata(exported["paths"]["ppo", "torchscript"])
    assert continuous["outputs"] == {"actions": {"shape": [None, 1], "dtype": "float32"}}
    with pytest.raises(RLGraphExportError, match="no rlgraph policy export found"):
        read_metadata(str(exported["directory"] / "manifest.json"))


# --- More agents, in process ---------------------------------------------------------------------------
def _continuous_spec(kind):
    bounded = FloatBox(low=-2.0, high=2.0, shape=(2,))
    if kind == "sac":
        return dict(type="sac", state_space=FloatBox(shape=(3,)), action_space=bounded, network_spec=SMALL_NET,
                    value_function_spec=SMALL_NET, memory_spec={"type": "replay-memory", "capacity": 16},
                    update_spec={"batch_size": 4}, execution_spec={"seed": 5})
    return dict(type=kind, state_space=FloatBox(shape=(3,)),  # "ddpg" or "td3".
                action_space=FloatBox(low=np.array([-2.0, 0.0], np.float32), high=np.array([2.0, 1.0], np.float32)),
                network_spec=SMALL_NET, critic_network_spec=SMALL_NET,
                memory_spec={"type": "replay-memory", "capacity": 16}, update_spec={"batch_size": 4},
                execution_spec={"seed": 6})


@pytest.mark.parametrize("kind", ["sac", "ddpg", "td3"])
def test_sac_and_ddpg_export_to_torchscript_and_savedmodel(backend, tmp_path, kind):
    _require("torchscript", "savedmodel")
    agent = Agent.from_spec(dict(_continuous_spec(kind), backend=backend))
    states = _flat_states(agent.state_space, 300, seed=7)["states"]
    expected = agent.get_action(states, use_exploration=False)
    assert expected.dtype == np.float32 and expected.shape == (300, 2)
    for format_ in ("torchscript", "savedmodel"):
        path = agent.export_policy(str(tmp_path / f"policy{SUFFIXES[format_]}"), format_)
        _assert_actions({"actions": load_and_run(format_, path, states, agent.state_space)}, {"actions": expected},
                        f"{backend} {kind} as {format_}")


def test_actor_critic_exports_to_onnx(backend, tmp_path):
    _require("onnx")
    agent = Agent.from_spec(dict(type="actor-critic", state_space=FloatBox(shape=(2,)), action_space=IntBox(3),
                                 network_spec=SMALL_NET, value_function_spec=SMALL_NET, execution_spec={"seed": 8},
                                 backend=backend))
    states = _flat_states(agent.state_space, 300, seed=8)["states"]
    path = agent.export_policy(str(tmp_path / "a2c.onnx"), "onnx")
    _assert_actions({"actions": load_and_run("onnx", path, states, agent.state_space)},
                    {"actions": agent.get_action(states, use_exploration=False)}, f"{backend} actor-critic as onnx")
    assert read_metadata(path)["agent"] == "ActorCriticAgent"


# --- Refusals ------------------------------------------------------------------------------------------
def test_unknown_format_and_non_bool_preprocessing_are_refused(backend, tmp_path):
    agent = _dqn(backend)
    with pytest.raises(RLGraphExportError) as info:
        agent.export_policy(str(tmp_path / "policy"), "tflite")
    message = str(info.value)
    assert "unknown export format 'tflite'" in message and all(repr(f) in message for f in FORMATS)
    assert sorted(POLICY_FORMATS) == sorted(FORMATS)
    with pytest.raises(RLGraphExportError, match=r"\(preprocessing\): preprocessing must be True or False"):
        agent.export_policy(str(tmp_path / "policy.pt"), "torchscript", preprocessing="yes")
    with pytest.raises(RLGraphExportError, match="preprocessing must be True or False"):
        agent.export_policy(str(tmp_path / "policy.pt"), "torchscript", preprocessing=1)
    assert os.listdir(tmp_path) == []


def test_a_stateful_preprocessor_exports_only_without_preprocessing(backend, tmp_path):
    format_ = _own_format(backend)
    _require(format_)
    agent = _dqn(backend, preprocessing_spec=[{"type": "sequence", "sequence_length": 2, "add_rank": False}])
    assert agent.preprocessed_state_space.shape == (8,)
    path = str(tmp_path / f"policy{SUFFIXES[format_]}")
    with pytest.raises(RLGraphExportError) as info:
        agent.export_policy(path, format_)
    assert "keeps state between calls" in str(info.value) and "preprocessing=False" in str(info.value)
    assert os.listdir(tmp_path) == []
    assert agent.export_policy(path, format_, preprocessing=False) == path
    metadata = read_metadata(path)
    assert metadata["preprocessing"] is False
    assert metadata["inputs"] == {"states": {"shape": [None, 8], "dtype": "float32"}}
    # The export takes preprocessed states (8 numbers: two stacked frames).
    preprocessed = _flat_states(agent.preprocessed_state_space, 200, seed=9)["states"]
    _assert_actions({"actions": load_and_run(format_, path, preprocessed, agent.preprocessed_state_space)},
                    {"actions": agent.get_action(preprocessed, apply_preprocessing=False, use_exploration=False)},
                    "export on preprocessed states")


def test_paths_that_are_not_exports_are_refused_and_exports_are_replaced(backend, tmp_path):
    format_ = _own_format(backend)
    _require(format_)
    agent = _dqn(backend)
    # A directory where a TorchScript file should go: refused, the directory is untouched.
    directory = tmp_path / "a-directory"
    directory.mkdir()
    (directory / "keep.txt").write_text("mine")
    with pytest.raises(RLGraphExportError, match="exists and is not a file"):
        agent.export_policy(str(directory), "torchscript")
    # A non-empty directory that is not a SavedModel export: refused, its files untouched.
    with pytest.raises(RLGraphExportError) as info:
        agent.export_policy(str(directory), "savedmodel")
    assert "not an rlgraph policy export" in str(info.value) and str(directory) in str(info.value)
    # A file that is not an export: refused and kept; a file where a SavedModel should go: refused.
    document = tmp_path / "notes.pt"
    document.write_bytes(b"not a policy")
    with pytest.raises(RLGraphExportError, match="not an rlgraph policy export"):
        agent.export_policy(str(document), "torchscript")
    with pytest.raises(RLGraphExportError, match="exists and is not a directory"):
        agent.export_policy(str(document), "savedmodel")
    assert _tree(directory) == {"keep.txt": b"mine"} and document.read_bytes() == b"not a policy"
    assert sorted(os.listdir(tmp_path)) == ["a-directory", "notes.pt"]

    # An earlier export at the path (TF: a SavedModel directory; PyTorch: a TorchScript file) is replaced
    # by the new one: other weights, other actions.
    path = str(tmp_path / f"policy{SUFFIXES[format_]}")
    states = _flat_states(agent.state_space, 200, seed=11)["states"]
    agent.export_policy(path, format_)
    before = _tree(path) if format_ == "savedmodel" else open(path, "rb").read()
    weights = agent.get_weights()
    rng = np.random.RandomState(12)
    agent.set_weights({k: (v + rng.normal(scale=0.5, size=v.shape)).astype(v.dtype) for k, v in weights.items()
                       if k.startswith(agent.policy_scope() + "/")})
    expected = agent.get_action(states, use_exploration=False)
    assert agent.export_policy(path, format_) == path
    after = _tree(path) if format_ == "savedmodel" else open(path, "rb").read()
    assert after != before
    _assert_actions({"actions": load_and_run(format_, path, states, agent.state_space)}, {"actions": expected},
                    "the replacing export")
    assert sorted(os.listdir(tmp_path)) == sorted(["a-directory", "notes.pt", os.path.basename(path)])
    assert _leftovers(tmp_path) == []


def test_an_export_that_does_not_reproduce_the_agent_is_not_written(backend, tmp_path, monkeypatch):
    format_ = _own_format(backend)
    _require(format_)
    agent = _dqn(backend)
    path = str(tmp_path / f"policy{SUFFIXES[format_]}")
    agent.export_policy(path, format_)  # A good export already at the path.
    before = _tree(path) if os.path.isdir(path) else open(path, "rb").read()
    api, _ = agent.greedy_policy_graph(True)
    # Every action shifted by one (mod 3), with the actions' dtype.
    monkeypatch.setattr(agent, "greedy_policy_graph", lambda preprocessing: (api, lambda out: (out[1] + 1) % 3),
                        raising=False)
    with pytest.raises(RLGraphExportError) as info:
        agent.export_policy(path, format_)
    assert "does not reproduce the agent's greedy actions" in str(info.value)
    assert "nothing was written" in str(info.value)
    assert (_tree(path) if os.path.isdir(path) else open(path, "rb").read()) == before
    assert sorted(os.listdir(tmp_path)) == [os.path.basename(path)] and _leftovers(tmp_path) == []


def test_an_agent_without_a_spec_exports_only_its_own_backends_formats(backend, tmp_path):
    _require("torchscript", "savedmodel")
    agent = DQNAgent(state_space=FloatBox(shape=(4,)), action_space=IntBox(3), network_spec=SMALL_NET,
                     memory_spec={"type": "replay-memory", "capacity": 16}, update_spec={"batch_size": 4},
                     backend=backend)
    assert agent.spec is None
    other = str(tmp_path / f"other{SUFFIXES[_other_format(backend)]}")
    with pytest.raises(RLGraphExportError) as info:
        agent.export_policy(other, _other_format(backend))
    assert "Agent.from_spec" in str(info.value)
    assert not os.path.lexists(other) and _leftovers(tmp_path) == []
    own = agent.export_policy(str(tmp_path / f"own{SUFFIXES[_own_format(backend)]}"), _own_format(backend))
    states = _flat_states(agent.state_space, 50, seed=13)["states"]
    _assert_actions({"actions": load_and_run(_own_format(backend), own, states, agent.state_space)},
                    {"actions": agent.get_action(states, use_exploration=False)}, "the constructor-built agent")


@pytest.mark.parametrize("extras", [dict(network_spec=[{"type": "dense", "units": 4, "activation": "tanh"},
                                                       {"type": "lstm", "units": 3}]),
                                    dict(network_spec=SMALL_NET, feed_previous_action_through_nn=True)],
                         ids=["lstm", "previous-action"])
def test_impala_with_internal_states_or_fed_back_actions_is_refused(backend, tmp_path, extras):
    format_ = _own_format(backend)
    _require(format_)
    agent = IMPALAAgent(state_space=FloatBox(shape=(4,)), action_space=IntBox(2), worker_sample_size=3,
                        backend=backend, **extras)
    path = str(tmp_path / f"policy{SUFFIXES[format_]}")
    with pytest.raises(RLGraphExportError) as info:
        agent.export_policy(path, format_)
    assert "carries internal states or the previous action/reward" in str(info.value)
    assert "feed_previous_action/reward_through_nn" in str(info.value)
    assert os.listdir(tmp_path) == []


def test_missing_onnx_packages_are_named(tmp_path, monkeypatch):
    import importlib.util
    agent = _dqn("pytorch")
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a, **k: None if name == "onnxscript"
                        else find_spec(name, *a, **k))
    with pytest.raises(RLGraphExportError) as info:
        agent.export_policy(str(tmp_path / "policy.onnx"), "onnx")
    message = str(info.value)
    assert "needs the package(s) onnxscript" in message and ".[export]" in message
    assert "onnx," not in message  # Only the missing package is named.
    assert os.listdir(tmp_path) == []


def test_a_clip_preprocessor_exports_to_onnx(tmp_path):
    """Regression: Clip read its dtype through a numpy view of a tensor, which torch.export's fake
    tensors (the ONNX exporter) do not have."""
    _require("onnx")
    agent = _dqn("pytorch", preprocessing_spec=[{"type": "clip", "min": -0.5, "max": 0.5}])
    states = _flat_states(agent.state_space, 100, seed=14)["states"]
    path = agent.export_policy(str(tmp_path / "clip.onnx"), "onnx")
    _assert_actions({"actions": load_and_run("onnx", path, states, agent.state_space)},
                    {"actions": agent.get_action(states, use_exploration=False)}, "clip as onnx")


# --- rlgraph export ------------------------------------------------------------------------------------
def _tiny_config(tmp_path):
    return tiny_config_file(tmp_path, "dqn_gridworld_4x4.json", num_timesteps=200, evaluation_interval=200,
                            log_interval=100, checkpoint_interval=200, stop_at_return=None)


def test_cli_export(capsys, tmp_path):
    _require("onnx", "torchscript")
    import onnxruntime
    from rlgraph.cli.main import main
    from rlgraph.execution.training import make_agent_and_env, resolve_config
    run = tmp_path / "run"
    assert main(["train", str(_tiny_config(tmp_path)), "--backend", "pytorch", "--seed", "1", "--output-dir", str(run),
                 "--no-progress"]) == 0
    capsys.readouterr()
    checkpoint = run / "checkpoints" / "final"
    out = tmp_path / "greedy.onnx"
    assert main(["export", str(checkpoint), "--format", "onnx", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith(f"rlgraph export: wrote the greedy policy as onnx to {out} ")
    assert "onnxruntime.InferenceSession(path)" in printed

    # The export acts like the checkpoint's agent (all 16 cells of the grid world).
    agent, _ = make_agent_and_env(resolve_config(str(checkpoint / "config.json")))
    agent.load_model(str(checkpoint))
    states = np.arange(16).astype(agent.state_space.dtype)
    session = onnxruntime.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == ["states"]
    (actions,) = session.run(None, {"states": states})
    expected = agent.get_action(states, use_exploration=False)
    assert actions.dtype == expected.dtype
    np.testing.assert_array_equal(actions, expected)
    agent.terminate()

    # The default path: next to the checkpoint.
    assert main(["export", str(checkpoint)]) == 0
    assert f"as torchscript to {run / 'checkpoints' / 'final-policy.pt'} " in capsys.readouterr().out
    assert read_metadata(str(run / "checkpoints" / "final-policy.pt"))["agent"] == "DQNAgent"

    # A wrong format: argparse's usage error; a directory that is not a checkpoint: exit 2 and why.
    with pytest.raises(SystemExit) as info:
        main(["export", str(checkpoint), "--format", "tflite"])
    assert info.value.code == 2 and "invalid choice: 'tflite'" in capsys.readouterr().err
    assert main(["export", str(tmp_path), "--format", "onnx", "--out", str(tmp_path / "x.onnx")]) == 2
    assert "has no manifest.json" in capsys.readouterr().err
    assert not (tmp_path / "x.onnx").exists()
