"""Validation of the agents' sub-specs (`update_spec`, `observe_spec`, ...): defaults plus checks."""
from __future__ import annotations

import math
import numbers
import os
import re
import sys
from typing import Any, Dict, Optional

import numpy as np

from rlgraph.utils.compile_spec import check_compile
from rlgraph.utils.devices import check_device, check_device_map
from rlgraph.utils.rlgraph_errors import RLGraphSpecError
from rlgraph.utils.specifiable import closest_match

# The keys each sub-spec accepts, with their defaults.
UPDATE_SPEC_DEFAULTS: Dict[str, Any] = {
    "do_updates": True,
    "update_mode": "time_steps",
    "update_interval": 4,        # env steps between update rounds
    "steps_before_update": 0,    # env steps observed before the first update round
    "batch_size": 64,
    "sync_interval": 32,         # env steps between target-network syncs (checked at updates)
    "sync_tau": 1.0,             # 1.0: hard copy; < 1: soft (Polyak) target updates
    "update_steps": 1,           # updates per round
}
OBSERVE_SPEC_DEFAULTS: Dict[str, Any] = {
    "buffer_enabled": True,
    "buffer_size": 1000,         # records per env_id before a flush into the memory
    "normalize_rewards": False,  # scale rewards by the running std of the return (reward_scaling.py)
}
EXECUTION_SPEC_DEFAULTS: Dict[str, Any] = {
    "seed": None,
    "torch_num_threads": None,
    "tf_num_threads": None,
    "max_timesteps": None,       # env steps that make time_percentage 1.0 (schedules)
    "mode": "single",
    "torch_flush_denormal": True,  # PyTorch: flush subnormal floats to zero (CPU speed; TF does it by default)
    "tf_trace_at_build": False,    # TF: trace every API method's tf.function at build (else at its first call)
    "device": "auto",            # "auto" (a GPU where the backend sees one), "cpu", "cuda", "cuda:N" (utils/devices.py)
    "device_map": None,          # {component scope: device}: components off execution_spec.device (graphs/placement.py)
    "compile": False,            # compile root API methods: torch.compile / XLA (utils/compile_spec.py)
    "nan_check": "raise",        # NaN/inf in observed data or a loss: "raise", "warn" (log once per field) or "off"
    "num_learners": 1,           # data-parallel learner processes of `rlgraph train` (execution/learners.py)
    "learner_check_interval": 100,  # updates between the learners' weight comparisons (0: never)
}
NAN_CHECK_MODES = ("raise", "warn", "off")
# Keys of earlier rlgraph versions that are gone -> why (the hint of the unknown-key error).
REMOVED_KEYS = {"torch_call_plans": "PyTorch's call plans are derived at build and always used (see "
                                    "docs/components.md); remove the key."}
# (The original RLgraph's keys, e.g. execution_spec.ray_spec or session_config, are mapped or dropped
# with a warning before these checks: see original_keys.py.)
# Read by `rlgraph train` (rlgraph/execution/training.py) except saver_spec.directory, the default
# path of `Agent.store_model`/`load_model`, and summary_regexp, which the graph builder applies.
SAVER_SPEC_DEFAULTS: Dict[str, Any] = {
    "directory": None,
    "checkpoint_frequency": None,  # env steps between periodic checkpoints (training_spec.checkpoint_interval)
    "max_checkpoints": None,       # periodic checkpoints kept (oldest deleted; None: all)
    "save_replay": True,           # checkpoints hold the replay memories' contents (False: they load empty)
}
SUMMARY_SPEC_DEFAULTS: Dict[str, Any] = {
    "directory": None,             # TensorBoard directory (None: <output dir>/tensorboard)
    "summary_interval": 100,       # env steps between training-scalar points (0: every log chunk)
    "summary_regexp": None,        # components' summaries whose name matches are recorded
}
UPDATE_MODES = ("time_steps",)     # Updates run every update_interval env steps.
EXECUTION_MODES = ("single",)      # Distributed runs: execution_spec.ray_spec (docs/distributed.md).
MAX_SEED = 2 ** 32 - 1             # numpy's RandomState takes seeds in [0, 2**32 - 1].
# Integer spec values (counts, sizes, intervals, steps) are stored and fed to numpy and the backends
# as int64: a larger one (1e30 written as a number) is refused at the spec check instead of
# overflowing in a later call.
MAX_SPEC_INT = 2 ** 63 - 1
# Thread-pool sizes (execution_spec.torch_num_threads / tf_num_threads). The backends take a C int
# and start that many threads; far more threads than any machine has cores only thrash.
MAX_NUM_THREADS = 1024


