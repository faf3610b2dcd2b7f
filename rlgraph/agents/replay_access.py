"""How `DQNAgent` reaches its replay memory: in the graph, or in numpy next to it.

The agent picks one of these when it creates its root component and then only talks to it:
observing (`insert`), learning from the memory (`update_from_memory`), `size` and the
checkpoint state. Both take and give records (`rlgraph/agents/records.py`).
"""
from __future__ import annotations

import abc
import os
from typing import Any, Callable, Optional, Tuple

import numpy as np

from rlgraph.components.memories.mem_prioritized_replay import MemPrioritizedReplay

# The file of a python replay memory in an agent checkpoint.
MEMORY_FILE = "python_memory.npz"


class ReplayAccess(abc.ABC):
    """A replay memory as the agent sees it.

    Args:
        executor: Returns the agent's built `GraphExecutor` (called at use, not at construction).
    """

    in_graph: bool = True  # Whether the memory's records live in the graph's variables.

    def __init__(self, executor: Callable[[], Any]):
        self._executor = executor

    @abc.abstractmethod
    def insert(self, records: dict) -> None:
        """Stores a record (a batch of transitions)."""

    @abc.abstractmethod
    def update_from_memory(self, batch_size: int, time_percentage: np.float32) -> Tuple[Any, Any, Optional[dict]]:
        """One optimizer step on `batch_size` sampled transitions; new priorities if prioritized.

        Returns:
            (loss, loss_per_item [B], the sampled record with its "importance_weights", or None
            where the sample never leaves the graph).
        """

    @abc.abstractmethod
    def size(self) -> int:
        """The number of stored transitions."""

    def save_files(self, directory: str) -> None:
        """Writes what a checkpoint must hold beyond the graph's variables into `directory`."""

    def check_files(self, directory: str) -> Any:
        """Reads and validates what `save_files` wrote, without changing the memory."""
        return None

    def load_files(self, checked: Any) -> None:
        """Restores what `check_files` validated."""


class GraphReplay(ReplayAccess):
    """The memory is a sub-component of the root (`DQNCore.memory`).

    An update is one executor call (`update_from_memory`): sampling, loss, optimizer step and,
    for a prioritized memory, the priority update. The contents are graph variables, so they
    are checkpointed with the model.
    """

    def insert(self, records: dict) -> None:
        self._executor().execute(("insert_records", [records]))

    def update_from_memory(self, batch_size: int, time_percentage: np.float32) -> Tuple[Any, Any, None]:
        loss, loss_per_item = self._executor().execute(("update_from_memory", [np.int64(batch_size),
                                                                               time_percentage]))
        return loss, loss_per_item, None

    def size(self) -> int:
        return int(self._executor().execute("get_memory_size"))


class PythonReplay(ReplayAccess):
    """A numpy `MemPrioritizedReplay` next to the graph (as Ape-X workers keep it).

    An update samples in numpy, runs `update_from_external_batch(records, importance_weights,
    time_percentage)` and writes the absolute TD errors back as priorities.

    Args:
        memory: The memory.
        executor: See `ReplayAccess`.
    """

    in_graph = False

    def __init__(self, memory: MemPrioritizedReplay, executor: Callable[[], Any]):
        super().__init__(executor)
        self.memory = memory

    def insert(self, records: dict) -> None:
        self.memory.insert_records(records)

    def sample(self, batch_size: int) -> Tuple[dict, np.ndarray, np.ndarray]:
        """(record [B], indices [B], importance weights [B] float32), drawn by priority."""
        return self.memory.get_records(batch_size)

    def update_priorities(self, indices: np.ndarray, td_errors: np.ndarray) -> None:
        """Sets the priorities of the records at `indices` to |td_errors| (+ the memory's epsilon)."""
        self.memory.update_records(indices, np.abs(td_errors))

    def update_from_memory(self, batch_size: int, time_percentage: np.float32) -> Tuple[Any, Any, dict]:
        records, indices, weights = self.sample(batch_size)
        loss, loss_per_item, td = self._executor().execute(("update_from_external_batch",
                                                            [records, weights, time_percentage]))
        self.update_priorities(indices, td)
        return loss, loss_per_item, dict(records, importance_weights=weights)

    def size(self) -> int:
        return self.memory.get_size()

    def save_files(self, directory: str) -> None:
        if self.memory.record_space is not None:  # (Nothing inserted yet: nothing to store.)
            self.memory.save(os.path.join(directory, MEMORY_FILE))

    def check_files(self, directory: str) -> Any:
        path = os.path.join(directory, MEMORY_FILE)
        return self.memory.check_file(path, full=True) if os.path.exists(path) else None

    def load_files(self, checked: Any) -> None:
        if checked is None:
            self.memory.clear()
        else:
            self.memory.restore(checked)
