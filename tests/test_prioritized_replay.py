"""PrioritizedReplay: trees vs brute force, sampling frequencies, weights, wrap-around, save/load, errors."""
import numpy as np
import pytest
from scipy.stats import chisquare

from rlgraph.components.memories.prioritized_replay import PrioritizedReplay
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError

EPS = 1e-6


def make_test(backend, capacity=8, alpha=1.0, beta=0.0, records=None, **kwargs):
    memory = PrioritizedReplay(capacity=capacity, alpha=alpha, beta=beta, epsilon=EPS)
    spaces = dict(records=records or FloatBox(add_batch_rank=True), num_records=int,
                  indices=IntBox(capacity, add_batch_rank=True), update=FloatBox(add_batch_rank=True))
    spaces.update(kwargs)
    return memory, ComponentTest(memory, input_spaces=spaces, backend=backend)


def brute_force_trees(leaves, capacity_pow2):
    """Sum and min trees (node 1 = root, leaves at [C2, 2 C2)) of leaf priorities (nan = empty)."""
    sums = np.zeros(2 * capacity_pow2)
    mins = np.full(2 * capacity_pow2, np.inf)
    for i, p in enumerate(leaves):
        if not np.isnan(p):
            sums[capacity_pow2 + i], mins[capacity_pow2 + i] = p, p
    for node in range(capacity_pow2 - 1, 0, -1):
        sums[node] = sums[2 * node] + sums[2 * node + 1]
        mins[node] = min(mins[2 * node], mins[2 * node + 1])
    return sums, mins


def check_trees(test, memory, leaves):
    sums, mins = brute_force_trees(leaves, memory.capacity_pow2)
    np.testing.assert_allclose(test.read_variable_values(memory.sum_tree), sums, rtol=1e-5)
    np.testing.assert_array_equal(np.isinf(test.read_variable_values(memory.min_tree)), np.isinf(mins))
    finite = ~np.isinf(mins)
    np.testing.assert_allclose(test.read_variable_values(memory.min_tree)[finite], mins[finite], rtol=1e-5)


def insert(test, values):
    test.test(("insert_records", np.asarray(values, np.float32)))


def update(test, indices, deltas):
    test.test(("update_records", [np.asarray(indices, np.int32), np.asarray(deltas, np.float32)]))


def test_trees_match_brute_force_after_inserts_updates_and_duplicates(backend):
    alpha = 0.7
    memory, test = make_test(backend, capacity=6, alpha=alpha)
    assert (memory.capacity_pow2, memory.depth) == (8, 3)
    leaves = np.full(6, np.nan)
    insert(test, [0.0, 1.0, 2.0, 3.0])
    leaves[:4] = 1.0  # max_priority starts at 1.
    check_trees(test, memory, leaves)
    # Index 1 twice: the last occurrence (5.0) wins.
    update(test, [1, 3, 1, 0], [2.0, 0.5, -5.0, -1.0])
    leaves[[3, 1, 0]] = (np.array([0.5, 5.0, 1.0]) + EPS) ** alpha
    check_trees(test, memory, leaves)
    np.testing.assert_allclose(test.read_variable_values(memory.max_priority), 5.0 + EPS, rtol=1e-6)
    # Wraps around: rows 4, 5, 0, 1 get max_priority ** alpha.
    insert(test, [4.0, 5.0, 6.0, 7.0])
    leaves[[4, 5, 0, 1]] = (5.0 + EPS) ** alpha
    check_trees(test, memory, leaves)
    assert int(test.read_variable_values(memory.index)) == 2 and int(test.test("get_size")) == 6
    test.test("clear")
    check_trees(test, memory, np.full(6, np.nan))
    assert int(test.test("get_size")) == 0


