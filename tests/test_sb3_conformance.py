"""rlgraph's DQN, A2C, PPO, TD3 and DDPG updates against Stable-Baselines3's, step for step (issue 38's
factor analysis).

Both libraries start from the same weights (SB3's initial networks copied into rlgraph's) and learn
from the same data, and their weights must agree to float32 round-off after every update, on both
backends. A difference in a loss, a target, the advantages, the optimizer or the clipping shows
after one step; the zoo study then compares only what the loop around the update does.

- DQN, the zoo's dqn/LunarLander-v3 settings (Adam 6.3e-4, Huber loss, gradient norm clipped at
  10, gamma 0.99), and once more clipped at 0.5 (every step clipped): SB3 through its own
  `DQN.train` (its replay buffer's `sample` returns the batch), rlgraph through `update(batch)`.
- A2C, the zoo's a2c/CartPole-v1 settings (RMSprop 7e-4 with alpha 0.99 and eps 1e-5, GAE over
  8 envs x 5 steps with episode ends, value weight 0.5, gradient norm clipped at 0.5) with an
  entropy weight of 0.01: SB3 through its rollout buffer and `A2C.train`, rlgraph through
  `observe` per env and `update()`.
- PPO, the zoo's ppo/CartPole-v1 settings with one minibatch per epoch (see its test for the one
  convention that differs: how advantages are standardized).
- TD3 and DDPG, the zoo's td3/ and ddpg/MountainCarContinuous-v0 settings (Adam 1e-3, tau 0.005,
  gamma 0.99; TD3: twin critics, policy delay 2) with 64 x 64 networks, without target-policy noise
  (each library draws its own): SB3 through `TD3.train` (DDPG is SB3's TD3 with one critic, no delay
  and no noise), rlgraph through `update(batch)`. The env's actions span [-1, 1], so SB3's rescaling
  of actions to [-1, 1] is the identity and both critics see the same actions.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rlgraph.agents.pg import agent as pg_agent
from rlgraph.benchmarks.zoo_table import BY_NAME
from sb3_peer_helpers import zoo_agent_and_sb3_model

sb3 = pytest.importorskip("stable_baselines3")
torch = pytest.importorskip("torch")

DQN_PAIR, BATCH, STEPS = "dqn/LunarLander-v3", 128, 60
# rlgraph's dense layers (under the agent's scope) and the SB3 module of each, per algorithm.
DQN_LAYERS = {"policy/neural-network/hidden-1": "q_net.q_net.0", "policy/neural-network/hidden-2": "q_net.q_net.2",
              "policy/action-adapter-0/action-layer": "q_net.q_net.4"}
PG_LAYERS = {"policy/neural-network/hidden-1": "mlp_extractor.policy_net.0",
             "policy/neural-network/hidden-2": "mlp_extractor.policy_net.2",
             "policy/action-adapter-0/action-layer": "action_net",
             "value-function/neural-network/vf-hidden-1": "mlp_extractor.value_net.0",
             "value-function/neural-network/vf-hidden-2": "mlp_extractor.value_net.2",
             "value-function/value-function-node": "value_net"}


def _models(name, backend, layer_names, **hyperparameters):
    """(rlgraph agent, SB3 model, {rlgraph layer scope: SB3 `Linear`}) of zoo pair `name` with
    `hyperparameters` changed on both sides; the agent starts from SB3's initial weights."""
    from stable_baselines3.common.logger import configure
    pair = BY_NAME[name]
    pair = dataclasses.replace(pair, hyperparameters=dict(pair.hyperparameters, **hyperparameters))
    agent, model = zoo_agent_and_sb3_model(pair, backend)
    model.set_logger(configure(None, [""]))
    modules = dict(model.policy.named_modules())
    layers = {f"{agent.name}/{ours}": modules[theirs] for ours, theirs in layer_names.items()}
    agent.set_weights({f"{scope}/{leaf}": value.copy() for scope, m in layers.items()
                       for leaf, value in zip(("kernel", "bias"), _sb3_leaves(m))})
    assert _largest_difference(agent, layers) == 0.0
    return agent, model, layers