def check_spec(spec: Optional[dict], defaults: Dict[str, Any], name: str, owner: str) -> Dict[str, Any]:
    """`defaults` updated with `spec`, after rejecting keys that `defaults` does not have.

    Raises:
        RLGraphSpecError: For a spec that is not a dict or holds unknown keys; the message lists
            the valid keys and the closest match.
    """
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        raise RLGraphSpecError(f"{name} must be a dict", where=f"{owner}({name})", expected=sorted(defaults),
                               received=repr(spec))
    check_string_keys(spec, name, owner)
    unknown = sorted(set(spec) - set(defaults))
    if unknown:
        guess = closest_match(unknown[0], list(defaults))
        hint = REMOVED_KEYS.get(unknown[0], f"did you mean '{guess}'?" if guess else None)
        raise RLGraphSpecError(f"unknown key(s) {unknown} in {name}", where=f"{owner}({name})",
                               expected=sorted(defaults), received=unknown, hint=hint)
    out = dict(defaults)
    out.update(spec)
    return out


def check_string_keys(spec: dict, name: str, owner: str) -> None:
    """Raises an `RLGraphSpecError` naming `name` and the first key of `spec` that is not a string
    (a YAML `1:` or `true:` key; JSON has string keys only)."""
    bad = [key for key in spec if not isinstance(key, str)]
    if bad:
        raise RLGraphSpecError(f"the keys of {name} must be strings", where=f"{owner}({name})",
                               received=f"key {bad[0]!r} ({type(bad[0]).__name__})",
                               hint="quote the key in YAML (\"1\": ..., \"on\": ...).")


def check_positive_int(value: Any, name: str, owner: str, minimum: int = 1) -> int:
    """`value` as an int >= `minimum`, else an `RLGraphSpecError` naming `name`."""
    return check_number(value, name, owner, low=minimum, integer=True)


def check_number(value: Any, name: str, owner: str, low: Optional[float] = None, high: Optional[float] = None,
                 low_inclusive: bool = True, high_inclusive: bool = True, integer: bool = False,
                 allow_none: bool = False, hint: Optional[str] = None) -> Any:
    """`value` as an int (`integer`) or a float, after checking that it is a finite real number in range.

    Integral floats pass as integers (JSON may write 100000 as 1e5); booleans, strings, NaN and
    infinities never pass, nor does an integer beyond `MAX_SPEC_INT` (a 64-bit int: 1e30 is not a count).

    Args:
        value: The value to check.
        name: Its key path, e.g. "update_spec.sync_tau" (named in the message).
        owner: The class or function that takes the spec (the error's `where` is "owner(name)").
        low: The lower bound (None: unbounded); `low_inclusive` says whether it belongs to the range.
        high: The upper bound (None: unbounded); `high_inclusive` says whether it belongs to the range.
        integer: Demand an integer.
        allow_none: Let None through (returned as None).
        hint: The error's hint.

    Raises:
        RLGraphSpecError: Naming `name`, the valid range and `value`.
    """
    if value is None and allow_none:
        return None
    valid = isinstance(value, numbers.Real) and not isinstance(value, (bool, np.bool_)) and \
        (isinstance(value, numbers.Integral) or math.isfinite(value))
    if valid and not integer and isinstance(value, numbers.Integral):
        valid = abs(value) <= sys.float_info.max  # (10**400 has no float.)
    if valid and integer:
        valid = isinstance(value, numbers.Integral) or float(value).is_integer()
    if valid and low is not None:
        valid = value >= low if low_inclusive else value > low
    if valid and high is not None:
        valid = value <= high if high_inclusive else value < high
    too_large = valid and integer and abs(value) > MAX_SPEC_INT
    if not valid or too_large:
        if low is not None and high is not None:
            bounds = f" in {'[' if low_inclusive else '('}{low}, {high}{']' if high_inclusive else ')'}"
        elif low is not None:
            bounds = f" {'>=' if low_inclusive else '>'} {low}"
        elif high is not None:
            bounds = f" {'<=' if high_inclusive else '<'} {high}"
        else:
            bounds = ""
        kind = "an integer" if integer else "a finite number"
        if too_large:
            bounds += f" (at most {MAX_SPEC_INT}: a 64-bit integer)"
        raise RLGraphSpecError(f"{name} must be {kind}{bounds}{' or null' if allow_none else ''}",
                               where=f"{owner}({name})", received=repr(value)[:100], hint=hint)
    return int(value) if integer else float(value)


