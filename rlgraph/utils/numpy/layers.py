"""Numpy reference of the layers: dense, LSTM (with peepholes and cell clipping), conv2d, max-pool, LRN."""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from rlgraph.utils.numpy.maths import IntPair, _as_float, sigmoid
from rlgraph.utils.rlgraph_errors import RLGraphError


# --- Layers -------------------------------------------------------------------------------------------------------


def dense_layer(x: np.ndarray, weights: np.ndarray, biases: Optional[np.ndarray] = None) -> np.ndarray:
    """x @ weights + biases.

    Args:
        x: [B, in].
        weights: [in, out] (TF layout; PyTorch's `nn.Linear.weight` is the transpose, [out, in]).
        biases: [out], or None for no bias.

    Returns:
        [B, out].
    """
    out = np.matmul(x, weights)
    return out if biases is None else out + biases


def lstm_cell(x: np.ndarray, h: np.ndarray, c: np.ndarray, weights: np.ndarray, biases: np.ndarray,
              forget_bias: float = 1.0) -> Tuple[np.ndarray, np.ndarray]:
    """One LSTM step (Hochreiter & Schmidhuber 1997) in TF's `LSTMCell` layout.

    With z = [x, h] @ weights + biases split into four [B, units] blocks (i, j, f, o):
    c_new = sigmoid(f + forget_bias) * c + sigmoid(i) * tanh(j), h_new = sigmoid(o) * tanh(c_new).
    The forget-gate bias of 1 follows Jozefowicz et al. 2015 (https://proceedings.mlr.press/v37/jozefowicz15.html).

    Args:
        x: [B, in] inputs.
        h: [B, units] previous output.
        c: [B, units] previous cell state.
        weights: [in + units, 4 * units]. Rows 0..in-1 multiply x, the rest multiply h. Column blocks of
            `units` each: input gate i, candidate cell input j, forget gate f, output gate o. PyTorch's
            `nn.LSTM` orders its blocks (i, f, g, o) with g = j, stores `weight_ih` [4 * units, in] and
            `weight_hh` [4 * units, units] transposed, and has two biases and no forget_bias.
        biases: [4 * units], same block order.
        forget_bias: Added to the forget gate's pre-activation.

    Returns:
        (h_new, c_new), each [B, units].
    """
    z = np.matmul(np.concatenate([x, h], axis=-1), weights) + biases
    i, j, f, o = np.split(z, 4, axis=-1)
    c_new = sigmoid(f + forget_bias) * c + sigmoid(i) * np.tanh(j)
    h_new = sigmoid(o) * np.tanh(c_new)
    return h_new, c_new


