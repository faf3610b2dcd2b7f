"""DQfD (`DQFDAgent`, `DQFDLossFunction`): the large-margin loss on worked numbers and against the numpy
reference, the expert mask, demo_sample_ratio's batch composition, an SGD step against the numpy
gradient, demonstrations in and out of the expert memory, bad specs, checkpoints, and a learning
test (pre-training on a scripted expert's GridWorld demonstrations alone solves the world).

Every test body runs on both backends (the `backend` fixture). Agents: FloatBox(4) states, IntBox(3)
actions, one linear hidden layer of 5 units unless a test says otherwise.
"""

import numpy as np
import pytest
from backend_marks import needs_tf

from agent_helpers import _perturb_target, _random_batch, _target_q
from seed_pool import map_seeds
from rlgraph.agents import Agent, DQFDAgent
from rlgraph.agents.dqfd.agent import _demo_batch_size
from rlgraph.components import Component
from rlgraph.components.loss_functions.dqfd_loss_function import DQFDLossFunction
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError

HIDDEN = [{"type": "dense", "units": 5, "scope": "hidden"}]  # Linear: Q = (x W1 + b1) W2 + b2.
KERNEL_1, BIAS_1 = "agent/policy/neural-network/hidden/kernel", "agent/policy/neural-network/hidden/bias"
ADAPTER = "agent/policy/action-adapter-0/action-layer/"
KERNEL_2, BIAS_2 = ADAPTER + "kernel", ADAPTER + "bias"


def _agent(backend, **overrides):
    spec = dict(state_space=FloatBox(shape=(4,)), action_space=IntBox(3), network_spec=HIDDEN, dueling_q=False,
                discount=0.9, expert_margin=0.5, supervised_weight=1.0,
                memory_spec={"type": "replay-memory", "capacity": 32},
                demo_memory_spec={"type": "replay-memory", "capacity": 32}, observe_spec={"buffer_size": 4},
                update_spec={"batch_size": 8, "sync_interval": 1000}, execution_spec={"seed": 1, "max_timesteps": 1000},
                backend=backend)
    spec.update(overrides)
    return DQFDAgent(**spec)


def _demo_record(agent, name="memory"):
    """The stored records of the expert memory ("demo-memory") or the own memory, by field."""
    weights = agent.graph_executor.get_weights()
    scope = "agent/demo-memory/" if name == "demo-memory" else "agent/replay-memory/"
    size = agent.demo_memory_size() if name == "demo-memory" else agent.memory_size()
    return {k[len(scope) + len("memory/"):]: v[:size] for k, v in weights.items() if k.startswith(scope + "memory/")}


# --- The loss function ----------------------------------------------------------------------------------------------

Q_SPACE = FloatBox(shape=(3,), add_batch_rank=True)
SPACES = dict(q_values_s=Q_SPACE, actions=IntBox(3, add_batch_rank=True), rewards=FloatBox(add_batch_rank=True),
              terminals=BoolBox(add_batch_rank=True), qt_values_sp=Q_SPACE, q_values_sp=Q_SPACE,
              importance_weights=FloatBox(add_batch_rank=True), expert_mask=BoolBox(add_batch_rank=True))
# The batch of tests/test_dqn_impala_losses.py: double Q, discount 0.9, n_step 2, squared loss per item
# [0.32805, 2.1945125, 2.0].
Q_S = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [0.0, 0.0, 1.0]], np.float32)
ACTIONS = np.array([0, 2, 1])
REWARDS = np.array([1.0, -0.5, 2.0], np.float32)
TERMINALS = np.array([False, False, True])
Q_SP = np.array([[0.0, 5.0, 1.0], [3.0, 1.0, 2.0], [1.0, 0.0, 0.0]], np.float32)
QT_SP = np.array([[2.0, 1.0, 10.0], [0.5, 4.0, -1.0], [7.0, 7.0, 7.0]], np.float32)
DQN_PER_ITEM = [0.32805, 2.1945125, 2.0]
# Margin 0.5: Q + l = [1, 2.5, 3.5] -> 3.5 - 1; [1, -0.5, 2] -> 2 - 2; [0.5, 0, 1.5] -> 1.5 - 0.
J_E = [2.5, 0.0, 1.5]
WEIGHTS = np.array([0.5, 2.0, 1.0], np.float32)


