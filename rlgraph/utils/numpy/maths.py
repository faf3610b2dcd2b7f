"""Shared helpers, activations and normalisers of the numpy reference."""
from __future__ import annotations

from typing import Sequence, Union

import numpy as np


# Self-normalising constants (Klambauer et al. 2017, https://arxiv.org/abs/1706.02515).
SELU_ALPHA = 1.6732632423543772
SELU_SCALE = 1.0507009873554805

IntPair = Union[int, Sequence[int]]


def _as_float(x) -> np.ndarray:
    """`x` as an array, keeping a floating dtype and promoting int/bool to float64."""
    x = np.asarray(x)
    return x if x.dtype.kind == "f" else x.astype(np.float64)


def _float_dtype(*arrays) -> np.dtype:
    """The common floating dtype of `arrays` (float64 when none of them is floating)."""
    dtype = np.result_type(*(np.asarray(a) for a in arrays))
    return dtype if dtype.kind == "f" else np.dtype(np.float64)


# --- Activations and normalisers ----------------------------------------------------------------------------------


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """exp(x) / sum(exp(x)) along `axis`, shifted by the max so large logits do not overflow."""
    x = _as_float(x)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """log(softmax(x)) computed as x - logsumexp(x), finite even where softmax underflows to 0."""
    x = _as_float(x)
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def one_hot(x: np.ndarray, depth: int, on_value: float = 1.0, off_value: float = 0.0,
            dtype=np.float32) -> np.ndarray:
    """One-hot encoding of integer indices.

    Args:
        x: Integer indices, any shape S.
        depth: Number of classes.
        on_value: Value at each index.
        off_value: Value everywhere else.
        dtype: Output dtype.

    Returns:
        Shape S + [depth]. As in `tf.one_hot`, an index outside [0, depth) gives a row of `off_value`.

    >>> one_hot(np.array([2, 0]), depth=3)
    array([[0., 0., 1.],
           [1., 0., 0.]], dtype=float32)
    """
    hits = np.asarray(x)[..., None] == np.arange(depth)
    return np.where(hits, on_value, off_value).astype(dtype)


def relu(x: np.ndarray, alpha: float = 0.0) -> np.ndarray:
    """max(x, 0); with `alpha` > 0 the leaky variant, alpha * x for x < 0."""
    x = _as_float(x)
    return np.where(x > 0, x, alpha * x).astype(x.dtype, copy=False)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)), using exp(-|x|) so that no branch overflows for large |x|."""
    x = _as_float(x)
    z = np.exp(-np.abs(x))
    return np.where(x >= 0, 1.0 / (1.0 + z), z / (1.0 + z)).astype(x.dtype, copy=False)


def tanh(x: np.ndarray) -> np.ndarray:
    """Hyperbolic tangent (here so activations can be looked up by name in this module)."""
    return np.tanh(_as_float(x))


def elu(x: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """x for x > 0, alpha * (exp(x) - 1) otherwise (Clevert et al. 2015, https://arxiv.org/abs/1511.07289)."""
    x = _as_float(x)
    # The minimum keeps expm1 from overflowing on the branch np.where discards.
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0))).astype(x.dtype, copy=False)


def selu(x: np.ndarray) -> np.ndarray:
    """SELU_SCALE * elu(x, SELU_ALPHA) (Klambauer et al. 2017, https://arxiv.org/abs/1706.02515)."""
    return SELU_SCALE * elu(x, SELU_ALPHA)


def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + exp(x)), written as max(x, 0) + log1p(exp(-|x|)) to stay finite for large |x|."""
    x = _as_float(x)
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def linear(x: np.ndarray) -> np.ndarray:
    """The identity activation."""
    return np.asarray(x)
