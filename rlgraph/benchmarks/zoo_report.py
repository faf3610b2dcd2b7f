"""The report of `rlgraph benchmark zoo`: per-pair statistics, the table, the plots and the docs section.

The statistics are the learning study's (`learning.summarize`, grouped by library within each
pair): the IQM of the final return with its stratified-bootstrap 95% CI, the probability of
improvement over SB3 with its interval, and the median seconds per run.
"""
from __future__ import annotations

import importlib.util
import os
import textwrap
import time
from typing import Dict, List, Optional, Sequence

from rlgraph.benchmarks import rl_statistics as stats
from rlgraph.benchmarks.common import format_table, write_results
from rlgraph.benchmarks.learning import BOOTSTRAP_REPS, group_curves, group_runs, summarize
from rlgraph.benchmarks.learning_variants import SB3
from rlgraph.benchmarks.zoo_table import ZOO_PAIRS
from rlgraph.utils.rlgraph_errors import RLGraphError

#: The markers of the section `write_docs` replaces in performance.md.
START, END = "<!-- zoo-table:start -->", "<!-- zoo-table:end -->"
ZOO_URL = "https://github.com/DLR-RM/rl-baselines3-zoo"
HEADERS = ("pair", "budget", "zoo score", "SB3 IQM [95% CI]", "rlgraph", "rlgraph IQM [95% CI]",
           "P(rlgraph > SB3) [95% CI]", "SB3 s/run", "rlgraph s/run", "runs (rlgraph/SB3)")


def summarize_pairs(runs: List[dict], reps: int = BOOTSTRAP_REPS) -> Dict[str, dict]:
    """Per pair, in the table's order: its budget, the zoo's published score, the env's threshold
    and `learning.summarize` of its runs per library ("sb3", "rlgraph-pytorch", "rlgraph-tf")."""
    by_pair = group_runs(runs, group=lambda run: run["pair"])
    summary = {}
    for pair in ZOO_PAIRS:
        mine = by_pair.get(pair.name)
        if not mine:
            continue
        summary[pair.name] = {
            "algo": pair.algo, "env": pair.env_id, "zoo_env_id": pair.zoo_env_id or pair.env_id,
            "steps": mine[0]["steps"], "zoo_steps": pair.steps, "threshold": mine[0]["threshold"],
            "published": {"mean": pair.published[0], "std": pair.published[1]},
            "libraries": summarize(mine, mine[0]["threshold"], reps, group=lambda run: run["library"])}
    return summary


def table_rows(summary: Dict[str, dict]) -> List[List[str]]:
    """One row per (pair, rlgraph backend) of `HEADERS` (one row with "-" where only SB3 ran)."""
    rows = []
    for name, entry in summary.items():
        libraries = entry["libraries"]
        sb3 = libraries.get(SB3)
        for library in sorted(lib for lib in libraries if lib != SB3) or ["-"]:
            mine = libraries.get(library)
            published = entry["published"]
            rows.append([name, f"{entry['steps']:,}", f"{published['mean']:.1f} ± {published['std']:.1f}",
                         _iqm(sb3), library, _iqm(mine), _poi(mine), _seconds(sb3), _seconds(mine),
                         f"{mine['runs'] if mine else 0}/{sb3['runs'] if sb3 else 0}"])
    return rows


def _iqm(entry: Optional[dict]) -> str:
    if entry is None:
        return "-"
    final = entry["final_return"]
    return f"{final['iqm']:.1f} [{final['ci'][0]:.1f}, {final['ci'][1]:.1f}]"


def _poi(entry: Optional[dict]) -> str:
    p = entry and entry["final_return"].get("p_improvement_vs_sb3")
    return f"{p['p']:.2f} [{p['ci'][0]:.2f}, {p['ci'][1]:.2f}]" if p else "-"


def _seconds(entry: Optional[dict]) -> str:
    return "-" if entry is None else f"{entry['median_train_s']:.1f}"


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A GitHub-flavoured markdown table (cells as they are: no "|" in them)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return "\n".join(lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows])


