"""`ActorCriticAgent` (A2C): the loss and one SGD step against numpy (its own value network or a value
head on the policy's network, one optimizer or two), weight_pg / weight_vf / weight_entropy and its
schedule, standardized advantages, vectorized rollouts through the worker, bad input.

Tiny agents (tests/pg_helpers.py): FloatBox(2) states, IntBox(3) actions, a dense layer of 3 tanh
units, SGD with learning rate 0.1. Every test body runs on TF and PyTorch (the `backend` fixture).
"""
import numpy as np
import pytest

from pg_helpers import (GAMMA, LR, ENV_ACTIONS, ENV_STATES, _a2c, _as_batch, _assert_sgd_step, _env_spec,
                        _fixed_weights, _forward, _fragment, _names, _numeric_grads, _numpy_pg_batch, _observe,
                        _params, _spec)
from rlgraph.agents import ActorCriticAgent
from rlgraph.execution import SingleThreadedWorker
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphNonFiniteError, RLGraphSpecError

W_PG, W_VF, W_ENTROPY = 0.5, 0.25, 0.05


def _a2c_reference(p, batch, weight_pg=W_PG, weight_vf=W_VF, weight_entropy=W_ENTROPY):
    """(mean loss, policy, value, entropy means, loss per item, policy loss per item, value loss per item):
    -weight_pg log pi(a|s) A - weight_entropy H + weight_vf 0.5 (V(s) - G)^2 with A, G constants."""
    log_pi, entropy, v = _forward(p, batch["states"], batch["actions"])
    pi = -weight_pg * log_pi * batch["advantages"] - weight_entropy * entropy
    value = 0.5 * np.square(v - batch["value_targets"])
    per_item = pi + weight_vf * value
    return per_item.mean(), pi.mean(), value.mean(), entropy.mean(), per_item, pi, value


def _agent(backend, **overrides):
    overrides = dict(dict(weight_pg=W_PG, weight_vf=W_VF, weight_entropy=W_ENTROPY), **overrides)
    return _a2c(backend, **overrides)


