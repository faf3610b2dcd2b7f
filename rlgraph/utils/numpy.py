"""Plain-numpy reference maths. Component tests compare TF and PyTorch results against these.

Only numpy is imported. Shapes use B for batch, T for time, plus the names in each docstring.
"""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

SELU_ALPHA = 1.6732632423543772
SELU_SCALE = 1.0507009873554805


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """exp(x) / sum(exp(x)) along `axis`, shifted by the max for numerical stability."""
    shifted = np.asarray(x) - np.max(x, axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / np.sum(e, axis=axis, keepdims=True)


def log_softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """log(softmax(x)) computed as x - logsumexp(x), stable for large logits."""
    shifted = np.asarray(x) - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def one_hot(x: np.ndarray, depth: int, on_value: float = 1.0, off_value: float = 0.0,
            dtype=np.float32) -> np.ndarray:
    """One-hot encoding: int array of shape S -> array of shape S + [depth]."""
    x = np.asarray(x, dtype=np.int64)
    out = np.full(x.shape + (depth,), off_value, dtype=dtype)
    np.put_along_axis(out, x[..., None], np.asarray(on_value, dtype=dtype), axis=-1)
    return out


def relu(x: np.ndarray, alpha: float = 0.0) -> np.ndarray:
    """max(x, 0); with `alpha` > 0 the leaky variant alpha * x for x < 0."""
    x = np.asarray(x)
    return np.where(x > 0, x, alpha * x).astype(x.dtype, copy=False)


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + exp(-x)), evaluated without overflow for large |x|."""
    x = np.asarray(x)
    positive = x >= 0
    z = np.exp(np.where(positive, -x, x))
    return np.where(positive, 1.0 / (1.0 + z), z / (1.0 + z)).astype(x.dtype if x.dtype.kind == "f" else np.float64)


def elu(x: np.ndarray, alpha: float = 1.0) -> np.ndarray:
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    x = np.asarray(x)
    return np.where(x > 0, x, alpha * np.expm1(np.minimum(x, 0)))


def selu(x: np.ndarray) -> np.ndarray:
    """Scaled ELU with the self-normalising constants (Klambauer et al. 2017, arXiv 1706.02515)."""
    return SELU_SCALE * elu(x, SELU_ALPHA)


def softplus(x: np.ndarray) -> np.ndarray:
    """log(1 + exp(x)), stable for large |x|."""
    x = np.asarray(x)
    return np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x)))


def linear(x: np.ndarray) -> np.ndarray:
    """The identity activation."""
    return np.asarray(x)


def dense_layer(x: np.ndarray, weights: np.ndarray, biases: Optional[np.ndarray] = None) -> np.ndarray:
    """x @ weights + biases.

    Args:
        x: [B, in].
        weights: [in, out] (TF layout; PyTorch's Linear stores the transpose).
        biases: [out] or None.

    Returns:
        [B, out].
    """
    out = np.matmul(x, weights)
    return out if biases is None else out + biases


def huber_loss(x: np.ndarray, delta: float = 1.0) -> np.ndarray:
    """0.5 x^2 for |x| <= delta, else delta (|x| - 0.5 delta), elementwise."""
    abs_x = np.abs(x)
    return np.where(abs_x <= delta, 0.5 * np.square(x), delta * (abs_x - 0.5 * delta))


def lstm_cell(x: np.ndarray, h: np.ndarray, c: np.ndarray, weights: np.ndarray, biases: np.ndarray,
              forget_bias: float = 1.0) -> Tuple[np.ndarray, np.ndarray]:
    """One LSTM step (Hochreiter & Schmidhuber 1997) in TF's LSTMCell layout.

    Args:
        x: [B, in] inputs.
        h: [B, units] previous output.
        c: [B, units] previous cell state.
        weights: [in + units, 4 * units]: rows for [x, h]; column blocks for the gates
            (i, j, f, o): input gate, candidate cell input, forget gate, output gate.
        biases: [4 * units], same block order.
        forget_bias: Added to the forget gate's pre-activation.

    Returns:
        (h_new, c_new), each [B, units]: c_new = f * c + i * j, h_new = o * tanh(c_new).
    """
    z = np.matmul(np.concatenate([x, h], axis=-1), weights) + biases
    i, j, f, o = np.split(z, 4, axis=-1)
    c_new = sigmoid(f + forget_bias) * c + sigmoid(i) * np.tanh(j)
    h_new = sigmoid(o) * np.tanh(c_new)
    return h_new, c_new


def lstm_layer(inputs: np.ndarray, weights: np.ndarray, biases: np.ndarray,
               initial_internal_states: Optional[Tuple[np.ndarray, np.ndarray]] = None, time_major: bool = False,
               forget_bias: float = 1.0, sequence_length: Optional[np.ndarray] = None):
    """Runs `lstm_cell` over a sequence.

    Args:
        inputs: [B, T, in] (or [T, B, in] if `time_major`).
        weights: See `lstm_cell`.
        biases: See `lstm_cell`.
        initial_internal_states: (h0, c0), each [B, units]; zeros if None.
        time_major: Whether `inputs` and outputs are [T, B, ...].
        forget_bias: See `lstm_cell`.
        sequence_length: [B] valid steps per row; past it a row's outputs are zero and its
            state is carried unchanged.

    Returns:
        (outputs [B, T, units] (or [T, B, units]), (h_last, c_last)).
    """
    seq = np.asarray(inputs) if time_major else np.swapaxes(inputs, 0, 1)
    num_steps, batch = seq.shape[:2]
    units = weights.shape[1] // 4
    if initial_internal_states is None:
        h = np.zeros((batch, units), dtype=seq.dtype)
        c = np.zeros((batch, units), dtype=seq.dtype)
    else:
        h, c = (np.asarray(s) for s in initial_internal_states)
    lengths = np.full(batch, num_steps) if sequence_length is None else np.asarray(sequence_length)
    outputs = []
    for t in range(num_steps):
        h_new, c_new = lstm_cell(seq[t], h, c, weights, biases, forget_bias)
        valid = (t < lengths)[:, None]
        h, c = np.where(valid, h_new, h), np.where(valid, c_new, c)
        outputs.append(np.where(valid, h_new, 0.0))
    outputs = np.stack(outputs, axis=0)
    return (outputs if time_major else np.swapaxes(outputs, 0, 1)), (h, c)
