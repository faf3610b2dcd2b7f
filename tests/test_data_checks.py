"""Data on the hot paths is checked: `observe`, `import_observations`, update losses and
`set_weights` refuse values that do not fit (`RLGraphSpaceError`) or are NaN/inf
(`RLGraphNonFiniteError`, as `execution_spec.nan_check` says), and a refused call changes nothing.

Agents are the small DQNs of agent_helpers.py: FloatBox(4) states, IntBox(3) actions, a memory
of 16 and observe buffers of 4. Every test body runs on both backends.
"""
import logging

import numpy as np
import pytest

from agent_helpers import _agent, _memory, _random_batch, _states
from rlgraph.agents.data_checks import DataChecks, all_finite
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.utils.rlgraph_errors import RLGraphNonFiniteError, RLGraphSpaceError, RLGraphSpecError

S0, S1 = np.zeros(4, np.float32), np.ones(4, np.float32)


def _observed(agent):
    """(timesteps, buffered transitions, memory size): what a refused observe must leave alone."""
    return agent.timesteps, agent.buffers.pending(), agent.memory_size()


def _observe_steps(agent, n, start=0.0):
    """n valid single transitions, state t filled with start + t, action t % 3, reward 1."""
    states = _states(n + 1, start)
    for t in range(n):
        agent.observe(states[t], t % 3, None, 1.0, states[t + 1], False)


# --- Space checks ---------------------------------------------------------------------------------------


def test_out_of_range_action_is_refused_and_nothing_changes(backend):
    agent = _agent(backend, update_spec={"batch_size": 4})
    _observe_steps(agent, 2)
    before = _observed(agent)
    assert before == (2, 2, 0)
    with pytest.raises(RLGraphSpaceError) as info:
        agent.observe(S0, 3, None, 1.0, S1, False)  # IntBox(3): 0, 1, 2.
    error = info.value
    assert error.where == "agent.observe(actions)"
    assert "IntBox" in str(error.expected) and error.received == 3
    assert _observed(agent) == before
    # A numpy scalar (what get_action returns) and a negative action: refused the same way.
    for bad in (np.int64(7), -1):
        with pytest.raises(RLGraphSpaceError, match=r"observe\(actions\)"):
            agent.observe(S0, bad, None, 1.0, S1, False)
    # A batch with one bad action: nothing of it is stored, and the error says which row.
    with pytest.raises(RLGraphSpaceError, match=r"index \(1,\).*timestep 3"):
        agent.observe(_states(3), np.array([0, 5, 1]), None, np.ones(3), _states(3, 1.0), np.zeros(3, bool))
    assert _observed(agent) == before

    # The agent goes on: the buffers flush (4 transitions) and updates run on what was stored.
    _observe_steps(agent, 6, start=2.0)
    assert agent.timesteps == 8 and agent.memory_size() == 8
    np.testing.assert_array_equal(_memory(agent)["actions"], [0, 1, 0, 1, 2, 0, 1, 2])
    for _ in range(5):
        loss, _ = agent.update()
        assert np.isfinite(loss)


def test_out_of_range_action_without_buffering(backend):
    agent = _agent(backend, observe_spec={"buffer_enabled": False})
    with pytest.raises(RLGraphSpaceError, match=r"observe\(actions\)"):
        agent.observe(_states(2), np.array([3, 0]), None, np.ones(2), _states(2, 1.0), np.zeros(2, bool))
    assert _observed(agent) == (0, 0, 0)
    agent.observe(_states(2), np.array([2, 0]), None, np.ones(2), _states(2, 1.0), np.zeros(2, bool))
    assert _observed(agent) == (2, 0, 2)


