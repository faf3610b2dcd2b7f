"""How the off-policy agents (DQN, SAC, DDPG) reach their replay memory: in the graph, or in numpy next to it.

The agent makes its memory with `make_replay` from its `memory_spec` when it creates its root
component and then only talks to the `ReplayAccess`: observing (`insert`), learning from the
memory (`update_from_memory`, or `sample` + `update_priorities` for the numpy memory), `size`
and the checkpoint state. Both take and give records (`rlgraph/agents/records.py`).
`ReplayAgentMixin` holds what those agents do alike with it (fill level, readiness, checkpoints).

memory_spec types: "replay-memory" (uniform) and "prioritized-replay" (Schaul et al. 2015,
https://arxiv.org/abs/1511.05952) live in the graph; "mem-prioritized-replay" is the numpy
`MemPrioritizedReplay` (keys "capacity", "alpha", "beta", "epsilon", "seed"), and "frame-replay"
the numpy `FrameReplay` for stacked-frame states (the same keys plus "frame_stack", default: the
length of a "sequence" preprocessor, else 4, "frame_capacity" and "compress"), which stores each frame once
and is allocated, logged and checked against the free memory when the agent is built. A
"mem-prioritized-replay" becomes a `FrameReplay` by itself ("store_frames_once": "auto", the default)
when its states are known to be stacked frames: images ([H, W, k * C]) of a "sequence" preprocessor
of length k, or of an environment that stacks k frames (`rlgraph train` passes the environment's
`frame_stack` on as "frame_stack"). It returns the same batches (frames are found by their bytes), so
only the bytes change; "store_frames_once": false keeps whole states, true always splits them. A
prioritized memory's importance weights weigh the TD loss per item, and the sampled records get
the absolute TD errors as their new priorities.
"""
from __future__ import annotations

import abc
import logging
import os
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from rlgraph.agents.specs import check_number, check_positive_int, check_spec
from rlgraph.components.component import Component
from rlgraph.components.memories.frame_replay import FRAME_MEMORY_TYPES, FrameReplay, check_store_frames_once, \
    frame_replay_bytes, holds_stacked_frames
from rlgraph.components.memories.mem_prioritized_replay import MemPrioritizedReplay
from rlgraph.components.memories.memory_size import check_memory_size, format_bytes, record_bytes
from rlgraph.components.memories.prioritized_replay import PrioritizedReplay
from rlgraph.components.memories.replay_memory import ReplayMemory
from rlgraph.spaces import BoxSpace, FloatBox, IntBox
from rlgraph.utils.devices import check_host_memory_device
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

logger = logging.getLogger(__name__)

# The file of a python replay memory in an agent checkpoint.
MEMORY_FILE = "python_memory.npz"
# memory_spec types (after `_` -> `-`, lower case) of the numpy memory kept next to the graph, and its keys.
PYTHON_MEMORY_TYPES = ("mem-prioritized-replay", "mem-prioritized")
PYTHON_MEMORY_KEYS = ("capacity", "alpha", "beta", "epsilon", "seed", "frame_stack", "store_frames_once")
FRAME_MEMORY_KEYS = PYTHON_MEMORY_KEYS[:-1] + ("frame_capacity", "compress")


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

    def check_files(self, files: Any) -> Any:
        """Parses and validates what `save_files` wrote, from a verified checkpoint's
        `CheckpointFiles`, without changing the memory."""
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

    def __init__(self, memory: MemPrioritizedReplay, executor: Callable[[], Any],
                 frame_stack: Optional[int] = None, memory_args: Optional[dict] = None):
        """`frame_stack`: the states' frames per stack where they are known to be stacked frames and
        "store_frames_once" is "auto": `prepare` then makes the memory a `FrameReplay` of
        `memory_args` (the plain memory's arguments) for image states."""
        super().__init__(executor)
        self.memory = memory
        self._auto_frame_stack = frame_stack
        self._memory_args = dict(memory_args or {})

    def insert(self, records: dict) -> None:
        self.memory.insert_records(records)

    def sample(self, batch_size: int) -> Tuple[dict, np.ndarray, np.ndarray]:
        """(record [B], indices [B], importance weights [B] float32), drawn by priority."""
        return self.memory.get_records(batch_size)

    def prepare(self, records_space: Any) -> None:
        """Allocates a `FrameReplay` for `records_space` now (its bytes logged, or refused with the
        figure) rather than at the first insert; a `MemPrioritizedReplay` still infers its records
        (a large one of stacked uint8 images logs what a frame replay would take).

        Args:
            records_space: The record space (ranks stripped).
        """
        states = records_space["states"]
        if not isinstance(self.memory, FrameReplay) and self.memory.size == 0 and \
                holds_stacked_frames(states, self._auto_frame_stack):
            self.memory = FrameReplay(frame_stack=self._auto_frame_stack, **self._memory_args)
            logger.info("mem-prioritized-replay: the states are stacks of %d frames, so a FrameReplay stores each "
                        "frame once and returns the same batches (memory_spec store_frames_once false keeps whole "
                        "states).", self._auto_frame_stack)
        if isinstance(self.memory, FrameReplay):
            if self.memory.record_space is None:
                self.memory.allocate(records_space)
            return
        # Stacked uint8 images (Atari's 84x84x4) in a large plain memory: point to the frame replay.
        if isinstance(states, BoxSpace) and np.dtype(states.dtype) == np.uint8 and len(states.shape) == 3 and \
                states.shape[-1] % 4 == 0 and self.memory.capacity * record_bytes(records_space) >= 2 ** 30:
            logger.info("%s: the states look like stacked frames; memory_spec type \"frame-replay\" would store "
                        "each frame once, in ~%s instead of ~%s, and return the same batches.",
                        type(self.memory).__name__,
                        format_bytes(frame_replay_bytes(self.memory.capacity, states, 4)),
                        format_bytes(self.memory.capacity * record_bytes(records_space)))

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

    def check_files(self, files: Any) -> Any:
        # (Absent: the memory was empty, or the checkpoint was stored without its replay.)
        return self.memory.check_file(files.read(MEMORY_FILE), full=True) if files.has(MEMORY_FILE) else None

    def load_files(self, checked: Any) -> None:
        if checked is None:
            self.memory.clear()
        else:
            self.memory.restore(checked)