def lstm_layer(inputs: np.ndarray, weights: np.ndarray, biases: np.ndarray,
               initial_internal_states: Optional[Tuple[np.ndarray, np.ndarray]] = None, time_major: bool = False,
               forget_bias: float = 1.0, sequence_length: Optional[np.ndarray] = None
               ) -> Tuple[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
    """Runs `lstm_cell` over a sequence.

    Args:
        inputs: [B, T, in], or [T, B, in] if `time_major`.
        weights: [in + units, 4 * units]; see `lstm_cell`.
        biases: [4 * units]; see `lstm_cell`.
        initial_internal_states: (h0, c0), each [B, units]; zeros if None.
        time_major: Whether `inputs` and the outputs are [T, B, ...].
        forget_bias: See `lstm_cell`.
        sequence_length: [B] number of valid steps per row. At steps t >= sequence_length[b], row b
            outputs zeros and carries its state unchanged, so the last states are those after the
            row's last valid step (h0, c0 for a length of 0). None means all T steps are valid.

    Returns:
        (outputs, (h_last, c_last)): outputs [B, T, units] (or [T, B, units]), h_last and c_last [B, units].
    """
    return peephole_lstm_layer(inputs, weights, biases, peepholes=None, cell_clip=None,
                               initial_internal_states=initial_internal_states, time_major=time_major,
                               forget_bias=forget_bias, sequence_length=sequence_length)


def _pair(value: IntPair) -> Tuple[int, int]:
    return (int(value), int(value)) if np.ndim(value) == 0 else tuple(int(v) for v in value)


def _window_geometry(size: int, window: int, stride: int, padding: str, op: str) -> Tuple[int, int, int]:
    """(out_size, pad_before, pad_after) of one spatial axis, with TF's "valid"/"same" rules."""
    padding = padding.lower()
    if padding == "valid":
        if window > size:
            raise RLGraphError("with padding='valid' the window must fit the input", where=op,
                               expected=f"a window of at most {size}", received=window,
                               hint="use padding='same' or a smaller window.")
        return (size - window) // stride + 1, 0, 0
    if padding == "same":
        out_size = -(-size // stride)
        pad_total = max((out_size - 1) * stride + window - size, 0)
        # TF puts the odd padding element at the end (bottom/right).
        return out_size, pad_total // 2, pad_total - pad_total // 2
    raise RLGraphError("unknown padding", where=op, expected="'valid' or 'same'", received=repr(padding))


def _windows(x: np.ndarray, window: Tuple[int, int], strides: Tuple[int, int], padding: str, pad_value, op: str):
    """Yields (di, dj, x_slice [B, out_h, out_w, C]) for each offset of the window in NHWC `x`."""
    out_h, top, bottom = _window_geometry(x.shape[1], window[0], strides[0], padding, op)
    out_w, left, right = _window_geometry(x.shape[2], window[1], strides[1], padding, op)
    x = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=pad_value)
    for di in range(window[0]):
        for dj in range(window[1]):
            yield di, dj, x[:, di:di + strides[0] * (out_h - 1) + 1:strides[0],
                            dj:dj + strides[1] * (out_w - 1) + 1:strides[1], :]


def conv2d(x: np.ndarray, kernel: np.ndarray, strides: IntPair = (1, 1), padding: str = "valid") -> np.ndarray:
    """2-D cross-correlation in NHWC, as `tf.nn.conv2d` computes it (the kernel is not flipped).

    Args:
        x: [B, H, W, in].
        kernel: [kh, kw, in, out] (TF layout; PyTorch's `nn.Conv2d.weight` is [out, in, kh, kw]).
        strides: (sh, sw), or one int for both.
        padding: "valid" (no padding) or "same": output size ceil(H / sh) x ceil(W / sw), zero padding
            split evenly with the odd element at the bottom/right, as in TF.

    Returns:
        [B, out_h, out_w, out].

    Raises:
        RLGraphError: If `padding` is neither "valid" nor "same", or a "valid" kernel is larger than the input.
    """
    x = _as_float(x)
    kernel = np.asarray(kernel)
    out = None
    for di, dj, patch in _windows(x, kernel.shape[:2], _pair(strides), padding, 0, "conv2d"):
        term = np.matmul(patch, kernel[di, dj])
        out = term if out is None else out + term
    return out


def max_pool2d(x: np.ndarray, pool_size: IntPair, strides: Optional[IntPair] = None,
               padding: str = "valid") -> np.ndarray:
    """2-D max pooling in NHWC, as `tf.nn.max_pool2d`.

    Args:
        x: [B, H, W, C].
        pool_size: (ph, pw), or one int for both.
        strides: (sh, sw) or one int; `pool_size` if None.
        padding: "valid" or "same" (TF geometry as in `conv2d`; padded cells never win the max).

    Returns:
        [B, out_h, out_w, C].

    Raises:
        RLGraphError: As `conv2d`.
    """
    x = np.asarray(x)
    lowest = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    pool_size = _pair(pool_size)
    strides = pool_size if strides is None else _pair(strides)
    out = None
    for _, _, patch in _windows(x, pool_size, strides, padding, lowest, "max_pool2d"):
        out = patch if out is None else np.maximum(out, patch)
    return out


# --- Recurrent layers: LSTM options (peepholes, cell clipping) ------------------------------------------------------


def peephole_lstm_layer(inputs: np.ndarray, weights: np.ndarray, biases: np.ndarray,
                        peepholes: Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]] = None,
                        cell_clip: Optional[float] = None,
                        initial_internal_states: Optional[Tuple[np.ndarray, np.ndarray]] = None,
                        time_major: bool = False, forget_bias: float = 1.0,
                        sequence_length: Optional[np.ndarray] = None
                        ) -> Tuple[np.ndarray, Tuple[np.ndarray, np.ndarray]]:
    """`lstm_layer` with the two options of TF's `LSTMCell`: peephole connections and cell clipping.

    Peepholes (Gers & Schmidhuber 2000, https://doi.org/10.1109/IJCNN.2000.861302) add diagonal
    weights from the cell state to the gates: i and f see c_{t-1}, o sees the new cell state:
    c_new = sigmoid(f + forget_bias + w_f * c) * c + sigmoid(i + w_i * c) * tanh(j), then
    c_new = clip(c_new, -cell_clip, cell_clip), h_new = sigmoid(o + w_o * c_new) * tanh(c_new).
    With `peepholes=None` and `cell_clip=None` this equals `lstm_layer`.

    Args:
        inputs: As in `lstm_layer`.
        weights: As in `lstm_layer`.
        biases: As in `lstm_layer`.
        initial_internal_states: As in `lstm_layer`: (h0, c0).
        time_major: As in `lstm_layer`.
        forget_bias: As in `lstm_layer`.
        sequence_length: As in `lstm_layer`.
        peepholes: (w_i, w_f, w_o), each [units]; None: no peepholes.
        cell_clip: Clip value of the cell state; None: no clipping.

    Returns:
        (outputs, (h_last, c_last)) as `lstm_layer` returns them.
    """
    seq = _as_float(inputs)
    seq = seq if time_major else np.swapaxes(seq, 0, 1)
    num_steps, batch = seq.shape[:2]
    units = np.shape(weights)[1] // 4
    if initial_internal_states is None:
        h = c = np.zeros((batch, units), dtype=seq.dtype)
    else:
        h, c = (np.asarray(s) for s in initial_internal_states)
    w_i, w_f, w_o = (0.0, 0.0, 0.0) if peepholes is None else (np.asarray(p) for p in peepholes)
    lengths = np.full(batch, num_steps) if sequence_length is None else np.asarray(sequence_length)
    outputs = []
    for t in range(num_steps):
        z = np.matmul(np.concatenate([seq[t], h], axis=-1), weights) + biases
        i, j, f, o = np.split(z, 4, axis=-1)
        c_new = sigmoid(f + forget_bias + w_f * c) * c + sigmoid(i + w_i * c) * np.tanh(j)
        if cell_clip is not None:
            c_new = np.clip(c_new, -cell_clip, cell_clip)
        h_new = sigmoid(o + w_o * c_new) * np.tanh(c_new)
        valid = (t < lengths)[:, None]
        h, c = np.where(valid, h_new, h), np.where(valid, c_new, c)
        outputs.append(np.where(valid, h_new, np.zeros_like(h_new)))
    outputs = np.stack(outputs, axis=0)
    return (outputs if time_major else np.swapaxes(outputs, 0, 1)), (h, c)


