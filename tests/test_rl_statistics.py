"""rlgraph.benchmarks.rl_statistics: IQM, stratified bootstrap CIs, probability of improvement, curves.

Expected values are worked by hand or come from scipy: rliable's `aggregate_iqm` is
`scipy.stats.trim_mean(scores, 0.25, axis=None)` and its `probability_of_improvement` is the
per-task Mann-Whitney U / (n m) averaged over tasks, so `_rliable_*` below restate those two in
scipy. rliable itself is not installed for the tests: it pulls arch, statsmodels (a 12 MB wheel,
45 MB installed) and seaborn.
"""
import time

import numpy as np
import pytest
import scipy.stats

from rlgraph.benchmarks.rl_statistics import (area_under_curve, first_step_reaching, iqm, mean_curve_ci,
                                              plot_curves_with_ci, probability_of_improvement,
                                              probability_of_improvement_ci, stratified_bootstrap_ci)
from rlgraph.utils.rlgraph_errors import RLGraphError


def _rliable_iqm(scores):
    return scipy.stats.trim_mean(scores, proportiontocut=0.25, axis=None)


def _rliable_poi(x, y):
    per_task = []
    for task in range(x.shape[1]):
        if np.array_equal(x[:, task], y[:, task]):
            per_task.append(0.5)
        else:
            u, _ = scipy.stats.mannwhitneyu(x[:, task], y[:, task], alternative="greater")
            per_task.append(u / (len(x) * len(y)))
    return np.mean(per_task)


# ---------------------------------------------------------------- IQM

def test_iqm_worked_examples():
    # 8 scores: int(0.25 * 8) = 2 dropped at each end -> mean(2, 3, 4, 5).
    assert iqm([100, -50, 1, 2, 3, 4, 5, 6]) == 3.5
    # 10 scores: 2 dropped at each end -> mean(3..8).
    assert iqm(np.arange(1, 11)) == 5.5
    # 5 scores: int(1.25) = 1 dropped at each end -> mean(2, 3, 4).
    assert iqm([4, 1, 100, 3, 2]) == 3.0
    # 3 scores: nothing dropped.
    assert iqm([1, 2, 6]) == 3.0
    assert iqm([7.0]) == 7.0
    # [runs, tasks] is pooled over runs and tasks, as rliable does.
    assert iqm([[1, 100], [2, 3], [-50, 4], [5, 6]]) == 3.5


@pytest.mark.parametrize("count", [1, 2, 3, 4, 5, 7, 8, 10, 13, 20, 101])
def test_iqm_matches_scipy_trim_mean(count):
    scores = np.random.default_rng(count).normal(size=count) ** 3
    assert iqm(scores) == pytest.approx(scipy.stats.trim_mean(scores, 0.25), rel=1e-12, abs=1e-12)


def test_iqm_of_a_runs_by_tasks_table_matches_rliable_definition():
    scores = np.random.default_rng(3).gamma(2.0, size=(10, 4))
    assert iqm(scores) == pytest.approx(_rliable_iqm(scores), rel=1e-12)


def test_iqm_axis_gives_one_value_per_remaining_index():
    stack = np.random.default_rng(4).normal(size=(6, 9, 3))  # [reps, runs, tasks]
    batched = iqm(stack, axis=(-2, -1))
    assert batched.shape == (6,)
    np.testing.assert_allclose(batched, [_rliable_iqm(sample) for sample in stack], rtol=1e-12)
    np.testing.assert_allclose(iqm(stack, axis=1), scipy.stats.trim_mean(stack, 0.25, axis=1), rtol=1e-12)


@pytest.mark.parametrize("scores, axis", [([], None), ([1.0, np.nan], None), ([[1.0, 2.0]], 2)])
def test_iqm_rejects_empty_nan_and_bad_axis(scores, axis):
    with pytest.raises(RLGraphError, match="iqm"):
        iqm(scores, axis=axis)


# ---------------------------------------------------------------- probability of improvement

def test_probability_of_improvement_hand_counts():
    # 4 pairs: 3>1, 3>2, 2>1 win; 2=2 is half a win -> 3.5 / 4.
    assert probability_of_improvement([3, 2], [1, 2]) == 0.875
    # 6 pairs: 0<1, 0<3, 1=1 (half), 1<3, 4>1, 4>3 -> 2.5 / 6.
    assert probability_of_improvement([0, 1, 4], [1, 3]) == pytest.approx(2.5 / 6)
    assert probability_of_improvement([5, 6], [1, 2]) == 1.0
    assert probability_of_improvement([1, 2], [5, 6]) == 0.0
    assert probability_of_improvement([2, 2, 2], [2, 2]) == 0.5
    # Two tasks: 1.0 on the first, 0.0 on the second -> averaged per task.
    assert probability_of_improvement([[5, 0], [6, 1]], [[1, 7], [2, 8]]) == 0.5


