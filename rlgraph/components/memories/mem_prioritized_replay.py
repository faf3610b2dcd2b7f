"""`MemPrioritizedReplay`: a numpy prioritized replay memory for PyTorch agents and Ray actors."""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from rlgraph.components.helpers.min_sum_segment_tree import MinSumSegmentTree
from rlgraph.components.memories.memory import read_npz, write_npz
from rlgraph.utils.checkpoint_values import check_mt19937
from rlgraph.utils.safe_npz import ArraySpec, read_npz_bytes
from rlgraph.components.memories.memory_size import check_memory_size, record_bytes
from rlgraph.spaces import Space, get_space_from_op
from rlgraph.utils.nest import flatten_op, unflatten_op
from rlgraph.utils.rlgraph_errors import (RLGraphCheckpointError, RLGraphError, RLGraphSpaceError,
                                          RLGraphSpecError)

_RECORD_PREFIX = "record:"  # npz key of a record leaf: "record:" + auto-key ("record:/s")
_EXTRA_PREFIX = "extra_"  # npz key of an owner's counter saved with the records (`save(extra=...)`)


class MemPrioritizedReplay:
    """Proportional prioritized replay in plain numpy (no backend graph).

    Schaul et al. 2015, https://arxiv.org/abs/1511.05952: record i is sampled with probability
    P(i) = p_i^alpha / sum_k p_k^alpha and carries the importance weight
    w_i = (N * P(i))^-beta / max_j w_j, where N is the number of stored records and the max
    runs over the whole memory (it belongs to the smallest priority, read from a min tree).
    Priorities p_i^alpha live in a `MinSumSegmentTree`; sampling draws one uniform number per
    stratum of the total and finds its record with one vectorized `index_of_prefixsum`.

    Records are nests (dicts/tuples) of arrays shaped like `record_space` with a leading batch
    dim; each leaf is stored in one preallocated array [capacity, *leaf shape] of the leaf's
    dtype (uint8 images stay uint8). New records get the highest priority seen so far (1.0 at
    first), raised to alpha. The memory is a ring: once full, new records overwrite the oldest.

    Args:
        capacity: The maximum number of records.
        alpha: The prioritization exponent in [0, 1] (0: uniform sampling).
        beta: The importance-weight exponent in [0, 1] (0: all weights 1). May be changed (annealed) later.
        epsilon: Added to |priority| in `update_records` so that no record gets probability 0.
        record_space: The space of one record (ranks are stripped); None: inferred from the
            first `insert_records` batch.
        seed: Seed of the memory's own `np.random.RandomState`.

    Raises:
        RLGraphSpecError: A bad constructor argument.

    >>> memory = MemPrioritizedReplay(capacity=4, alpha=1.0, beta=1.0, seed=3)
    >>> memory.insert_records({"s": np.arange(6, dtype=np.float32).reshape(3, 2), "a": np.array([0, 1, 2])})
    >>> memory.update_records(np.array([0, 1, 2]), np.array([1.0, 1.0, 2.0]))
    >>> records, indices, weights = memory.get_records(2)
    >>> len(memory), sorted(records), records["s"].shape, weights.dtype
    (3, ['a', 's'], (2, 2), dtype('float32'))
    """

    def __init__(self, capacity: int = 1000, alpha: float = 1.0, beta: float = 0.0, epsilon: float = 1e-6,
                 record_space: Optional[Space] = None, seed: Optional[int] = None):
        name = type(self).__name__
        if not isinstance(capacity, (int, np.integer)) or isinstance(capacity, bool) or capacity < 1:
            raise RLGraphSpecError("capacity must be a positive int", where=f"{name}(capacity)",
                                   received=repr(capacity))
        for arg, value in (("alpha", alpha), ("beta", beta)):  # Exponents in [0, 1] (see `PrioritizedReplay`).
            if not _is_real(value) or not 0.0 <= value <= 1.0:
                raise RLGraphSpecError(f"{arg} must be a number in [0, 1]", where=f"{name}({arg})", received=repr(value))
        if not _is_real(epsilon) or not epsilon > 0.0:
            raise RLGraphSpecError("epsilon must be a number > 0", where=f"{name}(epsilon)", received=repr(epsilon),
                                   hint="a priority of 0 would give its record an infinite importance weight")
        if record_space is not None and not isinstance(record_space, Space):
            raise RLGraphSpecError("record_space must be a Space", where=f"{name}(record_space)",
                                   received=type(record_space).__name__,
                                   hint="or None to infer it from the first insert")
        if seed is not None and (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or
                                 not 0 <= seed <= 2 ** 32 - 1):
            raise RLGraphSpecError("seed must be an int in [0, 2**32 - 1] or None", where=f"{name}(seed)",
                                   received=repr(seed), hint="numpy's random generators take 32-bit unsigned seeds.")
        self.capacity = int(capacity)
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.epsilon = float(epsilon)
        self.rng = np.random.RandomState(seed)
        check_memory_size(self.capacity, self._tree_bytes(), name)
        self.tree = MinSumSegmentTree(self.capacity)
        self.record_space: Optional[Space] = None
        self.storage: Dict[str, np.ndarray] = {}
        self.leaf_specs: Dict[str, tuple] = {}  # Flat record key -> (leaf shape, dtype): what inserts must match.
        self.index = 0
        self.size = 0
        self.max_priority = 1.0
        if record_space is not None:
            self._allocate(record_space.strip_ranks())

    # --- Storage ---------------------------------------------------------------------------------
    def _tree_bytes(self) -> int:
        return 2 * 2 * 2 ** (self.capacity - 1).bit_length() * 8  # Sum and min tree, float64, leaves to a power of 2.

    def _allocate(self, record_space: Space) -> None:
        check_memory_size(self.capacity, self.capacity * record_bytes(record_space) + self._tree_bytes(),
                          type(self).__name__)
        self.record_space = record_space
        self.storage = {key: np.zeros((self.capacity,) + tuple(leaf.shape), dtype=leaf.dtype)
                        for key, leaf in record_space.flatten().items()}
        self.leaf_specs = {key: (store.shape[1:], store.dtype) for key, store in self.storage.items()}

    def insert_records(self, records: Any) -> None:
        """Appends a batch of records, each with priority max_priority^alpha.

        Args:
            records: A nest (dict/tuple) of arrays shaped [B, *leaf shape], matching the record
                space. Beyond the capacity the oldest records are overwritten.

        Raises:
            RLGraphSpaceError: Records that do not fit the record space (structure, shape, dtype kind).
        """
        where = f"{type(self).__name__}.insert_records(records)"
        if self.record_space is None:
            try:
                space = get_space_from_op(records, add_batch_rank=True)
            except RLGraphError as error:
                raise RLGraphSpaceError(None, f"cannot infer the record space ({error.message})", where=where,
                                        received=type(records).__name__) from None
            self._allocate(space.strip_ranks())
        flat = flatten_op(records)
        if sorted(flat) != sorted(self.leaf_specs):
            raise RLGraphSpaceError(self.record_space, "records do not have the record space's structure", where=where,
                                    expected=sorted(self.leaf_specs), received=sorted(flat))
        arrays, batch = {}, None
        for key, value in flat.items():
            shape, dtype = self.leaf_specs[key]
            value = np.asarray(value)
            if value.shape[1:] != shape or value.ndim != len(shape) + 1 or \
                    (batch is not None and value.shape[0] != batch):
                raise RLGraphSpaceError(self.record_space, f"leaf '{key}' has the wrong shape", where=where,
                                        expected=f"[{batch if batch is not None else 'B'}, *{shape}]",
                                        received=value.shape)
            if not np.can_cast(value.dtype, dtype, casting="same_kind"):
                raise RLGraphSpaceError(self.record_space, f"leaf '{key}' has the wrong dtype", where=where,
                                        expected=str(dtype), received=str(value.dtype))
            batch = value.shape[0]
            arrays[key] = value
        if not batch:
            return
        # Only the last `capacity` records of an oversized batch survive.
        skip = max(batch - self.capacity, 0)
        start = (self.index + skip) % self.capacity
        count = batch - skip
        self._write({key: value[skip:] for key, value in arrays.items()}, start)
        positions = (start + np.arange(count)) % self.capacity
        self.tree.insert(positions, self.max_priority ** self.alpha)
        self.index = (self.index + batch) % self.capacity
        self.size = min(self.size + batch, self.capacity)

    def get_records(self, num_records: int) -> tuple:
        """Samples records proportionally to p^alpha (stratified: one draw per equal slice of the total).

        Args:
            num_records: The batch size B.

        Returns:
            (records, indices, importance_weights): the records as a nest of arrays [B, ...],
            their positions int64 [B] (for `update_records`) and float32 weights [B] in (0, 1].

        Raises:
            RLGraphSpecError: A non-positive `num_records`.
            RLGraphError: The memory is empty.
        """
        where = f"{type(self).__name__}.get_records(num_records)"
        if not isinstance(num_records, (int, np.integer)) or isinstance(num_records, bool) or num_records < 1:
            raise RLGraphSpecError("num_records must be a positive int", where=where, received=repr(num_records))
        if self.size == 0:
            raise RLGraphError("the memory is empty", where=where, hint="insert records before sampling")
        total = self.tree.get_sum()  # leaves beyond `size` are never written: the root is the total
        draws = (np.arange(num_records) + self.rng.uniform(size=num_records)) * (total / num_records)
        # Leaves beyond `size` are 0 and never returned; the clip is a guard only.
        indices = np.minimum(self.tree.index_of_prefixsum(draws), self.size - 1)
        records = unflatten_op(self._gather(indices))
        return records, indices, self._importance_weights(indices, total)

    def _write(self, arrays: Dict[str, np.ndarray], start: int) -> None:
        """Stores the flat record leaves `arrays` ([count <= capacity, ...] each) from ring position `start` on."""
        for key, value in arrays.items():
            store = self.storage[key]
            count = len(value)
            first = min(count, self.capacity - start)
            store[start:start + first] = value[:first]
            if first < count:
                store[:count - first] = value[first:]

    def _gather(self, indices: np.ndarray) -> Dict[str, np.ndarray]:
        """The flat record leaves at ring positions `indices` [B], each [B, ...]."""
        return {key: store[indices] for key, store in self.storage.items()}

    def _importance_weights(self, indices: np.ndarray, total: float) -> np.ndarray:
        if self.beta == 0.0:
            return np.ones(indices.shape, dtype=np.float32)
        n = float(self.size)
        p_i = self.tree.get(indices) / total
        p_min = self.tree.get_min_value() / total
        weights = (n * p_i) ** -self.beta / (n * p_min) ** -self.beta
        return weights.astype(np.float32)

    def update_records(self, indices: Any, priorities: Any) -> None:
        """Sets new priorities: leaf i holds (|p_i| + epsilon)^alpha; the last of duplicate indices wins.

        Args:
            indices: Positions [B] as returned by `get_records`.
            priorities: New priorities [B] (e.g. TD errors).

        Raises:
            RLGraphSpecError: Indices outside the stored records, mismatched lengths or
                non-finite priorities.
        """
        where = f"{type(self).__name__}.update_records"
        indices = np.atleast_1d(np.asarray(indices))
        priorities = np.atleast_1d(np.asarray(priorities, dtype=np.float64))
        if indices.dtype.kind not in "iu" or indices.ndim != 1:
            raise RLGraphSpecError("indices must be a 1-D int array", where=f"{where}(indices)",
                                   received=f"{indices.dtype} {indices.shape}")
        if priorities.shape != indices.shape:
            raise RLGraphSpecError("one priority per index is needed", where=f"{where}(priorities)",
                                   expected=indices.shape, received=priorities.shape)
        if indices.size == 0:
            return
        if indices.min() < 0 or indices.max() >= self.size:
            raise RLGraphSpecError("index outside the stored records", where=f"{where}(indices)",
                                   expected=f"indices in [0, {self.size})",
                                   received=f"[{indices.min()}, {indices.max()}]")
        if not np.all(np.isfinite(priorities)):
            raise RLGraphSpecError("priorities must be finite", where=f"{where}(priorities)",
                                   received=priorities[~np.isfinite(priorities)][:3])
        priorities = np.abs(priorities) + self.epsilon
        self.tree.insert(indices, priorities ** self.alpha)
        self.max_priority = max(self.max_priority, float(priorities.max()))

    def get_size(self) -> int:
        """The number of stored records."""
        return self.size

    def __len__(self) -> int:
        return self.size

    def clear(self) -> None:
        """Forgets all records and priorities (the storage stays allocated; the RNG continues)."""
        self.tree.clear()
        self.index = 0
        self.size = 0
        self.max_priority = 1.0

    # --- Persistence -----------------------------------------------------------------------------
    def save(self, path: str, extra: Optional[Dict[str, int]] = None) -> str:
        """Writes records, priorities, positions, max priority and RNG state to `path` (.npz).

        Args:
            path: The file.
            extra: Integers stored with them under "extra_<name>" (an owner's counters that must
                match the records, e.g. a replay shard's insert count); `load` ignores them.

        Returns:
            The path written (".npz" appended if missing).
        """
        if self.record_space is None:
            raise RLGraphCheckpointError("nothing to save: the record space is not known yet",
                                         where=f"{type(self).__name__}.save",
                                         hint="pass record_space to the constructor or insert records first")
        return write_npz(path, self._file_values(extra))

    def _file_values(self, extra: Optional[Dict[str, int]]) -> Dict[str, np.ndarray]:
        """The arrays `save` writes (subclasses add theirs; `_file_specs` names them for reading)."""
        kind, keys, pos, has_gauss, cached = self.rng.get_state()
        values = {_RECORD_PREFIX + key: store for key, store in self.storage.items()}
        values.update(priorities=self.tree.leaves(),
                      config=np.array([self.capacity, self.alpha, self.epsilon], dtype=np.float64),
                      index=np.int64(self.index), size=np.int64(self.size), max_priority=np.float64(self.max_priority),
                      rng_keys=keys, rng_position=np.int64(pos), rng_has_gauss=np.int64(has_gauss),
                      rng_cached_gaussian=np.float64(cached))
        values.update({_EXTRA_PREFIX + name: np.int64(value) for name, value in (extra or {}).items()})
        return values

    def _file_specs(self) -> Dict[str, ArraySpec]:
        """`ArraySpec`s of the arrays a subclass adds to the file (checked before they are read)."""
        return {}

    def load(self, path: Any) -> None:
        """Restores a memory written by `save` (a path, or the file's bytes); on any error the memory
        is left unchanged. Every array is bounded by the capacity and the record space (or, while
        the record space is unknown, by the file's own size) before it is decompressed.

        Raises:
            RLGraphCheckpointError: A missing or damaged file, or one from a memory of another
                capacity, alpha, epsilon or record space.
        """
        self.restore(self._read_file(path, f"{type(self).__name__}.load"))

    def restore(self, checked: tuple) -> None:
        """Restores what `check_file(path, full=True)` read and validated (no second read of a large file)."""
        values, state = checked
        if self.record_space is None:
            self._allocate(state["record_space"])
        for key, store in self.storage.items():
            store[...] = values[_RECORD_PREFIX + key]
        self.tree.clear()
        self.tree.insert(np.arange(state["size"]), values["priorities"][:state["size"]])
        self.index, self.size, self.max_priority = state["index"], state["size"], state["max_priority"]
        self.rng.set_state(("MT19937", values["rng_keys"], state["rng_position"], state["rng_has_gauss"],
                            state["rng_cached_gaussian"]))

    def check_file(self, path: Any, full: bool = False) -> Any:
        """Reads and validates a `save` file as `load` would, without changing the memory.

        Args:
            path: The file, or its bytes.
            full: Return what was read (for `restore`) instead of the number of records.

        Returns:
            The number of records in the file, or with `full` the checked contents.

        Raises:
            RLGraphCheckpointError: As `load`.
        """
        checked = self._read_file(path, f"{type(self).__name__}.check_file")
        return checked if full else checked[1]["size"]

    def _read_file(self, source: Any, where: str) -> tuple:
        scalar_kinds = {"index": "iu", "size": "iu", "rng_position": "iu", "rng_has_gauss": "iu",
                        "max_priority": "f", "rng_cached_gaussian": "f"}
        expected = {name: ArraySpec((), kinds) for name, kinds in scalar_kinds.items()}
        expected.update(config=ArraySpec((3,), "f"), priorities=ArraySpec((self.tree.capacity,), "f"),
                        rng_keys=ArraySpec((624,), "u", np.uint32), **self._file_specs())
        if self.record_space is not None:
            expected.update({_RECORD_PREFIX + key: ArraySpec(store.shape, store.dtype.kind, store.dtype,
                                                             mismatch="the file's records do not fit this memory")
                             for key, store in self.storage.items()})
        # An owner's integer counters saved with the records (`save(extra=...)`).
        prefixed = {_EXTRA_PREFIX: ArraySpec((), "iu")}
        if self.record_space is None:
            prefixed[_RECORD_PREFIX] = ArraySpec((self.capacity, Ellipsis), "biuf")
        if isinstance(source, (bytes, bytearray, memoryview)):
            values = read_npz_bytes(bytes(source), "memory file", where, expected, prefixed=prefixed)
        else:
            values = read_npz(source, where, expected, prefixed=prefixed)
        return values, _check_file(values, self, where)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(capacity={self.capacity}, alpha={self.alpha}, beta={self.beta}, "
                f"size={self.size})")