@pytest.mark.parametrize("shared", [False, True], ids=["value-network", "shared-network"])
def test_loss_and_sgd_step_match_numpy(backend, shared):
    agent = _agent(backend, **({"value_function_spec": None} if shared else {}))
    if shared:  # A value head on the policy's network; one optimizer moves the torso for both terms.
        assert "V1" not in _names(agent) and _names(agent)["Wv"].endswith("policy/value-function-node/kernel")
    p0 = _fixed_weights(agent, seed=1)
    # Two episodes into the rollout: one ends in a terminal, one is truncated (bootstraps from its last state).
    fragments = [_fragment(2, 4, terminal_at=[1], truncated_end=False), _fragment(3, 3)]
    _observe(agent, fragments[0], env_id=0, truncated=False)
    _observe(agent, fragments[1], env_id=1, truncated=True)
    assert agent.rollouts.rows == 7 and agent.ready_to_update() is False  # batch_size 8.
    batch = _numpy_pg_batch(p0, fragments)
    loss, pi_loss, v_loss, entropy, per_item = _a2c_reference(p0, batch)[:5]
    # get_batch_losses of make_batch's batch: the same numbers, without a step.
    out = agent.get_batch_losses(agent.make_batch(fragments))
    np.testing.assert_allclose(out.loss_per_item, per_item, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose([out.loss, out.policy_loss, out.value_loss, out.entropy],
                               [loss, pi_loss, v_loss, entropy], rtol=1e-5, atol=1e-6)

    grads = _numeric_grads(lambda p: _a2c_reference(p, batch)[0], p0)
    out = agent.update()
    assert agent.num_updates == 1 and agent.num_gradient_steps == 1 and agent.rollouts.rows == 0
    np.testing.assert_allclose(out.loss_per_item, per_item, rtol=1e-5, atol=1e-6)  # Before the step.
    np.testing.assert_allclose([out.loss, out.policy_loss, out.value_loss, out.entropy],
                               [loss, pi_loss, v_loss, entropy], rtol=1e-5, atol=1e-6)
    _assert_sgd_step(p0, _params(agent), grads, LR)


def test_lambda_one_is_the_n_step_actor_critic_loss(backend):
    """With gae_lambda 1 the advantages are discounted returns (bootstrapped at the fragment's end) minus
    V(s): the loss per step is `rnp.actor_critic_loss` of one row."""
    agent = _agent(backend, gae_lambda=1.0)
    p0 = _fixed_weights(agent, seed=4)
    record = _fragment(5, 6, terminal_at=[2])
    log_pi, entropy, v = _forward(p0, record["states"], record["actions"])
    bootstrap = _forward(p0, record["next_states"][-1:], [0])[2]
    expected = rnp.actor_critic_loss(log_pi[None], v[None], record["rewards"][None].astype(np.float64),
                                     record["terminals"][None], entropy[None], bootstrap, GAMMA, reward_clipping=None,
                                     weight_pg=W_PG, weight_baseline=W_VF, weight_entropy=W_ENTROPY)[0]
    out = agent.update(record)
    np.testing.assert_allclose(out.loss_per_item, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.loss, expected.mean(), rtol=1e-5)


def test_get_batch_losses_apply_weight_pg_as_the_update_does(backend):
    agent = _agent(backend)
    p0 = _fixed_weights(agent, seed=6)
    record = _fragment(7, 5, terminal_at=[3])
    batch = agent.make_batch([record])
    expected = _a2c_reference(p0, _numpy_pg_batch(p0, [record]))
    np.testing.assert_allclose(agent.get_batch_losses(batch).loss, expected[0], rtol=1e-5)
    np.testing.assert_allclose(agent.update(record).loss, expected[0], rtol=1e-5)


def test_standardized_advantages_are_scaled_by_weight_pg(backend):
    # L_pi = -weight_pg * log pi * (A - mean A) / std A - weight_entropy * H (the docstrings' order).
    agent = _agent(backend, standardize_advantages=True)
    p0 = _fixed_weights(agent, seed=8)
    record = _fragment(9, 6, terminal_at=[2])
    batch = _numpy_pg_batch(p0, [record])
    a_t = batch["advantages"]
    standardized = dict(batch, advantages=(a_t - a_t.mean()) / a_t.std())
    loss, _, _, _, per_item = _a2c_reference(p0, standardized)[:5]
    grads = _numeric_grads(lambda p: _a2c_reference(p, standardized)[0], p0)
    out = agent.update(record)
    np.testing.assert_allclose(out.loss_per_item, per_item, rtol=1e-5, atol=1e-6)
    _assert_sgd_step(p0, _params(agent), grads, LR)


@pytest.mark.parametrize("lr_pi, lr_v", [(0.1, 0.05), (0.1, 0.0), (0.0, 0.05)])
def test_two_optimizers_step_their_own_networks(backend, lr_pi, lr_v):
    """step(policy variables, mean(L_pi)) and step(value variables, mean(L_v)): the policy step leaves the
    value network alone and the value step the policy (a zero learning rate shows it)."""
    agent = _agent(backend, optimizer_spec={"type": "sgd", "learning_rate": lr_pi},
                   value_function_optimizer_spec={"type": "sgd", "learning_rate": lr_v})
    p0 = _fixed_weights(agent, seed=10)
    record = _fragment(11, 6, terminal_at=[3])
    batch = _numpy_pg_batch(p0, [record])
    loss, pi_loss, v_loss, _, per_item = _a2c_reference(p0, batch)[:5]
    policy_names = ["W1", "b1", "Wa", "ba"]
    value_names = ["V1", "c1", "Wv", "bv"]
    grads = {n: _numeric_grads(lambda p: _a2c_reference(p, batch)[i], p0) for n, i in (("pi", 1), ("v", 2))}
    for name in value_names:  # The policy loss does not depend on the value network, nor the value loss on pi.
        assert not grads["pi"][name].any()
    for name in policy_names:
        assert not grads["v"][name].any()
    out = agent.update(record)
    # The reported loss is still mean(L_pi + weight_vf * L_v).
    np.testing.assert_allclose([out.loss, out.policy_loss, out.value_loss], [loss, pi_loss, v_loss], rtol=1e-5)
    np.testing.assert_allclose(out.loss_per_item, per_item, rtol=1e-5, atol=1e-6)
    p1 = _params(agent)
    _assert_sgd_step(p0, p1, grads["pi"], lr_pi, policy_names)
    _assert_sgd_step(p0, p1, grads["v"], lr_v, value_names)  # Not weight_vf * lr_v: the value step has its own loss.
    for names, lr in ((policy_names, lr_pi), (value_names, lr_v)):
        for name in names:
            assert np.array_equal(p1[name], p0[name]) == (lr == 0.0), name


def test_weight_entropy_schedule(backend):
    agent = _agent(backend, weight_entropy=["linear", 0.2, 0.0])
    p0 = _fixed_weights(agent, seed=12)
    record = _fragment(13, 5)
    batch = _numpy_pg_batch(p0, [record])
    w0 = agent.graph_executor.get_weights()
    for tp, w_entropy in ((0.0, 0.2), (0.25, 0.15), (1.0, 0.0)):
        agent.set_weights(w0)
        expected = _a2c_reference(p0, batch, weight_entropy=w_entropy)[0]
        np.testing.assert_allclose(agent.get_batch_losses(_as_batch(batch), time_percentage=tp).loss, expected,
                                   rtol=1e-5, err_msg=tp)
        np.testing.assert_allclose(agent.update(record, time_percentage=tp).loss, expected, rtol=1e-5, err_msg=tp)
    # Without time_percentage the update reads the agent's: timesteps / max_timesteps.
    agent.set_weights(w0)
    agent.timesteps = 500  # Of max_timesteps 1000.
    np.testing.assert_allclose(agent.update(record).loss, _a2c_reference(p0, batch, weight_entropy=0.1)[0], rtol=1e-5)


def test_vectorized_worker_rounds(backend):
    agent = _agent(backend, state_space=ENV_STATES, action_space=ENV_ACTIONS, update_spec={"batch_size": 8})
    worker = SingleThreadedWorker(agent, _env_spec(terminal_prob=0.1), num_environments=4, seed=7)
    sizes = []
    update = agent.update

    def sized_update(*args, **kwargs):
        sizes.append(agent.rollouts.rows + agent.buffers.pending())
        return update(*args, **kwargs)

    agent.update = sized_update
    stats = worker.execute_timesteps(40)
    # 10 steps of 4 envs; the last step of each env that did not end waits in the worker: at least 36 observed.
    assert 36 <= agent.timesteps <= 40 and stats["episodes_executed"] > 0
    # Each round learns from the steps observed since the last one: at least 8, and less than 8 more than the
    # 7 of the step before (a step observes each env's pending step and each finished episode's last one).
    assert agent.num_updates == len(sizes) >= 3 and agent.num_gradient_steps == agent.num_updates
    assert all(8 <= n <= 14 for n in sizes), sizes
    assert sum(sizes) + agent.rollouts.rows + agent.buffers.pending() == agent.timesteps
    assert np.isfinite(stats["mean_loss"])


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(weight_pg=-1.0), r"ActorCriticAgent\(weight_pg\): weight_pg must be a finite number >= 0"),
    (dict(weight_vf=float("nan")), r"ActorCriticAgent\(weight_vf\): weight_vf must be a finite number"),
    (dict(gae_lambda=2.0), r"ActorCriticAgent\(gae_lambda\)"),
    (dict(value_function_spec=None, value_function_optimizer_spec={"type": "sgd", "learning_rate": 0.1}),
     r"ActorCriticAgent\(value_function_optimizer_spec\): a value-function optimizer needs a value network.*"
     r"Hint: give value_function_spec"),
    (dict(update_spec={"num_epochs": 2}), r"ActorCriticAgent\(update_spec\): unknown key\(s\) \['num_epochs'\]"),
    (dict(memory_spec={"type": "prioritized-replay"}), r"ActorCriticAgent\(memory_spec\)"),
    (dict(network_spec=None), r"actor-critic-agent\(network_spec\): no network_spec"),
])
def test_constructor_errors_name_the_argument(backend, kwargs, pattern):
    with pytest.raises(RLGraphSpecError, match=pattern):
        ActorCriticAgent(**_spec(backend, **kwargs))


def test_bad_update_batches_are_refused(backend):
    agent = _agent(backend)
    w0 = agent.graph_executor.get_weights()
    record = _fragment(14, 3)
    with pytest.raises(RLGraphError, match=r"actor-critic-agent\.update\(batch\).*next_states"):
        agent.update({k: v for k, v in record.items() if k != "next_states"})
    with pytest.raises(RLGraphNonFiniteError, match=r"actor-critic-agent\.update\(batch\).*rewards"):
        agent.update(dict(record, rewards=np.array([0.0, np.inf, 1.0], np.float32)))
    with pytest.raises(RLGraphError, match=r"actor-critic-agent\.update: no transitions to learn from"):
        agent.update()
    assert agent.num_updates == 0
    for name, value in agent.graph_executor.get_weights().items():
        np.testing.assert_array_equal(value, w0[name])
