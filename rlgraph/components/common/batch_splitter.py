"""`BatchSplitter`: splits a batch into equal shards, e.g. one per device tower."""
from __future__ import annotations

from typing import Any, Optional

from rlgraph.backend_system import get_backend
from rlgraph.components.common.leading_ranks import batch_axis, map_leaf_spaces, require_ranks
from rlgraph.components.component import Component
from rlgraph.spaces import Space
from rlgraph.utils import nest
from rlgraph.utils.decorators import graph_fn, rlgraph_api, tracing
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError


class BatchSplitter(Component):
    """Splits every input of `split_batch(*inputs)` along its batch rank into `num_shards` shards
    of `shard_size` rows: shard k holds rows [k * shard_size, (k + 1) * shard_size) of every input.
    Rows after the last shard are dropped (a batch of 21 in 4 shards of 5 loses row 20).

    With `shard_size=None` the size follows each call's batch: B // num_shards rows (the last
    B % num_shards rows are dropped). Containers are split leaf by leaf; every leaf needs a batch
    rank (time-major [T, B, ...] leaves are split along B). All leaves of all inputs must have the
    same batch size.

    Args:
        num_shards: The number of shards (>= 1).
        shard_size: Rows per shard (>= 1), or None (B // num_shards).
        scope: Default "batch-splitter".

    Raises:
        RLGraphSpecError: For a bad `num_shards` or `shard_size`.
        RLGraphSpaceError: At build, if a leaf of an input has no batch rank.
        RLGraphError: At run time, if the batch has fewer than num_shards * shard_size rows (fewer
            than num_shards with `shard_size=None`) or the batch sizes of the inputs differ.

    API:
        split_batch(*inputs) -> a tuple of `num_shards` shards, each a tuple with one item per input
            (nested like that input).

    >>> from rlgraph.tests import ComponentTest
    >>> test = ComponentTest(BatchSplitter(num_shards=2), input_spaces=dict(
    ...     inputs=[FloatBox(add_batch_rank=True)]), backend="pytorch")
    >>> [shard[0].tolist() for shard in test.test(("split_batch", [np.arange(5, dtype=np.float32)]))]
    [[0.0, 1.0], [2.0, 3.0]]
    """

    def __init__(self, num_shards: int, shard_size: Optional[int] = None, scope: str = "batch-splitter",
                 **kwargs):
        super().__init__(scope=scope, **kwargs)
        name = type(self).__name__
        for arg, value, optional in (("num_shards", num_shards, False), ("shard_size", shard_size, True)):
            if value is None and optional:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise RLGraphSpecError(f"{arg} must be an int >= 1", where=f"{name}({arg})", received=repr(value))
        self.num_shards = num_shards
        self.shard_size = shard_size
        self._axes = []  # Per input: the batch axis of each leaf, nested like it.

    def check_input_spaces(self, input_spaces, action_space=None):
        keys = sorted((k for k in input_spaces if k.startswith("inputs[")), key=lambda k: int(k[7:-1]))
        for key in keys:
            require_ranks(input_spaces[key], f"{self.global_scope}.split_batch({key})", batch=True)
        self._axes = [map_leaf_spaces(input_spaces[key], batch_axis) for key in keys]

    @rlgraph_api
    def split_batch(self, *inputs):
        """`num_shards` shards, each a tuple with one item per input."""
        return self._graph_fn_split_batch(*inputs)

    def _shard_spaces(self, *spaces: Space) -> tuple:
        # A shard has a batch rank, but not the input's fixed batch size (if it had one).
        shard = tuple(map_leaf_spaces(s, lambda leaf: leaf.with_batch_rank(True) if leaf.batch_size else leaf)
                      for s in spaces)
        return tuple(shard for _ in range(self.num_shards))

    # The shards' batch size is num_shards times smaller than the trace's: declared, not inferred.
    @graph_fn(output_space="_shard_spaces")
    def _graph_fn_split_batch(self, *inputs):
        where = f"{self.global_scope}.split_batch(inputs)"
        flat = [(x, axis) for inp, axes in zip(inputs, self._axes)
                for x, axis in zip(nest.flatten(inp), nest.flatten(axes))]
        backend = get_backend()
        checked = tracing.tracer is None  # The build's trace data need not fill the shards.
        shard_size = self._shard_size_tf(flat, where, checked) if backend == "tf" else \
            self._shard_size_torch(flat, where, checked)
        shards = []
        for k in range(self.num_shards):
            start, end = k * shard_size, (k + 1) * shard_size
            shards.append(tuple(nest.map_structure(lambda x, axis: _rows(x, axis, start, end), inp, axes)
                                for inp, axes in zip(inputs, self._axes)))
        return tuple(shards)

    def _shard_size_tf(self, flat: list, where: str, checked: bool) -> Any:
        import tensorflow as tf
        sizes = [tf.shape(x)[axis] for x, axis in flat]
        b = sizes[0]
        size = tf.constant(self.shard_size) if self.shard_size else b // self.num_shards
        if not checked:
            return size
        needed = f"num_shards * shard_size = {self.num_shards * self.shard_size}" if self.shard_size else \
            f"num_shards = {self.num_shards}"
        checks = [tf.debugging.Assert(tf.logical_and(size >= 1, b >= self.num_shards * size), [
            f"{where}: the batch is too small to split. Expected at least {needed} rows; received", b])]
        checks += [tf.debugging.Assert(tf.equal(s, b), [
            f"{where}: the batch sizes of the inputs differ. Expected", b, "rows in every leaf; received", s])
            for s in sizes[1:]]
        with tf.control_dependencies(checks):
            return tf.identity(size)

    def _shard_size_torch(self, flat: list, where: str, checked: bool) -> int:
        sizes = [int(x.shape[axis]) for x, axis in flat]
        b = sizes[0]
        size = self.shard_size or b // self.num_shards
        if checked and any(s != b for s in sizes):
            raise RLGraphError("the batch sizes of the inputs differ", where=where,
                               expected=f"{b} rows in every leaf", received=f"batch sizes {sizes}")
        if checked and (size < 1 or b < self.num_shards * size):
            needed = self.num_shards * size if self.shard_size else self.num_shards
            raise RLGraphError("the batch is too small to split", where=where,
                               expected=f"at least {needed} rows ({self.num_shards} shards"
                                        f"{f' of {self.shard_size}' if self.shard_size else ''})",
                               received=f"{b} rows")
        return size


def _rows(x, axis: int, start, end):
    """Rows [start, end) of `x` along `axis` (0 or 1), clipped like a python slice."""
    return x[start:end] if axis == 0 else x[:, start:end]