def test_sampling_frequencies_follow_priorities(backend):
    alpha = 0.5
    memory, test = make_test(backend, capacity=8, alpha=alpha)
    insert(test, np.arange(5) + 10.0)
    deltas = np.array([1.0, 2.0, 4.0, 0.5, 8.0])
    update(test, np.arange(5), deltas)
    counts = np.zeros(5)
    for _ in range(200):
        records, indices, _ = test.test(("get_records", 100))
        assert records.shape == (100,) and indices.dtype == np.int32
        np.testing.assert_array_equal(records, indices + 10.0)
        counts += np.bincount(indices, minlength=8)[:5]
    assert counts.sum() == 20000
    probs = (deltas + EPS) ** alpha / ((deltas + EPS) ** alpha).sum()
    assert chisquare(counts, probs * counts.sum()).pvalue > 0.01


def test_importance_weights_match_formula(backend):
    alpha, beta = 1.0, 0.4
    memory, test = make_test(backend, capacity=8, alpha=alpha, beta=beta)
    insert(test, np.arange(6) + 10.0)
    deltas = np.array([1.0, 2.0, 3.0, 0.2, 5.0, 0.7])
    update(test, np.arange(6), deltas)
    priorities = (deltas + EPS) ** alpha
    p = priorities / priorities.sum()
    all_w = (6 * p) ** -beta
    _, indices, weights = test.test(("get_records", 40))
    assert weights.dtype == np.float32 and len(set(indices.tolist())) > 3
    np.testing.assert_allclose(weights, all_w[indices] / all_w.max(), rtol=1e-5)
    assert np.isclose(weights[indices == 3], 1.0).all()


def test_update_records_is_reflected_in_later_samples(backend):
    memory, test = make_test(backend, capacity=4, alpha=1.0, beta=1.0)
    insert(test, [10.0, 11.0, 12.0, 13.0])
    update(test, [0, 1, 2, 3], [0.0, 0.0, 100.0, 0.0])
    _, indices, weights = test.test(("get_records", 32))
    assert set(indices.tolist()) == {2}
    np.testing.assert_allclose(weights, EPS / (100.0 + EPS), rtol=1e-4)
    update(test, [2, 0], [0.0, 50.0])
    records, indices, _ = test.test(("get_records", 32))
    assert set(indices.tolist()) == {0} and set(records.tolist()) == {10.0}
    # A new record gets the largest priority seen so far (100 + eps): most samples go to it.
    insert(test, [14.0])
    _, indices, _ = test.test(("get_records", 30))
    assert set(indices.tolist()) == {0} and int(test.read_variable_values(memory.index)) == 1


def test_wrap_around_and_oversized_batches_with_container_records(backend):
    records_space = Dict(s=FloatBox(shape=(2,)), a=IntBox(5), add_batch_rank=True)
    memory, test = make_test(backend, capacity=3, records=records_space)
    test.test(("insert_records", {"s": np.ones((2, 2), np.float32) * [[0], [1]], "a": np.array([0, 1])}))
    test.test(("insert_records", {"s": np.ones((3, 2), np.float32) * [[2], [3], [4]], "a": np.array([2, 3, 4])}))
    stored = {key.strip("/"): test.read_variable_values(var) for key, var in memory.memory.items()}
    np.testing.assert_array_equal(stored["a"], [3, 4, 2])
    np.testing.assert_array_equal(stored["s"][:, 0], [3.0, 4.0, 2.0])
    assert int(test.read_variable_values(memory.index)) == 2 and int(test.test("get_size")) == 3
    # Five rows into capacity 3 from index 2: as if written one by one (rows 0-4 at 2, 0, 1, 2, 0),
    # so only the last three survive.
    test.test(("insert_records", {"s": np.zeros((5, 2), np.float32), "a": np.array([0, 1, 2, 3, 4])}))
    np.testing.assert_array_equal(test.read_variable_values(memory.memory["/a"]), [4, 2, 3])
    assert int(test.read_variable_values(memory.index)) == 1
    check_trees(test, memory, np.ones(3))
    records, indices, weights = test.test(("get_records", 6))
    assert set(records) == {"a", "s"} and records["s"].shape == (6, 2)
    np.testing.assert_array_equal(records["a"], np.array([4, 2, 3])[indices])
    np.testing.assert_array_equal(weights, np.ones(6, np.float32))


