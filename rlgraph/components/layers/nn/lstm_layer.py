"""`LSTMLayer`: a long short-term memory layer run over the time rank of its input."""
from __future__ import annotations

from typing import Any, Optional, Union

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.nn.nn_layer import NNLayer
from rlgraph.spaces import BoolBox, FloatBox, IntBox, Space
from rlgraph.spaces import Tuple as TupleSpace
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.initializers import check_initializer_spec
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

PEEPHOLE_NAMES = ("w_i_diag", "w_f_diag", "w_o_diag")


class LSTMLayer(NNLayer):
    """An LSTM (Hochreiter & Schmidhuber 1997) over a sequence, in the layout of TF's `LSTMCell`.

    Each step computes z = [x_t, h] @ kernel + bias, split into four [B, units] blocks (i, j, f, o):
    c = sigmoid(f + forget_bias) * c + sigmoid(i) * tanh(j), h = sigmoid(o) * tanh(c). The numpy
    reference is `rlgraph.utils.numpy.lstm_layer` (`peephole_lstm_layer` with the options).

    Variables (this layout on both backends): "<scope>/kernel" [in + units, 4 * units] (rows 0..in-1
    multiply x_t, the rest multiply h) and "<scope>/bias" [4 * units]; with peepholes also
    "<scope>/w_i_diag", "w_f_diag", "w_o_diag", each [units].

    The internal states are the tuple (c, h) (TF's `LSTMStateTuple` order), both [B, units]. Note
    that the numpy reference takes and returns them as (h, c).

    API:
        apply(inputs, initial_c_and_h_states=None, sequence_length=None) -> dict:
            inputs: [B, T, in] ([T, B, in] if `time_major`); a FloatBox with batch and time rank.
            initial_c_and_h_states: (c0, h0), each [B, units]; zeros if None.
            sequence_length: [B] valid steps per row. After its length a row outputs zeros and
                keeps its state, so "last_internal_states" are the states after the last valid step.
            resets: [B, T] bool ([T, B] if `time_major`): where True, the states before step t are
                set to zeros (a new episode starts at t), as if the row began there. Used to unroll
                a rollout that crosses episode ends (IMPALA's learner).
            Returns {"output": [B, T, units] (or [T, B, units]), "last_internal_states": (c, h)}.

    Args:
        units: The size of the cell state and output.
        use_peepholes: Add diagonal peephole weights from the cell state to the gates (Gers &
            Schmidhuber 2000, https://doi.org/10.1109/IJCNN.2000.861302); they start at 0.
        cell_clip: If given, the cell state is clipped to [-cell_clip, cell_clip] after each step.
        static_loop: TF only: unroll the loop in python instead of a `tf.while_loop`. True needs
            an input space with a fixed time size; an int gives the number of steps. PyTorch always
            runs a python loop.
        forget_bias: Added to the forget gate's pre-activation (1.0 after Jozefowicz et al. 2015,
            https://proceedings.mlr.press/v37/jozefowicz15.html).
        parallel_iterations: TF `tf.while_loop` setting.
        swap_memory: TF `tf.while_loop` setting (swap loop tensors to host memory).
        time_major: Whether inputs and outputs are [T, B, ...]; must match the input space.
        weights_spec: Initializer of the kernel; default "glorot_uniform".
        biases_spec: Initializer of the bias; default 0.
        scope: Default "lstm".

    Raises:
        RLGraphSpecError: For invalid constructor arguments (an `activation` other than "linear" or
            "tanh", which change nothing, included: the LSTM has its own gate activations).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> layer = LSTMLayer(units=2, weights_spec=0.1)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(3,), add_batch_rank=True,
    ...                      add_time_rank=True)), backend="pytorch")
    >>> out = test.test(("apply", np.ones((1, 4, 3), dtype=np.float32)))
    >>> out["output"].shape, [s.shape for s in out["last_internal_states"]]
    ((1, 4, 2), [(1, 2), (1, 2)])
    """

    is_recurrent = True  # NeuralNetwork passes internal states and sequence lengths to it.

    def __init__(self, units: int, use_peepholes: bool = False, cell_clip: Optional[float] = None,
                 static_loop: Union[bool, int] = False, forget_bias: float = 1.0, parallel_iterations: int = 32,
                 swap_memory: bool = False, time_major: bool = False, weights_spec: Any = None,
                 biases_spec: Any = None, scope: str = "lstm", **kwargs):
        super().__init__(scope=scope, **kwargs)
        name = type(self).__name__
        # "tanh" (the output's own squashing) and "linear" change nothing: the original RLgraph's
        # configs give them, and its LSTM layer ignored the key.
        if self.activation in ("linear", "tanh"):
            self.activation = None
        if self.activation is not None:
            raise RLGraphSpecError("an LSTM layer takes no activation (its gates use sigmoid and tanh)",
                                   where=f"{name}(activation)", received=repr(self.activation),
                                   hint="add an activation layer after the LSTM instead.")
        if not _is_positive_int(units):
            raise RLGraphSpecError("units must be a positive int", where=f"{name}(units)", received=repr(units))
        if cell_clip is not None and (not _is_number(cell_clip) or cell_clip <= 0):
            raise RLGraphSpecError("cell_clip must be None or a positive number", where=f"{name}(cell_clip)",
                                   received=repr(cell_clip))
        if not isinstance(static_loop, bool) and not _is_positive_int(static_loop):
            raise RLGraphSpecError("static_loop must be a bool or a positive number of steps",
                                   where=f"{name}(static_loop)", received=repr(static_loop))
        if not _is_number(forget_bias):
            raise RLGraphSpecError("forget_bias must be a number", where=f"{name}(forget_bias)",
                                   received=repr(forget_bias))
        if not _is_positive_int(parallel_iterations):
            raise RLGraphSpecError("parallel_iterations must be a positive int", where=f"{name}(parallel_iterations)",
                                   received=repr(parallel_iterations))
        self.units = int(units)
        self.use_peepholes = bool(use_peepholes)
        self.cell_clip = None if cell_clip is None else float(cell_clip)
        self.static_loop = static_loop if isinstance(static_loop, bool) else int(static_loop)
        self.forget_bias = float(forget_bias)
        self.parallel_iterations = int(parallel_iterations)
        self.swap_memory = bool(swap_memory)
        self.time_major = bool(time_major)
        self.weights_spec = check_initializer_spec("glorot_uniform" if weights_spec is None else weights_spec,
                                                   f"{type(self).__name__}(weights_spec)")
        self.biases_spec = check_initializer_spec(0.0 if biases_spec is None else biases_spec,
                                                  f"{type(self).__name__}(biases_spec)", allow_false=True)
        self.kernel = None
        self.bias = None
        self.peepholes = None  # (w_i, w_f, w_o) when use_peepholes.

    @rlgraph_api
    def apply(self, inputs, initial_c_and_h_states=None, sequence_length=None, resets=None):
        return self._graph_fn_apply(inputs, initial_c_and_h_states, sequence_length, resets)

    def get_output_spaces(self, space: Space) -> dict:
        """The spaces of `apply`'s result for inputs of `space`: "output" and "last_internal_states" (c, h)."""
        state = FloatBox(shape=(self.units,), add_batch_rank=space.has_batch_rank)
        return {"output": self.get_preprocessed_space(space), "last_internal_states": (state, state)}

    def check_input_spaces(self, input_spaces, action_space=None):
        where = f"{self.global_scope}.apply"
        space = input_spaces.get("inputs")
        if not isinstance(space, FloatBox) or len(space.shape) != 1:
            raise RLGraphSpaceError(space, "an LSTM layer needs a FloatBox of rank 1 (plus batch and time rank)",
                                    where=f"{where}(inputs)", expected="FloatBox(shape=(in,)) with batch and time rank",
                                    hint="flatten the input first, e.g. with ReShape(flatten=True).")
        if not (space.has_batch_rank and space.has_time_rank):
            raise RLGraphSpaceError(space, "an LSTM layer needs inputs with a batch and a time rank",
                                    where=f"{where}(inputs)", expected="add_batch_rank=True and add_time_rank=True",
                                    hint="a sequence is [B, T, in] (or [T, B, in] with time_major=True).")
        if space.time_major != self.time_major:
            raise RLGraphSpaceError(space, "the space's time_major differs from the layer's", where=f"{where}(inputs)",
                                    expected=f"time_major={self.time_major}", received=f"time_major={space.time_major}",
                                    hint="set time_major the same on the layer and on the input space.")
        if self.static_loop is True and space.time_size is None:
            raise RLGraphSpaceError(space, "static_loop=True needs a fixed time size", where=f"{where}(inputs)",
                                    expected="a space with add_time_rank=<steps>",
                                    hint="pass static_loop=<number of steps>, or static_loop=False.")
        states = input_spaces.get("initial_c_and_h_states")
        if states is not None:
            ok = isinstance(states, TupleSpace) and len(states) == 2 and all(
                isinstance(s, FloatBox) and tuple(s.shape) == (self.units,) and s.has_batch_rank and
                not s.has_time_rank for s in states)
            if not ok:
                raise RLGraphSpaceError(states, "initial states must be a tuple (c0, h0) of [B, units] FloatBoxes",
                                        where=f"{where}(initial_c_and_h_states)",
                                        expected=f"Tuple(FloatBox(shape=({self.units},), add_batch_rank=True), ...)")
        lengths = input_spaces.get("sequence_length")
        if lengths is not None and not (isinstance(lengths, IntBox) and lengths.shape == () and
                                        lengths.has_batch_rank and not lengths.has_time_rank):
            raise RLGraphSpaceError(lengths, "sequence_length must be an IntBox of shape () with a batch rank",
                                    where=f"{where}(sequence_length)", expected="IntBox(add_batch_rank=True)")
        resets = input_spaces.get("resets")
        if resets is not None and not (isinstance(resets, BoolBox) and resets.shape == () and resets.has_batch_rank
                                       and resets.has_time_rank and resets.time_major == self.time_major):
            raise RLGraphSpaceError(resets, "resets must be a BoolBox of shape () with batch and time rank",
                                    where=f"{where}(resets)",
                                    expected=f"BoolBox(add_batch_rank=True, add_time_rank=True, "
                                             f"time_major={self.time_major})")

    def create_variables(self, input_spaces, action_space=None):
        in_units = int(input_spaces["inputs"].shape[0])
        self.kernel = self.get_variable("kernel", shape=(in_units + self.units, 4 * self.units), dtype="float",
                                        initializer=self.weights_spec, trainable=True)
        self.bias = self.get_variable("bias", shape=(4 * self.units,), dtype="float", initializer=self.biases_spec,
                                      trainable=True)
        if self.use_peepholes:
            self.peepholes = tuple(self.get_variable(name, shape=(self.units,), dtype="float", initializer=0.0,
                                                     trainable=True) for name in PEEPHOLE_NAMES)

    @graph_fn(output_space=lambda self, inputs, *rest: self.get_output_spaces(inputs))
    def _graph_fn_apply(self, inputs, initial_c_and_h_states=None, sequence_length=None, resets=None):
        run = _lstm_tf if get_backend() == "tf" else _lstm_torch
        output, c, h = run(self, inputs, initial_c_and_h_states, sequence_length, resets)
        return {"output": output, "last_internal_states": (c, h)}

    def get_preprocessed_space(self, space: Space) -> Space:
        """The space of "output": FloatBox (units,) with the input's batch/time ranks."""
        return FloatBox(shape=(self.units,), add_batch_rank=space.has_batch_rank, add_time_rank=space.has_time_rank,
                        time_major=space.time_major)


