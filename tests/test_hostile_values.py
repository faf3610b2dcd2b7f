"""Hostile values (issue 34, items 15-17): data that overflows float32, nonsense that used to be
accepted silently, and inputs that used to end in a raw traceback instead of an `RLGraphError`.

Each test failed before its fix. Agents are small (agent_helpers: one dense layer of 8 units) and
most checks fail before any graph is built (`auto_build=False`).
"""
import json
import os
import zipfile

import numpy as np
import pytest

from agent_helpers import _agent, _random_batch, _spec
from config_helpers import ROOT
from rlgraph.agents import Agent, DQNAgent
from rlgraph.agents.impala.rollouts import check_rollout
from rlgraph.agents.policy_export_format import METADATA_NAME, read_metadata
from rlgraph.cli.main import main
from rlgraph.components import Component
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.components.memories.mem_prioritized_replay import MemPrioritizedReplay
from rlgraph.components.memories.prioritized_replay import PrioritizedReplay
from rlgraph.components.neural_networks import NeuralNetwork
from rlgraph.execution.ray.specs import split_ray_spec
from rlgraph.execution.run_config import make_agent_and_env, resolve_config
from rlgraph.spaces import FloatBox, IntBox, Space
from rlgraph.utils.rlgraph_errors import (RLGraphError, RLGraphExportError, RLGraphNonFiniteError, RLGraphSpaceError,
                                          RLGraphSpecError)
from rlgraph.utils.spec_files import load_spec_file

NAN, INF = float("nan"), float("inf")
STATE = np.zeros(4, np.float32)


def _unbuilt(**overrides):
    """A DQN agent on PyTorch whose spec checks ran (construction only: nothing is built)."""
    return DQNAgent(**_spec("pytorch", auto_build=False, **overrides))


def _all_state(agent):
    """Every variable (weights, target, optimizer slots, memory) and the counters."""
    counters = (agent.timesteps, agent.num_updates, agent.last_sync_timestep, agent.memory_size(),
                agent.buffers.pending())
    return agent.graph_executor.get_weights(), counters


def _assert_unchanged(agent, before):
    weights, counters = _all_state(agent)
    assert counters == before[1]
    assert sorted(weights) == sorted(before[0])
    for name, value in weights.items():
        np.testing.assert_array_equal(value, before[0][name], err_msg=name)


# --- 15. Finite float64 values that overflow float32 -------------------------------------------------
def test_observe_refuses_float64_values_that_overflow_float32(backend):
    agent = _agent(backend)
    big = np.full(4, 1e39)  # Finite in float64, inf in float32 (the memory's dtype).
    calls = {
        "rewards": lambda: agent.observe(STATE, 1, None, 1e39, STATE, False),
        "rewards ": lambda: agent.observe(STATE, 1, None, np.float64(-1e39), STATE, False),
        "preprocessed_states": lambda: agent.observe(big, 1, None, 1.0, STATE, False),
        "next_states": lambda: agent.observe(STATE, 1, None, 1.0, big, True),
        "rewards  ": lambda: agent.observe(np.zeros((2, 4)), np.ones(2, int), None, np.array([1.0, 1e39]),
                                           np.zeros((2, 4)), np.zeros(2, bool)),
        "preprocessed_states ": lambda: agent.observe(np.stack([STATE, big]), np.ones(2, int), None, np.ones(2),
                                                      np.zeros((2, 4)), np.zeros(2, bool)),
    }
    for argument, call in calls.items():
        with pytest.raises(RLGraphNonFiniteError, match="overflows float32") as info:
            call()
        assert info.value.where == f"agent.observe({argument.strip()})", argument
    assert (agent.timesteps, agent.buffers.pending(), agent.memory_size()) == (0, 0, 0)  # Nothing was stored.
    agent.observe(np.full(4, 3e38), 1, None, -3e38, STATE, True)  # float64 values that fit float32 pass.
    assert agent.memory_size() == 1 and np.isfinite(agent.get_q_values(STATE)).all()
    agent.terminate()


