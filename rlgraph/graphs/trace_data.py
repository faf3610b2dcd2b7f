"""Trace data for the build: backend tensors made from spaces, and spaces read back from results.

The build runs each graph function twice, eagerly: once on data whose batch ranks have
`batch_size` rows and time ranks `time_size` steps, and once on data with `alt_batch_size` rows
and `alt_time_size` steps (a space with a fixed batch or time size keeps it in both). A result's
leading dim is a batch rank exactly when it has an input's batch size in the first run and that
input's other batch size in the second; the next dim is a time rank likewise (or the first, then
the batch, for time-major data). So results keep the ranks of the data they were computed from;
reductions over the batch, feature dims that happen to equal a trace size, and dims that fold
batch and time lose them. Graph functions whose results have ranks that no shape shows (a
sample of `num_records` rows) declare their output space (`@graph_fn(output_space=...)`).

Variables changed by the trace runs are restored to their initial values when the build ends.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rlgraph.graphs.op_records import DataOpRecord
from rlgraph.spaces import BoxSpace, Dict, Space, TextBox, Tuple
from rlgraph.spaces.space_utils import shape_and_dtype, space_from_shape

TRACE_BATCH_SIZE = 5
TRACE_TIME_SIZE = 7
ALT_BATCH_SIZE = 6
ALT_TIME_SIZE = 8


class RankContext:
    """Which (first, second) batch and time sizes the input records of one graph-function call had."""
    __slots__ = ("batch_pairs", "time_pairs", "time_major")

    def __init__(self, records: list):
        self.batch_pairs, self.time_pairs, self.time_major = set(), set(), False
        for record in records:
            space, value, alt = record.space, record.value, record.alt
            shape, alt_shape = getattr(value, "shape", None), getattr(alt, "shape", None)
            if space is None or shape is None or alt_shape is None or len(shape) != len(alt_shape):
                continue
            batch, time = _leading(space, shape), _leading(space, alt_shape)
            if batch[0] is not None:
                self.batch_pairs.add((batch[0], time[0]))
            if batch[1] is not None:
                self.time_pairs.add((batch[1], time[1]))
            self.time_major |= bool(space.has_time_rank and space.time_major)

    def ranks(self, shape: tuple, alt_shape: Optional[tuple]) -> tuple:
        """(batch, time, time_major) flags of an output with these two trace shapes."""
        if alt_shape is None or len(shape) != len(alt_shape):
            return False, False, False
        pairs = list(zip(shape, alt_shape))
        if self.time_major and len(pairs) >= 2 and pairs[0] in self.time_pairs and pairs[1] in self.batch_pairs:
            return True, True, True
        if pairs and pairs[0] in self.batch_pairs:
            return True, len(pairs) >= 2 and pairs[1] in self.time_pairs, False
        if pairs and pairs[0] in self.time_pairs:
            return False, True, False  # E.g. reduced over the batch of [B, T, ...].
        return False, False, False


def _leading(space: Space, shape: tuple) -> tuple:
    """(batch size, time size) that data of `shape` in `space` has (None where it has no such rank)."""
    dims = [int(d) for d in shape]
    batch = time = None
    if space.has_batch_rank and space.has_time_rank:
        if len(dims) >= 2:
            time, batch = (dims[0], dims[1]) if space.time_major else (dims[1], dims[0])
    elif space.has_batch_rank and dims:
        batch = dims[0]
    elif space.has_time_rank and dims:
        time = dims[0]
    return batch, time


class TraceBackend:
    """Converts between spaces and trace tensors for one backend."""

    def __init__(self, backend: str, batch_size: int = TRACE_BATCH_SIZE, time_size: int = TRACE_TIME_SIZE,
                 alt_batch_size: int = ALT_BATCH_SIZE, alt_time_size: int = ALT_TIME_SIZE):
        self.backend = backend
        self.sizes = (batch_size, time_size)
        self.alt_sizes = (alt_batch_size, alt_time_size)
        self._torch = None
        if backend == "pytorch":
            import torch
            self._torch = torch

    def zero_records(self, space: Space) -> Any:
        """Records (nested like `space`) of backend tensors of zeros shaped like `space`, its
        batch/time ranks filled in with the trace sizes (`value`) and the second ones (`alt`)."""
        if isinstance(space, Dict):
            return {k: self.zero_records(c) for k, c in space._children()}
        if isinstance(space, Tuple):
            return tuple(self.zero_records(c) for _, c in space._children())
        return DataOpRecord(space, self.to_tensor(self._zeros_array(space, self.sizes)),
                            self.to_tensor(self._zeros_array(space, self.alt_sizes)))

    @staticmethod
    def _zeros_array(space: Space, sizes: tuple) -> np.ndarray:
        dims = []
        order = ("time", "batch") if space.time_major else ("batch", "time")
        for kind in order:
            if kind == "batch" and space.has_batch_rank:
                dims.append(space.batch_size or sizes[0])
            elif kind == "time" and space.has_time_rank:
                dims.append(space.time_size or sizes[1])
        shape = tuple(dims) + tuple(space.shape)
        if isinstance(space, TextBox):
            return np.full(shape, "", dtype=np.str_)
        array = np.zeros(shape, dtype=space.dtype)
        if space.dtype.kind in "iuf" and isinstance(space, BoxSpace) and space.low_above_zero():
            # Zeros are not in the space: trace with its smallest member (e.g. a sample size >= 1).
            array = np.broadcast_to(np.asarray(space.low, dtype=space.dtype), shape).copy()
        return array

    def to_tensor(self, array: np.ndarray) -> Any:
        """A new backend tensor holding a copy of `array`."""
        if self.backend == "tf":
            import tensorflow as tf
            return tf.constant(array)
        if array.dtype.kind in "USO":
            # PyTorch has no string tensors: text stays a numpy string array on this backend.
            return np.array(array, copy=True)
        # as_tensor (unlike from_numpy) makes it on the current default device: the build runs under
        # the executor's device context, where the variables are made too (a GPU's trace inputs on the GPU).
        return self._torch.as_tensor(np.array(array, copy=True, order="C"))

    def wrap_output(self, output: Any, alt_output: Any, input_records: list) -> Any:
        """Wraps a graph function's two results into records with inferred spaces.

        Args:
            output: The graph function's result on the first trace values (tensors, possibly
                nested in dicts/tuples/lists).
            alt_output: Its result on the second trace values (same structure).
            input_records: The DataOpRecords among its inputs (their ranks decide the outputs').
        """
        return self._wrap(output, alt_output, RankContext(input_records))

    def _wrap(self, value: Any, alt: Any, context: RankContext) -> Any:
        if isinstance(value, dict):
            return {k: self._wrap(v, _item(alt, k), context) for k, v in value.items()}
        kind = type(value)
        if kind is tuple or kind is list:
            return kind(self._wrap(v, _item(alt, i), context) for i, v in enumerate(value))
        if value is None or _is_tf_operation(value):
            return DataOpRecord(None, None)
        shape, dtype = shape_and_dtype(value)
        alt_shape = shape_and_dtype(alt)[0] if alt is not None and not _is_tf_operation(alt) else None
        batch, time, time_major = context.ranks(shape, alt_shape)
        space = space_from_shape(shape, dtype, batch, time, time_major, kind.__name__)
        return DataOpRecord(space, value, alt)


def _item(container: Any, key: Any) -> Any:
    try:
        return container[key]
    except (KeyError, IndexError, TypeError):
        return None


def _is_tf_operation(value: Any) -> bool:
    return type(value).__name__ == "Operation" and hasattr(value, "node_def")
