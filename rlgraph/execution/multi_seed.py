"""`rlgraph train CONFIG --seeds 1 2 3`: one training run per seed, as parallel processes, and their statistics.

`train_seeds` writes into the run directory RUN:

- config.json: the resolved config every seed trains (without a seed);
- seed-S/: the run of `rlgraph train RUN/config.json --seed S --output-dir RUN/seed-S --no-progress`
  (its usual files, plus its stdout.log and stderr.log: these are RUN/seed-S.stdout.log and
  RUN/seed-S.stderr.log while it runs, since `rlgraph train` wants a new or empty directory);
- summary.csv: one row per seed (`SUMMARY_FIELDS`); summary.json: the same rows and the mean and
  95% confidence interval of each column across the seeds that finished;
- seeds_curve.png and seeds_curve.csv: the evaluation curves (each seed's evaluations.csv) as their
  mean and 95% band across seeds, on the union of the seeds' evaluation steps. A seed that stopped
  early (it reached stop_at_return) keeps its last evaluation from there on (`np.interp`).

The intervals are Student's t intervals, mean +- t(0.975, n - 1) * s / sqrt(n) with s the sample
standard deviation (ddof=1): with the 2 to 10 seeds a run has, a percentile bootstrap covers far
less than 95% (for 2 seeds it can never be wider than the two values). One seed has no interval.

Each process gets 1 PyTorch and 1 TensorFlow thread unless the config's execution_spec sets them.
The processes run in their own sessions: Ctrl-C (SIGINT) or SIGTERM reaches `rlgraph train`, which
forwards it to the running seeds (each stops as a lone run would), starts no more, and waits for them.

>>> mean, half_width = mean_ci([1.0, 2.0, 3.0])  # s = 1, t(0.975, 2) = 4.302653
>>> round(mean, 6), round(half_width, 6)
(2.0, 2.484138)
"""
from __future__ import annotations

import copy
import csv
import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from rlgraph.agents.specs import check_seed
from rlgraph.utils.cpus import usable_cpus
from rlgraph.utils.module_imports import trust_spec_modules
from rlgraph.utils.rlgraph_errors import RLGraphError

SUMMARY_FIELDS = ("seed", "exit_status", "final_return", "best_return", "steps", "solved_at", "wall_time_s")
# The columns averaged across seeds (solved_at: over the seeds that reached stop_at_return).
AGGREGATED = ("final_return", "best_return", "steps", "solved_at", "wall_time_s")
# t(0.975, df) for df = 1..30 (scipy.stats.t.ppf); beyond, the expansion of `t_quantile_975`.
T_975 = (12.706205, 4.302653, 3.182446, 2.776445, 2.570582, 2.446912, 2.364624, 2.306004, 2.262157, 2.228139,
         2.200985, 2.178813, 2.160369, 2.144787, 2.13145, 2.119905, 2.109816, 2.100922, 2.093024, 2.085963,
         2.079614, 2.073873, 2.068658, 2.063899, 2.059539, 2.055529, 2.051831, 2.048407, 2.04523, 2.042272)
Z_975 = 1.959963984540054
STDERR_TAIL_LINES = 20
INTERRUPTED = 130  # The exit status of a run stopped by Ctrl-C (128 + SIGINT), as shells report it.


def t_quantile_975(df: int) -> float:
    """The 97.5% quantile of Student's t with `df` >= 1 degrees of freedom: a table up to 30, then the
    Cornish-Fisher expansion of Abramowitz & Stegun 26.7.5 (off by < 3e-6 there)."""
    if df <= len(T_975):
        return T_975[df - 1]
    z = Z_975
    return (z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
            + (3 * z ** 7 + 19 * z ** 5 + 17 * z ** 3 - 15 * z) / (384 * df ** 3))


def mean_ci(values: Any, axis: int = 0) -> Tuple[Any, Any]:
    """(mean, half width of the 95% t interval) of `values` along `axis` (NaN half width for one value)."""
    values = np.asarray(values, dtype=np.float64)
    n = values.shape[axis]
    if n == 0:
        return math.nan, math.nan
    mean = values.mean(axis=axis)
    if n == 1:
        half_width = np.full_like(mean, math.nan)
    else:
        half_width = t_quantile_975(n - 1) * values.std(axis=axis, ddof=1) / math.sqrt(n)
    return (float(mean), float(half_width)) if np.ndim(mean) == 0 else (mean, half_width)


def child_command(config_path: str, seed: int, output_dir: str, ray_address: Optional[str] = None) -> List[str]:
    """The `rlgraph train` command line of one seed (run with this python)."""
    command = [sys.executable, "-m", "rlgraph.cli.main", "train", config_path, "--seed", str(seed),
               "--output-dir", output_dir, "--no-progress"]
    return command + (["--ray-address", ray_address] if ray_address else [])