# --- Making the memory (shared by DQN, SAC and DDPG) ---------------------------------------------------------------


def check_memory_spec(memory_spec: Any, default: dict, owner: str) -> dict:
    """A copy of `memory_spec` (`default` for None) with its "capacity" checked.

    Raises:
        RLGraphSpecError: For a spec that is not a dict or a capacity that is not an int >= 1.
    """
    if memory_spec is not None and not isinstance(memory_spec, dict):
        raise RLGraphSpecError("memory_spec must be a dict", where=f"{owner}(memory_spec)",
                               expected=f"e.g. {default}".replace("'", '"'), received=repr(memory_spec)[:80])
    spec = dict(memory_spec or default)
    if "capacity" in spec:  # (The memory itself refuses a capacity its records cannot fit in RAM.)
        spec["capacity"] = check_number(spec["capacity"], "memory_spec.capacity", owner, low=1, integer=True)
    return spec


def make_replay(memory_spec: dict, seed: Optional[int], executor: Callable[[], Any], owner: str,
                algorithm: str, preprocessing_spec: Any = None) -> Tuple[Optional[Component], ReplayAccess]:
    """(the in-graph memory component or None, the agent's `ReplayAccess`) of `memory_spec`.

    Args:
        memory_spec: A checked spec (`check_memory_spec`); the type may use "_" or "-".
        seed: The default seed of a numpy memory (execution_spec.seed).
        executor: Returns the agent's built executor.
        owner: The agent's class name, for errors.
        algorithm: How errors name the algorithm ("DQN", "SAC", ...).
        preprocessing_spec: The agent's preprocessors: a "frame-replay" without "frame_stack" takes
            the length of a "sequence" among them.

    Raises:
        RLGraphSpecError: For unknown keys of the numpy memory's spec, or an in-graph memory that
            is not a replay memory (uniform or prioritized).
    """
    spec = dict(memory_spec)
    memory_type = str(spec.get("type", "replay-memory")).replace("_", "-").lower()
    if memory_type in PYTHON_MEMORY_TYPES or memory_type in FRAME_MEMORY_TYPES:
        frames = memory_type in FRAME_MEMORY_TYPES
        spec.pop("type")
        spec = check_host_memory_device(spec, owner, f"a {memory_type!r} memory")
        spec = check_spec(spec, dict.fromkeys(FRAME_MEMORY_KEYS if frames else PYTHON_MEMORY_KEYS), "memory_spec",
                          owner)
        spec = {k: v for k, v in spec.items() if v is not None}
        spec.setdefault("seed", seed)
        store_once = check_store_frames_once(spec.pop("store_frames_once", "auto"), f"{owner}(memory_spec)")
        frames = frames or store_once is True
        frame_stack = spec.pop("frame_stack", None)
        if frame_stack is not None:
            frame_stack = check_positive_int(frame_stack, "memory_spec.frame_stack", owner)
        frame_stack = frame_stack or sequence_length(preprocessing_spec)
        if frames:
            return None, PythonReplay(FrameReplay(frame_stack=frame_stack or 4, **spec), executor)
        return None, PythonReplay(MemPrioritizedReplay(**spec), executor,
                                  frame_stack=frame_stack if store_once == "auto" else None, memory_args=spec)
    memory = Component.from_spec(spec)
    if not isinstance(memory, (ReplayMemory, PrioritizedReplay)):
        raise RLGraphSpecError(f"{algorithm} learns from a replay memory", where=f"{owner}(memory_spec)",
                               expected='type "replay-memory", "prioritized-replay", "mem-prioritized-replay" or '
                                        '"frame-replay"',
                               received=repr(memory_spec.get("type")))
    return memory, GraphReplay(executor)