def test_update_from_an_overflowing_batch_changes_nothing(backend):
    """The batch is checked before the target sync and the optimizer step, after the cast: nothing
    changes (weights, target, optimizer slots, counters). Before, the step ran and left NaN weights."""
    agent = _agent(backend, update_spec={"batch_size": 4, "sync_interval": 2})
    rng = np.random.RandomState(0)
    for i in range(3):  # A target sync is due at the next update.
        agent.observe(rng.normal(size=4).astype(np.float32), i % 3, None, 1.0, STATE, False)
    before = _all_state(agent)
    for field, value in (("states", np.full((4, 4), 1e39)), ("rewards", np.array([0.0, 1e39, 0.0, 0.0])),
                         ("next_states", np.full((4, 4), -1e39))):
        batch = dict(_random_batch(rng, 4), **{field: value})
        with pytest.raises(RLGraphNonFiniteError, match=rf"agent\.update\(batch\)\['{field}'\].*overflows float32"):
            agent.update(batch)
        _assert_unchanged(agent, before)
    loss, _ = agent.update(_random_batch(rng, 4))  # A good batch still updates.
    assert np.isfinite(loss) and agent.num_updates == 1 and agent.last_sync_timestep == 3
    agent.terminate()


def test_impala_rollouts_are_checked_in_float32():
    keys = ("states", "actions", "rewards", "terminals")
    rollout = {"states": np.zeros((2, 3, 4)), "actions": np.zeros((2, 3), int), "rewards": np.zeros((2, 3)),
               "terminals": np.zeros((2, 3), bool)}
    assert check_rollout(rollout, keys, 3, "w")["rewards"].dtype == np.float32
    with pytest.raises(RLGraphSpaceError, match="rewards must be finite in float32"):
        check_rollout(dict(rollout, rewards=np.full((2, 3), 1e39)), keys, 3, "w")
    with pytest.raises(RLGraphSpaceError, match="rewards must be numbers"):
        check_rollout(dict(rollout, rewards=[[1, 10 ** 400, 1], [1, 1, 1]]), keys, 3, "w")
    with pytest.raises(RLGraphNonFiniteError, match="'states' holds NaN or inf"):
        check_rollout(dict(rollout, states=np.full((2, 3, 4), -1e39)), keys, 3, "w")


# --- 16. Nonsense that was accepted ----------------------------------------------------------------
@pytest.mark.parametrize("key", ["double_q", "dueling_q", "huber_loss", "store_last_memory_batch",
                                 "store_last_q_table"])
@pytest.mark.parametrize("value", [NAN, INF, -1, 1, 0, "true", None])
def test_dqn_flags_must_be_booleans(key, value):
    with pytest.raises(RLGraphSpecError, match=f"{key} must be true or false") as info:
        _unbuilt(**{key: value})
    assert info.value.where == f"DQNAgent({key})"
    _unbuilt(**{key: np.bool_(key != "store_last_memory_batch")})  # (numpy bools are bools.)


@pytest.mark.parametrize("spec", [INF, -INF, NAN, 1e39, True, [0.5, INF], np.array([1e39]), "x",
                                  {"type": "constant", "value": INF}, {"type": "normal", "stddev": NAN},
                                  {"type": "uniform", "maxval": "1"}, {"type": "fan_in_uniform", "gain": 1e39}])
def test_initializers_must_be_finite_in_float32(spec):
    for key in ("weights_spec", "biases_spec"):
        with pytest.raises(RLGraphSpecError) as info:
            DenseLayer(units=2, **{key: spec})
        assert info.value.where.startswith("DenseLayer(") and key in info.value.where
    # Through a config file: JSON's Infinity is a float inf.
    with pytest.raises(RLGraphSpecError, match=r"DenseLayer\(weights_spec\)"):
        _unbuilt(network_spec=json.loads('[{"type": "dense", "units": 8, "weights_spec": Infinity}]'))


def test_initializer_values_that_stay_valid(backend):
    """Constants are documented initializers: -1, 0 and 1e30 (finite in float32) build; False: no bias."""
    for weights, biases in ((-1, 0), (1e30, False), ([[0.5, -0.5]] * 4, np.zeros(2))):
        agent = _agent(backend, network_spec=[{"type": "dense", "units": 2, "weights_spec": weights,
                                               "biases_spec": biases}])
        kernel = agent.get_weights()["agent/policy/neural-network/dense/kernel"]
        np.testing.assert_array_equal(kernel, np.broadcast_to(np.float32(weights), (4, 2)))
        agent.terminate()


