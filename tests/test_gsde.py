"""gSDE (generalized state-dependent exploration, `ActionAdapter(use_sde=True)`): the policy's numbers
against a numpy reference on both backends, the noise schedule of the PPO/A2C agents, and the refusals.

Reference (Raffin et al. 2022; Stable-Baselines3's StateDependentNoiseDistribution): phi = the
network output, sigma = exp(L) with L the [latent, actions] log-std matrix, Z the unit-noise matrices:
    mean = action layer(phi),  std = sqrt(phi^2 @ sigma^2 + 1e-6)
    stochastic action = mean + phi @ (sigma * Z[b]) (row b of a batch of exactly M rows, else Z[0])
"""
import numpy as np
import pytest

from rlgraph.agents import Agent, PPOAgent
from rlgraph.components.policies.policy import Policy
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

LATENT, ACTIONS, MATRICES = 3, 2, 2
STATE = FloatBox(shape=(4,), add_batch_rank=True)
ACTION = FloatBox(low=-1.0, high=1.0, shape=(ACTIONS,))


def _policy(bounded="normal", **adapter):
    spec = dict({"use_sde": True, "log_std_init": -1.0, "sde_matrices": MATRICES}, **adapter)
    return Policy([{"type": "dense", "units": LATENT, "activation": "tanh", "scope": "hidden"}], action_space=ACTION,
                  action_adapter_spec=spec, distributions_spec={"bounded_distribution_type": bounded},
                  max_likelihood=False)


def _reference(values, states):
    """(phi, mean, std, sigma, Z) in numpy from the policy's variables."""
    phi = np.tanh(states @ values["neural-network/hidden/kernel"] + values["neural-network/hidden/bias"])
    mean = phi @ values["action-adapter-0/action-layer/kernel"] + values["action-adapter-0/action-layer/bias"]
    sigma = np.exp(values["action-adapter-0/sde-log-std"])
    std = np.sqrt((phi ** 2) @ (sigma ** 2) + 1e-6)
    return phi, mean, std, sigma, values["action-adapter-0/sde-noise"]


def _normal_log_prob(x, mean, std):
    return -0.5 * ((x - mean) / std) ** 2 - np.log(std) - 0.5 * np.log(2 * np.pi)


