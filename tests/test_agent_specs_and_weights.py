"""The `Agent` front end: spec errors, from_spec (dict, JSON, YAML), building, weights across
backends, export, import_observations, reset and terminate. Every test runs on both backends."""
import json
import os

import numpy as np
import pytest
import yaml

from agent_helpers import CARTPOLE_CONFIG, NET, _agent, _memory, _random_batch, _spec, _states, _target_q
from rlgraph.agents import Agent, DQNAgent
from rlgraph.backend_system import is_backend_installed
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphExportError, RLGraphSpecError


def test_spec_errors(backend):
    spec = dict(_spec(backend), type="dqn")
    with pytest.raises(RLGraphSpecError, match="bogus") as info:
        Agent.from_spec(dict(spec, bogus=1))
    assert "network_spec" in str(info.value) and "update_spec" in str(info.value)  # Lists the valid keys.
    with pytest.raises(RLGraphSpecError, match="sync_intervall") as info:
        Agent.from_spec(dict(spec, update_spec={"sync_intervall": 3}))
    assert "sync_interval'" in str(info.value) and "batch_size" in str(info.value)
    with pytest.raises(RLGraphSpecError, match="buffer_sise"):
        Agent.from_spec(dict(spec, observe_spec={"buffer_sise": 3}))
    with pytest.raises(RLGraphSpecError, match="state_space"):
        Agent.from_spec(dict(spec, state_space=None))
    with pytest.raises(RLGraphSpecError, match="discrete"):
        Agent.from_spec(dict(spec, action_space=FloatBox(shape=(2,))))
    with pytest.raises(RLGraphSpecError, match="discrete"):
        Agent.from_spec(dict(spec, action_space=Dict(x=IntBox(2), y=FloatBox())))
    with pytest.raises(RLGraphSpecError, match="n_step"):
        Agent.from_spec(dict(spec, n_step=0))
    with pytest.raises(RLGraphSpecError, match="batch_size"):
        Agent.from_spec(dict(spec, update_spec={"batch_size": 0}))
    with pytest.raises(RLGraphSpecError, match="network_spec"):
        Agent.from_spec(dict(spec, network_spec=None))


def test_missing_state_space_is_a_spec_error(backend):
    spec = dict(_spec(backend), type="dqn")
    del spec["state_space"]
    with pytest.raises(RLGraphSpecError, match="state_space"):
        Agent.from_spec(spec)


def test_update_batch_missing_keys(backend):
    agent = _agent(backend)
    batch = _random_batch(np.random.RandomState(9), 3)
    del batch["rewards"], batch["next_states"]
    with pytest.raises(RLGraphError, match="rewards") as info:
        agent.update(batch)
    assert "next_states" in str(info.value)
    assert agent.num_updates == 0
    with pytest.raises(RLGraphError, match="no root API method"):
        agent.call_api_method("get_q_valuez", [np.zeros((1, 4), np.float32)])


def test_from_spec_dict_json_yaml_and_overrides(backend, tmp_path):
    spec = {"type": "dqn", "discount": 0.7, "network_spec": NET, "dueling_q": False, "huber_loss": True,
            "memory_spec": {"type": "replay-memory", "capacity": 8}, "update_spec": {"batch_size": 2},
            "execution_spec": {"seed": 2}, "backend": "not-used",
            "environment_spec": {"type": "grid-world"}, "training_spec": {"num_timesteps": 10}}
    json_file, yaml_file = tmp_path / "agent.json", tmp_path / "agent.yaml"
    json_file.write_text(json.dumps(spec))
    yaml_file.write_text(yaml.safe_dump(spec))
    q_values = []
    for source in (spec, str(json_file), str(yaml_file)):
        agent = Agent.from_spec(source, state_space=FloatBox(shape=(2,)), action_space=IntBox(5), backend=backend)
        assert isinstance(agent, DQNAgent) and agent.backend == backend
        assert agent.discount == 0.7 and agent.huber_loss and not agent.dueling_q
        assert agent.update_spec["batch_size"] == 2 and agent.update_spec["sync_interval"] == 32  # + defaults
        assert agent.state_space.shape == (2,) and agent.action_space.num_categories == 5
        assert "environment_spec" not in agent.spec and "state_space" not in agent.spec
        assert agent.spec["discount"] == 0.7
        q_values.append(agent.get_q_values(np.ones(2, np.float32)))
    assert q_values[0].shape == (5,)
    # Same seed, same spec: the same network from all three sources.
    np.testing.assert_array_equal(q_values[0], q_values[1])
    np.testing.assert_array_equal(q_values[0], q_values[2])


def test_shipped_cartpole_config_builds(backend):
    agent = Agent.from_spec(CARTPOLE_CONFIG, state_space=FloatBox(shape=(4,)), action_space=IntBox(2),
                            backend=backend)
    assert isinstance(agent, DQNAgent) and agent.discount == 0.99 and agent.double_q and agent.huber_loss
    assert agent.update_spec["batch_size"] == 64 and agent.observe_spec["buffer_size"] == 32
    assert agent.max_timesteps == 50000
    state = np.array([0.01, -0.02, 0.03, 0.04], np.float32)
    assert agent.get_action(state) in (0, 1)
    assert agent.get_q_values(state).shape == (2,)


