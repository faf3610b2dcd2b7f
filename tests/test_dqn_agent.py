"""`DQNAgent` and the `Agent` base: acting, buffered observes, updates against the numpy DQN loss,
target syncs, memories and container spaces (specs, errors, weights and export:
test_agent_specs_and_weights.py).

Every test body runs on both backends (the `backend` fixture). Networks are one dense layer of
8 units; states are FloatBox(4) and actions IntBox(3) unless a test says otherwise.
"""
import numpy as np
import pytest

from agent_helpers import _agent, _memory, _perturb_target, _random_batch, _spec, _states, _target_names, _target_q
from rlgraph.agents import DQNAgent
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError


def test_get_action_shapes_preprocessing_and_greedy_actions(backend):
    agent = _agent(backend, preprocessing_spec=[{"type": "multiply", "factor": 2.0}])
    rng = np.random.RandomState(0)
    state = rng.normal(size=4).astype(np.float32)
    action = agent.get_action(state)
    assert np.ndim(action) == 0 and 0 <= int(action) < 3 and agent.action_space.contains(np.int32(action))

    states = rng.normal(size=(3, 4)).astype(np.float32)
    actions = agent.get_action(states)
    assert np.shape(actions) == (3,) and all(0 <= a < 3 for a in actions)

    actions, preprocessed = agent.get_action(states, extra_returns="preprocessed_states")
    assert np.shape(actions) == (3,)
    np.testing.assert_allclose(preprocessed, 2.0 * states, rtol=1e-6)
    action, preprocessed = agent.get_action(state, extra_returns={"preprocessed_states"})
    assert np.ndim(action) == 0
    np.testing.assert_allclose(preprocessed, 2.0 * state, rtol=1e-6)
    np.testing.assert_allclose(agent.preprocess_states(states), 2.0 * states, rtol=1e-6)

    # Greedy actions are the argmax of the Q-values (of the preprocessed states).
    q = agent.get_q_values(states)
    assert q.shape == (3, 3)
    np.testing.assert_allclose(q, agent.get_q_values(2.0 * states, apply_preprocessing=False), rtol=1e-6)
    np.testing.assert_array_equal(agent.get_action(states, use_exploration=False), np.argmax(q, axis=-1))
    # Already preprocessed states skip the preprocessor.
    np.testing.assert_array_equal(agent.get_action(2.0 * states, use_exploration=False, apply_preprocessing=False),
                                  np.argmax(q, axis=-1))

    with pytest.raises(RLGraphSpecError, match="extra_returns"):
        agent.get_action(states, extra_returns="q_values")


def test_epsilon_one_explores_every_action(backend):
    agent = _agent(backend, exploration_spec={"epsilon_spec": {"decay_spec": 1.0}})
    states = np.ones((300, 4), np.float32)
    greedy = agent.get_action(states, use_exploration=False)
    assert len(set(greedy.tolist())) == 1  # Same state: the same greedy action.
    # Epsilon 1: uniform over the 3 actions; P(one missing in 300 draws) ~ 3 * (2/3)^300.
    assert sorted(set(agent.get_action(states).tolist())) == [0, 1, 2]


# --- Observing ---------------------------------------------------------------------------------------