def _loss_test(backend, **kwargs):
    loss_fn = DQFDLossFunction(discount=0.9, n_step=2, double_q=True, importance_weights=True, **kwargs)
    return ComponentTest(loss_fn, input_spaces=SPACES, backend=backend)


def test_large_margin_and_combined_loss_by_hand(backend):
    test = _loss_test(backend, expert_margin=0.5, supervised_weight=2.0)
    np.testing.assert_allclose(test.test(("large_margin_loss", [Q_S, ACTIONS])), J_E, rtol=1e-6)
    ones = np.ones(3, np.float32)
    args = [Q_S, ACTIONS, REWARDS, TERMINALS, QT_SP, Q_SP]
    # Only the expert items (the first two) get 2.0 * J_E: [0.32805 + 5, 2.1945125 + 0, 2.0].
    mask = np.array([True, True, False])
    total, per_item = test.test(("loss", args + [ones, mask]))
    np.testing.assert_allclose(per_item, [5.32805, 2.1945125, 2.0], rtol=1e-5)
    np.testing.assert_allclose(total, (5.32805 + 2.1945125 + 2.0) / 3, rtol=1e-5)
    # No expert item: the DQN loss; every item an expert's: + 2 * [2.5, 0, 1.5].
    np.testing.assert_allclose(test.test(("loss_per_item", args + [ones, np.zeros(3, bool)])), DQN_PER_ITEM, rtol=1e-5)
    np.testing.assert_allclose(test.test(("loss_per_item", args + [ones, np.ones(3, bool)])),
                               [5.32805, 2.1945125, 5.0], rtol=1e-5)
    # Importance weights scale the whole item: [0.5 * 5.32805, 2 * 2.1945125, 1 * 2.0].
    _, per_item, td = test.test(("loss_and_td_error", args + [WEIGHTS, mask]))
    np.testing.assert_allclose(per_item, [2.664025, 4.389025, 2.0], rtol=1e-5)
    np.testing.assert_allclose(td, [0.81, -2.095, 2.0], rtol=1e-5)  # The TD errors are DQN's.
    expected, expected_td = rnp.dqfd_loss_per_item(Q_S, ACTIONS, REWARDS, TERMINALS, QT_SP, 0.9, mask, 0.5, 2.0,
                                                   q_t=Q_SP, n_step=2, weights=WEIGHTS)
    np.testing.assert_allclose(per_item, expected, rtol=1e-5)
    np.testing.assert_allclose(td, expected_td, rtol=1e-5)


def test_large_margin_numpy_reference_and_huber(backend):
    rng = np.random.RandomState(0)
    q, actions = rng.normal(size=(16, 3)).astype(np.float32), rng.randint(0, 3, 16)
    np.testing.assert_allclose(rnp.large_margin_loss(Q_S, ACTIONS, 0.5), J_E, rtol=1e-6)
    assert (rnp.large_margin_loss(q, actions, 0.8) >= 0).all()
    # Zero once the expert's action leads by the margin: Q = [3, 2.2, 0] with a_E = 0, margin 0.8.
    assert rnp.large_margin_loss(np.array([[3.0, 2.2, 0.0]]), [0], 0.8)[0] == pytest.approx(0.0)
    test = _loss_test(backend, expert_margin=0.8, supervised_weight=0.5, huber_loss=True)
    q_sp, qt_sp = rng.normal(size=(16, 3)).astype(np.float32), 3 * rng.normal(size=(16, 3)).astype(np.float32)
    rewards, terminals = rng.normal(size=16).astype(np.float32), rng.rand(16) < 0.2
    weights, mask = rng.uniform(0.5, 1.5, 16).astype(np.float32), rng.rand(16) < 0.5
    np.testing.assert_allclose(test.test(("large_margin_loss", [q, actions])), rnp.large_margin_loss(q, actions, 0.8),
                               rtol=1e-5, atol=1e-6)
    _, per_item = test.test(("loss", [q, actions, rewards, terminals, qt_sp, q_sp, weights, mask]))
    expected, td = rnp.dqfd_loss_per_item(q, actions, rewards, terminals, qt_sp, 0.9, mask, 0.8, 0.5, q_t=q_sp,
                                          n_step=2, huber_delta=1.0, weights=weights)
    assert (np.abs(td) > 1).any() and (np.abs(td) < 1).any()  # Both Huber branches.
    np.testing.assert_allclose(per_item, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kwargs, pattern", [({"expert_margin": -0.1}, "expert_margin"),
                                             ({"expert_margin": float("nan")}, "expert_margin"),
                                             ({"supervised_weight": "1"}, "supervised_weight"),
                                             ({"supervised_weight": -1}, "supervised_weight")])
