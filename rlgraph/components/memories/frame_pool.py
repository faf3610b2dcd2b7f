"""`FramePool`: a content-addressed, reference-counted store of equally shaped frames (numpy).

`FrameReplay` keeps each distinct frame of its stacked states here once and refers to it by an
integer id. A frame is found again by its bytes (a 64-bit multiply-add hash as the key, then a
byte-for-byte comparison, so two frames share an id only when they are bit-identical), counted
once for every reference a stored record holds, and its slot is reused once no record refers to
it any more. `CompressedFramePool` keeps the frames zlib-compressed.
"""
from __future__ import annotations

import logging
import zlib
from typing import Dict, List, Optional, Union

import numpy as np

from rlgraph.components.memories.memory_size import check_available_memory, format_bytes
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

logger = logging.getLogger(__name__)

# The most frames in one block (65536 frames of 84 x 84 bytes: 462 MB). Blocks are added when the
# pool outgrows its first allocation, so that growing never copies the frames already stored.
MAX_BLOCK_FRAMES = 2 ** 16
# Bytes of bookkeeping per frame besides its pixels: refcount (int32) and key (uint64) arrays and
# the key index (a dict entry with two int objects, roughly).
FRAME_INDEX_BYTES = 4 + 8 + 112


def block_frames_for(num_frames: int) -> int:
    """The block size of a pool of `num_frames` frames: a power of 2, at most `MAX_BLOCK_FRAMES`."""
    return min(MAX_BLOCK_FRAMES, 1 << max(int(num_frames) - 1, 1).bit_length())


