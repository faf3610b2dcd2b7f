"""rlgraph's DQN against Stable-Baselines3's DQN on CartPole-v1, with the same hyperparameters.

The hyperparameters are rl-zoo's for CartPole-v1 DQN (`HYPERPARAMETERS`). SB3's DQN uses a
vanilla (not double) Q target, the Huber loss and global gradient-norm clipping at 10, so the
rlgraph agent (configs/dqn_cartpole.json) is switched to the same: double_q False, huber_loss
True, `clip_grad_norm` 10 on the optimizer. Both sides decay epsilon linearly from 1.0 to 0.04
over the first 16% of the run, step one CartPole env, and run with the same number of threads.

What is timed is the training loop only: env steps, acting, observing and updates. rlgraph:
`SingleThreadedWorker.execute_timesteps(N)`; SB3: `model.learn(total_timesteps=N)`. Building
the agent/model happens before the clock starts. For each seed both libraries run back to back,
the order alternating from seed to seed, so that a slow phase of a shared machine hits both.
After training, each policy plays greedy episodes on a separately seeded env.

Steps/s counts the env steps each side actually ran: SB3 collects whole `train_freq` rollouts
and so may overshoot N by up to train_freq - 1 steps (and, counting rounds from step 0 rather
than from `learning_starts`, does about 1% more updates: `num_updates` in each row).

Most of the time goes into the 128 updates per 256 env steps. With ReLU nets, Adam's moments
of dead units decay into subnormal floats, which slow CPU arithmetic down. rlgraph's PyTorch
executor runs its API calls with flush-to-zero by default (`execution_spec.torch_flush_denormal`,
as TensorFlow's CPU kernels do); SB3 leaves it off. `--flush-denormal default` (the default) runs each
library with its own default; `on` or `off` sets it the same for both.

    rlgraph benchmark dqn-sb3                       # PyTorch, 50,000 steps x seeds 1 2 3
    rlgraph benchmark dqn-sb3 --backends pytorch tf
    rlgraph benchmark dqn-sb3 --flush-denormal on --seeds 1 --steps 10000
"""
from __future__ import annotations

import contextlib
import copy
import os
import statistics
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from rlgraph.benchmarks.common import format_table, make_parser, write_results
from rlgraph.environments.env_utils import import_optional

NAME = "dqn-sb3"
ENV_ID = "CartPole-v1"
DEFAULT_CONFIG = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                              "configs", "dqn_cartpole.json")
INSTALL_HINT = 'install the benchmark extras: `pip install -c constraints.txt -e ".[bench]"`.'

# rl-zoo's CartPole-v1 DQN (https://github.com/DLR-RM/rl-baselines3-zoo, hyperparams/dqn.yml).
# Intervals count env steps.
HYPERPARAMETERS: Dict[str, Any] = {
    "learning_rate": 2.3e-3,
    "batch_size": 64,
    "buffer_size": 100_000,
    "learning_starts": 1000,
    "gamma": 0.99,
    "target_update_interval": 10,
    "train_freq": 256,
    "gradient_steps": 128,
    "exploration_fraction": 0.16,
    "exploration_initial_eps": 1.0,
    "exploration_final_eps": 0.04,
    "net_arch": [256, 256],
    "max_grad_norm": 10.0,
    "adam_epsilon": 1e-8,
}
# --quick: a run of seconds that goes through every phase (warm-up, updates, evaluation).
QUICK = {"steps": 600, "learning_starts": 100, "train_freq": 64, "gradient_steps": 8, "seeds": [1],
         "eval_episodes": 2}
# The issue's targets: rlgraph's env steps/s over SB3's.
TARGET_RATIOS = {"pytorch": 1.5, "tf": 1.0}
SB3 = "sb3"


def rlgraph_config(base: dict, hp: Dict[str, Any], backend: str, steps: int, seed: int, threads: int) -> dict:
    """The rlgraph DQN config of `base` (configs/dqn_cartpole.json) set to the hyperparameters `hp`.

    Args:
        base: The config file's content (agent spec plus environment_spec/training_spec).
        hp: `HYPERPARAMETERS` (possibly with the --quick overrides).
        backend: "pytorch" or "tf".
        steps: Env steps of the run (also `execution_spec.max_timesteps`, so that the epsilon
            schedule spans the run as SB3's `exploration_fraction` does).
        seed: Seed of the agent.
        threads: torch/tf intra-op threads.

    Returns:
        A config for `resolve_config`/`make_agent_and_env`.
    """
    config = copy.deepcopy(base)
    config.update(backend=backend, discount=hp["gamma"], double_q=False, dueling_q=False, huber_loss=True, n_step=1)
    config["memory_spec"] = {"type": "replay-memory", "capacity": hp["buffer_size"]}
    config["network_spec"] = [{"type": "dense", "units": units, "activation": "relu", "scope": f"hidden-{i + 1}"}
                              for i, units in enumerate(hp["net_arch"])]
    config["exploration_spec"] = {"epsilon_spec": {"decay_spec": {
        "type": "linear-decay", "from": hp["exploration_initial_eps"], "to": hp["exploration_final_eps"],
        "start_percentage": 0.0, "stop_percentage": hp["exploration_fraction"]}}}
    config["update_spec"] = dict(config.get("update_spec") or {}, update_interval=hp["train_freq"],
                                 steps_before_update=hp["learning_starts"], batch_size=hp["batch_size"],
                                 sync_interval=hp["target_update_interval"], update_steps=hp["gradient_steps"])
    # rlgraph's Adam defaults to epsilon 1e-7, torch's (SB3's) to 1e-8.
    config["optimizer_spec"] = {"type": "adam", "learning_rate": hp["learning_rate"], "epsilon": hp["adam_epsilon"],
                                "clip_grad_norm": hp["max_grad_norm"]}
    config["execution_spec"] = dict(config.get("execution_spec") or {}, max_timesteps=steps, seed=seed,
                                    torch_num_threads=threads, tf_num_threads=threads)
    config["environment_spec"] = {"type": "openai-gym", "gym_env": ENV_ID}
    config["training_spec"] = {"num_timesteps": steps, "evaluation_interval": 0}
    return config


