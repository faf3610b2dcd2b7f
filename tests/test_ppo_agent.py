"""`PPOAgent` and the on-policy base `PolicyGradientAgent`: GAE per fragment, the clipped loss and one
SGD step against numpy, minibatch epochs, rollouts through the worker, schedules, container and
bounded actions, checkpoints, reproducibility and bad input.

Tiny agents (tests/pg_helpers.py): FloatBox(2) states, IntBox(3) actions, a dense layer of 3 tanh
units, a value network of one dense layer of 2 tanh units, SGD with learning rate 0.1. Every test
body runs on TF and PyTorch (the `backend` fixture) unless it is pure numpy.
"""
import re

import numpy as np
import pytest

from pg_helpers import (LR, ENV_ACTIONS, ENV_STATES, _as_batch, _assert_sgd_step, _env_spec,
                        _fixed_weights, _forward, _fragment, _numeric_grads, _numpy_pg_batch, _observe, _params,
                        _ppo, _spec, _values)
from rlgraph.agents import PPOAgent
from rlgraph.agents.pg.core import PG_BATCH_KEYS
from rlgraph.agents.pg.rollouts import gae_advantages
from rlgraph.agents.pg.agent import PGUpdate
from rlgraph.execution import SingleThreadedWorker
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphNonFiniteError, RLGraphSpaceError, RLGraphSpecError

# --- GAE over fragments (numpy) ------------------------------------------------------------------------


def test_gae_advantages_hand_worked():
    # gamma 0.9, lambda 0.5 (gamma * lambda = 0.45); v = [0.5, 1, 0], v(s_{t+1}) = [1, 0, 1] (the last bootstraps):
    #   delta = [1 + 0.9 - 0.5, 0 + 0 - 1, 2 + 0.9 - 0] = [1.4, -1, 2.9]
    #   A_2 = 2.9, A_1 = -1 + 0.45 * 2.9 = 0.305, A_0 = 1.4 + 0.45 * 0.305 = 1.53725
    r, v, v_next = np.array([1.0, 0.0, 2.0]), np.array([0.5, 1.0, 0.0]), np.array([1.0, 0.0, 1.0])
    end = np.array([False, False, True])
    np.testing.assert_allclose(gae_advantages(r, v, v_next, np.zeros(3, bool), end, 0.9, 0.5),
                               [1.53725, 0.305, 2.9], rtol=1e-6)
    # A terminal at step 1 cuts its bootstrap (delta_1 = -1) and the trace: A_1 = -1, A_0 = 1.4 - 0.45 = 0.95.
    np.testing.assert_allclose(gae_advantages(r, v, v_next, np.array([False, True, False]), end, 0.9, 0.5),
                               [0.95, -1.0, 2.9], rtol=1e-6)
    # A fragment end at step 1 cuts the trace but bootstraps from v(s_2) = 0: A_1 = -1, A_0 = 0.95 again;
    # a terminal last step does not bootstrap: A_2 = 2.
    np.testing.assert_allclose(gae_advantages(r, v, v_next, np.array([False, False, True]),
                                              np.array([False, True, True]), 0.9, 0.5), [0.95, -1.0, 2.0], rtol=1e-6)


def test_gae_advantages_match_numpy_gae_per_fragment():
    rng = np.random.RandomState(0)
    lengths = [5, 1, 7, 4]
    # Terminal steps per fragment: inside, none, at the end (no bootstrap), two inside + truncated end.
    terminal_steps = [[2], [], [6], [0, 2]]
    r, v, v_next, d, ends, expected = [], [], [], [], [], []
    for n, steps in zip(lengths, terminal_steps):
        r_f, v_f = rng.normal(size=n), rng.normal(size=n)
        bootstrap = rng.normal()
        d_f = np.zeros(n, bool)
        d_f[steps] = True
        # v(s_{t+1}) is the next row's v inside the fragment (any value after a terminal: it is not read).
        v_next_f = np.append(v_f[1:], bootstrap)
        v_next_f[d_f] = 100.0
        r.append(r_f), v.append(v_f), v_next.append(v_next_f), d.append(d_f)
        ends.append(np.arange(n) == n - 1)
        expected.append((r_f, v_f, bootstrap, d_f))
    r, v, v_next, d, ends = (np.concatenate(x) for x in (r, v, v_next, d, ends))
    for lam in (0.0, 0.7, 1.0):
        out = gae_advantages(r, v, v_next, d, ends, 0.95, lam)
        assert out.dtype == np.float32 and out.shape == (sum(lengths),)
        reference = np.concatenate([rnp.gae(r_f, v_f, b, d_f, 0.95, lam) for r_f, v_f, b, d_f in expected])
        np.testing.assert_allclose(out, reference, rtol=1e-5, atol=1e-6)
        if lam == 1.0:  # Discounted returns (bootstrapped at each fragment end) minus values.
            returns = np.concatenate([rnp.discounted_returns(r_f, d_f, 0.95, b) for r_f, v_f, b, d_f in expected])
            np.testing.assert_allclose(out, returns - v, rtol=1e-5, atol=1e-6)
    # Treating the rows as one fragment gives other advantages (the fragment ends matter).
    whole = gae_advantages(r, v, v_next, d, np.arange(len(r)) == len(r) - 1, 0.95, 0.7)
    assert not np.allclose(whole, gae_advantages(r, v, v_next, d, ends, 0.95, 0.7))


