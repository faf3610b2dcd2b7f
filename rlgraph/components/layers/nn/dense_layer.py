"""`DenseLayer`: y = activation(x @ kernel + bias)."""
from __future__ import annotations

from typing import Any

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.nn.nn_layer import NNLayer
from rlgraph.spaces import FloatBox, Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.initializers import bias_initializer, check_initializer_spec
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class DenseLayer(NNLayer):
    """A fully connected layer: activation(x @ kernel + bias).

    The variables are "<scope>/kernel" [in, units] and "<scope>/bias" [units], in this layout on
    both backends (PyTorch runs `addmm` on the same [in, units] kernel, no transposition).
    Inputs are [B, in] or [B, T, in] (any leading batch/time ranks).

    Args:
        units: The number of output units.
        weights_spec: Initializer of the kernel (see `get_initializer`); default "glorot_uniform".
        biases_spec: Initializer of the bias; default 0; False for no bias. "fan_in_uniform" draws
            it with the kernel's fan-in, as torch does.
        scope: Default "dense".
        **kwargs: `NNLayer` arguments, e.g. `activation`.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> layer = DenseLayer(units=2, weights_spec=1.0, biases_spec=0.5, activation="relu")
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(3,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", np.array([[1.0, 2.0, -4.0]], dtype=np.float32))).tolist()
    [[0.0, 0.0]]
    >>> sorted(test.read_variable_values(layer.variable_registry))
    ['dense/bias', 'dense/kernel']
    """

    def __init__(self, units: int, weights_spec: Any = None, biases_spec: Any = None, scope: str = "dense",
                 **kwargs):
        super().__init__(scope=scope, **kwargs)
        if not isinstance(units, (int, np.integer)) or isinstance(units, bool) or units < 1:
            raise RLGraphSpecError("units must be a positive int", where=f"{type(self).__name__}(units)",
                                   received=repr(units))
        self.units = int(units)
        self.weights_spec = check_initializer_spec("glorot_uniform" if weights_spec is None else weights_spec,
                                                   f"{type(self).__name__}(weights_spec)")
        self.biases_spec = check_initializer_spec(0.0 if biases_spec is None else biases_spec,
                                                  f"{type(self).__name__}(biases_spec)", allow_false=True)
        self.kernel = None
        self.bias = None

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        space = self.input_space(input_spaces)
        if len(space.shape) != 1:
            raise RLGraphSpaceError(space, "a dense layer needs rank-1 inputs (plus batch/time ranks)",
                                    where=f"{self.global_scope}.apply(inputs)", expected="shape (in,)",
                                    received=f"shape {space.shape}",
                                    hint="flatten the input first, e.g. with ReShape(flatten=True).")

    def create_variables(self, input_spaces, action_space=None):
        in_units = int(self.input_space(input_spaces).shape[0])
        kernel_shape = (in_units, self.units)
        self.kernel = self.get_variable("kernel", shape=kernel_shape, dtype="float", initializer=self.weights_spec,
                                        trainable=True)
        if self.biases_spec is not False:
            self.bias = self.get_variable("bias", shape=(self.units,), dtype="float",
                                          initializer=bias_initializer(self.biases_spec, kernel_shape),
                                          trainable=True)

    @graph_fn
    def _graph_fn_apply(self, *inputs):
        x = inputs[0]
        if get_backend() == "tf":
            import tensorflow as tf
            if x.dtype != self.kernel.dtype:
                x = tf.cast(x, self.kernel.dtype)
            out = tf.matmul(x, self.kernel) if len(x.shape) == 2 else tf.tensordot(x, self.kernel, 1)
            if self.bias is not None:
                out = out + self.bias
        else:
            import torch
            if x.dtype != self.kernel.dtype:
                x = x.to(self.kernel.dtype)
            if self.bias is not None and x.dim() == 2:
                out = torch.addmm(self.bias, x, self.kernel)
            else:
                out = torch.matmul(x, self.kernel)
                if self.bias is not None:
                    out = out + self.bias
        return self.activate(out)

    def get_preprocessed_space(self, space: Space) -> Space:
        return FloatBox(shape=(self.units,), add_batch_rank=space.has_batch_rank, add_time_rank=space.has_time_rank,
                        time_major=space.time_major)
