"""`MemSegmentTree`: a numpy segment tree (sum, min or max) with vectorized batch operations."""
from __future__ import annotations

import operator as _operator
from typing import Any, Callable, Optional

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphSpecError

# Tree operator -> (numpy ufunc applied pairwise, neutral element, name).
_OPERATORS = {
    _operator.add: (np.add, 0.0, "sum"), np.add: (np.add, 0.0, "sum"), sum: (np.add, 0.0, "sum"),
    min: (np.minimum, np.inf, "min"), np.minimum: (np.minimum, np.inf, "min"), np.min: (np.minimum, np.inf, "min"),
    max: (np.maximum, -np.inf, "max"), np.maximum: (np.maximum, -np.inf, "max"), np.max: (np.maximum, -np.inf, "max"),
}


def _resolve_operator(op: Any, where: str):
    try:
        return _OPERATORS[op]
    except (KeyError, TypeError):
        raise RLGraphSpecError("unsupported segment-tree operator", where=where,
                               expected="operator.add, min or max (or np.add, np.minimum, np.maximum)",
                               received=repr(op)) from None


def next_power_of_two(n: int) -> int:
    """The smallest power of two >= n (n >= 1)."""
    return 1 << (int(n) - 1).bit_length()


def last_writes(indices: np.ndarray, values: np.ndarray) -> tuple:
    """Sorted unique indices [K] with the value of each one's last occurrence (last write wins)."""
    if indices.size <= 1 or np.all(indices[1:] > indices[:-1]):  # already sorted and unique: O(B)
        return indices, values
    unique, first_in_reversed = np.unique(indices[::-1], return_index=True)
    return unique, values[::-1][first_in_reversed]


def update_leaves(trees: list, indices: np.ndarray, values: np.ndarray) -> None:
    """Writes sorted unique leaf `indices` of equally sized trees and recomputes their ancestors.

    One numpy pass per tree level; the node indices stay sorted, so each level's parents are
    deduplicated by comparing neighbours instead of sorting.
    """
    if indices.size == 0:
        return
    nodes = indices + trees[0].capacity
    for tree in trees:
        tree.values[nodes] = values
    while nodes[0] > 1:
        nodes = nodes >> 1
        if nodes.size > 1:
            nodes = nodes[np.concatenate(([True], nodes[1:] != nodes[:-1]))]
        left = 2 * nodes
        for tree in trees:
            tree.values[nodes] = tree.ufunc(tree.values[left], tree.values[left + 1])