# --- The batch and one update step against numpy -----------------------------------------------------------


def test_make_batch_matches_numpy(backend):
    agent = _ppo(backend)
    p = _fixed_weights(agent)
    fragments = [_fragment(0, 5, terminal_at=[1]), _fragment(1, 3), _fragment(2, 4, truncated_end=False)]
    batch = agent.make_batch(fragments)
    assert sorted(batch) == sorted(PG_BATCH_KEYS)
    expected = _numpy_pg_batch(p, fragments)
    np.testing.assert_array_equal(batch["actions"], expected["actions"])
    np.testing.assert_array_equal(batch["states"], expected["states"])
    for key in ("log_probs", "values", "advantages", "value_targets"):
        np.testing.assert_allclose(batch[key], expected[key], rtol=1e-5, atol=1e-5, err_msg=key)
    np.testing.assert_allclose(agent.get_state_values(expected["states"]), expected["values"], rtol=1e-5, atol=1e-6)
    assert np.ndim(agent.get_state_values(expected["states"][0])) == 0
    np.testing.assert_allclose(agent.get_state_values(expected["states"][0]), expected["values"][0], rtol=1e-5)
    # clip_rewards clips before GAE.
    clipped = _ppo(backend, clip_rewards=0.5)
    _fixed_weights(clipped)
    capped = [dict(f, rewards=np.clip(f["rewards"], -0.5, 0.5)) for f in fragments]
    np.testing.assert_allclose(clipped.make_batch(fragments)["advantages"], _numpy_pg_batch(p, capped)["advantages"],
                               rtol=1e-5, atol=1e-5)


def _ppo_reference(p, batch, clip_ratio, vf_clip, weight_entropy, weight_vf=0.5):
    """(mean loss, policy, value, entropy means, loss per item) of `rnp.ppo_loss` at weights `p`."""
    log_pi, entropy, v = _forward(p, batch["states"], batch["actions"])
    pi, value, per_item = rnp.ppo_loss(log_pi, batch["log_probs"], batch["advantages"], entropy, v, batch["values"],
                                       batch["value_targets"], clip_ratio=clip_ratio,
                                       value_function_clipping=vf_clip, weight_entropy=weight_entropy,
                                       weight_vf=weight_vf)
    return per_item.mean(), pi.mean(), value.mean(), entropy.mean(), per_item


def _clipped_batch(p, rng):
    """A batch of 8 rows whose behaviour log-probs put ratios on both sides of 1 +- 0.2 and whose old
    values put the value change on both sides of +-0.1."""
    states = rng.normal(size=(8, 2))
    actions = rng.randint(0, 3, size=8)
    log_pi, _, v = _forward(p, states, actions)
    # rho = exp(log pi - log mu) = exp(-offset): 1.65, 0.61 (clipped with these advantage signs), 0.61, 1.65
    # (not clipped), 1.05, 0.95 (inside), 1.35, 0.74 (outside, not clipped).
    offset = np.array([-0.5, 0.5, 0.5, -0.5, -0.05, 0.05, -0.3, 0.3])
    advantages = np.array([1.0, -1.0, 1.0, -1.0, 0.7, -0.4, -0.8, 0.9])
    v_old = v + np.array([0.3, -0.3, 0.05, -0.05, 0.3, -0.3, 0.0, 0.2])
    targets = v + np.array([1.0, 1.0, -1.0, 0.5, -1.0, -1.0, 0.3, 0.1])
    return dict(states=states, actions=actions, log_probs=log_pi + offset, values=v_old, advantages=advantages,
                value_targets=targets)