def test_loss_function_refuses_bad_arguments(kwargs, pattern):
    with pytest.raises(RLGraphSpecError, match=rf"DQFDLossFunction\({pattern}\)"):
        DQFDLossFunction(**kwargs)
    assert Component.resolve_type("dqfd-loss-function") is DQFDLossFunction


def test_loss_function_refuses_a_float_expert_mask(backend):
    spaces = dict(SPACES, expert_mask=FloatBox(add_batch_rank=True))
    with pytest.raises(RLGraphSpaceError, match="expert_mask"):
        ComponentTest(DQFDLossFunction(double_q=True, importance_weights=True), input_spaces=spaces, backend=backend)


# --- Updates ----------------------------------------------------------------------------------------------------


def _numpy_sgd(weights, batch, mask, qt_sp, learning_rate, margin, supervised_weight, discount):
    """The weights after one SGD step on the DQfD loss (double Q, squared TD loss) of a linear 2-layer Q-net."""
    w1, b1, w2, b2 = (weights[k].astype(np.float64) for k in (KERNEL_1, BIAS_1, KERNEL_2, BIAS_2))
    x, n = batch["states"].astype(np.float64), len(batch["rewards"])
    h = x @ w1 + b1
    q = h @ w2 + b2
    q_sp = (batch["next_states"] @ w1 + b1) @ w2 + b2
    rows, a = np.arange(n), batch["actions"]
    _, td = rnp.dqn_loss_per_item(q, a, batch["rewards"], batch["terminals"], qt_sp, discount, q_t=q_sp)
    # d loss / d Q for loss = mean(0.5 td^2 + supervised_weight * mask * J_E): -td at a_t, and for J_E
    # +1 at argmax_a (Q + l) and -1 at a_t.
    grad_q = np.zeros_like(q)
    grad_q[rows, a] -= td
    margins = np.full_like(q, margin)
    margins[rows, a] = 0.0
    best = np.argmax(q + margins, axis=-1)
    assert (np.sort(q + margins, axis=-1)[:, -1] - np.sort(q + margins, axis=-1)[:, -2] > 1e-3).all()  # No ties.
    grad_q[rows, best] += supervised_weight * mask
    grad_q[rows, a] -= supervised_weight * mask
    grad_q /= n
    grad_h = grad_q @ w2.T
    grads = {KERNEL_1: x.T @ grad_h, BIAS_1: grad_h.sum(0), KERNEL_2: h.T @ grad_q, BIAS_2: grad_q.sum(0)}
    return {k: weights[k] - learning_rate * g for k, g in grads.items()}


def test_update_is_the_numpy_sgd_step(backend):
    agent = _agent(backend, optimizer_spec={"type": "sgd", "learning_rate": 0.1}, supervised_weight=0.7,
                   expert_margin=0.8)
    _perturb_target(agent)
    batch = _random_batch(np.random.RandomState(3), 8)
    mask = np.array([True, False, True, True, False, False, True, False])
    qt_sp = _target_q(agent, batch["next_states"])
    before = agent.get_weights()
    q_s, q_sp = agent.get_q_values(batch["states"]), agent.get_q_values(batch["next_states"])
    expected, _ = rnp.dqfd_loss_per_item(q_s, batch["actions"], batch["rewards"], batch["terminals"], qt_sp, 0.9, mask,
                                         0.8, 0.7, q_t=q_sp)
    j_e = rnp.large_margin_loss(q_s, batch["actions"], 0.8)[mask]
    assert (j_e > 0).sum() >= 2 and (j_e == 0).any()  # Expert items with and without a margin violation.
    loss, per_item = agent.update(batch, apply_demo_loss_to_batch=mask)
    np.testing.assert_allclose(per_item, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss, expected.mean(), rtol=1e-5)
    after = agent.get_weights()
    for name, value in _numpy_sgd(before, batch, mask, qt_sp, 0.1, 0.8, 0.7, 0.9).items():
        assert not np.allclose(after[name], before[name])
        np.testing.assert_allclose(after[name], value, rtol=1e-4, atol=1e-6, err_msg=name)


