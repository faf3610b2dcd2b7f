"""`Slice`: cuts one item or a range of items off the leading axis of its input."""
from __future__ import annotations

from typing import Any

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.common.leading_ranks import map_leaf_spaces
from rlgraph.components.component import Component
from rlgraph.components.layers.preprocessing.reshape import box_like
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn, rlgraph_api, tracing
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError


def _python_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


class Slice(Component):
    """Slices along axis 0 of the data as it arrives: the batch rank of [B, ...] and [B, T, ...]
    data, the time rank of time-major [T, B, ...] data, the first data dim of data without
    batch/time rank. Container inputs are sliced leaf by leaf.

    `slice(inputs, start_index)` (no `end_index`) picks the single item `start_index` (negative
    counts from the end; out of range is an error): `inputs[start_index]` with `squeeze=True`
    (the axis disappears), `inputs[start_index:start_index + 1]` otherwise (kept with size 1;
    `-1` gives the last item, not an empty slice).

    `slice(inputs, start_index, end_index)` gives the range `inputs[start_index:end_index]` with
    python's rules (negative indices count from the end, out-of-range bounds are clipped, an
    empty range is empty). A range keeps the axis, because a result's rank cannot depend on run-time
    values. The exception, kept from the original RLgraph: with `squeeze=True` a range of length
    1 given as python ints at build time (from a parent component) is squeezed like a single index.
    With `squeeze=True` a range whose bounds arrive at run time is an error at build time. Ranges
    need a batch or time rank on every leaf (the length of a range over a fixed data dim would
    depend on run-time values).

    Args:
        squeeze: Remove the sliced axis of a single-index slice.
        scope: Default "slice".

    Raises:
        RLGraphSpecError: If `squeeze` is not a bool.
        RLGraphSpaceError: At build, for `squeeze=True` with a run-time range, a range over a leaf
            without batch/time rank, or a single index into a scalar leaf.
        RLGraphError: At run time, for a single index outside [-n, n).

    API:
        slice(inputs, start_index=0, end_index=None) -> the slice, nested like `inputs`.

    >>> from rlgraph.tests import ComponentTest
    >>> x = np.arange(6, dtype=np.float32).reshape((3, 2))
    >>> test = ComponentTest(Slice(squeeze=True), input_spaces=dict(
    ...     inputs=FloatBox(shape=(2,), add_batch_rank=True), start_index=int), backend="pytorch")
    >>> test.test(("slice", [x, -1])).tolist()
    [4.0, 5.0]
    """

    def __init__(self, squeeze: bool = False, scope: str = "slice", **kwargs):
        super().__init__(scope=scope, **kwargs)
        if not isinstance(squeeze, bool):
            raise RLGraphSpecError("squeeze must be a bool", where=f"{type(self).__name__}(squeeze)",
                                   received=repr(squeeze))
        self.squeeze = squeeze

    @rlgraph_api
    def slice(self, inputs, start_index=0, end_index=None):
        """The single item `start_index` (no `end_index`) or the range [start_index, end_index)."""
        if end_index is None:
            return self._graph_fn_slice_item(inputs, start_index)
        if self.squeeze:
            if not (_python_int(start_index) and _python_int(end_index)):
                raise RLGraphSpaceError(None, "squeeze=True cannot squeeze a range whose bounds arrive at run time "
                                        "(the result's rank would depend on them)",
                                        where=f"{self.global_scope}.slice(end_index)",
                                        expected="no end_index (a single item), or python-int bounds",
                                        received="a run-time end_index",
                                        hint="slice a single item (leave out end_index), or use squeeze=False.")
            if end_index - start_index == 1 and (start_index >= 0 or end_index < 0):
                return self._graph_fn_slice_item(inputs, start_index)
        return self._graph_fn_slice_range(inputs, start_index, end_index)

    # --- Output spaces -------------------------------------------------------------------------------
    def _item_space(self, inputs: Space, *_) -> Any:
        return map_leaf_spaces(inputs, self._item_leaf_space)

    def _item_leaf_space(self, leaf: Space) -> Space:
        if not self.squeeze:
            if leaf.has_batch_rank or leaf.has_time_rank:
                return leaf
            return self._cut_data_dim(leaf, keep=True)
        if leaf.has_time_rank and (leaf.time_major or not leaf.has_batch_rank):
            return leaf.with_extra_ranks(add_batch_rank=None, add_time_rank=False, time_major=False)
        if leaf.has_batch_rank:
            return leaf.with_extra_ranks(add_batch_rank=False, add_time_rank=None, time_major=False)
        return self._cut_data_dim(leaf, keep=False)

    def _cut_data_dim(self, leaf: Space, keep: bool) -> Space:
        if not leaf.shape:
            raise RLGraphSpaceError(leaf, "a scalar without batch/time rank has no axis to slice",
                                    where=f"{self.global_scope}.slice(inputs)",
                                    expected="a space with a batch/time rank or a data dim")
        low, high = getattr(leaf, "low", None), getattr(leaf, "high", None)
        cut = slice(0, 1) if keep else 0
        shape = ((1,) if keep else ()) + tuple(leaf.shape[1:])
        return box_like(leaf, shape, None if low is None else low[cut], None if high is None else high[cut])

    def _range_space(self, inputs: Space, *_) -> Any:
        def leaf_space(leaf: Space) -> Space:
            if not (leaf.has_batch_rank or leaf.has_time_rank):
                raise RLGraphSpaceError(leaf, "a range needs a batch or time rank to slice along",
                                        where=f"{self.global_scope}.slice(inputs)",
                                        expected="a space with add_batch_rank=True or add_time_rank=True",
                                        hint="slice single items (leave out end_index) from fixed data dims.")
            return leaf
        return map_leaf_spaces(inputs, leaf_space)

    # --- Graph functions -------------------------------------------------------------------------------
    @graph_fn(flatten_ops={"inputs"}, split_ops=True, output_space="_item_space")
    def _graph_fn_slice_item(self, inputs, start_index):
        where = f"{self.global_scope}.slice(start_index)"
        if get_backend() == "tf":
            return _item_tf(inputs, start_index, self.squeeze, where)
        return _item_torch(inputs, start_index, self.squeeze, where)

    @graph_fn(flatten_ops={"inputs"}, split_ops=True, output_space="_range_space")
    def _graph_fn_slice_range(self, inputs, start_index, end_index):
        if get_backend() == "tf":
            import tensorflow as tf
            n = tf.shape(inputs, out_type=tf.int64)[0]
            start, end = _clip_tf(start_index, n), _clip_tf(end_index, n)
            return tf.gather(inputs, tf.range(start, tf.maximum(start, end)))
        return inputs[int(start_index):int(end_index)]


