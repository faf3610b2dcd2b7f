"""Checking and converting the numpy inputs of `execute` against the root's input spaces.

Converters are prepared once per API argument at build time, so that a call costs one
`np.asarray` and a shape comparison per leaf.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from rlgraph.spaces import Dict, Space, TextBox, Tuple
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError


def make_converter(space: Space, where: str, to_tensor: Callable[[np.ndarray], Any]) -> Callable[[Any], Any]:
    """fn(value) -> backend data for `space`, raising `RLGraphSpaceError` on a shape/dtype mismatch."""
    if isinstance(space, Dict):
        children = {k: make_converter(c, f"{where}[{k!r}]", to_tensor) for k, c in space._children()}

        def convert_dict(value):
            if not isinstance(value, dict) or set(value) != set(children):
                raise RLGraphSpaceError(space, "input does not match the Dict space", where=where,
                                        expected=f"a dict with keys {sorted(children)}",
                                        received=f"keys {sorted(map(str, value))}" if isinstance(value, dict)
                                        else type(value).__name__)
            return {k: fn(value[k]) for k, fn in children.items()}
        return convert_dict
    if isinstance(space, Tuple):
        items = [make_converter(c, f"{where}[{i}]", to_tensor) for i, (_, c) in enumerate(space._children())]

        def convert_tuple(value):
            if not isinstance(value, (tuple, list)) or len(value) != len(items):
                raise RLGraphSpaceError(space, "input does not match the Tuple space", where=where,
                                        expected=f"a tuple of {len(items)}",
                                        received=f"{type(value).__name__} of {len(value)}"
                                        if isinstance(value, (tuple, list)) else type(value).__name__)
            return tuple(fn(v) for fn, v in zip(items, value))
        return convert_tuple
    return _leaf_converter(space, where, to_tensor)


def _leaf_converter(space: Space, where: str, to_tensor):
    dtype = np.dtype(space.dtype)
    shape = tuple(space.shape)
    lead = int(space.has_batch_rank) + int(space.has_time_rank)
    # (rank index, required size) of the batch/time ranks that have a fixed size.
    fixed = [(i, size) for i, size in enumerate((space.batch_size, space.time_size)[:lead]) if size is not None]
    ndim = lead + len(shape)
    is_text = isinstance(space, TextBox)

    def fail(message, value):
        expected = f"shape {space.get_shape(with_batch_rank=True, with_time_rank=True)} ({dtype})"
        raise RLGraphSpaceError(space, message, where=where, expected=expected,
                                received=_shape_and_dtype(value),
                                hint="None marks a batch/time rank of any size.")

    def convert(value):
        try:
            array = value if type(value) is np.ndarray else np.asarray(value)
        except ValueError:  # Ragged nested lists.
            fail("input is ragged (rows of different lengths)", value)
        if array.dtype != dtype:
            if is_text:
                if array.dtype.kind not in "US":
                    fail("input dtype does not fit the space", value)
            elif not np.can_cast(array.dtype, dtype, "same_kind") and array.dtype.kind != "O":
                fail("input dtype does not fit the space", value)
            try:
                array = array.astype(dtype)
            except (TypeError, ValueError):  # An object array of dicts, lists, strings, ...
                fail("input dtype does not fit the space", value)
        if array.ndim != ndim or array.shape[lead:] != shape:
            fail("input shape does not fit the space", value)
        if fixed and any(array.shape[i] != size for i, size in fixed):
            fail("input batch/time size does not fit the space", value)
        return to_tensor(array)
    return convert


def _shape_and_dtype(value: Any) -> str:
    try:
        array = np.asarray(value)
    except ValueError:
        return f"a ragged {type(value).__name__}"
    return f"shape {array.shape} ({array.dtype})"
