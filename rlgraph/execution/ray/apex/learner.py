"""`LearnerThread`: Ape-X's learner: updates the driver's agent from sampled batches, off the driver loop."""
from __future__ import annotations

import queue
import threading
import time
from collections import deque
from typing import Any, Optional


class LearnerThread(threading.Thread):
    """Takes (shard, generation, batch) items from a bounded input queue, runs one learner step on
    each and puts (shard, generation, indices, new priorities) on the output queue.

    The agent is shared with the driver (weights for the workers, checkpoints, evaluation):
    whoever touches it holds `lock`. `version` counts the learner's updates (the policy version
    the workers' batches are compared against). In inline mode the thread is never started and
    the executor calls `process` itself.

    Args:
        agent: The learner's `ApexAgent`.
        queue_size: Batches that may wait for the learner.
    """

    def __init__(self, agent: Any, queue_size: int):
        super().__init__(name="apex-learner", daemon=True)
        self.agent = agent
        self.inputs: "queue.Queue" = queue.Queue(maxsize=queue_size)
        self.outputs: "queue.Queue" = queue.Queue()
        self.lock = threading.Lock()
        self.version = 0
        self.losses: deque = deque(maxlen=100)  # The latest losses.
        self.update_time = 0.0
        self.error: Optional[BaseException] = None
        self._stop_event = threading.Event()
        self._updated = threading.Condition()  # Notified after each update (and on an error).

    def run(self) -> None:
        while not self._stop_event.is_set():
            try:
                item = self.inputs.get(timeout=0.1)
            except queue.Empty:
                continue
            try:
                self._learn(item)
            except BaseException as error:  # noqa: BLE001 - handed to the driver, which raises it
                self.error = error
                with self._updated:
                    self._updated.notify_all()
                return

    def process(self) -> int:
        """Learns from every queued batch in this thread (inline mode); returns how many."""
        count = 0
        while True:
            try:
                item = self.inputs.get_nowait()
            except queue.Empty:
                return count
            self._learn(item)
            count += 1

    def _learn(self, item: tuple) -> None:
        shard, generation, batch = item
        indices = batch.pop("indices")
        start = time.perf_counter()
        with self.lock:
            loss, _, priorities = self.agent.learn_from_batch(batch)
            self.version += 1
        self.update_time += time.perf_counter() - start
        self.losses.append(float(loss))
        self.outputs.put((shard, generation, indices, priorities))
        with self._updated:
            self._updated.notify_all()

    def wait_for_update(self, version: int, timeout: float) -> bool:
        """Waits up to `timeout` s until the learner's version exceeds `version` (or it failed);
        returns whether it does."""
        with self._updated:
            return self._updated.wait_for(lambda: self.version > version or self.error is not None, timeout)

    def stop(self) -> None:
        self._stop_event.set()
