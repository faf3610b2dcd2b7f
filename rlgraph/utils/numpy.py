"""Plain-numpy reference maths. Component tests compare TF and PyTorch results against these.

Only numpy (and rlgraph's error classes) is imported. Shapes use B for batch, T for time, plus the names in each docstring.
Floating inputs keep their dtype (float32 stays float32); the activations, losses and returns
compute integer and bool inputs in float64.

>>> from rlgraph.utils import numpy as rnp
>>> rnp.softmax(np.array([1.0, 2.0, 3.0])).round(4)
array([0.09  , 0.2447, 0.6652])
"""
from __future__ import annotations

from typing import Optional, Sequence, Tuple, Union

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphError

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


# --- Losses -------------------------------------------------------------------------------------------------------

def huber_loss(x: np.ndarray, delta: float = 1.0) -> np.ndarray:
    """Elementwise 0.5 x^2 for |x| <= delta, else delta * (|x| - 0.5 delta) (Huber 1964).

    Args:
        x: Errors (e.g. TD errors), any shape.
        delta: Where the loss turns from quadratic to linear.

    Returns:
        Same shape as `x`.
    """
    x = _as_float(x)
    abs_x = np.abs(x)
    return np.where(abs_x <= delta, 0.5 * np.square(x), delta * (abs_x - 0.5 * delta)).astype(x.dtype, copy=False)


def mse(predictions: np.ndarray, targets: np.ndarray, axis: Optional[int] = None) -> np.ndarray:
    """Mean squared error, mean((predictions - targets)^2).

    Args:
        predictions: Any shape.
        targets: Broadcastable to `predictions`.
        axis: Axis to average over; None averages everything into a scalar
            (`tf.keras.losses.mean_squared_error` averages over axis -1).

    Returns:
        The mean, with `axis` reduced.
    """
    return np.mean(np.square(_as_float(predictions) - _as_float(targets)), axis=axis)


# --- Returns and advantages ---------------------------------------------------------------------------------------

def discounted_returns(rewards: np.ndarray, terminals: np.ndarray, discount: float,
                       bootstrap_value: Union[float, np.ndarray] = 0.0) -> np.ndarray:
    """Discounted returns G_t = r_t + discount * (1 - d_t) * G_{t+1}, with G_T = bootstrap_value.

    A terminal d_t = 1 ends the episode after step t, so G_t = r_t and nothing later leaks into it.

    Args:
        rewards: [B, T] (any leading dims; time is the last axis).
        terminals: [B, T] bools (or 0/1).
        discount: gamma.
        bootstrap_value: [B] or scalar: the value of the state after the last step.

    Returns:
        [B, T] returns.

    >>> discounted_returns(np.array([1.0, 2.0, 3.0]), np.array([0, 1, 0]), 0.9, bootstrap_value=10.0)
    array([ 2.8,  2. , 12. ])
    """
    r_t = _as_float(rewards)
    not_done = 1.0 - np.asarray(terminals, dtype=r_t.dtype)
    returns = np.empty_like(r_t)
    g = np.broadcast_to(np.asarray(bootstrap_value, dtype=r_t.dtype), r_t.shape[:-1])
    for t in reversed(range(r_t.shape[-1])):
        g = r_t[..., t] + discount * not_done[..., t] * g
        returns[..., t] = g
    return returns


