"""rlgraph's PPO against Stable-Baselines3's PPO on CartPole-v1, with the same hyperparameters.

The hyperparameters are rl-zoo's for CartPole-v1 PPO (`HYPERPARAMETERS`): 8 envs, rollouts of
32 steps per env (256 env steps), 20 epochs over the rollout in minibatches of 256 (one
gradient step per epoch), gamma 0.98, GAE lambda 0.8, learning rate 1e-3 -> 0 and clip range
0.2 -> 0 linearly over the run, no entropy bonus, advantages standardized per minibatch, global
gradient-norm clipping at 0.5, and SB3's default `MlpPolicy`: separate [64, 64] tanh networks
for the policy and the value function, orthogonal initialization, Adam with epsilon 1e-5.
Mapped onto rlgraph's `PPOAgent` (see `rlgraph_config`):

- update_spec: batch_size = n_envs * n_steps (a rollout over all envs), sample_size = batch_size,
  num_epochs = n_epochs;
- weight_vf = 2 * vf_coef: rlgraph's value loss is 0.5 (V - G)^2, SB3's (V - G)^2;
- hidden kernels orthogonal with gain sqrt(2), the policy's output kernel with gain 0.01 (as
  SB3's ortho_init); the value output layer keeps rlgraph's default (PPOAgent does not expose
  it; SB3 uses orthogonal with gain 1).

What is timed is the training loop only: env steps, acting, observing and updates. rlgraph:
`SingleThreadedWorker(num_environments=8).execute_timesteps(N)`; SB3: `model.learn(N)` on a
`DummyVecEnv` of 8 envs, both seeded with the run's seed (env i: seed + i). The run loop, the
greedy evaluation and the tables are `sb3_peer`'s. SB3 finishes its last rollout, so it runs
100,096 env steps where rlgraph runs 100,000; steps/s counts what each side ran. `num_updates`
counts gradient steps; `update_s` is the time in updates (rlgraph: the worker's update timer,
which includes computing GAE; SB3: `model.train()`, while its GAE runs in the rollout).
rlgraph's rollouts hold a few transitions more than 256 (the worker observes an episode's last
transition one step before the others), and each epoch then takes a second, small minibatch of
the rows left over: 4-8% more gradient steps than SB3's 7,820 (docs/performance.md).

    rlgraph benchmark ppo-sb3                        # PyTorch, 100,000 steps x seeds 1 2 3
    rlgraph benchmark ppo-sb3 --backends pytorch tf
    rlgraph benchmark ppo-sb3 --seeds 1 --steps 20000
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional

from rlgraph.benchmarks import sb3_peer

NAME = "ppo-sb3"
ENV_ID = "CartPole-v1"

# rl-zoo's CartPole-v1 PPO (https://github.com/DLR-RM/rl-baselines3-zoo, hyperparams/ppo.yml), plus the
# SB3 defaults it relies on (vf_coef, max_grad_norm, advantage normalization, MlpPolicy, Adam epsilon).
# Schedules are ["linear", start, end] over the run.
HYPERPARAMETERS: Dict[str, Any] = {
    "n_envs": 8,
    "n_steps": 32,
    "batch_size": 256,
    "n_epochs": 20,
    "gamma": 0.98,
    "gae_lambda": 0.8,
    "learning_rate": ["linear", 1e-3, 0.0],
    "clip_range": ["linear", 0.2, 0.0],
    "ent_coef": 0.0,
    "vf_coef": 0.5,
    "max_grad_norm": 0.5,
    "normalize_advantage": True,
    "net_arch": [64, 64],
    "activation": "tanh",
    "adam_epsilon": 1e-5,
}
# --quick: a run of seconds through every phase (several rollouts and updates, evaluation).
QUICK = {"steps": 1024, "n_epochs": 2, "seeds": [1], "eval_episodes": 2}
# The issue's targets: rlgraph's env steps/s over SB3's.
TARGET_RATIOS = {"pytorch": 1.3, "tf": 1.0}
HIDDEN_GAIN, POLICY_GAIN = math.sqrt(2.0), 0.01  # SB3's orthogonal gains (hidden layers, action logits).


def rlgraph_config(hp: Dict[str, Any], backend: str, steps: int, seed: int, threads: int,
                   flush_denormal: bool = True) -> dict:
    """rlgraph's PPO config (agent spec plus environment_spec/training_spec) for the hyperparameters `hp`.

    Args:
        hp: `HYPERPARAMETERS` (possibly with the --quick overrides).
        backend: "pytorch" or "tf".
        steps: Env steps of the run (also `execution_spec.max_timesteps`, which the learning-rate
            and clip-ratio schedules span, as SB3's progress does).
        seed: Seed of the agent.
        threads: torch/tf intra-op threads.
        flush_denormal: `execution_spec.torch_flush_denormal`.

    Returns:
        A config for `resolve_config`/`make_agent_and_env`.
    """
    def hidden(prefix: str) -> List[dict]:
        return [{"type": "dense", "units": units, "activation": hp["activation"], "scope": f"{prefix}hidden-{i + 1}",
                 "weights_spec": {"type": "orthogonal", "gain": HIDDEN_GAIN}} for i, units in enumerate(hp["net_arch"])]

    return {
        "type": "ppo", "backend": backend, "discount": hp["gamma"], "gae_lambda": hp["gae_lambda"],
        "clip_ratio": list(hp["clip_range"]), "standardize_advantages": hp["normalize_advantage"],
        "weight_entropy": hp["ent_coef"], "weight_vf": 2.0 * hp["vf_coef"],
        "network_spec": hidden(""), "value_function_spec": hidden("vf-"),
        "action_adapter_spec": {"weights_spec": {"type": "orthogonal", "gain": POLICY_GAIN}},
        "update_spec": {"batch_size": hp["n_envs"] * hp["n_steps"], "sample_size": hp["batch_size"],
                        "num_epochs": hp["n_epochs"]},
        "optimizer_spec": {"type": "adam", "learning_rate": list(hp["learning_rate"]), "epsilon": hp["adam_epsilon"],
                           "clip_grad_norm": hp["max_grad_norm"]},
        "execution_spec": {"seed": seed, "max_timesteps": steps, "torch_num_threads": threads,
                           "tf_num_threads": threads, "torch_flush_denormal": flush_denormal,
                           "device": "cpu"},  # (SB3 runs on the CPU here too.)
        "environment_spec": {"type": "openai-gym", "gym_env": ENV_ID},
        "training_spec": {"num_timesteps": steps, "num_environments": hp["n_envs"], "evaluation_interval": 0},
    }


def run_rlgraph(hp: Dict[str, Any], backend: str, steps: int, seed: int, threads: int, eval_episodes: int,
                flush_denormal: bool = True) -> Dict[str, Any]:
    """Builds rlgraph's PPO (untimed), times `execute_timesteps(steps)` on 8 envs, then evaluates greedily."""
    config = rlgraph_config(hp, backend, steps, seed, threads, flush_denormal)
    return sb3_peer.run_rlgraph(config, ENV_ID, steps, seed, threads, eval_episodes, num_environments=hp["n_envs"],
                                to_env_action=int, updates=lambda agent: agent.num_gradient_steps)


def run_sb3(hp: Dict[str, Any], steps: int, seed: int, threads: int, eval_episodes: int,
            flush_denormal: bool = False) -> Dict[str, Any]:
    """Builds SB3's PPO (untimed), times `model.learn(steps)`, then evaluates greedily."""
    model = make_sb3_model(hp, seed)
    # SB3 counts epochs in `_n_updates`; each epoch takes rollout / batch_size minibatch steps.
    per_epoch = -(-hp["n_envs"] * hp["n_steps"] // hp["batch_size"])
    return sb3_peer.run_sb3(model, ENV_ID, steps, seed, threads, eval_episodes, flush_denormal, to_env_action=int,
                            updates=lambda m: int(m._n_updates) * per_epoch)


def make_sb3_model(hp: Dict[str, Any], seed: int) -> Any:
    """SB3's PPO on `n_envs` CartPole-v1 envs with the hyperparameters `hp` (rl-zoo's)."""
    sb3 = sb3_peer.require_sb3(NAME)
    import torch
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.utils import LinearSchedule

    def schedule(spec: List[Any]):
        _, start, end = spec
        return LinearSchedule(start, end, 1.0)  # Of SB3's progress_remaining, 1 -> 0 over the run.

    return sb3.PPO(
        "MlpPolicy", make_vec_env(ENV_ID, n_envs=hp["n_envs"], seed=seed), n_steps=hp["n_steps"],
        batch_size=hp["batch_size"], n_epochs=hp["n_epochs"], gamma=hp["gamma"], gae_lambda=hp["gae_lambda"],
        learning_rate=schedule(hp["learning_rate"]), clip_range=schedule(hp["clip_range"]), ent_coef=hp["ent_coef"],
        vf_coef=hp["vf_coef"], max_grad_norm=hp["max_grad_norm"], normalize_advantage=hp["normalize_advantage"],
        policy_kwargs=dict(net_arch=dict(pi=list(hp["net_arch"]), vf=list(hp["net_arch"])),
                           activation_fn={"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[hp["activation"]],
                           optimizer_kwargs=dict(eps=hp["adam_epsilon"])),
        seed=seed, device="cpu", verbose=0)


def main(argv: Optional[List[str]] = None) -> dict:
    args, hp = sb3_peer.parse_args(NAME, __doc__, argv, steps=100_000, hyperparameters=HYPERPARAMETERS, quick=QUICK)
    return sb3_peer.compare(args, NAME, ENV_ID, hp, TARGET_RATIOS, run_rlgraph, run_sb3)


if __name__ == "__main__":
    main()
