"""Conversion between rlgraph spaces and gymnasium spaces (gymnasium is imported lazily)."""
from __future__ import annotations

from typing import Any

import numpy as np

from rlgraph.spaces.bool_box import BoolBox
from rlgraph.spaces.containers import Dict, Tuple
from rlgraph.spaces.float_box import FloatBox
from rlgraph.spaces.int_box import IntBox
from rlgraph.spaces.space import Space
from rlgraph.spaces.text_box import TextBox
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError


def space_from_gym(gym_space: Any, **ranks) -> Space:
    """Converts a gymnasium (or legacy gym) space into an rlgraph space.

    Discrete(n, start) -> IntBox(start, start + n); MultiDiscrete(nvec, start) -> IntBox(start,
    start + nvec); Box -> FloatBox/IntBox/BoolBox by dtype, with its bounds (an integer Box's
    inclusive high becomes IntBox's exclusive high + 1); MultiBinary(n) -> IntBox(0, 2, shape,
    int8); Text -> TextBox; Dict/Tuple -> Dict/Tuple, recursively.

    Args:
        gym_space: The gymnasium space.
        **ranks: `add_batch_rank`, `add_time_rank`, `time_major` for the result.

    Raises:
        RLGraphSpaceError: For a gymnasium space type without an rlgraph equivalent.
    """
    kind = type(gym_space).__name__
    if kind == "Discrete":
        start = int(getattr(gym_space, "start", 0))
        return IntBox(start, start + int(gym_space.n), dtype=_int_dtype(gym_space.dtype), **ranks)
    if kind == "MultiDiscrete":
        start = np.asarray(getattr(gym_space, "start", np.zeros_like(gym_space.nvec)))
        return IntBox(start, start + np.asarray(gym_space.nvec), dtype=_int_dtype(gym_space.dtype), **ranks)
    if kind == "MultiBinary":
        return IntBox(0, 2, shape=np.atleast_1d(gym_space.n).tolist(), dtype="int8", **ranks)
    if kind == "Box":
        dtype = np.dtype(gym_space.dtype)
        if dtype.kind == "b":
            return BoolBox(shape=gym_space.shape, **ranks)
        if dtype.kind in "iu":
            return IntBox(gym_space.low, np.asarray(gym_space.high, dtype=np.int64) + 1, shape=gym_space.shape,
                          dtype=_int_dtype(dtype), **ranks)
        low = None if np.all(np.isneginf(gym_space.low)) else gym_space.low
        high = None if np.all(np.isposinf(gym_space.high)) else gym_space.high
        return FloatBox(low, high, shape=gym_space.shape, dtype=dtype, **ranks)
    if kind == "Text":
        return TextBox(**ranks)
    if kind == "Dict":
        return Dict({k: space_from_gym(v) for k, v in gym_space.spaces.items()}, **ranks)
    if kind == "Tuple":
        return Tuple(*[space_from_gym(s) for s in gym_space.spaces], **ranks)
    raise RLGraphSpaceError(None, "no rlgraph equivalent for this gymnasium space", where="space_from_gym",
                            expected="Discrete, MultiDiscrete, MultiBinary, Box, Text, Dict or Tuple",
                            received=repr(gym_space))


def _int_dtype(dtype: Any) -> np.dtype:
    dtype = np.dtype(dtype)
    return dtype if dtype.kind in "iu" else np.dtype(np.int64)


def space_to_gym(space: Space) -> Any:
    """Converts an rlgraph space into a gymnasium space (batch/time ranks are dropped).

    Scalar bounded IntBox -> Discrete(n, start); other bounded IntBox -> MultiDiscrete(high - low,
    start=low); unbounded IntBox -> integer Box; FloatBox -> Box; BoolBox -> MultiBinary(shape)
    (a scalar BoolBox becomes MultiBinary(1)); TextBox -> Text; Dict/Tuple -> Dict/Tuple.
    """
    import gymnasium.spaces as gs
    if isinstance(space, Dict):
        return gs.Dict({k: space_to_gym(v) for k, v in space.items()})
    if isinstance(space, Tuple):
        return gs.Tuple([space_to_gym(s) for s in space])
    if isinstance(space, IntBox):
        if space.num_categories and space.rank == 0:
            low, _ = space.global_bounds
            return gs.Discrete(space.num_categories, start=int(low), dtype=space.dtype)
        if space._bounded:
            return gs.MultiDiscrete(space.high.astype(np.int64) - space.low, start=space.low, dtype=space.dtype)
        return gs.Box(space.low, space.high - 1, shape=space.shape, dtype=space.dtype)
    if isinstance(space, BoolBox):
        return gs.MultiBinary(list(space.shape) if space.shape else 1)
    if isinstance(space, FloatBox):
        return gs.Box(space.low, space.high, shape=space.shape, dtype=space.dtype)
    if isinstance(space, TextBox):
        return gs.Text(max_length=1024)
    raise RLGraphSpaceError(space, "no gymnasium equivalent for this space", where="space_to_gym")