@pytest.mark.parametrize("seed", range(5))
def test_probability_of_improvement_matches_mann_whitney_u(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, size=(7, 3)).astype(float)  # small integers: many ties
    y = rng.integers(0, 6, size=(11, 3)).astype(float)
    for task in range(3):
        u, _ = scipy.stats.mannwhitneyu(x[:, task], y[:, task], alternative="greater")
        assert probability_of_improvement(x[:, task], y[:, task]) == pytest.approx(u / (7 * 11), rel=1e-12)
    assert probability_of_improvement(x, y) == pytest.approx(_rliable_poi(x, y), rel=1e-12)
    assert probability_of_improvement(x, y) + probability_of_improvement(y, x) == pytest.approx(1.0)


def test_probability_of_improvement_rejects_different_tasks_and_empty_runs():
    with pytest.raises(RLGraphError, match="same tasks"):
        probability_of_improvement(np.zeros((3, 2)), np.zeros((3, 1)))
    with pytest.raises(RLGraphError, match="at least one run"):
        probability_of_improvement([], [1.0])


# ---------------------------------------------------------------- stratified bootstrap

def test_bootstrap_is_deterministic_for_a_seed():
    scores = np.random.default_rng(0).normal(size=20)
    first = stratified_bootstrap_ci(scores, iqm, seed=7)
    assert stratified_bootstrap_ci(scores, iqm, seed=7) == first
    assert stratified_bootstrap_ci(scores, iqm, seed=8) != first
    assert first[0] == iqm(scores)


def test_bootstrap_interval_contains_point_estimate_and_is_ordered():
    scores = np.random.default_rng(1).normal(loc=3.0, size=(20, 2))
    for statistic in (iqm, np.mean, np.median):
        point, low, high = stratified_bootstrap_ci(scores, statistic)
        assert low < point < high


def test_bootstrap_of_constant_scores_has_zero_width():
    assert stratified_bootstrap_ci(np.full((6, 3), 4.0), iqm) == (4.0, 4.0, 4.0)
    # Stratified by task: each task's runs are resampled only among themselves, so constant tasks
    # with different levels still give a fixed mean.
    assert stratified_bootstrap_ci(np.tile([0.0, 10.0], (5, 1)), np.mean) == (5.0, 5.0, 5.0)


def test_bootstrap_width_shrinks_with_more_runs():
    rng = np.random.default_rng(2)
    widths = []
    for runs in (10, 40, 160):
        _, low, high = stratified_bootstrap_ci(rng.normal(size=runs), np.mean, reps=4000)
        widths.append(high - low)
    # The width of a mean's CI goes as 1 / sqrt(runs): about halves per 4x runs.
    assert widths[0] > widths[1] > widths[2]
    assert 0.3 < widths[1] / widths[0] < 0.75 and 0.3 < widths[2] / widths[1] < 0.75


def test_bootstrap_resamples_runs_independently_within_each_task():
    scores = np.stack([np.arange(8.0), np.arange(8.0) + 100.0], axis=1)  # [runs=8, tasks=2]
    seen = []

    def statistic(sample):
        assert sample.shape == (8, 2)
        assert set(sample[:, 0]) <= set(scores[:, 0]) and set(sample[:, 1]) <= set(scores[:, 1])
        seen.append(sample[:, 1] - sample[:, 0])
        return float(sample.mean())

    stratified_bootstrap_ci(scores, statistic, reps=50)
    # Independent per task: a replicate's rows are not whole rows of the table.
    assert any(np.any(difference != 100.0) for difference in seen[1:])


def test_bootstrap_vectorized_statistic_gives_the_same_numbers():
    scores = np.random.default_rng(5).normal(size=(12, 3))
    per_sample = stratified_bootstrap_ci(scores, iqm, seed=3)
    vectorized = stratified_bootstrap_ci(scores, lambda s: iqm(s, axis=(-2, -1)), seed=3, vectorized=True)
    assert vectorized == pytest.approx(per_sample, rel=1e-12)
    # A [runs] vector is the one-task table.
    one_task = stratified_bootstrap_ci(scores[:, 0], iqm, seed=3)
    assert one_task == stratified_bootstrap_ci(scores[:, :1], iqm, seed=3)


