"""DQN's one record: {"states", "actions", "rewards", "terminals", "next_states"} from the observe buffers
through the memories to the loss, the in-graph and the python-side memory on one code path, and clear
errors for records with missing or unknown keys.

Every test body runs on both backends (the `backend` fixture). Agents as in agent_helpers.py (one
dense layer of 8 units, FloatBox(4) states, IntBox(3) actions).
"""
import numpy as np
import pytest

from agent_helpers import _agent, _memory, _perturb_target, _random_batch, _target_q
from rlgraph.agents.records import RECORD_KEYS
from rlgraph.agents.replay_access import GraphReplay, PythonReplay
from rlgraph.spaces import Dict
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError

DISCOUNT = 0.9


def _expected(agent, record, weights=None):
    """(loss_per_item, td) of `record` from the numpy reference (double Q, squared loss)."""
    q_s = agent.get_q_values(record["states"], apply_preprocessing=False)
    q_sp = agent.get_q_values(record["next_states"], apply_preprocessing=False)
    qt_sp = _target_q(agent, record["next_states"])
    return rnp.dqn_loss_per_item(q_s, record["actions"], record["rewards"], record["terminals"], qt_sp,
                                 discount=DISCOUNT, q_t=q_sp, weights=weights)


def _record(seed, n):
    """A record whose fields are told apart by their values (a swapped field changes the losses)."""
    batch = _random_batch(np.random.RandomState(seed), n)
    return {key: batch[key] for key in RECORD_KEYS}


def _copy_networks(source, target):
    """Gives `target` the online and target network weights of `source` (same agent name)."""
    weights = source.graph_executor.get_weights()
    target.set_weights({k: v for k, v in weights.items() if "/policy/" in k or "/target-policy/" in k})


# --- The record API of DQNCore ------------------------------------------------------------------------------


def test_root_apis_take_one_record(backend):
    agent = _agent(backend)
    apis = agent.root_component.api_methods
    assert apis["insert_records"].arg_names == ("records",)
    assert apis["update_from_external_batch"].arg_names == ("records", "importance_weights", "time_percentage")
    assert apis["get_td_loss"].arg_names == ("records", "importance_weights")
    assert apis["update_from_memory"].arg_names == ("batch_size", "time_percentage")
    space = agent.input_spaces["records"]
    assert isinstance(space, Dict) and sorted(space.keys()) == sorted(RECORD_KEYS) and space.has_batch_rank
    assert not hasattr(agent.root_component, "record_space")
    assert isinstance(agent.replay, GraphReplay) and agent.replay.in_graph


def test_insert_records_then_update_from_memory(backend):
    agent = _agent(backend, discount=0.9, update_spec={"sync_interval": 1000})
    _perturb_target(agent)
    record = _record(seed=11, n=6)
    agent.call_api_method("insert_records", [record])
    # Stored field by field as given: nothing swapped on the way in.
    stored = _memory(agent)
    for key in RECORD_KEYS:
        np.testing.assert_array_equal(stored[key], record[key], err_msg=key)

    expected, _ = _expected(agent, record)
    assert len(np.unique(np.round(expected, 4))) == 6  # Each record's loss tells which one was sampled.
    loss, per_item = agent.call_api_method("update_from_memory", [np.int64(5), np.float32(0.0)])
    assert np.shape(per_item) == (5,)
    for value in per_item:  # Every sampled item's loss is the numpy loss of one stored record.
        assert np.isclose(expected, value, rtol=1e-5, atol=1e-6).any(), (value, expected)
    np.testing.assert_allclose(loss, np.mean(per_item), rtol=1e-5)