def _sb3_leaves(module):
    """(kernel [in, out], bias) of an SB3 `Linear`, as rlgraph holds them."""
    return module.weight.detach().numpy().T, module.bias.detach().numpy()


def _largest_difference(agent, layers):
    weights = agent.get_weights(sorted(f"{scope}/{leaf}" for scope in layers for leaf in ("kernel", "bias")))
    return max(max(np.abs(weights[f"{scope}/kernel"] - kernel).max(), np.abs(weights[f"{scope}/bias"] - bias).max())
               for scope, (kernel, bias) in ((s, _sb3_leaves(m)) for s, m in layers.items()))


def _largest_change(layers, initial):
    return max(np.abs(_sb3_leaves(m)[0] - initial[scope]).max() for scope, m in layers.items())


def _kernels(layers):
    return {scope: _sb3_leaves(m)[0].copy() for scope, m in layers.items()}


# --- DQN ----------------------------------------------------------------------------------------------


def _batch(rng):
    # Rewards of LunarLander's scale (crashes give -100), terminals 10% of the time.
    return {"states": rng.normal(size=(BATCH, 8)).astype(np.float32), "actions": rng.integers(0, 4, BATCH),
            "rewards": (rng.normal(size=BATCH) * 30).astype(np.float32), "terminals": rng.random(BATCH) < 0.1,
            "next_states": rng.normal(size=(BATCH, 8)).astype(np.float32)}


def _sb3_samples(batch):
    from stable_baselines3.common.type_aliases import ReplayBufferSamples
    column = lambda x, dtype: torch.as_tensor(np.asarray(x, dtype)).reshape(-1, 1)  # noqa: E731
    return ReplayBufferSamples(torch.as_tensor(batch["states"]), column(batch["actions"], np.int64),
                               torch.as_tensor(batch["next_states"]), column(batch["terminals"], np.float32),
                               column(batch["rewards"], np.float32))


@pytest.mark.parametrize("max_grad_norm", [10.0, 0.5], ids=["zoo-clip-10", "clip-0.5"])
def test_dqn_updates_equal_sb3s_step_for_step(backend, max_grad_norm):
    agent, model, layers = _models(DQN_PAIR, backend, DQN_LAYERS, max_grad_norm=max_grad_norm)
    try:
        # Both target networks start as copies of the Q-network.
        model.q_net_target.load_state_dict(model.q_net.state_dict())
        agent.set_weights({f"{scope.replace('/policy/', '/target-policy/')}/{leaf}": value.copy()
                           for scope, m in layers.items() for leaf, value in zip(("kernel", "bias"), _sb3_leaves(m))})
        rng, current, initial = np.random.default_rng(7), {}, _kernels(layers)
        model.replay_buffer.sample = lambda batch_size, env=None: current["samples"]
        for step in range(STEPS):
            batch = _batch(rng)
            current["samples"] = _sb3_samples(batch)
            model.train(gradient_steps=1, batch_size=BATCH)
            loss, _ = agent.update(batch)
            assert float(loss) == pytest.approx(model.logger.name_to_value["train/loss"], rel=1e-5, abs=1e-6), step
            assert _largest_difference(agent, layers) < 2e-6, step
        # The weights moved (by far more than the tolerance): the comparison is not of two idle nets.
        assert _largest_change(layers, initial) > 1e-2
    finally:
        agent.terminate()
        model.get_env().close()


# --- A2C and PPO --------------------------------------------------------------------------------------


def _rollout(rng, envs, steps, terminal_rate):
    """Random [T + 1, E, 4] states (the last row: the states the rollout bootstraps from; after a
    terminal the next row is the reset state, not read), actions, rewards and terminals [T, E]."""
    return (rng.normal(size=(steps + 1, envs, 4)).astype(np.float32), rng.integers(0, 2, size=(steps, envs)),
            rng.normal(size=(steps, envs)).astype(np.float32), rng.random((steps, envs)) < terminal_rate)


