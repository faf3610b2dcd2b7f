"""Trace data for the build: backend tensors made from spaces, and spaces read back from results.

The build runs each graph function once, eagerly, on zeros shaped like its input spaces. Every
batch rank has `batch_size` rows and every time rank `time_size` steps (unless the space fixes
a size). A result's leading dim counts as a batch rank when an input had a batch rank of that
size, and the next dim as a time rank likewise; so results keep the ranks of the data they were
computed from, and reductions (a scalar loss) lose them. Variables changed by this trace run are
restored to their initial values when the build ends.
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rlgraph.graphs.op_records import DataOpRecord, leaf_records
from rlgraph.spaces import Dict, Space, TextBox, Tuple
from rlgraph.spaces.space_utils import get_space_from_op

TRACE_BATCH_SIZE = 5
TRACE_TIME_SIZE = 7


class RankContext:
    """Which batch/time sizes the inputs of one graph-function call carried."""
    __slots__ = ("batch_sizes", "time_sizes", "time_major")

    def __init__(self, records: list):
        self.batch_sizes, self.time_sizes, self.time_major = set(), set(), False
        for record in records:
            space = record.space
            if space is None or not hasattr(record.value, "shape"):
                continue
            shape = tuple(record.value.shape)
            # The sizes of the leading ranks, in the order they appear in the data.
            ranks = [("batch", self.batch_sizes), ("time", self.time_sizes)]
            if space.time_major:
                ranks.reverse()
            present = [sizes for kind, sizes in ranks if (space.has_batch_rank if kind == "batch"
                                                          else space.has_time_rank)]
            for sizes, dim in zip(present, shape):
                sizes.add(int(dim))
            self.time_major |= bool(space.time_major and space.has_time_rank)


class TraceBackend:
    """Converts between spaces and trace tensors for one backend."""

    def __init__(self, backend: str, batch_size: int = TRACE_BATCH_SIZE, time_size: int = TRACE_TIME_SIZE):
        self.backend = backend
        self.batch_size = batch_size
        self.time_size = time_size

    def zeros_for(self, space: Space) -> Any:
        """Backend tensors of zeros shaped like `space` with its batch/time ranks filled in."""
        if isinstance(space, Dict):
            return {k: self.zeros_for(c) for k, c in space._children()}
        if isinstance(space, Tuple):
            return tuple(self.zeros_for(c) for _, c in space._children())
        dims = []
        order = ("time", "batch") if space.time_major else ("batch", "time")
        for kind in order:
            if kind == "batch" and space.has_batch_rank:
                dims.append(space.batch_size or self.batch_size)
            elif kind == "time" and space.has_time_rank:
                dims.append(space.time_size or self.time_size)
        shape = tuple(dims) + tuple(space.shape)
        if isinstance(space, TextBox):
            array = np.full(shape, "", dtype=np.str_)
        else:
            array = np.zeros(shape, dtype=space.dtype)
            low = getattr(space, "low", None)
            if low is not None and space.dtype.kind in "iuf" and np.all(np.asarray(low) > 0):
                # Zeros are not in the space: trace with its smallest member (e.g. a sample size >= 1).
                array = np.broadcast_to(np.asarray(low, dtype=space.dtype), shape).copy()
        return self.to_tensor(array, space)

    def to_tensor(self, array: np.ndarray, space: Space) -> Any:
        if self.backend == "tf":
            import tensorflow as tf
            return tf.constant(array)
        if array.dtype.kind in "USO":
            # PyTorch has no string tensors: text stays a numpy string array on this backend.
            return np.array(array, copy=True)
        import torch
        return torch.from_numpy(np.array(array, copy=True, order="C"))

    def to_records(self, output: Any, inputs: list) -> Any:
        """Wraps a graph function's result into records with inferred spaces."""
        context = RankContext(leaf_records(inputs))
        return self._wrap(output, context)

    def _wrap(self, value: Any, context: RankContext) -> Any:
        if isinstance(value, dict):
            return {k: self._wrap(v, context) for k, v in value.items()}
        if type(value) is tuple or type(value) is list:
            return type(value)(self._wrap(v, context) for v in value)
        if value is None or _is_tf_operation(value):
            return DataOpRecord(None, None)
        return DataOpRecord(self.space_of(value, context), value)

    def space_of(self, value: Any, context: RankContext) -> Optional[Space]:
        shape = tuple(getattr(value, "shape", np.shape(value)))
        batch = time = False
        time_major = False
        if context.time_major and len(shape) >= 2 and shape[0] in context.time_sizes and \
                shape[1] in context.batch_sizes:
            batch = time = time_major = True
        elif len(shape) >= 1 and shape[0] in context.batch_sizes:
            batch = True
            time = len(shape) >= 2 and shape[1] in context.time_sizes
        return get_space_from_op(value, add_batch_rank=batch, add_time_rank=time, time_major=time_major)


def _is_tf_operation(value: Any) -> bool:
    return type(value).__name__ == "Operation" and hasattr(value, "node_def")