def _fill(agent, own=8, demos=8):
    """Own records: state 0, action 0, reward 0; demonstrations: state 1, action 2, reward 5 (terminal).
    Every own item then has one loss value and every demonstration another."""
    def record(n, value, action, reward):
        states = np.full((n, 4), value, np.float32)
        return dict(states=states, actions=np.full(n, action), rewards=np.full(n, reward, np.float32),
                    terminals=np.ones(n, bool), next_states=states)
    if own:
        agent.import_observations(record(own, 0.0, 0, 0.0))
    if demos:
        agent.import_demonstrations(record(demos, 1.0, 2, 5.0))
    return record(1, 0.0, 0, 0.0), record(1, 1.0, 2, 5.0)


@pytest.mark.parametrize("ratio, own, demos", [(0.25, 6, 2), (0.0, 8, 0), (1.0, 0, 8), (0.01, 7, 1), (0.99, 1, 7)])
def test_demo_sample_ratio_composes_each_batch(backend, ratio, own, demos):
    agent = _agent(backend, demo_sample_ratio=ratio, optimizer_spec={"type": "sgd", "learning_rate": 0.0})
    assert agent.demo_batch_size == demos
    own_record, demo_record = _fill(agent)
    own_loss = float(agent.get_td_loss(own_record)[1][0])
    demo_loss = float(agent.get_td_loss(demo_record, apply_demo_loss_to_batch=True)[1][0])
    assert abs(own_loss - demo_loss) > 1e-3
    _, per_item = agent.update()
    # Own items first, then the demonstrations (with their large-margin loss).
    np.testing.assert_allclose(per_item, [own_loss] * own + [demo_loss] * demos, rtol=1e-5)
    if 0 < demos < 8:
        _, per_item = agent.update(update_from_demos=False)  # The own memory only.
        np.testing.assert_allclose(per_item, [own_loss] * 8, rtol=1e-5)


