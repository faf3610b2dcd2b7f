"""MemSegmentTree, MinSumSegmentTree and MemPrioritizedReplay (pure numpy: tested once, not per backend)."""
import operator

import numpy as np
import pytest
from scipy.stats import chisquare

from rlgraph.components.helpers.mem_segment_tree import MemSegmentTree
from rlgraph.components.helpers.min_sum_segment_tree import MinSumSegmentTree
from rlgraph.components.memories.mem_prioritized_replay import MemPrioritizedReplay
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphError, RLGraphSpaceError, RLGraphSpecError


def brute_prefix_index(leaves, prefix_sums):
    """First i with cumsum[i] > p, clipped to the last positive leaf (p < 0 acts as 0)."""
    cumsum = np.cumsum(leaves)
    found = np.searchsorted(cumsum, np.maximum(prefix_sums, 0.0), side="right")
    return np.minimum(found, np.flatnonzero(leaves > 0).max())


# --- Segment trees -----------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_segment_trees_match_brute_force(seed):
    rng = np.random.RandomState(seed)
    n = rng.randint(1, 40)
    tree = MinSumSegmentTree(n)
    assert tree.capacity >= n and tree.capacity & (tree.capacity - 1) == 0
    leaves, written = np.zeros(n), np.zeros(n, bool)
    for _ in range(5):
        # Batches with duplicate indices: the last write of each index wins.
        indices = rng.randint(0, n, size=rng.randint(1, 2 * n + 1))
        values = rng.randint(0, 5, size=indices.size).astype(np.float64)  # integers: exact sums, zero leaves
        tree.insert(indices, values)
        for i, v in zip(indices, values):
            leaves[i], written[i] = v, True
    np.testing.assert_array_equal(tree.get(np.arange(n)), leaves)
    for _ in range(20):
        start, stop = sorted(rng.randint(0, n + 1, size=2))
        assert tree.get_sum(start, stop) == leaves[start:stop].sum()
        assert tree.reduce(start, stop, operator.add) == leaves[start:stop].sum()
        # Leaves never written count +inf in the min tree (and 0 in the sum tree).
        mins = np.where(written, leaves, np.inf)[start:stop]
        assert tree.get_min_value(start, stop) == (mins.min() if mins.size else np.inf)
        assert tree.reduce(start, stop, min) == (mins.min() if mins.size else np.inf)
        assert tree.reduce(start, stop, max) == (leaves[start:stop].max() if stop > start else -np.inf)
    if leaves.sum() > 0:
        queries = np.concatenate([rng.uniform(-1.0, leaves.sum() + 1.0, size=200), np.cumsum(leaves), [0.0]])
        np.testing.assert_array_equal(tree.index_of_prefixsum(queries), brute_prefix_index(leaves, queries))
        assert leaves[tree.index_of_prefixsum(queries)].min() > 0  # zero leaves are never returned


@pytest.mark.parametrize("seed", [10, 11])
def test_sum_tree_random_floats_and_min_tree(seed):
    rng = np.random.RandomState(seed)
    n = 100
    leaves = rng.uniform(0.1, 2.0, size=n)
    sum_tree = MemSegmentTree(None, n)
    min_tree = MemSegmentTree(np.full(2 * 128, np.inf), n, operator=min)
    sum_tree.insert(np.arange(n), leaves)
    min_tree.insert(np.arange(n), leaves)
    queries = rng.uniform(0, leaves.sum(), size=500)
    np.testing.assert_array_equal(sum_tree.index_of_prefixsum(queries), brute_prefix_index(leaves, queries))
    assert sum_tree.index_of_prefixsum(float(leaves[0]) / 2) == 0  # scalar in, int out
    padded = np.concatenate([leaves, np.zeros(28)])  # capacity 100 -> 128 leaves; a negative stop counts from 128
    for start, stop in [(0, None), (3, 97), (50, 51), (10, -30)]:
        np.testing.assert_allclose(sum_tree.get_sum(start, stop), padded[start:stop].sum(), rtol=1e-12)
        assert min_tree.get_min_value(start, stop) == padded[start:stop][padded[start:stop] > 0].min()
    assert min_tree.get_min_value(5, 5) == np.inf and sum_tree.get_sum(7, 3) == 0.0


def test_segment_tree_errors():
    with pytest.raises(RLGraphSpecError, match="capacity"):
        MemSegmentTree(None, 0)
    with pytest.raises(RLGraphSpecError, match="operator"):
        MemSegmentTree(None, 4, operator=operator.mul)
    with pytest.raises(RLGraphSpecError, match="length 2"):
        MemSegmentTree(np.zeros(5), 4)
    tree = MemSegmentTree(None, 4, operator=min)
    with pytest.raises(RLGraphSpecError, match="out of range"):
        tree.insert([4], [1.0])
    with pytest.raises(RLGraphSpecError, match="sum tree"):
        tree.index_of_prefixsum(0.5)


