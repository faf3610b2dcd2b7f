"""`execution_spec.device` on both backends (rlgraph/utils/devices.py).

Each agent test runs on every device this machine has (the `device` fixture of tests/conftest.py):
the CPU always, the first GPU where the backend sees one; on a CPU-only machine the GPU cases are
skipped with that reason. On the device an agent's variables live there, it acts and learns
through the training worker, a checkpoint written there loads into an agent on the CPU with the same
greedy actions, and the same weights given the same batches update alike there and on the CPU
(runs are not compared across devices: a GPU's random generator draws other numbers than the
CPU's from the same seed). Names are checked, and a GPU the backend does not see is refused,
naming the key, rather than replaced by the CPU.
"""
import logging

import numpy as np
import pytest
from conftest import visible_gpus

from rlgraph.agents import Agent
from rlgraph.execution.run_config import make_agent_and_env, resolve_config
from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.utils.devices import check_device
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

NET = [{"type": "dense", "units": 8}]
# Shipped configs made small: a few hundred env steps with updates early and often.
RUNS = {
    "dqn": ("configs/dqn_cartpole.json", ["update_spec.steps_before_update=32", "update_spec.update_interval=16",
                                          "update_spec.update_steps=2", "update_spec.batch_size=16"]),
    "ppo": ("configs/ppo_cartpole.json", ["update_spec.batch_size=64", "update_spec.sample_size=16",
                                          "update_spec.num_epochs=2", "training_spec.num_environments=1"]),
    "sac": ("configs/sac_pendulum.json", ["update_spec.steps_before_update=32", "update_spec.batch_size=16",
                                          "observe_spec.buffer_size=16", "update_spec.update_interval=4"]),
}
STEPS = 160


def _on(agent, backend):
    """The device kind ("cpu"/"cuda") of every variable of `agent`."""
    records = agent.graph_executor._records().values()
    if backend == "pytorch":
        return {r.variable.device.type for r in records}
    return {"cuda" if "GPU" in r.variable.device else "cpu" for r in records}


def _make(name, backend, device, seed=3):
    path, overrides = RUNS[name]
    config = resolve_config(path, backend=backend, seed=seed, overrides=overrides + [
        f"execution_spec.device={device}", "execution_spec.torch_num_threads=1", "execution_spec.tf_num_threads=1"])
    return make_agent_and_env(config)


def _run(name, backend, device, seed=3):
    agent, env_spec = _make(name, backend, device, seed)
    worker = SingleThreadedWorker(agent, env_spec, seed=seed)
    result = worker.execute_timesteps(STEPS)
    worker.vector_env.terminate()
    return agent, result


def _weights(agent):
    return {k: v for k, v in agent.graph_executor.get_weights().items() if "memory" not in k}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_an_agent_acts_learns_and_stores_on_each_device(name, backend, device, tmp_path):
    agent, result = _run(name, backend, device)
    assert agent.num_updates > 0 and result["timesteps_executed"] >= STEPS
    assert _on(agent, backend) == {device}
    # A checkpoint written on the device loads into an agent on the CPU (and acts the same there).
    path = agent.store_model(str(tmp_path / "checkpoint"))
    loaded, _ = _make(name, backend, "cpu", seed=11)
    assert any(not np.array_equal(value, _weights(loaded)[key]) for key, value in _weights(agent).items())
    loaded.load_model(path)
    for key, value in _weights(agent).items():
        np.testing.assert_array_equal(_weights(loaded)[key], value, err_msg=key)
    states = np.random.RandomState(0).normal(size=(5,) + agent.state_space.shape).astype(np.float32)
    np.testing.assert_allclose(loaded.get_action(states, use_exploration=False),
                               agent.get_action(states, use_exploration=False), rtol=1e-4, atol=1e-5)


def test_the_same_weights_and_batches_update_alike_on_each_device(backend, device):
    """DQN's update is deterministic: an agent on `device` given the CPU agent's weights and the same
    three batches ends with the same weights (exactly on the CPU, within float tolerance on a GPU)."""
    agents = [_make("dqn", backend, where)[0] for where in ("cpu", device)]
    agents[1].graph_executor.set_weights(_weights(agents[0]))
    rng = np.random.RandomState(4)
    for _ in range(3):
        batch = dict(states=rng.normal(size=(16, 4)).astype(np.float32), actions=rng.randint(0, 2, size=16),
                     rewards=rng.uniform(-1, 1, size=16).astype(np.float32), terminals=rng.uniform(size=16) < 0.2,
                     next_states=rng.normal(size=(16, 4)).astype(np.float32))
        losses = [float(agent.update(batch)[0]) for agent in agents]
        np.testing.assert_allclose(losses[1], losses[0], rtol=1e-5 if device == "cpu" else 1e-3)
    expected, received = _weights(agents[0]), _weights(agents[1])
    assert sorted(expected) == sorted(received)
    for key in expected:
        if device == "cpu":
            np.testing.assert_array_equal(received[key], expected[key], err_msg=key)
        else:
            np.testing.assert_allclose(received[key], expected[key], rtol=1e-3, atol=1e-5, err_msg=key)