def test_auto_build_false_then_build_once(backend):
    agent = _agent(backend, auto_build=False)
    assert agent.graph_executor is None
    with pytest.raises(RLGraphError, match="not built"):
        agent.get_action(np.zeros(4, np.float32))
    stats = agent.build()
    assert stats is not None and agent.graph_executor is not None
    assert agent.get_action(np.zeros(4, np.float32), use_exploration=False) in (0, 1, 2)
    # The target starts as a copy of the policy.
    probe = _states(2)
    np.testing.assert_allclose(_target_q(agent, probe), agent.get_q_values(probe), rtol=1e-6)
    with pytest.raises(RLGraphError, match="already built"):
        agent.build()


# --- Weights, export, imports, lifecycle ---------------------------------------------------------------------


def test_weights_move_between_backends(backend):
    other = "tf" if backend == "pytorch" else "pytorch"
    if not is_backend_installed(other):
        pytest.skip(reason=f"needs both backends; {other!r} is not installed")
    source = _agent(backend, execution_spec={"seed": 11})
    target = _agent(other, execution_spec={"seed": 12})
    probe = np.random.RandomState(10).normal(size=(6, 4)).astype(np.float32)
    assert not np.allclose(source.get_q_values(probe), target.get_q_values(probe))
    weights = source.get_weights()
    assert sorted(weights) == sorted(k for k in source.graph_executor.get_weights() if "/policy/" in k
                                     and "target" not in k)
    target.set_weights(weights)
    np.testing.assert_allclose(target.get_q_values(probe), source.get_q_values(probe), atol=1e-5)
    np.testing.assert_array_equal(target.get_action(probe, use_exploration=False),
                                  source.get_action(probe, use_exploration=False))


def test_set_weights_shapes_names_and_rate(backend):
    agent = _agent(backend)
    weights = agent.get_weights()
    kernel = next(k for k in weights if k.endswith("dense/kernel"))
    with pytest.raises(RLGraphError, match="wrong shape"):
        agent.set_weights({kernel: np.zeros((3, 8), np.float32)})
    np.testing.assert_array_equal(agent.get_weights()[kernel], weights[kernel])
    with pytest.raises(RLGraphError, match="no variable named"):
        agent.set_weights({"agent/policy/nope": np.zeros(1)})
    with pytest.raises(RLGraphError, match="rate"):
        agent.set_weights({kernel: weights[kernel]}, rate=1.5)
    # rate 0.25: new = 0.25 * given + 0.75 * old.
    agent.set_weights({kernel: np.ones((4, 8), np.float32)}, rate=0.25)
    np.testing.assert_allclose(agent.get_weights([kernel])[kernel], 0.25 + 0.75 * weights[kernel], rtol=1e-6)


def test_export_graph(backend, tmp_path):
    agent = _agent(backend)
    # TF: a SavedModel directory (its default format); PyTorch: one pickled module file, only by name.
    path = agent.export_graph(str(tmp_path / "exported"), format="pickled-module" if backend == "pytorch" else None)
    assert str(path) == str(tmp_path / "exported")
    if backend == "tf":
        assert os.path.isfile(os.path.join(path, "saved_model.pb"))
    else:
        assert os.path.isfile(path) and os.path.getsize(path) > 0


def test_export_graph_formats_each_backend_refuses(backend, tmp_path):
    agent = _agent(backend)
    target = tmp_path / "exported"
    if backend == "pytorch":
        # No format: refused, naming the legacy format and the policy export that replaces it.
        with pytest.raises(RLGraphExportError) as info:
            agent.export_graph(str(target))
        assert "pickled-module" in str(info.value) and "export_policy" in str(info.value)
    else:
        with pytest.raises(RLGraphExportError) as info:
            agent.export_graph(str(target), format="pickled-module")
        assert "savedmodel" in str(info.value) and "pickled-module" in str(info.value)
    with pytest.raises(RLGraphExportError):
        agent.export_graph(str(target), format="onnx")  # (export_policy's formats are not export_graph's.)
    assert not os.path.lexists(target)


def test_import_observations(backend):
    agent = _agent(backend)
    s = _states(6)
    agent.import_observations(dict(states=s[:3], actions=np.array([2, 1, 0]), rewards=[1.0, 2.0, 3.0],
                                   next_states=s[1:4], terminals=[False, False, True]))
    assert agent.memory_size() == 3 and agent.timesteps == 0  # Not counted as env steps.
    agent.import_observations([dict(states=s[3:5], actions=np.array([0, 0]), rewards=[4.0, 5.0],
                                    next_states=s[4:6], terminals=[False, False])] * 2)
    assert agent.memory_size() == 7
    stored = _memory(agent)
    np.testing.assert_array_equal(stored["states"][:, 0], [0, 1, 2, 3, 4, 3, 4])
    np.testing.assert_array_equal(stored["actions"], [2, 1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(stored["terminals"], [False, False, True, False, False, False, False])
    with pytest.raises(RLGraphError, match="lack"):
        agent.import_observations(dict(states=s[:1], actions=np.array([0])))
    assert agent.memory_size() == 7


def test_reset_and_terminate(backend):
    agent = _agent(backend)
    agent.reset()  # No stateful preprocessor: nothing to do, no error.
    state = np.zeros(4, np.float32)
    action = agent.get_action(state, use_exploration=False)
    assert action == agent.get_action(state, use_exploration=False)
    assert "DQNAgent" in repr(agent) and backend in repr(agent)
    agent.terminate()
    assert agent.graph_executor is None
    with pytest.raises(RLGraphError, match="not built"):
        agent.get_action(state)
    agent.terminate()  # Twice is harmless.
