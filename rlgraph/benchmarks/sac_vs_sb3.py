"""rlgraph's SAC against Stable-Baselines3's SAC on Pendulum-v1, with the same hyperparameters.

The hyperparameters are rl-zoo's for Pendulum-v1 SAC (`HYPERPARAMETERS`): 20,000 env steps and
a learning rate of 1e-3, everything else SB3's SAC defaults: one env, a replay memory of 1e6,
uniform random actions for the first 100 steps and updates from then on, one gradient step
(batch 256) per env step, gamma 0.99, soft target updates with tau 0.005 after every gradient
step, twin critics, a learned temperature starting at 1.0 with the target entropy -dim(A), and
[256, 256] ReLU networks for the actor and each critic, Adam (epsilon 1e-8) for actor, critics
and temperature. Mapped onto rlgraph's `SACAgent` (see `rlgraph_config`):

- warmup_random_steps = update_spec.steps_before_update = learning_starts;
- update_spec: update_interval = train_freq, num_iterations = gradient_steps, sync_tau = tau,
  sync_interval 0 (a soft update at every gradient step, SB3's target_update_interval 1);
- memory_spec capacity = min(buffer_size, steps): the memory never fills in either library;
- observe_spec buffer_size 1: each transition goes into the memory at once, as in SB3 (rlgraph
  buffers 1,000 per env by default, which would hold a Pendulum episode back until its end).

rlgraph's first gradient step waits until the memory holds a batch (256 transitions), while
SB3's comes at step 101, sampling 256 from 101 transitions: in 20,000 env steps rlgraph takes
about 150 gradient steps fewer than SB3's 19,900 (`num_updates` in each row). The timing and
evaluation are `sb3_peer`'s (see `dqn_vs_sb3`).

    rlgraph benchmark sac-sb3                        # PyTorch, 20,000 steps x seeds 1 2 3
    rlgraph benchmark sac-sb3 --backends pytorch tf
    rlgraph benchmark sac-sb3 --seeds 1 --steps 5000
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from rlgraph.benchmarks import sb3_peer

NAME = "sac-sb3"
ENV_ID = "Pendulum-v1"

# rl-zoo's Pendulum-v1 SAC (https://github.com/DLR-RM/rl-baselines3-zoo, hyperparams/sac.yml) sets the
# number of steps and the learning rate; the rest are the SB3 SAC defaults that it relies on.
HYPERPARAMETERS: Dict[str, Any] = {
    "learning_rate": 1e-3,
    "buffer_size": 1_000_000,
    "learning_starts": 100,
    "batch_size": 256,
    "tau": 0.005,
    "gamma": 0.99,
    "train_freq": 1,
    "gradient_steps": 1,
    "initial_alpha": 1.0,  # SB3's ent_coef "auto": learned, starting at 1.0.
    "target_entropy": "auto",  # -dim(A) in both libraries.
    "net_arch": [256, 256],
    "adam_epsilon": 1e-8,
}
# --quick: a run of seconds through every phase (random warm-up, updates, evaluation); networks of 64
# units (about a tenth of the 256-unit networks' update time), the same in both libraries.
QUICK = {"steps": 600, "learning_starts": 100, "batch_size": 64, "net_arch": [64, 64], "seeds": [1],
         "eval_episodes": 1}
# The issue sets no targets for SAC: the ratios are reported without one.
TARGET_RATIOS: Dict[str, float] = {}


def rlgraph_config(hp: Dict[str, Any], backend: str, steps: int, seed: int, threads: int,
                   flush_denormal: bool = True) -> dict:
    """rlgraph's SAC config (agent spec plus environment_spec/training_spec) for the hyperparameters `hp`.

    Args:
        hp: `HYPERPARAMETERS` (possibly with the --quick overrides).
        backend: "pytorch" or "tf".
        steps: Env steps of the run (also `execution_spec.max_timesteps`).
        seed: Seed of the agent.
        threads: torch/tf intra-op threads.
        flush_denormal: `execution_spec.torch_flush_denormal`.

    Returns:
        A config for `resolve_config`/`make_agent_and_env`.
    """
    def hidden(prefix: str) -> List[dict]:
        return [{"type": "dense", "units": units, "activation": "relu", "scope": f"{prefix}hidden-{i + 1}"}
                for i, units in enumerate(hp["net_arch"])]

    adam = {"type": "adam", "learning_rate": hp["learning_rate"], "epsilon": hp["adam_epsilon"]}
    return {
        "type": "sac", "backend": backend, "discount": hp["gamma"], "initial_alpha": hp["initial_alpha"],
        "target_entropy": hp["target_entropy"], "double_q": True, "warmup_random_steps": hp["learning_starts"],
        "memory_spec": {"type": "replay-memory", "capacity": min(hp["buffer_size"], steps)},
        "network_spec": hidden(""), "value_function_spec": hidden("vf-"),
        "optimizer_spec": dict(adam), "value_function_optimizer_spec": dict(adam), "alpha_optimizer_spec": dict(adam),
        "observe_spec": {"buffer_size": 1},
        "update_spec": {"update_interval": hp["train_freq"], "steps_before_update": hp["learning_starts"],
                        "batch_size": hp["batch_size"], "num_iterations": hp["gradient_steps"],
                        "sync_interval": 0, "sync_tau": hp["tau"]},
        "execution_spec": {"seed": seed, "max_timesteps": steps, "torch_num_threads": threads,
                           "tf_num_threads": threads, "torch_flush_denormal": flush_denormal,
                           "device": "cpu"},  # (SB3 runs on the CPU here too.)
        "environment_spec": {"type": "openai-gym", "gym_env": ENV_ID},
        "training_spec": {"num_timesteps": steps, "evaluation_interval": 0},
    }


def to_env_action(action: Any) -> np.ndarray:
    """Pendulum's action: a float32 array of shape (1,)."""
    return np.asarray(action, dtype=np.float32).reshape(1)


