"""`DDPGAgent`'s arguments (vinci's names and their aliases), the errors for bad inputs, the
shipped Pendulum config, and checkpoints (noise state included). Test bodies that build run on both
backends; spec checks that fail before the build run once.
"""
import numpy as np
import pytest
from backend_marks import needs_both_backends

from rlgraph.agents import Agent, DDPGAgent
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox
from rlgraph.utils.rlgraph_errors import (RLGraphError, RLGraphNonFiniteError, RLGraphSpaceError,
                                          RLGraphSpecError)
from test_ddpg_agent import HIGH, LOW, OU_NAME, _agent, _batch, _spec

CONFIG = "configs/ddpg_pendulum.json"


def _unbuilt(**overrides):
    return DDPGAgent(**_spec("pytorch", auto_build=False, **overrides))


# --- Arguments --------------------------------------------------------------------------------


def test_defaults():
    agent = _unbuilt()
    assert agent.actor_optimizer_spec == {"type": "adam", "learning_rate": 1e-4, "scope": "actor-optimizer"}
    assert agent.critic_optimizer_spec == {"type": "adam", "learning_rate": 1e-3, "scope": "critic-optimizer"}
    assert (agent.actor_tau, agent.critic_tau) == (0.005, 0.005)
    assert agent.exploration_spec == {"noise_spec": {"type": "ornstein-uhlenbeck", "theta": 0.15, "sigma": 0.2}}
    assert (agent.warmup_actor_steps, agent.warmup_critic_steps, agent.random_steps, agent.memory_interval) == \
        (0, 0, 0, 1)
    assert agent.critic_gradient_clip is None and agent.critic_regularization == 0.0


def test_vinci_names():
    agent = _unbuilt(actor_learning_rate=0.002, critic_learning_rate=0.003, random_process={"type": "gaussian"},
                     batch_size=8, train_interval=3, update_spec={"sync_tau": 0.1}, target_critic_update=0.2)
    assert agent.actor_optimizer_spec["learning_rate"] == 0.002
    assert agent.critic_optimizer_spec == {"type": "adam", "learning_rate": 0.003, "scope": "critic-optimizer"}
    assert agent.exploration_spec == {"noise_spec": {"type": "gaussian"}}
    assert agent.update_spec["batch_size"] == 8 and agent.update_spec["update_interval"] == 3
    assert (agent.actor_tau, agent.critic_tau) == (0.1, 0.2)  # update_spec.sync_tau unless given.
    agent = _unbuilt(value_function_optimizer_spec={"type": "sgd", "learning_rate": 0.5},
                     optimizer_spec={"type": "rmsprop"}, actor_learning_rate=0.01,
                     exploration_spec={"noise_spec": {"type": "ou", "sigma": 0.1}})
    assert agent.critic_optimizer_spec == {"type": "sgd", "learning_rate": 0.5, "scope": "critic-optimizer"}
    assert agent.actor_optimizer_spec == {"type": "rmsprop", "learning_rate": 0.01, "scope": "actor-optimizer"}
    assert agent.exploration_spec == {"noise_spec": {"type": "ou", "sigma": 0.1}}


BAD_ARGUMENTS = [
    (dict(action_space=IntBox(3)), "action_space"),
    (dict(action_space=BoolBox()), "action_space"),
    (dict(action_space=Dict(a=FloatBox(-1.0, 1.0), b=FloatBox(-1.0, 1.0))), "action_space"),
    (dict(action_space=FloatBox(shape=(2,))), "action_space"),  # Unbounded.
    (dict(state_space=Dict(a=FloatBox(shape=(2,)), b=FloatBox(shape=(1,)))), "state_space"),
    (dict(network_spec=None), "network_spec"),
    (dict(update_spec={"batch_sise": 4}), "update_spec"),
    (dict(update_spec={"sync_interval": 4}), "update_spec.sync_interval"),
    (dict(update_spec={"batch_size": 4}, batch_size=8), "batch_size"),
    (dict(critic_gradient_clip=0.0), "critic_gradient_clip"),
    (dict(critic_regularization=-0.1), "critic_regularization"),
    (dict(target_actor_update=1.5), "target_actor_update"),
    (dict(target_critic_update=0.0), "target_critic_update"),
    (dict(warmup_actor_steps=-1), "warmup_actor_steps"),
    (dict(warmup_critic_steps=2.5), "warmup_critic_steps"),
    (dict(memory_interval=0), "memory_interval"),
    (dict(random_steps="10"), "random_steps"),
    (dict(invert_gradients="yes"), "invert_gradients"),
    (dict(invert_gradients=True, gradient_inverter_min=1.0, gradient_inverter_max=1.0), "gradient_inverter_max"),
    (dict(noise_spec={"type": "gaussian"}, random_process={"type": "ou"}), "noise_spec"),
    (dict(exploration_spec={"epsilon_spec": {"decay_spec": 1.0}}), "exploration_spec.epsilon_spec"),
    (dict(noise_spec="ou"), "noise_spec"),
    (dict(critic_optimizer_spec={"type": "adam"}, value_function_optimizer_spec={"type": "adam"}),
     "critic_optimizer_spec"),
    (dict(optimizer_spec={"type": "adam", "learning_rate": 0.1}, actor_learning_rate=0.2), "actor_learning_rate"),
    (dict(critic_learning_rate=float("nan")), "critic_learning_rate"),
    (dict(memory_spec={"type": "ring-buffer", "capacity": 16}), "memory_spec"),  # (Prioritized ones are valid.)
    (dict(memory_spec={"type": "mem-prioritized-replay", "alpah": 0.5}), "memory_spec"),
    (dict(memory_spec={"type": "replay-memory", "capacity": 0}), "memory_spec.capacity"),
    (dict(n_step=0), "n_step"),
    (dict(memory_spec=[16]), "memory_spec"),
]


