"""`MinSumSegmentTree`: a sum tree and a min tree over the same leaves, written together."""
from __future__ import annotations

import operator as _operator
from typing import Any, Callable, Optional

import numpy as np

from rlgraph.components.helpers.mem_segment_tree import (MemSegmentTree, _resolve_operator, last_writes,
                                                          update_leaves)


class MinSumSegmentTree:
    """A pair of `MemSegmentTree`s (sum and min) holding the same leaf values.

    Prioritized replay (Schaul et al. 2015, https://arxiv.org/abs/1511.05952) needs both
    reductions of the priorities p_i^alpha: the sum to sample proportionally
    (`index_of_prefixsum`) and the minimum to normalize importance weights by their maximum.
    All operations are batched (see `MemSegmentTree`). The capacity is rounded up to a power of
    two; unwritten leaves count 0 in the sum and +inf in the min.

    Args:
        capacity: The number of leaves wanted (rounded up to a power of two).

    Raises:
        RLGraphSpecError: Bad capacity.

    >>> tree = MinSumSegmentTree(capacity=5)  # 8 leaves
    >>> tree.insert([0, 1, 2, 1], [4.0, 9.0, 2.0, 1.0])  # the last write to leaf 1 wins
    >>> tree.capacity, tree.get_sum(), tree.get_min_value(), tree.get_min_value(0, 1)
    (8, 7.0, 1.0, 4.0)
    >>> tree.index_of_prefixsum(np.array([0.0, 4.0, 5.5])).tolist()
    [0, 1, 2]
    """

    def __init__(self, capacity: int):
        self.sum_tree = MemSegmentTree(None, capacity, _operator.add)
        self.min_tree = MemSegmentTree(None, capacity, min)
        self.capacity = self.sum_tree.capacity

    def insert(self, indices: Any, values: Any) -> None:
        """Writes leaves of both trees (duplicates: the last write wins).

        Args:
            indices: An int or an int array [B] in [0, capacity).
            values: A number or an array [B] (non-negative for meaningful sampling).
        """
        indices = np.atleast_1d(np.asarray(indices, dtype=np.int64))
        values = np.broadcast_to(np.asarray(values, dtype=np.float64), indices.shape)
        self.sum_tree._check_indices(indices, "insert(indices)")
        indices, values = last_writes(indices, values)
        update_leaves([self.sum_tree, self.min_tree], indices, values)  # both trees in one pass

    def get(self, indices: Any) -> Any:
        """Reads leaves: a float for an int index, an array [B] for indices [B]."""
        return self.sum_tree.get(indices)

    def get_sum(self, start: int = 0, stop: Optional[int] = None) -> float:
        """The sum of the leaves in [start, stop), O(log n)."""
        return self.sum_tree.get_sum(start, stop)

    def get_min_value(self, start: int = 0, stop: Optional[int] = None) -> float:
        """The minimum of the leaves in [start, stop), O(log n); +inf if none was written."""
        return self.min_tree.get_min_value(start, stop)

    def reduce(self, start: int = 0, limit: Optional[int] = None, reduce_op: Callable = _operator.add) -> float:
        """Reduces [start, limit) with `operator.add` (sum tree), `min` (min tree) or `max` (leaves).

        Raises:
            RLGraphSpecError: An unsupported `reduce_op`.
        """
        ufunc = _resolve_operator(reduce_op, f"{type(self).__name__}.reduce(reduce_op)")[0]
        tree = self.min_tree if ufunc is np.minimum else self.sum_tree
        return tree.reduce(start, limit, reduce_op)

    def index_of_prefixsum(self, prefix_sums: Any) -> Any:
        """Leaf indices i with sum(values[:i]) <= p < sum(values[:i + 1]) for each query p.

        See `MemSegmentTree.index_of_prefixsum` (queries outside [0, total) are clipped to the
        first/last leaf of positive value).
        """
        return self.sum_tree.index_of_prefixsum(prefix_sums)

    def clear(self) -> None:
        """Empties both trees."""
        self.sum_tree.clear()
        self.min_tree.clear()

    def leaves(self) -> np.ndarray:
        """A copy of all leaf values [capacity] (unwritten ones are 0)."""
        return self.sum_tree.values[self.capacity:].copy()

    def __len__(self) -> int:
        return self.capacity

    def __repr__(self) -> str:
        return f"{type(self).__name__}(capacity={self.capacity})"