def gae(rewards: np.ndarray, values: np.ndarray, bootstrap_value: Union[float, np.ndarray], terminals: np.ndarray,
        discount: float, gae_lambda: float) -> np.ndarray:
    """Generalized advantage estimation (Schulman et al. 2015, https://arxiv.org/abs/1506.02438).

    delta_t = r_t + discount * (1 - d_t) * v_{t+1} - v_t with v_T = bootstrap_value, and
    A_t = delta_t + discount * gae_lambda * (1 - d_t) * A_{t+1}. gae_lambda = 0 gives the one-step TD
    error, gae_lambda = 1 gives discounted_returns - values.

    Args:
        rewards: [B, T] (time is the last axis).
        values: [B, T] value estimates v_t of the states the rewards were collected in.
        bootstrap_value: [B] or scalar: v_T, the value of the state after the last step.
        terminals: [B, T] bools (or 0/1); d_t = 1 cuts both the bootstrap and the advantage trace.
        discount: gamma.
        gae_lambda: lambda.

    Returns:
        [B, T] advantages.
    """
    dtype = _float_dtype(rewards, values)
    r_t, v_t = np.asarray(rewards, dtype=dtype), np.asarray(values, dtype=dtype)
    not_done = 1.0 - np.asarray(terminals, dtype=dtype)
    v_tp1 = np.concatenate([v_t[..., 1:], np.broadcast_to(np.asarray(bootstrap_value, dtype=dtype),
                                                         v_t.shape[:-1])[..., None]], axis=-1)
    delta_t = r_t + discount * not_done * v_tp1 - v_t
    advantages = np.empty_like(delta_t)
    a = np.zeros(delta_t.shape[:-1], dtype=dtype)
    for t in reversed(range(delta_t.shape[-1])):
        a = delta_t[..., t] + discount * gae_lambda * not_done[..., t] * a
        advantages[..., t] = a
    return advantages


def vtrace(log_rhos: np.ndarray, discounts: np.ndarray, rewards: np.ndarray, values: np.ndarray,
           bootstrap_value: np.ndarray, clip_rho_threshold: Optional[float] = 1.0,
           clip_pg_rho_threshold: Optional[float] = 1.0,
           clip_c_threshold: Optional[float] = 1.0) -> Tuple[np.ndarray, np.ndarray]:
    """V-trace targets and policy-gradient advantages (Espeholt et al. 2018, https://arxiv.org/abs/1802.01561).

    With rho_t = min(clip_rho_threshold, pi/mu), c_t = min(clip_c_threshold, pi/mu) (the paper's c-bar; lambda = 1)
    and V_T = bootstrap_value, the backward (recursive) form of the paper's eq. (1):

        delta_t = rho_t * (r_t + gamma_t * V_{t+1} - V_t)
        v_t - V_t = delta_t + gamma_t * c_t * (v_{t+1} - V_{t+1}),   v_T = V_T
        pg_advantage_t = min(clip_pg_rho_threshold, pi/mu) * (r_t + gamma_t * v_{t+1} - V_t)

    Args:
        log_rhos: [T, B] log importance ratios log(pi(a_t|x_t) / mu(a_t|x_t)).
        discounts: [T, B] gamma_t, already zero where the episode ended at step t.
        rewards: [T, B] r_t.
        values: [T, B] V_t = V(x_t) from the learner's value function.
        bootstrap_value: [B] V(x_T).
        clip_rho_threshold: rho-bar; None disables clipping of rho_t.
        clip_pg_rho_threshold: Clip of the ratio in the advantages; None disables it.
        clip_c_threshold: c-bar, the clip of the trace coefficients c_t; default 1 as in the paper's
            experiments; None disables it.

    Returns:
        (vs, pg_advantages), each [T, B]; vs are the value targets v_t.
    """
    dtype = _float_dtype(log_rhos, rewards, values)
    rhos = np.exp(np.asarray(log_rhos, dtype=dtype))
    gamma_t = np.asarray(discounts, dtype=dtype)
    r_t, v_t = np.asarray(rewards, dtype=dtype), np.asarray(values, dtype=dtype)
    v_T = np.asarray(bootstrap_value, dtype=dtype)
    rho_t = rhos if clip_rho_threshold is None else np.minimum(clip_rho_threshold, rhos)
    c_t = rhos if clip_c_threshold is None else np.minimum(clip_c_threshold, rhos)
    v_tp1 = np.concatenate([v_t[1:], v_T[None]], axis=0)
    delta_t = rho_t * (r_t + gamma_t * v_tp1 - v_t)

    vs_minus_v = np.empty_like(v_t)
    acc = np.zeros_like(v_T)
    for t in reversed(range(v_t.shape[0])):
        acc = delta_t[t] + gamma_t[t] * c_t[t] * acc
        vs_minus_v[t] = acc
    vs = v_t + vs_minus_v

    vs_tp1 = np.concatenate([vs[1:], v_T[None]], axis=0)
    pg_rho_t = rhos if clip_pg_rho_threshold is None else np.minimum(clip_pg_rho_threshold, rhos)
    return vs, pg_rho_t * (r_t + gamma_t * vs_tp1 - v_t)


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
        inputs, weights, biases, initial_internal_states, time_major, forget_bias, sequence_length:
            As in `lstm_layer` (initial states are (h0, c0)).
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