def test_save_load_round_trip(backend, tmp_path):
    memory, test = make_test(backend, capacity=5, alpha=0.6)
    insert(test, [10.0, 11.0, 12.0, 13.0, 14.0, 15.0])
    update(test, [0, 2, 4], [3.0, 0.0, 1.5])
    names = sorted(memory.memory_variables())
    saved = {name: np.copy(test.read_variable_values(memory.variables[name])) for name in names}
    path = memory.save(str(tmp_path / "per"))
    update(test, [1, 3], [9.0, 9.0])
    insert(test, [20.0, 21.0])
    test.test("clear")
    memory.load(path)
    for name in names:
        np.testing.assert_array_equal(test.read_variable_values(memory.variables[name]), saved[name], err_msg=name)
    assert {"sum_tree", "min_tree", "max_priority", "index", "size"} <= set(names)
    assert int(test.read_variable_values(memory.index)) == 1 and int(test.test("get_size")) == 5
    # The restored trees drive sampling: record 2 (priority eps ** 0.6) is almost never drawn.
    records, indices, _ = test.test(("get_records", 50))
    np.testing.assert_array_equal(records, np.array([15.0, 11.0, 12.0, 13.0, 14.0])[indices])
    assert 2 not in indices.tolist()


def test_sampling_is_seeded_by_the_executor(backend):
    def draws(seed):
        memory = PrioritizedReplay(capacity=16)
        test = ComponentTest(memory, backend=backend, seed=seed, input_spaces=dict(
            records=FloatBox(add_batch_rank=True), num_records=int, indices=IntBox(16, add_batch_rank=True),
            update=FloatBox(add_batch_rank=True)))
        insert(test, np.arange(16.0))
        return np.concatenate([test.test(("get_records", 4))[1] for _ in range(5)])
    np.testing.assert_array_equal(draws(3), draws(3))
    assert not np.array_equal(draws(3), draws(4))


@pytest.mark.parametrize("kwargs", [dict(indices=IntBox(8, shape=(2,), add_batch_rank=True)),
                                    dict(update=FloatBox()),
                                    dict(indices=FloatBox(add_batch_rank=True)),
                                    dict(indices=IntBox(8, add_batch_rank=4), update=FloatBox(add_batch_rank=3))])
def test_bad_update_spaces_fail_at_build(backend, kwargs):
    with pytest.raises(RLGraphSpaceError, match="update_records"):
        make_test(backend, **kwargs)


def test_bad_update_values_fail_at_run_time(backend):
    errors = RLGraphError  # Both backends: TF's in-graph assertion errors are converted by the executor.
    _, test = make_test(backend, capacity=8)
    insert(test, [1.0, 2.0, 3.0])
    with pytest.raises(errors, match="same batch size"):
        update(test, [0, 1], [1.0, 2.0, 3.0])
    with pytest.raises(errors, match="stored records"):
        update(test, [0, 5], [1.0, 2.0])


@pytest.mark.parametrize("kwargs", [dict(capacity=0), dict(alpha=-1.0), dict(beta=float("nan")),
                                    dict(epsilon=0.0), dict(alpha="1")])
def test_bad_constructor_arguments(kwargs):
    with pytest.raises(RLGraphSpecError):
        PrioritizedReplay(**kwargs)


def test_capacity_one_and_non_power_of_two():
    assert (PrioritizedReplay(capacity=1).capacity_pow2, PrioritizedReplay(capacity=1).depth) == (1, 0)
    assert (PrioritizedReplay(capacity=5).capacity_pow2, PrioritizedReplay(capacity=1024).capacity_pow2) == (8, 1024)
