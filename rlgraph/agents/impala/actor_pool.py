"""`ActorPool`: the in-process actors of a single-impala agent, as threads filling a bounded FIFO queue."""
from __future__ import annotations

import collections
import logging
import queue
import threading
from typing import Any, Dict, List, Optional

import numpy as np

from rlgraph.agents.impala.rollouts import concat_rollouts, split_rows
from rlgraph.agents.impala.actor import IMPALAActor
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError

logger = logging.getLogger(__name__)


class ActorPool:
    """`num_workers` `IMPALAActor`s of a `SingleIMPALAAgent`, each with its own acting copy of the
    agent (built in this process), its own envs and its own random generator.

    Threads, not processes: acting is one batched backend call per step (PyTorch and TF release
    the GIL inside it) and a latency-bound env sleeps without the GIL, so threads overlap with
    each other and with the learner's update without copying rollouts between processes (the
    measurements are in docs/performance.md, "IMPALA"). A CPU-bound python env scales with Ray actors
    (`IMPALAExecutor`) instead.

    - **Asynchronous** (default): each actor runs in a daemon thread: it takes the newest
      published weights, samples a rollout and puts its rows into the FIFO queue
      (`fifo_queue_spec.capacity` rows; a full queue makes the actor wait). `next_batch` takes
      rows in arrival order.
    - **Reproducible** (`reproducible: true`): the batch of update k is collected by the actors
      in a fixed order (actor 0, 1, ...), with exactly the weights the learner had before update
      k - 1 (policy lag 1; the first two batches use the initial weights), while update k - 1
      runs. `batch_size` must be a multiple of the rows of one round (num_workers x
      num_worker_environments; else an `RLGraphSpecError`). Two runs with the same seed then give
      the same losses.

    Args:
        agent: The `SingleIMPALAAgent` (the learner).
    """

    def __init__(self, agent: Any):
        self.agent = agent
        rows_per_round = agent.num_workers * agent.num_worker_environments
        if agent.reproducible and agent.update_spec["batch_size"] % rows_per_round:
            raise RLGraphSpecError("with reproducible: true, update_spec.batch_size must be a multiple of the rows "
                                   "one round of the actors gives", where=f"{type(agent).__name__}(update_spec)",
                                   expected=f"a multiple of num_workers x num_worker_environments = {rows_per_round}",
                                   received=agent.update_spec["batch_size"],
                                   hint="rows left over from a round would wait for the next batch (policy lag 2).")
        config = dict(agent.actor_config)
        spaces = dict(state_space=agent.state_space, action_space=agent.action_space)
        self.actors: List[IMPALAActor] = []
        try:
            for i in range(agent.num_workers):
                self.actors.append(IMPALAActor(config, agent.environment_spec, i, agent.num_worker_environments,
                                               agent.worker_sample_size, num_threads=None,
                                               visualize=agent.visualize and i == 0, **spaces))
        except BaseException:
            for actor in self.actors:  # (An env or agent that fails to build: release the others.)
                actor.terminate()
            raise
        self.reproducible = agent.reproducible
        self.queue: "queue.Queue" = queue.Queue(maxsize=agent.fifo_queue_spec["capacity"])
        self.lock = threading.Lock()
        self.lags: collections.deque = collections.deque(maxlen=1000)
        self.episode_returns: collections.deque = collections.deque(maxlen=1000)
        self.timesteps = 0                # Env steps the actors collected.
        self.learned_timesteps = 0        # Env steps of the rows handed to the learner.
        self.error: Optional[BaseException] = None
        self._weights = (-1, None)
        self._stop = threading.Event()
        self._leftover: List[tuple] = []
        self._next: Optional[threading.Thread] = None
        self._next_rows: Optional[List[tuple]] = None
        self.threads: List[threading.Thread] = []
        self.publish_weights()
        if not self.reproducible:
            for actor in self.actors:
                thread = threading.Thread(target=self._run, args=(actor,), name=f"impala-actor-{actor.index}",
                                          daemon=True)
                thread.start()
                self.threads.append(thread)

    # --- Weights --------------------------------------------------------------------------------
    def publish_weights(self) -> None:
        """Makes the learner's current weights the ones actors take for their next rollout."""
        if self.reproducible:
            return  # (The reproducible schedule hands weights over itself.)
        weights = self.agent.get_weights()
        with self.lock:
            self._weights = (self.agent.num_updates, weights)

    def _take_weights(self, actor: IMPALAActor) -> None:
        with self.lock:
            version, weights = self._weights
        if version != actor.version:
            actor.set_weights(weights, version)

    # --- Asynchronous actors --------------------------------------------------------------------
    def _run(self, actor: IMPALAActor) -> None:
        try:
            while not self._stop.is_set():
                self._take_weights(actor)
                rollout, meta = actor.sample()
                self._account(meta)
                for row in split_rows(rollout):
                    while not self._stop.is_set():
                        try:
                            self.queue.put((row, meta["version"]), timeout=0.1)
                            break
                        except queue.Full:
                            continue
        except BaseException as error:  # noqa: BLE001 - handed to the learner, which raises it
            self.error = error

    def _account(self, meta: dict) -> None:
        with self.lock:
            self.timesteps += meta["timesteps"]
            self.episode_returns.extend(meta["episode_returns"])

    # --- Batches --------------------------------------------------------------------------------
    def next_batch(self, batch_size: int) -> Dict[str, Any]:
        """`batch_size` rollout rows as one rollout (waits for the actors)."""
        rows = self._reproducible_rows(batch_size) if self.reproducible else self._queued_rows(batch_size)
        version = self.agent.num_updates
        self.lags.extend(version - v for _, v in rows)
        # Schedules (time_percentage) count the env steps of the rows learned from: the same in every
        # run of a seed, whatever the actors have collected meanwhile.
        self.learned_timesteps += len(rows) * self.agent.worker_sample_size
        self.agent.timesteps = self.learned_timesteps
        return concat_rollouts([row for row, _ in rows])

    def _queued_rows(self, batch_size: int) -> List[tuple]:
        rows = []
        while len(rows) < batch_size:
            self._check()
            try:
                rows.append(self.queue.get(timeout=0.1))
            except queue.Empty:
                continue
        return rows

    def _reproducible_rows(self, batch_size: int) -> List[tuple]:
        if self._next is None:
            self._collect(batch_size, self.agent.num_updates)
        self._next.join()
        self._check()
        rows = self._next_rows
        # The next batch is acted with the weights the learner has now, while it learns from this one.
        weights, version = self.agent.get_weights(), self.agent.num_updates
        for actor in self.actors:
            actor.set_weights(weights, version)
        self._collect(batch_size, version)
        return rows

    def _collect(self, batch_size: int, version: int) -> None:
        if self._next is None:  # The first batch acts with the initial weights.
            weights = self.agent.get_weights()
            for actor in self.actors:
                actor.set_weights(weights, version)

        def collect() -> None:
            try:
                rows = self._leftover
                while len(rows) < batch_size:
                    for actor in self.actors:
                        rollout, meta = actor.sample()
                        self._account(meta)
                        rows.extend((row, meta["version"]) for row in split_rows(rollout))
                self._next_rows, self._leftover = rows[:batch_size], rows[batch_size:]
            except BaseException as error:  # noqa: BLE001 - raised by the learner
                self.error = error

        self._next = threading.Thread(target=collect, name="impala-actors", daemon=True)
        self._next.start()

    def _check(self) -> None:
        if self.error is not None:
            raise RLGraphError(f"an IMPALA actor failed ({type(self.error).__name__}: {self.error})",
                               where=f"{self.agent.name} actors") from self.error

    # --- Statistics and shutdown ----------------------------------------------------------------
    def statistics(self) -> Dict[str, Any]:
        """Env steps, recent episode returns, the mean/max policy lag of the recent batches, per-actor stats."""
        with self.lock:
            lags, returns = list(self.lags), list(self.episode_returns)
        return {"timesteps": self.timesteps, "episode_returns": returns,
                "mean_episode_return": float(np.mean(returns[-100:])) if returns else float("nan"),
                "mean_policy_lag": float(np.mean(lags)) if lags else float("nan"),
                "max_policy_lag": int(np.max(lags)) if lags else 0, "queue_size": self.queue.qsize(),
                "actors": [a.get_statistics() for a in self.actors]}

    def stop(self) -> None:
        """Stops the threads and releases the actors' envs and agents."""
        self._stop.set()
        for thread in self.threads + ([self._next] if self._next is not None else []):
            thread.join(timeout=30)
        for actor in self.actors:
            actor.terminate()