def _learn_rollout_on_both(agent, model, rollout, time_percentage=None):
    """SB3: its rollout buffer filled as `collect_rollouts` fills it (values and log-probs of the
    policy that acted; `episode_start` the previous step's done), its GAE, then `train()`.
    rlgraph: each env's steps through `observe`, then `update()`."""
    states, actions, rewards, terminals = rollout
    steps, envs = actions.shape
    policy, buffer = model.policy, model.rollout_buffer
    buffer.reset()
    starts = np.ones(envs, np.float32)
    for t in range(steps):
        with torch.no_grad():
            values, log_probs, _ = policy.evaluate_actions(torch.as_tensor(states[t]), torch.as_tensor(actions[t]))
        buffer.add(states[t], actions[t].reshape(envs, 1), rewards[t], starts, values, log_probs)
        starts = terminals[t].astype(np.float32)
    with torch.no_grad():
        last_values = policy.predict_values(torch.as_tensor(states[steps]))
    buffer.compute_returns_and_advantage(last_values=last_values, dones=terminals[steps - 1])
    model.train()
    for env in range(envs):
        agent.observe(states[:-1, env], actions[:, env], None, rewards[:, env], states[1:, env], terminals[:, env],
                      env_id=env)
    return agent.update(time_percentage=time_percentage)


def test_a2c_updates_equal_sb3s_step_for_step(backend):
    # The zoo's a2c/CartPole-v1: 8 envs x 5 steps per update; an entropy weight of 0.01 is added.
    agent, model, layers = _models("a2c/CartPole-v1", backend, PG_LAYERS, ent_coef=0.01)
    try:
        rng, initial = np.random.default_rng(3), _kernels(layers)
        for update in range(15):
            result = _learn_rollout_on_both(agent, model, _rollout(rng, 8, 5, terminal_rate=0.2))
            # rlgraph's value loss is 0.5 (v - R)^2 with weight 2 * vf_coef; SB3's is (v - R)^2.
            assert 2 * float(result.value_loss) == pytest.approx(model.logger.name_to_value["train/value_loss"],
                                                                  rel=1e-5), update
            assert _largest_difference(agent, layers) < 2e-6, update
        assert _largest_change(layers, initial) > 1e-3
    finally:
        agent.terminate()
        model.get_env().close()


def test_ppo_updates_equal_sb3s_step_for_step(backend, monkeypatch):
    # The zoo's ppo/CartPole-v1 (8 envs x 32 steps, GAE lambda 0.8, gamma 0.98, Adam 1e-3 and clip
    # ratio 0.2 at the schedules' start, advantages standardized, gradient norm clipped at 0.5), with
    # 4 epochs of one minibatch of all 256 rows: the order of minibatches is each library's own
    # random draw, the gradient of the whole batch is not. An entropy weight of 0.01 is added.
    # The one difference of convention: SB3 standardizes advantages by the sample standard deviation
    # plus 1e-8, rlgraph by the population's (the weights then differ by ~2e-6 per update here); the
    # test gives rlgraph SB3's rule, so that everything else must agree to round-off.
    monkeypatch.setattr(pg_agent, "_standardize", lambda x: ((x - np.mean(x)) / (np.std(x, ddof=1) + 1e-8)).astype(
        np.float32))
    agent, model, layers = _models("ppo/CartPole-v1", backend, PG_LAYERS, ent_coef=0.01, n_epochs=4, batch_size=256)
    try:
        rng, initial = np.random.default_rng(5), _kernels(layers)
        for update in range(3):
            _learn_rollout_on_both(agent, model, _rollout(rng, 8, 32, terminal_rate=0.05), time_percentage=0.0)
            assert _largest_difference(agent, layers) < 1e-6, update
        assert _largest_change(layers, initial) > 1e-3
    finally:
        agent.terminate()
        model.get_env().close()


