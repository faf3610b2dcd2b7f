"""rl-baselines3-zoo's benchmark table rerun: rlgraph and Stable-Baselines3, same hyperparameters and seeds.

For each pair of the table (`zoo_table.ZOO_PAIRS`: DQN, PPO, A2C, SAC, TD3 and DDPG on the
classic-control and Box2D tasks) and each seed, rlgraph (PyTorch; TF on `TF_PAIRS`, one pair per
algorithm with its cheapest budget, or on the pairs `--tf-pairs` names) and SB3 train with the
zoo's hyperparameters for the zoo's budget (`zoo_configs` turns a pair into an rlgraph config
and an SB3 model). Each run is one process of the learning study's kind (`learning_runs.
evaluated_run`): `--evaluations` greedy evaluations over the budget, `--eval-episodes` episodes
each, with the same loop and evaluation seeds for both libraries.

Per pair it reports the zoo's published score (mean ± std of the zoo's own evaluation of one
trained agent; not the same statistic as ours), SB3's and rlgraph's interquartile mean of the
final return with stratified-bootstrap 95% CIs, rlgraph's probability of improvement over SB3
with its interval, the median seconds per run of each library (building and training, one
thread per run, evaluations excluded) and the run counts (`zoo_report.py`).

Every finished run is appended to `<out>.runs.jsonl` at once. Running the same command again
continues the study: a run whose (pair, library, seed) and settings (budget, evaluations,
hyperparameters) are in that log already is not run again, its record is reused (`--fresh`
starts the log anew). `--merge` summarizes the runs of earlier results or logs without training;
`--write-docs DIR` writes the table into DIR/performance.md (between the zoo-table markers,
replaced in place) and one plot per environment into DIR/images/.

    rlgraph benchmark zoo --list
    rlgraph benchmark zoo --seeds 1..5 --jobs 16 --write-docs docs        # the whole table
    rlgraph benchmark zoo --pairs dqn Pendulum-v1 --backends pytorch tf   # DQN's rows, Pendulum's rows
    rlgraph benchmark zoo --pairs ppo/CartPole-v1 --steps-scale 0.1      # a tenth of the budget
    rlgraph benchmark zoo --merge a.runs.jsonl b.json --out all.json --write-docs docs
    rlgraph benchmark zoo --quick
"""
from __future__ import annotations

import argparse
import json
import os
import time
from dataclasses import replace
from typing import Callable, List, Optional, Sequence, Tuple

from rlgraph.benchmarks.common import format_table, make_parser, select_backends
from rlgraph.benchmarks.learning import parse_seeds, read_runs, run_jobs, trim_log
from rlgraph.benchmarks.learning_runs import evaluated_run, train_rlgraph, train_sb3
from rlgraph.benchmarks.learning_variants import SB3
from rlgraph.benchmarks.zoo_configs import EVALUATIONS_PER_RUN, threshold
from rlgraph.benchmarks.zoo_report import report
from rlgraph.benchmarks.zoo_table import BY_NAME, ZOO_PAIRS, ZooPair
from rlgraph.utils.cpus import usable_cpus
from rlgraph.utils.rlgraph_errors import RLGraphError
from rlgraph.utils.specifiable import closest_match

NAME = "zoo"
#: Where TF runs by default: one pair per algorithm, the one with the smallest budget.
TF_PAIRS = ("dqn/CartPole-v1", "ppo/CartPole-v1", "a2c/LunarLander-v3", "sac/Pendulum-v1", "td3/Pendulum-v1",
            "ddpg/Pendulum-v1")
# --quick: a run of seconds through every phase (warm-up, updates, two evaluations), 2 pairs, 2 seeds.
QUICK = {"pairs": ["dqn/CartPole-v1", "sac/Pendulum-v1"], "seeds": [1, 2], "evaluations": 2, "eval_episodes": 2,
         "steps": {"dqn/CartPole-v1": 1000, "sac/Pendulum-v1": 300},
         "hyperparameters": {"dqn/CartPole-v1": {"learning_starts": 200, "gradient_steps": 16, "buffer_size": 10_000},
                             "sac/Pendulum-v1": {"learning_starts": 200, "batch_size": 64, "buffer_size": 10_000}}}
