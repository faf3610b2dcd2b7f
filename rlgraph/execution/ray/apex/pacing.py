"""`ApexPacing`: how many batches Ape-X's learner gets per record the workers insert, and the
throttle that holds the workers back when the learner falls behind.

Two cadences, both counted from the moment the replay shards can first be sampled:

- **update_spec** (`executor_spec.replay_ratio` null, the default): `update_steps` batches per
  `update_interval` env steps, as in DQN. Inline this is exact; on Ray it is an upper bound and
  the learner gets fewer updates per env step when it is slower than the workers.
- **replay ratio** r (`executor_spec.replay_ratio`): the learner samples r records per record
  inserted into the replay, i.e. after I inserted records it has done floor(r * I / batch_size)
  updates (RLlib's `training_intensity`, Reverb's samples per insert). A worker is handed its
  next sample task only while the learner owes at most `slack` = ceil(r * num_sample_workers *
  num_worker_samples / batch_size) updates (the workers may run one round ahead of it); at the
  end of a workload the driver waits until the learner owes none. So at every workload's end the
  update count is exact whatever the machine's load; only the wall time changes.
"""
from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Dict, List, Optional

from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class ApexPacing:
    """The learner's cadence of `ApexExecutor` (a mixin: it uses the executor's shards, workers,
    learner and specs). See the module docstring for the two cadences."""

    def _init_pacing(self) -> None:
        spec = self.executor_spec
        ratio = spec["replay_ratio"]
        if ratio is not None and spec["discard_queued_samples"]:
            raise RLGraphSpecError("a replay_ratio and discard_queued_samples exclude each other",
                                   where="ray_spec.executor_spec(replay_ratio, discard_queued_samples)",
                                   received={"replay_ratio": ratio, "discard_queued_samples": True},
                                   hint="with a replay_ratio the workers wait for the learner; dropping sampled "
                                        "batches would break the ratio. Set discard_queued_samples to false.")
        # Exact arithmetic: floor(0.29 * 100 / 1) must be 29, not 28.
        self._ratio: Optional[Fraction] = None if ratio is None else Fraction(repr(ratio))
        self.records_inserted = 0     # Records the workers' batches carried to the shards (all of the run).
        self._learning_start = 0      # Env steps when the shards first could be sampled (update_spec cadence).
        self._batches_requested = 0   # Batches asked of the shards for the learner since then.
        self._batches_lost = 0        # ... of which never reached the learner (a shard died or had none).
        self._origin: Optional[tuple] = None  # (records inserted, batches requested - lost, updates) at the start.
        self._origin_records = 0      # Records inserted while no shard could be sampled yet.
        self._held: List[Any] = []    # Workers waiting for the learner.
        self._draining = False        # The end of a workload: no new tasks until the learner owes nothing.
        self._workload_mark = (0, 0)  # (records since the start, updates) when the workload began.
        self._counted_version = 0     # The learner version up to which workload results counted updates.
        self._slack = None if ratio is None else max(1, math.ceil(
            self._ratio * spec["num_sample_workers"] * spec["num_worker_samples"] / self.batch_size))

    # --- Counting -------------------------------------------------------------------------------
    def _can_sample(self) -> bool:
        return any(s.size >= self.shard_min_size for s in self.shards)

    def _records_since_start(self) -> int:
        return 0 if self._origin is None else self.records_inserted - self._origin[0]

    def _updates_owed(self) -> int:
        """Replay ratio: updates due for the records inserted since learning started, minus those done."""
        if self._ratio is None or self._origin is None:
            return 0
        due = math.floor(self._ratio * self._records_since_start() / self.batch_size)
        return due - (self.learner.version - self._origin[2])

    def _update_allowance(self) -> int:
        """How many more batches the learner may be sent now (none with `update_spec.do_updates`
        false, and none while no shard can be sampled). update_spec cadence: `update_steps` per
        `update_interval` env steps since then, minus those requested. Replay ratio:
        floor(r * records inserted since then / batch_size), minus those requested and not lost."""
        spec = self.local_agent.update_spec
        if not spec["do_updates"]:
            return 0
        if not self._can_sample():
            self._learning_start = self.env_timesteps
            if self._origin is None:
                self._origin_records = self.records_inserted
            return 0
        if self._origin is None:
            self._origin = (self._origin_records, self._batches_requested - self._batches_lost, self.learner.version)
        if self._ratio is not None:
            due = math.floor(self._ratio * self._records_since_start() / self.batch_size)
            return due - (self._batches_requested - self._batches_lost - self._origin[1])
        due = (self.env_timesteps - self._learning_start) // spec["update_interval"] * spec["update_steps"]
        return due - self._batches_requested

    def _reset_pacing(self) -> None:
        """After a checkpoint was loaded: both cadences start again from here (no catch-up burst)."""
        self._learning_start, self._batches_requested, self._batches_lost = self.env_timesteps, 0, 0
        self._origin, self._origin_records = None, self.records_inserted
        self._counted_version = self.learner.version

    # --- Sampling for the learner ---------------------------------------------------------------
    def _submit_sampling(self, shard: Any) -> None:
        if self.mode == "inline":  # (Inline: `_learn_inline` samples.)
            return
        # (The allowance is asked first: while no shard can be sampled it moves the learning start.)
        while self._update_allowance() > 0 and shard.size >= self.shard_min_size and \
                len(shard.sample_tasks) < self.executor_spec["replay_sampling_task_depth"]:
            shard.sample_tasks.append(self.actors.call(shard.handle, "sample"))
            self._batches_requested += 1

    def _learn_inline(self) -> None:
        """Inline mode: the learner takes every batch it is allowed at once, from the shards in turn."""
        while self._update_allowance() > 0:
            ready = [s for s in self.shards if s.size >= self.shard_min_size]  # (A restart replaces a shard.)
            shard = ready[self._batches_requested % len(ready)]
            self._batches_requested += 1
            self._on_sampled_batch(shard, self.actors.call(shard.handle, "sample"), own=False)
            self.learner.process()
            self._return_priorities()

    # --- The throttle ---------------------------------------------------------------------------
    def _hold(self, worker: Any) -> bool:
        """Whether `worker` must wait for the learner (then it is kept until `_release_workers`):
        at the end of a workload, or with a replay ratio while the learner owes more than the
        slack and can catch up (some shard can be sampled)."""
        held = self._draining or (self._ratio is not None and self._updates_owed() > self._slack and
                                  self._can_sample())
        if held and worker not in self._held:
            self._held.append(worker)
        return held

    def _release_workers(self) -> None:
        held, self._held = self._held, []
        for worker in held:
            if self.workers[worker.index] is worker:  # (Not replaced since.)
                self._submit_samples(worker)

    def _wait_for_learner(self, version: int) -> None:
        """On Ray, with nothing else in flight: wait (briefly) for the learner instead of spinning."""
        if self.mode == "ray" and self.learner.is_alive():
            self.learner.wait_for_update(version, timeout=0.05)

    def _end_workload(self) -> int:
        """Replay ratio on Ray: hands out no new tasks and lets the learner work off what it owes
        (tasks in flight are collected in the next workload). Returns the updates meanwhile."""
        if self._ratio is None or self.mode == "inline":
            return 0
        self._draining = True
        updates = 0
        while self._updates_owed() > 0 and self._can_sample():
            updates += self._execute_step(collect_samples=False)["updates"]
        return updates

    def _begin_pacing(self) -> None:
        """A workload starts: every worker gets tasks again (unless the learner is behind)."""
        self._draining, self._held = False, []
        self._workload_mark = (self._records_since_start(), self.learner.version)

    def _pacing_statistics(self) -> Dict[str, Any]:
        """The workload's achieved replay ratio: its updates x batch_size per record it inserted
        once learning had started (NaN if none), the target (None: off), all records inserted."""
        records = self._records_since_start() - self._workload_mark[0]
        updates = self.learner.version - self._workload_mark[1]
        return {"replay_ratio": updates * self.batch_size / records if records else float("nan"),
                "replay_ratio_target": None if self._ratio is None else float(self._ratio),
                "records_inserted": self.records_inserted}