def run_rlgraph(hp: Dict[str, Any], backend: str, steps: int, seed: int, threads: int, eval_episodes: int,
                flush_denormal: bool = True) -> Dict[str, Any]:
    """Builds rlgraph's SAC (untimed), times `execute_timesteps(steps)`, then evaluates greedily."""
    config = rlgraph_config(hp, backend, steps, seed, threads, flush_denormal)
    return sb3_peer.run_rlgraph(config, ENV_ID, steps, seed, threads, eval_episodes, to_env_action=to_env_action)


def run_sb3(hp: Dict[str, Any], steps: int, seed: int, threads: int, eval_episodes: int,
            flush_denormal: bool = False) -> Dict[str, Any]:
    """Builds SB3's SAC (untimed), times `model.learn(steps)`, then evaluates greedily."""
    model = make_sb3_model(hp, seed)
    return sb3_peer.run_sb3(model, ENV_ID, steps, seed, threads, eval_episodes, flush_denormal,
                            to_env_action=to_env_action)


def make_sb3_model(hp: Dict[str, Any], seed: int, device: str = "cpu") -> Any:
    """SB3's SAC on a Pendulum-v1 env with the hyperparameters `hp` (rl-zoo's), its networks, entropy
    coefficient and replay samples on `device`."""
    sb3 = sb3_peer.require_sb3(NAME)
    import gymnasium as gym
    return sb3.SAC(
        "MlpPolicy", gym.make(ENV_ID), learning_rate=hp["learning_rate"], buffer_size=hp["buffer_size"],
        learning_starts=hp["learning_starts"], batch_size=hp["batch_size"], tau=hp["tau"], gamma=hp["gamma"],
        train_freq=hp["train_freq"], gradient_steps=hp["gradient_steps"], ent_coef=f"auto_{hp['initial_alpha']}",
        target_update_interval=1, target_entropy=hp["target_entropy"],
        policy_kwargs=dict(net_arch=list(hp["net_arch"]), optimizer_kwargs=dict(eps=hp["adam_epsilon"])),
        seed=seed, device=device, verbose=0)


def main(argv: Optional[List[str]] = None) -> dict:
    args, hp = sb3_peer.parse_args(NAME, __doc__, argv, steps=20_000, hyperparameters=HYPERPARAMETERS, quick=QUICK)
    return sb3_peer.compare(args, NAME, ENV_ID, hp, TARGET_RATIOS, run_rlgraph, run_sb3)


if __name__ == "__main__":
    main()