def check_bool(value: Any, name: str, owner: str) -> bool:
    """`value` if it is a boolean (Python or numpy), else an `RLGraphSpecError` naming `name`."""
    if not isinstance(value, (bool, np.bool_)):
        raise RLGraphSpecError(f"{name} must be true or false", where=f"{owner}({name})", received=repr(value),
                               hint="write a JSON/YAML boolean (true/false, no quotes)." if isinstance(value, str)
                               else None)
    return bool(value)


def check_time_percentage(value: Any, where: str) -> np.float32:
    """An API method's `time_percentage` argument as float32: a finite real number (schedules clip it
    to [0, 1]), else an `RLGraphSpecError` with `where` (e.g. "agent.update(time_percentage)")."""
    finite = False
    if isinstance(value, (numbers.Real, np.ndarray)) and not isinstance(value, (bool, np.bool_)):
        array = np.asarray(value)
        if array.shape == () and array.dtype.kind in "iuf":
            finite = abs(float(array)) <= float(np.finfo(np.float32).max)  # (False for NaN; the graph takes float32.)
    if not finite:
        raise RLGraphSpecError("time_percentage must be a finite number", where=where,
                               expected="a float in [0, 1] (the fraction of training done; None: the agent's own)",
                               received=repr(value)[:80])
    return np.float32(value)


def check_seed(value: Any, name: str, owner: str, allow_none: bool = True) -> Optional[int]:
    """`value` as a seed: an integer in [0, 2**32 - 1] (numpy's range), or None (`allow_none`)."""
    return check_number(value, name, owner, 0, MAX_SEED, integer=True, allow_none=allow_none,
                        hint="numpy's random generators take 32-bit unsigned seeds.")


