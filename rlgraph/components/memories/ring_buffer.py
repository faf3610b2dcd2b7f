"""`RingBuffer`: an episode-aware ring buffer (the most recent records and episodes)."""
from __future__ import annotations

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.memories.memory import Memory
from rlgraph.components.memories.ring_ops import flat_records, read_rows, write_ring
from rlgraph.spaces import BoolBox, Dict, IntBox
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError

# Stands for "no episode boundary stored"; below every valid boundary (>= -1), so the next
# insert drops it.
_NO_BOUNDARY = -2


class RingBuffer(Memory):
    """A ring buffer of `capacity` records that keeps track of episode boundaries.

    Records must be a Dict with a scalar "terminals" leaf (bool or int; nonzero ends an
    episode). Records are written like in `ReplayMemory` (wrapping at `index`, oldest records
    overwritten). Episode boundaries are kept in insertion numbers (record r of all records
    inserted since the last `clear` lives in slot r % capacity), so they stay unambiguous
    through wrap-around:

    - `episode_indices` [capacity + 1] int64: entries 0..num_episodes are boundaries, oldest
      first. Entry 0 is the insertion number of the terminal just before the oldest complete
      episode (-1 for the start of the memory, -2 when there is none); entries 1..num_episodes
      are the last records of the complete episodes (episode j spans the records after
      boundary j-1 up to and including boundary j).
    - `num_episodes` int64: the number of complete episodes (all of their records stored). An
      episode whose first records were overwritten stops counting.
    - `num_inserted` int64: records inserted since the last `clear`.

    API:
        insert_records(records): Stores a batch of records [B, ...].
        get_records(num_records): The most recent `num_records` records, oldest first.
        get_episodes(num_episodes): The last `num_episodes` complete episodes, concatenated in
            insertion order ([sum of their lengths, ...]).
        get_size(): The number of stored records (int64).
        clear(): Empties the memory and forgets all episodes.

    Asking for more records than stored, or more episodes than complete, raises
    `RLGraphError` (on TF a `tf.debugging` assertion, which the executor converts).

    Args:
        capacity: The maximum number of records.
        scope: Default "ring-buffer".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import Dict, FloatBox, BoolBox
    >>> buffer = RingBuffer(capacity=4)
    >>> space = Dict(r=FloatBox(), terminals=BoolBox(), add_batch_rank=True)
    >>> test = ComponentTest(buffer, input_spaces=dict(records=space, num_records=int, num_episodes=int),
    ...                      backend="pytorch")
    >>> _ = test.test(("insert_records", {"r": np.arange(5, dtype=np.float32),
    ...                                   "terminals": np.array([False, True, False, False, True])}))
    >>> test.test(("get_records", 2))["r"].tolist()
    [3.0, 4.0]
    >>> test.test(("get_episodes", 1))["r"].tolist()  # the first episode lost record 0
    [2.0, 3.0, 4.0]
    """

    def __init__(self, capacity: int = 1000, scope: str = "ring-buffer", **kwargs):
        super().__init__(capacity=capacity, scope=scope, **kwargs)
        self.episode_indices = None
        self.num_episodes = None
        self.num_inserted = None
        self.terminals_key = "/terminals"

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        space = input_spaces.get("records")
        if space is None:
            return
        where = f"{self.global_scope}.insert_records(records)"
        expected = "a Dict space with a scalar 'terminals' leaf (BoolBox or IntBox)"
        if not isinstance(space, Dict) or "terminals" not in space:
            raise RLGraphSpaceError(space, "ring-buffer records need a 'terminals' leaf to track episodes",
                                    where=where, expected=expected, received=space,
                                    hint="add terminals=BoolBox() to the records' Dict space.")
        terminals = space["terminals"]
        if not isinstance(terminals, (BoolBox, IntBox)) or terminals.shape != ():
            raise RLGraphSpaceError(terminals, "the 'terminals' leaf must be a scalar bool or int", where=where,
                                    expected=expected, received=terminals)

    def storage_bytes(self, record_space):
        return super().storage_bytes(record_space) + 8 * (self.capacity + 1)  # The episode boundaries.

    def create_variables(self, input_spaces, action_space=None):
        super().create_variables(input_spaces, action_space)
        initial = np.full((self.capacity + 1,), -1, dtype=np.int64)
        self.episode_indices = self.get_variable("episode_indices", shape=(self.capacity + 1,), dtype="int64",
                                                 initializer=initial, trainable=False)
        self.num_episodes = self.get_variable("num_episodes", dtype="int64", trainable=False)
        self.num_inserted = self.get_variable("num_inserted", dtype="int64", trainable=False)

    @rlgraph_api(flatten_ops=True)
    def _graph_fn_insert_records(self, records):
        flat = flat_records(records)
        if get_backend() == "tf":
            self._update_episodes_tf(flat)
        else:
            self._update_episodes_torch(flat)

    def _update_episodes_tf(self, flat):
        import tensorflow as tf
        first = self.read_variable(self.num_inserted)
        size, num_episodes = self.read_variable(self.size), self.read_variable(self.num_episodes)
        boundaries = self.read_variable(self.episode_indices)[:num_episodes + 1]
        n = write_ring(self, flat)
        terminal_ids = first + tf.where(tf.cast(flat[self.terminals_key], tf.bool))[:, 0]
        # A boundary stays while the record after it (its episode's first record) is stored.
        oldest = first + n - tf.minimum(size + n, self.capacity)
        candidates = tf.concat([boundaries, terminal_ids], axis=0)
        kept = tf.boolean_mask(candidates, candidates >= oldest - 1)
        kept = tf.concat([tf.constant([_NO_BOUNDARY], tf.int64), kept], axis=0)
        count = tf.shape(kept, out_type=tf.int64)[0] - 1
        kept = kept[tf.minimum(count, 1):]
        self.scatter_update_variable(self.episode_indices, tf.range(tf.shape(kept, out_type=tf.int64)[0]), kept)
        self.assign_variable(self.num_episodes, tf.maximum(count - 1, 0))
        self.assign_variable(self.num_inserted, first + n)

    def _update_episodes_torch(self, flat):
        import torch
        first, size, num_episodes = int(self.num_inserted), int(self.size), int(self.num_episodes)
        boundaries = self.episode_indices[:num_episodes + 1].clone()
        n = write_ring(self, flat)
        terminal_ids = first + torch.nonzero(flat[self.terminals_key].bool().reshape(-1)).reshape(-1)
        oldest = first + n - min(size + n, self.capacity)
        candidates = torch.cat([boundaries, terminal_ids.to(torch.int64)])
        kept = candidates[candidates >= oldest - 1]
        if kept.numel() == 0:
            kept = torch.tensor([_NO_BOUNDARY], dtype=torch.int64)
        self.scatter_update_variable(self.episode_indices, torch.arange(kept.numel()), kept)
        self.assign_variable(self.num_episodes, kept.numel() - 1)
        self.assign_variable(self.num_inserted, first + n)

    @rlgraph_api
    def get_records(self, num_records):
        return self._graph_fn_latest(num_records)

    @graph_fn(output_space="records_space")
    def _graph_fn_latest(self, num_records):
        where = f"{self.global_scope}.get_records(num_records)"
        if get_backend() == "tf":
            import tensorflow as tf
            n, size = tf.cast(num_records, tf.int64), self.read_variable(self.size)
            check = tf.debugging.assert_equal(tf.logical_and(n >= 0, n <= size), True,
                                              message=f"{where}: more records requested than stored")
            with tf.control_dependencies([check]):
                slots = (self.read_variable(self.index) - n + tf.range(n, dtype=tf.int64)) % self.capacity
        else:
            import torch
            n, size = int(num_records), int(self.size)
            if not 0 <= n <= size:
                raise RLGraphError("more records requested than stored", where=where,
                                   expected=f"0 to {size}", received=n)
            slots = (int(self.index) - n + torch.arange(n)) % self.capacity
        return read_rows(self, slots)

    @rlgraph_api
    def get_episodes(self, num_episodes):
        return self._graph_fn_episodes(num_episodes)

    @graph_fn(output_space="records_space")
    def _graph_fn_episodes(self, num_episodes):
        where = f"{self.global_scope}.get_episodes(num_episodes)"
        if get_backend() == "tf":
            import tensorflow as tf
            k, stored = tf.cast(num_episodes, tf.int64), self.read_variable(self.num_episodes)
            check = tf.debugging.assert_equal(
                tf.logical_and(k >= 0, k <= stored), True,
                message=f"{where}: more episodes requested than complete episodes stored")
            with tf.control_dependencies([check]):
                start = tf.gather(self.episode_indices, stored - k) + 1
                end = tf.gather(self.episode_indices, stored) + 1
                slots = tf.range(start, end, dtype=tf.int64) % self.capacity
        else:
            import torch
            k, stored = int(num_episodes), int(self.num_episodes)
            if not 0 <= k <= stored:
                raise RLGraphError("more episodes requested than complete episodes stored", where=where,
                                   expected=f"0 to {stored}", received=k)
            start, end = int(self.episode_indices[stored - k]) + 1, int(self.episode_indices[stored]) + 1
            slots = torch.arange(start, end) % self.capacity
        return read_rows(self, slots)

    @rlgraph_api
    def _graph_fn_get_size(self):
        return self.read_variable(self.size)

    @rlgraph_api
    def _graph_fn_clear(self):
        for variable in (self.index, self.size, self.num_episodes, self.num_inserted):
            self.assign_variable(variable, 0)
        self.scatter_update_variable(self.episode_indices, [0], [-1])