class MemSegmentTree:
    """In-memory segment tree over `capacity` float leaves, for prioritized replay.

    The tree lives in one flat array `values` of length 2 * capacity: node 1 is the root, the
    children of node k are 2k and 2k + 1, and leaf i sits at `capacity + i`. Every operation
    works on a whole batch at once: `insert` writes all leaves and recomputes the touched
    ancestors one level at a time with numpy (O(B log n) work in log n numpy calls), and
    `index_of_prefixsum` descends for all queries together. Kept in numpy rather than in a
    backend graph because memory and learner often run in separate processes (Ape-X,
    https://arxiv.org/abs/1803.00933) and variable updates in a graph are expensive.

    The capacity is rounded up to a power of two (all leaves then sit on the same level);
    `capacity` is that rounded value. Leaves not yet written (and the padding ones) hold the
    operator's neutral element: 0 for sums, +inf for min, -inf for max.

    Args:
        values: The flat tree array [2 * capacity] to use as storage (it is used in place, not
            copied), or None to allocate one filled with the neutral element.
        capacity: The number of leaves wanted (rounded up to a power of two).
        operator: The tree's reduction: `operator.add`, `min` or `max` (numpy's ufuncs work too).

    Raises:
        RLGraphSpecError: Bad capacity, operator or `values` array.

    >>> tree = MemSegmentTree(None, capacity=3)  # 4 leaves
    >>> tree.insert([0, 1, 2], [1.0, 2.0, 3.0])
    >>> tree.capacity, tree.get_sum(), tree.get_sum(1, 3)
    (4, 6.0, 5.0)
    >>> tree.index_of_prefixsum([0.5, 1.0, 2.9, 3.0, 100.0]).tolist()
    [0, 1, 1, 2, 2]
    """

    def __init__(self, values: Optional[np.ndarray], capacity: int, operator: Callable = _operator.add):
        where = f"{type(self).__name__}"
        if not isinstance(capacity, (int, np.integer)) or isinstance(capacity, bool) or capacity < 1:
            raise RLGraphSpecError("capacity must be a positive int", where=f"{where}(capacity)",
                                   received=repr(capacity))
        self.ufunc, self.neutral, self.op_name = _resolve_operator(operator, f"{where}(operator)")
        self.operator = operator
        self.capacity = next_power_of_two(capacity)
        if values is None:
            values = np.full(2 * self.capacity, self.neutral, dtype=np.float64)
        elif not isinstance(values, np.ndarray) or values.shape != (2 * self.capacity,) or values.dtype.kind != "f":
            raise RLGraphSpecError("values must be a flat float array of length 2 * capacity", where=f"{where}(values)",
                                   expected=f"float array of shape ({2 * self.capacity},)",
                                   received=f"{type(values).__name__} {getattr(values, 'shape', '')}")
        self.values = values

    # --- Writes ----------------------------------------------------------------------------------
    def insert(self, indices: Any, values: Any) -> None:
        """Writes leaves and recomputes their ancestors; with duplicate indices the last write wins.

        Args:
            indices: Leaf indices, an int or an int array [B] in [0, capacity).
            values: The new leaf values, a number or an array [B].
        """
        indices = np.atleast_1d(np.asarray(indices, dtype=np.int64))
        values = np.broadcast_to(np.asarray(values, dtype=self.values.dtype), indices.shape)
        self._check_indices(indices, "insert(indices)")
        indices, values = last_writes(indices, values)
        update_leaves([self], indices, values)

    def clear(self) -> None:
        """Sets every node back to the neutral element."""
        self.values.fill(self.neutral)

    # --- Reads -----------------------------------------------------------------------------------
    def get(self, indices: Any) -> Any:
        """Reads leaves.

        Args:
            indices: An int or an int array [B].

        Returns:
            The leaf value (float) or values [B].
        """
        array = np.asarray(indices, dtype=np.int64)
        self._check_indices(np.atleast_1d(array), "get(indices)")
        out = self.values[array + self.capacity]
        return float(out) if array.ndim == 0 else out

    def reduce(self, start: int = 0, limit: Optional[int] = None, reduce_op: Optional[Callable] = None) -> float:
        """Reduces the leaves in [start, limit) (python-style: negative limit counts from the end).

        Args:
            start: First leaf index.
            limit: One past the last leaf index; None: capacity.
            reduce_op: `operator.add`, `min` or `max`; None: the tree's operator. The tree's own
                operator costs O(log n); another one is computed over the leaves in O(n).

        Returns:
            The reduction (the neutral element for an empty range).
        """
        ufunc, neutral, _ = (self.ufunc, self.neutral, None) if reduce_op is None else \
            _resolve_operator(reduce_op, f"{type(self).__name__}.reduce(reduce_op)")
        start, limit = self._range(start, limit)
        if start >= limit:
            return float(neutral)
        if ufunc is not self.ufunc:
            return float(ufunc.reduce(self.values[self.capacity + start:self.capacity + limit]))
        if start == 0 and limit == self.capacity:
            return float(self.values[1])
        result = neutral
        low, high = start + self.capacity, limit + self.capacity
        while low < high:
            if low & 1:
                result = ufunc(result, self.values[low])
                low += 1
            if high & 1:
                high -= 1
                result = ufunc(result, self.values[high])
            low >>= 1
            high >>= 1
        return float(result)

    def get_sum(self, start: int = 0, stop: Optional[int] = None) -> float:
        """The sum of the leaves in [start, stop)."""
        return self.reduce(start, stop, _operator.add)

    def get_min_value(self, start: int = 0, stop: Optional[int] = None) -> float:
        """The minimum of the leaves in [start, stop) (+inf if empty)."""
        return self.reduce(start, stop, min)

    def index_of_prefixsum(self, prefix_sums: Any) -> Any:
        """For each query p, the leaf whose cumulative interval holds p (a sum tree only).

        Returns the highest index i with sum(values[:i]) <= p among leaves of positive value,
        i.e. sum(values[:i]) <= p < sum(values[:i + 1]), found by one descent for all queries.
        Out-of-range queries are clipped: p < 0 gives the first and p >= total the last leaf of
        positive value, so with a positive total, a zero-valued leaf is never returned (an
        all-zero tree gives 0).

        Args:
            prefix_sums: A number or an array [B] of prefix sums.

        Returns:
            An int, or an int64 array [B] of leaf indices.

        Raises:
            RLGraphSpecError: The tree is not a sum tree.
        """
        if self.ufunc is not np.add:
            raise RLGraphSpecError("index_of_prefixsum needs a sum tree",
                                   where=f"{type(self).__name__}.index_of_prefixsum",
                                   expected="operator=operator.add", received=f"a {self.op_name} tree")
        query = np.asarray(prefix_sums, dtype=np.float64)
        remaining = np.maximum(np.atleast_1d(query), 0.0)
        nodes = np.ones(remaining.shape, dtype=np.int64)
        tree = self.values
        while nodes.size and nodes[0] < self.capacity:  # all queries sit on the same level
            left = 2 * nodes
            left_sum = tree[left]
            # Go right only into a non-empty subtree: a p beyond the total stays on the last positive leaf.
            go_right = (remaining >= left_sum) & (tree[left + 1] > 0.0)
            remaining = np.where(go_right, remaining - left_sum, remaining)
            nodes = left + go_right
        out = nodes - self.capacity
        return int(out[0]) if query.ndim == 0 else out

    # --- Helpers ---------------------------------------------------------------------------------
    def _range(self, start: int, limit: Optional[int]) -> tuple:
        limit = self.capacity if limit is None else int(limit)
        if limit < 0:
            limit += self.capacity
        start = int(start)
        if start < 0:
            start += self.capacity
        return max(start, 0), min(limit, self.capacity)

    def _check_indices(self, indices: np.ndarray, where: str) -> None:
        if indices.size and (indices.min() < 0 or indices.max() >= self.capacity):
            raise RLGraphSpecError("leaf index out of range", where=f"{type(self).__name__}.{where}",
                                   expected=f"indices in [0, {self.capacity})",
                                   received=f"[{indices.min()}, {indices.max()}]")

    def __len__(self) -> int:
        return self.capacity

    def __repr__(self) -> str:
        return f"{type(self).__name__}(capacity={self.capacity}, operator={self.op_name})"