def pool_bytes(num_frames: int, frame_nbytes: int) -> int:
    """Bytes of a pool allocated for `num_frames` frames of `frame_nbytes` each (whole blocks)."""
    block = block_frames_for(num_frames)
    blocks = -(-int(num_frames) // block)
    return blocks * block * (int(frame_nbytes) + FRAME_INDEX_BYTES)


class FramePool:
    """Frames of one shape and dtype, each distinct one stored once, with a reference count.

    Args:
        frame_shape: The shape of one frame, e.g. (84, 84, 1).
        dtype: The frames' dtype.
        num_frames: The frames allocated up front (rounded up to whole blocks); more blocks are
            added (and logged) when more distinct frames are referenced at once.
        where: The owner, for errors and log lines.
    """

    def __init__(self, frame_shape: tuple, dtype: Union[str, np.dtype], num_frames: int, where: str = "FramePool"):
        self.frame_shape = tuple(int(d) for d in frame_shape)
        self.dtype = np.dtype(dtype)
        self.frame_nbytes = int(np.prod(self.frame_shape, dtype=np.int64)) * self.dtype.itemsize
        self.block_frames = block_frames_for(num_frames)
        self.where = where
        self.blocks: List[np.ndarray] = []  # Each [block_frames, frame_nbytes] uint8: frames as raw bytes.
        self.refcount = np.zeros(0, dtype=np.int32)
        self.keys = np.zeros(0, dtype=np.uint64)
        words = self.frame_nbytes // 8
        # Odd random multipliers of the hash (fixed, so that keys do not depend on the process).
        weights = np.random.RandomState(20151105).randint(0, 2 ** 63, size=self.frame_nbytes, dtype=np.uint64)
        self._word_weights = weights[:words] | np.uint64(1)
        self._byte_weights = weights[words:self.frame_nbytes - 7 * words] | np.uint64(1)
        self.index: Dict[int, Union[int, List[int]]] = {}  # key -> id, or a list of ids sharing the key.
        self.free: List[int] = []
        self.next_id = 0  # Ids >= next_id were never used.
        self.live = 0  # Frames with a reference count > 0.
        for _ in range(-(-int(num_frames) // self.block_frames)):
            self._add_block(log=False)

    @property
    def stored_frame_bytes(self) -> int:
        """Bytes allocated per frame slot for the frame itself."""
        return self.frame_nbytes

    @property
    def capacity(self) -> int:
        """The frames the allocated blocks can hold."""
        return len(self.refcount)

    @property
    def nbytes(self) -> int:
        """Bytes of the frame blocks and the per-frame arrays (not counting the key index)."""
        return sum(b.nbytes for b in self.blocks) + self.refcount.nbytes + self.keys.nbytes

    def _add_block(self, log: bool = True) -> None:
        block_bytes = self.block_frames * (self.stored_frame_bytes + FRAME_INDEX_BYTES)
        if log:
            grown = self.capacity + self.block_frames
            check_available_memory(block_bytes, self.where, f"growing the frame pool to {grown} frames",
                                   hint="the records reference more distinct frames than the memory was sized for "
                                        "(many short episodes?); lower the capacity or free memory.")
            logger.warning("%s: the frame pool grows to %d frames (+%s): the stored records reference more distinct "
                           "frames than its initial %d.", self.where, grown,
                           format_bytes(block_bytes), self.capacity)
        self._new_block()
        self.refcount = np.concatenate([self.refcount, np.zeros(self.block_frames, np.int32)])
        self.keys = np.concatenate([self.keys, np.zeros(self.block_frames, np.uint64)])

    def reserve(self, num_frames: int) -> None:
        """Grows the pool (logged, checked against the memory available) until it holds `num_frames`."""
        while self.capacity < num_frames:
            self._add_block()

    def _new_block(self) -> None:
        self.blocks.append(np.zeros((self.block_frames, self.frame_nbytes), dtype=np.uint8))

    def _row(self, frame_id: int) -> np.ndarray:
        return self.blocks[frame_id // self.block_frames][frame_id % self.block_frames]

    # --- Where a frame's bytes live (`CompressedFramePool` keeps them elsewhere) ------------------
    def _put(self, frame_id: int, row: np.ndarray) -> None:
        self._row(frame_id)[:] = row

    def _bytes(self, frame_id: int) -> bytes:
        return self._row(frame_id).tobytes()

    def _drop(self, frame_id: int) -> None:
        """Called when `frame_id` is forgotten (its block slot is simply reused)."""

    def _before_acquire(self) -> None:
        """Called before `acquire` changes anything (a check that may refuse it)."""

    def acquire(self, frames: np.ndarray) -> np.ndarray:
        """Ids of `frames` [N, *frame_shape], storing those not in the pool; adds one reference to each.

        Returns:
            int32 [N]; equal frames (bit for bit) get the same id.

        Raises:
            RLGraphSpecError: Frames of another shape or dtype, or a pool that would have to grow
                beyond the memory available (then the pool is left as it was).
        """
        frames = np.asarray(frames)
        if frames.shape[1:] != self.frame_shape or frames.dtype != self.dtype:
            raise RLGraphSpecError("frames of the wrong shape or dtype", where=f"{self.where}.acquire(frames)",
                                   expected=f"{self.dtype} [N, *{self.frame_shape}]",
                                   received=f"{frames.dtype} {frames.shape}")
        self._before_acquire()
        rows = np.ascontiguousarray(frames).reshape(len(frames), -1).view(np.uint8)
        keys = self._hash(rows)
        # Consecutive stacks share most frames: each key of the batch is looked up once, for its first row,
        # and the other rows with that key are checked to be that row's bytes (vectorized).
        unique_keys, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        stored: List[int] = []  # Frames new to the pool, forgotten again if the pool cannot grow for the next.
        try:
            found = [self._find_or_store(key, rows[row], stored)
                     for key, row in zip(unique_keys.tolist(), first.tolist())]
            ids = np.asarray(found, dtype=np.int32)[inverse.ravel()]
            words = rows.view(np.uint64) if self.frame_nbytes % 8 == 0 else rows
            for i in np.flatnonzero(~(words == words[first[inverse.ravel()]]).all(axis=1)).tolist():
                ids[i] = self._find_or_store(int(keys[i]), rows[i], stored)  # A hash collision within the batch.
        except BaseException:
            for frame_id in stored:
                self._forget(frame_id)
            raise
        np.add.at(self.refcount, ids, 1)
        return ids

    def _find_or_store(self, key: int, row: np.ndarray, stored: List[int]) -> int:
        frame_id = self._find(key, row)
        if frame_id < 0:
            frame_id = self._store(key, row)
            stored.append(frame_id)
        return frame_id

    def _hash(self, rows: np.ndarray) -> np.ndarray:
        """uint64 keys of `rows` [N, frame_nbytes] uint8: sum_j word_j * w_j (mod 2^64) over 8-byte
        words, plus the leftover bytes; vectorized, ~1 us per 84 x 84 frame (CRC-32 per row: ~3 us)."""
        words = len(self._word_weights)
        keys = rows[:, :8 * words].view(np.uint64) @ self._word_weights if words else np.zeros(len(rows), np.uint64)
        if len(self._byte_weights):
            keys = keys + rows[:, 8 * words:].astype(np.uint64) @ self._byte_weights
        return keys

    def _find(self, key: int, row: np.ndarray) -> int:
        entry = self.index.get(key)
        if entry is None:
            return -1
        data = row.tobytes()  # Bytes are compared, so that -0.0 and 0.0 (or NaNs) stay apart.
        for frame_id in (entry,) if isinstance(entry, int) else entry:
            if self._bytes(frame_id) == data:
                return frame_id
        return -1

    def _store(self, key: int, row: np.ndarray) -> int:
        if self.free:
            frame_id = self.free.pop()
        else:
            if self.next_id == self.capacity:
                self._add_block()
            frame_id = self.next_id
            self.next_id += 1
        self._put(frame_id, row)
        self.keys[frame_id] = key
        entry = self.index.get(key)
        if entry is None:
            self.index[key] = frame_id
        else:  # A hash collision of different frames: both stay, told apart by their bytes.
            self.index[key] = (entry if isinstance(entry, list) else [entry]) + [frame_id]
        self.live += 1
        return frame_id

    def release(self, ids: np.ndarray) -> None:
        """Removes one reference from each of `ids`; frames left without one are forgotten."""
        ids = np.asarray(ids, dtype=np.int64).ravel()
        np.subtract.at(self.refcount, ids, 1)
        for frame_id in np.unique(ids[self.refcount[ids] == 0]).tolist():
            self._forget(frame_id)

    def recount(self, ids: np.ndarray) -> None:
        """Sets the reference counts to the number of times each frame occurs in `ids` (all references
        there are); frames that do not occur are forgotten."""
        counts = np.bincount(np.asarray(ids, dtype=np.int64).ravel(), minlength=len(self.refcount))
        for frame_id in np.flatnonzero((counts == 0) & (self.refcount > 0)).tolist():
            self._forget(frame_id)  # (Free slots have a count of 0 already.)
        self.refcount[:] = counts

    def _forget(self, frame_id: int) -> None:
        key = int(self.keys[frame_id])
        entry = self.index[key]
        if isinstance(entry, int):
            del self.index[key]
        else:
            entry.remove(frame_id)
            self.index[key] = entry[0] if len(entry) == 1 else entry
        self._drop(frame_id)
        self.free.append(frame_id)
        self.live -= 1

    def gather(self, ids: np.ndarray) -> np.ndarray:
        """The frames of `ids` (any shape S): [*S, *frame_shape]."""
        ids = np.asarray(ids)
        rows = self._gather_rows(ids.ravel())
        return rows.view(self.dtype).reshape(ids.shape + self.frame_shape)

    def _gather_rows(self, flat: np.ndarray) -> np.ndarray:
        """[N, frame_nbytes] uint8 rows of the frames `flat` [N]."""
        if len(self.blocks) == 1:
            return self.blocks[0][flat]
        rows = np.empty((flat.size, self.frame_nbytes), dtype=np.uint8)
        block, offset = np.divmod(flat, self.block_frames)
        for b in np.unique(block):
            mask = block == b
            rows[mask] = self.blocks[b][offset[mask]]
        return rows

    def clear(self) -> None:
        """Forgets all frames (the blocks stay allocated)."""
        self.refcount[:] = 0
        self.index.clear()
        self.free.clear()
        self.next_id = 0
        self.live = 0


class CompressedFramePool(FramePool):
    """A `FramePool` that keeps each frame zlib-compressed (level 1) in memory.

    Atari frames are mostly flat areas: 84 x 84 grayscale Pong frames shrink about 10x. Inserting
    compresses each new frame once; sampling decompresses each distinct frame of a batch once;
    matching a frame decompresses its candidate. The frames' bytes are not known up front: the
    allocation covers the bookkeeping, and each time the compressed bytes have grown by
    `CHECK_BYTES` the next insert checks the memory available (refused with the figure, before
    anything changes).
    """

    CHECK_BYTES = 64 * 2 ** 20
    SLOT_BYTES = 8 + 33  # A list slot and a bytes object's header, per frame.

    def __init__(self, frame_shape: tuple, dtype: Union[str, np.dtype], num_frames: int,
                 where: str = "CompressedFramePool"):
        self.data: List[Optional[bytes]] = []
        self.compressed_bytes = 0
        self._checked_bytes = 0
        super().__init__(frame_shape, dtype, num_frames, where)

    @property
    def stored_frame_bytes(self) -> int:
        return self.SLOT_BYTES

    @property
    def nbytes(self) -> int:
        """Bytes of the compressed frames, their slots and the per-frame arrays (not the key index)."""
        return self.compressed_bytes + self.SLOT_BYTES * len(self.data) + self.refcount.nbytes + self.keys.nbytes

    def _new_block(self) -> None:
        self.data.extend([None] * self.block_frames)

    def _put(self, frame_id: int, row: np.ndarray) -> None:
        self.data[frame_id] = zlib.compress(row, 1)
        self.compressed_bytes += len(self.data[frame_id])

    def _bytes(self, frame_id: int) -> bytes:
        return zlib.decompress(self.data[frame_id])

    def _drop(self, frame_id: int) -> None:
        self.compressed_bytes -= len(self.data[frame_id])
        self.data[frame_id] = None

    def _before_acquire(self) -> None:
        if self.compressed_bytes - self._checked_bytes >= self.CHECK_BYTES:
            stored = format_bytes(self.compressed_bytes)
            check_available_memory(self.CHECK_BYTES, self.where, f"compressed frames beyond {stored}",
                                   hint="lower the capacity or free memory.")
            self._checked_bytes = self.compressed_bytes

    def _gather_rows(self, flat: np.ndarray) -> np.ndarray:
        unique, inverse = np.unique(flat, return_inverse=True)
        rows = np.empty((len(unique), self.frame_nbytes), dtype=np.uint8)
        for i, frame_id in enumerate(unique.tolist()):
            rows[i] = np.frombuffer(zlib.decompress(self.data[frame_id]), dtype=np.uint8)
        return rows[inverse.ravel()]

    def clear(self) -> None:
        super().clear()
        self.data = [None] * len(self.data)
        self.compressed_bytes = self._checked_bytes = 0
