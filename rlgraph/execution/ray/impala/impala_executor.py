"""`IMPALAExecutor`: IMPALA's actors on Ray (or inline), one learner in the driver."""
from __future__ import annotations

import collections
import copy
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import numpy as np

from rlgraph.agents.impala.rollouts import concat_rollouts, split_rows
from rlgraph.agents.impala.actor import IMPALAActor
from rlgraph.execution.ray.ray_executor import RayExecutor
from rlgraph.utils.checkpoint_dir import CheckpointWriter, write_json
from rlgraph.utils.checkpoint_files import read_checkpoint
from rlgraph.utils.checkpoint_values import INT64_MAX
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphSpecError

logger = logging.getLogger(__name__)

CHECKPOINT_KIND = "impala-executor"
STATE_FILE = "executor_state.json"
# Keys of a single-impala config that only the in-process actors read.
SINGLE_KEYS = ("num_workers", "fifo_queue_spec", "environment_spec", "reproducible", "visualize")


@dataclass
class _Actor:
    index: int
    handle: Any
    pid: int
    tasks: List[tuple] = field(default_factory=list)  # (rollout future, meta future)
    steps_since_sync: int = 0
    version: int = -1


class _Learner:
    """The driver's learner as `train_distributed` reads it: a lock and the policy version."""

    def __init__(self, agent: Any):
        self.agent = agent
        self.lock = threading.Lock()

    @property
    def version(self) -> int:
        return self.agent.num_updates


