"""IMPALA's actions from the policy's outputs: sampled in numpy (acting) or greedy in the backend's graph (export)."""
from __future__ import annotations

from typing import Any, Dict

import numpy as np

from rlgraph.utils.nest import flatten_op, unflatten_op


def _sample_categorical(probs: np.ndarray, rng: np.random.RandomState) -> np.ndarray:
    """One draw per row of [B, A] probabilities (inverse CDF; rows are normalized first)."""
    probs = np.asarray(probs, dtype=np.float64)
    cdf = np.cumsum(probs, axis=-1)
    u = rng.random_sample(probs.shape[:-1] + (1,)) * cdf[..., -1:]
    return np.minimum((u >= cdf).sum(axis=-1), probs.shape[-1] - 1)


def _greedy_from_logits(outputs: Any, dtypes: Dict[str, Any]) -> Any:
    """The most likely action per leaf from an "act" API method's outputs, in the backend's graph."""
    from rlgraph.backend_system import get_backend
    from rlgraph.components.distributions._backend_maths import backend_maths
    maths = backend_maths()
    actions = {}
    for key, logits in flatten_op(outputs[1]).items():
        action = maths.argmax_last(logits)
        if dtypes[key] != np.int32:
            if get_backend() == "tf":
                import tensorflow as tf
                action = tf.cast(action, dtypes[key].name)
            else:
                import torch
                action = action.to(getattr(torch, dtypes[key].name))
        actions[key] = action
    return actions[""] if list(actions) == [""] else unflatten_op(actions)
