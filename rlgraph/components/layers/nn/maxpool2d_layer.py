"""`MaxPool2DLayer`: 2-D max pooling with TF's "valid"/"same" padding on both backends."""
from __future__ import annotations

from typing import Any, Optional

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.nn.image_layer_utils import (
    DATA_FORMATS, PADDINGS, IntPair, check_choice, check_image_space, fold_leading_ranks, image_shape, int_pair,
    spatial_dims, unfold_leading_ranks, window_geometry)
from rlgraph.components.layers.nn.nn_layer import NNLayer
from rlgraph.spaces import FloatBox, Space
from rlgraph.utils.decorators import graph_fn


class MaxPool2DLayer(NNLayer):
    """2-D max pooling, as `tf.nn.max_pool2d` computes it, followed by the (optional) activation.

    Inputs are [B, H, W, C] ("channels_last") or [B, C, H, W] ("channels_first"), with an optional
    time rank; outputs keep the layout and C, with H' = (H - ph) // sh + 1 ("valid") or ceil(H / sh)
    ("same": TF's padding geometry, the odd row/column at the bottom/right; PyTorch pads with -inf so
    that padded cells never win the max). Same for W'. Integer inputs are pooled as float32.
    The layer has no variables.

    Args:
        pool_size: (ph, pw), or one int for both.
        strides: (sh, sw), or one int for both; None: `pool_size` (non-overlapping windows).
        padding: "valid" or "same".
        data_format: "channels_last" (NHWC) or "channels_first" (NCHW).
        scope: Default "maxpool2d".
        **kwargs: `NNLayer` arguments, e.g. `activation` (default None).

    Raises:
        RLGraphSpecError: On a bad pool_size/strides value or an unknown padding/data_format.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> layer = MaxPool2DLayer(pool_size=2, strides=2, padding="same")
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(3, 3, 1), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", -np.arange(9, dtype=np.float32).reshape((1, 3, 3, 1))))[0, :, :, 0].tolist()
    [[-0.0, -2.0], [-6.0, -8.0]]
    """

    def __init__(self, pool_size: IntPair, strides: Optional[IntPair] = None, padding: str = "valid",
                 data_format: str = "channels_last", scope: str = "maxpool2d", **kwargs):
        super().__init__(scope=scope, **kwargs)
        name = type(self).__name__
        self.pool_size = int_pair(pool_size, f"{name}(pool_size)")
        self.strides = self.pool_size if strides is None else int_pair(strides, f"{name}(strides)")
        self.padding = check_choice(padding, PADDINGS, f"{name}(padding)")
        self.data_format = check_choice(data_format, DATA_FORMATS, f"{name}(data_format)")

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        check_image_space(self, self.input_space(input_spaces), self.pool_size, self.padding, self.data_format,
                          "max-pool")

    @graph_fn
    def _graph_fn_apply(self, *inputs):
        x, lead = fold_leading_ranks(inputs[0])
        out = self._max_pool_tf(x) if get_backend() == "tf" else self._max_pool_torch(x)
        return self.activate(unfold_leading_ranks(out, lead))

    def _max_pool_tf(self, x: Any) -> Any:
        import tensorflow as tf
        if not x.dtype.is_floating:
            x = tf.cast(x, tf.float32)
        # TF's CPU kernels only run NHWC, so channels_first goes through a transpose.
        if self.data_format == "channels_first":
            x = tf.transpose(x, (0, 2, 3, 1))
        out = tf.nn.max_pool2d(x, ksize=self.pool_size, strides=self.strides, padding=self.padding.upper())
        return tf.transpose(out, (0, 3, 1, 2)) if self.data_format == "channels_first" else out

    def _max_pool_torch(self, x: Any) -> Any:
        import torch
        import torch.nn.functional as F
        if not torch.is_floating_point(x):
            x = x.to(torch.float32)
        if self.data_format == "channels_last":
            x = x.permute(0, 3, 1, 2)
        _, top, bottom = window_geometry(int(x.shape[2]), self.pool_size[0], self.strides[0], self.padding)
        _, left, right = window_geometry(int(x.shape[3]), self.pool_size[1], self.strides[1], self.padding)
        x = F.pad(x, (left, right, top, bottom), value=float("-inf"))
        out = F.max_pool2d(x, kernel_size=self.pool_size, stride=self.strides)
        return out.permute(0, 2, 3, 1) if self.data_format == "channels_last" else out

    def get_preprocessed_space(self, space: Space) -> Space:
        """A FloatBox with the pooled shape and the input's ranks (and its global bounds, if it has any)."""
        check_image_space(self, space, self.pool_size, self.padding, self.data_format, "max-pool")
        h, w, c = spatial_dims(space, self.data_format)
        out_h = window_geometry(h, self.pool_size[0], self.strides[0], self.padding)[0]
        out_w = window_geometry(w, self.pool_size[1], self.strides[1], self.padding)[0]
        bounds = getattr(space, "global_bounds", False)
        # A max over values in [low, high] stays in [low, high]; an activation may move it.
        low, high = (float(b) for b in bounds) if bounds and self.activation is None else (None, None)
        return FloatBox(low=low, high=high, shape=image_shape(out_h, out_w, c, self.data_format),
                        add_batch_rank=space.has_batch_rank, add_time_rank=space.has_time_rank,
                        time_major=space.time_major)
