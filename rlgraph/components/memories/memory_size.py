"""How many bytes a memory's storage takes, and the refusal of one that cannot fit into RAM.

A capacity typed one order of magnitude too large used to end in numpy's `MemoryError` (or the
backend's allocation failure, or the OS killing the process) at the first variable. The memories
estimate their storage from the record space first and refuse it with the figure.
"""
from __future__ import annotations

import math
import os
from typing import Optional

import numpy as np

from rlgraph.spaces import Space
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


def record_bytes(record_space: Space) -> int:
    """Bytes of one record of `record_space` (ranks stripped): the sum over its leaves.

    >>> from rlgraph.spaces import Dict, FloatBox, IntBox
    >>> record_bytes(Dict(states=FloatBox(shape=(4,)), actions=IntBox(2)))  # 4 * 4 (float32) + 4 (int32)
    20
    """
    total = 0
    for leaf in record_space.strip_ranks().flatten().values():
        itemsize = np.dtype(leaf.dtype).itemsize if np.dtype(leaf.dtype).kind in "biuf" else 8
        total += int(np.prod(leaf.shape, dtype=np.int64)) * itemsize
    return total


def physical_memory_bytes() -> Optional[int]:
    """The machine's RAM in bytes (None where the OS does not tell)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def format_bytes(num_bytes: float) -> str:
    """'7.1 PiB'-style text (binary units).

    >>> format_bytes(512), format_bytes(3 * 2 ** 30), format_bytes(8 * 10 ** 18)
    ('512 B', '3.0 GiB', '6.9 EiB')
    """
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB", "YiB")
    power = 0 if num_bytes < 1024 else min(int(math.log(num_bytes, 1024)), len(units) - 1)
    return f"{num_bytes:.0f} B" if power == 0 else f"{num_bytes / 1024 ** power:.1f} {units[power]}"


def check_memory_size(capacity: int, num_bytes: int, where: str) -> None:
    """Refuses a memory of `capacity` records whose storage needs `num_bytes`, more than the RAM.

    The bound is the machine's physical memory: a larger memory cannot be allocated (or only into
    swap, where a replay memory's random access crawls). Without a known RAM size nothing is
    checked.

    Raises:
        RLGraphSpecError: Naming the capacity, the bytes it needs, the RAM and the largest
            capacity that fits.
    """
    ram = physical_memory_bytes()
    if ram is None or num_bytes <= ram:
        return
    per_record = num_bytes / capacity
    raise RLGraphSpecError(
        f"capacity {capacity} needs ~{format_bytes(num_bytes)} ({format_bytes(per_record)} per record), more than "
        f"this machine's {format_bytes(ram)} of memory", where=f"{where}(capacity)",
        expected=f"a capacity below ~{int(ram // per_record)} records", received=capacity,
        hint="lower memory_spec.capacity; a record holds states, next_states, actions, rewards and terminals "
             "(plus priorities in a prioritized memory).")


def available_memory_bytes() -> Optional[int]:
    """The memory the OS can hand out now without swapping, in bytes (None where it does not tell).

    psutil's `virtual_memory().available` where psutil is installed, else "MemAvailable" of
    /proc/meminfo (Linux).
    """
    try:
        import psutil  # Optional: not a dependency of rlgraph.
        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024  # The file counts kB.
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_available_memory(num_bytes: int, where: str, what: str, hint: str) -> None:
    """Refuses `num_bytes` more than the available memory (`available_memory_bytes`), naming the figure.

    Args:
        num_bytes: The bytes about to be allocated.
        where: The component and argument, for the error.
        what: What needs them, e.g. "capacity 1000000 (4 x (84, 84, 1) uint8 frames per state)".
        hint: What the user can do.

    Raises:
        RLGraphSpecError: If the figure exceeds the available memory (nothing is checked where
            the OS does not tell).
    """
    available = available_memory_bytes()
    if available is None or num_bytes <= available:
        return
    raise RLGraphSpecError(f"{what} needs ~{format_bytes(num_bytes)}, more than the {format_bytes(available)} "
                           f"of memory available now", where=where,
                           expected=f"at most {format_bytes(available)}", received=format_bytes(num_bytes), hint=hint)