def greedy_return(act: Callable[[np.ndarray], Any], seed: int, episodes: int) -> float:
    """Mean return of `episodes` episodes of CartPole played by `act(observation) -> action`.

    The same loop and env for both libraries: a fresh gymnasium env, reset with `seed` once.
    """
    import gymnasium as gym
    env = gym.make(ENV_ID)
    returns = []
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(int(act(obs)))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
        obs, _ = env.reset()
    env.close()
    return float(np.mean(returns))


@contextlib.contextmanager
def torch_state(threads: int, flush_denormal: bool):
    """Sets torch's thread count and this thread's flush-to-zero flag for one run; restores both
    afterwards, so that no run (and nothing after the benchmark) inherits another's."""
    import torch
    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    torch.set_flush_denormal(flush_denormal)
    try:
        yield
    finally:
        torch.set_flush_denormal(False)
        torch.set_num_threads(previous)


def run_rlgraph(base: dict, hp: Dict[str, Any], backend: str, steps: int, seed: int, threads: int,
                eval_episodes: int, flush_denormal: bool = True) -> Dict[str, Any]:
    """Builds rlgraph's DQN (untimed), times `execute_timesteps(steps)`, then evaluates greedily."""
    from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
    from rlgraph.execution.training import make_agent_and_env, resolve_config
    config = rlgraph_config(base, hp, backend, steps, seed, threads)
    # rlgraph's executor switches flush-to-zero on for each API call when this is True.
    config["execution_spec"]["torch_flush_denormal"] = flush_denormal
    config = resolve_config(config)
    with torch_state(threads, False):
        agent, env_spec = make_agent_and_env(config)
        worker = SingleThreadedWorker(agent, env_spec, num_environments=1, seed=seed)
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            stats = worker.execute_timesteps(steps)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            final = greedy_return(lambda obs: agent.get_action(obs, use_exploration=False), seed + 10_000,
                                  eval_episodes)
        finally:
            worker.terminate()
    env_steps = int(stats["timesteps_executed"])
    row = _row(f"rlgraph-{backend}", seed, wall, cpu, env_steps, agent.num_updates, final)
    row.update(act_s=stats["act_time"], env_s=stats["env_time"], update_s=stats["update_time"])
    agent.terminate()
    return row


def run_sb3(hp: Dict[str, Any], steps: int, seed: int, threads: int, eval_episodes: int,
            flush_denormal: bool = False) -> Dict[str, Any]:
    """Builds SB3's DQN (untimed), times `model.learn(steps)`, then evaluates greedily."""
    sb3 = import_optional("stable_baselines3", package="stable-baselines3", where=f"benchmark {NAME}",
                          hint=INSTALL_HINT)
    with torch_state(threads, flush_denormal):
        return _train_sb3(sb3, hp, steps, seed, eval_episodes)


def _train_sb3(sb3: Any, hp: Dict[str, Any], steps: int, seed: int, eval_episodes: int) -> Dict[str, Any]:
    import gymnasium as gym
    model = sb3.DQN(
        "MlpPolicy", gym.make(ENV_ID), learning_rate=hp["learning_rate"], buffer_size=hp["buffer_size"],
        learning_starts=hp["learning_starts"], batch_size=hp["batch_size"], gamma=hp["gamma"],
        train_freq=hp["train_freq"], gradient_steps=hp["gradient_steps"],
        target_update_interval=hp["target_update_interval"], exploration_fraction=hp["exploration_fraction"],
        exploration_initial_eps=hp["exploration_initial_eps"], exploration_final_eps=hp["exploration_final_eps"],
        max_grad_norm=hp["max_grad_norm"], seed=seed,
        policy_kwargs=dict(net_arch=list(hp["net_arch"]), optimizer_kwargs=dict(eps=hp["adam_epsilon"])),
        device="cpu", verbose=0)
    wall, cpu = time.perf_counter(), time.process_time()
    model.learn(total_timesteps=steps)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    final = greedy_return(lambda obs: model.predict(obs, deterministic=True)[0], seed + 10_000, eval_episodes)
    model.get_env().close()
    return _row(SB3, seed, wall, cpu, int(model.num_timesteps), int(model._n_updates), final)