def train_seeds(config: dict, seeds: Sequence[int], run_dir: str, jobs: Optional[int] = None,
                ray_address: Optional[str] = None, command: Callable[[str, int, str], List[str]] = None,
                echo: Callable[[str], None] = print) -> int:
    """Trains resolved `config` once per seed in parallel processes; see the module docstring.

    Args:
        config: A config as `training.resolve_config` returns it.
        seeds: Distinct seeds in [0, 2**32 - 1].
        run_dir: The run directory (created).
        jobs: Processes at once (default: min(len(seeds), the usable CPUs: `rlgraph.utils.cpus`)).
        ray_address: Passed on to each seed (`--ray-address`).
        command: (config path, seed, seed directory) -> argv of one seed (default: `child_command`).
        echo: Prints a line of the report.

    Returns:
        The exit status: 0 when every seed finished, 130 after Ctrl-C, else 1.

    Raises:
        RLGraphError: For duplicate or invalid seeds, `jobs` < 1, or a `run_dir` that holds files.
        RLGraphRunDirLockedError: While another run holds `run_dir` (`run_lock.py`).
    """
    seeds = [check_seed(seed, "--seeds", "rlgraph train", allow_none=False) for seed in seeds]
    if not seeds or len(set(seeds)) != len(seeds):
        raise RLGraphError("the seeds must be distinct", where="rlgraph train --seeds", expected="one or more seeds",
                           received=" ".join(map(str, seeds)) or "none")
    jobs = min(len(seeds), usable_cpus()) if jobs is None else jobs
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise RLGraphError("at least one job is needed", where="rlgraph train --jobs", expected="an int >= 1",
                           received=repr(jobs))
    config = copy.deepcopy(config)
    execution = config.setdefault("execution_spec", {})
    execution.pop("seed", None)
    for key in ("torch_num_threads", "tf_num_threads"):
        if execution.get(key) is None:
            execution[key] = 1
    from rlgraph.execution.run_lock import lock_run_dir
    from rlgraph.execution.run_state import is_empty_run_dir
    where = "rlgraph train --seeds --output-dir"
    with lock_run_dir(run_dir, where):  # Held while the seeds run: one `--seeds` run per directory.
        if not is_empty_run_dir(run_dir):
            raise RLGraphError("the output directory is not empty (it holds another run)", where=where,
                               expected="a new or empty directory", received=run_dir,
                               hint="choose another --output-dir.")
        return _train_seeds(config, seeds, run_dir, jobs, ray_address, command, echo)


def _train_seeds(config: dict, seeds: List[int], run_dir: str, jobs: int, ray_address: Optional[str],
                 command: Optional[Callable[[str, int, str], List[str]]], echo: Callable[[str], None]) -> int:
    """`train_seeds` in its locked, empty `run_dir`."""
    from rlgraph.utils.run_logs import write_atomically
    config_path = os.path.abspath(os.path.join(run_dir, "config.json"))
    write_atomically(config_path, lambda handle: json.dump(config, handle, indent=2, default=str))
    command = command or (lambda path, seed, out: child_command(path, seed, out, ray_address))
    echo(f"rlgraph train: {len(seeds)} seeds, {jobs} at a time, into {run_dir}")
    trust_spec_modules(config)  # (The seeds' processes may import the modules of its types that are imported here.)
    statuses, interrupted = _run_processes(
        seeds, jobs, lambda seed: command(config_path, seed, _seed_dir(run_dir, seed)),
        lambda seed: _seed_dir(run_dir, seed), echo)
    rows = [_seed_row(run_dir, seed, *statuses.get(seed, (None, None))) for seed in seeds]
    _report(run_dir, rows, config, echo)
    if interrupted:
        return INTERRUPTED
    return 0 if all(row["exit_status"] == 0 for row in rows) else 1


def _seed_dir(run_dir: str, seed: int) -> str:
    return os.path.join(run_dir, f"seed-{seed}")


