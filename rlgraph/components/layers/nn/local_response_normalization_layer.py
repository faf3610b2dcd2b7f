"""`LocalResponseNormalizationLayer`: TF's local response normalization, on both backends."""
from __future__ import annotations

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.nn.nn_layer import NNLayer
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class LocalResponseNormalizationLayer(NNLayer):
    """Local response normalization over the last axis (the channels of NHWC images; Krizhevsky et
    al. 2012, section 3.3), with TF's parameterization on both backends:

        sqr_sum[..., d] = sum of x[..., j]**2 for j in [d - depth_radius, d + depth_radius] (within [0, C))
        out[..., d] = x[..., d] / (bias + alpha * sqr_sum[..., d]) ** beta

    then the (optional) activation. This is `tf.nn.local_response_normalization`; PyTorch's
    `local_response_norm(size, alpha, beta, k)` divides alpha by `size`, so this layer computes the
    formula itself there (numpy reference: `rlgraph.utils.numpy.local_response_normalization`).
    Inputs of any rank work ([B, C], [B, H, W, C], with an optional time rank). Int inputs are
    normalized as float32; on TF, whose kernel has no float64, float64 inputs are computed in
    float32 and cast back.

    Args:
        depth_radius: Half-width of the window over the last axis (an int >= 0).
        bias: Offset added to the scaled sum (usually > 0, avoids dividing by 0).
        alpha: Scale of the sum of squares.
        beta: Exponent.
        scope: Default "local-response-normalization".
        **kwargs: `NNLayer` arguments, e.g. `activation` (default None).

    Raises:
        RLGraphSpecError: For a bad depth_radius or a non-finite bias/alpha/beta.
        RLGraphSpaceError: At build, for inputs without a last (channel) axis.

    >>> from rlgraph.tests import ComponentTest
    >>> layer = LocalResponseNormalizationLayer(depth_radius=1, bias=1.0, alpha=1.0, beta=0.5)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(3,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> out = test.test(("apply", np.array([[1.0, 2.0, 3.0]], np.float32)))
    >>> np.round(out.astype(float), 4).tolist()  # [1 / 6**.5, 2 / 15**.5, 3 / 14**.5]
    [[0.4082, 0.5164, 0.8018]]
    """

    def __init__(self, depth_radius: int = 5, bias: float = 1.0, alpha: float = 1.0, beta: float = 0.5,
                 scope: str = "local-response-normalization", **kwargs):
        super().__init__(scope=scope, **kwargs)
        name = type(self).__name__
        if isinstance(depth_radius, bool) or not isinstance(depth_radius, (int, np.integer)) or depth_radius < 0:
            raise RLGraphSpecError("depth_radius must be an int >= 0", where=f"{name}(depth_radius)",
                                   received=repr(depth_radius))
        self.depth_radius = int(depth_radius)
        for arg, value in (("bias", bias), ("alpha", alpha), ("beta", beta)):
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
                    not np.isfinite(value):
                raise RLGraphSpecError(f"{arg} must be a finite number", where=f"{name}({arg})", received=repr(value))
        self.bias, self.alpha, self.beta = float(bias), float(alpha), float(beta)

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        space = self.input_space(input_spaces)
        if len(space.shape) < 1:
            raise RLGraphSpaceError(space, "the input needs a last (channel) axis to normalize over",
                                    where=f"{self.global_scope}.apply(inputs[0])",
                                    expected="a data shape of rank >= 1, e.g. (C,) or (H, W, C)",
                                    received=f"shape {space.shape}")

    @graph_fn
    def _graph_fn_apply(self, *inputs):
        x = inputs[0]
        out = self._lrn_tf(x) if get_backend() == "tf" else self._lrn_torch(x)
        return self.activate(out)

    def _lrn_tf(self, x):
        import tensorflow as tf
        dtype = x.dtype if x.dtype in (tf.float16, tf.bfloat16, tf.float32, tf.float64) else tf.float32
        compute = tf.float32 if dtype == tf.float64 else dtype
        shape = tf.shape(x)
        # TF's kernel takes [N, H, W, C] only: any leading dims fold into N.
        x4 = tf.reshape(tf.cast(x, compute), tf.stack([-1, 1, 1, shape[-1]]))
        out = tf.nn.local_response_normalization(x4, depth_radius=self.depth_radius, bias=self.bias,
                                                 alpha=self.alpha, beta=self.beta)
        return tf.cast(tf.reshape(out, shape), dtype)

    def _lrn_torch(self, x):
        import torch
        if not x.is_floating_point():
            x = x.to(torch.float32)
        window = 2 * self.depth_radius + 1
        squares = torch.nn.functional.pad(x * x, (self.depth_radius, self.depth_radius))
        sqr_sum = squares.unfold(-1, window, 1).sum(-1)
        return x / (self.bias + self.alpha * sqr_sum) ** self.beta
