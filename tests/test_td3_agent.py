"""`TD3Agent` (Fujimoto et al. 2018, https://arxiv.org/abs/1802.09477) against the paper's definitions,
written out in numpy (tests/td3_reference.py on top of tests/ddpg_reference.py):

- the twin-critic loss (target from the smaller target critic, both critics regressing to it, td of
  critic 1), keyed and positional;
- the target policy smoothing (a' = mu'(s') without noise; within the clipped bounds with a large one);
- one update, and the policy delay: the actor and all targets move only on every d-th update, the
  critics on every update; the delay counter survives a checkpoint;
- prioritized replay (|td| of critic 1) and n-step returns through the shared replay path;
- the spec errors.

Every test body that builds runs on both backends (the `backend` fixture). States are FloatBox(3),
actions FloatBox(2) with the bounds [-2, 2] and [0, 1] (half-ranges 2 and 0.5), batches of 4; the
actor has one tanh layer of 4 units, each critic one of 5 (as in test_ddpg_agent.py).
"""
import numpy as np
import pytest

import ddpg_reference as ref
import td3_reference as td3
from rlgraph.agents import Agent, DDPGAgent, TD3Agent
from rlgraph.components.loss_functions import DDPGLossFunction
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError
from test_ddpg_agent import GAMMA, HIGH, LOW, _batch, _spec

BOUNDS = (LOW.astype(np.float64), HIGH.astype(np.float64))
HALF = (HIGH - LOW) / 2.0
SGD = dict(optimizer_spec={"type": "sgd", "learning_rate": 0.1},
           critic_optimizer_spec={"type": "sgd", "learning_rate": 0.05})
TAU = 0.3
ALPHA, EPSILON = 0.5, 1e-6


def _agent(backend, **overrides):
    return TD3Agent(**_spec(backend, **overrides))


def _sgd_agent(backend, seed=3, **overrides):
    """An agent with plain SGD, no target noise, tau 0.3 and random (distinct) nets; and those nets."""
    args = dict(SGD, target_policy_noise=0.0, target_actor_update=TAU, target_critic_update=TAU)
    agent = _agent(backend, **dict(args, **overrides))
    nets = ref.random_nets(np.random.RandomState(seed), 3, 2, nets=td3.NETS)
    agent.set_weights(ref.weights_from_nets(nets))
    return agent, nets


def _nets(agent):
    return ref.nets_from_weights(agent.graph_executor.get_weights(), nets=td3.NETS)


def _assert_nets_close(actual, expected):
    for net in td3.NETS:
        for key in expected[net]:
            np.testing.assert_allclose(actual[net][key], expected[net][key], rtol=2e-4, atol=2e-6,
                                       err_msg=f"{net}/{key}")


def _changed(before, after):
    """The networks (and optimizers) whose variables differ."""
    return {name.split("/")[1] for name in after if not np.array_equal(after[name], before[name])}


# --- Spec, defaults ---------------------------------------------------------------------------------


def test_types_and_defaults():
    for name in ("td3", "td3-agent", "TD3Agent"):
        assert Agent.resolve_type(name) is TD3Agent
    agent = TD3Agent(**_spec("pytorch", auto_build=False))
    assert isinstance(agent, DDPGAgent) and agent.algorithm == "TD3"
    assert (agent.num_critics, agent.policy_delay, agent.target_policy_noise, agent.target_noise_clip) == \
        (2, 2, 0.2, 0.5)
    assert agent.actor_optimizer_spec["learning_rate"] == agent.critic_optimizer_spec["learning_rate"] == 1e-3
    # Acting noise: stddev 0.1 of the half-range per element ([-2, 2] and [0, 1]).
    assert agent.exploration_spec == {"noise_spec": {"type": "gaussian", "stddev": [0.2, 0.05]}}
    same_range = TD3Agent(**_spec("pytorch", auto_build=False, action_space=FloatBox(-2.0, 2.0, shape=(2,))))
    assert same_range.exploration_spec == {"noise_spec": {"type": "gaussian", "stddev": 0.2}}
    ddpg = DDPGAgent(**_spec("pytorch", auto_build=False))  # DDPG's defaults: one critic, no delay, no smoothing.
    assert (ddpg.num_critics, ddpg.policy_delay, ddpg.target_policy_noise, ddpg.target_noise_clip) == (1, 1, 0.0, None)


