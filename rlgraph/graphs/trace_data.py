"""Trace data for the build: backend tensors made from spaces, and spaces read back from results.

The build runs each graph function once, eagerly, on zeros shaped like its input spaces. Every
batch rank has `batch_size` rows and every time rank `time_size` steps (unless the space fixes
a size). A result's leading dim counts as a batch rank when an input had a batch rank of that
size, and the next dim as a time rank likewise; so results keep the ranks of the data they were
computed from, and reductions (a scalar loss) lose them. Variables changed by this trace run are
restored to their initial values when the build ends (on PyTorch only those the trace wrote, see
`component_variables.restore_initial_values`).

A build infers a space for every graph-function output, mostly the same few: each distinct (shape,
dtype, ranks) is validated once and shared by its records until code outside the tracer reads one
(`DataOpRecord.space` then gives that record its own copy).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rlgraph.graphs.op_records import DataOpRecord
from rlgraph.spaces import BoxSpace, Dict, Space, TextBox, Tuple
from rlgraph.spaces.space_utils import shape_and_dtype, space_from_shape

TRACE_BATCH_SIZE = 5
TRACE_TIME_SIZE = 7


class RankContext:
    """Which batch/time sizes the inputs of a graph-function call carried.

    Made by `rank_context`, which hands out one shared (and hashable) context per distinct
    combination of input leading sizes, so that outputs can be looked up by their context.
    """
    __slots__ = ("batch_sizes", "time_sizes", "time_major")

    def __init__(self, leadings: tuple):
        batch_sizes, time_sizes, time_major = set(), set(), False
        for batch, time, major in leadings:
            if batch is not None:
                batch_sizes.add(batch)
            if time is not None:
                time_sizes.add(time)
            time_major |= major
        self.batch_sizes, self.time_sizes, self.time_major = batch_sizes, time_sizes, time_major


def rank_context(records: list) -> RankContext:
    """The `RankContext` of the input `records` of one call (see `DataOpRecord.leading`)."""
    key = tuple([record.leading if record.leading is not None else _set_leading(record) for record in records])
    context = _CONTEXTS.get(key)
    if context is None:
        if len(_CONTEXTS) >= _MAX_CONTEXTS:
            _CONTEXTS.clear()
        context = _CONTEXTS[key] = RankContext(key)
    return context


# The leading sizes (batch, time, time-major) of the inputs of a call -> their shared context.
_CONTEXTS: dict = {}
_MAX_CONTEXTS = 1024


# A record's `leading`: (batch size or None, time size or None, whether time-major), or this.
_NO_RANKS = (None, None, False)


def _set_leading(record: DataOpRecord) -> tuple:
    """Sets and returns the `leading` of a record that has none yet."""
    space = record._space
    shape = getattr(record.value, "shape", None)
    if space is None or shape is None:
        record.leading = _NO_RANKS
    else:
        record.leading = _leading(space.has_batch_rank, space.has_time_rank, space.time_major, shape)
    return record.leading


def _leading(batch: bool, time: bool, time_major: bool, shape: Any) -> tuple:
    """The sizes the leading dims of data of `shape` give its batch and time ranks (in data order)."""
    if not (batch or time):
        return _NO_RANKS
    major = bool(time and time_major)
    if len(shape) == 0:
        return (None, None, major) if major else _NO_RANKS
    if batch and time:
        first, second = int(shape[0]), (int(shape[1]) if len(shape) > 1 else None)
        return (second, first, True) if major else (first, second, False)
    return (int(shape[0]), None, False) if batch else (None, int(shape[0]), major)


class TraceBackend:
    """Converts between spaces and trace tensors for one backend."""

    def __init__(self, backend: str, batch_size: int = TRACE_BATCH_SIZE, time_size: int = TRACE_TIME_SIZE):
        self.backend = backend
        self.batch_size = batch_size
        self.time_size = time_size
        self._zeros: dict = {}  # id(space) -> `_zeros_entry(space)`
        self._torch = None
        if backend == "pytorch":
            import torch
            self._torch = torch
        self._tensor_types: set = set()  # Output classes with tuple shapes (torch tensors, numpy arrays).

    def zero_records(self, space: Space) -> Any:
        """Records (nested like `space`) of backend tensors of zeros shaped like `space`, its
        batch/time ranks filled in with the trace sizes."""
        _, arrays, leading = self._zeros_entry(space)
        if leading is not None:
            return DataOpRecord(space, self._torch.from_numpy(arrays.copy()), leading)
        return self._records(space, arrays)

    def _zeros_entry(self, space: Space) -> tuple:
        """(space, its zeros arrays, their records' `leading` where one PyTorch tensor holds them, else None).

        Root input spaces are traced in every pass: their arrays are made once (tensors copy them).
        """
        cached = self._zeros.get(id(space))
        if cached is None or cached[0] is not space:
            arrays = self._zeros_arrays(space)
            leading = None
            if type(arrays) is np.ndarray and self._torch is not None and arrays.dtype.kind not in "USO":
                # (The usual case.) The leading sizes are those of the array's shape.
                leading = _leading(space.has_batch_rank, space.has_time_rank, space.time_major, arrays.shape)
            cached = self._zeros[id(space)] = (space, arrays, leading)
        return cached

    def _records(self, space: Space, arrays: Any) -> Any:
        if type(arrays) is dict:
            return {k: self._records(child, arrays[k]) for k, child in space._children()}
        if type(arrays) is tuple:
            return tuple(self._records(child, a) for (_, child), a in zip(space._children(), arrays))
        if self.backend == "pytorch" and arrays.dtype.kind not in "USO":
            return DataOpRecord(space, self._torch.from_numpy(arrays.copy()))
        return DataOpRecord(space, self.to_tensor(arrays))

    def _zeros_arrays(self, space: Space) -> Any:
        if isinstance(space, Dict):
            return {k: self._zeros_arrays(c) for k, c in space._children()}
        if isinstance(space, Tuple):
            return tuple(self._zeros_arrays(c) for _, c in space._children())
        return self._zeros_array(space)

    def _zeros_array(self, space: Space) -> np.ndarray:
        dims = []
        order = ("time", "batch") if space.time_major else ("batch", "time")
        for kind in order:
            if kind == "batch" and space.has_batch_rank:
                dims.append(space.batch_size or self.batch_size)
            elif kind == "time" and space.has_time_rank:
                dims.append(space.time_size or self.time_size)
        shape = tuple(dims) + tuple(space.shape)
        if isinstance(space, TextBox):
            return np.full(shape, "", dtype=np.str_)
        array = np.zeros(shape, dtype=space.dtype)
        if space.dtype.kind not in "iuf":
            return array
        if isinstance(space, BoxSpace):
            positive = space.low_above_zero()
        else:
            positive = getattr(space, "low", None) is not None and bool(np.all(np.asarray(space.low) > 0))
        if positive:
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
        if self._torch is None:
            import torch
            self._torch = torch
        return self._torch.from_numpy(np.array(array, copy=True, order="C"))

    def wrap_output(self, output: Any, input_records: list) -> Any:
        """Wraps a graph function's result into records with inferred spaces.

        Args:
            output: The graph function's result (tensors, possibly nested in dicts/tuples/lists).
            input_records: The DataOpRecords among its inputs (their ranks decide the outputs').
        """
        context = rank_context(input_records)
        if type(output) in self._tensor_types:
            return self._record(output, context)  # (The usual result: one tensor.)
        return self._wrap(output, context)

    def _wrap(self, value: Any, context: RankContext) -> Any:
        kind = type(value)
        if kind in self._tensor_types:
            return self._record(value, context)
        if isinstance(value, dict):
            return {k: self._wrap(v, context) for k, v in value.items()}
        if kind is tuple or kind is list:
            return kind(self._wrap(v, context) for v in value)
        if value is None or _is_tf_operation(value):
            return DataOpRecord(None, None)
        if isinstance(getattr(value, "shape", None), tuple):
            self._tensor_types.add(kind)  # Next time straight to `_record`.
            return self._record(value, context)
        return DataOpRecord(self.space_of(value, context), value)

    def _ranks(self, shape: Any, context: RankContext) -> tuple:
        """(batch, time, time_major) flags of an output of `shape` computed from inputs in `context`."""
        if context.time_major and len(shape) >= 2 and shape[0] in context.time_sizes and \
                shape[1] in context.batch_sizes:
            return True, True, True
        if len(shape) >= 1 and shape[0] in context.batch_sizes:
            return True, len(shape) >= 2 and shape[1] in context.time_sizes, False
        return False, False, False

    def _record(self, value: Any, context: RankContext) -> DataOpRecord:
        """The record of an output with a tuple `shape` (torch.Size, numpy shapes: plain ints)."""
        shape = value.shape
        # Outputs mostly repeat a few (shape, dtype) computed from inputs of a few rank contexts:
        # one inferred space each, shared.
        key = (type(value), shape, value.dtype, context)
        cached = _OUTPUT_SPACES.get(key)
        if cached is None:
            batch, time, time_major = self._ranks(shape, context)
            full_shape, dtype = shape_and_dtype(value)
            cached = (space_from_shape(full_shape, dtype, batch, time, time_major, type(value).__name__),
                      _leading(batch, time, time_major, shape))
            if len(_OUTPUT_SPACES) >= _MAX_OUTPUT_SPACES:
                _OUTPUT_SPACES.clear()
            _OUTPUT_SPACES[key] = cached
        return DataOpRecord(cached[0], value, cached[1], shared=True)

    def space_of(self, value: Any, context: RankContext) -> Optional[Space]:
        """The space inferred for output `value` of a graph function whose inputs gave `context`."""
        if isinstance(getattr(value, "shape", None), tuple):
            return self._record(value, context).space  # (The record's own copy.)
        shape, dtype = shape_and_dtype(value)
        batch, time, time_major = self._ranks(shape, context)
        return space_from_shape(shape, dtype, batch, time, time_major, type(value).__name__)


# (class, shape, dtype, rank context) of graph-function outputs -> (their inferred space,
# shared by their records (see `DataOpRecord`), which copy it before it reaches other code; their
# records' `leading`).
_OUTPUT_SPACES: dict = {}
_MAX_OUTPUT_SPACES = 1024


def _is_tf_operation(value: Any) -> bool:
    return type(value).__name__ == "Operation" and hasattr(value, "node_def")
