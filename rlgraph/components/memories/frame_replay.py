"""`FrameReplay`: the numpy prioritized replay with each frame of stacked-frame states stored once.

A DQN replay of 1,000,000 Atari transitions holds states and next_states of 84 x 84 x 4 uint8:
56.5 GB as plain records, although consecutive states share three of their four frames and a
next_state is a later state. `FrameReplay` keeps the frames of "states" and "next_states" in a
`FramePool` (each distinct frame once: 8.1 GB for that replay) and per record only the ids
of the 2 x frame_stack frames it shows; a sampled batch rebuilds its stacks from those ids.
"""
from __future__ import annotations

import logging
from typing import Any, Dict, Optional

import numpy as np

from rlgraph.components.memories.frame_pool import CompressedFramePool, FramePool, pool_bytes
from rlgraph.components.memories.mem_prioritized_replay import _RECORD_PREFIX, MemPrioritizedReplay
from rlgraph.components.memories.memory_size import check_available_memory, format_bytes, record_bytes
from rlgraph.spaces import BoxSpace, Space, get_space_from_op
from rlgraph.utils.nest import unflatten_op
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphSpaceError, RLGraphSpecError
from rlgraph.utils.safe_npz import ArraySpec

logger = logging.getLogger(__name__)

# memory_spec types (after "_" -> "-", lower case) that make a `FrameReplay` (agents' numpy replay, Ape-X shards).
FRAME_MEMORY_TYPES = ("frame-replay", "frame-prioritized-replay")
STACKED_KEYS = ("/states", "/next_states")  # The flat record leaves whose frames go to the pool.


def frame_replay_bytes(capacity: int, state_space: Space, frame_stack: int = 4,
                       frame_capacity: Optional[int] = None, other_bytes: int = 9, compress: bool = False) -> int:
    """Bytes of a `FrameReplay` of `capacity` records with states of `state_space` (ranks stripped).

    The frame pool (`frame_capacity` frames, default `default_frame_capacity(capacity)`, with
    their bookkeeping), the frame ids (2 x frame_stack int32 per record), the other record leaves
    (`other_bytes` per record: actions, rewards and terminals; 9 for an int32 action) and the
    sum and min trees. With `compress` the frames' own bytes are not known up front and are not
    counted (only their slots).

    >>> from rlgraph.spaces import IntBox
    >>> atari = IntBox(0, 256, shape=(84, 84, 4), dtype="uint8")
    >>> format_bytes(frame_replay_bytes(1_000_000, atari))
    '7.5 GiB'
    """
    frame_shape = frame_shape_of(state_space.strip_ranks().shape, frame_stack, "frame_replay_bytes(state_space)")
    frame_nbytes = int(np.prod(frame_shape, dtype=np.int64)) * np.dtype(state_space.dtype).itemsize
    frames = default_frame_capacity(capacity) if frame_capacity is None else frame_capacity
    slot_bytes = CompressedFramePool.SLOT_BYTES if compress else frame_nbytes
    return (pool_bytes(frames, slot_bytes) + capacity * (2 * frame_stack * 4 + other_bytes) +
            _tree_bytes(capacity))


def default_frame_capacity(capacity: int) -> int:
    """Frames allocated up front for `capacity` records: one per record plus 1/16.

    Each episode adds at most n_step frames (its first stack and the n-step look-ahead of its
    last records) to the one frame per record, so 1/16 more covers episodes of 64 steps and more
    on average at n = 3 (Atari episodes are hundreds of steps). The pool grows beyond it (logged)
    rather than drop records.
    """
    return int(capacity) + int(capacity) // 16 + 16


