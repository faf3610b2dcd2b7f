"""`RayLearnerGroup`: the learner of a distributed run (Ape-X, IMPALA) as N data-parallel learners on Ray.

With `execution_spec.num_learners` N > 1 the executor does not update its own agent: N `GroupLearner`
Ray actors (fresh processes) each build the learner agent, join one learner group
(`rlgraph.utils.learner_group`: gloo for PyTorch, TF's collective ops for TF) and take rank 0's
weights. Every update is split into N equal shards of the batch's rows; each learner computes the
gradients of its shard, the group averages them (`LocalOptimizer`), and every learner applies the
same step (RLlib's LearnerGroup semantics). With mean-reduced losses this is the update of one learner
on the whole batch.

The executor's own agent (`local_agent`) stays the run's view of the learner: its counters
(`num_updates`, `timesteps`, `max_timesteps`) drive the learners, and `pull` copies rank 0's
weights into it before it evaluates or writes a checkpoint. A learner that dies ends the run with
`RLGraphDistributedError` naming its rank (the group cannot lose a member); `rlgraph train --resume`
(or a new executor's `load_checkpoint`) continues from the run's last checkpoint.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from rlgraph.utils.nest import leaves, map_structure
from rlgraph.utils.rlgraph_errors import RLGraphDistributedError, RLGraphError, RLGraphSpecError

#: Seconds a collective (and the forming of the group) may wait for the other learners.
GROUP_TIMEOUT_S = 300.0


class GroupLearner:
    """One learner of a `RayLearnerGroup` (a Ray actor, so a process of its own).

    Args:
        agent_config: The learner agent's config (the executor's `learner_config`).
        state_space: The env's state space.
        action_space: The env's action space.
        rank: This learner's rank in [0, size).
        size: The number of learners.
    """

    def __init__(self, agent_config: dict, state_space: Any, action_space: Any, rank: int, size: int):
        self.agent_config, self.state_space, self.action_space = agent_config, state_space, action_space
        self.rank, self.size = rank, size
        self.agent = None
        self.group = None

    def ready(self) -> int:
        return os.getpid()

    def address(self) -> str:
        """"host:port" for this learner's part of the group (its node's address, a free port)."""
        import ray

        from rlgraph.utils.learner_group import free_local_addresses
        return free_local_addresses(1, host=ray.util.get_node_ip_address())[0]

    def join(self, backend: str, addresses: Sequence[str], timeout: float) -> float:
        """Joins the group, builds the agent inside it, takes rank 0's weights; returns the checksum
        of the trainable weights (equal on every rank)."""
        from rlgraph.agents import Agent
        from rlgraph.execution.learner_sync import broadcast_weights, learner_config, weights_checksum
        from rlgraph.utils import learner_group
        self.group = learner_group.join(self.rank, self.size, backend, addresses, timeout)
        self.agent = Agent.from_spec(learner_config(self.agent_config, self.rank), state_space=self.state_space,
                                     action_space=self.action_space)
        broadcast_weights(self.agent, self.group)
        return weights_checksum(self.agent)

    def _counters(self, counters: Dict[str, int]) -> None:
        for key, value in counters.items():
            setattr(self.agent, key, value)

    def update(self, shard: dict, counters: Dict[str, int], time_percentage: float) -> tuple:
        """IMPALA: one V-trace update on this rank's rows; (loss, loss_per_item)."""
        self._counters(counters)
        result = self.agent.update(shard, time_percentage=time_percentage)
        return float(result.loss), np.asarray(result.loss_per_item)

    def learn_from_batch(self, shard: dict, counters: Dict[str, int], time_percentage: float) -> tuple:
        """Ape-X: one update on this rank's records; (loss, loss_per_item, new priorities)."""
        self._counters(counters)
        loss, loss_per_item, priorities = self.agent.learn_from_batch(shard, time_percentage=time_percentage)
        return float(loss), np.asarray(loss_per_item), priorities

    def get_weights(self, names: Optional[List[str]] = None, acting: bool = False) -> Dict[str, np.ndarray]:
        """The named variables; None: the policy's weights (`acting`: what an Ape-X worker needs)."""
        if names is not None:
            return self.agent.graph_executor.get_weights(names)
        return self.agent.get_acting_weights() if acting else self.agent.get_weights()

    def checkpoint_files(self, counters: Dict[str, int]) -> Dict[str, bytes]:
        """This learner's `store_model` (written to a scratch folder) as relative path -> bytes."""
        self._counters(counters)
        scratch = tempfile.mkdtemp(prefix="rlgraph-learner-")
        try:
            path = self.agent.store_model(os.path.join(scratch, "learner"), add_timestep=False)
            files = {}
            for folder, _, names in os.walk(path):
                for name in names:
                    full = os.path.join(folder, name)
                    with open(full, "rb") as f:
                        files[os.path.relpath(full, path)] = f.read()
            return files
        finally:
            shutil.rmtree(scratch, ignore_errors=True)

    def load_checkpoint_files(self, files: Any) -> float:
        """Loads a verified checkpoint (`checkpoint_files.CheckpointFiles`); returns the checksum."""
        from rlgraph.execution.learner_sync import weights_checksum
        self.agent.load_checkpoint_files(files)
        return weights_checksum(self.agent)

    def checksum(self) -> float:
        from rlgraph.execution.learner_sync import weights_checksum
        return weights_checksum(self.agent)

    def terminate(self) -> None:
        from rlgraph.utils import learner_group
        if self.agent is not None:
            self.agent.terminate()
        learner_group.leave()