def _is_positive_int(value: Any) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value >= 1


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


# --- Backend code (called from `_graph_fn_apply` only) -----------------------------------------------------------

def _cell_tf(layer: LSTMLayer, z, c):
    """One step from the pre-activations z = [x, h] @ kernel + bias; returns (c_new, h_new)."""
    import tensorflow as tf
    i, j, f, o = tf.split(z, 4, axis=-1)
    if layer.peepholes is not None:
        w_i, w_f, w_o = layer.peepholes
        i, f = i + w_i * c, f + w_f * c
    c_new = tf.sigmoid(f + layer.forget_bias) * c + tf.sigmoid(i) * tf.tanh(j)
    if layer.cell_clip is not None:
        c_new = tf.clip_by_value(c_new, -layer.cell_clip, layer.cell_clip)
    if layer.peepholes is not None:
        o = o + w_o * c_new
    return c_new, tf.sigmoid(o) * tf.tanh(c_new)


def _lstm_tf(layer: LSTMLayer, x, states, lengths, resets=None):
    import tensorflow as tf
    dtype = layer.kernel.dtype
    x = tf.cast(x, dtype)
    xs = x if layer.time_major else tf.transpose(x, [1, 0, 2])  # [T, B, in]
    in_units = int(xs.shape[-1])
    w_x, w_h = layer.kernel[:in_units], layer.kernel[in_units:]
    z_x = tf.tensordot(xs, w_x, 1) + layer.bias  # All input projections in one product: [T, B, 4 * units].
    num_steps = tf.shape(xs)[0]
    if states is None:
        c = h = tf.zeros(tf.stack([tf.shape(xs)[1], layer.units]), dtype=dtype)
    else:
        c, h = (tf.cast(s, dtype) for s in states)
    mask = None
    if lengths is not None:
        mask = tf.range(num_steps)[:, None] < tf.cast(lengths, tf.int32)[None, :]  # [T, B]
    keep = None
    if resets is not None:
        resets = resets if layer.time_major else tf.transpose(resets, [1, 0])
        keep = tf.cast(tf.logical_not(tf.cast(resets, tf.bool)), dtype)[..., None]  # [T, B, 1]

    def step(t, c, h):
        if keep is not None:
            c, h = c * keep[t], h * keep[t]
        c_new, h_new = _cell_tf(layer, z_x[t] + tf.matmul(h, w_h), c)
        if mask is None:
            return c_new, h_new, h_new
        valid = mask[t][:, None]
        return tf.where(valid, c_new, c), tf.where(valid, h_new, h), tf.where(valid, h_new, tf.zeros_like(h_new))

    static_steps = xs.shape[0] if xs.shape[0] is not None else (
        layer.static_loop if not isinstance(layer.static_loop, bool) else None)
    if layer.static_loop is not False and static_steps is not None:
        outputs = []
        for t in range(static_steps):
            c, h, out = step(t, c, h)
            outputs.append(out)
        output = tf.stack(outputs, axis=0) if outputs else tf.zeros_like(z_x[..., :layer.units])
    else:
        array = tf.TensorArray(dtype, size=num_steps, element_shape=tf.TensorShape([None, layer.units]))

        def body(t, c, h, array):
            c, h, out = step(t, c, h)
            return t + 1, c, h, array.write(t, out)

        _, c, h, array = tf.while_loop(lambda t, *_: t < num_steps, body, (tf.constant(0), c, h, array),
                                       parallel_iterations=layer.parallel_iterations, swap_memory=layer.swap_memory)
        output = array.stack()
    if not layer.time_major:
        output = tf.transpose(output, [1, 0, 2])
    return output, c, h


