"""Components on devices of their own (rlgraph/graphs/placement.py): the reference's
`Component(device=...)`, `memory_spec.device` and the original's `execution_spec.device_map`.

A placed component's variables live on its device and its graph functions run there, so an agent
with a placed component must compute exactly what the same agent computes on one device. That is
checked with real devices on both backends where the machine has them:
- TensorFlow, on any machine: the CPU split into two logical devices (in a subprocess, as the split
  must come before TensorFlow starts); a DQN's replay memory (`memory_spec.device`) or its policy
  (`device_map`, so gradients cross devices) on the second one gives bit-identical losses and weights
  to the unplaced agent, the memory's variables and ops are on the second device.
- PyTorch has one CPU device. On the CPU the executor's move-and-run path is checked by placing the
  memory on `torch.device("cpu", 0)`, which torch tells apart from the executor's `cpu` (so every
  argument is really moved, through the packed copies); on a GPU machine the memory is kept on the
  CPU while the networks train on the GPU (skipped elsewhere, with that reason).
A component that updates or reads another's variables (an optimizer) must share their device: refused
at build on both backends, naming it.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import visible_gpus

from rlgraph.agents import Agent
from rlgraph.components import Component
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.graphs.placement import component_devices
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NET = [{"type": "dense", "units": 8, "activation": "relu"}]


def _dqn_spec(backend, memory_device=None, **execution):
    memory = {"type": "replay-memory", "capacity": 64}
    if memory_device is not None:
        memory["device"] = memory_device
    return dict(type="dqn", state_space=FloatBox(shape=(4,)), action_space=IntBox(3), backend=backend,
                network_spec=NET, memory_spec=memory, observe_spec={"buffer_size": 8},
                update_spec={"batch_size": 8}, execution_spec={"seed": 5, "device": "cpu", **execution})


def _drive(agent, steps=40):
    """Acts, observes and updates from a fixed stream; returns what came out (actions, losses, weights)."""
    rng = np.random.default_rng(6)
    states = rng.standard_normal((steps + 1, 4)).astype(np.float32)
    out = [agent.get_action(states[:4], use_exploration=False)]
    for i in range(steps):
        agent.observe(states[i], int(i % 3), None, float(rng.random()), states[i + 1], i % 7 == 6)
        if i >= 16 and i % 4 == 0:
            out.append(agent.update())
    out.append(agent.get_action(states[:4], use_exploration=False))
    out.append(agent.get_weights())
    return out


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for key in sorted(value) for leaf in _leaves(value[key])]
    if isinstance(value, (tuple, list)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [np.asarray(value)]


# --- Which component goes where --------------------------------------------------------------------
def _tree():
    root = Component(scope="root")
    inner = Component(scope="inner", device="/device:CPU:1")
    inner.add_components(DenseLayer(units=2, scope="leaf"), DenseLayer(units=2, scope="own", device="cuda:0"))
    root.add_components(inner, DenseLayer(units=2, scope="other"))
    return root


def test_a_components_device_covers_its_sub_tree_unless_a_child_names_its_own():
    devices = {c.global_scope: name for c, name in component_devices(_tree(), None, "test").items()}
    assert devices == {"root/inner": "cpu:1", "root/inner/leaf": "cpu:1", "root/inner/own": "cuda:0"}


def test_device_map_names_components_by_scope_or_global_scope_and_wins_over_their_own():
    devices = component_devices(_tree(), {"root/other": "cuda:1", "inner": "cpu"}, "test")
    assert {c.global_scope: name for c, name in devices.items()} == {
        "root/other": "cuda:1", "root/inner": "cpu", "root/inner/leaf": "cpu", "root/inner/own": "cuda:0"}


@pytest.mark.parametrize("device_map, message", [
    ({"no-such-component": "cpu"}, r"execution_spec\.device_map names no component of the agent: 'no-such-component'"),
    ({"inner": "gpu"}, r"execution_spec\.device_map\['inner'\] must name a device"),
    (["inner", "cpu"], r"execution_spec\.device_map must map component scopes to devices"),
])
def test_a_device_map_that_names_no_component_or_no_device_is_refused(device_map, message):
    with pytest.raises(RLGraphSpecError, match=message):
        component_devices(_tree(), device_map, "test")


def test_a_components_device_that_is_not_a_device_is_refused_naming_the_component():
    root = Component(scope="root")
    root.add_components(DenseLayer(units=2, scope="odd", device="tpu:0"))
    with pytest.raises(RLGraphSpecError, match=r"root/odd\(device\): device must name a device"):
        component_devices(root, None, "test")


# --- Refusals at build, on both backends ---------------------------------------------------------------
def test_a_component_on_a_gpu_the_backend_does_not_see_is_refused_naming_it(backend):
    visible = visible_gpus(backend)
    with pytest.raises(RLGraphSpecError, match=rf"agent/replay-memory\(device\): device asks for 'cuda:{visible}'"):
        Agent.from_spec(_dqn_spec(backend, memory_device=f"cuda:{visible}"))
    with pytest.raises(RLGraphSpecError, match=r"names no component of the agent: 'replay'"):
        Agent.from_spec(_dqn_spec(backend, device_map={"replay": "cpu"}))


def test_a_logical_cpu_device_the_backend_does_not_have_is_refused(backend):
    expected = r"PyTorch has one CPU device" if backend == "pytorch" else r"TensorFlow has 1 logical CPU device"
    with pytest.raises(RLGraphSpecError, match=expected):
        Agent.from_spec(_dqn_spec(backend, memory_device="/device:CPU:1"))


def test_a_component_on_the_executors_own_device_is_not_placed(backend):
    """The reference's default `device="/device:CPU:0"` on a CPU executor: no placement, no cost."""
    agent = Agent.from_spec(_dqn_spec(backend, memory_device="/device:CPU:0"))
    assert agent.graph_executor.placements == {}
    assert agent.root_component.sub_components["replay-memory"]._placement is None