def _dqn(backend, **execution):
    return Agent.from_spec(dict(type="dqn", state_space=FloatBox(shape=(3,)), action_space=IntBox(2), network_spec=NET,
                                memory_spec={"type": "replay-memory", "capacity": 16},
                                execution_spec=dict(seed=1, **execution)), backend=backend)


def test_auto_takes_the_gpu_the_backend_sees_else_the_cpu(backend):
    agent = _dqn(backend)
    assert agent.execution_spec["device"] == "auto"
    expected = "cuda" if visible_gpus(backend) else "cpu"
    assert _on(agent, backend) == {expected}
    executor_device = str(agent.graph_executor.device)
    assert executor_device in (("cuda:0", "/GPU:0") if expected == "cuda" else ("cpu", "/CPU:0"))


@pytest.mark.parametrize("value", ["gpu", "cuda:x", "cuda:-1", "auto:0", "tpu", "", 0, None, ["cpu"]])
def test_a_name_that_is_not_a_device_is_refused(backend, value):
    with pytest.raises(RLGraphSpecError, match=r"execution_spec\.device must name a device") as error:
        _dqn(backend, device=value)
    assert repr(value) in str(error.value) and '"cuda:N"' in str(error.value)


def test_device_names_read_as_the_original_and_torch_write_them():
    assert [check_device(v, "test") for v in ("auto", "CPU", "cpu:0", "cuda", "cuda:1", "/device:GPU:2", "/cpu:0",
                                               "/gpu:0", "device:CPU:0", "/device:CPU:1", "cpu:2")] == \
        ["auto", "cpu", "cpu", "cuda", "cuda:1", "cuda:2", "cpu", "cuda:0", "cpu", "cpu:1", "cpu:2"]


def test_a_gpu_the_backend_does_not_see_is_refused_not_replaced(backend):
    visible = visible_gpus(backend)
    with pytest.raises(RLGraphSpecError, match=rf"execution_spec\.device asks for 'cuda:{visible}'") as error:
        _dqn(backend, device=f"cuda:{visible}")
    assert "sees no GPU" in str(error.value) if visible == 0 else f"sees {visible} GPU" in str(error.value)
    if visible == 0:
        with pytest.raises(RLGraphSpecError, match=r"asks for 'cuda', and .* sees no GPU"):
            _dqn(backend, device="cuda")


def test_the_originals_default_device_maps_onto_the_device(backend, caplog):
    with caplog.at_level(logging.WARNING, logger="rlgraph.agents.original_keys"):
        agent = _dqn(backend, default_device="/device:CPU:0")
    assert agent.execution_spec["device"] == "cpu" and _on(agent, backend) == {"cpu"}
    assert "execution_spec.default_device -> execution_spec.device ('cpu')" in caplog.text
    agent = _dqn(backend, gpu_spec={"gpus_enabled": False, "max_usable_gpus": 1})
    assert agent.execution_spec["device"] == "cpu"
    with pytest.raises(RLGraphSpecError, match="both given, with different values"):
        _dqn(backend, default_device="/device:CPU:0", device="cuda")
    if not visible_gpus(backend):  # A GPU named the original's way is refused like "cuda:0".
        with pytest.raises(RLGraphSpecError, match=r"asks for 'cuda:0'"):
            _dqn(backend, default_device="/device:GPU:0")


def test_a_components_own_device_on_the_executors_device_builds_and_computes(backend):
    """The reference's `Component(device=...)` naming the executor's device (the TF1 spelling too) is no
    placement; one naming a GPU the backend does not see is refused, naming the component (placement
    itself: tests/test_component_devices.py)."""
    from rlgraph.components.layers.nn.dense_layer import DenseLayer
    from rlgraph.tests import ComponentTest
    space = FloatBox(shape=(3,), add_batch_rank=True)
    layer = DenseLayer(units=2, device="/device:CPU:0", scope="here")
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend,
                         execution_spec={"device": "cpu", "seed": 1})
    assert test.graph_executor.placements == {}
    kernel = test.read_variable_values(layer.variable_registry["here/kernel"])
    np.testing.assert_allclose(test.test(("apply", np.ones((1, 3), np.float32))), np.ones((1, 3)) @ kernel, rtol=1e-6)
    visible = visible_gpus(backend)
    with pytest.raises(RLGraphSpecError, match=rf"far-away\(device\): device asks for 'cuda:{visible + 6}'"):
        ComponentTest(DenseLayer(units=2, device=f"/device:GPU:{visible + 6}", scope="far-away"),
                      input_spaces=dict(inputs=space), backend=backend, execution_spec={"device": "cpu"})
