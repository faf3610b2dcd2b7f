"""The spec keys and values of schedules: number checks, "from"/"to" aliases, the original RLgraph's step keys."""
from __future__ import annotations

import numbers
from typing import Any, Optional

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphSpecError

# Spec keys that name a constructor argument under another name.
KEY_ALIASES = {"from": "from_", "to": "to_"}
# Keys of the original RLgraph's schedules that have no counterpart here -> what to write instead.
ORIGINAL_STEP_KEYS = {
    "start_timestep": "start_percentage (= start_timestep / execution_spec.max_timesteps)",
    "num_timesteps": "stop_percentage (= (start_timestep + num_timesteps) / execution_spec.max_timesteps)",
    "decay_steps": "stop_percentage (a fraction of execution_spec.max_timesteps)",
    "resolution": "nothing: values are computed from the time percentage exactly; remove the key",
}


def is_number(value: Any) -> bool:
    """Whether `value` is a real number (a bool is not)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def check_number(value: Any, name: str, where: str, low: Optional[float] = None, high: Optional[float] = None,
                 low_open: bool = False) -> float:
    """`value` as a float if it is a finite real number within the bounds, else an `RLGraphSpecError`
    naming `where(name)` (`low_open`: the lower bound is exclusive)."""
    ok = is_number(value) and bool(np.isfinite(value))
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value <= high
    if not ok:
        bounds = ""
        if low is not None:
            bounds = f" {'>' if low_open else '>='} {low}" + (f" and <= {high}" if high is not None else "")
        raise RLGraphSpecError(f"{name} must be a finite number{bounds}", where=f"{where}({name})",
                               expected=f"a float{bounds}", received=repr(value))
    return float(value)


def rename_key_aliases(spec: dict) -> dict:
    """A copy of `spec` with "from"/"to" renamed to the constructor's "from_"/"to_".

    Raises:
        RLGraphSpecError: If a key is given under both names.
    """
    out = dict(spec)
    for alias, key in KEY_ALIASES.items():
        if alias in out:
            if key in out:
                raise RLGraphSpecError(f"'{alias}' and '{key}' both given", where="TimeDependentParameter.from_spec",
                                       expected=f"only one of '{alias}' / '{key}'", received=repr(spec))
            out[key] = out.pop(alias)
    return out


def refuse_step_keys(spec: dict) -> None:
    """Raises an `RLGraphSpecError` with what to write instead if `spec` holds one of the original
    RLgraph's step-based keys (`ORIGINAL_STEP_KEYS`)."""
    given = sorted(set(spec) & set(ORIGINAL_STEP_KEYS))
    if given:
        raise RLGraphSpecError(f"schedule key(s) {given} of the original RLgraph are not supported",
                               where="TimeDependentParameter.from_spec", received=given,
                               hint="schedules run on the fraction of training done, not on step counts: use "
                                    + "; ".join(f"for {k}: {ORIGINAL_STEP_KEYS[k]}" for k in given) + ".")