def _run_processes(seeds: List[int], jobs: int, argv: Callable[[int], List[str]], directory: Callable[[int], str],
                   echo: Callable[[str], None]) -> Tuple[Dict[int, Tuple[int, float]], bool]:
    """Runs `argv(seed)` for each seed, `jobs` at a time, with stdout/stderr in `directory(seed)`;
    returns ({seed: (exit status, wall time)}, whether it was interrupted)."""
    pending, running, finished = list(seeds), {}, {}
    state = {"interrupted": False}

    def forward(signum, _frame):
        state["interrupted"] = True
        echo(f"rlgraph train: {signal.Signals(signum).name}: passed on to {len(running)} running seeds, "
             f"{len(pending)} not started")
        for process, _ in running.values():
            _signal_group(process, signum)

    handlers = {}
    if threading.current_thread() is threading.main_thread():
        handlers = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        while running or (pending and not state["interrupted"]):
            while pending and len(running) < jobs and not state["interrupted"]:
                seed = pending.pop(0)
                with open(f"{directory(seed)}.stdout.log", "w") as out, \
                        open(f"{directory(seed)}.stderr.log", "w") as err:
                    running[seed] = (subprocess.Popen(argv(seed), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                                      start_new_session=True), time.perf_counter())
                echo(f"seed {seed}: started (pid {running[seed][0].pid})")
            for seed, (process, start) in list(running.items()):
                if process.poll() is not None:
                    del running[seed]
                    finished[seed] = (process.returncode, time.perf_counter() - start)
                    os.makedirs(directory(seed), exist_ok=True)  # (A seed that failed at once made none.)
                    for name in ("stdout.log", "stderr.log"):
                        os.replace(f"{directory(seed)}.{name}", os.path.join(directory(seed), name))
                    echo(f"seed {seed}: {'done' if process.returncode == 0 else f'exit status {process.returncode}'} "
                         f"after {finished[seed][1]:.1f} s")
            time.sleep(0.05)
    except BaseException:  # (A process that cannot start, say.) No seed is left running unseen.
        for process, _ in running.values():
            _signal_group(process, signal.SIGTERM)
        raise
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    return finished, state["interrupted"]


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    """Sends `signum` to the process group of `process` (its session: it and what it started)."""
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _seed_row(run_dir: str, seed: int, exit_status: Optional[int], wall_time: Optional[float]) -> Dict[str, Any]:
    """A summary.csv row: final/best from the seed's evaluations.csv, steps and solved_at from its
    summary.json (written by `rlgraph train`); None where the seed did not get that far."""
    row = dict.fromkeys(SUMMARY_FIELDS)
    row.update(seed=seed, exit_status=exit_status, wall_time_s=wall_time)
    returns = _evaluations(run_dir, seed)[1]
    if len(returns):
        row.update(final_return=float(returns[-1]), best_return=float(np.max(returns)))
    summary_path = os.path.join(_seed_dir(run_dir, seed), "summary.json")
    if exit_status == 0 and os.path.isfile(summary_path):
        with open(summary_path) as handle:
            summary = json.load(handle)
        row.update(steps=summary.get("timesteps"), solved_at=summary.get("solved_at_step"))
    return row


