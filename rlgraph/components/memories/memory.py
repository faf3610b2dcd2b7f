"""`Memory`: the base of replay memories and queues (records of any nested space)."""
from __future__ import annotations

import errno
import os
import stat
from typing import Any, Dict, Optional

import numpy as np

from rlgraph.components.component import Component
from rlgraph.components.memories.memory_size import check_memory_size, record_bytes
from rlgraph.spaces import Space, TextBox
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphSpaceError, RLGraphSpecError
from rlgraph.utils.safe_npz import ArraySpec, read_npz_bytes


class Memory(Component):
    """A memory of `capacity` records, each shaped like one item of the `records` argument.

    Subclasses implement the API (at least `insert_records(records)` and
    `get_records(num_records)`); this base validates `capacity`, creates the record storage
    and offers python-side persistence of all the memory's variables.

    Storage: `create_variables` makes one variable per leaf of the record space, shaped
    [capacity, *leaf shape] in the leaf's own dtype (uint8 images stay uint8), available as
    `self.memory` (auto-key -> variable, "" for a primitive record space), plus the write
    position `index` and the fill level `size` (int64 scalars).

    Args:
        capacity: The maximum number of records.
        scope: Default "memory".
    """

    def __init__(self, capacity: int = 1000, scope: str = "memory", **kwargs):
        super().__init__(scope=scope, **kwargs)
        if not isinstance(capacity, (int, np.integer)) or isinstance(capacity, bool) or capacity < 1:
            raise RLGraphSpecError("capacity must be a positive int", where=f"{type(self).__name__}(capacity)",
                                   received=repr(capacity))
        self.capacity = int(capacity)
        self.record_space: Optional[Space] = None  # One record, without batch rank.
        self.flat_record_space: Dict[str, Space] = {}
        self.memory: Dict[str, Any] = {}
        self.index = None
        self.size = None

    def check_input_spaces(self, input_spaces, action_space=None):
        space = input_spaces.get("records")
        if space is not None and not space.has_batch_rank:
            raise RLGraphSpaceError(space, "records need a batch rank", where=f"{self.global_scope}.insert_records(records)",
                                    expected="a space with add_batch_rank=True", received=space)

    def create_variables(self, input_spaces, action_space=None):
        space = input_spaces.get("records")
        if space is None:
            return
        self.record_space = space.strip_ranks()
        self.flat_record_space = dict(self.record_space.flatten())
        text = [key or "(the record)" for key, leaf in self.flat_record_space.items() if isinstance(leaf, TextBox)]
        if text:
            # Neither backend keeps strings in a memory variable (PyTorch has no string tensors; a TF
            # string variable fails when the build resets it to its initial value): refuse them here.
            raise RLGraphSpaceError(space, f"a memory cannot store text (TextBox leaves {text})",
                                    where=f"{self.global_scope}.insert_records(records)",
                                    expected="records of FloatBox, IntBox and BoolBox leaves",
                                    hint="turn text into numbers before it reaches the memory, e.g. with a "
                                         "StringToHashBucket preprocessor.")
        check_memory_size(self.capacity, self.storage_bytes(self.record_space), self.global_scope)
        memory = self.get_variable("memory", from_space=self.record_space, add_batch_rank=self.capacity,
                                   add_time_rank=False, trainable=False, flatten=True)
        self.memory = dict(memory) if isinstance(memory, dict) else {"": memory}
        self.index = self.get_variable("index", dtype="int64", trainable=False)
        self.size = self.get_variable("size", dtype="int64", trainable=False)

    def storage_bytes(self, record_space: Space) -> int:
        """Bytes of the variables `create_variables` makes for `record_space` (checked against the RAM)."""
        return self.capacity * record_bytes(record_space)

    def records_space(self, *argument_spaces: Any) -> Space:
        """The space of a batch of records (`@graph_fn(output_space="records_space")` for graph
        functions that read rows: their count, e.g. `num_records`, is no traced batch size)."""
        return self.record_space.with_batch_rank()

    # --- Python-side persistence (vinci-style memory files) -------------------------------------
    def memory_variables(self) -> Dict[str, Any]:
        """Local name -> variable of everything this memory stores (records, positions, priorities)."""
        return dict(self.variables)

    def save(self, path: str) -> str:
        """Writes the memory's contents and positions (a built memory) to `path` (.npz).

        Returns:
            The path written.
        """
        if not self.variables_created:
            raise RLGraphCheckpointError("the memory is not built yet", where=f"{self.global_scope}.save")
        return write_npz(path, {name: _read(var) for name, var in self.memory_variables().items()})

    def load(self, path: str) -> None:
        """Restores contents and positions written by `save`; nothing changes if the file does not fit.

        Raises:
            RLGraphCheckpointError: Missing or damaged file, or one written by a memory of other
                variables, shapes or dtypes.
        """
        where = f"{self.global_scope}.load"
        variables = self.memory_variables()
        current = {name: _read(var) for name, var in variables.items()}
        values = read_npz(path, where, {name: ArraySpec(value.shape, value.dtype.kind, value.dtype)
                                        for name, value in current.items()})
        if sorted(values) != sorted(variables):
            raise RLGraphCheckpointError("the file holds other variables than this memory", where=where,
                                         expected=sorted(variables), received=sorted(values))
        for name, var in variables.items():
            if values[name].shape != current[name].shape or values[name].dtype != current[name].dtype:
                raise RLGraphCheckpointError(f"variable '{name}' does not fit", where=where,
                                             expected=f"{current[name].shape} {current[name].dtype}",
                                             received=f"{values[name].shape} {values[name].dtype}")
        self.check_restored_variables(values, where)
        for name, var in variables.items():
            _write(var, values[name])


    def check_restored_variables(self, values: Dict[str, np.ndarray], where: str) -> None:
        """Positions from a checkpoint must lie within the capacity: `index` in [0, capacity),
        `size` in [0, capacity]; otherwise a crafted file would fail later, inside a sample."""
        for name, high in (("index", self.capacity - 1), ("size", self.capacity)):
            if name in values:
                value = np.asarray(values[name])
                if value.shape != () or value.dtype.kind not in "iu" or not 0 <= int(value) <= high:
                    raise RLGraphCheckpointError(f"the memory's '{name}' is out of range", where=where,
                                                 expected=f"an integer in [0, {high}] ({self.global_scope}, "
                                                          f"capacity {self.capacity})",
                                                 received=repr(value.tolist()) if value.size < 10 else value.shape)


