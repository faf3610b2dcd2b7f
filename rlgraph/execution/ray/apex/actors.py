"""`ApexActors`: the Ape-X executor's sample workers and replay shards (making them, sending weights, restarts)."""
from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from typing import Any, List, Optional

from rlgraph.execution.ray.apex.replay_shard import ReplayShard
from rlgraph.execution.ray.apex.sample_worker import ApexSampleWorker

logger = logging.getLogger(__name__)


@dataclass
class WorkerSlot:
    """One sample worker of the run: its actor, its tasks in flight and its progress (a restarted
    worker takes over its slot)."""

    index: int
    handle: Any
    pid: int
    tasks: List[tuple] = field(default_factory=list)  # (meta future, batch future)
    steps_since_sync: int = 0
    version: int = -1
    timesteps: int = 0            # Env steps this worker slot collected (a restarted worker goes on from here).


@dataclass
class ShardSlot:
    """One replay shard of the run: its actor, its tasks in flight and its size (a restarted
    shard takes over its slot, with the next generation)."""

    index: int
    handle: Any
    pid: int
    generation: int = 0
    size: int = 0
    # Records sent to the shard since it was created or loaded, counted as the shard counts its
    # `inserted_since_load` (a restored shard counts on from its snapshot): a restart loses the difference.
    records_sent: int = 0
    sample_tasks: List[Any] = field(default_factory=list)
    other_tasks: List[tuple] = field(default_factory=list)  # (future, kind, records in it)


class ApexActors:
    """The actors of `ApexExecutor` (a mixin: it uses the executor's specs, its `actors` handle
    and its learner). A worker or shard lives in a slot (`WorkerSlot`, `ShardSlot`); one that
    dies is replaced in its slot, a worker with the newest weights, a shard from its snapshot."""

    # --- Creating -------------------------------------------------------------------------------
    def _make_shard(self, index: int, restore: bool) -> ShardSlot:
        seed = self._seed()
        path = os.path.join(self.snapshot_dir, f"shard-{index}.npz") if self.snapshot_dir else None
        args = (index, self.shard_memory_spec, self.batch_size, self.shard_min_size,
                self.replay_spec["snapshot_interval"], path, path if restore else None,
                None if seed is None else seed + 100 + index)
        handle, pid = self._create(ReplayShard, args, self.executor_spec["num_cpus_per_replay_actor"], 0,
                                   f"replay shard {index}")
        shard = ShardSlot(index, handle, pid)
        if restore:
            stats = self.actors.get(self.actors.call(handle, "get_statistics"))
            shard.size, shard.records_sent = stats["size"], stats["inserted_since_load"]
        return shard

    def _make_worker(self, index: int) -> WorkerSlot:
        args = (self.agent_config, self.worker_spec, self.environment_spec, index,
                self.executor_spec["num_sample_workers"], self.replay_spec["clip_rewards"], self.state_space,
                self.action_space)
        handle, pid = self._create(ApexSampleWorker, args, self.executor_spec["num_cpus_per_worker"],
                                   self.executor_spec["num_gpus_per_worker"], f"sample worker {index}")
        worker = WorkerSlot(index, handle, pid)
        if self._horizon is not None:
            self.actors.call(handle, "set_max_timesteps", self._worker_horizon())
        return worker

    def _set_worker_progress(self, worker: WorkerSlot) -> None:
        """Tells a (new or restored) worker how many env steps its slot ran (epsilon schedules)."""
        self.actors.call(worker.handle, "set_timesteps", worker.timesteps)

    _horizon: Optional[int] = None

    def _worker_horizon(self) -> int:
        return int(math.ceil(self._horizon / self.executor_spec["num_sample_workers"]))

    # --- Weights --------------------------------------------------------------------------------
    def _broadcast_weights(self) -> None:
        """Puts the learner's current weights into the object store (once per version)."""
        with self.learner.lock:
            version = self.learner.version
            if version == self._weights[0]:
                return
            weights = self.learner_group.policy_weights(acting=True) if self.learner_group else \
                self.local_agent.get_acting_weights()
        self._weights = (version, self.actors.put(weights))

    def _send_weights(self, worker: WorkerSlot) -> None:
        version, ref = self._weights
        self.actors.call(worker.handle, "set_weights", ref, version)
        worker.version = version
        worker.steps_since_sync = 0
        self.weight_syncs += 1

    # --- Faults ---------------------------------------------------------------------------------
    def _restart_worker(self, worker: WorkerSlot, error: BaseException) -> WorkerSlot:
        """Replaces a dead worker in its slot (see `RayExecutor._count_restart`); returns the new slot."""
        self._count_restart("sample worker", worker.index, error)
        self.actors.kill(worker.handle)
        worker.tasks.clear()  # Its other calls fail too; they must not count as further deaths.
        fresh = self._make_worker(worker.index)
        fresh.timesteps = worker.timesteps
        self._set_worker_progress(fresh)
        self.workers[worker.index] = fresh
        self._broadcast_weights()
        self._send_weights(fresh)
        if self._horizon is not None:  # (Sampling starts with the first workload.)
            self._submit_samples(fresh)
        return fresh

    def _restart_shard(self, shard: ShardSlot, error: BaseException) -> ShardSlot:
        """Replaces a dead shard in its slot, restored from its snapshot; returns the new slot.

        The records lost are those sent to the dead shard after its snapshot (or its load), whether it
        inserted them or not: `records_sent` - the restored shard's `inserted_since_load`.
        """
        self._count_restart("replay shard", shard.index, error)
        self.actors.kill(shard.handle)
        self._batches_lost += len(shard.sample_tasks)  # (They never reach the learner.)
        shard.sample_tasks.clear()  # Its other calls fail too; they must not count as further deaths.
        shard.other_tasks.clear()
        fresh = self._make_shard(shard.index, restore=self.snapshot_dir is not None)
        fresh.generation = shard.generation + 1
        lost = max(shard.records_sent - fresh.records_sent, 0)
        self.records_lost += lost
        logger.warning("replay shard %d restarted with %d records (%d lost).", shard.index, fresh.size, lost)
        self.shards[shard.index] = fresh
        self._submit_sampling(fresh)
        return fresh
