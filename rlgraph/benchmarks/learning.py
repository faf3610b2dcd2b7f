"""Learning-quality seed study: rlgraph against Stable-Baselines3 over many seeds.

Each run trains one library on one seed with rl-zoo's hyperparameters (those of `dqn-sb3`,
`ppo-sb3` or `sac-sb3`) and evaluates its greedy policy every `--eval-interval` env steps with
the same loop for both libraries (`greedy_returns`: `--eval-episodes` episodes stepped side by
side, env i reset with seed 10,000 + 1,000 * seed + i at every evaluation). Per run it records:

- the final return: the mean greedy return of the last evaluation (after all steps);
- the area under the evaluation curve (`rl_statistics.area_under_curve`, in return units);
- the env steps to the first evaluation at or above the env's threshold (CartPole-v1: 475).

Per library (and rlgraph variant) the runs are aggregated as interquartile means with
stratified-bootstrap 95% confidence intervals, and each rlgraph variant is compared with SB3 by
the probability of improvement (P(rlgraph run > SB3 run), 0.5 is a tie) with its interval
(`rlgraph.benchmarks.rl_statistics`). A plot shows the mean evaluation curves with 95% bands.

Runs are independent processes (spawned, one torch/TF thread each), at most `--jobs` at once,
ordered by seed so that both libraries progress together on a shared machine. Every finished
run is appended to `<out>.runs.jsonl` at once, so a cut-off study keeps its runs; `--merge`
recomputes the tables and plot from the JSON results of earlier studies (e.g. PyTorch runs on
one machine and TF runs on another) without training.

A variant changes rlgraph's side only (`VARIANTS`): "baseline" is rlgraph with SB3's
hyperparameters, as in `dqn-sb3`; the others change one factor each, for the factor study of
docs/performance.md ("Learning quality"). `--set key.path=value` changes every rlgraph run.

    rlgraph benchmark learning --algo dqn --seeds 1..20 --backends pytorch tf
    rlgraph benchmark learning --algo dqn --seeds 1..20 --variants baseline torch-init adam-eps-1e-7
    rlgraph benchmark learning --merge runs-a.json runs-b.json --out all.json
    rlgraph benchmark learning --quick

This module runs the study and reports it; the algorithms and variants are in
`learning_variants.py`, one run (training and evaluation, in a child process) in `learning_runs.py`.
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from rlgraph.benchmarks import rl_statistics as stats
from rlgraph.benchmarks.common import format_table, make_parser, write_results
from rlgraph.benchmarks.learning_runs import EVAL_SEED_BASE, greedy_returns, rlgraph_study_config, run_job
from rlgraph.benchmarks.learning_variants import ALGOS, QUICK, SB3, VARIANTS, StudyAlgo
from rlgraph.utils.cpus import usable_cpus
from rlgraph.utils.rlgraph_errors import RLGraphError

# The study's names, wherever they live now (`rlgraph.benchmarks.learning.VARIANTS`, ...).
__all__ = ["NAME", "SB3", "EVAL_SEED_BASE", "BOOTSTRAP_REPS", "StudyAlgo", "ALGOS", "QUICK", "VARIANTS",
           "parse_seeds", "greedy_returns", "rlgraph_study_config", "run_job", "make_jobs", "run_jobs",
           "trim_log", "read_runs", "group_name", "group_runs", "group_curves", "summarize", "report", "main"]

NAME = "learning"
BOOTSTRAP_REPS = 2000


def parse_seeds(tokens: Sequence[str], where: str = "rlgraph benchmark learning --seeds") -> List[int]:
    """Seeds from tokens such as "1..20", "3" (an inclusive range or one seed each); `where` names
    the option in errors."""
    seeds: List[int] = []
    for token in tokens:
        text = str(token)
        try:
            if ".." in text:
                low, high = (int(part) for part in text.split("..", 1))
                if high < low:
                    raise ValueError
                seeds.extend(range(low, high + 1))
            else:
                seeds.append(int(text))
        except ValueError:
            raise RLGraphError("a seed must be an integer or an inclusive range LOW..HIGH",
                               where=where, received=text) from None
    if any(seed < 0 for seed in seeds) or len(set(seeds)) != len(seeds):
        raise RLGraphError("seeds must be distinct integers >= 0", where=where, received=seeds)
    return seeds


# --- The study ----------------------------------------------------------------------------------
def make_jobs(args: argparse.Namespace, hp: Dict[str, Any]) -> List[dict]:
    """One job per (seed, contender), seed-major so that all contenders progress together."""
    contenders = [(f"rlgraph-{backend}", variant) for variant in args.variants for backend in args.backends]
    if args.peer == SB3:
        contenders.append((SB3, "-"))
    jobs = []
    for index, seed in enumerate(args.seeds):
        order = contenders if index % 2 == 0 else contenders[::-1]
        for library, variant in order:
            jobs.append({"algo": args.algo, "library": library, "variant": variant, "seed": seed,
                         "steps": args.steps, "eval_interval": args.eval_interval,
                         "eval_episodes": args.eval_episodes, "hyperparameters": hp,
                         "overrides": list(args.set) if library != SB3 else []})
    return jobs


def run_jobs(jobs: List[dict], num_jobs: int, log_path: Optional[str], run: Callable[[dict], dict] = run_job,
             label: Callable[[dict], str] = lambda r: f"{r['library']:<15} {r['variant']:<14}",
             failures: Optional[List[dict]] = None, initializer: Optional[Callable[[], None]] = None) -> List[dict]:
    """Runs `run(job)` for each of `jobs` in `num_jobs` spawned processes; appends each finished run's
    record to `log_path` (JSON lines) at once and prints a line for it, starting with `label(record)`.

    Args:
        jobs: The jobs (picklable dicts).
        num_jobs: Processes at once.
        log_path: The JSON-lines log (None: none).
        run: One job -> its record (a module-level function: it is pickled into the processes).
        label: A record -> the start of its printed line.
        failures: Where a failed run goes as its job plus "error" (never into the log, so a resumed
            study runs it again); None: a failed run raises.
        initializer: Runs once in each process before its first job (module-level, e.g. imports
            that no run's time should include).

    Returns:
        The records of the finished runs, in the order they finished.
    """
    runs: List[dict] = []
    if log_path:
        trim_log(log_path)
    log = open(log_path, "a") if log_path else None
    try:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=num_jobs, mp_context=context, initializer=initializer) as pool:
            futures = {pool.submit(run, job): job for job in jobs}
            for future in as_completed(futures):
                try:
                    record = future.result()
                except Exception as error:  # noqa: BLE001 - one failed run is reported, the study goes on
                    if failures is None:
                        raise
                    failures.append(dict(futures[future], error=f"{type(error).__name__}: {error}"))
                    print(f"{label(futures[future])} seed {futures[future]['seed']:>3}: FAILED {failures[-1]['error']}",
                          flush=True)
                    continue
                runs.append(record)
                if log:
                    log.write(json.dumps(record) + "\n")
                    log.flush()
                print(f"{label(record)} seed {record['seed']:>3}: final {record['final_return']:8.1f}"
                      f"  auc {record['auc']:8.1f}  to threshold {record['steps_to_threshold']}  "
                      f"train {record['train_s']:6.1f} s", flush=True)
    finally:
        if log:
            log.close()
    return runs


def trim_log(path: str) -> None:
    """Drops a cut-off last line of the runs log `path` (a study stopped while writing it), so
    that the next record appended starts a line of its own; that run is run again."""
    if not os.path.exists(path):
        return
    with open(path, "rb+") as handle:
        text = handle.read()
        if text and not text.endswith(b"\n"):
            handle.truncate(text.rfind(b"\n") + 1)
            print(f"{path}: dropped its cut-off last line (that run will run again)")


def read_runs(paths: Sequence[str], where: str) -> List[dict]:
    """The run records in JSON results files (their "runs") and `.runs.jsonl` logs.

    A log line that does not parse (the last one of a study cut off while writing) is skipped
    with a note; `where` names the option in errors.
    """
    runs: List[dict] = []
    for path in paths:
        try:
            with open(path) as handle:
                if not path.endswith(".jsonl"):
                    runs.extend(json.load(handle)["runs"])
                    continue
                for number, line in enumerate(handle, 1):
                    if not line.strip():
                        continue
                    try:
                        runs.append(json.loads(line))
                    except json.JSONDecodeError:
                        print(f"{path}:{number}: skipped a line that is no JSON (a run cut off while written?)")
        except (OSError, ValueError, KeyError) as error:
            raise RLGraphError(f"cannot read runs from {path!r} ({type(error).__name__}: {error})", where=where,
                               expected="a results .json with \"runs\" or a .runs.jsonl log") from None
    return runs


def group_name(run: dict) -> str:
    return SB3 if run["library"] == SB3 else f"{run['library']}/{run['variant']}"


def group_runs(runs: List[dict], group: Callable[[dict], str] = group_name) -> Dict[str, List[dict]]:
    """{group(run): its runs by seed}, the groups in the order of their first run by seed."""
    groups: Dict[str, List[dict]] = {}
    for run in sorted(runs, key=lambda r: r["seed"]):
        groups.setdefault(group(run), []).append(run)
    return groups


def summarize(runs: List[dict], threshold: Optional[float], reps: int = BOOTSTRAP_REPS,
              group: Callable[[dict], str] = group_name) -> Dict[str, dict]:
    """Per group (`group(run)`: "rlgraph-pytorch/baseline", "sb3"): IQM and 95% bootstrap CI of the
    final return and the AUC, median steps to the threshold, the fraction of runs reaching it, the
    training steps/s and the median seconds per run (train_s: building and training, evaluations
    excluded); each other group adds its probability of improvement over SB3 (final return,
    AUC)."""
    groups = group_runs(runs, group)
    summary: Dict[str, dict] = {}
    for name, mine in groups.items():
        entry: Dict[str, Any] = {"runs": len(mine), "seeds": [r["seed"] for r in mine]}
        for key in ("final_return", "auc"):
            values = np.array([r[key] for r in mine], dtype=np.float64)
            point, low, high = stats.stratified_bootstrap_ci(values, stats.iqm, reps=reps, seed=0)
            entry[key] = {"iqm": point, "ci": [low, high], "mean": float(values.mean())}
        reached = [r["steps_to_threshold"] for r in mine if r["steps_to_threshold"] is not None]
        entry["reached_threshold"] = len(reached) / len(mine)
        entry["median_steps_to_threshold"] = float(np.median(reached)) if reached else None
        entry["train_steps_per_s"] = float(np.mean([r["env_steps"] / r["train_s"] for r in mine]))
        entry["median_train_s"] = float(np.median([r["train_s"] for r in mine]))
        summary[name] = entry
    if SB3 in groups:
        for name, mine in groups.items():
            if name == SB3:
                continue
            for key in ("final_return", "auc"):
                x = np.array([r[key] for r in mine], dtype=np.float64)
                y = np.array([r[key] for r in groups[SB3]], dtype=np.float64)
                point, low, high = stats.probability_of_improvement_ci(x, y, reps=reps, seed=0)
                summary[name][key]["p_improvement_vs_sb3"] = {"p": point, "ci": [low, high]}
    return summary


def report(result: dict, out: Optional[str]) -> dict:
    """Prints the summary table, writes the JSON results and the curve plot next to them."""
    summary, algo = result["summary"], ALGOS[result["algo"]]

    def ci(entry: dict) -> str:
        return f"{entry['iqm']:.1f} [{entry['ci'][0]:.1f}, {entry['ci'][1]:.1f}]"

    def poi(entry: dict) -> str:
        p = entry.get("p_improvement_vs_sb3")
        return "-" if p is None else f"{p['p']:.2f} [{p['ci'][0]:.2f}, {p['ci'][1]:.2f}]"

    print()
    print(f"{result['algo']} on {algo.env_id}: {result['steps']} steps per run, evaluation every "
          f"{result['eval_interval']} steps ({result['eval_episodes']} episodes); IQM [95% stratified-bootstrap CI]")
    print(format_table(
        ["contender", "runs", "final return IQM", "P(> SB3) final", "AUC IQM", "P(> SB3) AUC",
         f"reached {algo.threshold:g}", "median steps to it", "train steps/s"],
        [[name, s["runs"], ci(s["final_return"]), poi(s["final_return"]), ci(s["auc"]), poi(s["auc"]),
          f"{s['reached_threshold']:.0%}", s["median_steps_to_threshold"] or "-", s["train_steps_per_s"]]
         for name, s in summary.items()]))
    path = write_results(result, out)
    if path:
        plot = os.path.splitext(path)[0] + ".png"
        stats.plot_curves_with_ci(group_curves(result["runs"]), plot,
                                  title=f"{result['algo']} on {algo.env_id}: mean greedy return, 95% CI",
                                  threshold=algo.threshold)
        result["plot"] = plot
        print(f"wrote {path} and {plot}")
    return result


def group_curves(runs: List[dict], group: Callable[[dict], str] = group_name
                 ) -> Dict[str, Tuple[np.ndarray, np.ndarray]]:
    """{group: (steps [points], evaluation curves [runs, points])} of `runs`, for `plot_curves_with_ci`."""
    groups = group_runs(runs, group)
    curves = {}
    for name, mine in groups.items():
        grid = _common_grid(mine)
        curves[name] = (grid, np.array([_on_grid(r["curve"], grid) for r in mine]))
    return curves


def _common_grid(runs: List[dict]) -> np.ndarray:
    """The evaluation steps all runs share (rounded to the interval: SB3's vector envs overshoot)."""
    return np.array(sorted(set.intersection(*(set(s for s, _ in r["curve"]) for r in runs))) or
                    [s for s, _ in runs[0]["curve"]])


def _on_grid(curve: List[Tuple[int, float]], grid: np.ndarray) -> np.ndarray:
    steps, returns = zip(*curve)
    return np.interp(grid, steps, returns)


def main(argv: Optional[List[str]] = None) -> dict:
    parser = make_parser(NAME, __doc__.split("\n\n")[0])
    parser.add_argument("--algo", choices=sorted(ALGOS), default="dqn", help="algorithm (default: %(default)s)")
    parser.add_argument("--seeds", nargs="+", default=["1..20"], help="seeds: numbers or LOW..HIGH (default: 1..20)")
    parser.add_argument("--backends", nargs="+", choices=["pytorch", "tf"], default=["pytorch"],
                        help="rlgraph backends (default: %(default)s)")
    parser.add_argument("--variants", nargs="+", default=["baseline"],
                        help="rlgraph variants (default: baseline; see VARIANTS)")
    parser.add_argument("--peer", choices=[SB3, "none"], default=SB3, help="the peer library (default: sb3)")
    parser.add_argument("--steps", type=int, help="env steps per run (default: the algorithm's)")
    parser.add_argument("--eval-interval", type=int, help="env steps between evaluations (default: the algorithm's)")
    parser.add_argument("--eval-episodes", type=int, default=10, help="greedy episodes per evaluation (default: 10)")
    parser.add_argument("--jobs", type=int, default=usable_cpus(), help="runs at once (default: the usable CPUs)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE",
                        help="override a value of every rlgraph run's config")
    parser.add_argument("--merge", nargs="+", metavar="JSON", help="summarize the runs of earlier results; no training")
    args = parser.parse_args(argv)
    if args.merge:
        return _merge(args)
    algo = ALGOS[args.algo]
    unknown = sorted(set(args.variants) - set(VARIANTS[args.algo]))
    if unknown:
        raise RLGraphError(f"unknown variant(s) {unknown}", where="rlgraph benchmark learning --variants",
                           expected=sorted(VARIANTS[args.algo]), received=args.variants)
    hp = dict(__import__(algo.module, fromlist=["HYPERPARAMETERS"]).HYPERPARAMETERS)
    args.seeds = parse_seeds(args.seeds)
    args.steps = args.steps or algo.steps
    args.eval_interval = args.eval_interval or algo.eval_interval
    if args.quick:
        hp.update(QUICK["hyperparameters"].get(args.algo, {}))
        args.steps, args.eval_interval = QUICK["steps"], QUICK["eval_interval"]
        args.eval_episodes, args.seeds = QUICK["eval_episodes"], QUICK["seeds"]
    for name in ("steps", "eval_interval", "eval_episodes", "jobs"):
        if getattr(args, name) < 1:
            raise RLGraphError("must be >= 1", where=f"rlgraph benchmark learning --{name.replace('_', '-')}",
                               received=getattr(args, name))
    if args.peer == SB3:
        from rlgraph.benchmarks.sb3_peer import require_sb3
        require_sb3(NAME)
    jobs = make_jobs(args, hp)
    log_path = os.path.splitext(args.out)[0] + ".runs.jsonl" if args.out else None
    if log_path:
        os.makedirs(os.path.dirname(log_path) or ".", exist_ok=True)
    print(f"{len(jobs)} runs ({len(args.seeds)} seeds), {min(args.jobs, len(jobs))} at a time; runs go to {log_path}",
          flush=True)
    start = time.perf_counter()
    runs = run_jobs(jobs, min(args.jobs, len(jobs)), log_path)
    result = {"benchmark": NAME, "algo": args.algo, "env": algo.env_id, "steps": args.steps,
              "eval_interval": args.eval_interval, "eval_episodes": args.eval_episodes, "seeds": args.seeds,
              "backends": args.backends, "variants": {v: VARIANTS[args.algo][v][0] for v in args.variants},
              "peer": args.peer, "overrides": args.set, "quick": args.quick, "hyperparameters": hp,
              "wall_s": time.perf_counter() - start, "runs": sorted(runs, key=lambda r: (r["seed"], group_name(r)))}
    result["summary"] = summarize(result["runs"], algo.threshold)
    return report(result, args.out)


def _merge(args: argparse.Namespace) -> dict:
    """The summary of the runs in earlier results files (.json results or .runs.jsonl logs)."""
    runs = read_runs(args.merge, "rlgraph benchmark learning --merge")
    if not runs:
        raise RLGraphError("no runs in the files", where="rlgraph benchmark learning --merge", received=args.merge)
    algos = {r["algo"] for r in runs}
    settings = {(r["steps"], r["eval_interval"], r["eval_episodes"]) for r in runs}
    if len(algos) != 1 or len(settings) != 1:
        raise RLGraphError("the runs differ in algorithm or run settings", where="rlgraph benchmark learning --merge",
                           expected="one algorithm, steps, eval interval and episodes",
                           received={"algos": sorted(algos), "settings": sorted(settings)})
    (algo,), ((steps, interval, episodes),) = algos, settings
    # A run repeated in several files counts once (the last one read).
    unique = {(r["library"], r["variant"], r["seed"]): r for r in runs}
    runs = sorted(unique.values(), key=lambda r: (r["seed"], group_name(r)))
    result = {"benchmark": NAME, "algo": algo, "env": ALGOS[algo].env_id, "steps": steps, "eval_interval": interval,
              "eval_episodes": episodes, "merged_from": list(args.merge), "runs": runs}
    result["summary"] = summarize(runs, ALGOS[algo].threshold)
    return report(result, args.out)


if __name__ == "__main__":
    main()