def frame_shape_of(state_shape: tuple, frame_stack: int, where: str) -> tuple:
    """The shape of one frame of states `state_shape`, stacked along the last axis (as `AtariEnv` and
    `Sequence` stack them: [..., frame_stack * C] -> [..., C])."""
    if len(state_shape) == 0 or state_shape[-1] % frame_stack != 0:
        raise RLGraphSpaceError(None, "the states' last axis must hold frame_stack frames", where=where,
                                expected=f"a shape [..., {frame_stack} * C] (frame_stack={frame_stack})",
                                received=tuple(state_shape),
                                hint="frames are stacked along the last axis, as AtariEnv and the Sequence "
                                     "preprocessor stack them; set frame_stack to the stack's length.")
    return tuple(state_shape[:-1]) + (state_shape[-1] // frame_stack,)


def holds_stacked_frames(state_space: Any, frame_stack: Optional[int]) -> bool:
    """Whether states of `state_space` (ranks stripped) are stacks of `frame_stack` images, which a
    `FrameReplay` can split into frames: a box of rank 3 or more ([H, W, k * C]) whose last axis
    holds `frame_stack` > 1 frames. Vectors (a CartPole state stacked by a "sequence" preprocessor)
    are not: their frames are too small for a frame's bookkeeping to pay."""
    if frame_stack is None or frame_stack < 2 or not isinstance(state_space, BoxSpace):
        return False
    shape = tuple(state_space.strip_ranks().shape)
    return len(shape) >= 3 and shape[-1] % frame_stack == 0


def check_store_frames_once(value: Any, where: str) -> Any:
    """`memory_spec.store_frames_once` of a numpy prioritized memory: "auto" (the default: each frame
    once where the states are known to be stacked frames), True (always, as type "frame-replay")
    or False (whole states)."""
    if isinstance(value, str) and value == "auto":
        return value
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise RLGraphSpecError("store_frames_once must be \"auto\", true or false", where=f"{where}(store_frames_once)",
                           received=repr(value))


def _tree_bytes(capacity: int) -> int:
    return 2 * 2 * 2 ** (int(capacity) - 1).bit_length() * 8


class FrameReplay(MemPrioritizedReplay):
    """`MemPrioritizedReplay` whose stacked-frame "states" and "next_states" share one frame pool.

    Same interface and same results: fed the same records with the same seed, it returns exactly
    the batches (records, indices, importance weights) of a `MemPrioritizedReplay`, after the same
    priority updates; alpha=0 is its plain (uniform) mode.

    How it stays exact: a record keeps the pool ids of the frames its state and next_state show,
    and frames are matched by their bytes, never by their position in a stream. So whatever the
    env pads a stack with at an episode start (copies of the reset frame, zeros), the n-step gap
    between a state and its next_state, terminal or truncated ends and envs whose records arrive
    interleaved are all rebuilt as they came in. A frame stays in the pool as long as any stored
    record refers to it: when the ring overwrites a record, only the frames no other record shows
    are released, so the oldest records' stacks (whose first frames were brought by records long
    overwritten) are still whole and can be sampled like any other. The pool is allocated for
    `frame_capacity` frames; records that show more distinct frames at once (many very short
    episodes) make it grow by a block, with a warning, rather than be dropped.

    `save`/`load` write and read the frames once each, with the ids of the records' frames.

    Args:
        capacity: The maximum number of records.
        alpha: The prioritization exponent in [0, 1] (0: uniform sampling, the plain mode).
        beta: The importance-weight exponent in [0, 1].
        epsilon: Added to |priority| in `update_records`.
        record_space: The space of one record (ranks are stripped); None: inferred from the
            first `insert_records` batch (or given later to `allocate`).
        seed: Seed of the memory's own `np.random.RandomState`.
        frame_stack: Frames per state, stacked along the last axis: states [..., frame_stack * C].
        frame_capacity: Frames allocated up front (default `default_frame_capacity(capacity)`).
        compress: Keep the frames zlib-compressed (`CompressedFramePool`): Pong's frames took 1/30
            of their bytes, sampling takes longer; the frames' bytes are checked against the
            memory available as they grow instead of up front.

    Raises:
        RLGraphSpecError: A bad argument, or a memory larger than the memory available now (with
            the figure).
        RLGraphSpaceError: A record space without box "states" and "next_states" of one shape.

    >>> memory = FrameReplay(capacity=8, frame_stack=2, seed=1)
    >>> f = np.arange(5, dtype=np.uint8).reshape(5, 1, 1)  # Frames of one episode: 0, 1, 2, 3, 4.
    >>> states = np.concatenate([f[[0, 0, 1, 2]], f[[0, 1, 2, 3]]], axis=-1)  # Reset stack: [0, 0].
    >>> next_states = np.concatenate([f[[0, 1, 2, 3]], f[[1, 2, 3, 4]]], axis=-1)
    >>> memory.insert_records({"states": states, "actions": np.arange(4), "rewards": np.ones(4, np.float32),
    ...                        "terminals": np.zeros(4, bool), "next_states": next_states})
    >>> memory.pool.live  # 5 frames for 4 records, not 16.
    5
    >>> records, indices, weights = memory.get_records(2)
    >>> bool(np.array_equal(records["states"], states[indices]))
    True
    """

    def __init__(self, capacity: int = 1000, alpha: float = 1.0, beta: float = 0.0, epsilon: float = 1e-6,
                 record_space: Optional[Space] = None, seed: Optional[int] = None, frame_stack: int = 4,
                 frame_capacity: Optional[int] = None, compress: bool = False):
        name = type(self).__name__
        for arg, value in (("frame_stack", frame_stack), ("frame_capacity", frame_capacity)):
            if (value is not None or arg == "frame_stack") and (
                    not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1):
                raise RLGraphSpecError(f"{arg} must be a positive int", where=f"{name}({arg})", received=repr(value))
        self.frame_stack = int(frame_stack)
        if not isinstance(compress, (bool, np.bool_)):
            raise RLGraphSpecError("compress must be a bool", where=f"{name}(compress)", received=repr(compress))
        self.frame_capacity = None if frame_capacity is None else int(frame_capacity)
        self.compress = bool(compress)
        self.pool: Optional[FramePool] = None
        self.frame_ids: Optional[np.ndarray] = None  # int32 [capacity, 2, frame_stack]; -1: no record there.
        super().__init__(capacity=capacity, alpha=alpha, beta=beta, epsilon=epsilon, record_space=record_space,
                         seed=seed)
        if self.frame_capacity is None:
            self.frame_capacity = default_frame_capacity(self.capacity)

    # --- Storage ---------------------------------------------------------------------------------
    def allocate(self, record_space: Space) -> None:
        """Allocates the storage for records of `record_space` now, not at the first insert: the bytes
        are logged, or refused with the figure when they exceed the memory available.

        Raises:
            RLGraphSpecError: Storage already allocated, or too large.
            RLGraphSpaceError: As the constructor's `record_space`.
        """
        if self.record_space is not None:
            raise RLGraphSpecError("the storage is allocated already", where=f"{type(self).__name__}.allocate",
                                   received=str(record_space), hint="pass record_space once (or to the constructor).")
        self._allocate(record_space.strip_ranks())

    def _allocate(self, record_space: Space) -> None:
        name = type(self).__name__
        flat = record_space.flatten()
        states = [flat.get(key) for key in STACKED_KEYS]
        if not all(isinstance(s, BoxSpace) for s in states) or states[0].shape != states[1].shape or \
                np.dtype(states[0].dtype) != np.dtype(states[1].dtype):
            raise RLGraphSpaceError(record_space, "records need box 'states' and 'next_states' of one shape and dtype",
                                    where=f"{name}(record_space)",
                                    hint="a frame replay stores stacked image states; for container states use "
                                         "MemPrioritizedReplay.")
        state_shape = tuple(states[0].shape)
        frame_shape = frame_shape_of(state_shape, self.frame_stack, f"{name}(record_space)")
        others = {key: leaf for key, leaf in flat.items() if key not in STACKED_KEYS}
        other_bytes = sum(record_bytes(leaf) for leaf in others.values())
        frames = self.frame_capacity or default_frame_capacity(self.capacity)
        num_bytes = frame_replay_bytes(self.capacity, states[0], self.frame_stack, frames, other_bytes, self.compress)
        naive_bytes = self.capacity * record_bytes(record_space) + self._tree_bytes()
        what = (f"capacity {self.capacity} ({frames} {'compressed ' if self.compress else ''}frames of "
                f"{frame_shape} {np.dtype(states[0].dtype)}, {self.frame_stack} per state)")
        check_available_memory(num_bytes, f"{name}(capacity)", what,
                               hint="lower memory_spec.capacity (or the replay shards' share of it).")
        logger.info("%s: %s takes ~%s%s (stored as plain records: ~%s).", name, what, format_bytes(num_bytes),
                    " plus the compressed frames" if self.compress else "", format_bytes(naive_bytes))
        self.record_space = record_space
        self.storage = {key: np.zeros((self.capacity,) + tuple(leaf.shape), dtype=leaf.dtype)
                        for key, leaf in others.items()}
        self.leaf_specs = {key: (tuple(leaf.shape), np.dtype(leaf.dtype)) for key, leaf in flat.items()}
        pool_class = CompressedFramePool if self.compress else FramePool
        self.pool = pool_class(frame_shape, states[0].dtype, frames, where=f"{name}.insert_records")
        self.frame_ids = np.full((self.capacity, 2, self.frame_stack), -1, dtype=np.int32)

    def _split(self, states: np.ndarray) -> np.ndarray:
        """States [B, ..., k * C] -> their frames [B, k, ..., C], oldest first."""
        k = self.frame_stack
        frames = states.reshape(states.shape[:-1] + (k, states.shape[-1] // k))
        return np.moveaxis(frames, -2, 1)

    def _join(self, frames: np.ndarray) -> np.ndarray:
        """Frames [B, k, ..., C] -> states [B, ..., k * C] (the inverse of `_split`)."""
        stacked = np.moveaxis(frames, 1, -2)
        return stacked.reshape(stacked.shape[:-2] + (-1,))

    def _write(self, arrays: Dict[str, np.ndarray], start: int) -> None:
        count = len(arrays[STACKED_KEYS[0]])
        # One contiguous copy [count, 2, k, ..., C] (np.stack would keep the stacks' strides, and the
        # reshape for the pool would copy again, byte by byte: 4x slower on 84 x 84 x 4 uint8).
        frames = np.empty((count, 2, self.frame_stack) + self.pool.frame_shape, dtype=self.pool.dtype)
        for i, key in enumerate(STACKED_KEYS):
            frames[:, i] = self._split(np.asarray(arrays.pop(key)))
        # First, as the one step that can fail (a pool that cannot grow): then nothing has changed yet.
        ids = self.pool.acquire(frames.reshape((-1,) + self.pool.frame_shape))
        super()._write(arrays, start)
        positions = (start + np.arange(count)) % self.capacity
        old = self.frame_ids[positions]
        self.pool.release(old[old[:, 0, 0] >= 0])
        self.frame_ids[positions] = ids.reshape(count, 2, self.frame_stack)

    def _gather(self, indices: np.ndarray) -> Dict[str, np.ndarray]:
        records = super()._gather(indices)
        frames = self.pool.gather(self.frame_ids[indices])  # [B, 2, k, ..., C]
        for i, key in enumerate(STACKED_KEYS):
            records[key] = self._join(frames[:, i])
        return records

    def clear(self) -> None:
        """Forgets all records, priorities and frames (the storage stays allocated; the RNG continues)."""
        super().clear()
        if self.pool is not None:
            self.pool.clear()
            self.frame_ids[...] = -1

    @property
    def nbytes(self) -> int:
        """Bytes of the allocated storage: frame pool, frame ids, other leaves and trees."""
        if self.pool is None:
            return self._tree_bytes()
        return (self.pool.nbytes + self.frame_ids.nbytes + sum(s.nbytes for s in self.storage.values()) +
                self._tree_bytes())

    # --- Persistence -----------------------------------------------------------------------------
    # A file holds what `MemPrioritizedReplay.save` writes for the other leaves, plus "frames" [F, *frame
    # shape] (each frame a stored record shows, once), "frame_ids" [capacity, 2, frame_stack] (indices
    # into "frames"; -1 beyond the size) and "frame_stack".
    def _file_values(self, extra: Optional[Dict[str, int]]) -> Dict[str, np.ndarray]:
        values = super()._file_values(extra)
        stored = self.frame_ids[:self.size]  # (The ring fills 0, 1, ... first: slots from `size` on are empty.)
        live, compact = np.unique(stored, return_inverse=True)
        ids = np.full_like(self.frame_ids, -1)
        ids[:self.size] = compact.reshape(stored.shape)
        values.update(frames=self.pool.gather(live), frame_ids=ids, frame_stack=np.int64(self.frame_stack))
        return values

    def _file_specs(self) -> Dict[str, ArraySpec]:
        frames = ArraySpec((None, Ellipsis), "biuf") if self.pool is None else \
            ArraySpec((None,) + self.pool.frame_shape, self.pool.dtype.kind, self.pool.dtype,
                      mismatch="the file's frames do not fit this memory")
        return {"frames": frames, "frame_ids": ArraySpec((self.capacity, 2, self.frame_stack), "i", np.int32,
                                            mismatch="the file was written by a frame replay of another capacity "
                                                     "or frame_stack"),
                "frame_stack": ArraySpec((), "iu")}

    def _read_file(self, source: Any, where: str) -> tuple:
        values, state = super()._read_file(source, where)
        missing = [key for key in ("frames", "frame_ids", "frame_stack") if key not in values]
        if missing:
            raise RLGraphCheckpointError("the file was written by a memory of whole states, not of frames", where=where,
                                         expected="the members 'frames', 'frame_ids' and 'frame_stack'",
                                         received=f"none of {missing}",
                                         hint='load it into a "mem-prioritized-replay" with memory_spec '
                                              'store_frames_once false (whole states).')
        frames, ids, size = values["frames"], values["frame_ids"], state["size"]
        if int(values["frame_stack"]) != self.frame_stack:
            raise RLGraphCheckpointError("the file was written by a frame replay of another frame_stack", where=where,
                                         expected=self.frame_stack, received=int(values["frame_stack"]))
        if frames.ndim < 2 or len(frames) > 2 * self.frame_stack * self.capacity or \
                (size and (ids[:size].min() < 0 or ids[:size].max() >= len(frames))) or np.any(ids[size:] != -1):
            raise RLGraphCheckpointError("damaged frames or frame ids", where=where,
                                         expected=f"at most {2 * self.frame_stack * self.capacity} frames, ids of "
                                                  f"the {size} records indexing them, -1 after",
                                         received=f"{frames.dtype} {frames.shape}")
        if self.record_space is None:  # Inferred from the other leaves: the states come from the frames.
            state_shape = frames.shape[1:-1] + (frames.shape[-1] * self.frame_stack,)
            flat = {key[len(_RECORD_PREFIX):]: value[:1] for key, value in values.items()
                    if key.startswith(_RECORD_PREFIX)}
            flat.update({key: np.zeros((1,) + state_shape, frames.dtype) for key in STACKED_KEYS})
            state["record_space"] = get_space_from_op(unflatten_op(flat), add_batch_rank=True).strip_ranks()
        return values, state

    def restore(self, checked: tuple) -> None:
        values, state = checked
        # Storage first (the one step that can fail: memory), so that a refusal leaves the records as they were.
        if self.record_space is None:
            self._allocate(state["record_space"])
        self.pool.reserve(len(values["frames"]))
        super().restore(checked)
        self.pool.clear()
        self.frame_ids[...] = -1
        size = state["size"]
        if size:
            ids = self.pool.acquire(values["frames"])[values["frame_ids"][:size]]
            self.pool.recount(ids)
            self.frame_ids[:size] = ids

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(capacity={self.capacity}, alpha={self.alpha}, beta={self.beta}, "
                f"frame_stack={self.frame_stack}, compress={self.compress}, size={self.size})")
