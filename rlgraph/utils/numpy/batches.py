"""Numpy reference of the batch-handling components: `Slice`, `BatchSplitter`, `BatchApply` and
the index stream of `Sampler`. Each works on one array (apply it per leaf for containers)."""
from __future__ import annotations

from typing import Callable, List, Optional

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphError

# `hash32`: two xor-shift-multiply rounds on 32-bit values (the multiplier is a well-mixing odd
# constant below 2**27, so every product stays below 2**59 and int64 arithmetic never overflows,
# which lets TF and PyTorch compute the very same values).
HASH_MASK = 0xFFFFFFFF
HASH_MULTIPLIER = 0x45D9F3B


def hash32(x) -> np.ndarray:
    """A 32-bit integer mixing function of the low 32 bits of `x` (int64 in, int64 in [0, 2**32) out).

    >>> hash32(np.array([0, 1, 2])).tolist()
    [0, 824515495, 1722258072]
    """
    x = np.asarray(x, dtype=np.int64) & HASH_MASK
    for _ in range(2):
        x = (((x >> 16) ^ x) * HASH_MULTIPLIER) & HASH_MASK
    return (x >> 16) ^ x


def sampler_indices(seed: int, num_calls: int, sample_size: int, batch_size: int) -> np.ndarray:
    """The rows `Sampler` draws on its call number `num_calls` (0 for the first call).

    indices_i = hash32(stream + i) % batch_size for i < sample_size, with
    stream = hash32(seed ^ hash32(num_calls)).

    Returns:
        [sample_size] int64 row indices in [0, batch_size).
    """
    if sample_size < 0 or (sample_size > 0 and batch_size <= 0):
        raise RLGraphError("cannot draw that many rows", where="sampler_indices",
                           received=f"{sample_size} rows from a batch of {batch_size}")
    stream = hash32(np.int64(seed) ^ hash32(num_calls))
    return hash32(stream + np.arange(sample_size, dtype=np.int64)) % max(batch_size, 1)


def slice_leading(x: np.ndarray, start_index: int, end_index: Optional[int] = None,
                  squeeze: bool = False) -> np.ndarray:
    """`Slice` on axis 0: the single item `start_index` (no `end_index`), [n_0, ...] -> [...]
    with `squeeze`, else [1, ...]; or the range x[start_index:end_index] (python rules) where
    `squeeze` only removes the axis of a length-1 range.

    Raises:
        RLGraphError: For a single index outside [-n, n).
    """
    x = np.asarray(x)
    n = x.shape[0]
    if end_index is None:
        if not -n <= start_index < n:
            raise RLGraphError("index out of range", where="slice_leading", expected=f"[{-n}, {n})",
                               received=start_index)
        i = start_index % n
        return x[i] if squeeze else x[i:i + 1]
    out = x[start_index:end_index]
    return out[0] if squeeze and out.shape[0] == 1 else out


def split_batch(x: np.ndarray, num_shards: int, shard_size: Optional[int] = None) -> List[np.ndarray]:
    """`BatchSplitter` on axis 0: `num_shards` consecutive blocks of `shard_size` rows
    (None: B // num_shards), the remaining rows dropped.

    Raises:
        RLGraphError: If B < num_shards * shard_size or the shards would be empty.
    """
    x = np.asarray(x)
    size = shard_size or x.shape[0] // num_shards
    if size < 1 or x.shape[0] < num_shards * size:
        raise RLGraphError("the batch is too small to split", where="split_batch",
                           expected=f"at least {num_shards * max(size, 1)} rows", received=x.shape[0])
    return [x[k * size:(k + 1) * size] for k in range(num_shards)]


def batch_apply(fn: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """`BatchApply`: fn applied to x [B, T, ...] folded into [B*T, ...], the result unfolded to [B, T, ...]."""
    x = np.asarray(x)
    lead = x.shape[:2]
    out = np.asarray(fn(x.reshape((-1,) + x.shape[2:])))
    return out.reshape(lead + out.shape[1:])
