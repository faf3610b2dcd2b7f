"""What the benchmarks against Stable-Baselines3 share (`dqn-sb3`, `ppo-sb3`, `sac-sb3`).

Each of them trains rlgraph's agent (one run per backend) and SB3's model with the same
hyperparameters on the same env, for each seed, the libraries back to back in an order that
alternates from seed to seed, so that a slow phase of a shared machine hits all of them. Only
the training loop is timed (building the agent or model happens before the clock starts);
then each policy plays greedy episodes on a separately seeded env, with the same loop for both.

A run's row: library, seed, wall_s, cpu_s (the process's CPU time), env_steps (what the run
actually stepped: SB3 finishes its last rollout and may overshoot), steps_per_s = env_steps /
wall_s, steps_per_cpu_s = env_steps / cpu_s, num_updates (gradient steps), final_return (mean
greedy return), update_s (time in updates) and collect_s (the rest: acting, env steps, observing,
rollout bookkeeping). rlgraph rows add the worker's act_s and env_s. The targets judge wall-clock
steps/s; steps per CPU second is the steadier figure where other processes share the cores.
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
import types
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from rlgraph.benchmarks.common import format_table, make_parser, write_results
from rlgraph.environments.env_utils import import_optional

SB3 = "sb3"
INSTALL_HINT = 'install the benchmark extras: `pip install -c constraints.txt -e ".[bench]"`.'
EVAL_SEED_OFFSET = 10_000  # The evaluation env's seed is the run's seed plus this.
RUN_SETTINGS = ("steps", "seeds", "eval_episodes")  # The keys of a QUICK dict that are no hyperparameters.


def require_sb3(benchmark: str) -> Any:
    """The `stable_baselines3` module (raises `RLGraphMissingDependencyError` naming the extra).

    Importing SB3 imports `torch.utils.tensorboard`, whose TensorBoard loads TensorFlow when it is
    installed (about 5 s of CPU here, and its threads) although SB3 only needs TensorBoard's own
    stub to write event files. In a process that has not imported TensorFlow, TensorBoard is told
    to use that stub (`tensorboard.compat.notf`, TensorBoard's own switch), so a PyTorch benchmark
    process never loads TensorFlow. A process that already runs TensorFlow keeps it."""
    if "tensorflow" not in sys.modules and "tensorboard.compat.notf" not in sys.modules:
        sys.modules["tensorboard.compat.notf"] = types.ModuleType("tensorboard.compat.notf")
    return import_optional("stable_baselines3", package="stable-baselines3", where=f"benchmark {benchmark}",
                           hint=INSTALL_HINT)


def parse_args(name: str, doc: str, argv: Optional[List[str]], steps: int, hyperparameters: Dict[str, Any],
               quick: Dict[str, Any], add_arguments: Optional[Callable[[argparse.ArgumentParser], None]] = None
               ) -> Tuple[argparse.Namespace, Dict[str, Any]]:
    """The options and hyperparameters of one run of an SB3 peer benchmark.

    Fails before any run when stable-baselines3 is missing.

    Args:
        name: The benchmark's name ("ppo-sb3").
        doc: The module docstring (its first paragraph is the description).
        argv: Command-line style options (None: sys.argv).
        steps: Default env steps per run.
        hyperparameters: The benchmark's `HYPERPARAMETERS`.
        quick: What --quick sets: "steps", "seeds" and "eval_episodes", the other keys override
            hyperparameters.
        add_arguments: Adds the benchmark's own options to the parser.

    Returns:
        (args, hp): args.steps, args.seeds and args.eval_episodes hold what the run uses (--quick
        included); hp the hyperparameters.
    """
    parser = make_parser(name, doc.split("\n\n")[0])
    parser.add_argument("--backends", nargs="+", choices=["pytorch", "tf"], default=["pytorch"],
                        help="rlgraph backends to run (default: %(default)s)")
    parser.add_argument("--steps", type=int, default=steps, help="env steps per run (default: %(default)s)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="seeds (default: %(default)s)")
    parser.add_argument("--threads", type=int, default=1, help="torch/tf threads on both sides (default: 1)")
    parser.add_argument("--flush-denormal", choices=["default", "on", "off"], default="default",
                        help="torch flush-to-zero: 'default' = each library's own default (rlgraph on, SB3 "
                             "off), 'on'/'off' = the same for both (default: %(default)s)")
    parser.add_argument("--eval-episodes", type=int, default=10, help="greedy episodes after training")
    if add_arguments is not None:
        add_arguments(parser)
    args = parser.parse_args(argv)
    require_sb3(name)
    hp = dict(hyperparameters)
    if args.quick:
        hp.update({k: v for k, v in quick.items() if k not in RUN_SETTINGS})
        args.steps, args.seeds, args.eval_episodes = (quick[k] for k in RUN_SETTINGS)
    args.backends = list(dict.fromkeys(args.backends))
    return args, hp


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


def greedy_return(env_id: str, act: Callable[[np.ndarray], Any], seed: int, episodes: int) -> float:
    """Mean return of `episodes` episodes of `env_id` played by `act(observation) -> env action`.

    The same loop and env for both libraries: a fresh gymnasium env, reset with `seed` once.
    """
    import gymnasium as gym
    env = gym.make(env_id)
    returns = []
    obs, _ = env.reset(seed=seed)
    for _ in range(episodes):
        total, done = 0.0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(act(obs))
            total += float(reward)
            done = terminated or truncated
        returns.append(total)
        obs, _ = env.reset()
    env.close()
    return float(np.mean(returns))


def make_row(library: str, seed: int, wall: float, cpu: float, env_steps: int, updates: int, final: float,
             update_s: float) -> dict:
    """One run's row (see the module docstring)."""
    return {"library": library, "seed": seed, "wall_s": wall, "cpu_s": cpu, "env_steps": env_steps,
            "steps_per_s": env_steps / wall, "steps_per_cpu_s": env_steps / cpu, "num_updates": updates,
            "final_return": final, "update_s": update_s, "collect_s": wall - update_s}


def run_rlgraph(config: dict, env_id: str, steps: int, seed: int, threads: int, eval_episodes: int,
                num_environments: int = 1, to_env_action: Callable[[Any], Any] = lambda a: a,
                updates: Callable[[Any], int] = lambda agent: agent.num_updates) -> dict:
    """Builds rlgraph's agent of `config` (untimed), times `SingleThreadedWorker.execute_timesteps(steps)`
    on `num_environments` envs seeded from `seed`, then plays `eval_episodes` greedy episodes.

    Args:
        config: A config for `resolve_config` (agent spec, environment_spec, training_spec).
        env_id: The gymnasium id of the evaluation env.
        to_env_action: Turns the agent's greedy action into what the env's `step` takes.
        updates: The agent's number of gradient steps after the run.

    Returns:
        The row of library "rlgraph-<backend>".
    """
    from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
    from rlgraph.execution.training import make_agent_and_env, resolve_config
    config = resolve_config(config)
    with torch_state(threads, False):  # rlgraph's executor sets flush-to-zero per call itself.
        agent, env_spec = make_agent_and_env(config)
        worker = SingleThreadedWorker(agent, env_spec, num_environments=num_environments, seed=seed)
        try:
            wall, cpu = time.perf_counter(), time.process_time()
            stats = worker.execute_timesteps(steps)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            final = greedy_return(env_id, lambda obs: to_env_action(agent.get_action(obs, use_exploration=False)),
                                  seed + EVAL_SEED_OFFSET, eval_episodes)
        finally:
            worker.terminate()
    row = make_row(f"rlgraph-{config['backend']}", seed, wall, cpu, int(stats["timesteps_executed"]),
                   int(updates(agent)), final, stats["update_time"])
    row.update(act_s=stats["act_time"], env_s=stats["env_time"])
    agent.terminate()
    return row


def quiet_logger(model: Any) -> Any:
    """Gives an SB3 model a logger that writes nothing: SB3's default (verbose=0) also writes nothing
    but creates an empty directory in the system temp dir (SB3-<time>) for every `learn` call."""
    from stable_baselines3.common.logger import Logger
    model.set_logger(Logger(folder=None, output_formats=[]))
    return model


def run_sb3(model: Any, env_id: str, steps: int, seed: int, threads: int, eval_episodes: int, flush_denormal: bool,
            to_env_action: Callable[[Any], Any] = lambda a: a,
            updates: Callable[[Any], int] = lambda model: int(model._n_updates)) -> dict:
    """Times SB3's `model.learn(steps)` (the model built beforehand, untimed), then evaluates greedily.

    The time in updates is that of `model.train()`, which `learn` calls after each rollout.

    Args:
        model: An SB3 algorithm built on its training env.
        updates: The model's number of gradient steps after the run (default: `_n_updates`).

    Returns:
        The row of library "sb3".
    """
    wall, cpu, update_s = timed_learn(model, steps, threads, flush_denormal)
    with torch_state(threads, flush_denormal):
        final = greedy_return(env_id, lambda obs: to_env_action(model.predict(obs, deterministic=True)[0]),
                              seed + EVAL_SEED_OFFSET, eval_episodes)
    model.get_env().close()
    return make_row(SB3, seed, wall, cpu, int(model.num_timesteps), int(updates(model)), final, update_s)


def timed_learn(model: Any, steps: int, threads: int, flush_denormal: bool) -> Tuple[float, float, float]:
    """(wall s, CPU s, s in `model.train()`) of SB3's `model.learn(steps)`, with `threads` torch threads
    and SB3's logger quiet; `learn` calls `train()` after each rollout."""
    train, update_s = model.train, [0.0]

    def timed_train(*args, **kwargs):
        start = time.perf_counter()
        try:
            return train(*args, **kwargs)
        finally:
            update_s[0] += time.perf_counter() - start

    model.train = timed_train  # An instance attribute: `learn` calls `self.train()`.
    quiet_logger(model)
    try:
        with torch_state(threads, flush_denormal):
            wall, cpu = time.perf_counter(), time.process_time()
            model.learn(total_timesteps=steps)
            return time.perf_counter() - wall, time.process_time() - cpu, update_s[0]
    finally:
        del model.train


def compare(args: argparse.Namespace, name: str, env_id: str, hp: Dict[str, Any], target_ratios: Dict[str, float],
            run_rlgraph: Callable[..., dict], run_sb3: Callable[..., dict]) -> dict:
    """Runs rlgraph on each of `args.backends` and SB3 for each of `args.seeds`, prints the tables,
    writes the JSON. Per seed the libraries run back to back, the order reversed on every other seed.

    Args:
        args: From `parse_args`.
        hp: From `parse_args`.
        name: The benchmark's name (recorded in the results).
        env_id: The benchmark's env (recorded in the results).
        target_ratios: rlgraph's targeted steps/s over SB3's, per backend.
        run_rlgraph: run_rlgraph(hp, backend, steps, seed, threads, eval_episodes, flush_denormal) -> row.
        run_sb3: run_sb3(hp, steps, seed, threads, eval_episodes, flush_denormal) -> row.

    Returns:
        The results (also written to `args.out`): the settings, "runs" (rows with their "order")
        and "summary" (see `summarize`).
    """
    common = dict(threads=args.threads, eval_episodes=args.eval_episodes)
    rows: List[dict] = []
    for index, seed in enumerate(args.seeds):
        contenders = [f"rlgraph-{b}" for b in args.backends] + [SB3]
        if index % 2:
            contenders.reverse()
        for order, library in enumerate(contenders):
            if library == SB3:
                row = run_sb3(hp, args.steps, seed, flush_denormal=args.flush_denormal == "on", **common)
            else:
                row = run_rlgraph(hp, library[len("rlgraph-"):], args.steps, seed,
                                  flush_denormal=args.flush_denormal != "off", **common)
            row["order"] = order
            rows.append(row)
            print(f"seed {seed} {library:<15} {row['wall_s']:7.1f} s  {row['steps_per_s']:7.1f} steps/s  "
                  f"final return {row['final_return']:.1f}", flush=True)
    summary = summarize(rows, args.backends, target_ratios)
    result = {"benchmark": name, "env": env_id, "steps": args.steps, "seeds": list(args.seeds),
              "threads": args.threads, "flush_denormal": args.flush_denormal, "backends": args.backends,
              "eval_episodes": args.eval_episodes, "quick": args.quick, "hyperparameters": hp}
    return report(result, rows, summary, args.out)


def summarize(rows: List[dict], backends: Sequence[str], target_ratios: Dict[str, float]) -> Dict[str, dict]:
    """Per library: mean steps/s, wall and update time and final return over the seeds; rlgraph's
    steps/s ratio to SB3 against `target_ratios[backend]` ("meets_target" None where there is none)."""
    summary = {}
    for library in [f"rlgraph-{b}" for b in backends] + [SB3]:
        mine = [r for r in rows if r["library"] == library]
        summary[library] = {key: statistics.mean(r[key] for r in mine)
                            for key in ("steps_per_s", "steps_per_cpu_s", "wall_s", "update_s", "final_return")}
        summary[library]["seeds"] = len(mine)
    for backend in backends:
        entry = summary[f"rlgraph-{backend}"]
        entry["ratio_vs_sb3"] = entry["steps_per_s"] / summary[SB3]["steps_per_s"]
        entry["cpu_ratio_vs_sb3"] = entry["steps_per_cpu_s"] / summary[SB3]["steps_per_cpu_s"]
        target = entry["target_ratio"] = target_ratios.get(backend)
        entry["meets_target"] = None if target is None else entry["ratio_vs_sb3"] >= target
    return summary


def report(result: dict, rows: List[dict], summary: Dict[str, dict], out: Optional[str]) -> dict:
    """Prints the per-run and summary tables, writes `result` plus the rows and summary to `out`."""
    print()
    print(format_table(["library", "seed", "wall s", "cpu s", "update s", "env steps", "steps/s", "updates",
                        "final return"],
                       [[r["library"], r["seed"], r["wall_s"], r["cpu_s"], r["update_s"], r["env_steps"],
                         r["steps_per_s"], r["num_updates"], r["final_return"]] for r in rows]))
    print()
    print(format_table(["library", "mean steps/s", "ratio vs SB3", "target", "steps/cpu s", "cpu ratio",
                        "mean final return"],
                       [[lib, s["steps_per_s"], f"{s.get('ratio_vs_sb3', 1.0):.2f}x",
                         f">= {s['target_ratio']}x" if s.get("target_ratio") else "-", s["steps_per_cpu_s"],
                         f"{s.get('cpu_ratio_vs_sb3', 1.0):.2f}x", s["final_return"]] for lib, s in summary.items()]))
    result = dict(result, runs=rows, summary=summary)
    path = write_results(result, out)
    if path:
        print(f"wrote {path}")
    return result