# --- Memory: sampling and weights --------------------------------------------------------------
def filled_memory(priorities, alpha=1.0, beta=0.0, seed=0):
    n = len(priorities)
    memory = MemPrioritizedReplay(capacity=n, alpha=alpha, beta=beta, seed=seed)
    memory.insert_records({"s": np.arange(n, dtype=np.float32)[:, None] * np.ones((1, 2), np.float32),
                           "a": np.arange(n, dtype=np.int32)})
    memory.update_records(np.arange(n), np.asarray(priorities))
    return memory


def test_sampling_frequencies_follow_p_alpha():
    priorities = np.array([1.0, 2.0, 3.0, 4.0, 10.0, 0.5])
    alpha = 0.7
    memory = filled_memory(priorities, alpha=alpha, seed=42)
    counts = np.zeros(len(priorities))
    for _ in range(2000):
        records, indices, _ = memory.get_records(10)
        np.testing.assert_array_equal(records["a"], indices)
        counts += np.bincount(indices, minlength=len(priorities))
    assert counts.sum() == 20000
    probs = (priorities + 1e-6) ** alpha / ((priorities + 1e-6) ** alpha).sum()
    assert chisquare(counts, probs * counts.sum()).pvalue > 0.01


def test_importance_weights_equal_formula():
    priorities = np.array([1.0, 2.0, 3.0, 4.0, 10.0])
    alpha, beta, eps = 0.6, 0.4, 1e-6
    memory = filled_memory(priorities, alpha=alpha, beta=beta, seed=1)
    _, indices, weights = memory.get_records(8)
    p_alpha = (priorities + eps) ** alpha
    prob = p_alpha / p_alpha.sum()
    n = len(priorities)
    expected = (n * prob[indices]) ** -beta / ((n * prob.min()) ** -beta)
    assert weights.dtype == np.float32 and weights.max() <= 1.0
    np.testing.assert_allclose(weights, expected.astype(np.float32), rtol=1e-6)
    # Hand-worked: the smallest priority has weight 1; p=10 has (1.000001 / 10.000001)^(0.6 * 0.4).
    memory.beta = beta
    full = memory._importance_weights(np.arange(n), memory.tree.get_sum())
    assert full[0] == pytest.approx(1.0) and full[4] == pytest.approx((1.000001 / 10.000001) ** 0.24, rel=1e-6)
    memory.beta = 0.0
    np.testing.assert_array_equal(memory.get_records(4)[2], np.ones(4, np.float32))


def test_updates_change_sampling():
    memory = filled_memory(np.ones(4), seed=3)
    memory.update_records(np.array([2, 2]), np.array([5.0, 1e4]))  # duplicates: the last one wins
    assert memory.tree.get(2) == pytest.approx(1e4 + 1e-6)
    assert memory.max_priority == pytest.approx(1e4 + 1e-6)
    _, indices, _ = memory.get_records(100)
    assert np.mean(indices == 2) > 0.95
    memory.update_records(np.array([2]), np.array([1.0]))
    _, indices, _ = memory.get_records(400)
    assert 0.15 < np.mean(indices == 2) < 0.35
    memory.insert_records({"s": np.zeros((1, 2), np.float32), "a": np.array([9], np.int32)})  # new: max priority
    assert memory.tree.get(0) == pytest.approx(1e4 + 1e-6)


def test_wrap_around():
    memory = MemPrioritizedReplay(capacity=5, seed=0)
    memory.insert_records({"x": np.arange(3)})
    memory.insert_records({"x": np.arange(3, 7)})
    assert memory.get_size() == len(memory) == 5 and memory.index == 2
    assert sorted(memory.storage["/x"].tolist()) == [2, 3, 4, 5, 6]
    records, indices, _ = memory.get_records(50)
    assert set(records["x"].tolist()) <= {2, 3, 4, 5, 6} and indices.max() < 5
    memory.insert_records({"x": np.arange(10, 22)})  # larger than capacity: the last 5 survive
    assert sorted(memory.storage["/x"].tolist()) == [17, 18, 19, 20, 21] and len(memory) == 5
    memory.clear()
    assert len(memory) == 0 and memory.tree.get_sum() == 0.0