@pytest.mark.parametrize("vf_clip", [None, 0.1])
def test_ppo_clipped_loss_and_sgd_step_match_numpy(backend, vf_clip):
    agent = _ppo(backend, value_function_clipping=vf_clip, weight_entropy=0.05)
    p0 = _fixed_weights(agent, seed=3)
    batch = _clipped_batch(p0, np.random.RandomState(4))
    rho = np.exp(_forward(p0, batch["states"], batch["actions"])[0] - batch["log_probs"])
    a_t = batch["advantages"]
    clipped = ((rho > 1.2) & (a_t > 0)) | ((rho < 0.8) & (a_t < 0))
    assert clipped.any() and (~clipped & (np.abs(rho - 1) > 0.2)).any()  # Both sides of the min are used.
    if vf_clip is not None:
        v = _values(p0, batch["states"])
        v_clip = batch["values"] + np.clip(v - batch["values"], -vf_clip, vf_clip)
        outer = np.square(v_clip - batch["value_targets"]) > np.square(v - batch["value_targets"])
        assert outer.any() and not outer.all()  # Both sides of the max are used.

    loss, pi_loss, v_loss, entropy, per_item = _ppo_reference(p0, batch, 0.2, vf_clip, 0.05)
    out = agent.get_batch_losses(_as_batch(batch), clip_ratio=0.2)
    assert isinstance(out, PGUpdate)
    np.testing.assert_allclose(out.loss_per_item, per_item, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose([out.loss, out.policy_loss, out.value_loss, out.entropy],
                               [loss, pi_loss, v_loss, entropy], rtol=1e-5, atol=1e-6)
    # A wider clip range clips fewer rows: another loss.
    assert not np.isclose(agent.get_batch_losses(_as_batch(batch), clip_ratio=0.6).loss, loss, rtol=1e-4)
    np.testing.assert_array_equal(agent.graph_executor.get_weights()[agent.name + "/policy/neural-network/dense/bias"],
                                  p0["b1"].astype(np.float32))  # No step.

    grads = _numeric_grads(lambda p: _ppo_reference(p, batch, 0.2, vf_clip, 0.05)[0], p0)
    steps = agent.num_gradient_steps
    step_out = agent._step(_as_batch(batch), np.float32(0.0), 0.2)
    assert agent.num_gradient_steps == steps + 1
    np.testing.assert_allclose(step_out[0], loss, rtol=1e-5)  # The loss before the step.
    np.testing.assert_allclose(step_out[1], per_item, rtol=1e-5, atol=1e-6)
    _assert_sgd_step(p0, _params(agent), grads, LR)


def test_ppo_update_from_a_record_is_make_batch_plus_one_step(backend):
    agent = _ppo(backend, weight_entropy=0.01)
    p0 = _fixed_weights(agent, seed=5)
    record = _fragment(6, 6, terminal_at=[2])
    batch = _numpy_pg_batch(p0, [record])
    loss, _, _, _, per_item = _ppo_reference(p0, batch, 0.2, None, 0.01)
    grads = _numeric_grads(lambda p: _ppo_reference(p, batch, 0.2, None, 0.01)[0], p0)
    out = agent.update(record)
    assert agent.num_updates == 1 and agent.num_gradient_steps == 1
    np.testing.assert_allclose(out.loss, loss, rtol=1e-5)
    np.testing.assert_allclose(out.loss_per_item, per_item, rtol=1e-5, atol=1e-6)  # In row order (not shuffled).
    _assert_sgd_step(p0, _params(agent), grads, LR)


# --- Minibatch epochs -------------------------------------------------------------------------------------


@pytest.mark.parametrize("update_spec, steps, sizes", [
    ({"sample_size": 4, "num_epochs": 2}, 6, [4, 3, 3]),      # round(10 / 4) = 3 equal minibatches per epoch.
    ({"sample_size": 4, "num_iterations": 5}, 5, [4, 3, 3]),  # num_iterations decides.
    ({"sample_size": 20, "num_epochs": 3}, 3, [10]),          # A minibatch larger than the rollout: all rows.
    ({"sample_size": 4, "num_iterations": 2}, 2, [4, 3, 3]),  # Fewer steps than one epoch: 3 rows not learned from.
    ({"sample_size": 8, "num_epochs": 2}, 2, [10]),           # round(10 / 8) = 1: no minibatch of 2 rows.
    ({"sample_size": 3, "num_epochs": 1}, 3, [4, 3, 3]),      # round(10 / 3) = 3.
])
def test_minibatch_schedule(backend, update_spec, steps, sizes):
    agent = _ppo(backend, update_spec=dict(update_spec, batch_size=10), weight_entropy=0.01)
    _observe(agent, _fragment(7, 10))
    assert agent.ready_to_update()
    rows_per_step = []
    step = agent._step

    def counting_step(batch, *args):
        rows_per_step.append(len(batch["advantages"]))
        return step(batch, *args)

    agent._step = counting_step
    out = agent.update()
    assert agent.num_gradient_steps == steps and len(rows_per_step) == steps
    assert rows_per_step == (sizes * 3)[:steps]
    # One loss per row (from the row's first minibatch), finite; the loss is the mean over the steps. Rows that
    # no step sampled (num_iterations shorter than an epoch) have no loss: NaN.
    assert out.loss_per_item.shape == (10,)
    assert np.sum(np.isfinite(out.loss_per_item)) == min(10, sum(rows_per_step))
    assert np.isfinite([out.loss, out.policy_loss, out.value_loss, out.entropy]).all()


def test_minibatches_are_shuffled_rows_of_the_rollout(backend):
    agent = _ppo(backend, update_spec={"batch_size": 10, "sample_size": 4, "num_epochs": 2})
    record = _fragment(8, 10)
    seen = []
    step = agent._step

    def recording_step(batch, *args):
        seen.append(batch["states"][:, 0].copy())
        return step(batch, *args)

    agent._step = recording_step
    agent.update(record)
    for epoch in (seen[:3], seen[3:]):  # Each epoch visits every row once.
        np.testing.assert_array_equal(np.sort(np.concatenate(epoch)), np.sort(record["states"][:, 0]))
    assert not np.array_equal(np.concatenate(seen[:3]), record["states"][:, 0])  # In a shuffled order.


def test_standardized_advantages_per_minibatch(backend):
    agent = _ppo(backend, standardize_advantages=True)
    p0 = _fixed_weights(agent, seed=9)
    batch = _clipped_batch(p0, np.random.RandomState(10))
    a_t = batch["advantages"]
    standardized = dict(batch, advantages=(a_t - a_t.mean()) / a_t.std())
    grads = _numeric_grads(lambda p: _ppo_reference(p, standardized, 0.2, None, 0.0)[0], p0)
    out = agent._step(_as_batch(batch), np.float32(0.0), 0.2)
    np.testing.assert_allclose(out[0], _ppo_reference(p0, standardized, 0.2, None, 0.0)[0], rtol=1e-5)
    _assert_sgd_step(p0, _params(agent), grads, LR)


# --- Schedules ---------------------------------------------------------------------------------------------


def test_clip_ratio_and_weight_entropy_schedules_reach_the_graph(backend):
    agent = _ppo(backend, clip_ratio=["linear", 0.2, 0.0], weight_entropy=["linear", 0.1, 0.0])
    p0 = _fixed_weights(agent, seed=11)
    batch = _clipped_batch(p0, np.random.RandomState(12))
    w0 = agent.graph_executor.get_weights()
    for tp, clip, w_entropy in ((0.0, 0.2, 0.1), (0.5, 0.1, 0.05), (1.0, 0.0, 0.0)):
        agent.set_weights(w0)
        loss, pi_loss = _ppo_reference(p0, batch, clip, None, w_entropy)[:2]
        # `_learn` evaluates both schedules at the time given (one step: it returns the loss before it).
        out = agent._learn(_as_batch(batch), np.float32(tp))
        np.testing.assert_allclose([out.loss, out.policy_loss], [loss, pi_loss], rtol=1e-5, atol=1e-6, err_msg=tp)
        # get_batch_losses evaluates both schedules too (or takes the clip ratio given).
        agent.set_weights(w0)
        got = agent.get_batch_losses(_as_batch(batch), time_percentage=tp)
        np.testing.assert_allclose([got.loss, got.policy_loss], [loss, pi_loss], rtol=1e-5, atol=1e-6, err_msg=tp)
        got = agent.get_batch_losses(_as_batch(batch), clip_ratio=0.3, time_percentage=tp)
        np.testing.assert_allclose(got.loss, _ppo_reference(p0, batch, 0.3, None, w_entropy)[0], rtol=1e-5, atol=1e-6)
    # The schedules matter: at tp 1 the clip range is empty (clip(rho, 1, 1) = 1) and no entropy bonus is paid.
    assert not np.isclose(_ppo_reference(p0, batch, 0.2, None, 0.1)[0], _ppo_reference(p0, batch, 0.0, None, 0.0)[0])


# --- Rollouts through observe and the worker ---------------------------------------------------------------


def test_ready_to_update_and_update_empties_the_rollout(backend):
    agent = _ppo(backend, update_spec={"batch_size": 6, "sample_size": 64, "num_epochs": 1})
    f = _fragment(13, 8, terminal_at=[2])
    for t in range(5):
        agent.observe(f["states"][t], f["actions"][t], None, f["rewards"][t], f["next_states"][t], f["terminals"][t],
                      env_id=t % 2)
        assert not agent.ready_to_update()
    # The episode end of env 0 at step 2 went into the rollout; the rest waits in the observe buffers.
    assert agent.rollouts.rows == 2 and agent.buffers.pending() == 3 and agent.rollouts.episodes == 1
    agent.observe(f["states"][5], f["actions"][5], None, f["rewards"][5], f["next_states"][5], False, env_id=1)
    assert agent.ready_to_update()
    out = agent.update()
    assert out.loss_per_item.shape == (6,) and agent.num_updates == 1
    assert agent.rollouts.rows == 0 and agent.buffers.pending() == 0 and agent.rollouts.episodes == 0
    assert not agent.ready_to_update()
    with pytest.raises(RLGraphError, match=r"ppo-agent\.update: no transitions to learn from.*Hint: observe"):
        agent.update()


def test_worker_update_rounds(backend):
    agent = _ppo(backend, state_space=ENV_STATES, action_space=ENV_ACTIONS,
                 update_spec={"batch_size": 10, "sample_size": 4, "num_epochs": 2})
    worker = SingleThreadedWorker(agent, _env_spec(), num_environments=1, seed=5)
    stats = worker.execute_timesteps(40)
    # The worker observes step t when step t + 1's action comes in: 39 observed; rounds at 10, 20, 30.
    assert agent.timesteps == 39 and stats["num_updates"] == 3 and agent.num_updates == 3
    assert agent.num_gradient_steps == 3 * 6
    assert agent.rollouts.rows + agent.buffers.pending() == 9 and not agent.ready_to_update()
    assert np.isfinite(stats["mean_loss"])
    # Two envs: 20 steps each, 19 observed each (38): rounds at 10, 20, 30 observed steps.
    agent = _ppo(backend, state_space=ENV_STATES, action_space=ENV_ACTIONS, update_spec={"batch_size": 10})
    stats = SingleThreadedWorker(agent, _env_spec(), num_environments=2, seed=5).execute_timesteps(40)
    assert agent.timesteps == 38 and agent.num_updates == 3 and agent.rollouts.rows + agent.buffers.pending() == 8


def test_episode_update_mode_counts_finished_episodes(backend):
    for spec in ({"sample_episodes": True}, {"update_spec": {"batch_size": 2, "update_mode": "episodes"}}):
        update_spec = spec.pop("update_spec", {"batch_size": 2})
        agent = _ppo(backend, state_space=ENV_STATES, action_space=ENV_ACTIONS, update_spec=update_spec, **spec)
        assert agent.update_spec["update_mode"] == "episodes"
        worker = SingleThreadedWorker(agent, _env_spec(), num_environments=1, seed=6)
        sizes = []
        update = agent.update

        def sized_update(*args, **kwargs):
            sizes.append(agent.rollouts.rows + agent.buffers.pending())
            return update(*args, **kwargs)

        agent.update = sized_update
        # Episodes truncated after 5 steps (the env never terminates): 2 episodes (10 steps) per round.
        stats = worker.execute_timesteps(23, max_timesteps_per_episode=5)
        assert stats["episodes_executed"] == 4 and agent.num_updates == 2 and sizes == [10, 10]
        assert agent.rollouts.episodes == 0 and not agent.ready_to_update()
    # Terminal episodes count too: observe two short episodes by hand.
    agent = _ppo(backend, sample_episodes=True, update_spec={"batch_size": 2})
    _observe(agent, _fragment(14, 3, truncated_end=False), truncated=False)
    assert agent.rollouts.episodes == 1 and not agent.ready_to_update()
    _observe(agent, _fragment(15, 2), truncated=True)  # Truncated: counted.
    assert agent.rollouts.episodes == 2 and agent.ready_to_update()
    assert agent.update().loss_per_item.shape == (5,)


def test_rollout_capacity_is_a_ring_that_keeps_the_newest_transitions(backend, caplog, tmp_path):
    agent = _ppo(backend, memory_spec={"type": "ring-buffer", "capacity": 5}, update_spec={"batch_size": 4})
    first, second = _fragment(16, 4, truncated_end=False), _fragment(17, 4, truncated_end=False)
    _observe(agent, first, truncated=False)  # An episode of 4 rows fits.
    with caplog.at_level("WARNING", logger="rlgraph.agents.pg.rollouts"):
        _observe(agent, second, truncated=False)
        _observe(agent, _fragment(18, 1, truncated_end=False), truncated=False)
    # 9 observed, the newest 5 kept: the second episode (4 rows) and the third (1 row); the first
    # episode is dropped whole.
    assert (agent.rollouts.observed, agent.rollouts.dropped, agent.rollouts.rows) == (9, 4, 5)
    kept = agent.rollouts.fragments
    assert [len(f["rewards"]) for f in kept] == [4, 1]
    np.testing.assert_array_equal(kept[0]["states"], second["states"])
    # One more row cuts the second episode at its start: its last 3 rows stay.
    _observe(agent, _fragment(21, 1, truncated_end=False), truncated=False)
    assert [len(f["rewards"]) for f in agent.rollouts.fragments] == [3, 1, 1]
    np.testing.assert_array_equal(agent.rollouts.fragments[0]["states"], second["states"][1:])
    np.testing.assert_array_equal(agent.rollouts.fragments[0]["next_states"], second["next_states"][1:])
    assert len([r for r in caplog.records if "holds at most 5 transitions" in r.getMessage()]) == 1
    # A checkpoint keeps the counts: the restored agent is as ready and as full.
    path = agent.store_model(str(tmp_path / "ckpt"), add_timestep=False)
    restored = _ppo(backend, memory_spec={"type": "ring-buffer", "capacity": 5}, update_spec={"batch_size": 4})
    restored.load_model(path)
    assert (restored.rollouts.observed, restored.rollouts.dropped, restored.rollouts.rows) == (10, 5, 5)
    assert agent.update().loss_per_item.shape == (5,)
    assert (agent.rollouts.observed, agent.rollouts.dropped, agent.rollouts.rows) == (0, 0, 0)


def test_rollout_capacity_below_the_batch_size_learns_from_the_newest(backend, caplog):
    # The original RLgraph's Pong configs: capacity 1000, batch 10000. Accepted with a warning; the
    # update comes after batch_size observed steps and learns from the newest `capacity` of them.
    with caplog.at_level("WARNING", logger="rlgraph.agents.pg.agent"):
        agent = _ppo(backend, memory_spec={"type": "ring-buffer", "capacity": 5}, update_spec={"batch_size": 10})
    assert any("capacity (5) is smaller than update_spec.batch_size (10)" in r.getMessage() for r in caplog.records)
    _observe(agent, _fragment(19, 6), truncated=True)
    assert not agent.ready_to_update() and agent.rollouts.rows == 5
    _observe(agent, _fragment(20, 4), truncated=True)
    assert agent.ready_to_update() and agent.rollouts.observed == 10
    assert agent.update().loss_per_item.shape == (5,)


# --- Container and bounded actions --------------------------------------------------------------------------


def _squashed_log_prob(mean, log_std, a, low, high):
    """log p(a) per element of a tanh-squashed Gaussian on [low, high] (SquashedNormal) in numpy."""
    y = np.clip(2.0 * (a - low) / (high - low) - 1.0, -1 + 1e-6, 1 - 1e-6)
    u = np.arctanh(y)
    log_std = np.clip(log_std, -20.0, 2.0)
    log_normal = -0.5 * np.square((u - mean) / np.exp(log_std)) - log_std - 0.5 * np.log(2 * np.pi)
    return log_normal - np.log(1.0 - np.tanh(u) ** 2) - np.log((high - low) / 2.0)


@pytest.mark.parametrize("action_space", [Dict(a=IntBox(2), b=FloatBox(shape=(2,), low=-1.0, high=1.0)),
                                          FloatBox(shape=(2,), low=-2.0, high=2.0)], ids=["dict", "bounded"])
def test_container_and_bounded_actions(backend, action_space):
    agent = _ppo(backend, action_space=action_space, weight_entropy=0.01,
                 update_spec={"batch_size": 6, "sample_size": 3, "num_epochs": 2})
    is_dict = isinstance(action_space, Dict)
    rng = np.random.RandomState(18)
    s = rng.normal(size=(6, 2)).astype(np.float32)
    actions = agent.get_action(s)
    greedy = agent.get_action(s, use_exploration=False)
    space = action_space.with_batch_rank()
    assert space.contains(actions) and space.contains(greedy)

    weights = agent.graph_executor.get_weights()
    h = np.tanh(s.astype(np.float64) @ weights["ppo-agent/policy/neural-network/dense/kernel"]
                + weights["ppo-agent/policy/neural-network/dense/bias"])

    def adapter(i):
        prefix = f"ppo-agent/policy/action-adapter-{i}/action-layer/"
        return h @ weights[prefix + "kernel"] + weights[prefix + "bias"]

    # log pi sums the leaves' log-probs and a FloatBox leaf's elements. Actions away from the bounds: near
    # them atanh of a float32 action loses digits (the sampled actions may be there).
    low, high = (-1.0, 1.0) if is_dict else (-2.0, 2.0)
    box = rng.uniform(0.9 * low, 0.9 * high, size=(6, 2)).astype(np.float32)
    x_box = adapter(1) if is_dict else adapter(0)  # Leaves in flatten order: "a" is adapter 0, "b" adapter 1.
    expected = _squashed_log_prob(x_box[:, :2], x_box[:, 2:], box.astype(np.float64), low, high).sum(axis=-1)
    if is_dict:
        ints = rng.randint(0, 2, size=6)
        chosen = {"a": ints, "b": box}
        expected = expected + rnp.log_softmax(adapter(0))[np.arange(6), ints]
        np.testing.assert_array_equal(greedy["a"], np.argmax(adapter(0), axis=-1))
    else:
        chosen = box
    np.testing.assert_allclose(greedy["b"] if is_dict else greedy, low + (high - low) * (np.tanh(x_box[:, :2]) + 1) / 2,
                               rtol=1e-5, atol=1e-6)
    log_probs, values, next_values = agent.call_api_method("evaluate_transitions", [s, chosen, s[::-1].copy()])
    assert log_probs.shape == (6,) and values.shape == (6,)
    np.testing.assert_allclose(log_probs, expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(next_values, values[::-1], rtol=1e-5, atol=1e-6)
    assert np.all(np.isfinite(agent.call_api_method("evaluate_transitions", [s, actions, s])[0]))

    # Observe the sampled actions (an episode of 6 steps), update (2 epochs of 2 minibatches of 3), act again.
    agent.observe(s, actions, None, rng.normal(size=6).astype(np.float32), np.roll(s, -1, axis=0),
                  np.arange(6) == 5, env_id=0)
    assert agent.rollouts.rows == 6 and agent.ready_to_update()
    w0 = agent.get_weights()
    out = agent.update()
    assert np.all(np.isfinite(out.loss_per_item)) and out.loss_per_item.shape == (6,) and agent.num_gradient_steps == 4
    assert all(not np.array_equal(w0[k], v) for k, v in agent.get_weights().items())
    assert space.contains(agent.get_action(s))


def test_dict_of_categoricals_sums_log_probs_and_entropies(backend):
    agent = _ppo(backend, action_space=Dict(a=IntBox(2), c=IntBox(3)), weight_entropy=0.1,
                 preprocessing_spec=[{"type": "multiply", "factor": 2.0}])
    rng = np.random.RandomState(27)
    s = rng.normal(size=(5, 2)).astype(np.float32)
    actions = {"a": rng.randint(0, 2, 5), "c": rng.randint(0, 3, 5)}
    weights = agent.graph_executor.get_weights()
    # The batch's states are preprocessed (2 s); get_state_values preprocesses unless told not to.
    h = np.tanh(2.0 * s.astype(np.float64) @ weights["ppo-agent/policy/neural-network/dense/kernel"]
                + weights["ppo-agent/policy/neural-network/dense/bias"])
    log_pi, entropy = 0.0, 0.0
    for i, key in enumerate(["a", "c"]):
        prefix = f"ppo-agent/policy/action-adapter-{i}/action-layer/"
        log_p = rnp.log_softmax(h @ weights[prefix + "kernel"] + weights[prefix + "bias"])
        log_pi = log_pi + log_p[np.arange(5), actions[key]]
        entropy = entropy - np.sum(np.exp(log_p) * log_p, axis=-1)
    values = agent.get_state_values(s)
    np.testing.assert_allclose(agent.get_state_values(2.0 * s, apply_preprocessing=False), values, rtol=1e-6)
    log_mu, v, _ = agent.call_api_method("evaluate_transitions", [2.0 * s, actions, 2.0 * s])
    np.testing.assert_allclose(log_mu, log_pi, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(v, values, rtol=1e-6)
    a_t = rng.normal(size=5)
    batch = dict(states=2.0 * s, actions=actions, log_probs=log_pi - 0.1, values=values, advantages=a_t,
                 value_targets=values + 1.0)
    out = agent.get_batch_losses({k: (v.astype(np.float32) if k != "actions" else v) for k, v in batch.items()})
    rho = np.exp(0.1)  # 1.105: inside the clip range 1 +- 0.2.
    np.testing.assert_allclose(out.entropy, entropy.mean(), rtol=1e-5)
    np.testing.assert_allclose(out.policy_loss, np.mean(-rho * a_t - 0.1 * entropy), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out.value_loss, 0.5, rtol=1e-5)


# --- Checkpoints and reproducibility ------------------------------------------------------------------------


def _train(agent, rounds, seed):
    rng = np.random.RandomState(seed)
    out = []
    for i in range(rounds):
        f = _fragment(rng.randint(1000), 10, terminal_at=[3])
        _observe(agent, f, env_id=i % 2)
        out.append(agent.update())
    return out


def test_checkpoint_round_trip(backend, tmp_path):
    agent = _ppo(backend, update_spec={"batch_size": 10, "sample_size": 4, "num_epochs": 2})
    _train(agent, 2, seed=19)
    path = agent.store_model(str(tmp_path / "ckpt"), add_timestep=False)
    probe = np.random.RandomState(20).normal(size=(7, 2)).astype(np.float32)
    greedy, values = agent.get_action(probe, use_exploration=False), agent.get_state_values(probe)

    other = _ppo(backend, update_spec={"batch_size": 10, "sample_size": 4, "num_epochs": 2},
                 execution_spec={"seed": 2, "max_timesteps": 1000})
    assert not np.allclose(other.get_state_values(probe), values)
    other.load_model(path)
    np.testing.assert_array_equal(other.get_action(probe, use_exploration=False), greedy)
    np.testing.assert_array_equal(other.get_state_values(probe), values)
    assert other.timesteps == agent.timesteps and other.num_updates == 2
    assert other.num_gradient_steps == agent.num_gradient_steps > 0
    for name, value in agent.graph_executor.get_weights().items():  # Value network included.
        np.testing.assert_array_equal(other.graph_executor.get_weights()[name], value, err_msg=name)


def test_checkpoint_keeps_a_partial_rollout(backend, tmp_path):
    """A checkpoint taken mid-rollout resumes with the same rollout (the transitions an episode end moved
    into the rollout and those still in the observe buffers) and the same minibatch order."""
    spec = dict(update_spec={"batch_size": 10, "sample_size": 4, "num_epochs": 2})
    agent = _ppo(backend, **spec)
    _train(agent, 1, seed=25)
    _observe(agent, _fragment(21, 4, truncated_end=False), env_id=0, truncated=False)  # In the rollout storage.
    _observe(agent, _fragment(22, 3), env_id=1, truncated=False)  # In the observe buffer of env 1.
    assert agent.rollouts.rows == 4 and agent.buffers.pending() == 3 and agent.rollouts.episodes == 1
    path = agent.store_model(str(tmp_path / "mid"), add_timestep=False)
    other = _ppo(backend, execution_spec={"seed": 2, "max_timesteps": 1000}, **spec)
    other.load_model(path)
    assert other.rollouts.rows == 4 and other.buffers.pending() == 3 and other.rollouts.episodes == 1
    for a in (agent, other):
        _observe(a, _fragment(26, 3), env_id=1, truncated=True)
        assert a.ready_to_update()
    first, second = agent.update(), other.update()
    np.testing.assert_allclose(second.loss_per_item, first.loss_per_item, rtol=1e-6)
    np.testing.assert_allclose(second.loss, first.loss, rtol=1e-6)


def test_same_seed_same_losses():
    # PyTorch only: TF's multi-threaded CPU reductions are not guaranteed bitwise repeatable.
    def run(seed):
        agent = _ppo("pytorch", update_spec={"batch_size": 10, "sample_size": 4, "num_epochs": 2},
                     weight_entropy=0.01, execution_spec={"seed": seed, "max_timesteps": 1000})
        return [(float(o.loss), o.loss_per_item.tolist()) for o in _train(agent, 3, seed=23)]

    first = run(3)
    assert run(3) == first
    assert run(4) != first


# --- Bad input ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs, pattern", [
    (dict(update_spec={"num_epoch": 2}), r"PPOAgent\(update_spec\): unknown key\(s\) \['num_epoch'\] in update_spec.*"
                                         r"Hint: did you mean 'num_epochs'\?"),
    (dict(clip_ratio=0.0), r"PPOAgent\(clip_ratio\): clip_ratio must start > 0.*Received 0\.0"),
    (dict(clip_ratio=-0.1), r"PPOAgent\(clip_ratio\): clip_ratio must start > 0"),
    (dict(clip_ratio=["linear", 0.0, 0.2]), r"PPOAgent\(clip_ratio\): clip_ratio must start > 0"),
    (dict(gae_lambda=1.5), r"PPOAgent\(gae_lambda\): gae_lambda must be a finite number in \[0, 1\].*1\.5"),
    (dict(gae_lambda=-0.1), r"PPOAgent\(gae_lambda\): gae_lambda must be"),
    (dict(memory_spec={"type": "replay-memory", "capacity": 100}),
     r"PPOAgent\(memory_spec\): on-policy agents keep their rollout in a ring buffer.*replay-memory.*"
     r"Hint: replay memories are for off-policy agents"),
    (dict(memory_spec={"type": "ring-buffer", "capacity": 0}), r"PPOAgent\(memory_spec\.capacity\)"),
    (dict(value_function_spec=None, value_function_optimizer_spec={"type": "sgd", "learning_rate": 0.1}),
     r"PPOAgent\(value_function_optimizer_spec\): a value-function optimizer needs a value network of its own"),
    (dict(value_function_clipping=0.0), r"PPOAgent\(value_function_clipping\)"),
    (dict(update_spec={"sample_size": 0}), r"PPOAgent\(update_spec\.sample_size\)"),
    (dict(update_spec={"update_mode": "episode"}), r"update_spec\.update_mode.*did you mean 'episodes'"),
    (dict(standardize_advantages="yes"), r"PPOAgent\(standardize_advantages\)"),
])
def test_constructor_errors_name_the_argument(backend, kwargs, pattern):
    with pytest.raises(RLGraphSpecError, match=pattern):
        PPOAgent(**_spec(backend, **kwargs))


def test_bad_update_batches_are_refused(backend):
    agent = _ppo(backend)
    w0 = agent.graph_executor.get_weights()
    record = _fragment(24, 4)
    with pytest.raises(RLGraphError, match=r"ppo-agent\.update\(batch\).*terminals"):
        agent.update({k: v for k, v in record.items() if k != "terminals"})
    nan_rewards = dict(record, rewards=np.array([0.0, np.nan, 1.0, 0.0], np.float32))
    with pytest.raises(RLGraphNonFiniteError, match=re.escape("ppo-agent.update(batch)") + r".*rewards"):
        agent.update(nan_rewards)
    with pytest.raises(RLGraphSpaceError, match=r"ppo-agent\.update\(batch\).*actions"):
        agent.update(dict(record, actions=np.array([0, 1, 5, 2])))
    with pytest.raises(RLGraphError, match=r"ppo-agent\.update: no transitions to learn from"):
        agent.update()
    assert agent.num_updates == 0 and agent.num_gradient_steps == 0
    for name, value in agent.graph_executor.get_weights().items():
        np.testing.assert_array_equal(value, w0[name])


def test_target_network_keys_are_refused(backend):
    with pytest.raises(RLGraphSpecError, match=r"PPOAgent\(update_spec\).*\['sync_tau'\].*no target network"):
        _ppo(backend, update_spec={"batch_size": 10, "sync_tau": 0.5})


def test_several_update_steps_per_round_learn_once_per_rollout(backend):
    """update_spec.update_steps 3: the worker stops a round's updates once the rollout is learned."""
    agent = _ppo(backend, state_space=ENV_STATES, action_space=ENV_ACTIONS,
                 update_spec={"batch_size": 8, "update_steps": 3, "sample_size": 8, "num_epochs": 1})
    stats = SingleThreadedWorker(agent, _env_spec(), num_environments=1, seed=5).execute_timesteps(20)
    assert stats["num_updates"] == agent.num_updates == 2  # Rollouts of 8 of the 19 observed steps.