def _cell_torch(layer: LSTMLayer, z, c):
    """PyTorch twin of `_cell_tf`."""
    import torch
    i, j, f, o = torch.chunk(z, 4, dim=-1)
    if layer.peepholes is not None:
        w_i, w_f, w_o = layer.peepholes
        i, f = i + w_i * c, f + w_f * c
    c_new = torch.sigmoid(f + layer.forget_bias) * c + torch.sigmoid(i) * torch.tanh(j)
    if layer.cell_clip is not None:
        c_new = torch.clamp(c_new, -layer.cell_clip, layer.cell_clip)
    if layer.peepholes is not None:
        o = o + w_o * c_new
    return c_new, torch.sigmoid(o) * torch.tanh(c_new)


def _lstm_torch(layer: LSTMLayer, x, states, lengths, resets=None):
    import torch
    dtype = layer.kernel.dtype
    x = x.to(dtype)
    xs = x if layer.time_major else x.transpose(0, 1)  # [T, B, in]
    num_steps, batch = xs.shape[0], xs.shape[1]
    in_units = xs.shape[-1]
    w_x, w_h = layer.kernel[:in_units], layer.kernel[in_units:]
    z_x = torch.matmul(xs, w_x) + layer.bias  # All input projections in one product: [T, B, 4 * units].
    if states is None:
        c = h = torch.zeros((batch, layer.units), dtype=dtype, device=x.device)
    else:
        c, h = (s.to(dtype) for s in states)
    mask = None
    if lengths is not None:
        steps = torch.arange(num_steps, device=x.device)
        mask = (steps[:, None] < lengths.to(x.device)[None, :]).unsqueeze(-1)  # [T, B, 1]
    keep = None
    if resets is not None:
        resets = resets if layer.time_major else resets.transpose(0, 1)
        keep = (~resets.to(torch.bool)).to(dtype).unsqueeze(-1)  # [T, B, 1]
    outputs = []
    for t in range(num_steps):
        if keep is not None:
            c, h = c * keep[t], h * keep[t]
        c_new, h_new = _cell_torch(layer, torch.addmm(z_x[t], h, w_h), c)
        if mask is None:
            c, h = c_new, h_new
            outputs.append(h_new)
        else:
            valid = mask[t]
            c, h = torch.where(valid, c_new, c), torch.where(valid, h_new, h)
            outputs.append(torch.where(valid, h_new, torch.zeros_like(h_new)))
    output = torch.stack(outputs, dim=0) if outputs else z_x[..., :layer.units] * 0
    if not layer.time_major:
        output = output.transpose(0, 1)
    return output, c, h

