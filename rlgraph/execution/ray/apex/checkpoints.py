"""Checkpoints of a distributed Ape-X run: the learner, every replay shard and the executor's counters."""
from __future__ import annotations

import os
from typing import Any, Dict, Optional

from rlgraph.utils.checkpoint_dir import CheckpointWriter, write_json
from rlgraph.utils.checkpoint_files import read_checkpoint
from rlgraph.utils.checkpoint_values import check_counter
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError

STATE_FILE = "executor_state.json"
STATE_FORMAT = 1
CHECKPOINT_KIND = "apex-executor"


class ApexCheckpoints:
    """`store_checkpoint` / `load_checkpoint` of `ApexExecutor` (a mixin: it uses the executor's
    learner, shards, workers and counters).

    A checkpoint directory holds `learner/` (the learner agent's `store_model`: weights,
    optimizer, counters), `replay-<i>.npz` per non-empty shard, `executor_state.json`
    (counters, shard files and sizes) and the manifest of all of them; it is written
    atomically (`rlgraph/utils/checkpoint_dir.py`) and read once, verified, before anything is loaded
    (`rlgraph/utils/checkpoint_files.py`).

    A shard found dead by a checkpoint's calls is restarted from its snapshot, as in sampling
    (`RayExecutor._call_each`), and the checkpoint holds the restarted shard.
    """

    def store_checkpoint(self, path: str, extra_files: Optional[Dict[str, Any]] = None) -> str:
        """Writes the learner (weights, optimizer, counters), every replay shard and the executor's
        counters to directory `path`, atomically and with a manifest (as `Agent.store_model`).

        Args:
            path: The checkpoint directory (a new path, or an earlier checkpoint that is replaced).
            extra_files: File name -> JSON-able value also written (e.g. the run's config.json).

        Returns:
            The checkpoint directory.

        Raises:
            RLGraphDistributedError: A dead shard and no restart left (`max_num_worker_restarts`);
                nothing is written then.
        """
        with CheckpointWriter(path, CHECKPOINT_KIND, where=f"{type(self).__name__}.store_checkpoint") as writer:
            with self.learner.lock:
                if self.learner_group:  # (Rank 0's, optimizer state included.)
                    self.learner_group.store_model(writer.path("learner"))
                else:
                    self.local_agent.store_model(writer.path("learner"), add_timestep=False)
            names = [f"replay-{shard.index}.npz" for shard in self.shards]
            # Each shard writes its file if it holds records and returns its size (0: no file).
            sizes = self._call_each(list(self.shards), "save", self._restart_shard,
                                    [(writer.path(name),) for name in names])
            shard_files = [name if size else None for name, size in zip(names, sizes)]
            for shard, size in zip(self.shards, sizes):
                shard.size = size
            state = {"format": STATE_FORMAT, "executor": type(self).__name__, "env_timesteps": self.env_timesteps,
                     "worker_timesteps": [w.timesteps for w in self.workers],
                     "env_frames": self.env_frames, "learner_version": self.learner.version,
                     "num_replay_workers": len(self.shards), "shard_files": shard_files, "shard_sizes": sizes,
                     "records_lost": self.records_lost, "restarts": self.num_restarts}
            write_json(writer.path(STATE_FILE), state)
            for name, value in (extra_files or {}).items():
                write_json(writer.path(name), value, allow_nan=True)
            return writer.commit(self.env_timesteps)

    def load_checkpoint(self, path: str) -> None:
        """Restores a `store_checkpoint` directory: learner, shards, counters; workers get the weights.

        Raises:
            RLGraphCheckpointError: A missing, incomplete or mismatched checkpoint (checked before
                anything changes).
        """
        where = "ApexExecutor.load_checkpoint"
        # Every file, the learner's included, read once and verified; nothing else is read.
        files = read_checkpoint(path, CHECKPOINT_KIND, where)
        state = files.json(STATE_FILE)
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT or \
                state.get("executor") != type(self).__name__:
            raise RLGraphCheckpointError("not an Ape-X executor checkpoint", where=where,
                                         expected=f"format {STATE_FORMAT} of {type(self).__name__}",
                                         received={k: state.get(k) for k in ("format", "executor")}
                                         if isinstance(state, dict) else type(state).__name__)
        if state.get("num_replay_workers") != len(self.shards):
            raise RLGraphCheckpointError("the checkpoint has another number of replay shards", where=where,
                                         expected=len(self.shards), received=state.get("num_replay_workers"))
        counters = {}
        for key in ("env_timesteps", "env_frames", "learner_version", "records_lost", "restarts"):
            counters[key] = check_counter(state.get(key), f"{STATE_FILE}: {key}", where)
        steps = state.get("worker_timesteps", [])
        if not isinstance(steps, list):
            raise RLGraphCheckpointError(f"{STATE_FILE} has damaged 'worker_timesteps'", where=where,
                                         expected="a list of integers >= 0", received=repr(steps)[:200])
        for i, value in enumerate(steps):
            check_counter(value, f"{STATE_FILE}: worker_timesteps[{i}]", where)
        shard_files = state.get("shard_files")
        if not isinstance(shard_files, list) or len(shard_files) != len(self.shards) or \
                not all(f is None or (isinstance(f, str) and os.path.basename(f) == f) for f in shard_files):
            raise RLGraphCheckpointError(f"{STATE_FILE} has damaged 'shard_files'", where=where,
                                         expected=f"{len(self.shards)} file names (or null)",
                                         received=repr(shard_files)[:200])
        missing = [f for f in shard_files if f is not None and not files.has(f)]
        if missing:
            raise RLGraphCheckpointError("replay shard files are missing from the manifest", where=where,
                                         received=missing)
        # The shards get the verified bytes, never a path to read again.
        contents = [None if name is None else files.read(name) for name in shard_files]
        learner = files.sub("learner", "agent")
        restarts_before = self.num_restarts  # (A shard found dead here is restarted, and counted on.)
        # Everything is read and checked before anything changes: the shards' files, then the
        # learner's (its load checks before it writes).
        self._call_each([shard for shard, data in zip(self.shards, contents) if data is not None], "check",
                        self._restart_shard, [(data,) for data in contents if data is not None])
        with self.learner.lock:
            (self.learner_group or self.local_agent).load_checkpoint_files(learner)  # (A group: every learner.)
            self.learner.version = counters["learner_version"]
        for index, data in enumerate(contents):
            # A loaded shard makes the file its snapshot and counts its inserts from zero, as the driver does.
            size = self._call_each([self.shards[index]], "clear" if data is None else "load", self._restart_shard,
                                   [() if data is None else (data,)])[0]
            shard = self.shards[index]  # (The slot's shard, restarted or not.)
            shard.size, shard.records_sent = size, 0
            shard.generation += 1  # Priorities of batches sampled before are dropped.
            self._submit_sampling(shard)
        self.env_timesteps, self.env_frames = counters["env_timesteps"], counters["env_frames"]
        self.records_lost = counters["records_lost"]
        self.num_restarts = counters["restarts"] + self.num_restarts - restarts_before
        self.local_agent.timesteps = self.env_timesteps
        self._reset_pacing()  # No catch-up burst.
        self._weights = (-1, None)
        self._broadcast_weights()
        for worker in self.workers:
            worker.timesteps = steps[worker.index] if worker.index < len(steps) else \
                self.env_timesteps // len(self.workers)
            self._set_worker_progress(worker)
            self._send_weights(worker)
