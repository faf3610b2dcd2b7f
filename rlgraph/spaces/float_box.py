"""`FloatBox`: a box of real numbers, bounded or unbounded per element."""
from __future__ import annotations

from typing import Any

import numpy as np

from rlgraph.spaces.box_space import BoxSpace
from rlgraph.spaces.space import RankFlag
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError
from rlgraph.utils.util import convert_dtype


class FloatBox(BoxSpace):
    """A box in R^n. A missing bound means unbounded on that side.

    Random samples (`sample()`) are, per element, uniform in [low, high] where both bounds are
    finite, standard normal N(0, 1) where neither is, and `low + Exp(1)` / `high - Exp(1)` (an
    exponential of mean 1) where only one is. They come from the space's own generator after
    `seed(n)` (the same seed gives the same samples), else from numpy's global one. (The
    original RLgraph drew unbounded elements uniformly from [0, 1).)

    Args:
        low: Lower bound(s) (inclusive); None: -inf.
        high: Upper bound(s) (inclusive); None: +inf.
        shape: The shape; derived from array bounds if None.
        dtype: A float dtype (default float32).
        add_batch_rank: See `Space`.
        add_time_rank: See `Space`.
        time_major: See `Space`.

    >>> FloatBox(-1.0, 1.0, shape=(2,)).flat_dim
    2
    """

    def __init__(self, low: Any = None, high: Any = None, shape: Any = None, dtype: Any = "float32",
                 add_batch_rank: RankFlag = False, add_time_rank: RankFlag = False, time_major: bool = False):
        np_dtype = convert_dtype(dtype, to="np")
        if np_dtype.kind != "f":
            raise RLGraphSpaceError(None, "FloatBox needs a float dtype", where="FloatBox(dtype)",
                                    expected="float16/32/64", received=repr(dtype))
        super().__init__(low=-np.inf if low is None else low, high=np.inf if high is None else high, shape=shape,
                         add_batch_rank=add_batch_rank, add_time_rank=add_time_rank, time_major=time_major,
                         dtype=np_dtype)
        if self._size() and self._bounds_are_not_a_box():
            raise RLGraphSpaceError(None, "invalid bounds", where="FloatBox",
                                    expected="numbers with low < inf and high > -inf (no NaN)",
                                    received=self._bounds_repr())

    def _bounds_are_not_a_box(self) -> bool:
        """Whether a bound is NaN, a low is +inf or a high is -inf (nothing could be sampled)."""
        if self._lazy_bounds():
            low, high = float(self._low_fill), float(self._high_fill)
            return low != low or high != high or low == np.inf or high == -np.inf
        return bool(np.isnan(self.low).any() or np.isnan(self.high).any() or (self.low == np.inf).any()
                    or (self.high == -np.inf).any())

    def _random(self, shape: tuple) -> np.ndarray:
        low = np.broadcast_to(self.low, shape).astype(np.float64)
        high = np.broadcast_to(self.high, shape).astype(np.float64)
        low_ok, high_ok = np.isfinite(low), np.isfinite(high)
        rng = self.rng
        uniform = rng.uniform(np.where(low_ok, low, 0.0), np.where(high_ok, high, 1.0), size=shape)
        normal = rng.standard_normal(size=shape)
        exponential = rng.exponential(size=shape)
        values = np.where(low_ok & high_ok, uniform, normal)
        values = np.where(low_ok & ~high_ok, low + exponential, values)
        values = np.where(~low_ok & high_ok, high - exponential, values)
        return values.astype(self._dtype)
