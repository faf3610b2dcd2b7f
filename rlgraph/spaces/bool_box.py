"""`BoolBox`: a box of booleans, e.g. terminal flags."""
from __future__ import annotations

from typing import Any

import numpy as np

from rlgraph.spaces.box_space import BoxSpace
from rlgraph.spaces.space import RankFlag


class BoolBox(BoxSpace):
    """A box of True/False values.

    Args:
        shape: The shape (default: a scalar).
        add_batch_rank: See `Space`.
        add_time_rank: See `Space`.
        time_major: See `Space`.

    >>> BoolBox(shape=(3,)).zeros().tolist()
    [False, False, False]
    """

    def __init__(self, shape: Any = None, add_batch_rank: RankFlag = False, add_time_rank: RankFlag = False,
                 time_major: bool = False):
        super().__init__(low=False, high=True, shape=shape, add_batch_rank=add_batch_rank,
                         add_time_rank=add_time_rank, time_major=time_major, dtype=np.bool_)

    def _random(self, shape: tuple) -> np.ndarray:
        return self.rng.randint(0, 2, size=shape).astype(np.bool_)

    def _dtype_ok(self, dtype: np.dtype) -> bool:
        return dtype.kind == "b"

    def _in_bounds(self, array: np.ndarray) -> bool:
        return True