class IMPALAExecutor(RayExecutor):
    """IMPALA (Espeholt et al. 2018, https://arxiv.org/abs/1802.01561) with its actors on Ray.

    - **Actors** (`executor_spec.num_sample_workers` Ray actors running `IMPALAActor`): an
      acting copy of the agent on the config's backend and `worker_spec.num_worker_environments`
      envs each; a task returns one rollout of `worker_sample_size` steps per env plus the
      policy version it acted with. `env_interaction_task_depth` tasks are in flight per actor.
    - **FIFO queue** (in the driver, `fifo_queue_spec.capacity` rows): rollout rows wait here in
      arrival order. While it is full, actors get no new task (back-pressure), so nothing is
      dropped; with `update_spec.do_updates` false nothing drains it, so the oldest rows are
      dropped instead (counted in `discarded`).
    - **Learner** (`local_agent`, an `IMPALAAgent` in this process): whenever `update_spec.batch_size`
      rows are queued it takes them and runs one V-trace update. The policy lag of each row
      (learner version - behaviour version) is reported. With `execution_spec.num_learners` N > 1
      the update runs on N learner actors instead, each on batch_size / N of the rows, gradients
      averaged (`rlgraph/execution/ray/learner_group.py`).
    - **Weights**: once an actor has run `weight_sync_steps` env steps since its last weights and
      the learner has a newer version, it gets the newest (`ray.put` once per version).
    - **Faults**: a killed actor is noticed by its failed task, replaced (at most
      `max_num_worker_restarts` restarts in all) with the newest weights, and the run goes on.

    `executor_spec.mode` "inline" runs the same loop with the actors as plain objects in this
    process (no Ray). The agent config is an IMPALA config ("impala" or "single-impala"; the
    single agent's in-process actor keys are ignored here); `ray_spec` keys as for Ape-X
    (`rlgraph.execution.ray.specs`; the replay section is unused).

    Args:
        environment_spec: The environment spec (or a callable making an env).
        agent_config: The agent config holding `execution_spec.ray_spec`.
        ray_address: Overrides `executor_spec.redis_address`.
    """

    def __init__(self, environment_spec: Any, agent_config: dict, ray_address: Optional[str] = None):
        super().__init__(environment_spec, agent_config, ray_address)
        self.worker_spec = self.ray_spec["worker_spec"]
        self.env_timesteps = 0
        self.env_frames = 0
        self.weight_syncs = 0
        self.records_lost = 0
        self.discarded = 0            # Rows dropped from the full queue while updates are off.
        self.actors_list: List[_Actor] = []
        self.local_agent = None
        self.learner = None
        self.fifo: collections.deque = collections.deque()
        self._weights = (-1, None)
        self._idle: List[_Actor] = []
        self._workload_lags: List[int] = []
        self._losses: collections.deque = collections.deque(maxlen=100)
        try:
            self._setup()
        except BaseException:
            self.terminate()
            raise

    def _check_ray_spec(self) -> None:
        if self.executor_spec["replay_ratio"] is not None:
            raise RLGraphSpecError(
                "IMPALA has no replay ratio to set", where="ray_spec.executor_spec(replay_ratio)", expected=None,
                received=self.executor_spec["replay_ratio"],
                hint="IMPALA learns from each rollout row exactly once (batch_size rows per update) and its actors "
                     "wait while the queue is full, so its updates per env step do not depend on the load. "
                     "replay_ratio paces Ape-X; remove it here.")

    @staticmethod
    def learner_config(agent_config: dict) -> dict:
        """The learner's agent config: an "impala" agent in the learner role, without ray_spec."""
        from rlgraph.execution.ray.specs import split_ray_spec
        config = split_ray_spec(agent_config)[0] if "ray_spec" in (agent_config.get("execution_spec") or {}) \
            else copy.deepcopy(agent_config)
        for key in SINGLE_KEYS:
            if key not in ("fifo_queue_spec", "environment_spec"):  # (A learner ignores its environment_spec.)
                config.pop(key, None)
        config["type"], config["role"] = "impala", "learner"
        return config

    def _setup(self) -> None:
        from rlgraph.agents import Agent, IMPALAAgent
        from rlgraph.environments import Environment
        env = self.environment_spec() if callable(self.environment_spec) and \
            not isinstance(self.environment_spec, (dict, str)) else Environment.from_spec(self.environment_spec)
        self.state_space, self.action_space = env.state_space, env.action_space
        env.terminate()
        agent_class = Agent.resolve_type(self.agent_config.get("type"))
        if not (isinstance(agent_class, type) and issubclass(agent_class, IMPALAAgent)):
            raise RLGraphSpecError("IMPALAExecutor runs IMPALA agents", where="IMPALAExecutor(agent_config.type)",
                                   expected="impala or single-impala", received=self.agent_config.get("type"))
        self.local_agent = Agent.from_spec(self.learner_config(self.agent_config), state_space=self.state_space,
                                           action_space=self.action_space)
        self.learner = _Learner(self.local_agent)
        self.batch_size = self.local_agent.update_spec["batch_size"]
        self.capacity = max(self.local_agent.fifo_queue_spec["capacity"], self.batch_size)
        spec = self.executor_spec
        learner_cpus, learner_gpus = self._learner_demand(self.local_agent)
        self.check_resources(spec["num_sample_workers"] * spec["num_cpus_per_worker"] + learner_cpus,
                             spec["num_sample_workers"] * spec["num_gpus_per_worker"] + learner_gpus)
        self._make_learner_group(self.local_agent, self.learner_config(self.agent_config))
        self.actor_config = {k: v for k, v in self.agent_config.items() if k not in SINGLE_KEYS}
        self.actors_list = [self._make_actor(i) for i in range(spec["num_sample_workers"])]
        self._broadcast_weights()
        for actor in self.actors_list:
            self._send_weights(actor)

    def _make_actor(self, index: int) -> _Actor:
        from rlgraph.environments.vector_env import SequentialVectorEnv
        args = (self.actor_config, self.environment_spec, index, self.worker_spec["num_worker_environments"],
                self.local_agent.worker_sample_size, self.state_space, self.action_space, 1, False, SequentialVectorEnv)
        handle, pid = self._create(IMPALAActor, args, self.executor_spec["num_cpus_per_worker"],
                                   self.executor_spec["num_gpus_per_worker"], f"IMPALA actor {index}")
        return _Actor(index, handle, pid)

    # --- Weights --------------------------------------------------------------------------------
    def _broadcast_weights(self) -> None:
        version = self.local_agent.num_updates
        if version != self._weights[0]:
            with self.learner.lock:
                weights = self.learner_group.policy_weights() if self.learner_group else self.local_agent.get_weights()
            self._weights = (version, self.actors.put(weights))

    def _send_weights(self, actor: _Actor) -> None:
        version, ref = self._weights
        self.actors.call(actor.handle, "set_weights", ref, version)
        actor.version, actor.steps_since_sync = version, 0
        self.weight_syncs += 1

    # --- The loop -------------------------------------------------------------------------------
    def _begin_workload(self, num_timesteps: int) -> None:
        configured = self.local_agent.execution_spec.get("max_timesteps")
        self.local_agent.max_timesteps = int(configured) if configured else self.env_timesteps + num_timesteps
        for actor in self.actors_list:
            self._submit(actor)

    def _submit(self, actor: _Actor) -> None:
        if len(self.fifo) >= self.capacity and self.local_agent.update_spec["do_updates"]:
            if actor not in self._idle:
                self._idle.append(actor)
            return
        while len(actor.tasks) < self.executor_spec["env_interaction_task_depth"]:
            actor.tasks.append(self.actors.call(actor.handle, "sample", num_returns=2))

    def _execute_step(self) -> Dict[str, Any]:
        owners = {task[1]: (actor, task) for actor in self.actors_list for task in actor.tasks}
        ready, _ = self.actors.wait(list(owners), timeout=0.05)
        result = {"timesteps": 0, "env_frames": 0, "updates": 0, "episode_returns": [], "episode_lengths": []}
        for ref in ready:
            actor, task = owners[ref]
            self._on_rollout(actor, task, result)
        spec = self.local_agent.update_spec
        while spec["do_updates"] and len(self.fifo) >= self.batch_size:
            rows = [self.fifo.popleft() for _ in range(self.batch_size)]
            self._workload_lags.extend(self.local_agent.num_updates - version for _, version in rows)
            batch = concat_rollouts([row for row, _ in rows])
            with self.learner.lock:
                loss = self.learner_group.update(batch)[0] if self.learner_group else self.local_agent.update(batch).loss
            self._losses.append(float(loss))
            result["updates"] += 1
        idle, self._idle = self._idle, []
        for actor in idle:
            if self.actors_list[actor.index] is actor:
                self._submit(actor)
        return result

    def _on_rollout(self, actor: _Actor, task: tuple, result: dict) -> None:
        if self.actors_list[actor.index] is not actor or task not in actor.tasks:
            return  # From an actor replaced since.
        actor.tasks.remove(task)
        try:
            rollout, meta = self.actors.get(list(task))
        except Exception as error:  # noqa: BLE001 - sorted below
            if not self.actors.is_actor_death(error):
                raise
            self._restart(actor, error)
            return
        self.fifo.extend((row, meta["version"]) for row in split_rows(rollout))
        if not self.local_agent.update_spec["do_updates"]:
            # Nothing drains the queue: keep the newest rows (no back-pressure, or the actors would stall).
            while len(self.fifo) > self.capacity:
                self.fifo.popleft()
                self.discarded += 1
        self.env_timesteps += meta["timesteps"]
        self.env_frames += meta["env_frames"]
        self.local_agent.timesteps = self.env_timesteps  # Schedules count env steps.
        for key in ("timesteps", "env_frames"):
            result[key] += meta[key]
        result["episode_returns"].extend(meta["episode_returns"])
        result["episode_lengths"].extend(meta["episode_lengths"])
        actor.steps_since_sync += meta["timesteps"]
        if actor.steps_since_sync >= self.executor_spec["weight_sync_steps"]:
            self._broadcast_weights()
            if self._weights[0] != actor.version:
                self._send_weights(actor)
            else:
                actor.steps_since_sync = 0
        self._submit(actor)

    def _restart(self, actor: _Actor, error: BaseException) -> _Actor:
        """Replaces a dead actor in its slot (see `RayExecutor._count_restart`); returns the new one."""
        self._count_restart("IMPALA actor", actor.index, error)
        self.actors.kill(actor.handle)
        actor.tasks.clear()  # Its other calls fail too; they must not count as further deaths.
        fresh = self._make_actor(actor.index)
        self.actors_list[actor.index] = fresh
        self._broadcast_weights()
        self._send_weights(fresh)
        self._submit(fresh)
        return fresh

    # --- Statistics -----------------------------------------------------------------------------
    def _workload_statistics(self) -> Dict[str, Any]:
        lags, self._workload_lags = self._workload_lags, []
        return {"total_timesteps": self.env_timesteps, "total_env_frames": self.env_frames,
                "learner_updates": self.local_agent.num_updates, "weight_syncs": self.weight_syncs,
                "queue_size": len(self.fifo), "records_lost": 0, "discarded": self.discarded,
                "mean_policy_lag": float(np.mean(lags)) if lags else float("nan"),
                "max_policy_lag": int(np.max(lags)) if lags else 0,
                "mean_loss": float(np.mean(self._losses)) if self._losses else float("nan"),
                "worker_pids": [a.pid for a in self.actors_list]}

    def result_by_worker(self, worker_index: Optional[int] = None) -> Dict[str, Any]:
        """Statistics of each actor (or of one): timesteps, episodes, returns, frames/s, version, pid.
        An actor found dead is restarted as in sampling (`RLGraphDistributedError` with no restart left)."""
        actors = list(self.actors_list) if worker_index is None else [self.actors_list[worker_index]]
        stats = self._call_each(actors, "get_statistics", self._restart)
        for actor, item in zip(actors, stats):
            item["pid"] = self.actors_list[actor.index].pid
        if worker_index is not None:
            return stats[0]
        return {"episode_rewards": [s["episode_returns"] for s in stats],
                "episode_timesteps": [s["timesteps"] for s in stats], "workers": stats}

    # --- Checkpoints ----------------------------------------------------------------------------
    def store_checkpoint(self, path: str, extra_files: Optional[Dict[str, Any]] = None) -> str:
        """Writes the learner (`learner/`: weights, optimizer, counters) and the executor's counters,
        atomically with a manifest. Queued rollouts are not kept (actors refill the queue)."""
        with CheckpointWriter(path, CHECKPOINT_KIND, where=f"{type(self).__name__}.store_checkpoint") as writer:
            with self.learner.lock:
                if self.learner_group:  # (Rank 0's, optimizer state included.)
                    self.learner_group.store_model(writer.path("learner"))
                else:
                    self.local_agent.store_model(writer.path("learner"), add_timestep=False)
            write_json(writer.path(STATE_FILE), {"executor": type(self).__name__, "env_timesteps": self.env_timesteps,
                                                 "env_frames": self.env_frames, "restarts": self.num_restarts})
            for name, value in (extra_files or {}).items():
                write_json(writer.path(name), value, allow_nan=True)
            return writer.commit(self.env_timesteps)

    def load_checkpoint(self, path: str) -> None:
        """Restores a `store_checkpoint` directory (verified first); the actors get the learner's weights.

        Raises:
            RLGraphCheckpointError: A missing, damaged or foreign checkpoint (nothing changes then).
        """
        where = f"{type(self).__name__}.load_checkpoint"
        files = read_checkpoint(path, CHECKPOINT_KIND, where)  # Read once, verified; nothing else is read.
        state = files.json(STATE_FILE)
        counters = {k: state.get(k) if isinstance(state, dict) else None for k in ("env_timesteps", "env_frames")}
        if not isinstance(state, dict) or state.get("executor") != type(self).__name__ or any(
                isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= INT64_MAX for v in counters.values()):
            raise RLGraphCheckpointError("not a valid IMPALA executor checkpoint", where=where,
                                         expected="executor IMPALAExecutor, counters in [0, 2**63 - 1]",
                                         received=repr(state)[:200])
        learner = files.sub("learner", "agent")
        with self.learner.lock:  # (A learner group loads it into its learners and `local_agent`.)
            (self.learner_group or self.local_agent).load_checkpoint_files(learner)
        self.env_timesteps, self.env_frames = counters["env_timesteps"], counters["env_frames"]
        self.fifo.clear()
        self._broadcast_weights()
        for actor in self.actors_list:
            self._send_weights(actor)

    # --- Shutdown -------------------------------------------------------------------------------
    def _stop_actors(self) -> None:
        for actor in self.actors_list:
            if self.mode == "inline" and hasattr(actor.handle.obj, "terminate"):
                actor.handle.obj.terminate()
            self.actors.kill(actor.handle)
        if self.local_agent is not None:
            self.local_agent.terminate()

