"""`FIFOQueue`: a first-in-first-out queue of records kept in ring-buffer variables."""
from __future__ import annotations

from typing import Any

from rlgraph.backend_system import get_backend
from rlgraph.components.memories.memory import Memory
from rlgraph.components.memories.ring_ops import flat_records, num_rows, read_rows, write_ring
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn, rlgraph_api, tracing
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError


class FIFOQueue(Memory):
    """A first-in-first-out queue of up to `capacity` records (e.g. one trajectory [T, ...] each).

    The queue lives in ring-buffer variables (the `Memory` storage, `index` = the next write
    slot, `size` = the number queued; the oldest record sits in slot (index - size) % capacity),
    not in a backend queue object, so that it is checkpointable and behaves the same on both
    backends. Used by IMPALA-style actors (insert) and learners (dequeue).

    Errors (nothing is written or removed then): inserting more records than there is room for,
    dequeuing more records than are queued, or a negative count raise `RLGraphError` (on TF a
    `tf.debugging` assertion inside the `tf.function`, which the executor converts). The check is
    skipped while the build traces on placeholder data.

    API:
        insert_records(records): Enqueues a batch [B, ...] (one record without batch rank with
            `only_insert_single_records=True`).
        get_records(num_records): Dequeues the oldest `num_records` records [num_records, ...].
        get_size(): The number of queued records (int64).
        clear(): Empties the queue.

    Args:
        capacity: The maximum number of queued records.
        record_space: The space of one record (without batch rank); default: taken from the
            `records` input space. When given, the input space must match it.
        only_insert_single_records: `insert_records` takes one record (a space without batch
            rank) instead of a batch.
        scope: Default "fifo-queue".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> queue = FIFOQueue(capacity=4)
    >>> test = ComponentTest(queue, input_spaces=dict(records=FloatBox(shape=(2,), add_batch_rank=True),
    ...                                               num_records=int), backend="pytorch")
    >>> _ = test.test(("insert_records", np.array([[1, 1], [2, 2], [3, 3]], dtype=np.float32)))
    >>> test.test(("get_records", 2)).tolist()
    [[1.0, 1.0], [2.0, 2.0]]
    >>> int(test.test("get_size"))
    1
    """

    def __init__(self, capacity: int = 100, record_space: Any = None, only_insert_single_records: bool = False,
                 scope: str = "fifo-queue", **kwargs):
        super().__init__(capacity=capacity, scope=scope, **kwargs)
        if not isinstance(only_insert_single_records, bool):
            raise RLGraphSpecError("only_insert_single_records must be a bool",
                                   where=f"{type(self).__name__}(only_insert_single_records)",
                                   received=repr(only_insert_single_records))
        self.only_insert_single_records = only_insert_single_records
        self.fixed_record_space = None
        if record_space is not None:
            try:
                self.fixed_record_space = Space.from_spec(record_space).strip_ranks()
            except RLGraphError as error:
                raise RLGraphSpecError(f"record_space is not a space ({error.message})",
                                       where=f"{type(self).__name__}(record_space)",
                                       received=repr(record_space)) from error

    def check_input_spaces(self, input_spaces, action_space=None):
        space = input_spaces.get("records")
        if space is None:
            return
        where = f"{self.global_scope}.insert_records(records)"
        if not self.only_insert_single_records:
            super().check_input_spaces(input_spaces, action_space)
        elif space.has_batch_rank or space.has_time_rank:
            raise RLGraphSpaceError(space, "with only_insert_single_records=True, records are single records",
                                    where=where, expected="a space without batch and time rank", received=space,
                                    hint="insert a batch with only_insert_single_records=False instead.")
        if self.fixed_record_space is not None and space.strip_ranks() != self.fixed_record_space:
            raise RLGraphSpaceError(space, "records do not match the queue's record_space", where=where,
                                    expected=self.fixed_record_space, received=space.strip_ranks())

    def create_variables(self, input_spaces, action_space=None):
        space = input_spaces.get("records")
        if self.fixed_record_space is not None:
            space = self.fixed_record_space.with_batch_rank()
        super().create_variables(dict(input_spaces, records=space), action_space)

    @rlgraph_api(flatten_ops=True)
    def _graph_fn_insert_records(self, records):
        flat = flat_records(records)
        if self.only_insert_single_records:
            flat = {key: value[None] for key, value in flat.items()}
        where = f"{self.global_scope}.insert_records(records)"
        # The build traces on placeholder batches that may exceed a small capacity: no check then.
        checked = tracing.tracer is None
        if get_backend() == "tf":
            import tensorflow as tf
            n = num_rows(flat)
            checks = []
            if checked:
                checks.append(tf.debugging.assert_less_equal(
                    self.read_variable(self.size) + n, tf.constant(self.capacity, tf.int64),
                    message=f"{where}: the queue is full (capacity {self.capacity})"))
            with tf.control_dependencies(checks):  # No write unless the check passed.
                write_ring(self, flat)
        else:
            n, size = num_rows(flat), int(self.size)
            if checked and size + n > self.capacity:
                raise RLGraphError(f"the queue is full (capacity {self.capacity})", where=where,
                                   expected=f"at most {self.capacity - size} records", received=n,
                                   hint="dequeue with get_records first, or use a larger capacity.")
            write_ring(self, flat)

    @rlgraph_api
    def get_records(self, num_records):
        return self._graph_fn_dequeue(num_records)

    @graph_fn(output_space="records_space")
    def _graph_fn_dequeue(self, num_records):
        where = f"{self.global_scope}.get_records(num_records)"
        if get_backend() == "tf":
            import tensorflow as tf
            n, size = tf.cast(num_records, tf.int64), self.read_variable(self.size)
            check = tf.debugging.assert_equal(tf.logical_and(n >= 0, n <= size), True,
                                              message=f"{where}: fewer records queued than requested")
            with tf.control_dependencies([check]):  # Nothing read or removed unless the check passed.
                head = self.read_variable(self.index) - size
                records = read_rows(self, (head + tf.range(n, dtype=tf.int64)) % self.capacity)
                self.assign_variable(self.size, size - n)
            return records
        import torch
        n, size = int(num_records), int(self.size)
        if not 0 <= n <= size:
            raise RLGraphError("fewer records queued than requested", where=where, expected=f"0 to {size}",
                               received=n)
        records = read_rows(self, (int(self.index) - size + torch.arange(n)) % self.capacity)
        self.assign_variable(self.size, size - n)
        return records

    @rlgraph_api
    def _graph_fn_get_size(self):
        return self.read_variable(self.size)

    @rlgraph_api
    def _graph_fn_clear(self):
        self.assign_variable(self.index, 0)
        self.assign_variable(self.size, 0)