def test_observe_refuses_env_ids_that_checkpoints_cannot_store(tmp_path):
    agent = _agent("pytorch")
    for env_id in (object(), 1.5, NAN, frozenset({1}), (1, object()), b"bytes", ((((((((((1,),),),),),),),),),)):
        with pytest.raises(RLGraphSpecError, match=r"observe\(env_id\): env_id is of a type") as info:
            agent.observe(STATE, 1, None, 1.0, STATE, False, env_id=env_id)
        assert "None, a bool, an int, a str or a tuple of them" in str(info.value)
    with pytest.raises(RLGraphSpecError, match="env_id must be hashable"):
        agent.observe(STATE, 1, None, 1.0, STATE, False, env_id=[1])
    assert agent.timesteps == 0 and agent.buffers.pending() == 0
    for env_id in (None, True, 3, np.int64(4), "a", (1, "b", (None, False))):
        agent.observe(STATE, 1, None, 1.0, STATE, False, env_id=env_id)
    agent.store_model(str(tmp_path / "checkpoint"))  # Every accepted env id can be stored.
    assert agent.buffers.pending() == 6
    agent.terminate()


def test_other_keys_reviewed_with_the_dqn_flags():
    """Found by the config sweep and the review of the agents' boolean and number keys."""
    cases = [
        (r"PPOAgent\(weight_entropy\).*stay >= 0", dict(type="ppo", weight_entropy=-0.01)),
        (r"PPOAgent\(weight_entropy\).*stay >= 0", dict(type="ppo", weight_entropy=["linear", 0.01, -0.01])),
        (r"IMPALAAgent\(architecture\)", dict(type="impala", architecture="huge")),
        (r"IMPALALossFunction\(weight_pg\).*finite", dict(type="impala", weight_pg=NAN)),
        (r"IMPALALossFunction\(weight_entropy\).*finite", dict(type="impala", weight_entropy=INF)),
        (r"DQNAgent\(execution_spec.torch_num_threads\)", dict(type="dqn", execution_spec={"torch_num_threads": 1e30})),
        (r"DQNAgent\(execution_spec.tf_num_threads\)", dict(type="dqn", execution_spec={"tf_num_threads": 5000})),
        (r"DQNAgent\(update_spec.batch_size\).*64-bit", dict(type="dqn", update_spec={"batch_size": 1e30})),
        (r"PrioritizedReplay\(alpha\)", dict(type="dqn", memory_spec={"type": "prioritized-replay", "alpha": 1e30})),
        (r"MemPrioritizedReplay\(beta\)", dict(type="dqn", memory_spec={"type": "mem-prioritized-replay",
                                                                        "beta": 1.5})),
        (r"ReShape\(flatten\)", dict(type="dqn", preprocessing_spec=[{"type": "reshape", "flatten": NAN}])),
        (r"DenseLayer\(scope\)", dict(type="dqn", network_spec=[{"type": "dense", "units": 2, "scope": 0}])),
        (r"ActorCriticLossFunction|weight_vf", dict(type="actor-critic", weight_vf=INF)),
    ]
    for pattern, spec in cases:
        with pytest.raises(RLGraphSpecError, match=pattern):
            Agent.from_spec(dict(spec, state_space=FloatBox(shape=(4,)), action_space=IntBox(2),
                                 network_spec=spec.get("network_spec", [{"type": "dense", "units": 8}]),
                                 backend="pytorch", auto_build=False))
    assert PrioritizedReplay(alpha=1.0, beta=0.0).alpha == 1.0 and MemPrioritizedReplay(alpha=0.0, beta=1.0).beta == 1.0


# --- 17. Raw tracebacks ------------------------------------------------------------------------------
def test_a_reward_too_large_for_a_float(backend):
    agent = _agent(backend)
    with pytest.raises(RLGraphNonFiniteError, match=r"agent\.observe\(rewards\): reward too large for a float") \
            as info:
        agent.observe(STATE, 1, None, 10 ** 400, STATE, False)
    assert "an int of 401 digits" in str(info.value)
    with pytest.raises(RLGraphSpaceError, match=r"agent\.observe\(rewards\)"):
        agent.observe(np.zeros((2, 4)), np.ones(2, int), None, [1, -10 ** 400], np.zeros((2, 4)), np.zeros(2, bool))
    with pytest.raises(RLGraphError, match=r"\['rewards'\]"):
        agent.update(dict(_random_batch(np.random.RandomState(0), 2), rewards=[10 ** 400, 0]))
    assert agent.timesteps == 0 and agent.num_updates == 0
    agent.terminate()