@pytest.mark.parametrize("overrides, argument", BAD_ARGUMENTS, ids=[a for _, a in BAD_ARGUMENTS])
def test_bad_arguments_raise_spec_errors_naming_the_argument(overrides, argument):
    with pytest.raises(RLGraphSpecError) as info:
        _unbuilt(**overrides)
    assert f"({argument}" in str(info.value) or f"({argument})" in str(info.value), str(info.value)


def test_discrete_actions_say_ddpg_needs_continuous_actions():
    with pytest.raises(RLGraphSpecError, match="DDPG needs continuous actions"):
        _unbuilt(action_space=IntBox(3))


def test_unknown_constructor_key_lists_the_valid_ones():
    spec = dict(_spec("pytorch", auto_build=False), type="ddpg", warmup_actor_step=3)
    with pytest.raises(RLGraphSpecError, match="warmup_actor_step") as info:
        Agent.from_spec(spec)
    assert "warmup_actor_steps" in str(info.value)


# --- Bad data ---------------------------------------------------------------------------------


def test_bad_batches_and_states_raise_naming_the_argument(backend):
    agent = _agent(backend)
    batch = _batch(np.random.RandomState(0))
    cases = [
        (dict(batch, actions=batch["actions"][:, :1]), RLGraphSpaceError, "update(batch)['actions']"),
        (dict(batch, states=batch["states"][:, :2]), RLGraphSpaceError, "update(batch)['states']"),
        (dict(batch, rewards=np.array([0.0, np.nan, 0.0, 0.0], np.float32)), RLGraphNonFiniteError,
         "update(batch)['rewards']"),
        (dict(batch, actions=np.where(np.eye(4, 2) > 0, np.inf, batch["actions"]).astype(np.float32)),
         RLGraphNonFiniteError, "update(batch)['actions']"),
        ({k: v for k, v in batch.items() if k != "terminals"}, RLGraphError, "terminals"),
        (dict(batch, priorities=np.ones(4)), RLGraphError, "priorities"),
    ]
    before = agent.graph_executor.get_weights()
    for bad, error, text in cases:
        with pytest.raises(error) as info:
            agent.update(bad)
        assert text in str(info.value), str(info.value)
    after = agent.graph_executor.get_weights()
    assert all(np.array_equal(after[k], before[k]) for k in before) and agent.num_updates == 0
    with pytest.raises(RLGraphSpaceError, match=r"get_action\(states\)"):
        agent.get_action(np.zeros((2, 4), np.float32))
    with pytest.raises(RLGraphSpaceError, match=r"observe\(actions\)"):
        agent.observe(np.zeros(3, np.float32), np.zeros(3, np.float32), None, 0.0, np.zeros(3, np.float32), False)


def test_a_non_finite_loss_is_reported(backend):
    agent = _agent(backend)
    batch = _batch(np.random.RandomState(0))
    agent.set_weights({"agent/critic/q-layer/bias": np.array([np.finfo(np.float32).max], np.float32)})
    with pytest.raises(RLGraphNonFiniteError, match="update"):
        agent.update(dict(batch, rewards=np.full(4, -3e38, np.float32)))