def test_wrong_shapes_are_refused_naming_the_argument(backend):
    agent = _agent(backend)
    _observe_steps(agent, 1)
    before = _observed(agent)
    with pytest.raises(RLGraphSpaceError) as info:
        agent.observe(np.zeros(5, np.float32), 0, None, 1.0, S1, False)
    assert info.value.where == "agent.observe(preprocessed_states)"
    assert "(4,)" in str(info.value.expected) and "(5,)" in str(info.value.received)
    with pytest.raises(RLGraphSpaceError) as info:
        agent.observe(S0, 0, None, 1.0, np.zeros(3, np.float32), False)
    assert info.value.where == "agent.observe(next_states)"
    # A batch whose arguments differ in length B.
    with pytest.raises(RLGraphSpaceError) as info:
        agent.observe(_states(3), np.array([0, 1, 2]), None, np.ones(3), _states(2), np.zeros(3, bool))
    assert info.value.where == "agent.observe(next_states)" and "(3, 4)" in str(info.value.expected)
    with pytest.raises(RLGraphSpaceError, match=r"observe\(terminals\).*differ in length"):
        agent.observe(_states(3), np.array([0, 1, 2]), None, np.ones(3), _states(3), np.zeros(2, bool))
    assert _observed(agent) == before
    # The next valid observes are stored as before (the bad one never reached a buffer).
    _observe_steps(agent, 3, start=1.0)
    assert agent.memory_size() == 4
    np.testing.assert_array_equal(_memory(agent)["states"][:, 0], [0.0, 1.0, 2.0, 3.0])


def test_dtype_kinds_are_checked(backend):
    agent = _agent(backend)
    with pytest.raises(RLGraphSpaceError, match=r"observe\(actions\): wrong dtype \(float64\)") as info:
        agent.observe(S0, 1.0, None, 1.0, S1, False)
    assert "integers" in str(info.value.expected) and "int(a)" in info.value.hint
    with pytest.raises(RLGraphSpaceError, match=r"observe\(actions\)"):
        agent.observe(S0, True, None, 1.0, S1, False)
    with pytest.raises(RLGraphSpaceError, match=r"observe\(preprocessed_states\): wrong dtype"):
        agent.observe(np.array(["a", "b", "c", "d"]), 0, None, 1.0, S1, False)
    with pytest.raises(RLGraphSpaceError, match=r"observe\(rewards\)"):
        agent.observe(S0, 0, None, "1.0", S1, False)
    with pytest.raises(RLGraphSpaceError, match=r"observe\(terminals\)"):
        agent.observe(S0, 0, None, 1.0, S1, 0.5)
    with pytest.raises(RLGraphSpaceError, match=r"observe\(terminals\)"):
        agent.observe(_states(2), np.array([0, 1]), None, np.ones(2), _states(2), np.array([0, 2]))
    assert _observed(agent) == (0, 0, 0)
    # Boolean-like terminals and integer rewards are fine; so are lists for array leaves.
    agent.observe([0.0, 0.0, 0.0, 0.0], np.int32(2), None, 1, S1, np.int64(1))
    agent.observe(_states(2), [0, 1], None, [1, 2], _states(2), [0, 1])
    assert _observed(agent) == (3, 0, 3)
    np.testing.assert_array_equal(_memory(agent)["terminals"], [True, False, True])


