"""Checks of the scalar values a checkpoint restores: counters and numpy random generator states.

A counter must fit the int64 that every later use of it (numpy, the backends' step variables)
takes; a numpy MT19937 state must be one `RandomState.set_state` takes and that then draws
random numbers (an all-zero key array makes the generator return zeros forever).
"""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError

INT64_MAX = 2 ** 63 - 1
MT19937_KEYS = 624
MT19937_ARRAY = (MT19937_KEYS,)


def check_counter(value: Any, name: str, where: str, minimum: int = 0) -> int:
    """`value` if it is an int in [minimum, 2**63 - 1].

    Raises:
        RLGraphCheckpointError: Naming `name` and the range.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= INT64_MAX:
        raise RLGraphCheckpointError(f"the checkpoint's '{name}' is damaged", where=where,
                                     expected=f"an integer in [{minimum}, 2**63 - 1]",
                                     received=repr(value)[:100] if not isinstance(value, int) or
                                     abs(value) < 10 ** 90 else f"an integer of {len(str(abs(value)))} digits")
    return value


def check_mt19937(keys: Any, pos: Any, has_gauss: Any, cached: Any, name: str,
                  where: str) -> Tuple[str, np.ndarray, int, int, float]:
    """A numpy `RandomState` state tuple, checked completely: 624 uint32 keys that are not the
    degenerate all-zero state (the top bit of key 0 and keys 1..623 all zero), a position in
    [0, 624], has_gauss 0 or 1 and a finite cached gaussian.

    Raises:
        RLGraphCheckpointError: Naming `name`.
    """
    keys = np.asarray(keys) if keys is not None else None
    if keys is None or keys.shape != MT19937_ARRAY or keys.dtype != np.uint32:
        raise RLGraphCheckpointError(f"the random generator state '{name}' is damaged", where=where,
                                     expected="an MT19937 state of 624 uint32 keys",
                                     received=None if keys is None else f"{keys.dtype} {keys.shape}")
    if not int(keys[0]) & 0x80000000 and not keys[1:].any():
        raise RLGraphCheckpointError(f"the random generator state '{name}' is degenerate (its keys are zero)",
                                     where=where, expected="an MT19937 state that is not all zero",
                                     hint="such a generator returns only zeros; the checkpoint was damaged or crafted.")
    ints = [np.asarray(v).item() if isinstance(v, np.ndarray) and v.shape == () else v for v in (pos, has_gauss)]
    cached = np.asarray(cached).item() if isinstance(cached, np.ndarray) and cached.shape == () else cached
    valid = all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in ints) and \
        0 <= ints[0] <= MT19937_KEYS and ints[1] in (0, 1) and \
        isinstance(cached, (int, float, np.integer, np.floating)) and not isinstance(cached, bool) and \
        bool(np.isfinite(cached))
    if not valid:
        raise RLGraphCheckpointError(f"the random generator position of '{name}' is damaged", where=where,
                                     expected="pos in [0, 624], has_gauss 0 or 1, a finite cached gaussian",
                                     received=repr((pos, has_gauss, cached))[:200])
    return "MT19937", keys, int(ints[0]), int(ints[1]), float(cached)