def test_observe_flushes_when_full_or_terminal(backend):
    agent = _agent(backend)
    s = _states(7)
    for t in range(3):
        agent.observe(s[t], t % 3, None, float(t), s[t + 1], False, env_id="a")
    assert agent.memory_size() == 0 and agent.timesteps == 3 and agent.buffers.pending() == 3
    agent.observe(s[3], 0, None, 3.0, s[4], False, env_id="a")  # The 4th fills the buffer (size 4).
    assert agent.memory_size() == 4 and agent.buffers.pending() == 0
    # A terminal flushes early: 2 transitions, not 4.
    agent.observe(s[4], 1, None, 4.0, s[5], False, env_id="a")
    agent.observe(s[5], 2, None, 5.0, s[6], True, env_id="a")
    assert agent.memory_size() == 6 and agent.timesteps == 6
    stored = _memory(agent)
    np.testing.assert_array_equal(stored["states"][:, 0], [0, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(stored["next_states"][:, 0], [1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(stored["actions"], [0, 1, 2, 0, 1, 2])
    np.testing.assert_array_equal(stored["rewards"], [0, 1, 2, 3, 4, 5])
    np.testing.assert_array_equal(stored["terminals"], [False] * 5 + [True])


def test_observe_keeps_each_envs_order(backend):
    agent = _agent(backend, observe_spec={"buffer_size": 3})
    a, b = _states(4, start=0.0), _states(4, start=10.0)
    # Interleaved: a0 b0 a1 b1 a2 (a's buffer is full) b2 (b's buffer is full).
    for t in range(3):
        agent.observe(a[t], 0, None, float(t), a[t + 1], False, env_id="a")
        agent.observe(b[t], 1, None, 10.0 + t, b[t + 1], False, env_id="b")
        if t == 1:
            assert agent.memory_size() == 0 and agent.buffers.pending() == 4
    stored = _memory(agent)
    np.testing.assert_array_equal(stored["states"][:, 0], [0, 1, 2, 10, 11, 12])
    np.testing.assert_array_equal(stored["next_states"][:, 0], [1, 2, 3, 11, 12, 13])
    np.testing.assert_array_equal(stored["actions"], [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(stored["rewards"], [0, 1, 2, 10, 11, 12])
    # Dropping one env's buffer leaves the other's.
    agent.observe(a[0], 2, None, 0.0, a[1], False, env_id="a")
    agent.observe(b[0], 2, None, 0.0, b[1], False, env_id="b")
    agent.reset_env_buffers("a")
    assert agent.buffers.pending() == 1 and list(agent.buffers.buffers) == ["b"]
    agent.flush_buffers()
    assert agent.memory_size() == 7 and _memory(agent)["states"][6, 0] == 10.0


def test_observe_batched_transitions(backend):
    agent = _agent(backend)
    s = _states(6)
    # 5 transitions of one env; the episode ends at index 1, so 2 go in and 3 wait.
    terminals = np.array([False, True, False, False, False])
    agent.observe(s[:5], np.array([0, 1, 2, 0, 1]), None, np.arange(5.0), s[1:], terminals, env_id=7)
    assert agent.timesteps == 5 and agent.memory_size() == 2 and agent.buffers.pending() == 3
    agent.flush_buffers()
    stored = _memory(agent)
    assert agent.memory_size() == 5
    np.testing.assert_array_equal(stored["states"][:, 0], [0, 1, 2, 3, 4])
    np.testing.assert_array_equal(stored["terminals"], terminals)
    # A batch of 5 into a buffer of 4: all 5 go in at once (the buffer is over-full).
    agent.observe(s[:5], np.zeros(5, int), None, np.ones(5), s[1:], np.zeros(5, bool), env_id=8)
    assert agent.memory_size() == 10
    with pytest.raises(RLGraphError, match="differ in length"):
        agent.observe(s[:2], np.zeros(2, int), None, np.ones(2), s[1:3], np.zeros(3, bool))


def test_observe_n_step_returns(backend):
    agent = _agent(backend, n_step=3, discount=0.5, observe_spec={"buffer_size": 10})
    s = _states(5)
    rewards = [1.0, 2.0, 4.0, 8.0]
    for t in range(4):
        agent.observe(s[t], t % 3, None, rewards[t], s[t + 1], t == 3, env_id="x")
    # Terminal at t=3 (next state 4):
    #   t0: 1 + 0.5*2 + 0.25*4 = 3 -> s3, not terminal   t1: 2 + 0.5*4 + 0.25*8 = 6 -> s4, terminal
    #   t2: 4 + 0.5*8 = 8 -> s4, terminal               t3: 8 -> s4, terminal (shorter sums)
    stored = _memory(agent)
    np.testing.assert_allclose(stored["rewards"], [3.0, 6.0, 8.0, 8.0])
    np.testing.assert_array_equal(stored["states"][:, 0], [0, 1, 2, 3])
    np.testing.assert_array_equal(stored["next_states"][:, 0], [3, 4, 4, 4])
    np.testing.assert_array_equal(stored["terminals"], [False, True, True, True])
    np.testing.assert_array_equal(stored["actions"], [0, 1, 2, 0])

    # A truncated episode (time limit, no terminal state) of 4 steps with rewards 1, 1, 1, 1:
    # t0 and t1 keep full 3-step sums 1 + 0.5 + 0.25 = 1.75 (-> s13, s14); t2, t3 are dropped.
    u = _states(5, start=10.0)
    agent.observe(u[:4], np.zeros(4, int), None, np.ones(4), u[1:], np.zeros(4, bool), env_id="y", truncated=True)
    stored = _memory(agent)
    assert agent.memory_size() == 6 and agent.buffers.pending() == 0
    np.testing.assert_allclose(stored["rewards"][4:], [1.75, 1.75])
    np.testing.assert_array_equal(stored["states"][4:, 0], [10, 11])
    np.testing.assert_array_equal(stored["next_states"][4:, 0], [13, 14])
    np.testing.assert_array_equal(stored["terminals"][4:], [False, False])


def test_n_step_without_observe_buffer_is_folded_or_rejected(backend):
    spec = _spec(backend, n_step=3, discount=0.5, observe_spec={"buffer_enabled": False})
    try:
        agent = DQNAgent(**spec)
    except RLGraphSpecError as error:
        assert "n_step" in str(error)
    else:
        s = _states(5)
        agent.observe(s[:4], np.zeros(4, int), None, np.array([1.0, 2.0, 4.0, 8.0]), s[1:],
                      np.array([False, False, False, True]))
        # Folded as in test_observe_n_step_returns; today the raw rewards 1, 2, 4, 8 are stored.
        np.testing.assert_allclose(_memory(agent)["rewards"], [3.0, 6.0, 8.0, 8.0])


# --- Updating -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("double_q,huber_loss,n_step", [(True, False, 1), (False, False, 1), (True, True, 1),
                                                        (False, True, 1), (True, False, 3)])
def test_update_loss_matches_numpy(backend, double_q, huber_loss, n_step):
    agent = _agent(backend, double_q=double_q, huber_loss=huber_loss, n_step=n_step, discount=0.9,
                   update_spec={"sync_interval": 1000})
    _perturb_target(agent)
    batch = _random_batch(np.random.RandomState(3), 8)
    q_s = agent.get_q_values(batch["states"])
    q_sp = agent.get_q_values(batch["next_states"])
    qt_sp = _target_q(agent, batch["next_states"])
    if double_q:  # The test means something only if online and target pick different a* somewhere.
        assert (np.argmax(q_sp, -1) != np.argmax(qt_sp, -1)).any()
    expected, td = rnp.dqn_loss_per_item(q_s, batch["actions"], batch["rewards"], batch["terminals"], qt_sp,
                                         discount=0.9, q_t=q_sp if double_q else None, n_step=n_step,
                                         huber_delta=1.0 if huber_loss else None)
    if huber_loss:
        assert (np.abs(td) > 1.0).any() and (np.abs(td) < 1.0).any()  # Both Huber branches are used.

    # get_td_loss computes the same without a step.
    loss, per_item, td_graph = agent.get_td_loss(batch)
    np.testing.assert_allclose(per_item, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(td_graph, td, rtol=1e-5, atol=1e-6)

    before = agent.get_weights()
    target_before = agent.graph_executor.get_weights(_target_names(agent))
    assert agent.num_updates == 0
    loss, per_item = agent.update(batch)
    assert agent.num_updates == 1
    assert np.shape(per_item) == (8,)
    np.testing.assert_allclose(per_item, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss, expected.mean(), rtol=1e-5)
    after = agent.get_weights()
    assert sorted(after) == sorted(before)
    assert all(not np.array_equal(before[k], after[k]) for k in before)
    # The target network does not learn.
    for name, value in agent.graph_executor.get_weights(_target_names(agent)).items():
        np.testing.assert_array_equal(value, target_before[name])
    # The step lowers this batch's loss (Adam, learning rate 1e-3, a few more steps).
    for _ in range(20):
        agent.update(batch)
    assert agent.get_td_loss(batch)[0] < loss


def test_target_sync_every_sync_interval_steps(backend):
    agent = _agent(backend, update_spec={"sync_interval": 5})
    rng = np.random.RandomState(4)
    batch = _random_batch(rng, 6)
    probe = rng.normal(size=(5, 4)).astype(np.float32)
    np.testing.assert_allclose(_target_q(agent, probe), agent.get_q_values(probe), rtol=1e-6)  # Synced at build.
    agent.update(batch)  # 0 steps since the last sync: no sync; the online net moved away.
    assert not np.allclose(_target_q(agent, probe), agent.get_q_values(probe))
    target_q = _target_q(agent, probe)

    s = _states(6)
    agent.observe(s[:4], np.zeros(4, int), None, np.zeros(4), s[1:5], np.zeros(4, bool))
    agent.update(batch)  # 4 steps: still no sync.
    np.testing.assert_allclose(_target_q(agent, probe), target_q, rtol=1e-6)
    agent.observe(s[4], 0, None, 0.0, s[5], False)
    online_q = agent.get_q_values(probe)
    agent.update(batch)  # 5 steps: sync first (to the weights before this step), then the step.
    assert agent.last_sync_timestep == 5
    np.testing.assert_allclose(_target_q(agent, probe), online_q, rtol=1e-6)
    assert not np.allclose(agent.get_q_values(probe), online_q)
    agent.update(batch)  # No new steps: no sync.
    np.testing.assert_allclose(_target_q(agent, probe), online_q, rtol=1e-6)


def test_soft_target_sync(backend):
    agent = _agent(backend, update_spec={"sync_interval": 1, "sync_tau": 0.25})
    _perturb_target(agent)
    names = _target_names(agent)
    old_target = agent.graph_executor.get_weights(names)
    online = agent.graph_executor.get_weights([n.replace("/target-policy/", "/policy/") for n in names])
    agent.observe(_states(1)[0], 0, None, 0.0, _states(1)[0], False)
    agent.update(_random_batch(np.random.RandomState(5), 4))
    # target <- 0.25 * online + 0.75 * target (the online weights before the step).
    for name, value in agent.graph_executor.get_weights(names).items():
        expected = 0.25 * online[name.replace("/target-policy/", "/policy/")] + 0.75 * old_target[name]
        np.testing.assert_allclose(value, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("memory_type", ["replay-memory", "prioritized-replay"])
def test_update_from_graph_memory(backend, memory_type):
    agent = _agent(backend, memory_spec={"type": memory_type, "capacity": 16}, update_spec={"batch_size": 4})
    rng = np.random.RandomState(6)
    batch = _random_batch(rng, 10)
    agent.observe(batch["states"], batch["actions"], None, batch["rewards"], batch["next_states"],
                  batch["terminals"])
    agent.flush_buffers()
    assert agent.memory_size() == 10
    tree = f"agent/{memory_type}/sum_tree"
    if memory_type == "prioritized-replay":
        sum_tree = agent.graph_executor.get_weights([tree])[tree]
        assert sum_tree[1] == pytest.approx(10.0)  # 10 records at the initial priority 1.
    loss, per_item = agent.update()
    assert np.isfinite(loss) and np.shape(per_item) == (4,) and agent.num_updates == 1
    np.testing.assert_allclose(loss, np.mean(per_item), rtol=1e-5)
    if memory_type == "prioritized-replay":
        new_tree = agent.graph_executor.get_weights([tree])[tree]
        assert not np.array_equal(new_tree, sum_tree)
        # Squared loss: |td| = sqrt(2 * loss_i); the sampled records now have priority |td| + epsilon.
        leaves = new_tree[len(new_tree) // 2:][:10]
        for value in np.sqrt(2.0 * per_item) + 1e-6:
            assert np.isclose(leaves, value, rtol=1e-4).any()
        assert new_tree[1] == pytest.approx(leaves.sum(), rel=1e-5)


def test_update_from_python_memory(backend):
    agent = _agent(backend, memory_spec={"type": "mem-prioritized-replay", "capacity": 16},
                   update_spec={"batch_size": 4}, store_last_memory_batch=True)
    batch = _random_batch(np.random.RandomState(7), 10)
    agent.observe(batch["states"], batch["actions"], None, batch["rewards"], batch["next_states"],
                  batch["terminals"])
    agent.flush_buffers()
    assert agent.replay.memory.get_size() == 10 and agent.memory_size() == 10
    np.testing.assert_array_equal(agent.replay.memory.tree.leaves()[:10], np.ones(10))
    loss, per_item = agent.update()
    assert np.isfinite(loss) and np.shape(per_item) == (4,) and agent.num_updates == 1
    assert sorted(agent.last_memory_batch) == ["actions", "importance_weights", "next_states", "rewards", "states",
                                               "terminals"]
    # Squared loss: the sampled records' priorities become |td| + epsilon = sqrt(2 * loss_i) + 1e-6.
    leaves = agent.replay.memory.tree.leaves()[:10]
    assert not np.array_equal(leaves, np.ones(10))
    for value in np.sqrt(2.0 * per_item) + 1e-6:
        assert np.isclose(leaves, value, rtol=1e-4).any()


# --- Container spaces --------------------------------------------------------------------------------------


def test_dict_states_and_dict_actions(backend):
    network = {"type": "multi-input-stream-nn", "input_network_specs": {"a": [{"type": "dense", "units": 4}], "b": []},
               "post_network_spec": [{"type": "dense", "units": 8}]}
    agent = _agent(backend, state_space=Dict(a=FloatBox(shape=(3,)), b=FloatBox(shape=(2,))),
                   action_space=Dict(x=IntBox(2), y=IntBox(3)), network_spec=network,
                   observe_spec={"buffer_size": 2}, update_spec={"batch_size": 4, "sync_interval": 1000}, discount=0.9)
    rng = np.random.RandomState(8)

    def states(n):
        return {"a": rng.normal(size=(n, 3)).astype(np.float32), "b": rng.normal(size=(n, 2)).astype(np.float32)}

    s = states(3)
    single = agent.get_action({"a": s["a"][0], "b": s["b"][0]})
    assert sorted(single) == ["x", "y"] and np.ndim(single["x"]) == 0 and 0 <= single["y"] < 3
    actions = agent.get_action(s)
    assert actions["x"].shape == (3,) and actions["y"].shape == (3,)
    q = agent.get_q_values(s)
    assert q["x"].shape == (3, 2) and q["y"].shape == (3, 3)
    greedy = agent.get_action(s, use_exploration=False)
    np.testing.assert_array_equal(greedy["x"], np.argmax(q["x"], -1))
    np.testing.assert_array_equal(greedy["y"], np.argmax(q["y"], -1))

    agent.observe(s, actions, None, np.array([1.0, 2.0, 3.0]), states(3), np.array([False, False, True]))
    assert agent.memory_size() == 3
    stored = _memory(agent)
    np.testing.assert_array_equal(stored["actions/x"], actions["x"])
    np.testing.assert_array_equal(stored["actions/y"], actions["y"])
    np.testing.assert_allclose(stored["states/a"], s["a"])

    # An external batch: the loss is the sum of one DQN loss per action leaf.
    _perturb_target(agent)
    batch = dict(states=states(5), actions={"x": rng.randint(0, 2, 5), "y": rng.randint(0, 3, 5)},
                 rewards=rng.uniform(-1, 1, 5).astype(np.float32), terminals=np.array([0, 0, 1, 0, 0], bool),
                 next_states=states(5))
    q_s, q_sp = agent.get_q_values(batch["states"]), agent.get_q_values(batch["next_states"])
    qt_sp = _target_q(agent, batch["next_states"])
    expected = sum(rnp.dqn_loss_per_item(q_s[k], batch["actions"][k], batch["rewards"], batch["terminals"], qt_sp[k],
                                         discount=0.9, q_t=q_sp[k])[0] for k in ("x", "y"))
    loss, per_item = agent.update(batch)
    np.testing.assert_allclose(per_item, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(loss, expected.mean(), rtol=1e-5)
    loss, per_item = agent.update()  # From the memory.
    assert np.isfinite(loss) and np.shape(per_item) == (4,) and agent.num_updates == 2


# --- Specs and errors -----------------------------------------------------------------------------------------


def test_dueling_adapter_given_as_action_adapter_spec(backend):
    """The original RLgraph's configs put the dueling streams into action_adapter_spec (a regression:
    the stream sizes there collided with the policy's defaults, a TypeError)."""
    from rlgraph.agents import Agent
    from rlgraph.spaces import FloatBox, IntBox
    from rlgraph.utils.rlgraph_errors import RLGraphSpecError
    spec = {"type": "dqn", "network_spec": [{"type": "dense", "units": 8}],
            "action_adapter_spec": {"type": "dueling-action-adapter", "units_state_value_stream": 4,
                                    "units_advantage_stream": 5}}
    agent = Agent.from_spec(spec, state_space=FloatBox(shape=(3,)), action_space=IntBox(2), backend=backend)
    weights = agent.graph_executor.get_weights()
    assert weights["agent/policy/dueling-action-adapter-0/dense-layer-state-value-stream/kernel"].shape == (8, 4)
    assert weights["agent/policy/dueling-action-adapter-0/dense-layer-advantage-stream/kernel"].shape == (8, 5)
    assert agent.get_action(np.zeros(3, np.float32)) in (0, 1)
    with pytest.raises(RLGraphSpecError, match=r"action_adapter_spec\.type"):
        Agent.from_spec(dict(spec, action_adapter_spec={"type": "action-adapter"}), state_space=FloatBox(shape=(3,)),
                        action_space=IntBox(2), backend=backend)


def test_target_starts_as_a_copy_with_soft_sync(backend):
    """With sync_tau < 1 the target network still starts as an exact copy of the policy (a
    regression: the build's soft sync blended 0.1 of the policy into the target's own init)."""
    from rlgraph.agents import Agent
    agent = Agent.from_spec({"type": "dqn", "network_spec": [{"type": "dense", "units": 8}],
                             "update_spec": {"sync_tau": 0.1}},
                            state_space=FloatBox(shape=(3,)), action_space=IntBox(2), backend=backend)
    weights = agent.graph_executor.get_weights()
    online = [k for k in weights if k.startswith("agent/policy/")]
    assert online
    for name in online:
        np.testing.assert_array_equal(weights[name.replace("agent/policy/", "agent/target-policy/")], weights[name])
