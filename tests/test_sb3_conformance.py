"""rlgraph's DQN update against Stable-Baselines3's, step for step (issue 38's factor analysis).

Both start from the same weights (SB3's initial Q-network copied into rlgraph's policy and target
network) and are fed the same batches: SB3 through its own `DQN.train` (its replay buffer's
`sample` returns the batch), rlgraph through `update(batch)`. With the zoo's dqn/LunarLander-v3
settings (Adam 6.3e-4, Huber loss, gradient norm clipped at 10, gamma 0.99) the losses and the
weights must agree to float32 round-off after every step, on both backends; and once more with the
clipping at 0.5, so that every step is clipped. A difference in the loss, the target, Adam or the
clipping shows here after one step; the zoo study then compares only what the loop does around it.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from rlgraph.agents import Agent
from rlgraph.benchmarks import zoo_configs
from rlgraph.benchmarks.zoo_table import BY_NAME
from rlgraph.spaces import space_from_gym

sb3 = pytest.importorskip("stable_baselines3")
torch = pytest.importorskip("torch")
gym = pytest.importorskip("gymnasium")

PAIR = "dqn/LunarLander-v3"
BATCH, STEPS = 128, 60
LAYERS = ["neural-network/hidden-1", "neural-network/hidden-2", "action-adapter-0/action-layer"]


def _models(backend, **hyperparameters):
    pair = BY_NAME[PAIR]
    pair = dataclasses.replace(pair, hyperparameters=dict(pair.hyperparameters, **hyperparameters))
    config = zoo_configs.rlgraph_config(pair, backend=backend, seed=1)
    for key in ("environment_spec", "training_spec", "about"):
        config.pop(key)
    env = gym.make("LunarLander-v3")
    agent = Agent.from_spec(config, state_space=space_from_gym(env.observation_space),
                            action_space=space_from_gym(env.action_space))
    env.close()
    model = zoo_configs.make_sb3_model(pair, seed=1)
    from stable_baselines3.common.logger import configure
    model.set_logger(configure(None, [""]))
    return agent, model


def _sb3_layers(model):
    """SB3's Q-network as rlgraph's (kernel [in, out], bias) per layer."""
    linear = [m for m in model.q_net.q_net if isinstance(m, torch.nn.Linear)]
    return [(m.weight.detach().numpy().T, m.bias.detach().numpy()) for m in linear]


def _copy_sb3_into(agent, model):
    weights = {}
    for scope in ("policy", "target-policy"):
        for name, (kernel, bias) in zip(LAYERS, _sb3_layers(model)):
            weights[f"agent/{scope}/{name}/kernel"] = kernel.copy()
            weights[f"agent/{scope}/{name}/bias"] = bias.copy()
    agent.set_weights(weights)


def _largest_difference(agent, model):
    weights = agent.get_weights()
    return max(max(np.abs(weights[f"agent/policy/{name}/kernel"] - kernel).max(),
                   np.abs(weights[f"agent/policy/{name}/bias"] - bias).max())
               for name, (kernel, bias) in zip(LAYERS, _sb3_layers(model)))


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
    agent, model = _models(backend, max_grad_norm=max_grad_norm)
    try:
        _copy_sb3_into(agent, model)
        model.q_net_target.load_state_dict(model.q_net.state_dict())
        assert _largest_difference(agent, model) == 0.0
        rng, current = np.random.default_rng(7), {}
        model.replay_buffer.sample = lambda batch_size, env=None: current["samples"]
        initial = [kernel.copy() for kernel, _ in _sb3_layers(model)]
        for step in range(STEPS):
            batch = _batch(rng)
            current["samples"] = _sb3_samples(batch)
            model.train(gradient_steps=1, batch_size=BATCH)
            loss, _ = agent.update(batch)
            assert float(loss) == pytest.approx(model.logger.name_to_value["train/loss"], rel=1e-5, abs=1e-6), step
            assert _largest_difference(agent, model) < 2e-6, step
        # The weights moved (by far more than the tolerance): the comparison is not of two idle nets.
        moved = max(np.abs(kernel - start).max() for (kernel, _), start in zip(_sb3_layers(model), initial))
        assert moved > 1e-2
    finally:
        agent.terminate()
        model.env.close()