# --- Image preprocessing --------------------------------------------------------------------------------------------

def grayscale(images: np.ndarray, weights: Sequence[float] = (0.299, 0.587, 0.114),
              keep_rank: bool = False) -> np.ndarray:
    """Weighted sum over the last (color) axis of [..., C] images, in float64: [...] (or [..., 1])."""
    out = np.sum(np.asarray(images, dtype=np.float64) * np.asarray(weights, dtype=np.float64), axis=-1)
    return out[..., None] if keep_rank else out


def _source_index_nearest(n_in: int, n_out: int) -> np.ndarray:
    # float32 like TF's kernel: floor((o + 0.5) * scale) lands on integers exactly as TF's does.
    scale = np.float32(n_in / n_out)
    src = np.floor((np.arange(n_out) + 0.5).astype(np.float32) * scale).astype(np.int64)
    return np.minimum(src, n_in - 1)


def _resize_axis(x: np.ndarray, axis: int, n_out: int, method: str) -> np.ndarray:
    n_in = x.shape[axis]
    x = np.moveaxis(x, axis, 0)
    if method == "nearest":
        out = x[_source_index_nearest(n_in, n_out)]
    elif method == "bilinear":
        src = np.maximum((np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        i1 = np.minimum(i0 + 1, n_in - 1)
        frac = (src - i0).reshape((-1,) + (1,) * (x.ndim - 1))
        out = x[i0] * (1.0 - frac) + x[i1] * frac
    elif method == "area":
        scale = n_in / n_out
        out = np.zeros((n_out,) + x.shape[1:])
        for o in range(n_out):
            start, end = o * scale, (o + 1) * scale
            for i in range(int(np.floor(start)), min(int(np.ceil(end)), n_in)):
                out[o] += x[i] * (min(end, i + 1) - max(start, i)) / scale
    else:
        raise RLGraphError(f"unknown interpolation {method!r}", where="numpy.resize_images",
                           expected="'bilinear', 'nearest' or 'area'")
    return np.moveaxis(out, 0, axis)


def resize_images(images: np.ndarray, height: int, width: int, method: str = "bilinear",
                  has_channels: bool = True) -> np.ndarray:
    """Resizes [..., H, W, C] (or [..., H, W] without `has_channels`) images, in float64.

    Half-pixel centers and no antialiasing, as `tf.image.resize(..., antialias=False)`:
    "bilinear" interpolates the two nearest source pixels per axis; "nearest" takes source
    pixel floor((o + 0.5) * in / out); "area" averages the source pixels weighted by how much
    of each the output pixel's footprint covers.
    """
    x = np.asarray(images, dtype=np.float64)
    h_axis = x.ndim - 3 if has_channels else x.ndim - 2
    x = _resize_axis(x, h_axis, height, method)
    return _resize_axis(x, h_axis + 1, width, method)


def min_max_normalize(x: np.ndarray, sample_rank: int, epsilon: float = 1e-8) -> np.ndarray:
    """(x - min) / max(max - min, epsilon) over the last `sample_rank` axes of each sample."""
    x = _as_float(x)
    axes = tuple(range(x.ndim - sample_rank, x.ndim))
    low, high = np.min(x, axis=axes, keepdims=True), np.max(x, axis=axes, keepdims=True)
    return (x - low) / np.maximum(high - low, epsilon)