def test_dict_states_pass_through_the_checks(backend):
    network = {"type": "multi-input-stream-nn", "input_network_specs": {"a": [{"type": "dense", "units": 4}], "b": []},
               "post_network_spec": [{"type": "dense", "units": 8}]}
    agent = _agent(backend, state_space=Dict(a=FloatBox(shape=(3,)), b=FloatBox(shape=(2,))), network_spec=network,
                   observe_spec={"buffer_size": 2}, update_spec={"batch_size": 2})

    def state(value):
        return {"a": np.full(3, value, np.float32), "b": np.full(2, value, np.float32)}

    agent.observe(state(0.0), 1, None, 1.0, state(1.0), False)
    agent.observe(state(1.0), 2, None, 1.0, state(2.0), False)
    assert agent.memory_size() == 2
    np.testing.assert_array_equal(_memory(agent)["states/b"], [[0.0, 0.0], [1.0, 1.0]])
    assert np.isfinite(agent.update()[0])
    # A leaf of the wrong shape, a missing leaf, a NaN in one leaf: each named.
    bad = dict(state(2.0), b=np.zeros(3, np.float32))
    with pytest.raises(RLGraphSpaceError) as info:
        agent.observe(bad, 0, None, 1.0, state(3.0), False)
    assert info.value.where == "agent.observe(preprocessed_states/b)"
    with pytest.raises(RLGraphSpaceError, match="structure"):
        agent.observe(state(2.0), 0, None, 1.0, {"a": np.zeros(3, np.float32)}, False)
    with pytest.raises(RLGraphNonFiniteError) as info:
        agent.observe(state(2.0), 0, None, 1.0, dict(state(3.0), a=np.array([0.0, np.nan, 0.0], np.float32)), False)
    assert info.value.where == "agent.observe(next_states/a)" and "index (1,)" in str(info.value)
    # Batched: a bad action in a batch of Dict states.
    states = {"a": np.zeros((2, 3), np.float32), "b": np.zeros((2, 2), np.float32)}
    with pytest.raises(RLGraphSpaceError, match=r"observe\(actions\)"):
        agent.observe(states, np.array([0, 3]), None, np.ones(2), states, np.zeros(2, bool))
    assert _observed(agent) == (2, 0, 2)


# --- NaN and inf ----------------------------------------------------------------------------------------


def test_nan_check_raise_names_the_field_and_stores_nothing(backend):
    agent = _agent(backend)  # nan_check defaults to "raise".
    assert agent.execution_spec["nan_check"] == "raise"
    _observe_steps(agent, 1)
    with pytest.raises(RLGraphNonFiniteError) as info:
        agent.observe(S0, 0, None, float("nan"), S1, False)
    assert info.value.where == "agent.observe(rewards)" and "timestep 1" in str(info.value)
    assert "nan_check" in info.value.hint
    with pytest.raises(RLGraphNonFiniteError) as info:
        agent.observe(np.array([0.0, 0.0, np.inf, 0.0], np.float32), 0, None, 1.0, S1, False)
    assert info.value.where == "agent.observe(preprocessed_states)" and "index (2,)" in str(info.value)
    assert info.value.received == np.inf
    # In a batch: the row tells the timestep (rows 0, 1, 2 are timesteps 1, 2, 3).
    next_states = _states(3, 1.0)
    next_states[2, 3] = -np.inf
    with pytest.raises(RLGraphNonFiniteError, match=r"observe\(next_states\): .* at index \(2, 3\) \(timestep 3\)"):
        agent.observe(_states(3), np.array([0, 1, 2]), None, np.ones(3), next_states, np.zeros(3, bool))
    with pytest.raises(RLGraphNonFiniteError, match=r"reward at index 1 \(timestep 2\)"):
        agent.observe(_states(3), np.array([0, 1, 2]), None, np.array([0.0, np.nan, 1.0]), _states(3, 1.0),
                      np.zeros(3, bool))
    assert _observed(agent) == (1, 1, 0)


def test_nan_check_warn_logs_once_per_field_and_goes_on(backend, caplog):
    agent = _agent(backend, execution_spec={"seed": 1, "nan_check": "warn"})
    with caplog.at_level(logging.WARNING, logger="rlgraph.agents.data_checks"):
        agent.observe(S0, 0, None, float("nan"), S1, False)
        agent.observe(S1, 1, None, float("inf"), S0, False)
        agent.observe(np.full(4, np.nan, np.float32), 2, None, 1.0, S0, False)
    messages = [r.getMessage() for r in caplog.records if r.name == "rlgraph.agents.data_checks"]
    assert len(messages) == 2  # One for rewards, one for preprocessed_states.
    assert "agent.observe(rewards)" in messages[0] and "timestep 0" in messages[0]
    assert "agent.observe(preprocessed_states)" in messages[1]
    assert _observed(agent) == (3, 3, 0)
    # Space errors are still errors.
    with pytest.raises(RLGraphSpaceError):
        agent.observe(S0, 9, None, 1.0, S1, False)


