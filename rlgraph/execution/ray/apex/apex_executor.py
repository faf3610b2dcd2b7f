"""`ApexExecutor`: distributed prioritized experience replay (Ape-X) on Ray, or inline."""
from __future__ import annotations

import copy
import logging
import os
import queue
import tempfile
from typing import Any, Dict, List, Optional

import numpy as np

from rlgraph.execution.ray.apex.actors import ApexActors, ShardSlot, WorkerSlot
from rlgraph.execution.ray.apex.checkpoints import ApexCheckpoints
from rlgraph.execution.ray.apex.learner import LearnerThread
from rlgraph.execution.ray.apex.pacing import ApexPacing
from rlgraph.execution.ray.apex.replay_shard import complete_frame_replay_spec, resolve_shard_memory_spec
from rlgraph.execution.ray.ray_executor import RayExecutor, RLGraphDistributedError
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

logger = logging.getLogger(__name__)


class ApexExecutor(ApexActors, ApexCheckpoints, ApexPacing, RayExecutor):
    """Ape-X (Horgan et al. 2018, https://arxiv.org/abs/1803.00933): many actors act with
    different epsilons and fill a sharded prioritized replay; one learner samples it.

    What runs where:

    - **Sample workers** (`num_sample_workers` actors, `ApexSampleWorker`): an agent copy on the
      config's backend and `num_worker_environments` envs; each task runs `num_worker_samples`
      env steps and returns n-step records with their initial priorities |TD error| (computed
      on the worker) plus the policy version it acted with. `env_interaction_task_depth` tasks
      are in flight per worker.
    - **Replay shards** (`num_replay_workers` actors, `ReplayShard`): each holds
      capacity / num_replay_workers records. A worker's batch goes to the shards in turn (the
      driver passes the object reference on; the records never pass through the driver). Each
      shard keeps `replay_sampling_task_depth` batches of `update_spec.batch_size` in flight
      once it holds min_sample_memory_size / num_replay_workers records.
    - **The learner** (`local_agent`, an `ApexAgent` in this process) runs in a thread fed by a
      queue of `learn_queue_size` batches; the new priorities go back to the shard that served
      the batch (dropped if that shard restarted since). Its env-step counter follows the
      collected steps, so `update_spec.sync_interval` and schedules count env steps as in DQN.
      With `execution_spec.num_learners` N > 1 the thread's updates run on N learner actors, each
      on batch_size / N of the records, gradients averaged (`rlgraph/execution/ray/learner_group.py`).
    - **Pacing** (`pacing.py`): the learner gets `update_steps` batches per `update_interval` env
      steps (on Ray: at most), or, with `executor_spec.replay_ratio` r, exactly floor(r * records
      inserted / batch_size) updates by each workload's end, the workers waiting for it when it
      falls behind.
    - **Weights**: once a worker has run `weight_sync_steps` env steps since its last weights
      and the learner has a newer version, it gets the newest; each version is `ray.put` once.
      Policy lag (learner version - the version a batch was acted with) is reported.

    **Faults**: an actor that dies (e.g. `kill -9`) is noticed by the failed call (of the
    sampling loop, a checkpoint or a statistics call), replaced (at most
    `max_num_worker_restarts` times in all) and, for a worker, given the newest weights; the
    run continues. Records already in a shard are untouched by a worker's death. A restarted
    shard reloads its last snapshot (`apex_replay_spec.snapshot_interval`, or the checkpoint it
    was loaded from); the records sent to it after that are reported lost (`records_lost`).

    **Inline mode** (`executor_spec.mode` "inline"): the same loop with the actors as plain
    objects and the learner stepped by the loop: deterministic, no Ray needed.

    Args:
        environment_spec: The environment spec (or a callable making an env).
        agent_config: The agent config holding `execution_spec.ray_spec`; see
            `rlgraph.execution.ray.specs` for the keys.
        discard_queued_samples: Overrides `executor_spec.discard_queued_samples`.
        ray_address: Overrides `executor_spec.redis_address`.
    """

    def __init__(self, environment_spec: Any, agent_config: dict, discard_queued_samples: Optional[bool] = None,
                 ray_address: Optional[str] = None):
        super().__init__(environment_spec, agent_config, ray_address)
        if discard_queued_samples is not None:
            self.executor_spec["discard_queued_samples"] = bool(discard_queued_samples)
        self.worker_spec = self.ray_spec["worker_spec"]
        self.replay_spec = self.ray_spec["apex_replay_spec"]
        self.env_timesteps = 0
        self.env_frames = 0
        self.queue_inserts = 0
        self.discarded = 0
        self.records_lost = 0
        self.weight_syncs = 0

        self._weights = (-1, None)  # (version, future of the weights dict)
        self._tmpdir = None
        self.workers: List[WorkerSlot] = []
        self.shards: List[ShardSlot] = []
        self.learner = None
        self.local_agent = None
        self._next_shard = 0
        self._workload_lags: List[int] = []
        try:
            self._setup()
        except BaseException:
            self.terminate()
            raise

    # --- Setup ----------------------------------------------------------------------------------
    def _setup(self) -> None:
        from rlgraph.agents import Agent, ApexAgent
        from rlgraph.environments import Environment
        env = self.environment_spec() if callable(self.environment_spec) and \
            not isinstance(self.environment_spec, (dict, str)) else Environment.from_spec(self.environment_spec)
        self.state_space, self.action_space = env.state_space, env.action_space
        env_frame_stack = getattr(env, "frame_stack", None)  # (AtariEnv stacks frames itself.)
        env.terminate()
        self.local_agent = Agent.from_spec(self.learner_config(self.agent_config), state_space=self.state_space,
                                           action_space=self.action_space)
        if not isinstance(self.local_agent, ApexAgent):
            raise RLGraphSpecError("ApexExecutor runs Ape-X agents", where="ApexExecutor(agent_config.type)",
                                   expected="apex", received=self.agent_config.get("type"))
        spec = self.executor_spec
        num_workers, num_shards = spec["num_sample_workers"], spec["num_replay_workers"]
        learner_cpus, learner_gpus = self._learner_demand(self.local_agent)
        self.check_resources(num_workers * spec["num_cpus_per_worker"] + num_shards * spec["num_cpus_per_replay_actor"]
                             + learner_cpus, num_workers * spec["num_gpus_per_worker"] + learner_gpus)
        self.batch_size = self.local_agent.update_spec["batch_size"]
        self._init_pacing()
        self.shard_memory_spec = dict(self.replay_spec["memory_spec"],
                                      capacity=max(1, self.replay_spec["memory_spec"]["capacity"] // num_shards))
        self.shard_memory_spec = resolve_shard_memory_spec(self.shard_memory_spec, self.local_agent, env_frame_stack)
        if self.shard_memory_spec.get("type") == "frame-replay":
            complete_frame_replay_spec(self.shard_memory_spec, num_shards, self.local_agent, env_frame_stack)
        if self.agent_config.get("memory_spec") is not None:
            logger.info("Ape-X: the agent config's memory_spec is not used here: the replay is %d shard(s) of "
                        "apex_replay_spec.memory_spec (%s, capacity %d each).", num_shards,
                        self.shard_memory_spec.get("type", "mem-prioritized-replay"),
                        self.shard_memory_spec["capacity"])
        self.shard_min_size = max(self.replay_spec["min_sample_memory_size"] // num_shards, 1)
        self.snapshot_dir = None
        if self.replay_spec["snapshot_interval"]:
            self.snapshot_dir = self.replay_spec["snapshot_directory"]
            if self.snapshot_dir is None:
                self._tmpdir = tempfile.TemporaryDirectory(prefix="rlgraph-apex-")
                self.snapshot_dir = self._tmpdir.name
            os.makedirs(self.snapshot_dir, exist_ok=True)
        self._make_learner_group(self.local_agent, self.learner_config(self.agent_config))
        self.learner = LearnerThread(self.learner_group or self.local_agent, spec["learn_queue_size"])
        self.shards = [self._make_shard(i, restore=False) for i in range(num_shards)]
        self.workers = [self._make_worker(i) for i in range(num_workers)]
        if self.mode == "ray":
            self.learner.start()
        self._broadcast_weights()
        for worker in self.workers:
            self._send_weights(worker)
        # Sampling starts with the first workload, once the workers know the schedule horizon.

    @staticmethod
    def learner_config(agent_config: dict) -> dict:
        """The learner agent's config for `agent_config` (with or without ray_spec): no ray_spec,
        and a one-record python memory, since the replay lives in the shards. An agent built
        from it (in any process) loads a checkpoint's `learner/` directory.

        Raises:
            RLGraphSpecError: For a malformed ray_spec.
        """
        from rlgraph.agents.apex.agent import LEARNER_MEMORY_SPEC
        from rlgraph.execution.ray.specs import split_ray_spec
        config = split_ray_spec(agent_config)[0] if "ray_spec" in (agent_config.get("execution_spec") or {}) \
            else copy.deepcopy(agent_config)
        config["memory_spec"] = dict(LEARNER_MEMORY_SPEC)
        return config

    def _seed(self) -> Optional[int]:
        return self.local_agent.execution_spec.get("seed")

    # Making, updating and restarting the sample workers and shards: `ApexActors` in actors.py.

    # --- The loop -------------------------------------------------------------------------------
    def _begin_workload(self, num_timesteps: int) -> None:
        configured = self.local_agent.execution_spec.get("max_timesteps")
        self._horizon = int(configured) if configured else self.env_timesteps + num_timesteps
        self.local_agent.max_timesteps = self._horizon
        self._begin_pacing()
        for worker in self.workers:
            self.actors.call(worker.handle, "set_max_timesteps", self._worker_horizon())
            self._submit_samples(worker)

    def _submit_samples(self, worker: WorkerSlot) -> None:
        if self._hold(worker):  # (The learner is behind: `_release_workers` submits.)
            return
        while len(worker.tasks) < self.executor_spec["env_interaction_task_depth"]:
            batch, meta = self.actors.call(worker.handle, "sample", self.executor_spec["num_worker_samples"],
                                           num_returns=2)
            worker.tasks.append((meta, batch))

    def _execute_step(self, collect_samples: bool = True) -> Dict[str, Any]:
        """One round: collects what finished (workers' batches unless `collect_samples` is false),
        feeds the learner, hands out tasks."""
        self._check_learner()
        version_before = self.learner.version
        owners: Dict[Any, tuple] = {}
        for worker in self.workers if collect_samples else ():
            for task in worker.tasks:
                owners[task[0]] = ("worker", worker, task)
        for shard in self.shards:
            for task in shard.sample_tasks:
                owners[task] = ("sample", shard, task)
            for task in shard.other_tasks:
                owners[task[0]] = ("other", shard, task)
        ready, _ = self.actors.wait(list(owners), timeout=0.05)
        result = {"timesteps": 0, "env_frames": 0, "updates": 0, "episode_returns": []}
        for ref in ready:
            kind, owner, task = owners[ref]
            if kind == "worker":
                self._on_worker_result(owner, task, result)
            elif kind == "sample":
                self._on_sampled_batch(owner, task)
            else:
                self._on_shard_call(owner, task)
        if self.mode == "inline":
            self._learn_inline()
        else:
            for shard in self.shards:  # The allowance grows with the env steps collected.
                self._submit_sampling(shard)
        self._return_priorities()
        self._release_workers()
        if not owners:  # (Every worker waits for the learner.)
            self._wait_for_learner(version_before)
        # (Counted from the last count, not from `version_before`: the learner thread may have
        # finished an update between two rounds.)
        version = self.learner.version
        result["updates"], self._counted_version = version - self._counted_version, version
        return result

    def _check_learner(self) -> None:
        if self.learner.error is not None:
            raise RLGraphDistributedError(f"the learner failed ({type(self.learner.error).__name__}: "
                                          f"{self.learner.error})", where="ApexExecutor learner") \
                from self.learner.error

    def _on_worker_result(self, worker: WorkerSlot, task: tuple, result: dict) -> None:
        if self.workers[worker.index] is not worker or task not in worker.tasks:
            return  # From a worker replaced since.
        worker.tasks.remove(task)
        meta_ref, batch_ref = task
        try:
            meta = self.actors.get(meta_ref)
        except Exception as error:  # noqa: BLE001 - sorted below
            if not self.actors.is_actor_death(error):
                raise
            self._restart_worker(worker, error)
            return
        if meta["num_records"]:
            shard = self.shards[self._next_shard % len(self.shards)]
            self._next_shard += 1
            shard.records_sent += meta["num_records"]
            shard.other_tasks.append((self.actors.call(shard.handle, "add", batch_ref), "add", meta["num_records"]))
            self.records_inserted += meta["num_records"]
        self.env_timesteps += meta["timesteps"]
        self.env_frames += meta["env_frames"]
        self.local_agent.timesteps = self.env_timesteps  # Target syncs and schedules count env steps.
        self._workload_lags.append(self.learner.version - meta["version"])
        result["timesteps"] += meta["timesteps"]
        result["env_frames"] += meta["env_frames"]
        result["episode_returns"].extend(meta["episode_returns"])
        result.setdefault("episode_lengths", []).extend(meta["episode_lengths"])
        worker.steps_since_sync += meta["timesteps"]
        worker.timesteps += meta["timesteps"]
        if worker.steps_since_sync >= self.executor_spec["weight_sync_steps"]:
            self._broadcast_weights()
            if self._weights[0] != worker.version:
                self._send_weights(worker)
            else:
                worker.steps_since_sync = 0
        self._submit_samples(worker)

    def _on_sampled_batch(self, shard: ShardSlot, task: Any, own: bool = True) -> None:
        if self.shards[shard.index] is not shard:
            return
        if own:
            if task not in shard.sample_tasks:
                return
            shard.sample_tasks.remove(task)
        try:
            batch = self.actors.get(task)
        except Exception as error:  # noqa: BLE001
            if not self.actors.is_actor_death(error):
                raise
            self._batches_lost += 1
            self._restart_shard(shard, error)
            return
        if batch is None:
            self._batches_lost += 1
        else:
            if self.executor_spec["discard_queued_samples"] and self.learner.inputs.full():
                self.discarded += 1
            else:
                self._put_for_learner((shard.index, shard.generation, batch))
                self.queue_inserts += 1
        self._submit_sampling(shard)

    def _put_for_learner(self, item: tuple) -> None:
        while True:
            try:
                self.learner.inputs.put(item, timeout=0.5 if self.mode == "ray" else 0)
                return
            except queue.Full:
                if self.mode == "inline":
                    self.learner.process()
                self._check_learner()
                self._return_priorities()

    def _on_shard_call(self, shard: ShardSlot, task: tuple) -> None:
        if self.shards[shard.index] is not shard or task not in shard.other_tasks:
            return
        shard.other_tasks.remove(task)
        future, kind, _ = task
        try:
            value = self.actors.get(future)
        except Exception as error:  # noqa: BLE001
            if not self.actors.is_actor_death(error):
                raise
            self._restart_shard(shard, error)
            return
        if kind == "add":
            shard.size = int(value)
            self._submit_sampling(shard)

    def _return_priorities(self) -> None:
        while True:
            try:
                index, generation, indices, priorities = self.learner.outputs.get_nowait()
            except queue.Empty:
                return
            shard = self.shards[index]
            if shard.generation == generation:  # A restarted shard holds other records at those indices.
                shard.other_tasks.append((self.actors.call(shard.handle, "update_priorities", indices, priorities),
                                          "priorities", 0))

    # --- Statistics -----------------------------------------------------------------------------
    def _workload_statistics(self) -> Dict[str, Any]:
        lags, self._workload_lags = self._workload_lags, []
        sizes = self._call_each(list(self.shards), "size", self._restart_shard)
        for shard, size in zip(self.shards, sizes):
            shard.size = size
        return {"restarts": self.num_restarts,  # (With those of the size calls above.)
                "total_timesteps": self.env_timesteps, "total_env_frames": self.env_frames,
                "learner_updates": self.learner.version, "queue_inserts": self.queue_inserts,
                "discarded": self.discarded, "weight_syncs": self.weight_syncs,
                "mean_policy_lag": float(np.mean(lags)) if lags else float("nan"),
                "max_policy_lag": int(np.max(lags)) if lags else 0,
                "records_lost": self.records_lost, "replay_sizes": sizes,
                "mean_loss": float(np.mean(self.learner.losses)) if self.learner.losses else float("nan"),
                "worker_pids": [w.pid for w in self.workers], "shard_pids": [s.pid for s in self.shards],
                **self._pacing_statistics()}

    def result_by_worker(self, worker_index: Optional[int] = None) -> Dict[str, Any]:
        """Statistics of each sample worker (or of one): timesteps, episodes, episode returns,
        env frames, throughput, the policy version it acts with, its pid. A worker found dead is
        restarted as sampling restarts it (its replacement's statistics start from zero).

        Returns:
            {"episode_rewards": [per worker lists], "episode_timesteps": [...], "workers": [stats dicts]}
            (for one worker: that worker's stats dict).

        Raises:
            RLGraphDistributedError: A dead worker and no restart left (`max_num_worker_restarts`).
        """
        workers = list(self.workers) if worker_index is None else [self.workers[worker_index]]
        stats = self._call_each(workers, "get_statistics", self._restart_worker)
        for worker, item in zip(workers, stats):
            item["pid"] = self.workers[worker.index].pid
        if worker_index is not None:
            return stats[0]
        return {"episode_rewards": [s["episode_returns"] for s in stats],
                "episode_timesteps": [s["timesteps"] for s in stats], "workers": stats}

    def replay_statistics(self) -> List[dict]:
        """Each shard's statistics (size, inserted, sampled batches, priority updates, pid). A shard
        found dead is restarted from its snapshot, as in sampling (`RLGraphDistributedError` with no
        restart left)."""
        return self._call_each(list(self.shards), "get_statistics", self._restart_shard)

    # --- Shutdown -------------------------------------------------------------------------------
    def _stop_actors(self) -> None:
        if self.learner is not None:
            self.learner.stop()
            if self.learner.is_alive():
                self.learner.join(timeout=10)
        for actor in list(self.workers) + list(self.shards):
            if self.mode == "inline" and hasattr(actor.handle.obj, "terminate"):
                actor.handle.obj.terminate()
            self.actors.kill(actor.handle)
        if self.local_agent is not None:
            self.local_agent.terminate()
        if self._tmpdir is not None:
            self._tmpdir.cleanup()
            self._tmpdir = None
