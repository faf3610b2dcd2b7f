"""`DDPGAgent`: acting, one update against the numpy reference of tests/ddpg_reference.py (losses
and the SGD parameter changes of actor, critic and both targets), warm-up gating, gradient
inverting, noise resets, memory_interval and random steps (specs, errors and checkpoints:
test_ddpg_agent_specs.py).

Every test body runs on both backends (the `backend` fixture). States are FloatBox(3), actions
FloatBox(2) with the bounds [-2, 2] and [0, 1]; the actor has one tanh layer of 4 units, the
critic one of 5.
"""
import numpy as np
import pytest

import ddpg_reference as ref
from rlgraph.agents import DDPGAgent
from rlgraph.environments import RandomEnv
from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
from rlgraph.spaces import FloatBox

LOW, HIGH = np.array([-2.0, 0.0], np.float32), np.array([2.0, 1.0], np.float32)
ACTOR_NET = [{"type": "dense", "units": 4, "activation": "tanh", "scope": "hidden"}]
CRITIC_NET = [{"type": "dense", "units": 5, "activation": "tanh", "scope": "hidden"}]
GAMMA = 0.9
OU_NAME = "agent/exploration/ornstein-uhlenbeck-noise/ou_state"


def _spec(backend, **overrides):
    spec = dict(state_space=FloatBox(shape=(3,)), action_space=FloatBox(low=LOW, high=HIGH), network_spec=ACTOR_NET,
                critic_network_spec=CRITIC_NET, memory_spec={"type": "replay-memory", "capacity": 16},
                update_spec={"batch_size": 4}, observe_spec={"buffer_size": 4}, discount=GAMMA,
                execution_spec={"seed": 1, "max_timesteps": 1000}, backend=backend)
    spec.update(overrides)
    return spec


def _agent(backend, **overrides):
    return DDPGAgent(**_spec(backend, **overrides))


def _batch(rng, n=4, low=LOW, high=HIGH):
    return dict(states=rng.normal(size=(n, 3)).astype(np.float32),
                actions=rng.uniform(low, high, size=(n, 2)).astype(np.float32),
                rewards=rng.uniform(-2.0, 2.0, size=n).astype(np.float32), terminals=np.arange(n) % 3 == 2,
                next_states=rng.normal(size=(n, 3)).astype(np.float32))


def _nets(agent):
    return ref.nets_from_weights(agent.graph_executor.get_weights())


def _assert_nets_close(actual, expected, nets=ref.NETS):
    for net in nets:
        for key in expected[net]:
            np.testing.assert_allclose(actual[net][key], expected[net][key], rtol=2e-4, atol=2e-6,
                                       err_msg=f"{net}/{key}")


# --- Acting ---------------------------------------------------------------------------------------


def test_build_and_act(backend):
    agent = _agent(backend, preprocessing_spec=[{"type": "multiply", "factor": 2.0}])
    nets = _nets(agent)
    for part in ("actor", "critic"):  # The targets start as copies.
        for key in nets[part]:
            np.testing.assert_array_equal(nets["target-" + part][key], nets[part][key])
    states = np.random.RandomState(0).normal(size=(5, 3)).astype(np.float32)
    greedy = agent.get_action(states, use_exploration=False)
    expected, _, _ = ref.actor(nets["actor"], 2.0 * states, LOW, HIGH)
    np.testing.assert_allclose(greedy, expected, rtol=1e-5, atol=1e-6)
    actions, preprocessed = agent.get_action(states, extra_returns="preprocessed_states")
    assert actions.shape == (5, 2) and actions.dtype == np.float32
    assert np.all(actions >= LOW) and np.all(actions <= HIGH) and not np.allclose(actions, greedy)
    np.testing.assert_allclose(preprocessed, 2.0 * states, rtol=1e-6)
    single = agent.get_action(states[0], use_exploration=False)
    assert single.shape == (2,) and agent.action_space.contains(single)
    np.testing.assert_allclose(single, greedy[0], rtol=1e-6)
    q = agent.get_q_values(states, greedy)
    np.testing.assert_allclose(q, ref.critic(nets["critic"], 2.0 * states, greedy)[0], rtol=1e-4, atol=1e-6)
    assert agent.get_weights().keys() == {k for k in agent.graph_executor.get_weights() if k.startswith("agent/actor/")}