# --- TD3 and DDPG -------------------------------------------------------------------------------------
def _td3_layers(num_critics):
    """rlgraph's dense layers and SB3's, online and target networks, actor and critics."""
    layers = {}
    for ours, theirs in (("actor", "actor"), ("target-actor", "actor_target")):
        for index, name in enumerate(("neural-network/hidden-1", "neural-network/hidden-2", "action-layer")):
            layers[f"{ours}/{name}"] = f"{theirs}.mu.{2 * index}"
    for critic in range(num_critics):
        suffix = "" if critic == 0 else f"-{critic + 1}"
        for ours, theirs in ((f"critic{suffix}", "critic"), (f"target-critic{suffix}", "critic_target")):
            for index, name in enumerate(("neural-network/hidden-1", "neural-network/hidden-2", "q-layer")):
                layers[f"{ours}/{name}"] = f"{theirs}.qf{critic}.{2 * index}"
    return layers


def _continuous_batch(rng):
    # MountainCarContinuous's shapes: 2 state dims, one action in [-1, 1]; rewards of its scale.
    return {"states": rng.normal(size=(256, 2)).astype(np.float32),
            "actions": rng.uniform(-1, 1, size=(256, 1)).astype(np.float32),
            "rewards": rng.normal(size=256).astype(np.float32), "terminals": rng.random(256) < 0.05,
            "next_states": rng.normal(size=(256, 2)).astype(np.float32)}


@pytest.mark.parametrize("name, num_critics", [("td3/MountainCarContinuous-v0", 2),
                                               ("ddpg/MountainCarContinuous-v0", 1)], ids=["td3", "ddpg"])
def test_td3_and_ddpg_updates_equal_sb3s_step_for_step(backend, name, num_critics, monkeypatch):
    # The one difference of convention: rlgraph's critic loss is 0.5 td^2 per critic, SB3's td^2 (as
    # the TD3 paper's code). Under Adam the steps differ only through eps (1e-8), where a gradient is
    # of eps's order: after two updates the actor's weights differ by up to 1.7e-3 here. The test
    # gives SB3 rlgraph's rule, so that everything else must agree to round-off.
    from types import SimpleNamespace

    from stable_baselines3.common.type_aliases import ReplayBufferSamples
    from stable_baselines3.td3 import td3 as sb3_td3
    half_mse = lambda a, b: 0.5 * torch.nn.functional.mse_loss(a, b)  # noqa: E731
    monkeypatch.setattr(sb3_td3, "F", SimpleNamespace(mse_loss=half_mse))
    # Networks of 64 x 64 instead of the zoo's 400 x 300: in the large ones a few gradients are of the
    # order of Adam's eps, where float round-off (TF's kernels sum in another order than torch's) is
    # amplified into differences of up to 1e-4 after 8 updates; at 64 units both agree to 1e-7.
    agent, model, layers = _models(name, backend, _td3_layers(num_critics), target_policy_noise=0.0,
                                   net_arch=[64, 64])
    try:
        assert agent.warmup_actor_steps == agent.warmup_critic_steps == 0
        rng, current, initial = np.random.default_rng(11), {}, _kernels(layers)
        model.replay_buffer.sample = lambda batch_size, env=None: current["samples"]
        for step in range(8):  # (TD3: the actor and the targets move in every second update.)
            batch = _continuous_batch(rng)
            column = lambda x: torch.as_tensor(np.asarray(x, np.float32)).reshape(-1, 1)  # noqa: E731
            current["samples"] = ReplayBufferSamples(torch.as_tensor(batch["states"]), torch.as_tensor(batch["actions"]),
                                                     torch.as_tensor(batch["next_states"]), column(batch["terminals"]),
                                                     column(batch["rewards"]))
            model.train(gradient_steps=1, batch_size=256)
            losses = agent.update(batch)
            assert float(losses.critic_loss) == pytest.approx(model.logger.name_to_value["train/critic_loss"],
                                                              rel=1e-5), step
            if "train/actor_loss" in model.logger.name_to_value and step % num_critics == num_critics - 1:
                assert float(losses.actor_loss) == pytest.approx(model.logger.name_to_value["train/actor_loss"],
                                                                 rel=1e-5, abs=1e-6), step
            assert _largest_difference(agent, layers) < 2e-6, step
        assert _largest_change(layers, initial) > 1e-3
    finally:
        agent.terminate()
        model.get_env().close()
