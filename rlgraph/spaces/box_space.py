"""`BoxSpace`: an n-dimensional box of numbers (or strings) of one dtype, bounded per element."""
from __future__ import annotations

import abc
from typing import Any, Optional, Union

import numpy as np

from rlgraph.spaces.space import RankFlag, Space
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError
from rlgraph.utils.util import convert_dtype


def _as_shape(shape: Any, where: str) -> tuple:
    if shape is None:
        return ()
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        shape = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise RLGraphSpaceError(None, "invalid shape", where=where, expected="a tuple of non-negative ints",
                                received=repr(shape)) from None
    if any(d < 0 for d in shape):
        raise RLGraphSpaceError(None, "invalid shape", where=where, expected="non-negative dims", received=shape)
    return shape


class BoxSpace(Space):
    """A box in R^n (or Z^n, or text) with a shape tuple of length n; each element may be bounded.

    Args:
        low: Lower bound(s): a scalar for all elements, or an array of `shape`.
        high: Upper bound(s), likewise.
        shape: The shape; derived from array bounds if None.
        add_batch_rank: See `Space`.
        add_time_rank: See `Space`.
        time_major: See `Space`.
        dtype: Any dtype notation (`np.float32`, "float32", `float`, `tf.float32`, `torch.float32`).
    """

    def __init__(self, low: Any, high: Any, shape: Any = None, add_batch_rank: RankFlag = False,
                 add_time_rank: RankFlag = False, time_major: bool = False, dtype: Any = np.float32):
        super().__init__(add_batch_rank=add_batch_rank, add_time_rank=add_time_rank, time_major=time_major)
        where = type(self).__name__
        self._dtype = convert_dtype(dtype, to="np")
        try:
            if shape is None:
                shapes = {np.shape(b) for b in (low, high) if b is not None and np.ndim(b) > 0}
                if len(shapes) > 1:
                    raise RLGraphSpaceError(None, "low and high have different shapes", where=where,
                                            received=f"low={np.shape(low)}, high={np.shape(high)}")
                shape = shapes.pop() if shapes else ()
            self._shape = _as_shape(shape, where)
            self._set_bounds(low, high)
        except ValueError as error:  # numpy on ragged nested lists.
            raise RLGraphSpaceError(None, "low or high is ragged (rows of different lengths)", where=where,
                                    expected="numbers or arrays of one shape",
                                    received=f"low={low!r}, high={high!r}"[:200]) from error

    # --- Bounds --------------------------------------------------------------------------------
    # Scalar bounds (the usual case, and always for spaces inferred from data) are kept as numpy
    # scalars; `low`/`high` arrays of `shape` are made on first access. Array bounds are stored
    # as arrays right away.
    def _set_bounds(self, low: Any, high: Any) -> None:
        where = type(self).__name__
        if np.ndim(low) == 0 and np.ndim(high) == 0:
            self._low_fill, self._high_fill = self._bound_scalar(low, "low"), self._bound_scalar(high, "high")
            self._low = self._high = None
            out_of_order = self._dtype.kind not in "US" and self._size() > 0 and self._low_fill > self._high_fill
        else:
            self._low_fill = self._high_fill = None
            self._low, self._high = self._bound_array(low, "low"), self._bound_array(high, "high")
            out_of_order = self._low.size and self._dtype.kind not in "US" and np.any(self._low > self._high)
        if out_of_order:
            raise RLGraphSpaceError(None, "low must not exceed high", where=where,
                                    received=f"low={low!r}, high={high!r}")

    def _bound_scalar(self, bound: Any, name: str) -> np.generic:
        try:
            return np.asarray(bound, dtype=self._bounds_dtype())[()]
        except (ValueError, TypeError, OverflowError):  # NaN or a string for an int, a number too big, ...
            raise self._bound_error(bound, name) from None

    def _bound_array(self, bound: Any, name: str) -> np.ndarray:
        try:
            return np.broadcast_to(np.asarray(bound, dtype=self._bounds_dtype()), self._shape).copy()
        except (ValueError, TypeError, OverflowError):
            raise self._bound_error(bound, name) from None
        except MemoryError:
            raise RLGraphSpaceError(None, f"{name} is too big to hold as an array", where=type(self).__name__,
                                    received=f"shape {self._shape}",
                                    hint="give scalar low and high: a box keeps those as scalars.") from None

    def _bound_error(self, bound: Any, name: str) -> RLGraphSpaceError:
        try:
            fits = np.broadcast_shapes(np.shape(bound), self._shape) == self._shape
        except ValueError:  # Ragged, or a shape that does not broadcast.
            fits = False
        if not fits:
            return RLGraphSpaceError(None, f"{name} does not fit the shape", where=type(self).__name__,
                                     expected=f"a scalar or an array of shape {self._shape}",
                                     received=f"{name}={bound!r}"[:100])
        return RLGraphSpaceError(None, f"{name} is not a valid bound", where=f"{type(self).__name__}({name})",
                                 expected=f"a number or an array of shape {self._shape}, as {self._bounds_dtype()}",
                                 received=repr(bound)[:100])

    def _bounds_repr(self) -> str:
        """"low=..., high=..." for messages, without making big bound arrays."""
        if self._size() <= 10:
            return f"low={self.low.tolist()}, high={self.high.tolist()}"
        if self._lazy_bounds():
            return f"low={self._low_fill} and high={self._high_fill} for all of shape {self._shape}"
        return f"low and high arrays of shape {self._shape}"

    def _size(self) -> int:
        size = 1
        for dim in self._shape:
            size *= dim
        return size

    def _lazy_bounds(self) -> bool:
        """Whether both bounds are still the scalars given (no array handed out yet)."""
        return self._low is None and self._high is None

    @property
    def low(self) -> np.ndarray:
        """Lower bounds, an array of `shape`."""
        if self._low is None:
            self._low = np.full(self._shape, self._low_fill)
        return self._low

    @low.setter
    def low(self, value: Any) -> None:
        self._low = self._bound_array(value, "low")

    @property
    def high(self) -> np.ndarray:
        """Upper bounds, an array of `shape`."""
        if self._high is None:
            self._high = np.full(self._shape, self._high_fill)
        return self._high

    @high.setter
    def high(self, value: Any) -> None:
        self._high = self._bound_array(value, "high")

    def _fresh_copy(self) -> "BoxSpace":
        """A copy of a space that never handed out its bounds or seeded a generator (fast: no validation)."""
        clone = object.__new__(type(self))
        clone.__dict__ = self.__dict__.copy()
        return clone

    def __setstate__(self, state: dict) -> None:
        # Pickles from before the lazy bounds hold `low`/`high` arrays under those names.
        if "low" in state:
            state = dict(state)
            state["_low"], state["_high"] = state.pop("low"), state.pop("high")
            state["_low_fill"] = state["_high_fill"] = None
        self.__dict__.update(state)

    def _bounds_dtype(self) -> np.dtype:
        """The dtype of the `low`/`high` arrays (IntBox widens it: its exclusive high may not fit)."""
        return self._dtype

    # --- Properties ----------------------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return self._shape

    @property
    def rank(self) -> int:
        return len(self._shape)

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def flat_dim(self) -> int:
        return int(np.prod(self._shape, dtype=np.int64))

    @property
    def bounds(self) -> tuple:
        """(low, high) as arrays of `shape`."""
        return self.low, self.high

    @property
    def global_bounds(self) -> Union[tuple, bool]:
        """(low, high) as scalars if every element shares them, else False."""
        if self._lazy_bounds():
            return False if self._size() == 0 else (self._low_fill.item(), self._high_fill.item())
        if self.low.size == 0:
            return False
        low, high = self.low.flat[0], self.high.flat[0]
        if np.all(self.low == low) and np.all(self.high == high):
            return low.item(), high.item()
        return False

    def low_above_zero(self) -> bool:
        """Whether every lower bound is above 0, so that zeros are not in the box (an empty box: either)."""
        if self._lazy_bounds():
            return bool(self._low_fill > 0)  # (Without making the `low` array.)
        low = self.low
        if low.size and low.flat[0] <= 0:
            return False  # (The usual answer, without comparing the whole array.)
        return bool(np.all(low > 0))

    def get_shape(self, with_batch_rank: RankFlag = False, with_time_rank: RankFlag = False,
                  time_major: Optional[bool] = None, **kwargs) -> tuple:
        return self._extra_dims(with_batch_rank, with_time_rank, time_major) + self._shape

    # --- Sampling ------------------------------------------------------------------------------
    def _sample_dims(self, size: Union[None, int, tuple]) -> tuple:
        if size is None:
            return ()
        if isinstance(size, (tuple, list)):
            return tuple(int(s) for s in size)
        if size == 1 and not self.has_batch_rank:
            return ()
        return (int(size),)

    def sample(self, size: Union[None, int, tuple] = None, fill_value: Any = None) -> Any:
        shape = self._sample_dims(size) + self._shape
        if fill_value is not None:
            # Text has no fixed width: let numpy size the string dtype to the fill value.
            values = np.full(shape, fill_value, dtype=None if self._dtype.kind in "US" else self._dtype)
        else:
            values = self._random(shape)
        return values[()] if values.ndim == 0 else values

    @abc.abstractmethod
    def _random(self, shape: tuple) -> np.ndarray:
        """Random elements of `shape` (sample dims + space shape); implemented per box type."""

    # --- Membership ----------------------------------------------------------------------------
    def _leading_dims_ok(self, shape: tuple) -> bool:
        """Whether `shape` is this space's shape, optionally behind its batch/time dims."""
        extra = len(shape) - len(self._shape)
        if extra < 0 or tuple(shape[extra:]) != self._shape:
            return False
        if extra == 0:
            return True
        allowed = self._extra_dims(True, True, None)
        return len(allowed) == extra and all(a is None or a == s for a, s in zip(allowed, shape))

    def contains(self, sample: Any) -> bool:
        array = np.asarray(sample)
        if not self._dtype_ok(array.dtype) or not self._leading_dims_ok(array.shape):
            return False
        return self._in_bounds(array)

    def _dtype_ok(self, dtype: np.dtype) -> bool:
        return dtype.kind in "iuf"

    def _in_bounds(self, array: np.ndarray) -> bool:
        return bool(np.all(array >= self.low) and np.all(array <= self.high))

    def force_batch(self, samples: Any) -> np.ndarray:
        array = np.asarray(samples, dtype=self._dtype if self._dtype.kind not in "US" else None)
        return array if array.ndim > self.rank else array[None]

    # --- Comparison ----------------------------------------------------------------------------
    def __eq__(self, other: Any) -> bool:
        if not (type(self) is type(other) and self._shape == other._shape and self._dtype == other._dtype
                and self._ranks_equal(other)):
            return False
        if self._lazy_bounds() and other._lazy_bounds():
            return self._size() == 0 or bool(self._low_fill == other._low_fill and self._high_fill == other._high_fill)
        return np.array_equal(self.low, other.low) and np.array_equal(self.high, other.high)

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._shape, str(self._dtype), self._batch_rank, self._time_rank))

    def _repr_body(self) -> str:
        parts = [f"shape={self._shape}", f"dtype={self._dtype.name if self._dtype.kind not in 'US' else 'str'}"]
        bounds = self.global_bounds
        if self._dtype.kind in "iuf":
            if bounds is False:
                parts.append(self._bounds_repr())
            elif np.isfinite(bounds[0]) or np.isfinite(bounds[1]):
                if not self._unbounded_int():
                    parts.append(f"low={bounds[0]}, high={bounds[1]}")
        return ", ".join(parts)

    def _unbounded_int(self) -> bool:
        return False