def test_gaussian_noise_and_large_noise_are_clipped_to_the_bounds(backend):
    agent = _agent(backend, noise_spec={"type": "gaussian", "stddev": 10.0})
    states = np.zeros((200, 3), np.float32)
    actions = np.stack([agent.get_action(states[0]) for _ in range(50)])
    assert np.all(actions >= LOW) and np.all(actions <= HIGH)
    assert np.mean(actions == LOW) > 0.2 and np.mean(actions == HIGH) > 0.2  # Mostly clipped at a bound.
    assert "reset_noise" not in agent.root_component.api_methods
    agent.reset()  # (Nothing to reset for Gaussian noise.)


def test_random_steps_act_uniformly_then_the_actor_takes_over(backend):
    agent = _agent(backend, random_steps=3)
    state = np.ones(3, np.float32)
    greedy = agent.get_action(state, use_exploration=False)
    random_actions = [agent.get_action(state) for _ in range(30)]
    assert all(a.shape == (2,) and agent.action_space.contains(a) for a in random_actions)
    assert np.std(np.stack(random_actions), axis=0).min() > 0.2  # Uniform in the bounds (std 1.15 and 0.29).
    action, preprocessed = agent.get_action(state[None], extra_returns="preprocessed_states")
    assert action.shape == (1, 2) and preprocessed.shape == (1, 3)
    for t in range(3):
        agent.observe(state, random_actions[t], None, 0.0, state, False)
    noisy = [agent.get_action(state) for _ in range(3)]  # OU noise around the actor (sigma 0.2).
    assert max(np.abs(a - greedy).max() for a in noisy) < 1.0


# --- One update against numpy -------------------------------------------------------------------


CASES = {
    "plain": dict(),
    "huber-l2-taus": dict(critic_gradient_clip=0.8, critic_regularization=0.01, target_actor_update=0.2,
                          target_critic_update=0.6),
    "inverted-linear": dict(invert_gradients=True, squash_actions=False),
    "inverted-tanh-custom-range": dict(invert_gradients=True, gradient_inverter_min=-3.0, gradient_inverter_max=3.0),
}


