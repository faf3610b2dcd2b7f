"""`IntBox`: a box of integers, e.g. discrete actions or uint8 image pixels."""
from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from rlgraph.spaces.box_space import BoxSpace
from rlgraph.spaces.space import RankFlag
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError
from rlgraph.utils.util import convert_dtype


class IntBox(BoxSpace):
    """A box in Z^n: every element is an integer in [low, high) (`high` is exclusive).

    `IntBox(4)` is `IntBox(0, 4)`: the values 0, 1, 2, 3, i.e. 4 categories. Without bounds the
    box spans the dtype's range and has no categories.

    Args:
        low: Lower bound(s) (inclusive). Given alone, it is the (exclusive) upper bound and low is 0.
        high: Upper bound(s) (exclusive). Given alone, low is 0.
        shape: The shape; derived from array bounds if None.
        dtype: An integer dtype (default int32).
        add_batch_rank: See `Space`.
        add_time_rank: See `Space`.
        time_major: See `Space`.

    >>> IntBox(4).num_categories
    4
    >>> IntBox(256, shape=(2, 2), dtype="uint8").get_shape(with_category_rank=True)
    (2, 2, 256)
    """

    def __init__(self, low: Any = None, high: Any = None, shape: Any = None, dtype: Any = "int32",
                 add_batch_rank: RankFlag = False, add_time_rank: RankFlag = False, time_major: bool = False):
        np_dtype = convert_dtype(dtype, to="np")
        if np_dtype.kind not in "iu":
            raise RLGraphSpaceError(None, "IntBox needs an integer dtype", where="IntBox(dtype)",
                                    expected="int8/16/32/64 or uint8/16/32/64", received=repr(dtype))
        self._bounded = low is not None or high is not None
        if low is not None and high is None:
            low, high = 0, low
        elif low is None and high is not None:
            low = 0
        info = np.iinfo(np_dtype)
        low = info.min if low is None else low
        high = info.max if high is None else high
        super().__init__(low=low, high=high, shape=shape, add_batch_rank=add_batch_rank, add_time_rank=add_time_rank,
                         time_major=time_major, dtype=np_dtype)
        if self._bounded and self._size() and self._any_high_not_above_low():
            raise RLGraphSpaceError(None, "high (exclusive) must be greater than low", where="IntBox",
                                    received=self._bounds_repr())
        if self._bounded and self._size() and not self._bounds_fit_dtype(info):
            raise RLGraphSpaceError(None, f"bounds outside the range of {np_dtype}", where="IntBox",
                                    expected=f"low >= {info.min} and high <= {int(info.max) + 1}",
                                    received=self._bounds_repr(), hint="pick a wider dtype (e.g. int64).")

    def _bounds_fit_dtype(self, info: np.iinfo) -> bool:
        """Whether every value in [low, high) is a value of the dtype (else sampling would fail)."""
        if self._lazy_bounds():
            low, high = int(self._low_fill), int(self._high_fill)
        else:
            low, high = int(self.low.min()), int(self.high.max())
        return info.min <= low and high <= int(info.max) + 1

    def _any_high_not_above_low(self) -> bool:
        if self._lazy_bounds():
            return bool(self._high_fill <= self._low_fill)
        return bool(np.any(self.high <= self.low))

    def _bounds_dtype(self) -> np.dtype:
        return np.dtype(np.uint64 if self._dtype == np.uint64 else np.int64)

    @property
    def num_categories(self) -> int:
        """high - low if all elements share bounded global bounds, else 0."""
        if not self._bounded:
            return 0
        bounds = self.global_bounds
        if bounds is False:
            return 0
        return int(bounds[1] - bounds[0])

    @property
    def flat_dim_with_categories(self) -> int:
        """The flat length if every element were one-hot over its categories (flat_dim without categories)."""
        categories = self.num_categories
        return self.flat_dim * categories if categories else self.flat_dim

    def get_shape(self, with_batch_rank: RankFlag = False, with_time_rank: RankFlag = False,
                  time_major: Optional[bool] = None, with_category_rank: bool = False, **kwargs) -> tuple:
        """See `Space.get_shape`; `with_category_rank` appends `num_categories` (if any)."""
        shape = super().get_shape(with_batch_rank, with_time_rank, time_major)
        if with_category_rank and self.num_categories:
            shape += (self.num_categories,)
        return shape

    def _random(self, shape: tuple) -> np.ndarray:
        return self.rng.randint(self.low, self.high, size=shape, dtype=self._dtype)

    def _dtype_ok(self, dtype: np.dtype) -> bool:
        return dtype.kind in "iu"

    def _in_bounds(self, array: np.ndarray) -> bool:
        # Without bounds, high is the dtype's maximum, which is itself a valid value (255 for uint8).
        below_high = np.all(array < self.high) if self._bounded else np.all(array <= self.high)
        return bool(np.all(array >= self.low) and below_high)

    def _unbounded_int(self) -> bool:
        return not self._bounded

    def __eq__(self, other: Any) -> bool:
        return super().__eq__(other) and self._bounded == other._bounded

    __hash__ = BoxSpace.__hash__
