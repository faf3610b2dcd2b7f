"""`ObserveBuffers` and `stack_transitions`: per-env buffering and n-step folding, in plain numpy.

Transitions are `Transition(state, action, reward, terminal, next_state)`, the field order of a
record. In these tests the state of step t is the float t and its next state t + 1, so a folded
transition's next state says how many steps it looks ahead.
"""
import numpy as np
import pytest

from rlgraph.agents.observe_buffers import ObserveBuffers, Transition, stack_transitions
from rlgraph.agents.records import RECORD_KEYS


def _steps(rewards, start=0, terminal_at_end=False):
    """Transitions t = start, start+1, ... with state t, action t % 2, the given rewards, next state t + 1."""
    out = []
    for i, reward in enumerate(rewards):
        t = start + i
        last = i == len(rewards) - 1
        out.append(Transition(float(t), t % 2, float(reward), bool(terminal_at_end and last), float(t + 1)))
    return out


def _summary(transitions):
    """(state, reward, next_state, terminal) per transition: the parts that folding changes."""
    return [(t.state, pytest.approx(t.reward, abs=1e-12), t.next_state, t.terminal) for t in transitions]


# --- n = 1 ------------------------------------------------------------------------------------------


def test_n1_waits_until_full_then_hands_out_in_order():
    buffers = ObserveBuffers(buffer_size=3, n_step=1, discount=0.9)
    assert buffers.add("a", _steps([1.0])) == []
    assert buffers.add("a", _steps([2.0], start=1)) == []
    assert buffers.pending() == 2
    ready = buffers.add("a", _steps([3.0], start=2))
    # n = 1: the transitions come out unchanged, in time order; the buffer is empty again.
    assert ready == _steps([1.0, 2.0, 3.0])
    assert buffers.pending() == 0 and buffers.buffers["a"] == []


def test_n1_terminal_and_episode_end_flush_early():
    buffers = ObserveBuffers(buffer_size=10, n_step=1)
    assert buffers.add("a", _steps([1.0])) == []
    ready = buffers.add("a", _steps([5.0], start=1, terminal_at_end=True))
    assert ready == [Transition(0.0, 0, 1.0, False, 1.0), Transition(1.0, 1, 5.0, True, 2.0)]
    # Truncation (episode_end without a terminal) flushes too, nothing dropped for n = 1.
    assert buffers.add("b", _steps([1.0, 2.0]), episode_end=True) == _steps([1.0, 2.0])
    assert buffers.pending() == 0


def test_envs_are_buffered_separately():
    buffers = ObserveBuffers(buffer_size=2, n_step=1)
    a = _steps([1.0, 2.0])
    b = _steps([10.0, 20.0], start=100)
    assert buffers.add("a", a[:1]) == []
    assert buffers.add("b", b[:1]) == []
    assert buffers.pending() == 2
    # Each env fills its own buffer of 2: the other env's transition never mixes in.
    assert buffers.add("b", b[1:]) == b
    assert buffers.add("a", a[1:]) == a
    assert buffers.pending() == 0


def test_a_batch_larger_than_the_buffer_is_handed_out_whole():
    buffers = ObserveBuffers(buffer_size=2, n_step=1)
    assert buffers.add(None, _steps([1.0, 2.0, 3.0])) == _steps([1.0, 2.0, 3.0])


# --- n = 2 ------------------------------------------------------------------------------------------


def test_n2_full_buffer_carries_the_last_transition_over():
    buffers = ObserveBuffers(buffer_size=4, n_step=2, discount=0.5)
    ready = buffers.add("a", _steps([1.0, 2.0, 4.0, 8.0]))
    # Full at 4: transitions 0..2 have both rewards they need; transition 3 waits for r_4.
    #   r0 + 0.5 r1 = 1 + 1 = 2 (next state 2), r1 + 0.5 r2 = 2 + 2 = 4, r2 + 0.5 r3 = 4 + 4 = 8.
    assert _summary(ready) == [(0.0, 2.0, 2.0, False), (1.0, 4.0, 3.0, False), (2.0, 8.0, 4.0, False)]
    assert [t.state for t in buffers.buffers["a"]] == [3.0]
    # Step 4 (reward 16) ends the episode in a terminal state:
    #   t3: 8 + 0.5 * 16 = 16, next state 5, terminal; t4: only its own reward, 16.
    ready = buffers.add("a", _steps([16.0], start=4, terminal_at_end=True))
    assert _summary(ready) == [(3.0, 16.0, 5.0, True), (4.0, 16.0, 5.0, True)]
    assert buffers.pending() == 0


# --- n = 3 ------------------------------------------------------------------------------------------


def test_n3_folding_at_a_terminal():
    buffers = ObserveBuffers(buffer_size=10, n_step=3, discount=0.5)
    ready = buffers.add(0, _steps([1.0, 2.0, 4.0, 8.0], terminal_at_end=True))
    # t0: 1 + 0.5*2 + 0.25*4 = 3, next state 3 (not terminal: t2 is not);
    # t1: 2 + 0.5*4 + 0.25*8 = 6, next state 4, terminal (t3 is);
    # t2: 4 + 0.5*8 = 8 and t3: 8 -- shorter sums, cut by the terminal.
    assert _summary(ready) == [(0.0, 3.0, 3.0, False), (1.0, 6.0, 4.0, True), (2.0, 8.0, 4.0, True),
                               (3.0, 8.0, 4.0, True)]
    # Actions stay with their own step.
    assert [t.action for t in ready] == [0, 1, 0, 1]


