"""Space helpers shared by the stateless preprocessors: map container leaves, rebuild boxes."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Optional, Sequence, Tuple as TupleT

import numpy as np

from rlgraph.spaces import BoolBox, FloatBox, IntBox, Space
from rlgraph.spaces.box_space import BoxSpace
from rlgraph.spaces.containers import Dict, Tuple
from rlgraph.utils.nest import tuple_key
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError

_RANK_ATTRIBUTES = ("_batch_rank", "_time_rank", "time_major")


def map_leaf_spaces(space: Space, fn: Callable[[str, Space], Space], key: str = "") -> Space:
    """Applies `fn(auto_key, leaf)` to every primitive leaf of `space`, keeping the nesting.

    The auto-keys are those that `flatten_ops` gives the leaves' data ("" for a plain space,
    "/a/_T0_" for `Dict(a=Tuple(...))`). Containers keep their own batch/time flags.
    """
    if isinstance(space, Dict):
        out = Dict({k: map_leaf_spaces(child, fn, f"{key}/{k}") for k, child in space.items()})
    elif isinstance(space, Tuple):
        out = Tuple([map_leaf_spaces(child, fn, f"{key}/{tuple_key(i)}") for i, child in enumerate(space)])
    else:
        return fn(key, space)
    # The container's own flags are not derivable from its children (mixed children), so copy them.
    vars(out).update({name: vars(space)[name] for name in _RANK_ATTRIBUTES})
    return out


def leaf_spaces(space: Space) -> "OrderedDict[str, Space]":
    """Auto-key -> primitive leaf space (the keys `split_ops` passes with `add_auto_key_as_first_param`)."""
    return OrderedDict(space.flatten())


def rank_kwargs(space: Space) -> dict:
    """The batch/time-rank keyword arguments that recreate `space`'s flags on a new space."""
    return dict(add_batch_rank=space.batch_size or space.has_batch_rank,
                add_time_rank=space.time_size or space.has_time_rank, time_major=space.time_major)


def float_dtype(dtype) -> np.dtype:
    """Float inputs keep their dtype; int and bool inputs become float32."""
    dtype = np.dtype(dtype)
    return dtype if dtype.kind == "f" else np.dtype(np.float32)


def inclusive_bounds(space: BoxSpace) -> TupleT[np.ndarray, np.ndarray]:
    """(low, high) as float64 arrays of the space's shape, both inclusive (IntBox: high - 1)."""
    if isinstance(space, BoolBox):
        return np.zeros(space.shape), np.ones(space.shape)
    low = space.low.astype(np.float64)
    high = space.high.astype(np.float64)
    if isinstance(space, IntBox):
        high = high - 1.0
    return low, high


def make_box(like: Space, dtype: Any, shape: Sequence[int], low: Optional[np.ndarray] = None,
             high: Optional[np.ndarray] = None) -> BoxSpace:
    """A box of `dtype` and `shape` with `like`'s batch/time flags.

    Args:
        like: The space whose rank flags the new box copies.
        dtype: A numpy dtype: float -> FloatBox, int -> IntBox, bool -> BoolBox.
        shape: The shape without batch/time ranks.
        low: Inclusive lower bounds (None: unbounded).
        high: Inclusive upper bounds (None: unbounded); an IntBox gets `floor(high) + 1`.
    """
    dtype = np.dtype(dtype)
    ranks = rank_kwargs(like)
    if dtype.kind == "b":
        return BoolBox(shape=shape, **ranks)
    if dtype.kind == "f":
        low = None if low is None else np.where(np.isnan(low), -np.inf, low)
        high = None if high is None else np.where(np.isnan(high), np.inf, high)
        return FloatBox(low=low, high=high, shape=shape, dtype=dtype, **ranks)
    info = np.iinfo(dtype)
    # 64-bit bounds beyond float precision count as unbounded.
    top, bottom = (float(info.max), float(info.min)) if dtype.itemsize < 8 else (2.0 ** 52, -2.0 ** 52)
    if low is None or high is None or not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))) \
            or np.any(low < bottom) or np.any(high > top) \
            or (np.all(low == info.min) and np.all(high == info.max - 1)):  # An unbounded IntBox's range.
        return IntBox(shape=shape, dtype=dtype, **ranks)
    return IntBox(low=np.ceil(low).astype(np.int64), high=np.floor(high).astype(np.int64) + 1, shape=shape,
                  dtype=dtype, **ranks)


def check_box_leaf(space: Space, key: str, where: str, ranks: Sequence[int] = (), kinds: str = "iufb") -> None:
    """Raises if the leaf at `key` is not a numeric box of an allowed rank and dtype kind.

    Args:
        space: The leaf space.
        key: Its auto-key (for the message; "" for a plain input).
        where: The component's API location, e.g. "<scope>.apply(inputs)".
        ranks: Allowed ranks (without batch/time ranks); empty: any rank.
        kinds: Allowed numpy dtype kinds ("i" int, "u" unsigned, "f" float, "b" bool).
    """
    at = f" at '{key}'" if key else ""
    if not isinstance(space, BoxSpace) or np.dtype(space.dtype).kind not in kinds:
        raise RLGraphSpaceError(space, f"input{at} is not a box of a supported dtype", where=where,
                                expected=f"a box with dtype kind in {list(kinds)}", received=repr(space))
    if ranks and space.rank not in ranks:
        raise RLGraphSpaceError(space, f"input{at} has the wrong rank", where=where,
                                expected=f"rank {' or '.join(str(r) for r in ranks)} (without batch/time ranks)",
                                received=f"shape {space.shape}",
                                hint="images are [H, W] or [H, W, C] behind the batch (and time) rank.")
