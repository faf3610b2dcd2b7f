"""`Conv2DLayer`: a 2-D convolution (cross-correlation) with TF's "valid"/"same" padding on both backends."""
from __future__ import annotations

from typing import Any, Tuple

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.nn.nn_layer import NNLayer
from rlgraph.spaces import FloatBox, Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.initializers import bias_initializer, check_initializer_spec
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

from rlgraph.components.layers.nn.image_layer_utils import (
    DATA_FORMATS, PADDINGS, IntPair, check_choice, check_image_space, fold_leading_ranks, image_shape, int_pair,
    spatial_dims, unfold_leading_ranks, window_geometry)


class Conv2DLayer(NNLayer):
    """A 2-D convolution: activation(conv2d(x, kernel) + bias), as `tf.nn.conv2d` computes it.

    The variables are "<scope>/kernel" [kh, kw, in, filters] and "<scope>/bias" [filters], in this
    (TF) layout on both backends; PyTorch permutes the kernel to [filters, in, kh, kw] when it runs.
    Inputs are [B, H, W, in] ("channels_last") or [B, in, H, W] ("channels_first"), with an optional
    time rank; outputs are [B, H', W', filters] or [B, filters, H', W'] with
    H' = (H - kh) // sh + 1 ("valid") or ceil(H / sh) ("same", zero padding with the odd row/column
    at the bottom/right as in TF; PyTorch pads explicitly to get the same numbers). Same for W'.

    Args:
        filters: The number of output channels.
        kernel_size: (kh, kw), or one int for both.
        strides: (sh, sw), or one int for both.
        padding: "valid" or "same".
        data_format: "channels_last" (NHWC) or "channels_first" (NCHW).
        kernel_spec: Initializer of the kernel (see `get_initializer`); default "glorot_uniform".
        biases_spec: Initializer of the bias; default 0; False for no bias. "fan_in_uniform" draws
            it with the kernel's fan-in, as torch does.
        activation: See `NNLayer`.
        scope: Default "conv2d".

    Raises:
        RLGraphSpecError: On a bad filters/kernel_size/strides value or an unknown padding/data_format.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> layer = Conv2DLayer(filters=1, kernel_size=2, strides=1, kernel_spec=1.0, biases_spec=0.5)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(3, 3, 1), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", np.arange(9, dtype=np.float32).reshape((1, 3, 3, 1))))[0, :, :, 0].tolist()
    [[8.5, 12.5], [20.5, 24.5]]
    >>> layer.get_preprocessed_space(FloatBox(shape=(3, 3, 1), add_batch_rank=True)).shape
    (2, 2, 1)
    """

    def __init__(self, filters: int, kernel_size: IntPair, strides: IntPair, padding: str = "valid",
                 data_format: str = "channels_last", kernel_spec: Any = None, biases_spec: Any = None,
                 activation: Any = None, scope: str = "conv2d", **kwargs):
        super().__init__(activation=activation, scope=scope, **kwargs)
        name = type(self).__name__
        if not isinstance(filters, (int, np.integer)) or isinstance(filters, bool) or filters < 1:
            raise RLGraphSpecError("filters must be a positive int", where=f"{name}(filters)", received=repr(filters))
        self.filters = int(filters)
        self.kernel_size = int_pair(kernel_size, f"{name}(kernel_size)")
        self.strides = int_pair(strides, f"{name}(strides)")
        self.padding = check_choice(padding, PADDINGS, f"{name}(padding)")
        self.data_format = check_choice(data_format, DATA_FORMATS, f"{name}(data_format)")
        self.kernel_spec = check_initializer_spec("glorot_uniform" if kernel_spec is None else kernel_spec,
                                                  f"{type(self).__name__}(kernel_spec)")
        self.biases_spec = check_initializer_spec(0.0 if biases_spec is None else biases_spec,
                                                  f"{type(self).__name__}(biases_spec)", allow_false=True)
        self.kernel = None
        self.bias = None

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        check_image_space(self, self.input_space(input_spaces), self.kernel_size, self.padding, self.data_format,
                          "conv2d")

    def create_variables(self, input_spaces, action_space=None):
        _, _, in_channels = spatial_dims(self.input_space(input_spaces), self.data_format)
        kernel_shape = self.kernel_size + (in_channels, self.filters)
        self.kernel = self.get_variable("kernel", shape=kernel_shape, dtype="float", initializer=self.kernel_spec,
                                        trainable=True)
        if self.biases_spec is not False:
            self.bias = self.get_variable("bias", shape=(self.filters,), dtype="float",
                                          initializer=bias_initializer(self.biases_spec, kernel_shape),
                                          trainable=True)

    @graph_fn
    def _graph_fn_apply(self, *inputs):
        x, lead = fold_leading_ranks(inputs[0])
        out = self._conv2d_tf(x) if get_backend() == "tf" else self._conv2d_torch(x)
        return self.activate(unfold_leading_ranks(out, lead))

    def _conv2d_tf(self, x):
        import tensorflow as tf
        if x.dtype != self.kernel.dtype:
            x = tf.cast(x, self.kernel.dtype)
        # TF's CPU kernels only run NHWC, so channels_first goes through a transpose.
        if self.data_format == "channels_first":
            x = tf.transpose(x, (0, 2, 3, 1))
        out = tf.nn.conv2d(x, self.kernel, strides=(1,) + self.strides + (1,), padding=self.padding.upper())
        if self.bias is not None:
            out = tf.nn.bias_add(out, self.bias)
        return tf.transpose(out, (0, 3, 1, 2)) if self.data_format == "channels_first" else out

    def _conv2d_torch(self, x):
        import torch.nn.functional as F
        if x.dtype != self.kernel.dtype:
            x = x.to(self.kernel.dtype)
        if self.data_format == "channels_last":
            x = x.permute(0, 3, 1, 2)
        pads = self._torch_pads(x.shape[2], x.shape[3])
        if any(pads):
            x = F.pad(x, pads)
        out = F.conv2d(x, self.kernel.permute(3, 2, 0, 1), self.bias, stride=self.strides)
        return out.permute(0, 2, 3, 1) if self.data_format == "channels_last" else out

    def _torch_pads(self, h: int, w: int) -> Tuple[int, int, int, int]:
        """(left, right, top, bottom) zero padding that gives TF's geometry (all 0 for "valid")."""
        _, top, bottom = window_geometry(int(h), self.kernel_size[0], self.strides[0], self.padding)
        _, left, right = window_geometry(int(w), self.kernel_size[1], self.strides[1], self.padding)
        return left, right, top, bottom

    def get_preprocessed_space(self, space: Space) -> Space:
        """The output FloatBox: shape (H', W', filters) or (filters, H', W'), ranks as the input's."""
        check_image_space(self, space, self.kernel_size, self.padding, self.data_format, "conv2d")
        h, w, _ = spatial_dims(space, self.data_format)
        out_h = window_geometry(h, self.kernel_size[0], self.strides[0], self.padding)[0]
        out_w = window_geometry(w, self.kernel_size[1], self.strides[1], self.padding)[0]
        return FloatBox(shape=image_shape(out_h, out_w, self.filters, self.data_format),
                        add_batch_rank=space.has_batch_rank, add_time_rank=space.has_time_rank,
                        time_major=space.time_major)