# --- PyTorch: the move-and-run path --------------------------------------------------------------------
def test_pytorch_a_placed_memory_moves_every_argument_and_computes_what_the_unplaced_one_does(monkeypatch):
    """`torch.device("cpu", 0)` is not `torch.device("cpu")` to torch, so a memory placed there has all
    its arguments moved (packed copies) and runs under its own device context, on real values."""
    import torch

    from rlgraph.graphs import pytorch_executor, torch_transfers
    moved = []
    real_move = torch_transfers.move_to

    def counting_move(structure, device):
        result = real_move(structure, device)
        moved.append(result is not structure)
        return result
    monkeypatch.setattr(pytorch_executor, "move_to", counting_move)
    monkeypatch.setattr(pytorch_executor.PyTorchExecutor, "_resolve_component_device",
                        lambda self, name, owner: torch.device("cpu", 0))
    placed = Agent.from_spec(_dqn_spec("pytorch", memory_device="cpu"))
    assert {k: p.device for k, p in placed.graph_executor.placements.items()} == \
        {"agent/replay-memory": torch.device("cpu", 0)}
    # Every other component moves what comes from elsewhere to the executor's device.
    others = {c._placement.device for c in placed.root_component.get_all_sub_components()
              if c.global_scope != "agent/replay-memory"}
    assert others == {torch.device("cpu")}
    # Their call-plan steps move nothing at run time where the build saw nothing come from elsewhere
    # (here: everything is a CPU tensor to torch, so no step of theirs pays for the check).
    home = next(c._placement for c in placed.root_component.get_all_sub_components() if c._placement.home)
    assert home.moving == set()
    assert any(moved)  # (The records inserted and the sampled indices came from elsewhere.)
    received, expected = _drive(placed), _drive(Agent.from_spec(_dqn_spec("pytorch")))
    for got, want in zip(_leaves(received), _leaves(expected)):
        np.testing.assert_array_equal(got, want)


CONTINUOUS = {name: (f"configs/{name}_pendulum.json", ["update_spec.steps_before_update=32", "update_spec.batch_size=16",
                                                       "observe_spec.buffer_size=16", "execution_spec.device=cpu"])
              for name in ("sac", "ddpg", "td3")}


def _worker_weights(name, backend, memory_device):
    from rlgraph.execution.run_config import make_agent_and_env, resolve_config
    from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
    path, overrides = CONTINUOUS[name]
    extra = [f"memory_spec.device={memory_device}"] if memory_device else []
    agent, env_spec = make_agent_and_env(resolve_config(path, backend=backend, seed=3, overrides=overrides + extra))
    worker = SingleThreadedWorker(agent, env_spec, seed=3)
    worker.execute_timesteps(120)
    worker.vector_env.terminate()
    return agent.graph_executor.get_weights(), sorted(agent.graph_executor.placements)


