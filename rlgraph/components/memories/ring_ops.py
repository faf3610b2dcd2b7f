"""Ring-buffer storage operations shared by the in-graph memories (ReplayMemory, RingBuffer, FIFOQueue).

Records are flattened to auto-key -> tensor; writes go to slots (index + i) % capacity of the
memory's per-leaf variables; reads gather rows by slot.
"""
from __future__ import annotations

from typing import Any, Dict

from rlgraph.backend_system import get_backend
from rlgraph.components.memories.memory import Memory
from rlgraph.utils.nest import unflatten_op


def flat_records(records: Any) -> Dict[str, Any]:
    """Flattened records (auto-key -> tensor); a primitive record becomes {"": tensor}."""
    return dict(records) if isinstance(records, dict) else {"": records}


def num_rows(flat: Dict[str, Any]) -> Any:
    """The batch size B of flattened records: an int64 scalar tensor on TF, an int on PyTorch."""
    first = next(iter(flat.values()))
    if get_backend() == "tf":
        import tensorflow as tf
        return tf.shape(first, out_type=tf.int64)[0]
    return int(first.shape[0])


def write_ring(memory: Memory, flat: Dict[str, Any]) -> Any:
    """Writes records [B, ...] at `memory.index` (wrapping) and advances `index` and `size`.

    Record i of the batch goes to slot (index + i) % capacity, as if inserted one by one; of a
    batch larger than the capacity only the last `capacity` records are written (scatter updates
    with duplicate slots would have no defined winner).

    Returns:
        B (int64 tensor on TF, int on PyTorch).
    """
    capacity = memory.capacity
    n = num_rows(flat)
    if get_backend() == "tf":
        import tensorflow as tf
        index, size = memory.read_variable(memory.index), memory.read_variable(memory.size)
        keep = tf.minimum(n, capacity)
        slots = (index + tf.range(n - keep, n, dtype=tf.int64)) % capacity
        new_size = tf.minimum(size + n, capacity)
    else:
        import torch
        keep = min(n, capacity)
        if torch.compiler.is_compiling():
            # torch.compile traces tensors, not their values: the same arithmetic on the 0-d variables.
            index, size = memory.index.clone(), memory.size
            new_size = torch.clamp(size + n, max=capacity)
        else:
            index, size = int(memory.index), int(memory.size)
            new_size = min(size + n, capacity)
        slots = (index + torch.arange(n - keep, n, dtype=torch.long)) % capacity
    for key, variable in memory.memory.items():
        memory.scatter_update_variable(variable, slots, flat[key][n - keep:])
    memory.assign_variable(memory.index, (index + n) % capacity)
    memory.assign_variable(memory.size, new_size)
    return n


def read_rows(memory: Memory, slots: Any) -> Any:
    """The records at `slots` [N] (int64/long): nested like the record space, each leaf [N, ...]."""
    if get_backend() == "pytorch":
        import torch
        slots = torch.as_tensor(slots, dtype=torch.long)
    rows = {key: memory.read_variable(variable, slots) for key, variable in memory.memory.items()}
    if list(rows) == [""]:
        return rows[""]
    return unflatten_op(rows)