def _is_real(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) and \
        np.isfinite(value)


def _check_file(values: Dict[str, np.ndarray], memory: MemPrioritizedReplay, where: str) -> Dict[str, Any]:
    """Validates a loaded file against `memory` without touching it; returns the scalar state."""
    def fail(message, expected=None, received=None):
        raise RLGraphCheckpointError(message, where=where, expected=expected, received=received)

    scalars = ("config", "priorities", "index", "size", "max_priority", "rng_keys", "rng_position", "rng_has_gauss",
               "rng_cached_gaussian")
    missing = [k for k in scalars if k not in values]
    if missing:
        fail("the file is not a MemPrioritizedReplay file", expected=list(scalars), received=sorted(values))
    config = values["config"]
    wanted = np.array([memory.capacity, memory.alpha, memory.epsilon])
    if config.shape != (3,) or not np.allclose(config, wanted, rtol=1e-12, atol=0.0):
        fail("the file was written by a memory of another capacity/alpha/epsilon",
             expected=wanted.tolist(), received=config.tolist())
    try:
        state = dict(index=int(values["index"]), size=int(values["size"]), max_priority=float(values["max_priority"]),
                     rng_position=int(values["rng_position"]), rng_has_gauss=int(values["rng_has_gauss"]),
                     rng_cached_gaussian=float(values["rng_cached_gaussian"]))
    except (TypeError, ValueError) as error:
        fail(f"damaged positions or RNG state ({error})")
    if not (0 <= state["index"] < memory.capacity and 0 <= state["size"] <= memory.capacity):
        fail("index or size out of range", expected=f"in [0, {memory.capacity}]",
             received=f"index={state['index']}, size={state['size']}")
    if not (np.isfinite(state["max_priority"]) and state["max_priority"] > 0):
        fail("damaged max priority", received=state["max_priority"])
    check_mt19937(values["rng_keys"], values["rng_position"], values["rng_has_gauss"],
                  values["rng_cached_gaussian"], "rng_keys", where)
    priorities = values["priorities"]
    if priorities.shape != (memory.tree.capacity,) or priorities.dtype.kind != "f" or \
            not np.all(np.isfinite(priorities)) or np.any(priorities[:state["size"]] <= 0):
        fail("damaged priorities", expected=f"{memory.tree.capacity} finite floats, positive for stored records",
             received=f"{priorities.dtype} {priorities.shape}")
    records = {k[len(_RECORD_PREFIX):]: v for k, v in values.items() if k.startswith(_RECORD_PREFIX)}
    if memory.record_space is None:
        try:
            state["record_space"] = get_space_from_op(unflatten_op(records), add_batch_rank=True).strip_ranks()
        except Exception as error:  # noqa: BLE001 - damaged record arrays
            fail(f"damaged records ({error})")
        expected = {k: ((memory.capacity,) + v.shape[1:], v.dtype) for k, v in records.items()}
    else:
        expected = {k: (v.shape, v.dtype) for k, v in memory.storage.items()}
    received = {k: (v.shape, v.dtype) for k, v in records.items()}
    if not records or received != expected:
        fail("the file's records do not fit this memory", expected=expected, received=received)
    return state