def local_response_normalization(x: np.ndarray, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0,
                                 beta: float = 0.5) -> np.ndarray:
    """Local response normalization over the last axis, as `tf.nn.local_response_normalization`
    defines it (Krizhevsky et al. 2012, section 3.3,
    https://papers.nips.cc/paper/4824-imagenet-classification-with-deep-convolutional-neural-networks):

        sqr_sum[..., d] = sum_{j = max(0, d - depth_radius)}^{min(C - 1, d + depth_radius)} x[..., j]**2
        out[..., d] = x[..., d] / (bias + alpha * sqr_sum[..., d]) ** beta

    (PyTorch's `local_response_norm` divides alpha by the window size and centres even windows
    differently; this is TF's formula.)

    Args:
        x: [..., C].
        depth_radius: Half-width of the window over C.

    Returns:
        [..., C], x's float dtype (int/bool inputs: float64).
    """
    x = _as_float(x)
    squares = np.square(x)
    padded = np.pad(squares, [(0, 0)] * (x.ndim - 1) + [(depth_radius, depth_radius)])
    channels = x.shape[-1]
    sqr_sum = sum(padded[..., j:j + channels] for j in range(2 * depth_radius + 1))
    return (x / (bias + alpha * sqr_sum) ** beta).astype(x.dtype)