def read_npz(path: str, where: str, expected: Dict[str, ArraySpec], max_bytes: Optional[int] = None,
             prefixed: Optional[Dict[str, ArraySpec]] = None) -> Dict[str, np.ndarray]:
    """The arrays of .npz file `path` (".npz" appended if `path` lacks it and does not exist), each
    bounded by `expected` before it is decompressed and read without pickle (`safe_npz.read_npz_bytes`).

    Raises:
        RLGraphCheckpointError: A missing, damaged, unexpected or pickle-holding file.
    """
    path = path if os.path.exists(path) or path.endswith(".npz") else path + ".npz"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise OSError(errno.EINVAL, "not a regular file")
            data = handle.read()
    except OSError as error:
        raise RLGraphCheckpointError(f"cannot read '{os.path.basename(path)}' ({error.strerror or error})",
                                     where=where, received=path) from None
    return read_npz_bytes(data, os.path.basename(path), where, expected, max_bytes, prefixed)


def write_npz(path: str, values: Dict[str, np.ndarray]) -> str:
    """Writes `values` to `path` (".npz" appended if missing), creating folders; returns the path.

    Atomic: the file is written next to `path`, synced, then renamed over it, so a crash (or a
    killed process) leaves either the old file or the new one, never half of one.
    """
    path = path if path.endswith(".npz") else path + ".npz"
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "wb") as handle:
            np.savez(handle, **values)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def _read(variable: Any) -> np.ndarray:
    if hasattr(variable, "detach"):
        return variable.detach().cpu().numpy().copy()
    return np.array(variable.numpy(), copy=True)


def _write(variable: Any, value: np.ndarray) -> None:
    if hasattr(variable, "detach"):
        import torch
        with torch.no_grad():
            variable.copy_(torch.as_tensor(value))
    else:
        variable.assign(value)
