"""Benchmarks: rlgraph's hot paths against hand-written raw-backend code and a peer library.

Each benchmark is a module with `main(argv=None) -> dict` that prints a table and writes its
results as JSON. Run one with `rlgraph benchmark NAME [options]` or, from a checkout,
`python -m benchmarks.MODULE [options]`; `--help` lists a benchmark's options. The modules live
in the package so that `rlgraph benchmark` works wherever rlgraph is installed.
"""
from __future__ import annotations

import importlib
from typing import Dict, List, Optional, Tuple

from rlgraph.utils.rlgraph_errors import RLGraphError
from rlgraph.utils.specifiable import closest_match

# name -> (module, one-line description)
BENCHMARKS: Dict[str, Tuple[str, str]] = {
    "act": ("rlgraph.benchmarks.act_overhead",
            "agent.get_action(one state) vs a raw no_grad forward / tf.function (CartPole DQN net)"),
    "update": ("rlgraph.benchmarks.update_overhead",
               "agent.update(batch) vs a hand-written raw DQN training step"),
    "dqn-sb3": ("rlgraph.benchmarks.dqn_vs_sb3",
                "DQN on CartPole-v1 vs Stable-Baselines3 DQN, rl-zoo hyperparameters, alternating seeds"),
    "ppo-sb3": ("rlgraph.benchmarks.ppo_vs_sb3",
                "PPO on CartPole-v1 (8 envs) vs Stable-Baselines3 PPO, rl-zoo hyperparameters, alternating seeds"),
    "sac-sb3": ("rlgraph.benchmarks.sac_vs_sb3",
                "SAC on Pendulum-v1 vs Stable-Baselines3 SAC, rl-zoo hyperparameters, alternating seeds"),
    "learning": ("rlgraph.benchmarks.learning",
                 "seed study of learning quality vs Stable-Baselines3: IQM and bootstrap CIs of final return and AUC"),
    "zoo": ("rlgraph.benchmarks.zoo",
            "rl-baselines3-zoo's table (DQN, PPO, A2C, SAC, TD3, DDPG) rerun for rlgraph and Stable-Baselines3 "
            "over seeds: IQMs with CIs, P(improvement), seconds per run"),
    "learners": ("rlgraph.benchmarks.learner_scaling",
                 "data-parallel DQN update samples/s with 1 and N learner processes vs raw PyTorch DDP"),
    "ray-learners": ("rlgraph.benchmarks.ray_learners",
                     "IMPALA update samples/s: 1 learner in the driver vs N learner actors on Ray vs N plain processes"),
    "device": ("rlgraph.benchmarks.device_updates",
               "gradient steps/s of DQN (Nature CNN) and SAC vs Stable-Baselines3 on one device, with and without "
               "execution_spec.compile"),
    "build": ("rlgraph.benchmarks.build_time", "total_build_time and build_overhead of the DQN agent"),
    "replay": ("rlgraph.benchmarks.replay", "prioritized replay insert/sample/update records per second"),
    "apex": ("rlgraph.benchmarks.apex",
             "Ape-X on Ray: env frames/s of 4 sample workers vs 1 (2 ms env), 1 worker vs SingleThreadedWorker"),
    "impala": ("rlgraph.benchmarks.impala",
               "IMPALA: env frames/s with 1/2/4 actors (threads, Ray), RLlib IMPALA as the peer, time to 450"),
    "atari": ("rlgraph.benchmarks.atari",
              "PPO (sync, async envs) and DQN on Pong end to end: env steps/s vs SB3's PPO and DQN"),
    "async-envs": ("rlgraph.benchmarks.async_envs",
                   "env frames/s of 4 Pong envs in subprocesses (AsyncVectorEnv) vs 4 stepped in turn"),
}


def benchmark_module(name: str):
    """The module of benchmark `name` (raises `RLGraphError` with the known names otherwise)."""
    if name not in BENCHMARKS:
        guess = closest_match(name, list(BENCHMARKS))
        raise RLGraphError(f"unknown benchmark '{name}'", where="rlgraph benchmark", expected=sorted(BENCHMARKS),
                           hint=f"did you mean '{guess}'?" if guess else None)
    return importlib.import_module(BENCHMARKS[name][0])


def run_benchmark(name: str, argv: Optional[List[str]] = None) -> dict:
    """Runs benchmark `name` with command-line style `argv`; returns its results."""
    return benchmark_module(name).main(argv)