BAD_ARGUMENTS = [
    (dict(policy_delay=0), "policy_delay"), (dict(policy_delay=-2), "policy_delay"),
    (dict(policy_delay=1.5), "policy_delay"), (dict(policy_delay="2"), "policy_delay"),
    (dict(target_policy_noise=-0.1), "target_policy_noise"), (dict(target_policy_noise="0.2"), "target_policy_noise"),
    (dict(target_policy_noise=True), "target_policy_noise"),
    (dict(target_policy_noise=float("nan")), "target_policy_noise"),
    (dict(target_noise_clip=0.0), "target_noise_clip"), (dict(target_noise_clip=-0.5), "target_noise_clip"),
    (dict(target_noise_clip=[0.5]), "target_noise_clip"),
    (dict(num_critics=3), "num_critics"), (dict(num_critics=0), "num_critics"),
    (dict(noise_spec={"type": "gaussian", "stddev": -0.1}), "stddev"),
    (dict(action_space=IntBox(3)), "action_space"),
]


@pytest.mark.parametrize("overrides, argument", BAD_ARGUMENTS, ids=[f"{a}-{i}" for i, (_, a) in
                                                                   enumerate(BAD_ARGUMENTS)])
def test_bad_arguments_raise_spec_errors_naming_the_argument(overrides, argument):
    with pytest.raises(RLGraphSpecError) as info:
        TD3Agent(**_spec("pytorch", **overrides))
    assert f"({argument})" in str(info.value), str(info.value)
    if argument == "action_space":
        assert "TD3 needs continuous actions" in str(info.value)


# --- The twin-critic loss ----------------------------------------------------------------------------


F = FloatBox(add_batch_rank=True)
LOSS_KEYS = ("q_values", "q_values_2", "qt_values_sp", "qt_values_sp_2", "rewards", "terminals",
             "importance_weights")


def test_twin_critic_loss_takes_the_smaller_target_and_sums_both_critics(backend):
    rng = np.random.RandomState(0)
    values = {k: rng.normal(scale=2.0, size=4).astype(np.float32) for k in LOSS_KEYS}
    values.update(terminals=np.array([False, True, False, False]),
                  importance_weights=rng.uniform(0.2, 1.0, size=4).astype(np.float32))
    assert np.any(values["qt_values_sp"] < values["qt_values_sp_2"]) and \
        np.any(values["qt_values_sp"] > values["qt_values_sp_2"])  # (Each target critic is the min somewhere.)
    spaces = {k: F for k in LOSS_KEYS}
    spaces["terminals"] = BoolBox(add_batch_rank=True)
    loss = DDPGLossFunction(discount=0.9, num_critics=2, parts=("critic",))
    out = ComponentTest(loss, input_spaces=dict(record=Dict(spaces)), backend=backend).test(
        ("loss_from_record", values))
    expected, per_item, td1, y = td3.twin_losses(values["q_values"], values["q_values_2"], values["qt_values_sp"],
                                                 values["qt_values_sp_2"], values["rewards"], values["terminals"], 0.9,
                                                 values["importance_weights"])
    # By hand for item 1 (terminal): y = r.
    np.testing.assert_allclose(y[1], values["rewards"][1], rtol=1e-6)
    np.testing.assert_allclose(out["critic_loss"], expected, rtol=1e-5)
    np.testing.assert_allclose(out["critic_loss_per_item"], per_item, rtol=1e-5)
    np.testing.assert_allclose(out["td_errors"], td1, rtol=1e-5, atol=1e-6)
    # The positional API on the same values.
    test = ComponentTest(DDPGLossFunction(discount=0.9, num_critics=2), backend=backend,
                         input_spaces=dict(spaces, critic_weights_l2=FloatBox()))
    positional = test.test(("critic_loss", [values[k] for k in ("q_values", "qt_values_sp", "rewards", "terminals",
                                                                 "importance_weights")] +
                            [np.float32(0.0), values["q_values_2"], values["qt_values_sp_2"]]))
    for got, keyed in zip(positional, (out["critic_loss"], out["critic_loss_per_item"], out["td_errors"])):
        np.testing.assert_allclose(got, keyed, rtol=1e-6)
    # The second critic's keys are required.
    with pytest.raises(RLGraphError, match="q_values_2"):
        ComponentTest(DDPGLossFunction(num_critics=2, parts=("critic",)), backend=backend, input_spaces=dict(
            record=Dict({k: spaces[k] for k in ("q_values", "qt_values_sp", "rewards", "terminals")})))
    with pytest.raises(RLGraphSpecError, match=r"DDPGLossFunction\(num_critics\)"):
        DDPGLossFunction(num_critics=3)


# --- Target policy smoothing --------------------------------------------------------------------------