def plot_environments(runs: List[dict], directory: str, prefix: str) -> Dict[str, str]:
    """One PNG per environment, `<directory>/<prefix>-<env id, lower case>.png`: the mean greedy
    evaluation curve of each (algorithm, library) on it with its 95% bootstrap band.

    Returns:
        {env id: path}; {} where matplotlib is not installed (a note is printed).
    """
    if importlib.util.find_spec("matplotlib") is None:
        print("no plots: they need matplotlib (`pip install matplotlib`)")
        return {}
    plots = {}
    for env, mine in group_runs(runs, group=lambda run: run["env"]).items():
        path = os.path.join(directory, f"{prefix}-{env.lower()}.png")
        curves = group_curves(mine, group=lambda run: f"{run['algo']} {run['library']}")
        plots[env] = stats.plot_curves_with_ci(dict(sorted(curves.items())), path, threshold=mine[0]["threshold"],
                                               title=f"{env}: mean greedy return over seeds, 95% bootstrap CI")
    return plots


def docs_section(summary: Dict[str, dict], runs: List[dict], images: Dict[str, str]) -> str:
    """The markdown of the zoo section: what was run, the table and the plots (`images`: {env: path
    relative to the markdown file})."""
    seeds = sorted({run["seed"] for run in runs})
    episodes = sorted({run["eval_episodes"] for run in runs})
    about = (f"Written by `rlgraph benchmark zoo` on {time.strftime('%Y-%m-%d')}: {len(runs)} runs, seeds "
             f"{', '.join(map(str, seeds))}; a run's final return is the mean of {'/'.join(map(str, episodes))} "
             f"greedy episodes after its last step. Zoo score: the mean ± std that [rl-baselines3-zoo]({ZOO_URL}) "
             "publishes (episodes of one trained agent, not an IQM over seeds). IQM [95% stratified-bootstrap CI] "
             "over seeds; P(rlgraph > SB3): the probability of improvement; s/run: median seconds of "
             "building and training per run (one thread, evaluations excluded).")
    text = [textwrap.fill(about, 100, break_long_words=False, break_on_hyphens=False), "",
            markdown_table(HEADERS, table_rows(summary))]
    for env, path in images.items():
        text += ["", f"![{env}: mean greedy return of each algorithm and library, 95% bootstrap bands]({path})"]
    return "\n".join(text)


def replace_section(path: str, body: str) -> None:
    """Writes `body` between the `START` and `END` markers of `path`, leaving the rest of the file
    as it was; a file without the markers gets them, with `body`, at its end.

    Raises:
        RLGraphError: The markers are there but not once each, start before end.
    """
    text = open(path).read() if os.path.exists(path) else ""
    block = f"{START}\n{body.strip()}\n{END}"
    begin, end = text.find(START), text.find(END)
    if begin < 0 and end < 0:
        text = text.rstrip("\n") + ("\n\n" if text.strip() else "") + block + "\n"
    elif text.count(START) == 1 and text.count(END) == 1 and begin < end:
        text = text[:begin] + block + text[end + len(END):]
    else:
        raise RLGraphError("the zoo-table markers are broken", where=f"rlgraph benchmark zoo --write-docs ({path})",
                           expected=f"one '{START}' followed by one '{END}'",
                           received=f"{text.count(START)} start and {text.count(END)} end markers",
                           hint="fix or remove the markers by hand.")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def report(result: dict, out: Optional[str], docs_dir: Optional[str] = None) -> dict:
    """Adds the summary to `result`, prints the table, writes the JSON results, the plots (next to
    the JSON, or into `docs_dir`/images) and, with `docs_dir`, the section of its performance.md."""
    runs = result["runs"]
    result["summary"] = summary = summarize_pairs(runs)
    print()
    print("rl-baselines3-zoo's table: final return, IQM [95% stratified-bootstrap CI] over seeds; "
          "s/run: median seconds of building and training")
    print(format_table(HEADERS, table_rows(summary)) if summary else "(no finished runs)")
    for failure in result.get("failed", []):
        print(f"FAILED {failure['pair']} {failure['library']} seed {failure['seed']}: {failure['error']}")
    path = write_results(result, out)
    if not runs:
        return result
    if docs_dir:
        result["plots"] = plot_environments(runs, os.path.join(docs_dir, "images"), "zoo")
        images = {env: os.path.relpath(plot, docs_dir) for env, plot in result["plots"].items()}
        result["docs"] = os.path.join(docs_dir, "performance.md")
        replace_section(result["docs"], docs_section(summary, runs, images))
    elif path:
        result["plots"] = plot_environments(runs, os.path.dirname(os.path.abspath(path)),
                                            os.path.splitext(os.path.basename(path))[0])
    print(f"wrote {', '.join([p for p in [path, result.get('docs')] if p] + list(result.get('plots', {}).values()))}")
    return result