def test_update_from_external_batch_and_get_td_loss_take_the_record(backend):
    agent = _agent(backend, discount=0.9, update_spec={"sync_interval": 1000})
    _perturb_target(agent)
    record = _record(seed=12, n=5)
    weights = np.array([1.0, 0.5, 2.0, 1.0, 0.25], np.float32)
    expected, td = _expected(agent, record, weights)

    loss, per_item, td_graph = agent.call_api_method("get_td_loss", [record, weights])
    np.testing.assert_allclose(per_item, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(td_graph, td, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss, expected.mean(), rtol=1e-5)

    before = agent.get_weights()
    loss, per_item, td_graph = agent.call_api_method("update_from_external_batch", [record, weights, np.float32(0.0)])
    np.testing.assert_allclose(per_item, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(td_graph, td, rtol=1e-5, atol=1e-6)
    assert any(not np.array_equal(before[k], v) for k, v in agent.get_weights().items())  # It stepped.


# --- In-graph and python-side memories: one path, the same numbers ------------------------------------------


@pytest.mark.parametrize("memory_type", ["replay-memory", "prioritized-replay"])
def test_graph_and_python_memories_give_the_same_losses(backend, memory_type):
    in_graph = _agent(backend, discount=0.9, memory_spec={"type": memory_type, "capacity": 16},
                      update_spec={"batch_size": 4, "sync_interval": 1000})
    python = _agent(backend, discount=0.9, memory_spec={"type": "mem-prioritized-replay", "capacity": 16},
                    update_spec={"batch_size": 4, "sync_interval": 1000}, store_last_memory_batch=True)
    assert isinstance(python.replay, PythonReplay) and not python.replay.in_graph
    _perturb_target(in_graph)
    _copy_networks(in_graph, python)
    record = _record(seed=13, n=10)
    for agent in (in_graph, python):
        agent.import_observations(record)
        assert agent.memory_size() == 10

    # The same record: the same losses and TD errors through either agent.
    expected, td = _expected(in_graph, record)
    for agent in (in_graph, python):
        _, per_item, td_graph = agent.get_td_loss(record)
        np.testing.assert_allclose(per_item, expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(td_graph, td, rtol=1e-5, atol=1e-6)

    # The python memory's sample (kept in last_memory_batch) has, in the in-graph agent, the losses
    # that the python agent's update reported (weights 1: beta 0).
    _, per_item = python.update()
    sampled = python.last_memory_batch
    np.testing.assert_array_equal(sampled["importance_weights"], np.ones(4, np.float32))
    np.testing.assert_allclose(in_graph.get_td_loss(sampled)[1], per_item, rtol=1e-5, atol=1e-6)
    # The in-graph sample never leaves the graph: each of its losses is the loss of one stored record.
    _, per_item = in_graph.update()
    for value in per_item:
        assert np.isclose(expected, value, rtol=1e-5, atol=1e-6).any(), (value, expected)


def test_python_memory_priorities_are_absolute_td_errors(backend):
    agent = _agent(backend, memory_spec={"type": "mem-prioritized-replay", "capacity": 8, "alpha": 1.0},
                   update_spec={"batch_size": 4, "sync_interval": 1000})
    agent.import_observations(_record(seed=14, n=8))
    records, indices, weights = agent.replay.sample(4)
    _, _, td = agent.get_td_loss(dict(records, importance_weights=weights))
    agent.replay.update_priorities(indices, td)
    # Leaf i holds (|td_i| + epsilon) ** alpha; for a repeated index the last one wins.
    last = {int(i): float(abs(t)) for i, t in zip(indices, td)}
    leaves = agent.replay.memory.tree.leaves()
    for index, value in last.items():
        assert leaves[index] == pytest.approx(value + 1e-6, rel=1e-5)


# --- Missing and unknown keys --------------------------------------------------------------------------------


@pytest.mark.parametrize("memory_type", ["replay-memory", "mem-prioritized-replay"])
def test_agent_rejects_records_with_missing_or_unknown_keys(backend, memory_type):
    agent = _agent(backend, memory_spec={"type": memory_type, "capacity": 16})
    record = _record(seed=15, n=3)
    missing = {k: v for k, v in record.items() if k != "terminals"}
    typo = dict(missing, terminal=record["terminals"])
    extra = dict(record, priorities=np.ones(3, np.float32))
    for method in (agent.update, agent.get_td_loss):
        with pytest.raises(RLGraphError, match=r"lacks \['terminals'\]"):
            method(missing)
        with pytest.raises(RLGraphError, match="unknown key.*did you mean 'terminals'"):
            method(typo)
        with pytest.raises(RLGraphError, match=r"unknown key\(s\) \['priorities'\]"):
            method(extra)
    with pytest.raises(RLGraphError, match="import_observations.*lacks"):
        agent.import_observations([record, missing])
    assert agent.memory_size() == 0  # Checked before anything was written.
    assert agent.num_updates == 0
    # The optional importance weights are no unknown key.
    agent.update(dict(record, importance_weights=np.ones(3, np.float32)))
    assert agent.num_updates == 1


def test_root_apis_reject_records_with_missing_or_unknown_keys(backend):
    agent = _agent(backend)
    record = _record(seed=16, n=3)
    weights = np.ones(3, np.float32)
    for bad in ({k: v for k, v in record.items() if k != "rewards"}, dict(record, extra=weights)):
        for api, args in (("insert_records", [bad]), ("get_td_loss", [bad, weights]),
                          ("update_from_external_batch", [bad, weights, np.float32(0.0)])):
            with pytest.raises(RLGraphError, match=r"records.*does not match the Dict space"):
                agent.call_api_method(api, args)


def test_build_rejects_a_records_space_without_the_record_keys(backend):
    agent = _agent(backend, auto_build=False)
    space = agent.input_spaces["records"]
    agent.input_spaces["records"] = Dict({k: space[k].strip_ranks() for k in RECORD_KEYS if k != "terminals"},
                                         add_batch_rank=True)
    with pytest.raises(RLGraphError, match=r"\(records\).*lacks \['terminals'\]"):
        agent.build()


def test_store_last_memory_batch_needs_the_python_memory(backend):
    with pytest.raises(RLGraphSpecError, match="store_last_memory_batch"):
        _agent(backend, store_last_memory_batch=True)
