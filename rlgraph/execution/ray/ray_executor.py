"""`RayExecutor`: the base of the distributed executors (Ray start/connect, actors, workloads, restarts)."""
from __future__ import annotations

import abc
import logging
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from rlgraph.execution.ray.actors import make_actors
from rlgraph.execution.ray.specs import split_ray_spec
from rlgraph.utils.module_imports import trust_spec_modules
from rlgraph.utils.rlgraph_errors import RLGraphDistributedError, RLGraphError, RLGraphSpecError

logger = logging.getLogger(__name__)

WORKLOAD_DEFAULTS = {"num_timesteps": None, "report_interval": 1000, "report_interval_min_seconds": 1.0}


class RayExecutor(metaclass=abc.ABCMeta):
    """Runs an agent config over actors: on Ray (`mode` "ray") or as plain objects in this
    process (`mode` "inline", for debugging and tests without Ray).

    The constructor takes `execution_spec.ray_spec` out of the agent config before any agent is
    built (agents never see it). With `executor_spec.redis_address` set the executor connects
    to that cluster (the original key; any Ray address such as "127.0.0.1:6379" or "auto");
    otherwise it uses the Ray of this process if `ray.init` was already called, else starts one
    here with `num_cpus`/`num_gpus`. It shuts down only a Ray it started (`terminate`).

    Subclasses create their actors in `_setup` and implement one round of their loop in
    `_execute_step`; `execute_workload` runs rounds and reports.

    Args:
        environment_spec: The environment spec (or a callable making an env) each worker builds.
        agent_config: The agent config with `execution_spec.ray_spec` (not changed).
        ray_address: Overrides `executor_spec.redis_address` (e.g. `rlgraph train --ray-address`).
    """

    def __init__(self, environment_spec: Any, agent_config: dict, ray_address: Optional[str] = None):
        self.agent_config, self.ray_spec = split_ray_spec(agent_config)
        if "type" not in self.agent_config:
            raise RLGraphSpecError("the agent config has no type", where=f"{type(self).__name__}(agent_config)",
                                   hint='e.g. "type": "apex".')
        self.executor_spec = self.ray_spec["executor_spec"]
        self._check_ray_spec()
        if ray_address is not None:
            self.executor_spec["redis_address"] = ray_address
        self.environment_spec = environment_spec
        self.mode = self.executor_spec["mode"]
        self._owns_ray = False
        self._start_ray()
        self.actors = make_actors(self.mode)
        self.num_restarts = 0
        self.restart_log: List[dict] = []
        self.workload_results: List[dict] = []
        self.learner_group = None  # A `RayLearnerGroup` when execution_spec.num_learners > 1 (`_make_learner_group`).
        self.terminated = False

    def _check_ray_spec(self) -> None:
        """Subclasses refuse `ray_spec` keys they cannot honour (before Ray starts)."""

    # --- Ray ------------------------------------------------------------------------------------
    def _start_ray(self) -> None:
        if self.mode != "ray":
            return
        try:
            import ray
        except ImportError:
            raise RLGraphDistributedError("Ray is not installed", where=type(self).__name__,
                                          hint='install it with `pip install -c constraints.txt -e ".[ray]"`, '
                                               'or set ray_spec.executor_spec.mode to "inline".') from None
        address = self.executor_spec["redis_address"]
        if ray.is_initialized():
            return
        # The actors of a local Ray may import the modules of the specs' types that are imported here.
        trust_spec_modules(self.agent_config, self.environment_spec)
        try:
            if address:
                ray.init(address=address, include_dashboard=False, log_to_driver=False)
            else:
                ray.init(num_cpus=self.executor_spec["num_cpus"], num_gpus=self.executor_spec["num_gpus"],
                         include_dashboard=False, log_to_driver=False)
        except Exception as error:  # noqa: BLE001 - Ray raises ConnectionError, RuntimeError, ...
            raise RLGraphDistributedError(f"cannot start or reach Ray ({type(error).__name__}: {error})",
                                          where=f"{type(self).__name__}(redis_address)", received=address,
                                          hint="for a cluster, run `ray start --head` there and pass its address "
                                               "(host:port); leave redis_address null to start Ray here.") from None
        self._owns_ray = True

    def check_resources(self, needed_cpus: float, needed_gpus: float) -> None:
        """Raises a clear error when the actors ask for more CPUs/GPUs than the cluster has
        (Ray would otherwise wait forever for them)."""
        if self.mode != "ray":
            return
        import ray
        total = ray.cluster_resources()
        for name, needed, key in (("CPU", needed_cpus, "num_cpus_per_worker / _per_replay_actor / _per_learner"),
                                  ("GPU", needed_gpus, "num_gpus_per_worker / num_gpus_per_learner")):
            have = float(total.get(name, 0.0))
            if needed > have + 1e-9:
                raise RLGraphDistributedError(f"the actors need more {name}s than the Ray cluster has",
                                              where=f"ray_spec.executor_spec({key})",
                                              expected=f"at most {have:g} {name}s", received=f"{needed:g}",
                                              hint="lower the per-actor resources (fractions such as 0.5 are "
                                                   "fine) or the number of actors, or raise executor_spec.num_cpus.")

    # --- The learner ----------------------------------------------------------------------------
    def _learner_demand(self, agent: Any) -> tuple:
        """(CPUs, GPUs) the learner group of `agent`'s `execution_spec.num_learners` takes ((0, 0)
        for one learner: it is the executor's own agent)."""
        count = agent.execution_spec.get("num_learners", 1)
        if count == 1:
            return 0, 0
        return count * self.executor_spec["num_cpus_per_learner"], count * self.executor_spec["num_gpus_per_learner"]

    def _make_learner_group(self, agent: Any, learner_config: dict) -> None:
        """Starts `execution_spec.num_learners` data-parallel learners on Ray when it is > 1
        (`learner_group.RayLearnerGroup`); the executor then updates through them."""
        count = agent.execution_spec.get("num_learners", 1)
        if count > 1:
            from rlgraph.execution.ray.learner_group import RayLearnerGroup
            self.learner_group = RayLearnerGroup(self, agent, learner_config, self.state_space, self.action_space,
                                                 count)

    def sync_local_agent(self) -> None:
        """Brings the executor's agent (`local_agent`: evaluation, exports) up to the learners'
        weights; with one learner it is the learner."""
        if self.learner_group is not None:
            self.learner_group.pull()

    def _create(self, cls: type, args: tuple, num_cpus: float, num_gpus: float, name: str) -> tuple:
        """(handle, pid) of a new actor, once it has started."""
        handle = self.actors.create(cls, args, num_cpus=num_cpus, num_gpus=num_gpus, name=name)
        try:
            pid = self.actors.get(self.actors.call(handle, "ready"), timeout=self.executor_spec["actor_start_timeout"])
        except Exception as error:  # noqa: BLE001 - the actor's constructor failed or timed out
            self.actors.kill(handle)
            cause = getattr(error, "cause", None) or error
            if isinstance(cause, RLGraphError):
                raise cause
            raise RLGraphDistributedError(f"the actor {name} did not start ({type(error).__name__}: {error})",
                                          where=type(self).__name__) from None
        return handle, pid

    def _count_restart(self, kind: str, index: int, error: BaseException) -> None:
        """Counts one restart; raises when `max_num_worker_restarts` is used up."""
        self.num_restarts += 1
        self.restart_log.append({"kind": kind, "index": index, "time": time.time(), "error": repr(error)})
        limit = self.executor_spec["max_num_worker_restarts"]
        if self.num_restarts > limit:
            raise RLGraphDistributedError(f"{kind} {index} died and the restart budget is used up",
                                          where="ray_spec.executor_spec(max_num_worker_restarts)",
                                          expected=f"at most {limit} restarts", received=self.num_restarts) from error
        logger.warning("%s %d died (%s); restarting it (%d of %d restarts).", kind, index, type(error).__name__,
                       self.num_restarts, limit)

    def _call_each(self, slots: Sequence[Any], method: str, restart: Callable[[Any, BaseException], Any],
                   args: Optional[Sequence[tuple]] = None) -> list:
        """The values of `method` called on the actor of each slot (all calls in flight at once),
        for the calls outside the sampling loop: checkpoints and statistics.

        An actor found dead is handled as sampling handles it: `restart(slot, error)` replaces it in
        its slot (counted against `max_num_worker_restarts`, `RLGraphDistributedError` beyond) and
        returns the new slot, which is asked again.

        Args:
            slots: Slots with a `handle` (workers, shards, actors).
            method: The actor method.
            restart: The executor's restart of that kind of slot.
            args: The arguments of each slot's call (None: no arguments).
        """
        args = [()] * len(slots) if args is None else list(args)
        futures = [self.actors.call(slot.handle, method, *slot_args) for slot, slot_args in zip(slots, args)]
        values = []
        for slot, slot_args, future in zip(slots, args, futures):
            while True:
                try:
                    values.append(self.actors.get(future))
                    break
                except Exception as error:  # noqa: BLE001 - sorted below
                    if not self.actors.is_actor_death(error):
                        raise
                    slot = restart(slot, error)
                    future = self.actors.call(slot.handle, method, *slot_args)
        return values

    # --- Workloads ------------------------------------------------------------------------------
    def execute_workload(self, workload: Dict[str, Any]) -> Dict[str, Any]:
        """Runs until `num_timesteps` more env steps were collected, reporting every
        `report_interval` steps (and at least `report_interval_min_seconds` apart).

        Args:
            workload: {"num_timesteps", "report_interval", "report_interval_min_seconds"}.

        Returns:
            Statistics: runtime, timesteps_executed, env_frames, ops_per_second,
            env_frames_per_second, updates, updates_per_second, episode returns (and lengths) and
            their mean/min/max, per-report throughputs, policy lag, restarts, lost records.
        """
        from rlgraph.agents.specs import check_positive_int, check_spec
        if self.terminated:
            raise RLGraphError("the executor was terminated", where=f"{type(self).__name__}.execute_workload")
        workload = check_spec(workload, WORKLOAD_DEFAULTS, "workload", f"{type(self).__name__}.execute_workload")
        if workload["num_timesteps"] is None:
            raise RLGraphSpecError("the workload needs num_timesteps", where="execute_workload(workload)")
        num_timesteps = check_positive_int(workload["num_timesteps"], "num_timesteps", "workload")
        report_interval = check_positive_int(workload["report_interval"], "report_interval", "workload")
        self._begin_workload(num_timesteps)
        start = time.monotonic()
        totals: Dict[str, Any] = {"timesteps": 0, "env_frames": 0, "updates": 0, "episode_returns": [],
                                  "episode_lengths": []}
        reports = []
        while totals["timesteps"] < num_timesteps:
            report_start, report = time.monotonic(), {"timesteps": 0, "updates": 0}
            while totals["timesteps"] < num_timesteps and (
                    report["timesteps"] < report_interval or
                    time.monotonic() - report_start < workload["report_interval_min_seconds"]):
                step = self._execute_step()
                for key in ("timesteps", "updates"):
                    report[key] += step[key]
                totals["timesteps"] += step["timesteps"]
                totals["env_frames"] += step["env_frames"]
                totals["updates"] += step["updates"]
                totals["episode_returns"].extend(step["episode_returns"])
                totals["episode_lengths"].extend(step.get("episode_lengths", ()))
            seconds = max(time.monotonic() - report_start, 1e-9)
            reports.append({"seconds": seconds, "timesteps_per_second": report["timesteps"] / seconds,
                            "updates_per_second": report["updates"] / seconds})
            returns = totals["episode_returns"][-100:]
            logger.info("%s: %d of %d env steps, %.0f steps/s, %.1f updates/s%s", type(self).__name__,
                        totals["timesteps"], num_timesteps, reports[-1]["timesteps_per_second"],
                        reports[-1]["updates_per_second"],
                        f", mean return (last {len(returns)}) {np.mean(returns):.2f}" if returns else "")
        totals["updates"] += self._end_workload()
        runtime = max(time.monotonic() - start, 1e-9)
        returns = totals["episode_returns"]
        result = {
            "runtime": runtime, "timesteps_executed": totals["timesteps"], "env_frames": totals["env_frames"],
            "ops_per_second": totals["timesteps"] / runtime, "env_frames_per_second": totals["env_frames"] / runtime,
            "updates": totals["updates"], "updates_per_second": totals["updates"] / runtime,
            "episode_returns": returns, "episode_lengths": totals["episode_lengths"], "episodes": len(returns),
            "mean_episode_return": float(np.mean(returns)) if returns else float("nan"),
            "min_episode_return": float(np.min(returns)) if returns else float("nan"),
            "max_episode_return": float(np.max(returns)) if returns else float("nan"),
            "mean_iteration_sample_throughput": float(np.mean([r["timesteps_per_second"] for r in reports])),
            "max_iteration_sample_throughput": float(np.max([r["timesteps_per_second"] for r in reports])),
            "min_iteration_sample_throughput": float(np.min([r["timesteps_per_second"] for r in reports])),
            "mean_iteration_update_throughput": float(np.mean([r["updates_per_second"] for r in reports])),
            "restarts": self.num_restarts,
        }
        result.update(self._workload_statistics())
        self.workload_results.append(result)
        return result

    def _begin_workload(self, num_timesteps: int) -> None:
        """Called at the start of each workload (e.g. to set schedule horizons)."""

    def _end_workload(self) -> int:
        """Called once a workload's env steps are collected (e.g. to let the learner catch up);
        returns the learner updates it ran."""
        return 0

    @abc.abstractmethod
    def _execute_step(self) -> Dict[str, Any]:
        """One round of the executor's loop: {"timesteps", "env_frames", "updates", "episode_returns"}."""

    def _workload_statistics(self) -> Dict[str, Any]:
        """Executor-specific entries of a workload's result."""
        return {}

    @abc.abstractmethod
    def result_by_worker(self, worker_index: Optional[int] = None) -> Dict[str, Any]:
        """Per-worker statistics (all workers, or the one at `worker_index`)."""

    # --- Shutdown -------------------------------------------------------------------------------
    def terminate(self) -> None:
        """Stops the actors (and the Ray this executor started)."""
        if self.terminated:
            return
        self.terminated = True
        self._stop_actors()
        if self.learner_group is not None:
            self.learner_group.terminate()
        if self._owns_ray:
            import ray
            ray.shutdown()
            self._owns_ray = False

    def _stop_actors(self) -> None:
        """Subclasses stop their actors and threads."""

    def __enter__(self) -> "RayExecutor":
        return self

    def __exit__(self, *exc) -> None:
        self.terminate()