def test_nan_check_off_accepts_non_finite_values(backend):
    agent = _agent(backend, execution_spec={"seed": 1, "nan_check": "off"})
    agent.observe(np.full(4, np.nan, np.float32), 0, None, float("inf"), S1, False)
    agent.observe(_states(2), np.array([0, 1]), None, np.array([np.nan, 1.0]), _states(2), np.array([False, True]))
    assert _observed(agent) == (3, 0, 3)
    assert np.isnan(_memory(agent)["rewards"][1])


def test_nan_check_is_validated(backend):
    with pytest.raises(RLGraphSpecError, match="nan_check") as info:
        _agent(backend, execution_spec={"nan_check": "warning"})
    assert info.value.hint == "did you mean 'warn'?"


def test_non_finite_loss_stops_the_update(backend):
    # Rewards near float32's maximum are finite (observe takes them), but the squared TD error
    # (r + g max Q' - Q)^2 ~ (3e38)^2 overflows float32: the loss is inf.
    agent = _agent(backend, update_spec={"batch_size": 4})
    states = _states(5)
    for t in range(4):
        agent.observe(states[t], t % 3, None, 3e38, states[t + 1], False)
    assert agent.memory_size() == 4
    with pytest.raises(RLGraphNonFiniteError) as info:
        agent.update()
    assert info.value.where == "agent.update" and "update #1" in str(info.value)
    assert "load_model" in info.value.hint
    assert agent.num_updates == 1  # The step was taken (the error says so).

    # An external batch likewise; with nan_check "off" the loss comes back as it is.
    batch = dict(_random_batch(np.random.RandomState(0), 4), rewards=np.full(4, 3e38, np.float32))
    with pytest.raises(RLGraphNonFiniteError, match="update #1"):
        _agent(backend).update(batch)
    loss, _ = _agent(backend, execution_spec={"seed": 1, "nan_check": "off"}).update(batch)
    assert not np.isfinite(loss)


# --- set_weights and import_observations -----------------------------------------------------------------


def test_set_weights_refuses_nan_and_writes_nothing(backend):
    agent = _agent(backend)
    before = agent.get_weights()
    kernel = next(k for k in sorted(before) if k.endswith("kernel"))
    bias = next(k for k in sorted(before) if k.endswith("bias"))
    bad = np.zeros_like(before[kernel])
    bad[1, 2] = np.nan
    with pytest.raises(RLGraphNonFiniteError) as info:
        agent.set_weights({bias: np.ones_like(before[bias]), kernel: bad})
    assert kernel in str(info.value) and "index (1, 2)" in str(info.value) and info.value.where.endswith(".set_weights")
    after = agent.get_weights()
    for name in before:
        np.testing.assert_array_equal(after[name], before[name])  # Not even the valid bias was written.
    with pytest.raises(RLGraphNonFiniteError):
        agent.set_weights({kernel: np.full_like(before[kernel], np.inf)})
    # A value that only overflows when cast to the variable's float32.
    with pytest.raises(RLGraphNonFiniteError):
        agent.set_weights({kernel: np.full(before[kernel].shape, 1e300)})


def test_set_weights_keeps_a_min_tree_infinities(backend):
    # A prioritized memory's min-tree starts as +inf (its neutral element): writing all variables
    # back, infinities included, is fine.
    agent = _agent(backend, memory_spec={"type": "prioritized-replay", "capacity": 16})
    weights = agent.graph_executor.get_weights()
    assert any(np.isinf(v).any() for v in weights.values() if v.dtype.kind == "f")
    agent.graph_executor.set_weights(weights)
    tree = next(k for k, v in weights.items() if v.dtype.kind == "f" and np.isinf(v).any())
    with pytest.raises(RLGraphNonFiniteError):
        agent.graph_executor.set_weights({tree: np.full_like(weights[tree], np.nan)})