def _row(library: str, seed: int, wall: float, cpu: float, env_steps: int, updates: int, final: float) -> dict:
    return {"library": library, "seed": seed, "wall_s": wall, "cpu_s": cpu, "env_steps": env_steps,
            "steps_per_s": env_steps / wall, "num_updates": updates, "final_return": final}


def summarize(rows: List[dict], backends: List[str]) -> Dict[str, dict]:
    """Per library: mean steps/s and final return over the seeds; rlgraph's ratio to SB3."""
    summary = {}
    for library in [f"rlgraph-{b}" for b in backends] + [SB3]:
        mine = [r for r in rows if r["library"] == library]
        summary[library] = {"steps_per_s": statistics.mean(r["steps_per_s"] for r in mine),
                            "wall_s": statistics.mean(r["wall_s"] for r in mine),
                            "final_return": statistics.mean(r["final_return"] for r in mine), "seeds": len(mine)}
    for backend in backends:
        entry = summary[f"rlgraph-{backend}"]
        entry["ratio_vs_sb3"] = entry["steps_per_s"] / summary[SB3]["steps_per_s"]
        entry["target_ratio"] = TARGET_RATIOS.get(backend)
        entry["meets_target"] = entry["target_ratio"] is not None and entry["ratio_vs_sb3"] >= entry["target_ratio"]
    return summary


def main(argv: Optional[List[str]] = None) -> dict:
    parser = make_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", choices=["pytorch", "tf"], default=["pytorch"],
                        help="rlgraph backends to run (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=50_000, help="env steps per run (default: %(default)s)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="seeds (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="torch/tf threads on both sides (default: 1)")
    parser.add_argument("--flush-denormal", choices=["default", "on", "off"], default="default",
                        help="torch flush-to-zero: 'default' = each library's own default (rlgraph on, SB3 "
                             "off), 'on'/'off' = the same for both (default: %(default)s)")
    parser.add_argument("--eval-episodes", type=int, default=10, help="greedy episodes after training")
    parser.add_argument("--config", default=DEFAULT_CONFIG, help="rlgraph's base DQN config (default: %(default)s)")
    args = parser.parse_args(argv)
    # Fail before any run when the peer library is missing.
    import_optional("stable_baselines3", package="stable-baselines3", where=f"benchmark {NAME}", hint=INSTALL_HINT)
    from rlgraph.utils.specifiable import load_spec_file

    hp = dict(HYPERPARAMETERS)
    steps, seeds, eval_episodes = args.steps, list(args.seeds), args.eval_episodes
    if args.quick:
        hp.update({k: QUICK[k] for k in ("learning_starts", "train_freq", "gradient_steps")})
        steps, seeds, eval_episodes = QUICK["steps"], QUICK["seeds"], QUICK["eval_episodes"]
    backends = list(dict.fromkeys(args.backends))
    base = load_spec_file(args.config)

    rows: List[dict] = []
    for index, seed in enumerate(seeds):
        contenders = [f"rlgraph-{b}" for b in backends] + [SB3]
        if index % 2:
            contenders.reverse()
        for order, library in enumerate(contenders):
            if library == SB3:
                row = run_sb3(hp, steps, seed, args.threads, eval_episodes, args.flush_denormal == "on")
            else:
                row = run_rlgraph(base, hp, library[len("rlgraph-"):], steps, seed, args.threads, eval_episodes,
                                  args.flush_denormal != "off")
            row["order"] = order
            rows.append(row)
            print(f"seed {seed} {library:<15} {row['wall_s']:7.1f} s  {row['steps_per_s']:7.1f} steps/s  "
                  f"final return {row['final_return']:.1f}", flush=True)

    summary = summarize(rows, backends)
    print()
    print(format_table(["library", "seed", "wall s", "env steps", "steps/s", "updates", "final return"],
                       [[r["library"], r["seed"], r["wall_s"], r["env_steps"], r["steps_per_s"], r["num_updates"],
                         r["final_return"]] for r in rows]))
    print()
    print(format_table(["library", "mean steps/s", "ratio vs SB3", "target", "mean final return"],
                       [[lib, s["steps_per_s"], f"{s['ratio_vs_sb3']:.2f}x" if "ratio_vs_sb3" in s else "1.00x",
                         f">= {s['target_ratio']}x" if s.get("target_ratio") else "-", s["final_return"]]
                        for lib, s in summary.items()]))
    result = {"benchmark": NAME, "env": ENV_ID, "steps": steps, "seeds": seeds, "threads": args.threads,
              "flush_denormal": args.flush_denormal, "backends": backends, "eval_episodes": eval_episodes, "quick": args.quick, "hyperparameters": hp,
              "runs": rows, "summary": summary}
    path = write_results(result, args.out)
    if path:
        print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
