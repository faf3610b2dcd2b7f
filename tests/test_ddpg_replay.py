"""DDPG on the shared replay path (rlgraph/agents/replay_access.py): prioritized replay in the graph and
in numpy (importance-weighted critic loss, |td| priorities) and n-step returns (the same records as
DQN's n-step path, gamma**n in the critic's target), checked against tests/ddpg_reference.py.

Every test body runs on both backends (the `backend` fixture). The agents are those of
test_ddpg_agent.py: states FloatBox(3), actions FloatBox(2) in [-2, 2] x [0, 1], batches of 4.
"""
import copy

import numpy as np
import pytest

import ddpg_reference as ref
from rlgraph.agents import DQNAgent
from rlgraph.spaces import FloatBox, IntBox
from test_ddpg_agent import GAMMA, HIGH, LOW, _agent, _assert_nets_close, _batch, _nets

PRIORITIZED = ["prioritized-replay", "mem-prioritized-replay"]
ALPHA, EPSILON = 0.5, 1e-6
BOUNDS = (LOW.astype(np.float64), HIGH.astype(np.float64))
SGD = dict(optimizer_spec={"type": "sgd", "learning_rate": 0.1},
           critic_optimizer_spec={"type": "sgd", "learning_rate": 0.05})


def _prioritized_agent(backend, memory_type):
    agent = _agent(backend, memory_spec={"type": memory_type, "capacity": 8, "alpha": ALPHA, "beta": 1.0}, **SGD)
    agent.set_weights(ref.weights_from_nets(ref.random_nets(np.random.RandomState(3), 3, 2)))
    return agent


def _priorities(agent, n):
    """The stored p_i^alpha of records 0..n-1."""
    if agent.replay.in_graph:
        memory = agent.root_component.memory
        return agent.graph_executor.get_weights()["agent/prioritized-replay/sum_tree"][memory.capacity_pow2:][:n]
    return agent.replay.memory.tree.get(np.arange(n))


def _stored(agent, keys=("states", "rewards", "terminals", "next_states")):
    """The first `memory_size()` stored records (in-graph memory)."""
    names = {k: f"agent/replay-memory/memory/{k}" for k in keys}
    weights = agent.graph_executor.get_weights(list(names.values()))
    return {k: weights[name][:agent.memory_size()] for k, name in names.items()}


@pytest.mark.parametrize("memory_type", PRIORITIZED)
def test_prioritized_replay_weighs_the_critic_loss_and_writes_td_priorities(backend, memory_type):
    """Update 1: 4 records of priority 1 and a batch of 4 (stratified sampling draws each once, all
    weights 1): priorities become (|td| + epsilon)^alpha. Update 2 samples by those priorities: its
    critic loss is mean_b(w_b * 0.5 td_b^2) with w_i = (p_i / p_min)^-1 (beta 1)."""
    agent = _prioritized_agent(backend, memory_type)
    batch = dict(_batch(np.random.RandomState(4)), terminals=np.array([False, False, True, False]))
    for i in range(4):
        agent.observe(batch["states"][i], batch["actions"][i], None, batch["rewards"][i], batch["next_states"][i],
                      batch["terminals"][i])
    agent.flush_buffers()
    np.testing.assert_array_equal(_priorities(agent, 4), np.ones(4))
    reference_batch = dict(batch, bounds=BOUNDS, squash=True)
    nets = _nets(agent)
    critic_loss, td, _ = ref.critic_loss_and_gradients(nets, reference_batch, GAMMA)
    assert len(set(np.round(np.abs(td), 5))) == 4  # (Distinct errors: every record's priority is checked.)
    losses = agent.update()
    np.testing.assert_allclose(losses.critic_loss, critic_loss, rtol=1e-4, atol=1e-6)
    priorities = _priorities(agent, 4)
    np.testing.assert_allclose(priorities, (np.abs(td) + EPSILON) ** ALPHA, rtol=1e-5)

    nets = _nets(agent)
    _, td_all, _ = ref.critic_loss_and_gradients(nets, reference_batch, GAMMA)
    if agent.replay.in_graph:  # The sample stays in the graph: recognise its records by their td.
        critic_loss, _, td = agent.graph_executor.execute(("update_from_memory", [np.int64(4), np.float32(0.0)]))
        indices = np.array([np.argmin(np.abs(td_all - x)) for x in td])
        np.testing.assert_allclose(td, td_all[indices], rtol=1e-4, atol=1e-5)
    else:
        _, indices, weights = copy.deepcopy(agent.replay.memory).get_records(4)
        critic_loss = agent.update().critic_loss
        np.testing.assert_allclose(weights, priorities.min() / priorities[indices], rtol=1e-5)
    weights = priorities.min() / priorities[indices]  # (N P(i))^-1 / max_j (N P(j))^-1.
    assert len(set(np.round(weights, 4))) > 1  # (Unequal weights: the weighting shows in the loss.)
    np.testing.assert_allclose(critic_loss, np.mean(weights * 0.5 * td_all[indices] ** 2), rtol=1e-4)
    np.testing.assert_allclose(_priorities(agent, 4)[indices], (np.abs(td_all[indices]) + EPSILON) ** ALPHA,
                               rtol=1e-4)


