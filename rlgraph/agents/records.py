"""The transition record: one dict, in one field order, from the observe buffers to the loss.

A record is a batch of transitions (s_t, a_t, r_t, d_t, s_{t+1}) as a dict with the keys
`RECORD_KEYS` (states preprocessed, every leaf batched [B, ...]):

    {"states": s_t, "actions": a_t, "rewards": r_t [B] float32, "terminals": d_t [B] bool,
     "next_states": s_{t+1}}

`ObserveBuffers` stacks its transitions into one, `Agent._observe_graph` writes one into the
memory, the memory samples them, and `DQNCore` reads one in its loss.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

import numpy as np

from rlgraph.agents.data_checks import DataChecks, record_where
from rlgraph.spaces import BoolBox, Dict, FloatBox, Space
from rlgraph.utils.keyed import check_keys
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError

RECORD_KEYS = ("states", "actions", "rewards", "terminals", "next_states")
_KEY_SET = frozenset(RECORD_KEYS)


def record_space(state_space: Space, action_space: Space) -> Dict:
    """The space of a batch of records, for (preprocessed) states and actions without batch rank."""
    # Copies: a container sets the ranks of the spaces it is given.
    return Dict(states=state_space.strip_ranks(), actions=action_space.strip_ranks(), rewards=FloatBox(),
                terminals=BoolBox(), next_states=state_space.strip_ranks(), add_batch_rank=True)


def to_record(batch: Any, where: str, optional: Iterable[str] = (), checks: Optional[DataChecks] = None) -> dict:
    """The record in a user's `batch` dict, rewards as float32 and terminals as bool arrays.

    Args:
        batch: A dict with the `RECORD_KEYS` (and maybe some of `optional`, which are left out).
        where: The agent method and argument, for errors.
        optional: Further keys that `batch` may hold.
        checks: The agent's `DataChecks`: also check the values against the spaces (shapes,
            dtype kinds, action ranges, rewards and terminals, and NaN/inf as `observe` does).

    Returns:
        A new dict with exactly the `RECORD_KEYS`, in their order.

    Raises:
        RLGraphError: If `batch` is not a dict, lacks a record key or has an unknown key.
        RLGraphSpaceError, RLGraphNonFiniteError: With `checks`, for values that fail them.
    """
    check_record_keys(batch, where, optional)
    if checks is not None:
        return checks.batch(batch, where=record_where(where))
    return {"states": batch["states"], "actions": batch["actions"],
            "rewards": np.asarray(batch["rewards"], np.float32), "terminals": np.asarray(batch["terminals"], bool),
            "next_states": batch["next_states"]}


def check_record_keys(records: Any, where: str, optional: Iterable[str] = ()) -> None:
    """Raises a clear `RLGraphError` unless `records` is a dict with the `RECORD_KEYS` (plus `optional`).

    Only the dict's keys are looked at, never its values (API methods call it while tracing).
    """
    if isinstance(records, dict) and records.keys() == _KEY_SET:
        return  # (The usual case, in one comparison.)
    check_keys(records, RECORD_KEYS, optional, where,
               hint="a record holds states (preprocessed), actions, rewards, terminals and next_states.")


def to_weighted_record(batch: Any, where: str, checks: Optional[DataChecks] = None) -> tuple:
    """(the record of `batch`, its importance weights [B] float32) for an update from a given
    batch: the record checked as `to_record` checks it, and `batch["importance_weights"]`
    (optional: ones without it) one finite value >= 0 per transition.

    Raises:
        RLGraphSpaceError: For weights that are not numbers, of the wrong shape, negative or not
            finite (and whatever `to_record` raises).
    """
    records = to_record(batch, where, optional=("importance_weights",), checks=checks)
    weights = batch.get("importance_weights")
    if weights is None:
        return records, np.ones_like(records["rewards"])
    expected = f"float32 [{len(records['rewards'])}], finite and >= 0"
    try:
        weights = np.asarray(weights, np.float32)
    except (TypeError, ValueError) as error:
        raise RLGraphSpaceError(FloatBox(), "importance weights must be numbers", where=f"{where}['importance_weights']",
                                expected=expected, received=repr(weights)[:80]) from error
    if weights.shape != records["rewards"].shape or not np.all(np.isfinite(weights)) or np.any(weights < 0):
        raise RLGraphSpaceError(FloatBox(), "importance weights must be one finite value >= 0 per transition",
                                where=f"{where}['importance_weights']", expected=expected,
                                received=f"shape {weights.shape}, values {weights.ravel()[:5].tolist()}")
    return records, weights