def with_env_frame_stack(agent_spec: dict, frame_stack: Any) -> dict:
    """`agent_spec` with an environment's `frame_stack` (`AtariEnv` and EnvPool stack frames
    themselves) put into a numpy memory_spec that names none, so that the memory knows its states
    are stacked frames (see `make_replay`); `agent_spec` itself is not changed."""
    memory = agent_spec.get("memory_spec")
    if not isinstance(frame_stack, int) or isinstance(frame_stack, bool) or frame_stack < 2 or \
            not isinstance(memory, dict) or memory.get("frame_stack") is not None:
        return agent_spec
    if str(memory.get("type", "")).replace("_", "-").lower() not in PYTHON_MEMORY_TYPES + FRAME_MEMORY_TYPES:
        return agent_spec
    return dict(agent_spec, memory_spec=dict(memory, frame_stack=frame_stack))


def sequence_length(preprocessing_spec: Any) -> Optional[int]:
    """The `sequence_length` of the (first) "sequence" (frame stacking) preprocessor in `preprocessing_spec`."""
    for layer in preprocessing_spec or ():
        if isinstance(layer, dict) and str(layer.get("type", "")).replace("_", "-").lower() == "sequence":
            return int(layer.get("sequence_length", 2))  # (Sequence's default.)
    return None


def replay_input_spaces(memory: Optional[Component], records_space: Any,
                        replay: Optional[ReplayAccess] = None) -> Dict[str, Any]:
    """The root's input spaces of an in-graph memory's API methods ("batch_size"; "indices" and
    "priorities" for a prioritized one), after checking that its records fit the RAM; {} without one
    (then a numpy `replay` is prepared for `records_space`: see `PythonReplay.prepare`)."""
    if memory is None:
        if isinstance(replay, PythonReplay):
            replay.prepare(records_space.strip_ranks())
        return {}
    check_memory_size(memory.capacity, memory.storage_bytes(records_space), memory.global_scope)
    spaces = {"batch_size": IntBox(1, 2 ** 31 - 1, dtype="int64")}
    if isinstance(memory, PrioritizedReplay):
        spaces.update(indices=IntBox(memory.capacity, add_batch_rank=True), priorities=FloatBox(add_batch_rank=True))
    return spaces


def memory_capacity(memory: Optional[Component], replay: ReplayAccess) -> int:
    """The capacity of the in-graph `memory`, else of `replay`'s numpy memory."""
    return (memory if memory is not None else replay.memory).capacity


class ReplayAgentMixin:
    """What DQN, SAC and DDPG do alike with their `self.replay` (made by `make_replay`): the fill
    level, whether a batch can be sampled, and the replay's part of a checkpoint (a numpy memory
    is a file next to the graph's variables; an in-graph one is stored with the variables).

    Put it before `Agent` in the bases. The agent sets `self.replay` and `self.root_component.memory`
    (the in-graph memory or None) in `_create_root`.
    """

    _memory_ready = False  # Set once the memory holds a batch (it never shrinks while training).

    def memory_size(self) -> int:
        """The number of transitions in the memory."""
        return self.replay.size()

    def _memory_holds_batch(self) -> bool:
        """Whether the memory holds `update_spec.batch_size` transitions (or is full, for a batch
        larger than the memory): sampling from a memory with fewer records would fail or repeat
        them. One executor call per check until it first holds enough (in-graph memories)."""
        if not self._memory_ready:
            needed = min(self.update_spec["batch_size"], memory_capacity(self.root_component.memory, self.replay))
            self._memory_ready = self.replay.size() >= needed
        return self._memory_ready

    def _save_files(self, directory: str, save_replay: bool = True) -> None:
        if save_replay:
            self.replay.save_files(directory)

    def _check_files(self, files: Any) -> Any:
        return self.replay.check_files(files)

    def _load_files(self, checked: Any) -> None:
        self.replay.load_files(checked)
        self._memory_ready = False  # The restored memory may hold fewer records.