def test_target_actions_without_noise_are_the_target_actor(backend):
    agent, nets = _sgd_agent(backend)
    states = np.random.RandomState(1).normal(size=(6, 3)).astype(np.float32)
    expected, _, _ = ref.actor(nets["target-actor"], states.astype(np.float64), *BOUNDS)
    np.testing.assert_allclose(agent.graph_executor.execute(("get_target_actions", states)), expected, rtol=1e-5,
                               atol=1e-6)


def test_target_noise_is_clipped_to_its_bound_and_the_actions_to_theirs(backend):
    """sigma = 100 half-ranges, c = 0.5: nearly every draw is clipped to +-c * half-range, so a' - mu'(s')
    is +-(1, 0.25) unless the action bounds cut it; a' never leaves [mu' - c half, mu' + c half] or the bounds."""
    agent, nets = _sgd_agent(backend, target_policy_noise=100.0, target_noise_clip=0.5)
    states = np.random.RandomState(2).normal(size=(500, 3)).astype(np.float32)
    mu, _, _ = ref.actor(nets["target-actor"], states.astype(np.float64), *BOUNDS)
    actions = agent.graph_executor.execute(("get_target_actions", states))
    bound = 0.5 * HALF
    lower, upper = np.maximum(mu - bound, LOW), np.minimum(mu + bound, HIGH)
    assert np.all(actions >= lower - 1e-5) and np.all(actions <= upper + 1e-5)
    at_a_bound = np.isclose(actions, lower, atol=1e-5) | np.isclose(actions, upper, atol=1e-5)
    assert at_a_bound.mean() > 0.98
    assert 0.3 < np.mean(actions > mu) < 0.7  # Both signs.
    for draws in (actions, agent.graph_executor.execute(("get_target_actions", states))):  # Fresh draws.
        assert not np.allclose(draws, mu)
    # A small noise without clip: the spread of a' - mu' is sigma * half-range (away from the bounds).
    agent, nets = _sgd_agent(backend, target_policy_noise=0.05, target_noise_clip=None)
    inner = np.zeros((2000, 3), np.float32)
    mu, _, _ = ref.actor(nets["target-actor"], inner.astype(np.float64), *BOUNDS)
    noise = agent.graph_executor.execute(("get_target_actions", inner)) - mu
    assert np.all((mu[0] > LOW + 0.2) & (mu[0] < HIGH - 0.05))  # (The bounds do not cut the noise.)
    np.testing.assert_allclose(noise.std(axis=0), 0.05 * HALF, rtol=0.1)


# --- One update, the delay ----------------------------------------------------------------------------


def test_two_updates_match_numpy_and_only_the_second_moves_actor_and_targets(backend):
    agent, nets = _sgd_agent(backend)
    batch = _batch(np.random.RandomState(4))
    reference_batch = dict(batch, bounds=BOUNDS, squash=True)
    for turn in (False, True):
        expected, critic_loss, actor_loss = td3.sgd_update(nets, reference_batch, GAMMA, actor_lr=0.1,
                                                           critic_lr=0.05, tau=TAU, delayed_turn=turn)
        losses = agent.update(batch)
        np.testing.assert_allclose(losses, (critic_loss, actor_loss), rtol=1e-4, atol=1e-6)
        _assert_nets_close(_nets(agent), expected)
        nets = expected
    assert agent.num_updates == 2


@pytest.mark.parametrize("policy_delay", [2, 3])
def test_actor_and_all_targets_move_only_on_every_dth_update(backend, policy_delay):
    agent = _agent(backend, policy_delay=policy_delay)
    rng = np.random.RandomState(5)
    batch = dict(_batch(rng, n=8), terminals=np.arange(8) % 4 == 3)
    agent.observe(batch["states"], batch["actions"], None, batch["rewards"], batch["next_states"],
                  batch["terminals"])
    calls = []
    execute = agent.graph_executor.execute
    agent.graph_executor.execute = lambda *args: calls.append(args[0][0]) or execute(*args)
    delayed = {"actor", "actor-optimizer", "target-actor", "target-critic", "target-critic-2"}
    for k in range(1, 2 * policy_delay + 1):
        before = agent.graph_executor.get_weights()
        agent.update()
        changed = _changed(before, agent.graph_executor.get_weights())
        turn = k % policy_delay == 0
        assert changed == {"critic", "critic-2", "critic-optimizer"} | (delayed if turn else set()), (k, changed)
    off, on = "update_critic_unsynced_from_memory", "update_from_memory"
    assert calls == ([off] * (policy_delay - 1) + [on]) * 2