class RayLearnerGroup:
    """The driver's side of N `GroupLearner`s; an executor calls it where it would update its agent.

    Args:
        executor: The `RayExecutor` (its Ray actors helper, `_create` and `executor_spec`).
        agent: The executor's own learner agent (counters; weights pulled into it on demand).
        agent_config: The learner agent's config.
        state_space: The env's state space.
        action_space: The env's action space.
        num_learners: N >= 2.

    Raises:
        RLGraphSpecError: In inline mode (a group needs processes), or for a batch size that N does
            not divide.
        RLGraphDistributedError: When the group cannot be formed.
    """

    def __init__(self, executor: Any, agent: Any, agent_config: dict, state_space: Any, action_space: Any,
                 num_learners: int):
        where = f"{type(executor).__name__}(execution_spec.num_learners)"
        batch_size = agent.update_spec["batch_size"]
        if batch_size % num_learners:
            raise RLGraphSpecError("the learners split every batch into equal shards", where=where,
                                   expected=f"a divisor of update_spec.batch_size ({batch_size})",
                                   received=num_learners)
        if executor.mode != "ray":
            raise RLGraphSpecError("data-parallel learners need Ray", where=where, received=num_learners,
                                   expected='num_learners 1, or ray_spec.executor_spec.mode "ray"',
                                   hint="inline mode runs everything in this process; a learner group needs one "
                                        "process per learner.")
        self.executor, self.agent, self.size = executor, agent, num_learners
        self.where = f"{type(executor).__name__} learner group ({num_learners} learners)"
        self.handles: List[Any] = []
        self.pids: List[int] = []
        self._stale = False  # Whether the learners updated since the last `pull`.
        spec = executor.executor_spec
        try:
            for rank in range(num_learners):
                handle, pid = executor._create(GroupLearner, (agent_config, state_space, action_space, rank,
                                                              num_learners),
                                               spec["num_cpus_per_learner"], spec["num_gpus_per_learner"],
                                               f"learner {rank}")
                self.handles.append(handle)
                self.pids.append(pid)
            addresses = self._all("address")
            sums = self._all("join", [(agent.backend, addresses, GROUP_TIMEOUT_S)] * num_learners,
                             timeout=GROUP_TIMEOUT_S + 60)
            self._check_equal(sums, "after the group formed")
            self.pull(everything=True)
        except BaseException:
            self.terminate()
            raise

    # --- Updates -----------------------------------------------------------------------------------
    def update(self, batch: dict) -> tuple:
        """IMPALA's update on `batch` (rows split over the learners); (loss, loss_per_item)."""
        results = self._step("update", batch)
        return float(np.mean([r[0] for r in results])), np.concatenate([r[1] for r in results])

    def learn_from_batch(self, batch: dict) -> tuple:
        """Ape-X's update on `batch` (records split over the learners); (loss, loss_per_item,
        priorities) in the batch's order, as `ApexAgent.learn_from_batch` returns them."""
        results = self._step("learn_from_batch", batch)
        return (float(np.mean([r[0] for r in results])), np.concatenate([r[1] for r in results]),
                np.concatenate([r[2] for r in results]))

    def _step(self, method: str, batch: dict) -> list:
        shards = split_rows(batch, self.size, f"{self.where}.{method}(batch)")
        counters = self._counters()
        time_percentage = float(self.agent.time_percentage())
        results = self._all(method, [(shard, counters, time_percentage) for shard in shards])
        self.agent.num_updates += 1
        self._stale = True
        interval = self.agent.execution_spec.get("learner_check_interval", 0)
        if interval and self.agent.num_updates % interval == 0:
            self.check_weights()
        return results

    def _counters(self) -> Dict[str, int]:
        return {"timesteps": int(self.agent.timesteps), "max_timesteps": self.agent.max_timesteps,
                "num_updates": int(self.agent.num_updates)}

    # --- Weights and checkpoints -----------------------------------------------------------------
    def policy_weights(self, acting: bool = False) -> Dict[str, np.ndarray]:
        """Rank 0's policy weights (`acting`: `ApexAgent.get_acting_weights`, what its workers need)."""
        return self._get(0, self.executor.actors.call(self.handles[0], "get_weights", None, acting))

    def pull(self, everything: bool = False) -> None:
        """Copies rank 0's weights into the executor's agent (after updates, or `everything`: all
        shared variables, optimizer slots included), so that it evaluates the learners' policy."""
        if not (self._stale or everything):
            return
        from rlgraph.execution.learner_sync import shared_weight_names
        names = shared_weight_names(self.agent) if everything else None
        weights = self._get(0, self.executor.actors.call(self.handles[0], "get_weights", names))
        self.agent.graph_executor.set_weights(weights)
        self._stale = False

    def store_model(self, path: str) -> None:
        """Writes rank 0's `store_model` (everything, optimizer state included) at `path`."""
        files = self._get(0, self.executor.actors.call(self.handles[0], "checkpoint_files", self._counters()))
        os.makedirs(path)
        for name, data in files.items():
            os.makedirs(os.path.dirname(os.path.join(path, name)), exist_ok=True)
            with open(os.path.join(path, name), "wb") as f:
                f.write(data)

    def load_checkpoint_files(self, files: Any) -> None:
        """Loads a verified checkpoint into every learner (and the executor's agent)."""
        self.agent.load_checkpoint_files(files)
        sums = self._all("load_checkpoint_files", [(files,)] * self.size)
        self._check_equal(sums, "after loading the checkpoint")
        self._stale = False

    def check_weights(self) -> None:
        """Raises `RLGraphDistributedError` when the learners' weights differ."""
        self._check_equal(self._all("checksum"), f"after {self.agent.num_updates} updates")

    def _check_equal(self, sums: Sequence[float], when: str) -> None:
        differ = [rank for rank, value in enumerate(sums) if value != sums[0]]
        if differ:
            raise RLGraphDistributedError(f"the weights of learner rank(s) {differ} differ from rank 0's {when}",
                                          where=self.where, expected=f"checksum {sums[0]!r} on every rank",
                                          received=list(sums))

    # --- Calls ----------------------------------------------------------------------------------------
    def _all(self, method: str, args: Optional[List[tuple]] = None, timeout: Optional[float] = None) -> list:
        """`method` on every learner at once (with its own args); their results in rank order. The
        first failure is raised at once (a learner's death first: it also fails the others'
        collectives), without waiting for the other learners: the group cannot go on after it."""
        import time
        actors = self.executor.actors
        args = args or [()] * self.size
        futures = [actors.call(handle, method, *a) for handle, a in zip(self.handles, args)]
        rank_of = {future: rank for rank, future in enumerate(futures)}
        results: Dict[int, Any] = {}
        deadline = time.monotonic() + (timeout or GROUP_TIMEOUT_S + 60)
        pending = list(futures)
        while pending:
            ready, pending = actors.ray.wait(pending, num_returns=1, timeout=max(0.0, deadline - time.monotonic()),
                                             fetch_local=False)
            if not ready:
                raise RLGraphDistributedError(f"learner rank(s) {sorted(rank_of[f] for f in pending)} did not "
                                              f"answer {method!r} in time", where=self.where, hint=_RESUME_HINT)
            for future in ready:
                try:
                    results[rank_of[future]] = actors.get(future)
                except Exception as error:  # noqa: BLE001 - sorted in _raise
                    self._raise(*self._blame(futures, rank_of[future], error), method)
        return [results[rank] for rank in range(self.size)]

    def _blame(self, futures: list, rank: int, error: BaseException) -> tuple:
        """(rank, error) to report for `error` of `rank`: a learner found dead within a moment, else
        the same."""
        if self.executor.actors.is_actor_death(error):
            return rank, error
        ready, _ = self.executor.actors.ray.wait(futures, num_returns=len(futures), timeout=1.0, fetch_local=False)
        for other, future in enumerate(futures):
            if future in ready and other != rank:
                try:
                    self.executor.actors.get(future)
                except Exception as other_error:  # noqa: BLE001 - only deaths matter here
                    if self.executor.actors.is_actor_death(other_error):
                        return other, other_error
        return rank, error

    def _get(self, rank: int, future: Any) -> Any:
        try:
            return self.executor.actors.get(future, timeout=GROUP_TIMEOUT_S + 60)
        except Exception as error:  # noqa: BLE001 - sorted in _raise
            self._raise(rank, error, "call")

    def _raise(self, rank: int, error: BaseException, method: str) -> None:
        if self.executor.actors.is_actor_death(error):
            raise RLGraphDistributedError(f"learner rank {rank} died ({type(error).__name__})", where=self.where,
                                          hint=_RESUME_HINT) from None
        cause = getattr(error, "cause", None) or error
        if isinstance(cause, RLGraphError) and not isinstance(cause, RLGraphDistributedError):
            raise cause  # (A learner's own error: e.g. a bad batch or a non-finite loss.)
        raise RLGraphDistributedError(f"learner rank {rank} failed in {method} ({type(cause).__name__}: {cause})",
                                      where=self.where, hint=_RESUME_HINT) from None

    def terminate(self) -> None:
        actors = self.executor.actors
        calls = []
        for handle in self.handles:
            try:
                calls.append(actors.call(handle, "terminate"))
            except Exception:  # noqa: BLE001 - a dead learner
                pass
        if calls:  # (A learner leaves its group before it is killed; a dead one is killed below either way.)
            actors.ray.wait(calls, num_returns=len(calls), timeout=10)
        for handle in self.handles:
            actors.kill(handle)
        self.handles = []


_RESUME_HINT = ("a learner group cannot lose a member: continue from the run's last checkpoint with "
                "`rlgraph train --resume RUN_DIR`, or a new executor and `executor.load_checkpoint(path)` "
                "(docs/distributed.md).")


def split_rows(batch: Any, parts: int, where: str) -> List[Any]:
    """`batch` (a nested dict of arrays sharing their first axis) as `parts` equal slices of rows.

    Raises:
        RLGraphSpecError: When `parts` does not divide the number of rows.
    """
    rows = len(next(iter(leaves(batch))))
    if rows % parts:
        raise RLGraphSpecError("the batch's rows must split evenly over the learners", where=where,
                               expected=f"a multiple of {parts} rows", received=rows)
    size = rows // parts
    return [map_structure(lambda x, i=i: x[i * size:(i + 1) * size], batch) for i in range(parts)]