@pytest.mark.parametrize("case", CASES)
def test_one_update_matches_numpy(backend, case):
    args = CASES[case]
    agent = _agent(backend, optimizer_spec={"type": "sgd", "learning_rate": 0.1},
                   critic_optimizer_spec={"type": "sgd", "learning_rate": 0.05}, **args)
    rng = np.random.RandomState(3)
    nets = ref.random_nets(rng, 3, 2)  # The targets differ from the online nets.
    agent.set_weights(ref.weights_from_nets(nets))
    batch = _batch(rng)
    squash = args.get("squash_actions", True)
    reference_batch = dict(batch, bounds=(LOW.astype(np.float64), HIGH.astype(np.float64)), squash=squash)
    inverter = None
    if "gradient_inverter_min" in args:
        inverter = (np.full(2, args["gradient_inverter_min"]), np.full(2, args["gradient_inverter_max"]))
    elif args.get("invert_gradients"):
        inverter = reference_batch["bounds"]  # (The action bounds by default.)
    expected, critic_loss, actor_loss = ref.sgd_update(
        nets, reference_batch, GAMMA, actor_lr=0.1, critic_lr=0.05, actor_tau=args.get("target_actor_update", 0.005),
        critic_tau=args.get("target_critic_update", 0.005), huber_delta=args.get("critic_gradient_clip"),
        regularization=args.get("critic_regularization", 0.0), inverter=inverter)
    if case == "inverted-linear":  # Some actions lie beyond a bound, where inverting flips the gradient.
        mu, _, _ = ref.actor(nets["actor"], batch["states"].astype(np.float64), LOW, HIGH, squash=False)
        assert np.any((mu < LOW) | (mu > HIGH))
    if case == "huber-l2-taus":  # Some TD errors lie beyond the Huber delta.
        _, td, _ = ref.critic_loss_and_gradients(nets, reference_batch, GAMMA)
        assert np.any(np.abs(td) > 0.8) and np.any(np.abs(td) < 0.8)
    # Without an update, the actor loss is that of the critic as it is.
    unchanged_actor_loss = ref.actor_loss_and_gradients(nets, reference_batch, nets["critic"])[0]
    np.testing.assert_allclose(agent.get_losses(batch), (critic_loss, unchanged_actor_loss), rtol=1e-4, atol=1e-6)
    losses = agent.update(batch)
    np.testing.assert_allclose(losses.critic_loss, critic_loss, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(losses.actor_loss, actor_loss, rtol=1e-4, atol=1e-6)
    _assert_nets_close(_nets(agent), expected)
    assert agent.num_updates == 1


def test_numpy_reference_gradients_match_finite_differences():
    """The hand-written gradients of the reference against central differences of its losses."""
    rng = np.random.RandomState(5)
    nets = ref.random_nets(rng, 3, 2)
    batch = dict(_batch(rng), bounds=(LOW.astype(np.float64), HIGH.astype(np.float64)), squash=True)

    def numeric(loss_fn, net):
        out = {}
        for key, value in nets[net].items():
            grad = np.zeros_like(value)
            for index in np.ndindex(value.shape):
                old = value[index]
                value[index] = old + 1e-6
                up = loss_fn()
                value[index] = old - 1e-6
                down = loss_fn()
                value[index] = old
                grad[index] = (up - down) / 2e-6
            out[key] = grad
        return out

    _, _, grads = ref.critic_loss_and_gradients(nets, batch, GAMMA, 0.3, 0.01)
    expected = numeric(lambda: ref.critic_loss_and_gradients(nets, batch, GAMMA, 0.3, 0.01)[0], "critic")
    for key in grads:
        np.testing.assert_allclose(grads[key], expected[key], rtol=1e-5, atol=1e-8)
    _, grads, _ = ref.actor_loss_and_gradients(nets, batch, nets["critic"])
    expected = numeric(lambda: ref.actor_loss_and_gradients(nets, batch, nets["critic"])[0], "actor")
    for key in grads:
        np.testing.assert_allclose(grads[key], expected[key], rtol=1e-5, atol=1e-8)


def test_gradient_inverting_arithmetic():
    g = np.array([[1.0, -1.0], [2.0, -2.0], [1.0, -1.0]])
    a = np.array([[0.5, 0.5], [1.5, 1.5], [-0.5, -0.5]])  # Inside, above and below [0, 1].
    np.testing.assert_allclose(ref.invert(g, a, np.zeros(2), np.ones(2)),
                               [[0.5, -0.5], [-1.0, -3.0], [1.5, 0.5]])


def test_update_from_memory_is_one_call_and_syncs_softly(backend):
    agent = _agent(backend, target_actor_update=0.5, target_critic_update=0.25)
    rng = np.random.RandomState(0)
    batch = dict(_batch(rng, n=8), terminals=np.arange(8) % 4 == 3)  # Two whole episodes.
    assert not agent.ready_to_update()
    agent.observe(batch["states"], batch["actions"], None, batch["rewards"], batch["next_states"],
                  batch["terminals"])
    assert agent.memory_size() == 8 and agent.ready_to_update()
    before = _nets(agent)
    calls = []
    execute = agent.graph_executor.execute
    agent.graph_executor.execute = lambda *args: calls.append(args[0][0]) or execute(*args)
    losses = agent.update()
    assert calls == ["update_from_memory"] and np.isfinite(losses).all()
    after = _nets(agent)
    for part, tau in (("actor", 0.5), ("critic", 0.25)):
        for key in after[part]:
            assert not np.allclose(after[part][key], before[part][key])
            np.testing.assert_allclose(after["target-" + part][key],
                                       tau * after[part][key] + (1 - tau) * before["target-" + part][key],
                                       rtol=1e-5, atol=1e-7)


# --- Warm-up ------------------------------------------------------------------------------------


def test_warm_up_gates_the_critic_and_the_actor(backend):
    agent = _agent(backend, warmup_critic_steps=2, warmup_actor_steps=4)
    rng = np.random.RandomState(1)
    batch = _batch(rng)
    state = np.zeros(3, np.float32)

    def step_and_compare():
        before = agent.graph_executor.get_weights()
        agent.update(batch)
        after = agent.graph_executor.get_weights()
        return {part for part in ("actor", "critic", "target-actor", "target-critic", "actor-optimizer",
                                  "critic-optimizer")
                if any(not np.array_equal(after[k], before[k]) for k in after if k.startswith(f"agent/{part}/"))}

    assert step_and_compare() == set() and agent.num_updates == 0  # Before both warm-ups: nothing steps.
    for t in range(2):
        agent.observe(state, np.array([0.0, 0.5], np.float32), None, 0.0, state, False)
    assert step_and_compare() == {"critic", "target-critic", "critic-optimizer"}
    for t in range(2):
        agent.observe(state, np.array([0.0, 0.5], np.float32), None, 0.0, state, False)
    assert step_and_compare() == {"actor", "critic", "target-actor", "target-critic", "actor-optimizer",
                                  "critic-optimizer"}
    assert agent.num_updates == 2


def test_actor_may_warm_up_before_the_critic(backend):
    agent = _agent(backend, warmup_critic_steps=10, warmup_actor_steps=0)
    before = agent.graph_executor.get_weights()
    agent.update(_batch(np.random.RandomState(2)))
    after = agent.graph_executor.get_weights()
    changed = {k.split("/")[1] for k in after if not np.array_equal(after[k], before[k])}
    assert changed == {"actor", "target-actor", "actor-optimizer"}


def test_ready_to_update_waits_for_a_batch_and_a_warm_up(backend):
    agent = _agent(backend, warmup_critic_steps=6, warmup_actor_steps=8)
    state = np.zeros(3, np.float32)
    for t in range(6):
        assert not agent.ready_to_update()
        agent.observe(state, np.array([0.0, 0.5], np.float32), None, 0.0, state, t == 5)
    assert agent.memory_size() == 6 and agent.ready_to_update()


# --- Noise --------------------------------------------------------------------------------------


def test_ou_noise_is_reset_at_every_episode_start(backend):
    """sigma 0: x moves halfway from its state to mu = 1 per draw. A hook sets x to 5 after every step,
    so a step draws 0.5 * 5 + 0.5 * 1 = 3, unless the episode start reset x to mu: then it draws 1."""
    agent = _agent(backend, noise_spec={"type": "ou", "sigma": 0.0, "theta": 0.5, "mu": 1.0},
                   update_spec={"batch_size": 4, "do_updates": False})
    env = RandomEnv(state_space=FloatBox(shape=(3,)), action_space=FloatBox(low=LOW, high=HIGH), terminal_prob=0.3,
                    seed=2)
    drawn = []

    def hook(agent_, data):
        drawn.append((data.episode_step, float(agent_.graph_executor.read_variable_values(OU_NAME)[0])))
        agent_.set_weights({OU_NAME: np.full(2, 5.0, np.float32)})

    worker = SingleThreadedWorker(agent, env, hooks=[hook], seed=2)
    stats = worker.execute_timesteps(60)
    assert stats["episodes_executed"] >= 5
    assert all(x == (1.0 if step == 1 else 3.0) for step, x in drawn), drawn
    worker.terminate()


def test_reset_sets_the_ou_state_to_mu_and_greedy_acting_leaves_it(backend):
    agent = _agent(backend, noise_spec={"type": "ornstein-uhlenbeck", "sigma": 0.5, "mu": 0.25})
    state = np.zeros(3, np.float32)
    for _ in range(5):
        agent.get_action(state)
    moved = agent.graph_executor.read_variable_values(OU_NAME)
    assert not np.allclose(moved, 0.25)
    agent.get_action(state, use_exploration=False)
    np.testing.assert_array_equal(agent.graph_executor.read_variable_values(OU_NAME), moved)
    agent.reset()
    np.testing.assert_array_equal(agent.graph_executor.read_variable_values(OU_NAME), [0.25, 0.25])


# --- Memory and workers ---------------------------------------------------------------------------


def test_memory_interval_keeps_every_nth_transition(backend):
    agent = _agent(backend, memory_interval=3, observe_spec={"buffer_size": 5})
    states = np.arange(10, dtype=np.float32)[:, None].repeat(3, axis=1)
    for t in range(10):
        agent.observe(states[t], np.array([0.0, 0.5], np.float32), None, float(t), states[t], t == 9)
    stored = agent.graph_executor.get_weights(["agent/replay-memory/memory/rewards"])
    assert agent.memory_size() == 4 and agent.memory_counter == 10
    np.testing.assert_array_equal(stored["agent/replay-memory/memory/rewards"][:4], [0.0, 3.0, 6.0, 9.0])


def test_a_worker_trains_the_agent(backend):
    agent = _agent(backend, update_spec={"batch_size": 8, "update_interval": 2}, warmup_actor_steps=12,
                   memory_spec={"type": "replay-memory", "capacity": 64})
    env = RandomEnv(state_space=FloatBox(shape=(3,)), action_space=FloatBox(low=LOW, high=HIGH), terminal_prob=0.1,
                    seed=3)
    worker = SingleThreadedWorker(agent, env, seed=3)
    stats = worker.execute_timesteps(40)
    assert agent.num_updates > 10 and np.isfinite(stats["mean_loss"])
    worker.terminate()