def test_n3_truncation_drops_the_last_two():
    buffers = ObserveBuffers(buffer_size=10, n_step=3, discount=0.5)
    ready = buffers.add(0, _steps([1.0, 2.0, 4.0, 8.0]), episode_end=True)
    # Truncated (no terminal): t2 and t3 lack a full 3-step window and are dropped.
    assert _summary(ready) == [(0.0, 3.0, 3.0, False), (1.0, 6.0, 4.0, False)]
    assert buffers.pending() == 0


def test_n3_full_buffer_carry_over_across_adds():
    buffers = ObserveBuffers(buffer_size=4, n_step=3, discount=0.5)
    ready = buffers.add("e", _steps([1.0, 2.0, 4.0, 8.0]))
    assert _summary(ready) == [(0.0, 3.0, 3.0, False), (1.0, 6.0, 4.0, False)]
    assert [t.state for t in buffers.buffers["e"]] == [2.0, 3.0]
    # One more step: 3 < 4 buffered, nothing out.
    assert buffers.add("e", _steps([16.0], start=4)) == []
    # The fourth: t2 = 4 + 0.5*8 + 0.25*16 = 12 (next 5), t3 = 8 + 0.5*16 + 0.25*32 = 24 (next 6).
    ready = buffers.add("e", _steps([32.0], start=5))
    assert _summary(ready) == [(2.0, 12.0, 5.0, False), (3.0, 24.0, 6.0, False)]
    assert [t.state for t in buffers.buffers["e"]] == [4.0, 5.0]


def test_buffer_size_is_at_least_n_step():
    assert ObserveBuffers(buffer_size=1, n_step=3).buffer_size == 3
    assert ObserveBuffers(buffer_size=8, n_step=3).buffer_size == 8


# --- reset -------------------------------------------------------------------------------------------


def test_reset_one_env_or_all():
    buffers = ObserveBuffers(buffer_size=10, n_step=1)
    buffers.add("a", _steps([1.0, 2.0]))
    buffers.add("b", _steps([3.0]))
    assert buffers.pending() == 3
    buffers.reset("a")
    assert sorted(buffers.buffers) == ["b"] and buffers.pending() == 1
    buffers.reset("unknown")  # No error for an env without a buffer.
    assert buffers.pending() == 1
    buffers.add("a", _steps([7.0]))
    buffers.reset()
    assert buffers.buffers == {} and buffers.pending() == 0


def test_reset_drops_the_carried_over_transitions():
    buffers = ObserveBuffers(buffer_size=3, n_step=2, discount=0.5)
    buffers.add("a", _steps([1.0, 2.0, 4.0]))
    assert buffers.pending() == 1
    buffers.reset("a")
    # A new episode starts clean: its first transition is not folded with the old one.
    ready = buffers.add("a", _steps([10.0], start=50, terminal_at_end=True))
    assert _summary(ready) == [(50.0, 10.0, 51.0, True)]


# --- stack_transitions ---------------------------------------------------------------------------------


def test_stack_transitions_array_states():
    transitions = [Transition(np.full(3, t, np.float32), np.int32(t), float(t), t == 1, np.full(3, t + 1, np.float32))
                   for t in range(2)]
    record = stack_transitions(transitions)
    assert list(record) == list(RECORD_KEYS)  # One record, in the one field order.
    states, actions, rewards, terminals, next_states = (record[key] for key in RECORD_KEYS)
    assert states.shape == (2, 3) and states.dtype == np.float32
    np.testing.assert_array_equal(next_states[:, 0], [1.0, 2.0])
    assert actions.dtype == np.int32 and actions.tolist() == [0, 1]
    assert rewards.dtype == np.float32 and rewards.tolist() == [0.0, 1.0]
    assert terminals.dtype == np.bool_ and terminals.tolist() == [False, True]


def test_stack_transitions_dict_states_and_actions():
    def state(t):
        return {"a": np.full(2, t, np.float32), "b": np.arange(3, dtype=np.int64) + t}

    transitions = [Transition(state(t), {"x": np.int32(t), "y": np.int32(2 * t)}, 0.5 * t, False, state(t + 1))
                   for t in range(4)]
    record = stack_transitions(transitions)
    states, actions, rewards, terminals, next_states = (record[key] for key in RECORD_KEYS)
    assert sorted(states) == ["a", "b"]
    assert states["a"].shape == (4, 2) and states["a"].dtype == np.float32
    assert states["b"].shape == (4, 3) and states["b"].dtype == np.int64
    np.testing.assert_array_equal(states["b"][:, 0], [0, 1, 2, 3])
    np.testing.assert_array_equal(next_states["b"][:, 0], [1, 2, 3, 4])
    assert actions["x"].shape == (4,) and actions["x"].dtype == np.int32
    np.testing.assert_array_equal(actions["y"], [0, 2, 4, 6])
    assert rewards.dtype == np.float32 and rewards.tolist() == [0.0, 0.5, 1.0, 1.5]
    assert terminals.shape == (4,) and not terminals.any()