def _item_tf(x, index, squeeze: bool, where: str):
    import tensorflow as tf
    n = tf.shape(x, out_type=tf.int64)[0]
    i = tf.cast(index, tf.int64)
    if tracing.tracer is not None:
        # Build trace: the trace data's leading size is arbitrary, so wrap the index into it.
        i = tf.math.floormod(i, tf.maximum(n, 1))
    check = tf.debugging.Assert(tf.logical_and(i >= -n, i < n), [
        f"{where}: index out of range. Expected an index in [-n, n) for the leading size n =", n, "; received", i])
    with tf.control_dependencies([check]):
        i = tf.where(i < 0, i + n, i)
        return tf.gather(x, i) if squeeze else tf.gather(x, tf.reshape(i, [1]))


def _item_torch(x, index, squeeze: bool, where: str):
    n, i = int(x.shape[0]), int(index)
    if tracing.tracer is not None:
        i %= max(n, 1)  # Build trace: see `_item_tf`.
    if not -n <= i < n:
        raise RLGraphError("index out of range", where=where, expected=f"an index in [{-n}, {n}) (the leading size "
                           f"is {n})", received=i)
    i = i + n if i < 0 else i
    return x[i] if squeeze else x[i:i + 1]


def _clip_tf(index, n):
    """A python slice bound as an index in [0, n] (negative counts from the end, then clipped)."""
    import tensorflow as tf
    i = tf.cast(index, tf.int64)
    return tf.clip_by_value(tf.where(i < 0, i + n, i), tf.zeros_like(n), n)