def test_truncated_is_one_bool():
    agent = _agent("pytorch")
    for truncated in (np.array([True, False]), "yes", 2, [True]):
        with pytest.raises(RLGraphSpaceError, match=r"agent\.observe\(truncated\): truncated must be one bool"):
            agent.observe(STATE, 1, None, 1.0, STATE, False, truncated=truncated)
    assert agent.timesteps == 0
    for truncated in (np.bool_(True), 1, np.array(False), 0.0):
        agent.observe(STATE, 1, None, 1.0, STATE, False, truncated=truncated)
    assert agent.timesteps == 4 and agent.memory_size() == 2  # (Two episodes ended by truncation.)
    agent.terminate()


def test_time_percentage_must_be_a_finite_number(backend):
    agent = _agent(backend, update_spec={"batch_size": 2})
    for i in range(2):
        agent.observe(STATE, i, None, 1.0, STATE, True)
    before = _all_state(agent)
    for value in ("x", NAN, INF, True, [0.5], {"t": 0.5}):
        with pytest.raises(RLGraphSpecError, match=r"agent\.update\(time_percentage\): time_percentage must be"):
            agent.update(time_percentage=value)
        with pytest.raises(RLGraphSpecError, match=r"agent\.update\(time_percentage\)"):
            agent.update(_random_batch(np.random.RandomState(0), 2), time_percentage=value)
        with pytest.raises(RLGraphSpecError, match=r"agent\.get_action\(time_percentage\)"):
            agent.get_action(STATE, time_percentage=value)
    _assert_unchanged(agent, before)
    agent.update(time_percentage=np.float64(0.5))
    agent.update(time_percentage=2)  # (Beyond [0, 1]: schedules clip it.)
    assert agent.num_updates == 2
    agent.terminate()


def test_positional_args_must_be_a_list():
    with pytest.raises(RLGraphSpecError, match=r'Space.from_spec\(_args\): "_args" must be a list'):
        Space.from_spec({"type": "float-box", "_args": 5})
    assert Space.from_spec({"type": "float-box", "_args": (0.0, 1.0)}).high == 1.0


def test_a_dotted_type_of_1000_parts():
    for path in (".".join(["a"] * 1000), ".".join(["rlgraph"] * 1000), ".".join(["os"] * 33)):
        with pytest.raises(RLGraphSpecError, match="malformed dotted path"):
            Component.from_spec({"type": path})


def test_spec_files_that_reference_themselves(tmp_path):
    self_file = tmp_path / "self.json"
    self_file.write_text(json.dumps(str(self_file)))  # The spec is the file's own path.
    a, b = tmp_path / "a.yaml", tmp_path / "b.json"
    a.write_text(json.dumps([str(b)]))  # A network whose one layer is b, whose spec is a.
    b.write_text(json.dumps(str(a)))
    for build, path in ((Space.from_spec, self_file), (NeuralNetwork.from_spec, a), (NeuralNetwork.from_spec, b)):
        with pytest.raises(RLGraphSpecError, match="spec file references itself"):
            build(str(path))
    # A network spec in a file of its own still works, also twice in one agent.
    net = tmp_path / "net.json"
    net.write_text(json.dumps([{"type": "dense", "units": 8}]))
    config = tmp_path / "agent.json"
    config.write_text(json.dumps(dict(type="dqn", network_spec=str(net), state_space={"type": "float-box",
                                      "shape": [4]}, action_space={"type": "int-box", "high": 2},
                                      backend="pytorch", auto_build=False)))
    assert Agent.from_spec(str(config)).network_spec == str(net)


def test_spec_keys_must_be_strings(tmp_path):
    yaml_file = tmp_path / "agent.yaml"
    yaml_file.write_text("type: dqn\n1: 2\n")
    with pytest.raises(RLGraphSpecError, match=r"a YAML mapping key is not a string \(line 2\)"):
        load_spec_file(str(yaml_file))
    with pytest.raises(RLGraphSpecError, match="YAML mapping key"):
        Agent.from_spec(str(yaml_file))
    for key in ("on", "null", "1.5", "[a, b]"):  # (YAML 1.1 reads on: as a bool key.)
        yaml_file.write_text(f"type: dqn\nupdate_spec:\n  {key}: 2\n")
        with pytest.raises(RLGraphSpecError, match="not a string"):
            resolve_config(str(yaml_file), env="CartPole-v1")
    yaml_file.write_text('type: dqn\n"1": 2\nx: &a {b: 1}\ny:\n  <<: *a\n')  # Quoted keys and merges are fine.
    assert load_spec_file(str(yaml_file))["y"] == {"b": 1}
    # Python dicts with non-string keys: the agent config, a sub-spec, a component spec.
    for spec in ({1: 2}, {"update_spec": {1: 2}}, {"update_spec": {"batch_size": 4, None: 1}},
                 {"network_spec": [{"type": "dense", "units": 2, 3: 4}]}):
        with pytest.raises(RLGraphSpecError, match="must be strings"):
            Agent.from_spec({**_spec("pytorch", auto_build=False), "type": "dqn", **spec})