def _evaluations(run_dir: str, seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """(steps, mean returns) of a seed's evaluations.csv (empty if it has none)."""
    from rlgraph.utils.run_logs import read_csv
    path = os.path.join(_seed_dir(run_dir, seed), "evaluations.csv")
    if not os.path.isfile(path):
        return np.zeros(0), np.zeros(0)
    columns = read_csv(path)
    return (np.asarray(columns.get("step", []), dtype=np.float64),
            np.asarray(columns.get("mean_return", []), dtype=np.float64))


def seed_curves(run_dir: str, seeds: Sequence[int]) -> Tuple[np.ndarray, np.ndarray]:
    """(grid [points], curves [seeds with evaluations, points]): the union of the seeds' evaluation
    steps, and each seed's evaluation returns on it (held constant beyond its own first and last)."""
    curves = [_evaluations(run_dir, seed) for seed in seeds]
    curves = [(steps, returns) for steps, returns in curves if len(steps)]
    if not curves:
        return np.zeros(0), np.zeros((0, 0))
    grid = np.unique(np.concatenate([steps for steps, _ in curves]))
    return grid, np.stack([np.interp(grid, steps, returns) for steps, returns in curves])


def _report(run_dir: str, rows: List[Dict[str, Any]], config: dict, echo: Callable[[str], None]) -> None:
    """Writes summary.csv/.json and the curve files (each atomically), and prints the table and the
    failed seeds."""
    from rlgraph.utils.run_logs import write_atomically

    def summary_csv(handle):
        writer = csv.DictWriter(handle, fieldnames=SUMMARY_FIELDS)
        writer.writeheader()
        writer.writerows({key: "" if value is None else value for key, value in row.items()} for row in rows)
    write_atomically(os.path.join(run_dir, "summary.csv"), summary_csv, newline="")
    done = [row for row in rows if row["exit_status"] == 0]
    aggregate = {}
    for key in AGGREGATED:
        values = [row[key] for row in done if row[key] is not None]
        mean, half_width = mean_ci(values)
        aggregate[key] = {"mean": _number(mean), "ci95": _number(half_width), "n": len(values)}
    write_atomically(os.path.join(run_dir, "summary.json"), lambda handle: json.dump(
        {"seeds": rows, "aggregate": aggregate, "interval": "95% Student's t, mean +- t * s / sqrt(n)"}, handle,
        indent=2))
    echo(_table(rows))
    if done:
        echo(f"across {len(done)} finished seeds (mean ± 95% CI, Student's t): " + ", ".join(
            f"{key} {_text(aggregate[key]['mean'])} ± {_text(aggregate[key]['ci95'])}"
            for key in AGGREGATED if key != "solved_at"))
    solved = aggregate["solved_at"]
    if solved["n"]:
        echo(f"reached stop_at_return: {solved['n']} of {len(done)} seeds, at step {_text(solved['mean'])} "
             f"± {_text(solved['ci95'])}")
    grid, curves = seed_curves(run_dir, [row["seed"] for row in done])
    if len(grid):
        _write_curve(run_dir, grid, curves, config, echo)
    for row in rows:
        if row["exit_status"] not in (0, None):
            _report_failure(run_dir, row)


def _write_curve(run_dir: str, grid: np.ndarray, curves: np.ndarray, config: dict, echo) -> None:
    from rlgraph.utils.run_logs import write_atomically
    mean, half_width = mean_ci(curves)

    def curve_csv(handle):
        writer = csv.writer(handle)
        writer.writerow(["step", "mean_return", "ci95", "seeds"])
        writer.writerows([int(s), float(m), "" if math.isnan(h) else float(h), len(curves)]
                         for s, m, h in zip(grid, np.atleast_1d(mean), np.atleast_1d(half_width)))
    write_atomically(os.path.join(run_dir, "seeds_curve.csv"), curve_csv, newline="")
    from rlgraph.execution.env_ids import env_id
    env = config.get("environment_spec")
    env_name = env_id(env) or (env.get("type") if isinstance(env, dict) else None) or "its environment"
    title = (f"{config.get('type', 'agent')} on {env_name}: "
             f"mean evaluation return of {len(curves)} seeds ± 95% CI")
    path = plot_seed_curves(grid, curves, os.path.join(run_dir, "seeds_curve.png"), title)
    echo(f"evaluation curves: {path}")


def plot_seed_curves(grid: np.ndarray, curves: np.ndarray, path: str, title: str) -> str:
    """Plots each seed's curve (thin) and their mean with its 95% t band into PNG file `path`."""
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise RLGraphError("plotting needs matplotlib, which is not installed", where="plot_seed_curves",
                           hint="install it with `pip install matplotlib`.") from error
    mean, half_width = mean_ci(curves)
    figure = Figure(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    for curve in curves:
        axes.plot(grid, curve, color="tab:blue", alpha=0.3, linewidth=1)
    axes.plot(grid, mean, color="tab:blue", linewidth=2, label=f"mean of {len(curves)} seeds")
    if len(curves) > 1:
        axes.fill_between(grid, mean - half_width, mean + half_width, color="tab:blue", alpha=0.2,
                          label="95% CI (Student's t)")
    axes.set_xlabel("environment steps")
    axes.set_ylabel("mean evaluation return")
    axes.set_title(title, fontsize=10)
    axes.legend(loc="best")
    axes.grid(alpha=0.3)
    from rlgraph.utils.run_logs import save_figure
    return save_figure(figure, path)


def _report_failure(run_dir: str, row: Dict[str, Any]) -> None:
    """Prints a failed seed's exit status and the end of its stderr.log to stderr."""
    path = os.path.join(_seed_dir(run_dir, row["seed"]), "stderr.log")
    try:
        with open(path, errors="replace") as handle:
            tail = handle.read().splitlines()[-STDERR_TAIL_LINES:]
    except OSError:
        tail = ["(no stderr.log)"]
    text = "\n".join("    " + line for line in tail) or "    (empty)"
    what = "was stopped" if row["exit_status"] == INTERRUPTED else "failed"
    print(f"rlgraph train: seed {row['seed']} {what} (exit status {row['exit_status']}); the end of {path}:\n"
          f"{text}", file=sys.stderr)


def _table(rows: List[Dict[str, Any]]) -> str:
    lines = [[key for key in SUMMARY_FIELDS]]
    for row in rows:
        status = "not run" if row["exit_status"] is None else "ok" if row["exit_status"] == 0 else \
            f"exit {row['exit_status']}"
        lines.append([str(row["seed"]), status] + [_text(row[key]) for key in SUMMARY_FIELDS[2:]])
    widths = [max(len(line[i]) for line in lines) for i in range(len(SUMMARY_FIELDS))]
    return "\n".join("  ".join(cell.rjust(width) for cell, width in zip(line, widths)) for line in lines)


def _number(value: Any) -> Optional[float]:
    return None if value is None or math.isnan(float(value)) else float(value)


def _text(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.1f}"
    return str(int(value)) if isinstance(value, (int, float)) else str(value)
