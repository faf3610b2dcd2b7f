"""`ReplayShard`: one shard of Ape-X's distributed prioritized replay (an actor)."""
from __future__ import annotations

import os
import time
from typing import Any, Optional

import numpy as np

from rlgraph.components.memories.mem_prioritized_replay import MemPrioritizedReplay
from rlgraph.execution.ray.actors import process_id


class ReplayShard:
    """A `MemPrioritizedReplay` served to the executor: inserts from sample workers, batches for the
    learner, priority updates back from it, snapshots for recovery.

    Args:
        index: The shard's index.
        memory_spec: `MemPrioritizedReplay` arguments (capacity of this shard, alpha, beta, epsilon).
        batch_size: Records per sampled batch.
        min_sample_memory_size: `sample` returns None until the shard holds this many records.
        snapshot_interval: Records inserted between snapshots (0: never).
        snapshot_path: Where snapshots go (an .npz file), or None.
        restore_from: A snapshot to start from (after a restart), or None.
        seed: The memory's sampling seed.
    """

    def __init__(self, index: int, memory_spec: dict, batch_size: int, min_sample_memory_size: int,
                 snapshot_interval: int = 0, snapshot_path: Optional[str] = None, restore_from: Optional[str] = None,
                 seed: Optional[int] = None):
        self.index = index
        self.memory = MemPrioritizedReplay(seed=seed, **memory_spec)
        self.batch_size = int(batch_size)
        self.min_sample_memory_size = int(min_sample_memory_size)
        self.snapshot_interval = int(snapshot_interval)
        self.snapshot_path = snapshot_path
        self.inserted_since_snapshot = 0
        self.num_inserted = 0
        self.num_sampled = 0
        self.num_priority_updates = 0
        self.snapshot_time = 0.0
        self.restored_records = 0
        if restore_from is not None and os.path.exists(restore_from):
            self.memory.load(restore_from)
            self.restored_records = self.memory.get_size()

    def ready(self) -> int:
        """The shard's pid, once it is built."""
        return process_id()

    def add(self, batch: dict) -> int:
        """Inserts a sample worker's batch ({"records", "priorities"}); returns the shard's size."""
        records = batch["records"]
        if records is None:
            return self.memory.get_size()
        count = len(records["rewards"])
        start = self.memory.index
        self.memory.insert_records(records)
        if batch.get("priorities") is not None:
            positions = (start + np.arange(max(count - self.memory.capacity, 0), count)) % self.memory.capacity
            self.memory.update_records(positions, batch["priorities"][-len(positions):])
        self.num_inserted += count
        self.inserted_since_snapshot += count
        if self.snapshot_interval and self.snapshot_path and self.inserted_since_snapshot >= self.snapshot_interval:
            self.snapshot()
        return self.memory.get_size()

    def sample(self) -> Optional[dict]:
        """A batch {record keys..., "importance_weights", "indices"}, or None below the minimum size."""
        if self.memory.get_size() < max(self.min_sample_memory_size, 1):
            return None
        records, indices, weights = self.memory.get_records(self.batch_size)
        self.num_sampled += 1
        return dict(records, importance_weights=weights, indices=indices)

    def update_priorities(self, indices: Any, priorities: Any) -> None:
        """Writes new priorities (|TD errors|) for the records at `indices`."""
        self.memory.update_records(indices, priorities)
        self.num_priority_updates += 1

    def size(self) -> int:
        return self.memory.get_size()

    def set_beta(self, beta: float) -> None:
        self.memory.beta = float(beta)

    def snapshot(self) -> Optional[str]:
        """Writes the memory to `snapshot_path` now (atomically); returns the path."""
        if not self.snapshot_path or self.memory.get_size() == 0:
            return None
        start = time.perf_counter()
        path = self.memory.save(self.snapshot_path)
        self.snapshot_time += time.perf_counter() - start
        self.inserted_since_snapshot = 0
        return path

    def save(self, path: str) -> str:
        """Writes the memory to `path` (a checkpoint)."""
        return self.memory.save(path)

    def load(self, path: Any) -> int:
        """Restores the memory from `path` (or a file's verified bytes); returns its size."""
        self.memory.load(path)
        return self.memory.get_size()

    def check(self, path: Any) -> int:
        """Validates a memory file (a path or its bytes) for `load` without changing anything; returns its size."""
        return self.memory.check_file(path)

    def clear(self) -> int:
        """Forgets all records (a checkpoint with an empty shard); returns 0."""
        self.memory.clear()
        return 0

    def get_statistics(self) -> dict:
        return {"index": self.index, "size": self.memory.get_size(), "inserted": self.num_inserted,
                "sampled_batches": self.num_sampled, "priority_updates": self.num_priority_updates,
                "snapshot_time": self.snapshot_time, "restored_records": self.restored_records, "pid": process_id()}