# --- The shipped config --------------------------------------------------------------------------


def test_shipped_pendulum_config(backend):
    agent = Agent.from_spec(CONFIG, state_space=FloatBox(low=-8.0, high=8.0, shape=(3,)),
                            action_space=FloatBox(low=-2.0, high=2.0, shape=(1,)), backend=backend,
                            memory_spec={"type": "replay-memory", "capacity": 512})
    assert type(agent) is DDPGAgent and agent.random_steps == 1000 and agent.update_spec["batch_size"] == 256
    action = agent.get_action(np.zeros(3, np.float32), use_exploration=False)
    assert action.shape == (1,) and -2.0 <= action[0] <= 2.0


# --- Checkpoints ---------------------------------------------------------------------------------


def test_checkpoint_round_trip_with_the_noise_state(backend, tmp_path):
    def make():
        return _agent(backend, memory_interval=2, noise_spec={"type": "ou", "sigma": 0.3, "theta": 0.1})

    agent = make()
    rng = np.random.RandomState(4)
    batch = dict(_batch(rng, n=9), terminals=np.arange(9) == 8)
    agent.observe(batch["states"], batch["actions"], None, batch["rewards"], batch["next_states"], batch["terminals"])
    agent.update()
    state = np.ones(3, np.float32)
    for _ in range(4):
        agent.get_action(state)
    path = agent.store_model(str(tmp_path / "ckpt"), add_timestep=False)
    greedy = agent.get_action(state, use_exploration=False)
    weights = agent.graph_executor.read_variable_values()
    ou_state = agent.graph_executor.read_variable_values(OU_NAME)
    assert not np.allclose(ou_state, 0.0)
    next_actions = [agent.get_action(state) for _ in range(3)]
    next_losses = agent.update()

    restored = make()
    restored.load_model(path)
    np.testing.assert_array_equal(restored.graph_executor.read_variable_values(OU_NAME), ou_state)
    loaded = restored.graph_executor.read_variable_values()
    assert loaded.keys() == weights.keys() and all(np.array_equal(loaded[k], weights[k]) for k in weights)
    assert (restored.timesteps, restored.num_updates, restored.memory_counter, restored.memory_size()) == (9, 1, 9, 5)
    np.testing.assert_array_equal(restored.get_action(state, use_exploration=False), greedy)
    if backend == "pytorch":  # (TF's random ops cannot be restored: there the noise draws differ.)
        np.testing.assert_array_equal([restored.get_action(state) for _ in range(3)], next_actions)
        assert restored.update() == next_losses
    else:
        assert all(np.all((a >= LOW) & (a <= HIGH)) for a in (restored.get_action(state) for _ in range(3)))


def test_export_serves_the_greedy_actions(backend, tmp_path):
    agent = _agent(backend)
    states = np.random.RandomState(0).normal(size=(4, 3)).astype(np.float32)
    path = agent.export_graph(str(tmp_path / "exported"), format="pickled-module" if backend == "pytorch" else None)
    if backend == "tf":
        import tensorflow as tf
        loaded = tf.saved_model.load(path)  # (Kept: its functions need its variables alive.)
        _, actions = loaded.api_functions["get_greedy_actions"](tf.constant(states))
    else:
        import torch
        _, actions = torch.load(path, weights_only=False)("get_greedy_actions", torch.as_tensor(states))
        actions = actions.detach()  # (The exported module runs without no_grad.)
    np.testing.assert_allclose(np.asarray(actions), agent.get_action(states, use_exploration=False), rtol=1e-6)


@needs_both_backends
def test_the_same_weights_act_and_learn_alike_on_both_backends():
    agents = [_agent(backend) for backend in ("tf", "pytorch")]
    weights = agents[0].graph_executor.get_weights()
    agents[1].set_weights({k: v for k, v in weights.items() if "/replay-memory/" not in k})
    states = np.random.RandomState(1).normal(size=(5, 3)).astype(np.float32)
    greedy = [agent.get_action(states, use_exploration=False) for agent in agents]
    np.testing.assert_allclose(greedy[0], greedy[1], rtol=1e-5, atol=1e-6)
    batch = _batch(np.random.RandomState(2))
    losses = [agent.update(batch) for agent in agents]
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-5, atol=1e-6)
    after = [agent.graph_executor.get_weights() for agent in agents]
    for name in (k for k in after[0] if "/replay-memory/" not in k):
        np.testing.assert_allclose(after[0][name], after[1][name], rtol=1e-4, atol=1e-6, err_msg=name)
