"""Numpy references of the distributions' maths (per-leaf densities, joint and mixture distributions).

Shapes: B batch, n categories or experts; `lead_ranks` is the number of leading batch (and time)
axes that results keep.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from rlgraph.utils.numpy.maths import _as_float, log_softmax, softmax

__all__ = ["categorical_log_prob", "categorical_entropy", "normal_log_prob", "normal_entropy", "sum_event",
           "joint_log_prob", "logsumexp", "mixture_log_prob", "mixture_mean", "mixture_entropy_upper_bound"]

HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def categorical_log_prob(logits, actions) -> np.ndarray:
    """log softmax(logits)[actions]: logits [B, ..., n], actions [B, ...] -> [B, ...]."""
    return np.take_along_axis(log_softmax(logits), np.asarray(actions)[..., None].astype(np.int64), axis=-1)[..., 0]


def categorical_entropy(logits) -> np.ndarray:
    """-sum_i p_i log p_i over the last axis ([B, ..., n] -> [B, ...])."""
    log_p = log_softmax(logits)
    p = np.exp(log_p)
    return -np.sum(np.where(p > 0, p * log_p, 0.0), axis=-1)


def normal_log_prob(mean, log_std, x) -> np.ndarray:
    """Element-wise log N(x; mean, exp(log_std)^2)."""
    mean, log_std, x = _as_float(mean), _as_float(log_std), _as_float(x)
    z = (x - mean) * np.exp(-log_std)
    return -0.5 * z * z - log_std - HALF_LOG_2PI


def normal_entropy(log_std) -> np.ndarray:
    """Element-wise entropy 0.5 + 0.5 log(2 pi) + log_std of N(., exp(log_std)^2)."""
    return _as_float(log_std) + 0.5 + HALF_LOG_2PI


def sum_event(x, lead_ranks: int = 1) -> np.ndarray:
    """`x` summed over all axes after the first `lead_ranks` (a value's own dims)."""
    x = _as_float(x)
    return np.sum(x, axis=tuple(range(lead_ranks, x.ndim))) if x.ndim > lead_ranks else x


def joint_log_prob(log_probs: Sequence[np.ndarray], lead_ranks: int = 1) -> np.ndarray:
    """log p of independent components: sum_k of each log-prob summed over its own dims."""
    return sum(sum_event(lp, lead_ranks) for lp in log_probs)


def logsumexp(x, axis: int = -1) -> np.ndarray:
    """log sum exp(x) along `axis`, shifted by the max (no overflow)."""
    x = _as_float(x)
    top = np.max(x, axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.sum(np.exp(x - top), axis=axis))


def mixture_log_prob(logits, expert_log_probs) -> np.ndarray:
    """log sum_k softmax(logits)_k p_k(x): logits [B, n], expert_log_probs [B, n] (log p_k(x)) -> [B]."""
    return logsumexp(log_softmax(logits) + _as_float(expert_log_probs), axis=-1)


def mixture_mean(logits, expert_means: Sequence[np.ndarray]) -> np.ndarray:
    """sum_k softmax(logits)_k mean_k: logits [B, n], each mean [B, ...] -> [B, ...]."""
    w = softmax(logits)
    return sum(w[:, k].reshape((-1,) + (1,) * (np.ndim(m) - 1)) * _as_float(m) for k, m in enumerate(expert_means))


def mixture_entropy_upper_bound(logits, expert_entropies) -> np.ndarray:
    """H(w) + sum_k w_k H(p_k) (>= the mixture's entropy): logits [B, n], expert_entropies [B, n] -> [B]."""
    return categorical_entropy(logits) + np.sum(softmax(logits) * _as_float(expert_entropies), axis=-1)