def test_scope_must_be_a_string():
    for scope in (NAN, 5, ["a"], {"b": 1}):
        with pytest.raises(RLGraphSpecError, match=r"DenseLayer\(scope\): scope must be a string"):
            Component.from_spec({"type": "dense", "units": 2, "scope": scope})
    with pytest.raises(RLGraphSpecError, match=r"DenseLayer\(name\)"):
        DenseLayer(units=2, name=3)
    assert DenseLayer(units=2, scope="hidden").scope == "hidden"


def test_apex_n_step_must_be_an_integer():
    config = load_spec_file(os.path.join(ROOT, "configs", "apex_cartpole.json"))
    for n_step in ("x", NAN, 0, 2.5, True):
        with pytest.raises(RLGraphSpecError, match=r"ApexAgent\(n_step\)"):
            split_ray_spec(dict(config, n_step=n_step))
    assert split_ray_spec(dict(config, n_step=3.0))[1]["worker_spec"]["n_step_adjustment"] == 3


def _zip_with_metadata(path, text):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"model/extra/{METADATA_NAME}", text)


def test_export_onto_a_zip_holding_deeply_nested_json(tmp_path, capsys):
    target = tmp_path / "policy.pt"
    for text in ("[" * 100000 + "]" * 100000, '{"a": ' * 40 + "1" + "}" * 40, "\xff not json", "[1, 2]"):
        _zip_with_metadata(target, text)
        with pytest.raises(RLGraphExportError, match=r"read_metadata: the export's description is not"):
            read_metadata(str(target))
    target.write_bytes(b"PK\x03\x04" + b"\x00" * 100)  # A zip header and nothing else.
    with pytest.raises(RLGraphExportError):
        read_metadata(str(target))
    _zip_with_metadata(target, "[" * 100000 + "]" * 100000)
    agent = _agent("pytorch")
    with pytest.raises(RLGraphExportError, match=r"export_policy\(path\): the export path holds a file that is not"):
        agent.export_policy(str(target), "torchscript")
    agent.terminate()
    # `rlgraph export --out` onto it: exit 2 with the reason, the zip left as it was.
    config = resolve_config(os.path.join(ROOT, "configs", "dqn_gridworld_4x4.json"), backend="pytorch")
    agent, _ = make_agent_and_env(config)
    checkpoint = agent.store_model(str(tmp_path / "checkpoint"), extra_files={"config.json": config})
    agent.terminate()
    capsys.readouterr()
    before = target.read_bytes()
    assert main(["export", checkpoint, "--out", str(target)]) == 2
    assert "holds a file that is not an rlgraph policy export" in capsys.readouterr().err
    assert target.read_bytes() == before


def test_unknown_keys_of_the_numpy_prioritized_memory():
    spec = {"type": "mem-prioritized-replay", "capacity": 16, "foo": 1}
    for agent_type, action_space in (("dqn", IntBox(2)), ("sac", IntBox(2)),
                                     ("ddpg", FloatBox(shape=(1,), low=-1.0, high=1.0))):
        with pytest.raises(RLGraphSpecError, match=r"unknown key\(s\) \['foo'\] in memory_spec"):
            Agent.from_spec(dict(type=agent_type, state_space=FloatBox(shape=(4,)), action_space=action_space,
                                 network_spec=[{"type": "dense", "units": 8}], memory_spec=spec, backend="pytorch",
                                 auto_build=False))
    config = load_spec_file(os.path.join(ROOT, "configs", "apex_cartpole.json"))
    config["execution_spec"]["ray_spec"]["apex_replay_spec"]["memory_spec"]["foo"] = 1
    with pytest.raises(RLGraphSpecError, match=r"unknown key\(s\) \['foo'\] in memory_spec"):
        split_ray_spec(config)
