"""IMPALA's rollout record: what an actor hands the learner, as one named record.

A rollout holds B rows of T steps (`worker_sample_size`), batch-major:

    {"states": s_0 .. s_{T-1} [B, T, ...] (preprocessed),
     "bootstrap_states": s_T [B, ...] (preprocessed; V(s_T) bootstraps the last step),
     "actions": a_t [B, T] (nested like the action space),
     "rewards": r_t [B, T] float32, "terminals": d_t [B, T] bool (episode ended after step t,
         by a terminal state or a time limit; then s_{t+1} is the next episode's first state),
     "action_probs": mu(.|s_t) [B, T, A] (the behaviour policy, nested like the actions),
     "initial_internal_states": (c, h) [B, units]       (recurrent networks only),
     "previous_actions": [B, T] (nested), "previous_rewards": [B, T]   (when fed to the network)}

The previous action and reward at step t are a_{t-1} and r_{t-1} (zeros at an episode's start),
exactly what the actor fed its network; those of s_T follow from the last step.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from rlgraph.spaces import BoolBox, Dict as DictSpace, FloatBox, Space, Tuple as TupleSpace
from rlgraph.utils.nest import map_structure
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphNonFiniteError, RLGraphSpaceError

ROLLOUT_KEYS = ("states", "bootstrap_states", "actions", "rewards", "terminals", "action_probs")
OPTIONAL_KEYS = ("initial_internal_states", "previous_actions", "previous_rewards")


def _nested_probs(space: Space, ranks: dict) -> Any:
    """FloatBox (A,) per discrete leaf, nested like `space` (the action probabilities' space)."""
    if isinstance(space, DictSpace):
        return DictSpace({k: _nested_probs(v, ranks) for k, v in space.items()}, **ranks)
    if isinstance(space, TupleSpace):
        return TupleSpace(*[_nested_probs(v, ranks) for v in space], **ranks)
    return FloatBox(shape=(space.num_categories,), **ranks)


def rollout_space(state_space: Space, action_space: Space, rnn_units: Optional[int], previous_action: bool,
                  previous_reward: bool) -> DictSpace:
    """The Dict space of a rollout record (batch and time ranks) for the learner's input."""
    seq = dict(add_batch_rank=True, add_time_rank=True)
    spaces = dict(states=state_space.with_extra_ranks(True, True), bootstrap_states=state_space.with_batch_rank(),
                  actions=action_space.with_extra_ranks(True, True),
                  rewards=FloatBox(**seq), terminals=BoolBox(**seq), action_probs=_nested_probs(action_space, seq))
    if rnn_units:
        state = FloatBox(shape=(rnn_units,), add_batch_rank=True)
        spaces["initial_internal_states"] = TupleSpace(state, state, add_batch_rank=True)
    if previous_action:
        spaces["previous_actions"] = action_space.with_extra_ranks(True, True)
    if previous_reward:
        spaces["previous_rewards"] = FloatBox(**seq)
    # (Without ranks on the Dict itself: a container would set them on every child, and s_T has no time rank.)
    return DictSpace(spaces)


def concat_rollouts(rollouts: List[Dict[str, Any]]) -> Dict[str, Any]:
    """One rollout of all rows (along the batch axis)."""
    if len(rollouts) == 1:
        return rollouts[0]
    return {key: map_structure(lambda *leaves: np.concatenate(leaves, axis=0), *[r[key] for r in rollouts])
            for key in rollouts[0]}


def split_rows(rollout: Dict[str, Any]) -> List[Dict[str, Any]]:
    """The rows of a rollout as rollouts of one row each."""
    rows = len(rollout["rewards"])
    return [{key: map_structure(lambda x, i=i: x[i:i + 1], value) for key, value in rollout.items()}
            for i in range(rows)]


def check_rollout(rollout: Any, keys: tuple, rollout_length: Optional[int], where: str) -> Dict[str, Any]:
    """Checks a rollout's keys and the [B, T] / [B, T + 1] sizes; returns it with numpy leaves.

    Raises:
        RLGraphError: For a missing or unknown key.
        RLGraphSpaceError: For inconsistent row or step counts, or non-finite rewards.
    """
    if not isinstance(rollout, dict):
        raise RLGraphError("a rollout must be a dict", where=where, expected=f"keys {list(keys)}",
                           received=type(rollout).__name__)
    missing, unknown = [k for k in keys if k not in rollout], sorted(set(rollout) - set(keys))
    if missing or unknown:
        raise RLGraphError("the rollout's keys do not fit this agent", where=where, expected=list(keys),
                           received=sorted(rollout), hint=f"missing {missing}, unknown {unknown}")
    out = {k: map_structure(np.asarray, rollout[k]) for k in keys}
    try:  # (A plain [B, T] array; given as nested lists, `map_structure` would keep the outer list.)
        out["rewards"] = rewards = np.asarray(rollout["rewards"])
    except (TypeError, ValueError) as error:  # Ragged rows.
        raise RLGraphSpaceError(FloatBox(), "rewards must be a [B, T] array", where=f"{where}['rewards']",
                                received=str(error)) from None
    if rewards.ndim != 2:
        raise RLGraphSpaceError(FloatBox(), "rewards must be [B, T]", where=f"{where}['rewards']",
                                received=f"shape {rewards.shape}")
    rows, steps = rewards.shape
    if rollout_length is not None and steps != rollout_length:
        raise RLGraphSpaceError(FloatBox(), "the rollout's length differs from worker_sample_size",
                                where=f"{where}['rewards']", expected=f"[B, {rollout_length}]",
                                received=f"shape {rewards.shape}")
    if rewards.dtype.kind not in "biuf":
        raise RLGraphSpaceError(FloatBox(), "rewards must be numbers", where=f"{where}['rewards']",
                                received=f"dtype {rewards.dtype}")
    if not _finite_in_float32(rewards):
        raise RLGraphSpaceError(FloatBox(), "rewards must be finite in float32", where=f"{where}['rewards']",
                                received=f"{int(np.sum(~_finite32(rewards)))} non-finite values (after the cast)")
    for key in keys:
        for leaf in _leaves(out[key]):
            expected = (rows,) if key in ("initial_internal_states", "bootstrap_states") else (rows, steps)
            if tuple(leaf.shape[:len(expected)]) != expected:
                raise RLGraphSpaceError(FloatBox(), f"'{key}' does not fit the rollout's {rows} rows of {steps} steps",
                                        where=f"{where}['{key}']", expected=f"leading dims {list(expected)}",
                                        received=f"shape {leaf.shape}")
    for key in keys:
        for leaf in _leaves(out[key]):
            if leaf.dtype.kind == "f" and not _finite_in_float32(leaf):
                raise RLGraphNonFiniteError(f"'{key}' holds NaN or inf (or values beyond float32, which the "
                                            "graph computes in)", where=f"{where}['{key}']",
                                            received=f"{int(np.sum(~_finite32(leaf)))} non-finite values",
                                            hint="nothing was learned from this rollout.")
    out["rewards"] = rewards.astype(np.float32)
    out["terminals"] = out["terminals"].astype(bool)
    return out


def _finite32(array: np.ndarray) -> np.ndarray:
    """Elementwise: finite, and finite after a cast to float32 (a float64 1e39 is not)."""
    if array.dtype.kind != "f" or array.dtype.itemsize <= 4:
        return np.isfinite(array)
    return np.isfinite(array) & (np.abs(array) <= np.finfo(np.float32).max)


def _finite_in_float32(array: np.ndarray) -> bool:
    return bool(np.all(_finite32(array)))


def _leaves(value: Any) -> List[np.ndarray]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, (tuple, list)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]