def test_empty_expert_memory_and_prioritized_own_memory(backend):
    agent = _agent(backend, memory_spec={"type": "prioritized-replay", "capacity": 32},
                   optimizer_spec={"type": "sgd", "learning_rate": 0.0})
    own_record, demo_record = _fill(agent, demos=0)
    own_loss, _, own_td = agent.get_td_loss(own_record)
    _, per_item = agent.update()  # No demonstrations yet: the whole batch from the own memory.
    np.testing.assert_allclose(per_item, [float(own_loss)] * 8, rtol=1e-5)
    _fill(agent, own=0)
    demo_loss = float(agent.get_td_loss(demo_record, apply_demo_loss_to_batch=True)[1][0])
    _, per_item = agent.update()
    np.testing.assert_allclose(per_item, [float(own_loss)] * 6 + [demo_loss] * 2, rtol=1e-5)
    # The sampled own records got priority |td| + epsilon; the demonstrations' TD errors went nowhere.
    tree = "agent/prioritized-replay/sum_tree"
    leaves = agent.graph_executor.get_weights([tree])[tree]
    leaves = leaves[len(leaves) // 2:][:8]
    assert set(np.round(leaves, 4)) <= {1.0, round(abs(float(own_td[0])) + 1e-6, 4)}
    assert np.isclose(leaves, abs(float(own_td[0])) + 1e-6, rtol=1e-4).any()


def test_container_actions_sum_one_loss_per_leaf(backend):
    network = [{"type": "dense", "units": 6}]
    agent = _agent(backend, action_space=Dict(x=IntBox(2), y=IntBox(3)), network_spec=network, dueling_q=False)
    rng = np.random.RandomState(8)
    _perturb_target(agent)
    batch = dict(states=rng.normal(size=(5, 4)).astype(np.float32),
                 actions={"x": rng.randint(0, 2, 5), "y": rng.randint(0, 3, 5)},
                 rewards=rng.uniform(-1, 1, 5).astype(np.float32), terminals=np.array([0, 0, 1, 0, 0], bool),
                 next_states=rng.normal(size=(5, 4)).astype(np.float32))
    mask = np.array([True, False, True, False, True])
    q_s, q_sp = agent.get_q_values(batch["states"]), agent.get_q_values(batch["next_states"])
    qt_sp = _target_q(agent, batch["next_states"])
    expected = sum(rnp.dqfd_loss_per_item(q_s[k], batch["actions"][k], batch["rewards"], batch["terminals"], qt_sp[k],
                                          0.9, mask, 0.5, 1.0, q_t=q_sp[k])[0] for k in ("x", "y"))
    _, per_item, _ = agent.get_td_loss(batch, apply_demo_loss_to_batch=mask)
    np.testing.assert_allclose(per_item, expected, rtol=1e-5, atol=1e-6)
    agent.import_demonstrations({k: v for k, v in batch.items()})
    loss, per_item = agent.update_from_demos(batch_size=4)
    assert np.isfinite(loss) and per_item.shape == (4,)


def test_update_from_demos_pre_trains_and_syncs_the_target(backend):
    agent = _agent(backend, update_spec={"batch_size": 8, "sync_interval": 3})
    with pytest.raises(RLGraphError, match=r"update_from_demos\(\): the expert memory is empty"):
        agent.update_from_demos()
    batch = _random_batch(np.random.RandomState(4), 10)
    agent.observe_demos(batch["states"], batch["actions"], batch["rewards"], batch["next_states"], batch["terminals"])
    assert agent.memory_size() == 0 and agent.demo_memory_size() == 10
    probe = batch["states"]
    target_q = _target_q(agent, probe)
    loss, per_item = agent.update_from_demos(batch_size=5, num_updates=3)  # Syncs before update 0 only.
    assert per_item.shape == (5,) and agent.num_updates == 3 and agent.timesteps == 0
    np.testing.assert_allclose(_target_q(agent, probe), target_q, rtol=1e-6)
    online_q = agent.get_q_values(probe)
    agent.update_from_demos(num_updates=1)  # Update number 3: sync first.
    np.testing.assert_allclose(_target_q(agent, probe), online_q, rtol=1e-6)
    # Pre-training on a batch: every item is an expert's and the loss falls.
    record = {k: batch[k] for k in ("states", "actions", "rewards", "terminals", "next_states")}
    first = float(agent.get_td_loss(record, apply_demo_loss_to_batch=True)[0])
    agent.update_from_demos(num_updates=30)
    assert float(agent.get_td_loss(record, apply_demo_loss_to_batch=True)[0]) < first
    for kwargs, pattern in (({"batch_size": 0}, "batch_size"), ({"num_updates": 1.5}, "num_updates")):
        with pytest.raises(RLGraphSpecError, match=pattern):
            agent.update_from_demos(**kwargs)


# --- Demonstrations in -----------------------------------------------------------------------------------------------


def test_observe_demos_single_batched_and_n_step(backend):
    agent = _agent(backend, n_step=2, discount=0.5)
    s = np.repeat(np.arange(6, dtype=np.float32)[:, None], 4, axis=1)
    # One episode of 4 steps, rewards 1, 2, 4, 8, terminal at the end: 2-step sums 1 + 0.5 * 2 = 2, 4, 8, 8.
    agent.observe_demos(s[:4], np.array([0, 1, 2, 0]), np.array([1.0, 2.0, 4.0, 8.0]), s[1:5],
                        np.array([False, False, False, True]))
    stored = _demo_record(agent, "demo-memory")
    np.testing.assert_allclose(stored["rewards"], [2.0, 4.0, 8.0, 8.0])
    np.testing.assert_array_equal(stored["next_states"][:, 0], [2, 3, 4, 4])
    np.testing.assert_array_equal(stored["terminals"], [False, False, True, True])
    assert agent.memory_size() == 0 and agent.timesteps == 0  # The own memory and the step count stay.

    agent = _agent(backend)
    agent.observe_demos(s[0], 1, 0.5, s[1], False)  # One transition (no batch rank).
    agent.observe_demos(s[1:3], np.array([2, 0]), np.array([1.0, 2.0]), s[2:4], np.array([False, True]))
    stored = _demo_record(agent, "demo-memory")
    np.testing.assert_array_equal(stored["actions"], [1, 2, 0])
    np.testing.assert_allclose(stored["rewards"], [0.5, 1.0, 2.0])
    with pytest.raises(RLGraphSpaceError, match=r"observe_demos\(actions\)"):
        agent.observe_demos(s[0], 3, 0.0, s[1], False)
    with pytest.raises(RLGraphError, match=r"import_demonstrations\(demonstrations\)"):
        agent.import_demonstrations({"states": s[:1], "actions": [0], "rewards": [0.0], "terminals": [False]})
    assert agent.demo_memory_size() == 3


def test_overflowing_expert_memory_warns_once(backend, caplog):
    agent = _agent(backend, demo_memory_spec={"type": "replay-memory", "capacity": 4})
    batch = _random_batch(np.random.RandomState(0), 3)
    agent.import_demonstrations(batch)
    assert "overwritten" not in caplog.text
    agent.import_demonstrations([batch, batch])
    assert caplog.text.count("oldest are overwritten") == 1 and agent.demo_memory_size() == 4


# --- Specs ------------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides, pattern", [
    ({"expert_margin": -0.5}, r"DQFDAgent\(expert_margin\)"),
    ({"supervised_weight": float("inf")}, r"DQFDAgent\(supervised_weight\)"),
    ({"demo_sample_ratio": 1.5}, r"DQFDAgent\(demo_sample_ratio\)"),
    ({"demo_sample_ratio": True}, r"DQFDAgent\(demo_sample_ratio\)"),
    ({"demo_memory_spec": "replay"}, r"DQFDAgent\(demo_memory_spec\)"),
    ({"demo_memory_spec": {"type": "replay-memory", "capacity": 0}}, r"demo_memory_spec\.capacity"),
    ({"demo_memory_spec": {"type": "prioritized-replay"}}, r"agent\(demo_memory_spec\.type\).*uniform"),
    ({"demo_memory_spec": {"type": "replay-memory", "scope": "replay-memory"}}, r"demo_memory_spec\.scope"),
    ({"memory_spec": {"type": "mem-prioritized-replay", "capacity": 8}}, r"agent\(memory_spec\.type\)"),
])
def test_bad_specs_are_refused(overrides, pattern):
    with pytest.raises(RLGraphSpecError, match=pattern):
        _agent("pytorch", auto_build=False, **overrides)