def test_import_observations_checks_every_record_first(backend):
    agent = _agent(backend)
    rng = np.random.RandomState(3)
    good = _random_batch(rng, 3)
    bad_action = dict(_random_batch(rng, 3), actions=np.array([0, 1, 3]))
    with pytest.raises(RLGraphSpaceError) as info:
        agent.import_observations([good, bad_action])
    assert info.value.where == "agent.import_observations(observations)['actions']"
    nan_state = _random_batch(rng, 2)
    nan_state["states"][1, 0] = np.nan
    with pytest.raises(RLGraphNonFiniteError) as info:
        agent.import_observations([good, nan_state])
    assert info.value.where == "agent.import_observations(observations)['states']"
    assert "index (1, 0)" in str(info.value)
    with pytest.raises(RLGraphSpaceError, match=r"\['terminals'\]"):
        agent.import_observations(dict(good, terminals=np.zeros(2, bool)))
    assert agent.memory_size() == 0  # Nothing was written.
    agent.import_observations([good, good])
    assert agent.memory_size() == 6


# --- The checks without an agent -----------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (4,), (2, 2), (17,)])
def test_transition_checks_any_state_shape(shape):
    # (4,) takes the per-step fast path; the others the leaf-by-leaf one. Both find the same.
    checks = DataChecks(FloatBox(shape=shape), IntBox(3), "raise", "agent")
    s, sp = np.zeros(shape, np.float32), np.ones(shape, np.float32)
    assert checks.transition(s, np.int32(2), np.float32(0.5), True, sp, 0) == (s, 2, 0.5, True, sp)
    bad = sp.copy()
    bad.reshape(-1)[-1] = np.nan
    with pytest.raises(RLGraphNonFiniteError, match=r"observe\(next_states\)"):
        checks.transition(s, 1, 0.5, False, bad, 0)
    with pytest.raises(RLGraphNonFiniteError, match=r"observe\(rewards\)"):
        checks.transition(s, 1, -np.inf, False, sp, 0)
    with pytest.raises(RLGraphSpaceError, match=r"observe\(actions\)"):
        checks.transition(s, np.int64(3), 0.5, False, sp, 0)
    # A reward or state beyond float32 (a finite float64) would be inf where it is stored: refused on
    # both paths; everything passes with "off".
    with pytest.raises(RLGraphNonFiniteError, match=r"observe\(rewards\).*overflows float32"):
        checks.transition(s, 1, 1e308, False, sp, 0)
    with pytest.raises(RLGraphNonFiniteError, match=r"observe\(preprocessed_states\).*overflows float32"):
        checks.transition(np.full(shape, 1e39), 1, 0.5, False, sp, 0)
    assert checks.transition(s.astype(np.float64), 1, 3e38, False, sp, 0).reward == 3e38  # (Fits float32.)
    off = DataChecks(FloatBox(shape=shape), IntBox(3), "off", "agent")
    assert np.isnan(off.transition(s, 1, float("nan"), False, bad, 0).reward)
    assert off.transition(s, 1, 1e308, False, sp, 0).reward == 1e308


# --- The finiteness test itself -------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("size", [1, 4, 17, 300])
def test_all_finite_agrees_with_isfinite(dtype, size):
    rng = np.random.RandomState(size)
    values = rng.normal(size=size).astype(dtype)
    assert all_finite(values) and all_finite(values.reshape(1, size)) and all_finite(values[0])
    big = np.full(size, np.finfo(dtype).max, dtype)  # Finite, though its sum and squares overflow.
    assert all_finite(big) and all_finite(-big.reshape(size, 1))
    for bad in (np.nan, np.inf, -np.inf):
        for index in {0, size // 2, size - 1}:
            copy = values.copy()
            copy[index] = bad
            assert not all_finite(copy) and not all_finite(copy.reshape(size, 1))
    mixed = values.copy()
    mixed[0], mixed[-1] = np.inf, -np.inf  # (Their sum is NaN: still caught.)
    assert not all_finite(mixed)
    assert not all_finite(np.asarray(np.nan, dtype))