def test_checkpoint_keeps_the_delay_counter(backend, tmp_path):
    """After one update (of d = 2) the next one steps the actor: in the agent, and in one loaded from
    its checkpoint; a fresh agent with the same weights would not (its counter is 0)."""
    agent = _agent(backend, target_policy_noise=0.0)
    batch = _batch(np.random.RandomState(6))
    agent.update(batch)
    path = agent.store_model(str(tmp_path / "ckpt"), add_timestep=False)
    weights = agent.graph_executor.get_weights()
    restored = _agent(backend, target_policy_noise=0.0)
    restored.load_model(path)
    assert restored.num_updates == 1
    fresh = _agent(backend, target_policy_noise=0.0)
    fresh.set_weights(weights)
    for other in (agent, restored, fresh):
        other.update(batch)
    after = [a.graph_executor.get_weights() for a in (agent, restored, fresh)]
    assert "actor" in _changed(weights, after[0]) and "actor" not in _changed(weights, after[2])
    for name in after[0]:
        np.testing.assert_array_equal(after[1][name], after[0][name], err_msg=name)


# --- The shared replay path ---------------------------------------------------------------------------


@pytest.mark.parametrize("memory_type", ["prioritized-replay", "mem-prioritized-replay"])
def test_prioritized_replay_gets_the_td_of_critic_1(backend, memory_type):
    agent, nets = _sgd_agent(backend, memory_spec={"type": memory_type, "capacity": 8, "alpha": ALPHA, "beta": 1.0})
    batch = dict(_batch(np.random.RandomState(7)), terminals=np.array([False, False, True, False]))
    for i in range(4):
        agent.observe(batch["states"][i], batch["actions"][i], None, batch["rewards"][i], batch["next_states"][i],
                      batch["terminals"][i])
    agent.flush_buffers()
    critic_loss, td1, _ = td3.critic_losses_and_gradients(nets, dict(batch, bounds=BOUNDS, squash=True), GAMMA)
    losses = agent.update()  # 4 records of priority 1, a batch of 4: each drawn once, weights 1.
    np.testing.assert_allclose(losses.critic_loss, critic_loss, rtol=1e-4, atol=1e-6)
    if agent.replay.in_graph:
        memory = agent.root_component.memory
        priorities = agent.graph_executor.get_weights()["agent/prioritized-replay/sum_tree"][memory.capacity_pow2:][:4]
    else:
        priorities = agent.replay.memory.tree.get(np.arange(4))
    np.testing.assert_allclose(priorities, (np.abs(td1) + EPSILON) ** ALPHA, rtol=1e-4)


def test_n_step_targets_bootstrap_with_gamma_to_the_n(backend):
    agent, nets = _sgd_agent(backend, n_step=3)
    batch = dict(_batch(np.random.RandomState(9)), terminals=np.zeros(4, bool))
    reference_batch = dict(batch, bounds=BOUNDS, squash=True)
    expected, critic_loss, actor_loss = td3.sgd_update(nets, reference_batch, GAMMA ** 3, actor_lr=0.1,
                                                       critic_lr=0.05, tau=TAU, delayed_turn=False)
    assert abs(critic_loss - td3.critic_losses_and_gradients(nets, reference_batch, GAMMA)[0]) > 1e-3
    np.testing.assert_allclose(agent.update(batch), (critic_loss, actor_loss), rtol=1e-4, atol=1e-6)
    _assert_nets_close(_nets(agent), expected)
    # The observe buffers fold 3 rewards into each record, as for DDPG and DQN (test_ddpg_replay.py).
    rewards = np.array([1.0, 2.0, 4.0, 8.0], np.float32)
    state = np.zeros(3, np.float32)
    for t in range(4):
        agent.observe(state, np.array([0.0, 0.5], np.float32), None, rewards[t], state, t == 3)
    agent.flush_buffers()
    stored = agent.graph_executor.get_weights(["agent/replay-memory/memory/rewards"])
    np.testing.assert_allclose(stored["agent/replay-memory/memory/rewards"][:2],
                               [1 + GAMMA * 2 + GAMMA ** 2 * 4, 2 + GAMMA * 4 + GAMMA ** 2 * 8], rtol=1e-6)


# --- Acting ----------------------------------------------------------------------------------------


def test_acting_noise_is_a_tenth_of_the_half_range(backend):
    agent = _agent(backend)
    state = np.zeros(3, np.float32)
    greedy = agent.get_action(state, use_exploration=False)
    margin = 3 * 0.1 * HALF
    assert np.all((greedy > LOW + margin) & (greedy < HIGH - margin))  # (The bounds rarely cut the noise.)
    noise = np.stack([agent.get_action(state) for _ in range(400)]) - greedy
    np.testing.assert_allclose(noise.std(axis=0), 0.1 * HALF, rtol=0.15)
    np.testing.assert_allclose(noise.mean(axis=0), 0.0, atol=0.2 * 0.1 * HALF.max())