def test_dict_space_with_uint8_image():
    space = Dict(img=IntBox(256, shape=(4, 4), dtype="uint8"), r=FloatBox(), add_batch_rank=True)
    memory = MemPrioritizedReplay(capacity=8, record_space=space, seed=0)
    assert memory.storage["/img"].dtype == np.uint8 and memory.storage["/img"].shape == (8, 4, 4)
    images = np.random.RandomState(0).randint(0, 256, size=(3, 4, 4)).astype(np.uint8)
    memory.insert_records({"img": images, "r": np.array([0.5, 1.5, 2.5])})
    records, indices, _ = memory.get_records(6)
    assert records["img"].dtype == np.uint8 and records["r"].dtype == np.float32
    np.testing.assert_array_equal(records["img"], images[indices])
    inferred = MemPrioritizedReplay(capacity=4)
    inferred.insert_records({"img": images, "t": (np.array([1, 2, 3]), np.array([True, False, True]))})
    assert inferred.storage["/img"].dtype == np.uint8 and inferred.storage["/t/_T1_"].dtype == np.bool_
    assert isinstance(inferred.get_records(2)[0]["t"], tuple)


def test_memory_errors():
    with pytest.raises(RLGraphSpecError, match="capacity"):
        MemPrioritizedReplay(capacity=0)
    with pytest.raises(RLGraphSpecError, match="alpha"):
        MemPrioritizedReplay(alpha=-1.0)
    with pytest.raises(RLGraphSpecError, match="epsilon"):
        MemPrioritizedReplay(epsilon=0.0)
    memory = MemPrioritizedReplay(capacity=4, record_space=Dict(x=FloatBox(shape=(2,))))
    with pytest.raises(RLGraphError, match="empty"):
        memory.get_records(1)
    with pytest.raises(RLGraphSpaceError, match="structure"):
        memory.insert_records({"y": np.zeros((1, 2))})
    with pytest.raises(RLGraphSpaceError, match="shape"):
        memory.insert_records({"x": np.zeros((1, 3))})
    with pytest.raises(RLGraphSpaceError, match="dtype"):
        memory.insert_records({"x": np.array([["a", "b"]])})
    memory.insert_records({"x": np.zeros((2, 2))})
    with pytest.raises(RLGraphSpecError, match="num_records"):
        memory.get_records(0)
    with pytest.raises(RLGraphSpecError, match="outside"):
        memory.update_records(np.array([2]), np.array([1.0]))  # only 2 records stored
    with pytest.raises(RLGraphSpecError, match="finite"):
        memory.update_records(np.array([0]), np.array([np.nan]))
    with pytest.raises(RLGraphSpecError, match="one priority"):
        memory.update_records(np.array([0, 1]), np.array([1.0]))


# --- Persistence -------------------------------------------------------------------------------
def test_save_load_round_trip(tmp_path):
    memory = filled_memory(np.array([1.0, 5.0, 2.0, 0.1, 3.0]), alpha=0.5, beta=0.3, seed=7)
    memory.get_records(3)  # move the RNG away from its seed
    path = memory.save(str(tmp_path / "memory"))
    assert path.endswith(".npz")
    restored = MemPrioritizedReplay(capacity=5, alpha=0.5, beta=0.3, seed=123)
    restored.load(path)
    assert len(restored) == 5 and restored.index == memory.index and restored.max_priority == memory.max_priority
    for _ in range(3):
        (r1, i1, w1), (r2, i2, w2) = memory.get_records(6), restored.get_records(6)
        np.testing.assert_array_equal(i1, i2)
        np.testing.assert_array_equal(w1, w2)
        np.testing.assert_array_equal(r1["s"], r2["s"])


def test_corrupt_or_mismatching_file_leaves_memory_unchanged(tmp_path):
    source = filled_memory(np.array([1.0, 2.0, 3.0]), seed=0)
    good = source.save(str(tmp_path / "good.npz"))
    target = filled_memory(np.array([4.0, 4.0, 4.0]), seed=5)
    before = (target.tree.leaves(), target.storage["/s"].copy(), target.rng.get_state()[1].copy())
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip file")
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(open(good, "rb").read()[:200])
    with np.load(good) as data:
        values = dict(data)
    values["size"] = np.int64(99)
    np.savez(str(tmp_path / "size.npz"), **values)
    for path in (bad, truncated, tmp_path / "missing.npz", tmp_path / "size.npz"):
        with pytest.raises(RLGraphCheckpointError):
            target.load(str(path))
    with pytest.raises(RLGraphCheckpointError, match="capacity/alpha"):
        MemPrioritizedReplay(capacity=3, alpha=0.5).load(good)
    with pytest.raises(RLGraphCheckpointError, match="records do not fit"):
        MemPrioritizedReplay(capacity=3, record_space=Dict(s=FloatBox(shape=(3,)), a=IntBox(3))).load(good)
    np.testing.assert_array_equal(target.tree.leaves(), before[0])
    np.testing.assert_array_equal(target.storage["/s"], before[1])
    np.testing.assert_array_equal(target.rng.get_state()[1], before[2])
    fresh = MemPrioritizedReplay(capacity=3)  # no record space yet: taken from the file
    fresh.load(good)
    assert fresh.storage["/a"].dtype == np.int32 and len(fresh) == 3
