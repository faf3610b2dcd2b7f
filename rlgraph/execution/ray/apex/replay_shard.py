"""`ReplayShard`: one shard of Ape-X's distributed prioritized replay (an actor)."""
from __future__ import annotations

import logging
import os
import time
from typing import Any, Optional

import numpy as np

from rlgraph.agents.records import record_space
from rlgraph.agents.replay_access import sequence_length
from rlgraph.components.memories.frame_replay import FrameReplay, frame_replay_bytes, holds_stacked_frames
from rlgraph.components.memories.memory_size import format_bytes
from rlgraph.components.memories.mem_prioritized_replay import MemPrioritizedReplay
from rlgraph.execution.ray.actors import process_id
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError

logger = logging.getLogger(__name__)

# The snapshot's copy of `inserted_since_load` (an extra of `MemPrioritizedReplay.save`).
INSERTED_KEY = "inserted_since_load"


class ReplayShard:
    """A `MemPrioritizedReplay` (or `FrameReplay`) served to the executor: inserts from sample workers,
    batches for the learner, priority updates back from it, snapshots for recovery.

    `inserted_since_load` counts the records inserted since the shard was created or loaded from a
    checkpoint; a snapshot stores it with the records, and a shard restored from that snapshot counts
    on from there. The executor counts the records it sent the same way, so after a restart the
    difference is exactly what the restart lost (the inserts after the snapshot, and the records of
    calls that never arrived), however full the shard was.

    Args:
        index: The shard's index.
        memory_spec: `MemPrioritizedReplay` arguments (capacity of this shard, alpha, beta, epsilon), or
            with "type" "frame-replay" `FrameReplay`'s (those plus frame_stack, frame_capacity, compress
            and record_space: its storage is allocated, logged or refused when the shard starts).
        batch_size: Records per sampled batch.
        min_sample_memory_size: `sample` returns None until the shard holds this many records.
        snapshot_interval: Records inserted between snapshots (0: never).
        snapshot_path: Where snapshots go (an .npz file), or None. Without `restore_from`, an
            earlier run's file there is removed (it is not this shard's snapshot).
        restore_from: A snapshot to start from (after a restart), or None.
        seed: The memory's sampling seed.
    """

    def __init__(self, index: int, memory_spec: dict, batch_size: int, min_sample_memory_size: int,
                 snapshot_interval: int = 0, snapshot_path: Optional[str] = None, restore_from: Optional[str] = None,
                 seed: Optional[int] = None):
        self.index = index
        spec = dict(memory_spec)
        memory_class = FrameReplay if spec.pop("type", "mem-prioritized-replay") == "frame-replay" else \
            MemPrioritizedReplay
        self.memory = memory_class(seed=seed, **spec)
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
        self.inserted_since_load = 0
        if restore_from is not None and os.path.exists(restore_from):
            values, state = self.memory.check_file(restore_from, full=True)
            count = values.get(f"extra_{INSERTED_KEY}", np.int64(0))
            if count.shape != () or count.dtype.kind not in "iu" or int(count) < 0:
                raise RLGraphCheckpointError(f"the snapshot's '{INSERTED_KEY}' is damaged",
                                             where=f"ReplayShard {index}", expected="an integer >= 0",
                                             received=repr(count.tolist()))
            self.memory.restore((values, state))
            self.restored_records = self.memory.get_size()
            self.inserted_since_load = int(count)
        elif restore_from is None and snapshot_path and os.path.exists(snapshot_path):
            os.remove(snapshot_path)

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
        self.inserted_since_load += count
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
        path = self.memory.save(self.snapshot_path, extra={INSERTED_KEY: self.inserted_since_load})
        self.snapshot_time += time.perf_counter() - start
        self.inserted_since_snapshot = 0
        return path

    def save(self, path: str) -> int:
        """Writes the memory to `path` (a checkpoint) if it holds records; returns how many (0: no file)."""
        size = self.memory.get_size()
        if size:
            self.memory.save(path)
        return size

    def load(self, path: Any) -> int:
        """Restores the memory from `path` (or a file's verified bytes) and makes it the snapshot (a
        restart comes back to it); the insert count starts again. Returns the size."""
        self.memory.load(path)
        self.inserted_since_load = 0
        self.inserted_since_snapshot = 0
        self.snapshot()
        return self.memory.get_size()

    def check(self, path: Any) -> int:
        """Validates a memory file (a path or its bytes) for `load` without changing anything; returns its size."""
        return self.memory.check_file(path)

    def clear(self) -> int:
        """Forgets all records and the snapshot (a checkpoint with an empty shard); returns 0."""
        self.memory.clear()
        self.inserted_since_load = 0
        self.inserted_since_snapshot = 0
        if self.snapshot_path and os.path.exists(self.snapshot_path):
            os.remove(self.snapshot_path)
        return 0

    def get_statistics(self) -> dict:
        return {"index": self.index, "size": self.memory.get_size(), "inserted": self.num_inserted,
                "sampled_batches": self.num_sampled, "priority_updates": self.num_priority_updates,
                "snapshot_time": self.snapshot_time, "restored_records": self.restored_records,
                "inserted_since_load": self.inserted_since_load, "pid": process_id()}


def resolve_shard_memory_spec(spec: dict, agent: Any, env_frame_stack: Optional[int]) -> dict:
    """A shard's memory spec with its "store_frames_once" applied: a plain spec becomes a
    "frame-replay" where the learner `agent`'s states are stacked frames (frame_stack given, else
    the length of the agent's "sequence" preprocessor, else the env's own stack; see
    `holds_stacked_frames`) or where store_frames_once is true. Such a shard serves the same batches."""
    spec = dict(spec)
    if spec.get("type") == "frame-replay":
        return spec
    store_once, frame_stack = spec.pop("store_frames_once", "auto"), spec.pop("frame_stack", None)
    frame_stack = frame_stack or sequence_length(agent.preprocessing_spec) or env_frame_stack
    if store_once is True or store_once == "auto" and holds_stacked_frames(agent.preprocessed_state_space,
                                                                           frame_stack):
        spec.update(type="frame-replay", frame_stack=frame_stack, frame_capacity=None, compress=False)
    return spec


def complete_frame_replay_spec(spec: dict, num_shards: int, agent: Any, env_frame_stack: Optional[int]) -> None:
    """Completes a shard's "frame-replay" `spec` in place for the learner `agent`'s records.

    Sets frame_stack (given, else the length of a "sequence" preprocessor of the agent, else the
    env's own stack, else 4), each shard's share of frame_capacity and the record space, so that
    each shard allocates its storage when it starts (logged there, or refused with the figure);
    logs the whole replay's bytes.
    """
    if spec.get("frame_stack") is None:
        spec["frame_stack"] = sequence_length(agent.preprocessing_spec) or env_frame_stack or 4
    if spec.get("frame_capacity") is None:
        spec.pop("frame_capacity", None)
    else:
        spec["frame_capacity"] = max(1, spec["frame_capacity"] // num_shards)
    spec["record_space"] = record_space(agent.preprocessed_state_space, agent.action_space)
    compress = bool(spec.get("compress", False))
    shard_bytes = frame_replay_bytes(spec["capacity"], agent.preprocessed_state_space, spec["frame_stack"],
                                     spec.get("frame_capacity"), compress=compress)
    logger.info("Ape-X: %d frame replay shard(s) of capacity %d (%d frames a state): ~%s in all%s.", num_shards,
                spec["capacity"], spec["frame_stack"], format_bytes(num_shards * shard_bytes),
                " plus the compressed frames" if compress else "")