def check_dict(value: Any, name: str, owner: str) -> dict:
    """A copy of `value` if it is a dict ({} for None), else an `RLGraphSpecError` naming `name`."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RLGraphSpecError(f"{name} must be a dict (or null)", where=f"{owner}({name})", received=repr(value)[:80])
    return dict(value)


def check_directory(value: Any, name: str, owner: str) -> Optional[str]:
    """`value` as a path string (None passes), else an `RLGraphSpecError` naming `name`."""
    if value is not None and (not isinstance(value, (str, os.PathLike)) or not os.fspath(value)):
        raise RLGraphSpecError(f"{name} must be a directory path or null", where=f"{owner}({name})",
                               received=repr(value))
    return None if value is None else os.fspath(value)


# --- The values of each sub-spec (after `check_spec` filled in the defaults) ---------------------
def check_update_spec(spec: Dict[str, Any], owner: str, modes: tuple = UPDATE_MODES) -> Dict[str, Any]:
    """Checks (and normalizes, e.g. 64.0 -> 64) an `update_spec` in place; returns it.

    `modes` are the update modes the agent knows ("episodes": on-policy agents update after
    `batch_size` finished episodes)."""
    spec["do_updates"] = check_bool(spec["do_updates"], "update_spec.do_updates", owner)
    hint = "updates run every update_interval env steps." if modes == UPDATE_MODES else \
        '"time_steps": a batch of batch_size env steps; "episodes": of batch_size finished episodes.'
    spec["update_mode"] = check_choice(spec["update_mode"], modes, "update_spec.update_mode", owner, hint=hint)
    for key, low in (("update_interval", 1), ("steps_before_update", 0), ("batch_size", 1), ("sync_interval", 0),
                     ("update_steps", 1)):
        spec[key] = check_number(spec[key], f"update_spec.{key}", owner, low=low, integer=True)
    spec["sync_tau"] = check_number(spec["sync_tau"], "update_spec.sync_tau", owner, 0, 1, low_inclusive=False,
                                    hint="1 copies the policy into the target; smaller values average (Polyak).")
    return spec


def check_observe_spec(spec: Dict[str, Any], owner: str) -> Dict[str, Any]:
    """Checks an `observe_spec` in place; returns it."""
    spec["buffer_enabled"] = check_bool(spec["buffer_enabled"], "observe_spec.buffer_enabled", owner)
    spec["buffer_size"] = check_number(spec["buffer_size"], "observe_spec.buffer_size", owner, low=1, integer=True)
    return spec


def check_execution_spec(spec: Dict[str, Any], owner: str) -> Dict[str, Any]:
    """Checks an `execution_spec` in place (its keys but `nan_check`, checked where it is read); returns it."""
    spec["seed"] = check_seed(spec["seed"], "execution_spec.seed", owner)
    for key in ("torch_num_threads", "tf_num_threads"):
        spec[key] = check_number(spec[key], f"execution_spec.{key}", owner, 1, MAX_NUM_THREADS, integer=True,
                                 allow_none=True, hint="the size of the backend's CPU thread pool (null: its default).")
    spec["max_timesteps"] = check_number(spec["max_timesteps"], "execution_spec.max_timesteps", owner, low=1,
                                         integer=True, allow_none=True)
    spec["mode"] = check_choice(spec["mode"], EXECUTION_MODES, "execution_spec.mode", owner,
                                hint="distributed runs have an execution_spec.ray_spec (docs/distributed.md).")
    for key in ("torch_flush_denormal", "tf_trace_at_build"):
        spec[key] = check_bool(spec[key], f"execution_spec.{key}", owner)
    spec["device"] = check_device(spec["device"], owner)
    spec["device_map"] = check_device_map(spec["device_map"], owner)
    spec["compile"] = check_compile(spec["compile"], owner)
    spec["num_learners"] = check_number(spec["num_learners"], "execution_spec.num_learners", owner, low=1,
                                        integer=True, hint="the processes of a data-parallel run (--learners N).")
    key = "learner_check_interval"
    spec[key] = check_number(spec[key], f"execution_spec.{key}", owner, low=0, integer=True,
                             hint="0 switches the check off.")
    return spec


def check_saver_spec(spec: Dict[str, Any], owner: str) -> Dict[str, Any]:
    """Checks a `saver_spec` in place; returns it."""
    spec["directory"] = check_directory(spec["directory"], "saver_spec.directory", owner)
    for key in ("checkpoint_frequency", "max_checkpoints"):
        spec[key] = check_number(spec[key], f"saver_spec.{key}", owner, low=1, integer=True, allow_none=True)
    if not isinstance(spec["save_replay"], bool):
        raise RLGraphSpecError("saver_spec.save_replay must be true or false", where=f"{owner}(saver_spec.save_replay)",
                               expected="a bool", received=repr(spec["save_replay"]),
                               hint="false leaves the replay memories' contents out of checkpoints.")
    return spec


def check_summary_spec(spec: Dict[str, Any], owner: str) -> Dict[str, Any]:
    """Checks a `summary_spec` in place; returns it."""
    spec["directory"] = check_directory(spec["directory"], "summary_spec.directory", owner)
    spec["summary_interval"] = check_number(spec["summary_interval"], "summary_spec.summary_interval", owner, low=0,
                                            integer=True)
    regexp = spec["summary_regexp"]
    if regexp is not None:
        try:
            re.compile(regexp)
        except (TypeError, re.error) as error:
            raise RLGraphSpecError(f"summary_spec.summary_regexp is not a regular expression ({error})",
                                   where=f"{owner}(summary_spec.summary_regexp)", received=repr(regexp)) from None
    return spec


def check_choice(value: Any, choices: tuple, name: str, owner: str, hint: Optional[str] = None) -> Any:
    """`value` if it is one of `choices`, else an `RLGraphSpecError` naming `name` and the choices
    (with the closest one as the hint, else `hint`)."""
    if isinstance(value, str) and value in choices:
        return value
    guess = closest_match(value, list(choices)) if isinstance(value, str) else None
    raise RLGraphSpecError(f"{name} must be one of {list(choices)}", where=f"{owner}({name})", expected=list(choices),
                           received=repr(value), hint=f"did you mean '{guess}'?" if guess else hint)


#: The keys of a critic's spec in its dict form (as the original RLgraph's `ValueFunction` spec).
HEAD_SPEC_KEYS = ("network_spec", "weights_spec", "biases_spec")


def split_head_spec(spec: Any, name: str, owner: str) -> tuple:
    """(network spec, output-layer initializers) of a critic's spec: a layer list or network as it
    is (the layer's own default initializers), or {"network_spec": ..., "weights_spec": ...,
    "biases_spec": ...} with the initializers of its output layer (see `get_initializer`).

    Raises:
        RLGraphSpecError: Naming `<owner>(<name>)`, for another key in the dict form.
    """
    if not (isinstance(spec, dict) and "network_spec" in spec):
        return spec, {}
    unknown = sorted(set(spec) - set(HEAD_SPEC_KEYS), key=str)
    if unknown:
        raise RLGraphSpecError(f"unknown key(s) {unknown} in {name}", where=f"{owner}({name})",
                               expected=", ".join(HEAD_SPEC_KEYS), received=repr(spec)[:120],
                               hint=f"{name} is a layer list, or a dict of the network's layers (network_spec) and "
                                    "the initializers of the output layer (weights_spec, biases_spec).")
    return spec["network_spec"], {k: spec[k] for k in ("weights_spec", "biases_spec") if k in spec}