def test_importance_weights_weigh_the_critic_step(backend):
    """An update from a batch with "importance_weights" against the numpy SGD update (nets after the step)."""
    agent = _agent(backend, critic_gradient_clip=0.8, critic_regularization=0.01, **SGD)
    nets = ref.random_nets(np.random.RandomState(3), 3, 2)
    agent.set_weights(ref.weights_from_nets(nets))
    batch = _batch(np.random.RandomState(6))
    weights = np.array([0.25, 1.0, 0.5, 2.0], np.float32)
    expected, critic_loss, actor_loss = ref.sgd_update(
        nets, dict(batch, bounds=BOUNDS, squash=True), GAMMA, actor_lr=0.1, critic_lr=0.05, actor_tau=0.005,
        critic_tau=0.005, huber_delta=0.8, regularization=0.01, weights=weights)
    unweighted = ref.critic_loss_and_gradients(nets, dict(batch, bounds=BOUNDS, squash=True), GAMMA, 0.8, 0.01)[0]
    assert abs(critic_loss - unweighted) > 1e-3
    np.testing.assert_allclose(agent.get_losses(dict(batch, importance_weights=weights))[0], critic_loss, rtol=1e-4)
    losses = agent.update(dict(batch, importance_weights=weights))
    np.testing.assert_allclose(losses, (critic_loss, actor_loss), rtol=1e-4, atol=1e-6)
    _assert_nets_close(_nets(agent), expected)


def test_n_step_records_are_dqns_and_the_target_uses_gamma_to_the_n(backend):
    """The stream: two episodes (5 steps ending terminal, then 4 steps truncated by a flush)."""
    rng = np.random.RandomState(8)
    steps = 9
    states = rng.normal(size=(steps + 1, 3)).astype(np.float32)
    rewards = rng.uniform(-1.0, 1.0, size=steps).astype(np.float32)
    terminals = np.arange(steps) == 4
    common = dict(n_step=3, discount=GAMMA, observe_spec={"buffer_size": 4}, update_spec={"batch_size": 4},
                  memory_spec={"type": "replay-memory", "capacity": 16}, execution_spec={"seed": 1})
    ddpg = _agent(backend, **common)
    dqn = DQNAgent(state_space=FloatBox(shape=(3,)), action_space=IntBox(2),
                   network_spec=[{"type": "dense", "units": 4}], backend=backend, **common)
    for t in range(steps):
        next_state = states[t + 1]
        ddpg.observe(states[t], np.array([0.0, 0.5], np.float32), None, rewards[t], next_state, terminals[t])
        dqn.observe(states[t], t % 2, None, rewards[t], next_state, terminals[t])
    ddpg.flush_buffers()
    dqn.flush_buffers()
    ddpg_records, dqn_records = _stored(ddpg), _stored(dqn)
    assert ddpg.memory_size() == dqn.memory_size() == 5 + 2  # (The second episode's last 2 wait for rewards.)
    for key in dqn_records:
        np.testing.assert_array_equal(ddpg_records[key], dqn_records[key], err_msg=key)
    np.testing.assert_allclose(ddpg_records["rewards"][0], rewards[0] + GAMMA * rewards[1] + GAMMA ** 2 * rewards[2],
                               rtol=1e-6)
    np.testing.assert_array_equal(ddpg_records["next_states"][0], states[3])

    # The critic's target bootstraps with gamma**3 (not gamma).
    agent = _agent(backend, n_step=3, **SGD)
    nets = ref.random_nets(np.random.RandomState(3), 3, 2)
    agent.set_weights(ref.weights_from_nets(nets))
    batch = dict(_batch(np.random.RandomState(9)), terminals=np.zeros(4, bool))
    reference_batch = dict(batch, bounds=BOUNDS, squash=True)
    expected, critic_loss, actor_loss = ref.sgd_update(nets, reference_batch, GAMMA ** 3, actor_lr=0.1,
                                                       critic_lr=0.05, actor_tau=0.005, critic_tau=0.005)
    assert abs(critic_loss - ref.critic_loss_and_gradients(nets, reference_batch, GAMMA)[0]) > 1e-3
    np.testing.assert_allclose(agent.update(batch), (critic_loss, actor_loss), rtol=1e-4, atol=1e-6)
    _assert_nets_close(_nets(agent), expected)


def test_numpy_memory_checkpoint_round_trip(backend, tmp_path):
    agent = _prioritized_agent(backend, "mem-prioritized-replay")
    batch = _batch(np.random.RandomState(4), n=6)
    agent.observe(batch["states"], batch["actions"], None, batch["rewards"], batch["next_states"],
                  np.arange(6) == 5)
    agent.update()
    path = agent.store_model(str(tmp_path / "ckpt"), add_timestep=False)
    restored = _prioritized_agent(backend, "mem-prioritized-replay")
    restored.load_model(path)
    assert restored.memory_size() == agent.memory_size() == 6 and restored.memory_counter == 6
    np.testing.assert_array_equal(_priorities(restored, 6), _priorities(agent, 6))
    assert not np.allclose(_priorities(restored, 6), 1.0)
