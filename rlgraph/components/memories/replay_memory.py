"""`ReplayMemory`: a ring buffer of records, sampled uniformly with replacement."""
from __future__ import annotations

from rlgraph.backend_system import get_backend
from rlgraph.components.memories.memory import Memory
from rlgraph.components.memories.ring_ops import flat_records, read_rows, write_ring
from rlgraph.utils import torch_random
from rlgraph.utils.decorators import graph_fn, rlgraph_api, tracing
from rlgraph.utils.rlgraph_errors import RLGraphError


class ReplayMemory(Memory):
    """A replay memory: a ring buffer of `capacity` records, sampled uniformly with replacement.

    `insert_records` writes a batch [B, ...] (per leaf of the record space) at the write position
    `index`, wrapping around: after capacity + k single inserts the oldest k records are
    overwritten and `size == capacity`; a batch larger than the capacity leaves its last
    `capacity` records. Writes are per-leaf scatter updates (no copy of the whole memory).
    `get_records(num_records)` draws `num_records` slots uniformly from the filled part
    [0, size) (TF: `tf.random.uniform`; PyTorch: `torch_random.randint`; both seeded by the executor's
    seed) and returns the records [num_records, ...] in the record space (Dict leaves keep
    their dtypes, e.g. uint8 images).

    API:
        insert_records(records): Stores a batch of records.
        get_records(num_records): A uniform sample (with replacement) of `num_records` records.
        get_size(): The number of stored records (int64).
        clear(): Empties the memory (size and index back to 0).

    Sampling records (num_records > 0) from an empty memory raises
    `RLGraphError` (on TF a `tf.debugging` assertion, which the executor converts).

    Args:
        capacity: The maximum number of records.
        scope: Default "replay-memory".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import Dict, FloatBox, IntBox
    >>> memory = ReplayMemory(capacity=3)
    >>> space = Dict(s=FloatBox(shape=(2,)), a=IntBox(4), add_batch_rank=True)
    >>> test = ComponentTest(memory, input_spaces=dict(records=space, num_records=int), backend="pytorch")
    >>> _ = test.test(("insert_records", {"s": np.ones((4, 2), np.float32), "a": np.array([0, 1, 2, 3])}))
    >>> int(test.test("get_size"))
    3
    >>> test.read_variable_values(memory.memory["/a"]).tolist()  # record 3 overwrote record 0
    [3, 1, 2]
    >>> sample = test.test(("get_records", 5))
    >>> sample["s"].shape, set(sample["a"].tolist()) <= {1, 2, 3}
    ((5, 2), True)
    """

    def __init__(self, capacity: int = 1000, scope: str = "replay-memory", **kwargs):
        super().__init__(capacity=capacity, scope=scope, **kwargs)

    @rlgraph_api(flatten_ops=True)
    def _graph_fn_insert_records(self, records):
        write_ring(self, flat_records(records))

    @rlgraph_api
    def get_records(self, num_records):
        return self._graph_fn_sample(num_records)

    @graph_fn(output_space="records_space")
    def _graph_fn_sample(self, num_records):
        where = f"{self.global_scope}.get_records(num_records)"
        # The build's trace may sample before it inserts: rows of the empty memory are fine then.
        empty_ok = tracing.tracer is not None
        if get_backend() == "tf":
            import tensorflow as tf
            n = tf.cast(num_records, tf.int64)
            size = self.read_variable(self.size)
            valid = tf.logical_or(tf.equal(n, 0), tf.logical_and(n > 0, tf.logical_or(size > 0, empty_ok)))
            check = tf.debugging.assert_equal(valid, True, message=f"{where}: num_records must be >= 0, and "
                                              f"sampling needs a non-empty memory")
            with tf.control_dependencies([check]):
                slots = tf.random.uniform(tf.reshape(n, [1]), maxval=tf.maximum(size, 1), dtype=tf.int64)
        else:
            import torch
            n, size = int(num_records), int(self.size)
            if n < 0:
                raise RLGraphError("num_records must be >= 0", where=where, received=n)
            if n > 0 and size == 0 and not empty_ok:
                raise RLGraphError("cannot sample records from an empty memory", where=where,
                                   hint="insert records first (see get_size()).")
            slots = torch_random.randint(0, max(size, 1), (n,), dtype=torch.long)
        return read_rows(self, slots)

    @rlgraph_api
    def _graph_fn_get_size(self):
        return self.read_variable(self.size)

    @rlgraph_api
    def _graph_fn_clear(self):
        self.assign_variable(self.index, 0)
        self.assign_variable(self.size, 0)


# --- Ring-buffer helpers shared by the memories (graph-function code) ------------------------------