def test_parameters_actions_and_log_probs_equal_the_numpy_reference(backend):
    test = ComponentTest(_policy(), input_spaces=dict(nn_inputs=STATE), backend=backend)
    states = np.random.RandomState(3).randn(MATRICES, 4).astype(np.float32)
    values = test.get_variable_values()
    assert values["action-adapter-0/sde-log-std"].shape == (LATENT, ACTIONS)
    np.testing.assert_allclose(values["action-adapter-0/sde-log-std"], -1.0)
    assert values["action-adapter-0/sde-noise"].shape == (MATRICES, LATENT, ACTIONS)
    phi, mean, std, sigma, z = _reference(values, states)

    got_mean, got_log_std = test.test(("get_adapter_outputs", states))
    np.testing.assert_allclose(got_mean, mean, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_log_std, np.log(std), rtol=1e-5, atol=1e-6)

    # A batch of M rows: row b explores with matrix b; the same noise on every call until a reset.
    per_row = mean + np.einsum("bi,bij->bj", phi, sigma[None] * z)
    for _ in range(2):
        np.testing.assert_allclose(test.test(("get_stochastic_action", states)), per_row, rtol=1e-5, atol=1e-6)
    actions, log_probs = test.test(("get_action_and_log_prob", states))
    np.testing.assert_allclose(actions, per_row, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(log_probs, _normal_log_prob(per_row, mean, std), rtol=1e-4, atol=1e-5)
    # Any other batch size: matrix 0 for every row.
    one = test.test(("get_stochastic_action", states[:1]))
    np.testing.assert_allclose(one, mean[:1] + phi[:1] @ (sigma * z[0]), rtol=1e-5, atol=1e-6)
    three = np.concatenate([states, states[:1]])
    np.testing.assert_allclose(test.test(("get_stochastic_action", three)),
                               np.concatenate([mean, mean[:1]]) + np.concatenate([phi, phi[:1]]) @ (sigma * z[0]),
                               rtol=1e-5, atol=1e-6)
    # Deterministic actions are the mean.
    np.testing.assert_allclose(test.test(("get_deterministic_action", states)), mean, rtol=1e-5, atol=1e-6)

    # reset_noise draws new unit-noise matrices; the actions follow them.
    test.test(("reset_noise", None))
    new_z = test.get_variable_values()["action-adapter-0/sde-noise"]
    assert new_z.shape == z.shape and not np.allclose(new_z, z)
    assert abs(float(new_z.mean())) < 1.5 and 0.2 < float(new_z.std()) < 3.0  # (12 standard normal draws.)
    np.testing.assert_allclose(test.test(("get_stochastic_action", states)),
                               mean + np.einsum("bi,bij->bj", phi, sigma[None] * new_z), rtol=1e-5, atol=1e-6)


def test_squashed_actions_add_the_noise_before_the_squashing(backend):
    test = ComponentTest(_policy("squashed-normal"), input_spaces=dict(nn_inputs=STATE), backend=backend)
    states = np.random.RandomState(4).randn(1, 4).astype(np.float32)
    phi, mean, std, sigma, z = _reference(test.get_variable_values(), states)
    u = mean + phi @ (sigma * z[0])
    actions, log_probs = test.test(("get_action_and_log_prob", states))
    np.testing.assert_allclose(actions, np.tanh(u), rtol=1e-5, atol=1e-6)  # Bounds [-1, 1].
    expected = _normal_log_prob(u, mean, std) - np.log(1.0 - np.tanh(u) ** 2)
    np.testing.assert_allclose(log_probs, expected, rtol=1e-4, atol=1e-4)


def _ppo(backend, sample_freq=-1, **extra):
    spec = {"type": "ppo", "backend": backend, "network_spec": [{"type": "dense", "units": LATENT, "activation": "tanh"}],
            "value_function_spec": [{"type": "dense", "units": 4, "activation": "tanh"}],
            "action_adapter_spec": {"use_sde": True, "log_std_init": -0.5, "sde_sample_freq": sample_freq},
            "policy_spec": {"distributions_spec": {"bounded_distribution_type": "normal"}},
            "update_spec": {"batch_size": 8, "sample_size": 4, "num_epochs": 1},
            "optimizer_spec": {"type": "adam", "learning_rate": 0.01}, "execution_spec": {"seed": 5}}
    spec.update(extra)
    return Agent.from_spec(spec, state_space=FloatBox(shape=(4,)), action_space=ACTION)


def _noise(agent):
    return next(v for k, v in agent.graph_executor.get_weights().items() if k.endswith("sde-noise")).copy()


def test_ppo_draws_new_noise_every_sample_freq_steps_and_after_each_update(backend):
    agent = _ppo(backend, sample_freq=3)
    state = np.ones(4, np.float32)
    draws = [_noise(agent)]
    for step in range(7):
        agent.get_action(state)
        draws.append(_noise(agent))
    # Calls 1-3 act with the first draw; call 4 draws anew before it acts, and so does call 7.
    changed = [not np.array_equal(a, b) for a, b in zip(draws, draws[1:])]
    assert changed == [False, False, False, True, False, False, True]
    before = _noise(agent)
    agent.get_action(state, use_exploration=False)  # Greedy calls neither count nor draw.
    assert np.array_equal(_noise(agent), before)
    rng = np.random.RandomState(0)
    for _ in range(8):
        action = agent.get_action(state)
        agent.observe(state, action, None, float(rng.randn()), state, False)
    log_std_before = next(v for k, v in agent.graph_executor.get_weights().items() if k.endswith("sde-log-std"))
    noise_before = _noise(agent)
    agent.update()
    weights = agent.graph_executor.get_weights()
    assert not np.array_equal(_noise(agent), noise_before)  # A new rollout, new noise.
    # The log-std matrix learns (through the log-probs and the entropy).
    assert not np.allclose(next(v for k, v in weights.items() if k.endswith("sde-log-std")), log_std_before)
    assert agent.sde_sample_freq == 3 and agent._sde_steps == 0


def test_a2c_with_gsde_and_a_shared_value_head_acts_from_its_noise(backend):
    agent = Agent.from_spec({
        "type": "actor-critic", "backend": backend, "network_spec": [{"type": "dense", "units": LATENT}],
        "action_adapter_spec": {"use_sde": True},
        "policy_spec": {"distributions_spec": {"bounded_distribution_type": "normal"}},
        "update_spec": {"batch_size": 4}, "execution_spec": {"seed": 2}},
        state_space=FloatBox(shape=(4,)), action_space=ACTION)
    state = np.full(4, 0.5, np.float32)
    assert np.array_equal(agent.get_action(state), agent.get_action(state))  # No new draw between steps.
    assert not np.array_equal(agent.get_action(state), agent.get_action(state, use_exploration=False))
    log_std = next(v for k, v in agent.graph_executor.get_weights().items() if k.endswith("sde-log-std"))
    np.testing.assert_allclose(log_std, -2.0)  # Stable-Baselines3's default start.


def test_learn_features_lets_the_gradient_into_the_features(backend):
    """sde_learn_features (Stable-Baselines3's SAC: learn_features=True): the log-std and the noise
    pass their gradient into phi, d/dphi_i sum_j 0.5 log(v_j) = sum_j phi_i sigma_ij^2 / v_j and
    d/dphi_i sum_j (phi @ sigma Z)_j = sum_j (sigma Z)_ij; without it phi gets none. Same values."""
    import rlgraph
    from rlgraph.components.action_adapters.state_dependent_noise import exploration_noise, state_dependent_log_std
    rng = np.random.RandomState(5)
    phi, log_std, z = rng.randn(4, LATENT), rng.randn(LATENT, ACTIONS) * 0.5, rng.randn(1, LATENT, ACTIONS)
    sigma = np.exp(log_std)
    v = (phi ** 2) @ (sigma ** 2) + 1e-6
    expected = {"log_std": (phi[:, :, None] * sigma[None] ** 2 / v[:, None, :]).sum(-1),
                "noise": np.broadcast_to((sigma * z[0]).sum(-1), phi.shape)}
    values = {"log_std": 0.5 * np.log(v), "noise": phi @ (sigma * z[0])}
    if backend == "tf":
        import tensorflow as tf
        log_std_in, z_in = tf.constant(log_std, tf.float32), tf.constant(z, tf.float32)
    else:
        import torch
        log_std_in, z_in = torch.tensor(log_std, dtype=torch.float32), torch.tensor(z, dtype=torch.float32)
    for learn in (False, True):
        fns = {"log_std": lambda p: state_dependent_log_std(p, log_std_in, -20.0, 2.0, learn),
               "noise": lambda p: exploration_noise(p, log_std_in, z_in, -20.0, 2.0, learn)}
        for name, fn in fns.items():
            with rlgraph.backend_scope(backend):
                if backend == "tf":
                    x = tf.Variable(phi.astype(np.float32))
                    with tf.GradientTape() as tape:
                        out = fn(x)
                        total = tf.reduce_sum(out)
                    grad = tape.gradient(total, x)
                    out, grad = out.numpy(), None if grad is None else grad.numpy()
                else:
                    x = torch.tensor(phi, dtype=torch.float32, requires_grad=True)
                    out = fn(x)
                    total = out.sum()
                    grad = torch.autograd.grad(total, x, allow_unused=True)[0] if total.requires_grad else None
                    out, grad = out.detach().numpy(), None if grad is None else grad.numpy()
            np.testing.assert_allclose(out, values[name], rtol=1e-4, atol=1e-5)
            if learn:
                np.testing.assert_allclose(grad, expected[name], rtol=1e-4, atol=1e-5)
            else:
                assert grad is None or not np.any(grad), (name, grad)


@pytest.mark.parametrize("case, match", [
    ({"action_space": IntBox(3)}, "FloatBox action"),
    ({"adapter": {"use_sde": True, "parameterization": "beta"}}, "normal parameterization"),
    ({"adapter": {"use_sde": True, "pre_network_spec": [{"type": "dense", "units": 2}]}}, "no pre-network"),
    ({"adapter": {"use_sde": "yes"}}, "use_sde must be a bool"),
    ({"adapter": {"use_sde": True, "sde_matrices": 0}}, "sde_matrices"),
    ({"adapter": {"use_sde": True, "sde_sample_freq": 0}}, "sde_sample_freq"),
    ({"adapter": {"use_sde": True, "sde_learn_features": "yes"}}, "sde_learn_features must be a bool"),
    ({"adapter": {"sde_learn_features": True}}, "true only with use_sde"),
])
def test_bad_gsde_arguments_are_refused(case, match):
    adapter = case.get("adapter", {"use_sde": True})
    with pytest.raises(RLGraphSpecError, match=match):
        Policy([{"type": "dense", "units": 2}], action_space=case.get("action_space", ACTION),
               action_adapter_spec=adapter)


class _PPOWithoutNoiseSchedule(PPOAgent):
    supports_sde = False  # An agent that would never draw the noise anew.


@pytest.mark.parametrize("spec, match", [
    ({"type": _PPOWithoutNoiseSchedule}, "for the PPO, actor-critic and SAC agents"),
    ({"type": "ddpg"}, "unknown action_adapter_spec key"),  # Its deterministic actor has no distribution.
    ({"type": "ppo", "value_function_spec": [{"type": "dense", "units": 2}],
      "action_adapter_spec": {"use_sde": True, "type": "baseline-action-adapter"}}, "value function"),
    ({"type": "ppo", "action_adapter_spec": {"clip_mean": 2.0}}, "clip_mean"),  # Only with gSDE.
])
def test_agents_that_cannot_draw_the_noise_refuse_gsde(spec, match):
    spec = dict({"backend": "pytorch", "network_spec": [{"type": "dense", "units": 4}],
                 "action_adapter_spec": {"use_sde": True}}, **spec)
    with pytest.raises(RLGraphSpecError, match=match) as error:
        Agent.from_spec(spec, state_space=FloatBox(shape=(3,)), action_space=ACTION)
    assert "action_adapter_spec" in str(error.value) or "Adapter" in str(error.value)


def _sac(backend, **adapter):
    return Agent.from_spec({
        "type": "sac", "backend": backend, "network_spec": [{"type": "dense", "units": LATENT, "activation": "tanh"}],
        "value_function_spec": [{"type": "dense", "units": 8, "activation": "relu"}],
        "action_adapter_spec": dict({"use_sde": True, "log_std_init": -1.0, "clip_mean": 2.0}, **adapter),
        "memory_spec": {"type": "replay-memory", "capacity": 64}, "warmup_random_steps": 0,
        "observe_spec": {"buffer_size": 1},
        "update_spec": {"update_interval": 1, "steps_before_update": 8, "batch_size": 8, "num_iterations": 2},
        "execution_spec": {"seed": 4}}, state_space=FloatBox(shape=(4,)), action_space=ACTION)


def test_sac_with_gsde_acts_from_its_noise_and_draws_anew_per_gradient_step(backend):
    agent = _sac(backend, sde_sample_freq=2)
    adapters = agent.root_component.policy.action_adapters
    assert [a.sde_learn_features for a in adapters.values()] == [True]  # SAC's default, as SB3's.
    assert [a.sde_learn_features for a in _sac(backend, sde_learn_features=False).root_component.policy
            .action_adapters.values()] == [False]
    state = np.full(4, 0.3, np.float32)
    first = agent.get_action(state)
    assert np.array_equal(agent.get_action(state), first)  # Calls 1 and 2 share a draw ...
    assert not np.array_equal(agent.get_action(state), first)  # ... call 3 draws anew.
    assert not np.array_equal(agent.get_action(state, use_exploration=False), first)
    rng = np.random.RandomState(1)
    for _ in range(8):
        agent.observe(state, agent.get_action(state), None, float(rng.randn()), state, False)
    weights = agent.graph_executor.get_weights()
    noise, log_std = (next(v for k, v in weights.items() if k.endswith(name)) for name in ("sde-noise", "sde-log-std"))
    draws = []
    agent.reset_exploration_noise = lambda original=agent.reset_exploration_noise: (draws.append(1), original())[1]
    agent.update()
    assert len(draws) == 3  # Before each of the 2 gradient steps, and for the next rollout.
    weights = agent.graph_executor.get_weights()
    assert not np.array_equal(next(v for k, v in weights.items() if k.endswith("sde-noise")), noise)
    # The actor loss reaches the log-std matrix through the noise and the log-probabilities.
    assert not np.allclose(next(v for k, v in weights.items() if k.endswith("sde-log-std")), log_std)


def test_clip_mean_clips_the_gaussian_mean(backend):
    test = ComponentTest(_policy(clip_mean=0.05), input_spaces=dict(nn_inputs=STATE), backend=backend)
    states = np.random.RandomState(3).randn(4, 4).astype(np.float32) * 3.0
    _, mean, std, _, _ = _reference(test.get_variable_values(), states)
    got_mean, got_log_std = test.test(("get_adapter_outputs", states))
    assert np.abs(mean).max() > 0.05
    np.testing.assert_allclose(got_mean, np.clip(mean, -0.05, 0.05), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_log_std, np.log(std), rtol=1e-5, atol=1e-6)


def test_a_checkpoint_keeps_the_noise_and_the_steps_since_its_draw(backend, tmp_path):
    """Resumed between two draws, the agent draws at the same step with the same noise until then
    (PyTorch resumes its random generator exactly; TF's stateful ops cannot, see agent_state.py)."""
    state = np.full(4, 0.2, np.float32)
    agent = _ppo(backend, sample_freq=3)
    for _ in range(2):
        agent.get_action(state)
    agent.store_model(str(tmp_path / "ckpt"))
    expected = [agent.get_action(state) for _ in range(3)]
    resumed = _ppo(backend, sample_freq=3)
    resumed.load_model(str(tmp_path / "ckpt"))
    assert resumed._sde_steps == 2
    got = [resumed.get_action(state) for _ in range(3)]
    np.testing.assert_array_equal(got[0], expected[0])  # The stored noise; its draw is at the next call.
    assert not np.array_equal(got[1], got[0])
    if backend == "pytorch":
        np.testing.assert_array_equal(np.array(got), np.array(expected))


def test_the_distribution_equals_stable_baselines3s_gsde(backend):
    """Same features, log-std matrix and unit noise: the same actions (mean + noise) and log-probabilities
    as SB3's StateDependentNoiseDistribution (full_std, exp, features not learned), and its entropy."""
    import torch
    from stable_baselines3.common.distributions import StateDependentNoiseDistribution
    test = ComponentTest(_policy(), input_spaces=dict(nn_inputs=STATE), backend=backend)
    states = np.random.RandomState(5).randn(3, 4).astype(np.float32)  # 3 rows: matrix 0 for all.
    values = test.get_variable_values()
    phi, mean, _, sigma, z = _reference(values, states)
    sb3 = StateDependentNoiseDistribution(ACTIONS, full_std=True, use_expln=False, learn_features=False)
    sb3.latent_sde_dim = LATENT
    log_std = torch.tensor(values["action-adapter-0/sde-log-std"])
    sb3.proba_distribution(torch.tensor(mean, dtype=torch.float32), log_std, torch.tensor(phi, dtype=torch.float32))
    sb3.exploration_mat = torch.tensor(sigma * z[0], dtype=torch.float32)  # SB3 keeps sigma * Z.
    sb3.exploration_matrices = sb3.exploration_mat[None].repeat(2, 1, 1)
    expected_actions = sb3.sample().numpy()
    expected_log_probs = sb3.log_prob(torch.tensor(expected_actions)).numpy()  # (Summed over the action.)
    actions, log_probs = test.test(("get_action_and_log_prob", states))
    np.testing.assert_allclose(actions, expected_actions, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(log_probs.sum(axis=-1), expected_log_probs, rtol=1e-4, atol=1e-4)
    entropy = test.test(("get_entropy", states))
    np.testing.assert_allclose(entropy.sum(axis=-1), sb3.entropy().numpy(), rtol=1e-4, atol=1e-4)