# What a resumed study must share with a logged run to reuse it.
RUN_KEY = ("pair", "library", "seed", "steps", "eval_interval", "eval_episodes", "hyperparameters")


def select_pairs(tokens: Optional[Sequence[str]], where: str = "rlgraph benchmark zoo --pairs") -> List[ZooPair]:
    """The pairs that `tokens` name, in the table's order: "dqn/CartPole-v1" (one pair), "dqn" (an
    algorithm's pairs) or "Pendulum-v1" (an environment's pairs); None or ["all"]: every pair.

    Raises:
        RLGraphError: A token names no pair, algorithm or environment of the table.
    """
    if not tokens or list(tokens) == ["all"]:
        return list(ZOO_PAIRS)
    chosen = set()
    known = list(BY_NAME) + sorted({p.algo for p in ZOO_PAIRS}) + sorted({p.env_id for p in ZOO_PAIRS})
    for token in tokens:
        matches = [p.name for p in ZOO_PAIRS if token in (p.name, p.algo, p.env_id)]
        if not matches:
            guess = closest_match(token, known)
            raise RLGraphError(f"'{token}' is no pair, algorithm or environment of the zoo table", where=where,
                               expected=known, received=token,
                               hint=(f"did you mean '{guess}'? " if guess else "") + "`rlgraph benchmark zoo --list` "
                               "prints the table.")
        chosen.update(matches)
    return [pair for pair in ZOO_PAIRS if pair.name in chosen]