@pytest.mark.parametrize("name", sorted(CONTINUOUS))
def test_pytorch_a_placed_memory_learns_what_the_unplaced_one_does_in_every_off_policy_agent(name, monkeypatch):
    """SAC, DDPG, TD3 from their shipped configs through the training worker, memory moved as above."""
    import torch

    from rlgraph.graphs import pytorch_executor
    expected, _ = _worker_weights(name, "pytorch", None)
    monkeypatch.setattr(pytorch_executor.PyTorchExecutor, "_resolve_component_device",
                        lambda self, name, owner: torch.device("cpu", 0))
    received, placements = _worker_weights(name, "pytorch", "cpu")
    assert placements == ["agent/replay-memory"]
    assert sorted(received) == sorted(expected)
    for key in expected:
        np.testing.assert_array_equal(received[key], expected[key], err_msg=key)


def test_pytorch_variables_are_never_copied_to_a_placed_component(monkeypatch):
    """An optimizer placed away from the network it trains would update copies of the weights: refused
    at build, naming the optimizer."""
    import torch

    from rlgraph.graphs import pytorch_executor
    monkeypatch.setattr(pytorch_executor.PyTorchExecutor, "_resolve_component_device",
                        lambda self, name, owner: torch.device("cpu", 0))
    with pytest.raises(RLGraphSpecError, match=r"agent/adam-optimizer\(device\): .* receives variables that live on cpu"):
        Agent.from_spec(_dqn_spec("pytorch", device_map={"adam-optimizer": "cpu"}))


@pytest.mark.skipif(not visible_gpus("pytorch"), reason="torch sees no GPU on this machine (the CPU cases run)")
def test_pytorch_a_memory_on_the_host_while_the_networks_train_on_the_gpu(tmp_path):
    agent = Agent.from_spec(_dqn_spec("pytorch", memory_device="cpu", device="cuda"))
    devices = {k: r.variable.device.type for k, r in agent.graph_executor._records().items()}
    assert {d for k, d in devices.items() if "replay-memory" in k} == {"cpu"}
    assert {d for k, d in devices.items() if "replay-memory" not in k} == {"cuda"}
    # The sampled batch comes to the GPU: the steps that receive it keep their move.
    home = next(c._placement for c in agent.root_component.get_all_sub_components() if c._placement.home)
    assert home.moving
    out = _drive(agent)
    assert all(np.isfinite(leaf).all() for leaf in _leaves(out[1:-1]) if leaf.dtype.kind == "f")
    agent.store_model(str(tmp_path / "ckpt"))
    on_cpu = Agent.from_spec(_dqn_spec("pytorch"))
    on_cpu.load_model(str(tmp_path / "ckpt"))
    states = np.random.default_rng(1).standard_normal((8, 4)).astype(np.float32)
    np.testing.assert_array_equal(on_cpu.get_action(states, use_exploration=False),
                                  agent.get_action(states, use_exploration=False))


# --- TensorFlow: two logical CPU devices -----------------------------------------------------------------
_TF_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    sys.path.insert(0, sys.argv[1])
    from test_component_devices import _dqn_spec, _drive, _leaves
    from rlgraph.agents import Agent
    base = _leaves(_drive(Agent.from_spec(_dqn_spec("tf"))))
    report = {}
    try:
        Agent.from_spec(_dqn_spec("tf", device_map={"policy": "cpu:1"}))
    except Exception as error:
        report["refused"] = f"{type(error).__name__}: {error}"
    for name, spec in (("memory", _dqn_spec("tf", memory_device="/device:CPU:1")),
                       ("policy", _dqn_spec("tf", device_map={"policy": "cpu:1", "adam-optimizer": "cpu:1"}))):
        agent = Agent.from_spec(spec)
        out = _leaves(_drive(agent))
        executor = agent.graph_executor
        on_second = sorted(k for k, r in executor._records().items() if r.variable.device.endswith("CPU:1"))
        ops = {api: sum(op.device.endswith("CPU:1") for op in executor._concrete_function(api).graph.get_operations())
               for api in ("insert_records", "update_from_memory", "get_actions")}
        report[name] = dict(equal=len(out) == len(base) and all(np.array_equal(a, b) for a, b in zip(out, base)),
                            placements=sorted(executor.placements), on_second=on_second, ops=ops)
    from test_component_devices import _worker_weights
    expected, _ = _worker_weights("sac", "tf", None)
    received, placements = _worker_weights("sac", "tf", "cpu:1")
    report["sac"] = dict(equal=sorted(received) == sorted(expected) and
                         all(np.array_equal(received[k], expected[k]) for k in expected), placements=placements)
    compiled = Agent.from_spec(_dqn_spec("tf", memory_device="cpu:1", compile=True))
    report["xla"] = dict(equal=all(np.allclose(a, b, rtol=1e-5, atol=1e-6)
                                   for a, b in zip(_leaves(_drive(compiled)), base)),
                         status={api: entry["compiled"] for api, entry in compiled.graph_executor.compile_status.items()},
                         reason=compiled.graph_executor.compile_status["update_from_memory"]["reason"])
    print("REPORT" + json.dumps(report))