def test_spec_types_and_unknown_keys(backend):
    spec = {"type": "dqfd", "network_spec": HIDDEN, "demo_memory_spec": {"type": "replay", "capacity": 8},
            "memory_spec": {"type": "replay", "capacity": 8}, "expert_margin": 0.5, "supervised_weight": 1,
            "demo_sample_ratio": 0.2}
    for name in ("dqfd", "dqfd-agent", "DQFDAgent"):
        assert Agent.resolve_type(name) is DQFDAgent
    agent = Agent.from_spec(spec, state_space=FloatBox(shape=(4,)), action_space=IntBox(3), backend=backend)
    assert isinstance(agent, DQFDAgent) and agent.demo_batch_size == 13  # round(0.2 * 64)
    with pytest.raises(RLGraphSpecError, match="demo_memory_spec"):
        Agent.from_spec(dict(spec, demo_memory={"type": "replay"}), state_space=FloatBox(shape=(4,)),
                        action_space=IntBox(3), backend=backend, auto_build=False)
    with pytest.raises(RLGraphSpaceError, match=r"update\(apply_demo_loss_to_batch\)"):
        agent.update(_random_batch(np.random.RandomState(0), 4), apply_demo_loss_to_batch=np.ones(3, bool))
    with pytest.raises(RLGraphSpecError, match=r"update\(expert_margins\)"):
        agent.update(_random_batch(np.random.RandomState(0), 4), expert_margins=np.ones(4))


def test_demo_batch_size_rounding():
    assert [_demo_batch_size(r, 32) for r in (0.0, 0.2, 0.01, 0.5, 0.99, 1.0)] == [0, 6, 1, 16, 31, 32]
    assert _demo_batch_size(0.5, 1) == 1 and _demo_batch_size(0.4, 1) == 0


# --- Checkpoints ------------------------------------------------------------------------------------------------------


def test_checkpoint_round_trip_keeps_the_expert_memory(backend, tmp_path):
    agent = _agent(backend)
    batch = _random_batch(np.random.RandomState(5), 12)
    agent.import_demonstrations(batch)
    agent.import_observations(_random_batch(np.random.RandomState(6), 9))
    agent.update_from_demos(num_updates=2)
    path = agent.store_model(str(tmp_path / "ckpt"), add_timestep=False)

    twin = _agent(backend)
    assert twin.demo_memory_size() == 0
    twin.load_model(path)
    assert twin.demo_memory_size() == 12 and twin.memory_size() == 9 and twin.num_updates == 2
    for name in ("demo-memory", "memory"):
        mine, theirs = _demo_record(agent, name), _demo_record(twin, name)
        assert sorted(mine) == sorted(theirs) == ["actions", "next_states", "rewards", "states", "terminals"]
        for key in mine:
            np.testing.assert_array_equal(theirs[key], mine[key])
    for name, value in agent.get_weights().items():
        np.testing.assert_array_equal(twin.get_weights()[name], value)
    # The twin mixes demonstrations into its batches (it knows its expert memory holds some). On
    # PyTorch it draws what the original draws after loading the same checkpoint (both share the
    # process's generator; TF's random ops cannot be restored).
    theirs = twin.update()[1]
    assert theirs.shape == (8,)
    if backend == "pytorch":
        agent.load_model(path)
        np.testing.assert_array_equal(agent.update()[1], theirs)


