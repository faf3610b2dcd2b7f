"""Validation of the agents' sub-specs (`update_spec`, `observe_spec`, ...): defaults plus checks."""
from __future__ import annotations

from typing import Any, Dict, Optional

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
}
EXECUTION_SPEC_DEFAULTS: Dict[str, Any] = {
    "seed": None,
    "torch_num_threads": None,
    "tf_num_threads": None,
    "max_timesteps": None,       # env steps that make time_percentage 1.0 (schedules)
    "mode": "single",
    "torch_flush_denormal": True,  # PyTorch: flush subnormal floats to zero (CPU speed; TF does it by default)
}
# Keys of earlier rlgraph versions that are gone -> why (the hint of the unknown-key error).
REMOVED_KEYS = {"torch_call_plans": "PyTorch's call plans are derived at build and always used (see "
                                    "docs/components.md); remove the key.",
                "ray_spec": "the distributed executors read it (ApexExecutor, `rlgraph train`; see "
                            "docs/distributed.md) and take it out before they build agents; an agent "
                            "built directly runs in one process: remove the key."}
SAVER_SPEC_DEFAULTS: Dict[str, Any] = {"directory": None, "checkpoint_frequency": None, "max_checkpoints": None}
SUMMARY_SPEC_DEFAULTS: Dict[str, Any] = {"directory": None, "summary_interval": 100}


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
    unknown = sorted(set(spec) - set(defaults))
    if unknown:
        guess = closest_match(unknown[0], list(defaults))
        hint = REMOVED_KEYS.get(unknown[0], f"did you mean '{guess}'?" if guess else None)
        raise RLGraphSpecError(f"unknown key(s) {unknown} in {name}", where=f"{owner}({name})",
                               expected=sorted(defaults), received=unknown, hint=hint)
    out = dict(defaults)
    out.update(spec)
    return out


def check_positive_int(value: Any, name: str, owner: str, minimum: int = 1) -> int:
    """`value` as an int >= `minimum`, else an `RLGraphSpecError` naming `name`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or int(value) != value or value < minimum:
        raise RLGraphSpecError(f"{name} must be an integer >= {minimum}", where=f"{owner}({name})",
                               received=repr(value))
    return int(value)