def test_bootstrap_agrees_with_a_plain_loop_within_monte_carlo_error():
    rng = np.random.default_rng(6)
    scores = rng.exponential(size=(15, 2))
    reference = []
    for _ in range(4000):
        sample = np.stack([scores[rng.integers(0, 15, size=15), task] for task in range(2)], axis=1)
        reference.append(_rliable_iqm(sample))
    low_ref, high_ref = np.percentile(reference, [2.5, 97.5])
    point, low, high = stratified_bootstrap_ci(scores, iqm, reps=4000)
    assert point == pytest.approx(_rliable_iqm(scores), rel=1e-12)
    width = high_ref - low_ref
    assert abs(low - low_ref) < 0.1 * width and abs(high - high_ref) < 0.1 * width


def test_bootstrap_ci_of_the_mean_covers_the_true_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(9)
    covered = 0
    trials = 300
    for trial in range(trials):
        _, low, high = stratified_bootstrap_ci(rng.normal(size=20), lambda s: s.mean(axis=-1), reps=1000,
                                               seed=trial, vectorized=True)
        covered += low <= 0.0 <= high
    # The percentile bootstrap slightly under-covers at 20 runs; 300 trials give +- ~2.5% noise.
    assert 0.87 <= covered / trials <= 0.99


def test_bootstrap_of_two_thousand_replicates_is_fast():
    scores = np.random.default_rng(0).normal(size=20)
    start = time.perf_counter()
    stratified_bootstrap_ci(scores, lambda s: iqm(s, axis=-1), reps=2000, vectorized=True)
    stratified_bootstrap_ci(scores, iqm, reps=2000)
    assert time.perf_counter() - start < 2.0  # ~20 ms here; generous for a loaded CI machine


@pytest.mark.parametrize("kwargs, match", [
    ({"reps": 0}, "reps"), ({"confidence": 1.0}, "confidence"), ({"confidence": 0.0}, "confidence"),
    ({"scores_by_task": np.zeros((0, 2))}, "at least one run"), ({"scores_by_task": np.zeros((2, 2, 2))}, "shape"),
    ({"scores_by_task": [1.0, np.nan]}, "NaN"), ({"statistic": lambda s: s}, "one number"),
    ({"statistic": np.mean, "vectorized": True}, "one number"),
])
def test_bootstrap_rejects_bad_arguments(kwargs, match):
    arguments = {"scores_by_task": np.arange(4.0), "statistic": iqm, **kwargs}
    with pytest.raises(RLGraphError, match=match):
        stratified_bootstrap_ci(**arguments)


# ---------------------------------------------------------------- probability of improvement CI

def test_probability_of_improvement_ci_edge_cases_and_determinism():
    assert probability_of_improvement_ci([5.0, 6.0, 7.0], [1.0, 2.0]) == (1.0, 1.0, 1.0)
    assert probability_of_improvement_ci(np.full(4, 3.0), np.full(6, 3.0)) == (0.5, 0.5, 0.5)
    rng = np.random.default_rng(0)
    x, y = rng.normal(0.5, size=(10, 2)), rng.normal(size=(12, 2))
    first = probability_of_improvement_ci(x, y, seed=4)
    assert probability_of_improvement_ci(x, y, seed=4) == first
    point, low, high = first
    assert point == pytest.approx(_rliable_poi(x, y), rel=1e-12)
    assert 0.0 <= low < point < high <= 1.0


def test_probability_of_improvement_ci_equals_resampling_both_samples_per_task():
    # The documented draws: X's [reps, n, tasks] run indices, then Y's [reps, m, tasks].
    rng_data = np.random.default_rng(1)
    x, y = rng_data.integers(0, 4, size=(6, 2)).astype(float), rng_data.integers(0, 4, size=(5, 2)).astype(float)
    reps = 300
    rng = np.random.default_rng(11)
    index_x, index_y = rng.integers(0, 6, size=(reps, 6, 2)), rng.integers(0, 5, size=(reps, 5, 2))
    tasks = np.arange(2)
    replicates = [_rliable_poi(x[index_x[r], tasks], y[index_y[r], tasks]) for r in range(reps)]
    expected_low, expected_high = np.percentile(replicates, [5.0, 95.0])
    _, low, high = probability_of_improvement_ci(x, y, reps=reps, confidence=0.9, seed=11)
    assert (low, high) == pytest.approx((expected_low, expected_high), rel=1e-12)