# --- Learning ---------------------------------------------------------------------------------------------------------

GRID_CONFIG = {
    "type": "dqfd", "discount": 0.9, "double_q": True, "dueling_q": False, "huber_loss": True,
    "expert_margin": 0.8, "supervised_weight": 1.0, "demo_sample_ratio": 0.25,
    "memory_spec": {"type": "replay-memory", "capacity": 1000},
    "demo_memory_spec": {"type": "replay-memory", "capacity": 1000},
    "preprocessing_spec": [{"type": "reshape", "flatten": True, "flatten_categories": 16}],
    "network_spec": [{"type": "dense", "units": 32, "activation": "relu", "scope": "hidden"}],
    "update_spec": {"batch_size": 32, "sync_interval": 50},
    "optimizer_spec": {"type": "adam", "learning_rate": 0.005},
}
PRETRAIN_UPDATES = 300


def _expert_action(probe, position):
    """The udlr action leading to a cell nearest the goal (holes count as unreachable)."""
    def distance(action):
        probe.step(action, set_discrete_pos=position)
        if probe.world[probe.x, probe.y] == "G":
            return 0
        dist = probe.get_dist_to_goal()
        return np.inf if dist is None or probe.world[probe.x, probe.y] == "H" else dist
    return int(np.argmin([distance(a) for a in range(4)]))


def _pretrain_and_evaluate(backend, seed):
    from rlgraph.environments import GridWorld
    env, probe = GridWorld("4x4"), GridWorld("4x4")
    spec = dict(GRID_CONFIG, execution_spec={"seed": seed, "max_timesteps": 1000, "torch_num_threads": 1,
                                             "tf_num_threads": 1})
    agent = Agent.from_spec(spec, state_space=env.state_space, action_space=env.action_space, backend=backend)
    # The scripted expert's episodes from every cell it can start from.
    starts = [p for p in range(16) if probe.world[divmod(p, 4)] in " S"]
    for start in starts:
        states, actions, rewards, next_states, terminals = [], [], [], [], []
        state, terminal = start, False
        while not terminal:
            action = _expert_action(probe, state)
            next_state, reward, terminal, _ = env.step(action, set_discrete_pos=state)
            states.append(state), actions.append(action), rewards.append(reward), next_states.append(next_state)
            terminals.append(terminal)
            state = next_state
        agent.observe_demos(agent.preprocess_states(np.array(states)), np.array(actions), np.array(rewards),
                            agent.preprocess_states(np.array(next_states)), np.array(terminals))
    agent.update_from_demos(num_updates=PRETRAIN_UPDATES)
    solved = []
    for start in starts:  # Greedy episodes from every start cell (at most 10 steps).
        state, ret = start, 0.0
        for _ in range(10):
            state, reward, terminal, _ = env.step(int(agent.get_action(state, use_exploration=False)),
                                                  set_discrete_pos=state)
            ret += reward
            if terminal:
                break
        solved.append(ret == 1.0)
    return seed, all(solved), agent.demo_memory_size(), agent.memory_size()


@pytest.mark.learning
@pytest.mark.parametrize("backend", ["pytorch", pytest.param("tf", marks=needs_tf)])
def test_pre_training_on_demonstrations_alone_solves_grid_world(backend):
    """After update_from_demos alone (no env step of its own) the greedy policy reaches the goal of
    GridWorld 4x4 from every cell where the expert started, for every seed."""
    seeds = [1, 2, 3]
    results = map_seeds(_pretrain_and_evaluate, [backend] * len(seeds), seeds)  # (Spawned workers, see seed_pool.py.)
    for seed, solved, demos, own in results:
        print(f"DQfD GridWorld 4x4 {backend} seed {seed}: solved {solved} after {PRETRAIN_UPDATES} updates on "
              f"{demos} demonstrations ({own} own transitions)")
    assert all(r[1] for r in results) and all(r[3] == 0 for r in results), results