""")


@pytest.fixture(scope="module")
def tf_two_devices():
    pytest.importorskip("tensorflow", reason="the TF case needs the '.[tf]' extra")
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""),
               CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
    done = subprocess.run([sys.executable, "-c", _TF_SCRIPT, os.path.join(ROOT, "tests")], capture_output=True,
                          text=True, env=env, timeout=300, cwd=ROOT)
    lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    return json.loads(lines[0][len("REPORT"):])


def test_tf_a_memory_on_a_second_device_computes_what_one_device_does(tf_two_devices):
    report = tf_two_devices["memory"]
    assert report["equal"]
    assert report["placements"] == ["agent/replay-memory"]
    assert report["on_second"] and all("replay-memory" in name for name in report["on_second"])
    assert {"agent/replay-memory/index", "agent/replay-memory/size"} <= set(report["on_second"])
    # The memory's ops run there: inserting and sampling; acting does not touch the memory.
    assert report["ops"]["insert_records"] > 0 and report["ops"]["update_from_memory"] > 0
    assert report["ops"]["get_actions"] == 0


def test_tf_a_policy_and_its_optimizer_on_a_second_device_learn_what_one_device_does(tf_two_devices):
    """`device_map` places the online network and its optimizer on the second device, the loss and the
    target network stay on the first: values and gradients cross the devices."""
    report = tf_two_devices["policy"]
    assert report["equal"]
    assert "agent/policy" in report["placements"] and "agent/adam-optimizer" in report["placements"]
    assert all(p.startswith(("agent/policy", "agent/adam-optimizer")) for p in report["placements"])
    assert report["on_second"] and all(name.startswith(("agent/policy/", "agent/adam-optimizer/"))
                                       for name in report["on_second"])
    assert report["ops"]["get_actions"] > 0


def test_tf_an_optimizer_away_from_the_variables_it_updates_is_refused_naming_it(tf_two_devices):
    assert tf_two_devices["refused"].startswith("RLGraphSpecError: agent/adam-optimizer(device): a graph function "
                                                "of this component (on /CPU:0) receives variables that live on")


def test_tf_sac_with_its_memory_on_a_second_device_learns_what_one_device_does(tf_two_devices):
    assert tf_two_devices["sac"] == {"equal": True, "placements": ["agent/replay-memory"]}


def test_tf_with_placed_components_xla_is_off_with_the_reason(tf_two_devices):
    """XLA compiles a function for one device (and refuses variables elsewhere): `compile` runs every
    method uncompiled, saying why, and the agent computes what it computes without placement."""
    report = tf_two_devices["xla"]
    assert report["equal"] and report["status"] and not any(report["status"].values())
    assert report["reason"] == "XLA compiles for one device, and components live on others (agent/replay-memory)"


# --- Memories kept in host memory ----------------------------------------------------------------------
@pytest.mark.parametrize("memory", [{"type": "mem-prioritized-replay", "capacity": 64},
                                    {"type": "frame-replay", "capacity": 64}, None])
def test_a_memory_kept_in_host_memory_takes_the_cpu_as_its_device_and_refuses_a_gpu(backend, memory):
    """Numpy memories (and the on-policy rollout, `memory` None: a PPO agent) live in host memory:
    `memory_spec.device` "cpu" (any spelling) is what they do, anything else is refused, naming the key."""
    def make(device):
        if memory is None:
            return Agent.from_spec(dict(type="ppo", state_space=FloatBox(shape=(4,)), action_space=IntBox(2),
                                        backend=backend, network_spec=NET, memory_spec={"device": device},
                                        execution_spec={"device": "cpu"}))
        spec = _dqn_spec(backend)
        spec["memory_spec"] = dict(memory, device=device)
        return Agent.from_spec(spec)
    assert make("/device:CPU:0").graph_executor.placements == {}
    with pytest.raises(RLGraphSpecError, match=r"\(memory_spec\.device\): .* is kept in host memory \(numpy arrays\): "
                                               r"memory_spec\.device can only be the CPU"):
        make("cuda")