def test_probability_of_improvement_ci_of_many_tasks_is_fast():
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    probability_of_improvement_ci(rng.normal(size=(20, 1)), rng.normal(size=(20, 1)), reps=2000)
    assert time.perf_counter() - start < 2.0


# ---------------------------------------------------------------- curves

def test_area_under_curve_worked_examples():
    assert area_under_curve([0, 10, 20], [0.0, 10.0, 10.0]) == 7.5  # (50 + 100) / 20
    assert area_under_curve([0, 1, 3], [0.0, 2.0, 2.0]) == pytest.approx(5.0 / 3.0)  # (1 + 4) / 3, uneven steps
    assert area_under_curve([0, 5, 9], [4.0, 4.0, 4.0]) == 4.0  # a flat curve: its own return
    assert area_under_curve([100], [3.0]) == 3.0
    # Return units: rescaling the steps changes nothing.
    assert area_under_curve([0, 1000, 2000], [0.0, 10.0, 10.0]) == 7.5
    np.testing.assert_allclose(area_under_curve([0, 10, 20], [[0.0, 10.0, 10.0], [2.0, 2.0, 2.0]]), [7.5, 2.0])


@pytest.mark.parametrize("steps, returns, match", [
    ([0, 0, 1], [1.0, 2.0, 3.0], "strictly increasing"), ([], [], "strictly increasing"),
    ([0, 1, 2], [1.0, 2.0], "one entry per step"),
])
def test_area_under_curve_rejects_bad_curves(steps, returns, match):
    with pytest.raises(RLGraphError, match=match):
        area_under_curve(steps, returns)


def test_first_step_reaching():
    assert first_step_reaching([0, 100, 200, 300], [10.0, 470.0, 475.0, 500.0], 475) == 200  # >= counts
    assert isinstance(first_step_reaching([0, 100], [0.0, 500.0], 475), int)
    assert first_step_reaching([0.5, 1.5], [0.0, 500.0], 475) == 1.5
    assert first_step_reaching([0, 100], [10.0, 20.0], 475) is None
    with pytest.raises(RLGraphError, match="one curve"):
        first_step_reaching([0, 1], [[1.0, 2.0], [3.0, 4.0]], 2.0)


def test_mean_curve_ci():
    curves = np.random.default_rng(0).normal(size=(10, 5)).cumsum(axis=1)
    mean, low, high = mean_curve_ci(curves)
    np.testing.assert_allclose(mean, curves.mean(axis=0))
    assert mean.shape == low.shape == high.shape == (5,)
    assert np.all(low <= mean) and np.all(mean <= high)
    # Point by point the band is the bootstrap CI of that point's mean; whole runs are resampled, with the
    # same draws as stratified_bootstrap_ci of one task for the same seed.
    _, low_5, high_5 = mean_curve_ci(curves, seed=5)
    for point in range(5):
        assert (low_5[point], high_5[point]) == pytest.approx(
            stratified_bootstrap_ci(curves[:, point], np.mean, seed=5)[1:], rel=1e-12)
    again = mean_curve_ci(curves)
    assert all(np.array_equal(a, b) for a, b in zip(again, (mean, low, high)))
    one_run = mean_curve_ci(curves[0])
    assert all(np.array_equal(a, curves[0]) for a in one_run)
    with pytest.raises(RLGraphError, match="NaN"):
        mean_curve_ci([[1.0, np.nan]])


def test_plot_curves_with_ci_writes_a_png(tmp_path):
    rng = np.random.default_rng(0)
    steps = np.arange(0, 1000, 50)
    curves = {"rlgraph": (steps, rng.normal(size=(5, 20)).cumsum(axis=1)),
              "peer": (steps, rng.normal(size=(3, 20)).cumsum(axis=1)),
              "one run": (steps, rng.normal(size=20))}
    path = tmp_path / "plots" / "curves.png"
    assert plot_curves_with_ci(curves, str(path), title="CartPole", threshold=2.0) == str(path)
    data = path.read_bytes()
    assert len(data) > 1000 and data[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_curves_with_ci_rejects_nothing_and_mismatched_steps(tmp_path):
    with pytest.raises(RLGraphError, match="nothing to plot"):
        plot_curves_with_ci({}, str(tmp_path / "x.png"))
    with pytest.raises(RLGraphError, match="one entry per step"):
        plot_curves_with_ci({"a": (np.arange(3), np.zeros((2, 4)))}, str(tmp_path / "x.png"))