def make_jobs(args: argparse.Namespace) -> List[dict]:
    """One job per (pair, seed, library), seed-major so that every pair and library progress
    together; the libraries' order alternates from one (seed, pair) to the next."""
    tf_pairs = {pair.name for pair in args.tf_pairs}
    jobs = []
    groups = [(seed, pair) for seed in args.seeds for pair in args.pairs]
    for index, (seed, pair) in enumerate(groups):
        contenders = [f"rlgraph-{backend}" for backend in args.backends
                      if backend != "tf" or pair.name in tf_pairs] + [SB3]
        if index % 2:
            contenders.reverse()
        steps = args.budgets[pair.name]
        for library in contenders:
            jobs.append({"benchmark": NAME, "pair": pair.name, "algo": pair.algo, "env": pair.env_id,
                         "library": library, "seed": seed, "steps": steps,
                         "eval_interval": args.eval_interval or max(1, steps // args.evaluations),
                         "eval_episodes": args.eval_episodes, "threshold": threshold(pair),
                         "hyperparameters": args.hyperparameters[pair.name]})
    return jobs


def run_key(run: dict) -> str:
    """A run's identity for resuming: its `RUN_KEY` values as canonical JSON."""
    return json.dumps({key: run[key] for key in RUN_KEY}, sort_keys=True)


def split_finished(jobs: List[dict], log_path: Optional[str]) -> Tuple[List[dict], List[dict]]:
    """(jobs still to run, records of the others) by the runs in `log_path` (absent: none ran)."""
    if not log_path or not os.path.exists(log_path):
        return jobs, []
    trim_log(log_path)
    logged = {run_key(r): r for r in read_runs([log_path], f"rlgraph benchmark {NAME} (resuming from {log_path})")
              if r.get("benchmark") == NAME}
    return [j for j in jobs if run_key(j) not in logged], [logged[run_key(j)] for j in jobs if run_key(j) in logged]


def run_zoo_job(job: dict) -> dict:
    """Trains and evaluates one (pair, library, seed) run; returns its record (curve included)."""
    from rlgraph.benchmarks import zoo_configs
    from rlgraph.benchmarks.sb3_peer import quiet_logger
    pair = replace(BY_NAME[job["pair"]], hyperparameters=job["hyperparameters"])
    if job["library"] == SB3:
        def train(evaluate: Callable) -> int:
            model = quiet_logger(zoo_configs.make_sb3_model(pair, job["seed"], steps=job["steps"]))
            return train_sb3(model, zoo_configs.sb3_act(model), job, evaluate)
    else:
        def train(evaluate: Callable) -> int:
            config = zoo_configs.rlgraph_config(pair, backend=job["library"][len("rlgraph-"):], seed=job["seed"],
                                                steps=job["steps"], threads=1)
            config["execution_spec"]["device"] = "cpu"  # As SB3 runs here (device="cpu"): like with like on a GPU.
            return train_rlgraph(config, zoo_configs.num_envs(pair), job, evaluate)
    return evaluated_run(job, pair.env_id, zoo_configs.to_env_action(pair), job["threshold"], train)


def warm_imports() -> None:
    """Imports what the runs use, once per process, so that no run's seconds include it (SB3
    through `require_sb3`, which keeps TensorBoard from loading TensorFlow)."""
    import importlib

    from rlgraph.benchmarks.sb3_peer import require_sb3
    require_sb3(NAME)
    for module in ("gymnasium", "rlgraph.benchmarks.zoo_configs", "rlgraph.execution.single_threaded_worker",
                   "rlgraph.execution.training"):
        importlib.import_module(module)


def _label(run: dict) -> str:
    return f"{run['pair']:<34} {run['library']:<15}"


def main(argv: Optional[List[str]] = None) -> dict:
    parser = make_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument("--list", action="store_true", help="print the table's pairs, budgets and scores; no runs")
    parser.add_argument("--pairs", nargs="+", metavar="PAIR", help="pairs (dqn/CartPole-v1), algorithms (dqn) or "
                        "environments (Pendulum-v1) (default: all)")
    parser.add_argument("--seeds", nargs="+", default=["1..5"], help="seeds: numbers or LOW..HIGH (default: 1..5)")
    parser.add_argument("--backends", nargs="+", choices=["pytorch", "tf"], default=["pytorch"],
                        help="rlgraph backends (default: %(default)s)")
    parser.add_argument("--tf-pairs", nargs="+", metavar="PAIR", default=list(TF_PAIRS),
                        help="the pairs TF runs on, as --pairs names them, or 'all' (default: %(default)s)")
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--steps", type=int, help="env steps per run for every pair (default: the zoo's budget)")
    budget.add_argument("--steps-scale", type=float, default=1.0, help="scale every zoo budget (default: 1)")
    parser.add_argument("--evaluations", type=int, default=EVALUATIONS_PER_RUN,
                        help="greedy evaluations over a run (default: %(default)s)")
    parser.add_argument("--eval-interval", type=int, help="env steps between evaluations (overrides --evaluations)")
    parser.add_argument("--eval-episodes", type=int, default=10, help="greedy episodes per evaluation (default: 10)")
    parser.add_argument("--jobs", type=int, default=usable_cpus(), help="runs at once (default: the usable CPUs)")
    parser.add_argument("--fresh", action="store_true", help="start the runs log anew instead of continuing it")
    parser.add_argument("--merge", nargs="+", metavar="FILE", help="summarize the runs of earlier results (.json) "
                        "or logs (.runs.jsonl); no training")
    parser.add_argument("--write-docs", metavar="DIR", help="write the table into DIR/performance.md (between "
                        "the zoo-table markers) and one plot per environment into DIR/images/")
    args = parser.parse_args(argv)
    if args.list:
        return _list()
    if args.merge:
        return _merge(args)
    args.pairs = select_pairs(QUICK["pairs"] if args.quick else args.pairs)
    args.tf_pairs = select_pairs(None if args.tf_pairs == ["all"] else args.tf_pairs,
                                 where="rlgraph benchmark zoo --tf-pairs")
    args.seeds = QUICK["seeds"] if args.quick else parse_seeds(args.seeds, where="rlgraph benchmark zoo --seeds")
    if args.quick:
        args.evaluations, args.eval_episodes, args.eval_interval = QUICK["evaluations"], QUICK["eval_episodes"], None
    _check_positive(args)
    args.backends = select_backends(args.backends, where="rlgraph benchmark zoo --backends")
    args.budgets = {p.name: QUICK["steps"][p.name] if args.quick else
                    args.steps or max(1, round(p.steps * args.steps_scale)) for p in args.pairs}
    args.hyperparameters = {p.name: dict(p.hyperparameters, **(QUICK["hyperparameters"][p.name] if args.quick else {}))
                            for p in args.pairs}
    from rlgraph.benchmarks.sb3_peer import require_sb3
    require_sb3(NAME)
    jobs = make_jobs(args)
    log_path = os.path.splitext(args.out)[0] + ".runs.jsonl" if args.out else None
    if log_path:
        os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
        if args.fresh and os.path.exists(log_path):
            os.remove(log_path)
    pending, reused = split_finished(jobs, log_path)
    at_once = f", {min(args.jobs, len(pending))} at a time" if pending else ""
    print(f"{len(jobs)} runs ({len(args.pairs)} pairs x {len(args.seeds)} seeds): {len(reused)} of them in {log_path} "
          f"already, {len(pending)} to run{at_once}", flush=True)
    start, failures = time.perf_counter(), []
    runs = run_jobs(pending, min(args.jobs, len(pending)), log_path, run=run_zoo_job, label=_label,
                    failures=failures, initializer=warm_imports) if pending else []
    result = {"benchmark": NAME, "pairs": [p.name for p in args.pairs], "seeds": args.seeds, "backends": args.backends,
              "tf_pairs": [p.name for p in args.tf_pairs], "evaluations": args.evaluations,
              "eval_interval": args.eval_interval, "eval_episodes": args.eval_episodes, "quick": args.quick,
              "wall_s": time.perf_counter() - start, "reused": len(reused), "failed": failures,
              "runs": _ordered(reused + runs)}
    return report(result, args.out, args.write_docs)


def _check_positive(args: argparse.Namespace) -> None:
    for name in ("steps", "eval_interval", "eval_episodes", "jobs", "evaluations", "steps_scale"):
        value = getattr(args, name)
        if value is not None and not value > 0:
            raise RLGraphError("must be positive", where=f"rlgraph benchmark {NAME} --{name.replace('_', '-')}",
                               expected="> 0", received=value)


def _ordered(runs: List[dict]) -> List[dict]:
    order = {pair.name: index for index, pair in enumerate(ZOO_PAIRS)}
    return sorted(runs, key=lambda r: (order[r["pair"]], r["library"], r["seed"]))


def _merge(args: argparse.Namespace) -> dict:
    """The summary of the zoo runs in earlier results files or logs (a run in several counts once:
    the last read); every pair's runs must share their settings."""
    where = f"rlgraph benchmark {NAME} --merge"
    runs = {(r["pair"], r["library"], r["seed"]): r for r in read_runs(args.merge, where) if r.get("benchmark") == NAME}
    if not runs:
        raise RLGraphError("no zoo runs in the files", where=where, received=args.merge)
    for name in {pair for pair, _, _ in runs}:
        settings = {json.dumps([r[k] for k in RUN_KEY[3:]], sort_keys=True) for r in runs.values() if r["pair"] == name}
        if len(settings) > 1:
            raise RLGraphError(f"the runs of {name} differ in their settings", where=where,
                               expected=f"one {', '.join(RUN_KEY[3:])} per pair", received=sorted(settings),
                               hint="merge runs of one budget and evaluation schedule per pair.")
    merged = _ordered(list(runs.values()))
    result = {"benchmark": NAME, "pairs": list(dict.fromkeys(r["pair"] for r in merged)),
              "merged_from": list(args.merge), "runs": merged, "failed": []}
    return report(result, args.out, args.write_docs)


def _list() -> dict:
    """Prints the table: every pair with its budget, the zoo's score and whether TF runs it by default."""
    rows = [[p.name, f"{p.steps:,}", f"{p.published[0]:.1f} ± {p.published[1]:.1f}", p.zoo_env_id or "-",
             "yes" if p.name in TF_PAIRS else "-"] for p in ZOO_PAIRS]
    print(format_table(["pair", "budget (env steps)", "zoo score (mean ± std)", "zoo's env id", "TF by default"],
                       rows))
    return {"benchmark": NAME, "pairs": [{"name": p.name, "steps": p.steps, "published": list(p.published),
                                          "tf": p.name in TF_PAIRS} for p in ZOO_PAIRS]}


if __name__ == "__main__":
    main()
