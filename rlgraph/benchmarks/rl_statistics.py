"""Learning-quality statistics: IQM, stratified-bootstrap CIs, probability of improvement, curve summaries.

The aggregate metrics and their intervals follow Agarwal et al., "Deep Reinforcement Learning at
the Edge of the Statistical Precipice" (NeurIPS 2021, https://arxiv.org/abs/2108.13264) and their
`rliable` library: scores are a table `[runs, tasks]` (one task, `[runs, 1]` or `[runs]`, is the
common case here), the interquartile mean is pooled over all runs and tasks, and the confidence
intervals come from a percentile bootstrap that resamples runs independently within each task.

Everything is plain numpy (matplotlib only inside `plot_curves_with_ci`). The bootstraps draw all
replicates' run indices as one `[reps, runs, tasks]` array, so 2,000 replicates of 20 runs take
milliseconds.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional, Sequence, Tuple, Union

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphError

__all__ = ["iqm", "stratified_bootstrap_ci", "probability_of_improvement", "probability_of_improvement_ci",
           "area_under_curve", "first_step_reaching", "mean_curve_ci", "plot_curves_with_ci"]

ArrayLike = Union[Sequence[float], np.ndarray]


def iqm(scores: ArrayLike, axis: Union[None, int, Tuple[int, ...]] = None) -> Union[float, np.ndarray]:
    """Interquartile mean: the mean of the middle 50% of the scores.

    Uses the trimming of `scipy.stats.trim_mean(x, 0.25)` (and so of rliable's `aggregate_iqm`):
    of n sorted values, `int(0.25 * n)` are dropped at each end, the rest are averaged.

    >>> iqm([-50, 1, 2, 3, 4, 5, 6, 100])  # drops -50, 1 and 6, 100
    3.5

    Args:
        scores: Any shape, e.g. `[runs]` or `[runs, tasks]`.
        axis: The axes pooled and trimmed; None pools all of them (rliable's IQM over runs and tasks).
            `axis=(-2, -1)` on a stack `[reps, runs, tasks]` gives one IQM per replicate.

    Returns:
        A float if every axis is pooled, else an array of the remaining axes.

    Raises:
        RLGraphError: If there are no scores, the scores contain NaN or `axis` is out of range.
    """
    x = np.asarray(scores, dtype=np.float64)
    if axis is None:
        x = x.reshape(-1)
        axes = (0,)
    else:
        requested = np.atleast_1d(axis).tolist()
        if any(not -x.ndim <= a < x.ndim for a in requested):
            raise RLGraphError("axis out of range", where="iqm(axis)", expected=f"axes of a {x.ndim}-d array",
                               received=repr(axis))
        axes = sorted({a % x.ndim for a in requested})
        kept = [a for a in range(x.ndim) if a not in axes]
        x = np.transpose(x, kept + axes).reshape([x.shape[a] for a in kept] + [-1])
    count = x.shape[-1]
    if count == 0 or np.isnan(x).any():
        raise RLGraphError("needs at least one score and no NaN", where="iqm(scores)",
                           received=f"{count} scores" if count == 0 else "NaN in the scores")
    cut = int(0.25 * count)
    middle = np.sort(x, axis=-1)[..., cut:count - cut]
    result = middle.mean(axis=-1)
    return float(result) if result.ndim == 0 else result


def stratified_bootstrap_ci(scores_by_task: ArrayLike, statistic: Callable[[np.ndarray], float], reps: int = 2000,
                            confidence: float = 0.95, seed: Optional[int] = 0,
                            vectorized: bool = False) -> Tuple[float, float, float]:
    """Point estimate and percentile-bootstrap confidence interval of `statistic`.

    Each replicate resamples the runs with replacement, independently per task (stratified by
    task, as rliable's `StratifiedBootstrap`), and applies `statistic`; the interval is the
    `(1 - confidence) / 2` and `(1 + confidence) / 2` percentiles of the replicates.

    >>> stratified_bootstrap_ci([1.0, 2.0, 3.0, 4.0], np.mean)[0]
    2.5
    >>> stratified_bootstrap_ci(np.full(5, 7.0), iqm)
    (7.0, 7.0, 7.0)

    Args:
        scores_by_task: `[runs, tasks]`, or `[runs]` for one task.
        statistic: Maps one sample of the same shape as `scores_by_task` to a number (e.g. `iqm`,
            `np.mean`). With `vectorized=True` it maps a stack `[reps, runs(, tasks)]` to `[reps]`
            instead (e.g. `lambda s: iqm(s, axis=(-2, -1))`) and is called once for all replicates.
        reps: Bootstrap replicates.
        confidence: Coverage of the interval, in (0, 1).
        seed: Seed of the run indices (None: fresh entropy).
        vectorized: Whether `statistic` takes the whole stack of replicates.

    Returns:
        `(point_estimate, low, high)`; the point estimate is `statistic(scores_by_task)`.

    Raises:
        RLGraphError: If the scores are not `[runs]` / `[runs, tasks]` with runs >= 1 and no NaN, `reps` or
            `confidence` is out of range, or `statistic` does not return one number per sample.
    """
    where = "stratified_bootstrap_ci"
    scores = np.asarray(scores_by_task, dtype=np.float64)
    table = _runs_by_tasks(scores, f"{where}(scores_by_task)")
    _check_reps_confidence(reps, confidence, where)
    runs, tasks = table.shape
    indices = np.random.default_rng(seed).integers(0, runs, size=(reps, runs, tasks))
    samples = table[indices, np.arange(tasks)].reshape((reps,) + scores.shape)
    if vectorized:
        point = np.asarray(statistic(scores[None]), dtype=np.float64).reshape(-1)
        estimates = np.asarray(statistic(samples), dtype=np.float64)
    else:
        point = np.asarray(statistic(scores), dtype=np.float64).reshape(-1)
        estimates = np.asarray([statistic(sample) for sample in samples], dtype=np.float64)
    if point.shape != (1,) or estimates.shape != (reps,):
        raise RLGraphError("the statistic must return one number per sample", where=f"{where}(statistic)",
                           expected=f"shape [{reps}] for the {reps} replicates",
                           received=f"shape {list(estimates.shape)}",
                           hint="with vectorized=True reduce only the trailing runs/tasks axes, e.g. "
                                "`lambda s: iqm(s, axis=(-2, -1))`." if vectorized else
                           "return a number, or pass vectorized=True for a statistic of the whole stack.")
    low, high = _percentile_interval(estimates, confidence)
    return float(point[0]), float(low), float(high)


def probability_of_improvement(x: ArrayLike, y: ArrayLike) -> float:
    """P(X > Y) + 0.5 P(X = Y) for a random run of X and one of Y, per task, averaged over tasks.

    Per task this is the Mann-Whitney U statistic of X over Y divided by `n * m`; averaging over
    tasks follows rliable's `probability_of_improvement`.

    >>> probability_of_improvement([3, 2], [1, 2])  # pairs won: 3>1, 3>2, 2>1, half of 2=2
    0.875

    Args:
        x: Scores of algorithm X, `[n, tasks]` or `[n]`.
        y: Scores of algorithm Y, `[m, tasks]` or `[m]`, the same tasks.

    Returns:
        A probability in [0, 1]; 0.5 means no difference.

    Raises:
        RLGraphError: If either has no runs or NaN, or the numbers of tasks differ.
    """
    return float(_pairwise_wins(x, y, "probability_of_improvement").mean(axis=(0, 1)).mean())


def probability_of_improvement_ci(x: ArrayLike, y: ArrayLike, reps: int = 2000, confidence: float = 0.95,
                                  seed: Optional[int] = 0) -> Tuple[float, float, float]:
    """`probability_of_improvement` with a stratified-bootstrap percentile interval.

    Each replicate resamples the runs of X and, independently, those of Y, per task (rliable's
    `StratifiedIndependentBootstrap`). The X indices `[reps, n, tasks]` are drawn first, then the Y ones.

    >>> probability_of_improvement_ci([5.0, 6.0, 7.0], [1.0, 2.0])
    (1.0, 1.0, 1.0)

    Args:
        x: Scores of algorithm X, `[n, tasks]` or `[n]`.
        y: Scores of algorithm Y, `[m, tasks]` or `[m]`.
        reps: Bootstrap replicates.
        confidence: Coverage of the interval, in (0, 1).
        seed: Seed of the run indices (None: fresh entropy).

    Returns:
        `(point_estimate, low, high)`.

    Raises:
        RLGraphError: As `probability_of_improvement`, or if `reps` or `confidence` is out of range.
    """
    where = "probability_of_improvement_ci"
    wins = _pairwise_wins(x, y, where)  # [n, m, tasks]
    _check_reps_confidence(reps, confidence, where)
    n, m, tasks = wins.shape
    rng = np.random.default_rng(seed)
    counts_x = _run_counts(rng.integers(0, n, size=(reps, n, tasks)), n)
    counts_y = _run_counts(rng.integers(0, m, size=(reps, m, tasks)), m)
    # A replicate's win rate is sum_ij count_x[i] * wins[i, j] * count_y[j] / (n m): no [reps, n, m] array needed.
    per_task = np.einsum("rit,ijt,rjt->rt", counts_x, wins, counts_y, optimize=True) / (n * m)
    low, high = _percentile_interval(per_task.mean(axis=1), confidence)
    return float(wins.mean(axis=(0, 1)).mean()), float(low), float(high)


def area_under_curve(steps: ArrayLike, returns: ArrayLike) -> Union[float, np.ndarray]:
    """Normalized area under a learning curve: its trapezoid-rule mean over the step range.

    The trapezoid integral is divided by `steps[-1] - steps[0]`, so the result is in return
    units (the average return over training) and curves of different lengths compare; a single
    point gives its own return.

    >>> area_under_curve([0, 10, 20], [0.0, 10.0, 10.0])  # (50 + 100) / 20
    7.5

    Args:
        steps: `[points]`, strictly increasing.
        returns: `[points]`, or `[runs, points]` for one area per run.

    Returns:
        A float, or `[runs]`.

    Raises:
        RLGraphError: If the steps are empty or not strictly increasing, or the lengths differ.
    """
    steps, returns = _curve(steps, returns, "area_under_curve")
    if len(steps) == 1:
        return float(returns[..., 0]) if returns.ndim == 1 else returns[..., 0]
    widths = np.diff(steps)
    area = (0.5 * (returns[..., 1:] + returns[..., :-1]) * widths).sum(axis=-1) / (steps[-1] - steps[0])
    return float(area) if area.ndim == 0 else area


def first_step_reaching(steps: ArrayLike, returns: ArrayLike, threshold: float) -> Optional[float]:
    """The first step at which `returns >= threshold`, or None if the curve never gets there.

    >>> first_step_reaching([0, 100, 200], [10.0, 480.0, 500.0], 475)
    100
    >>> first_step_reaching([0, 100], [10.0, 20.0], 475) is None
    True

    Args:
        steps: `[points]`, strictly increasing.
        returns: `[points]` (e.g. the mean curve of `mean_curve_ci`).
        threshold: The return to reach.

    Returns:
        The step (int steps stay int), or None.

    Raises:
        RLGraphError: As `area_under_curve`, or if `returns` is not 1-D.
    """
    steps_array, returns = _curve(steps, returns, "first_step_reaching")
    if returns.ndim != 1:
        raise RLGraphError("returns must be one curve", where="first_step_reaching(returns)",
                           expected=f"shape [{len(steps_array)}]", received=f"shape {list(returns.shape)}",
                           hint="pass the mean curve, e.g. mean_curve_ci(curves)[0].")
    reached = np.flatnonzero(returns >= threshold)
    return np.asarray(steps)[reached[0]].item() if len(reached) else None


def mean_curve_ci(curves: ArrayLike, confidence: float = 0.95, reps: int = 2000,
                  seed: Optional[int] = 0) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean learning curve over runs and a bootstrap confidence band at each point.

    Whole runs are resampled (one set of run indices per replicate for all points), so the band
    respects the correlation along each run.

    >>> mean, low, high = mean_curve_ci([[0.0, 1.0], [2.0, 3.0]])
    >>> mean.tolist(), bool(np.all(low <= mean) and np.all(mean <= high))
    ([1.0, 2.0], True)

    Args:
        curves: `[runs, points]` on a common step grid (`[points]` for one run: a zero-width band).
        confidence: Coverage of the band, in (0, 1).
        reps: Bootstrap replicates.
        seed: Seed of the run indices (None: fresh entropy).

    Returns:
        `(mean, low, high)`, each `[points]`.

    Raises:
        RLGraphError: If `curves` is not `[runs, points]` with runs, points >= 1 and no NaN, or `reps` or
            `confidence` is out of range.
    """
    where = "mean_curve_ci"
    curves = np.asarray(curves, dtype=np.float64)
    curves = curves[None] if curves.ndim == 1 else curves
    if curves.ndim != 2 or curves.size == 0 or np.isnan(curves).any():
        raise RLGraphError("curves must be a [runs, points] array without NaN", where=f"{where}(curves)",
                           expected="shape [runs >= 1, points >= 1]", received=f"shape {list(curves.shape)}"
                           if curves.ndim != 2 or curves.size == 0 else "NaN in the curves",
                           hint="put the runs on a common step grid first (e.g. np.interp).")
    _check_reps_confidence(reps, confidence, where)
    runs = len(curves)
    counts = _run_counts(np.random.default_rng(seed).integers(0, runs, size=(reps, runs, 1)), runs)[..., 0]
    means = counts @ curves / runs  # [reps, points]
    low, high = _percentile_interval(means, confidence)
    return curves.mean(axis=0), low, high


def plot_curves_with_ci(curves_by_label: Dict[str, Tuple[ArrayLike, ArrayLike]], path: str,
                        title: Optional[str] = None, threshold: Optional[float] = None, confidence: float = 0.95,
                        xlabel: str = "environment steps", ylabel: str = "return") -> str:
    """Plots each label's mean learning curve with a shaded bootstrap CI band into a PNG file.

    Uses matplotlib's Agg canvas directly (no pyplot), so the calling program's backend is left alone.

    Args:
        curves_by_label: `{label: (steps [points], curves [runs, points])}`.
        path: The PNG file to write; parent directories are created.
        title: The plot title (default: "Learning curves (95% bootstrap CI)" for the default confidence).
        threshold: A return to mark with a dashed horizontal line.
        confidence: Coverage of the bands (see `mean_curve_ci`).
        xlabel: The x-axis label.
        ylabel: The y-axis label.

    Returns:
        `path`.

    Raises:
        RLGraphError: If there is nothing to plot, a label's steps and curves disagree in length, or
            matplotlib is not installed.
    """
    where = "plot_curves_with_ci"
    if not curves_by_label:
        raise RLGraphError("nothing to plot", where=f"{where}(curves_by_label)",
                           expected="{label: (steps, curves [runs, points])}", received="an empty dict")
    try:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError as error:
        raise RLGraphError("plotting needs matplotlib, which is not installed", where=where,
                           hint="install it with `pip install matplotlib`.") from error

    figure = Figure(figsize=(8, 4.5), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    for label, (steps, curves) in curves_by_label.items():
        curves = np.asarray(curves, dtype=np.float64)
        mean, low, high = mean_curve_ci(curves, confidence)
        steps, _ = _curve(steps, mean, f"{where}(curves_by_label[{label!r}])")
        runs = 1 if curves.ndim == 1 else len(curves)
        (line,) = axes.plot(steps, mean, linewidth=2, label=f"{label} (mean of {runs} runs)")
        axes.fill_between(steps, low, high, color=line.get_color(), alpha=0.25, linewidth=0)
    if threshold is not None:
        axes.axhline(threshold, color="gray", linestyle="--", linewidth=1, label=f"threshold {threshold:g}")
    axes.legend(loc="best")
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title or f"Learning curves ({confidence:.0%} bootstrap CI)")
    axes.grid(True, alpha=0.3)
    from rlgraph.utils.run_logs import save_figure
    return save_figure(figure, path)


def _runs_by_tasks(scores: np.ndarray, where: str) -> np.ndarray:
    """`scores` as a `[runs, tasks]` table (a `[runs]` vector is one task)."""
    if scores.ndim not in (1, 2) or scores.shape[0] == 0 or scores.size == 0:
        raise RLGraphError("scores must be [runs] or [runs, tasks] with at least one run", where=where,
                           expected="shape [runs >= 1] or [runs >= 1, tasks >= 1]",
                           received=f"shape {list(scores.shape)}")
    if np.isnan(scores).any():
        raise RLGraphError("scores contain NaN", where=where, hint="drop or impute the failed runs first.")
    return scores.reshape(len(scores), -1)


def _pairwise_wins(x: ArrayLike, y: ArrayLike, where: str) -> np.ndarray:
    """`[n, m, tasks]`: 1 where x[i] > y[j], 0.5 where they tie, 0 otherwise (per task)."""
    x = _runs_by_tasks(np.asarray(x, dtype=np.float64), f"{where}(x)")
    y = _runs_by_tasks(np.asarray(y, dtype=np.float64), f"{where}(y)")
    if x.shape[1] != y.shape[1]:
        raise RLGraphError("x and y must cover the same tasks", where=f"{where}(x, y)",
                           expected=f"{x.shape[1]} tasks in y (as in x)", received=f"{y.shape[1]} tasks")
    x, y = x[:, None, :], y[None, :, :]
    return (x > y) + 0.5 * (x == y)


def _run_counts(indices: np.ndarray, runs: int) -> np.ndarray:
    """How often each run is drawn: `[reps, draws, tasks]` indices in [0, runs) -> `[reps, runs, tasks]` counts."""
    reps, _, tasks = indices.shape
    flat = (np.arange(reps)[:, None, None] * runs + indices) * tasks + np.arange(tasks)
    return np.bincount(flat.reshape(-1), minlength=reps * runs * tasks).reshape(reps, runs, tasks).astype(np.float64)


def _percentile_interval(estimates: np.ndarray, confidence: float) -> Tuple[np.ndarray, np.ndarray]:
    """The central `confidence` percentile interval of the replicates (axis 0)."""
    low, high = np.percentile(estimates, [50.0 * (1.0 - confidence), 50.0 * (1.0 + confidence)], axis=0)
    return low, high


def _check_reps_confidence(reps: int, confidence: float, where: str) -> None:
    if isinstance(reps, bool) or not isinstance(reps, (int, np.integer)) or reps < 1:
        raise RLGraphError("reps must be a positive int", where=f"{where}(reps)", expected="int >= 1",
                           received=repr(reps))
    if not 0.0 < confidence < 1.0:
        raise RLGraphError("confidence must lie strictly between 0 and 1", where=f"{where}(confidence)",
                           expected="e.g. 0.95", received=repr(confidence))


def _curve(steps: ArrayLike, returns: ArrayLike, where: str) -> Tuple[np.ndarray, np.ndarray]:
    """Validated `(steps [points], returns [..., points])` as float arrays."""
    steps = np.asarray(steps, dtype=np.float64)
    returns = np.asarray(returns, dtype=np.float64)
    if steps.ndim != 1 or len(steps) == 0 or np.any(np.diff(steps) <= 0):
        raise RLGraphError("steps must be a non-empty, strictly increasing 1-D array", where=f"{where}(steps)",
                           received=f"shape {list(steps.shape)}" if steps.ndim != 1 else f"{steps.tolist()[:8]}")
    if returns.ndim == 0 or returns.shape[-1] != len(steps):
        raise RLGraphError("returns must have one entry per step", where=f"{where}(returns)",
                           expected=f"shape [..., {len(steps)}]", received=f"shape {list(returns.shape)}")
    return steps, returns
