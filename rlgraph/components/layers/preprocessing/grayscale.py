"""`GrayScale`: a weighted sum over the color axis of images."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.preprocessing.leaf_spaces import (
    check_box_leaf, inclusive_bounds, leaf_spaces, make_box, map_leaf_spaces)
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

# ITU-R BT.601 luma weights for RGB.
RGB_LUMA_WEIGHTS = (0.299, 0.587, 0.114)


def _output_dtype(dtype) -> np.dtype:
    """uint8 stays uint8 (rounded); float keeps its dtype; int and bool become float32."""
    dtype = np.dtype(dtype)
    if dtype == np.uint8 or dtype.kind == "f":
        return dtype
    return np.dtype(np.float32)


class GrayScale(PreprocessLayer):
    """Turns [H, W, C] images (behind batch/time ranks) into [H, W] (or [H, W, 1]) gray images.

    gray = sum_c weights[c] * x[..., c]. Output dtype: uint8 inputs give uint8 (the sum rounded
    half to even and clipped to [0, 255]), float inputs keep their dtype, other int and bool
    inputs give float32. Dict/Tuple inputs are converted leaf by leaf.

    Args:
        weights: One weight per channel; default the BT.601 luma weights (0.299, 0.587, 0.114),
            which need C == 3.
        keep_rank: Keep a size-1 channel axis: [H, W, 1] instead of [H, W].
        scope: Default "grayscale".

    Raises:
        RLGraphSpecError: Empty or non-finite weights.
        RLGraphSpaceError: Inputs that are not [H, W, C] boxes with C == len(weights).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import IntBox
    >>> layer = GrayScale()
    >>> space = IntBox(256, shape=(1, 2, 3), dtype="uint8", add_batch_rank=True)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=space), backend="pytorch")
    >>> test.test(("apply", np.array([[[[255, 0, 0], [10, 10, 10]]]], dtype=np.uint8))).tolist()
    [[[76, 10]]]
    >>> layer.get_preprocessed_space(space)
    IntBox(shape=(1, 2), dtype=uint8, low=0, high=256, +batch)
    """

    def __init__(self, weights: Optional[Sequence[float]] = None, keep_rank: bool = False, scope: str = "grayscale",
                 **kwargs):
        super().__init__(scope=scope, **kwargs)
        weights = RGB_LUMA_WEIGHTS if weights is None else weights
        try:
            weights = np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError):
            weights = np.asarray([np.nan])
        if weights.ndim != 1 or weights.size == 0 or not np.all(np.isfinite(weights)):
            raise RLGraphSpecError("weights must be a non-empty sequence of finite numbers",
                                   where="GrayScale(weights)", expected="e.g. (0.299, 0.587, 0.114)",
                                   received=repr(weights))
        self.weights = weights
        self.keep_rank = bool(keep_rank)

    def _check_leaf(self, key: str, leaf: Space) -> None:
        where = f"{self.global_scope}.apply(inputs)"
        check_box_leaf(leaf, key, where, ranks=(3,))
        if leaf.shape[-1] != self.weights.size:
            raise RLGraphSpaceError(leaf, "the channel axis does not match the weights", where=where,
                                    expected=f"{self.weights.size} channels", received=f"shape {leaf.shape}",
                                    hint="pass one weight per channel in GrayScale(weights=...).")

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        for key, leaf in leaf_spaces(self.input_space(input_spaces)).items():
            self._check_leaf(key, leaf)

    def get_preprocessed_space(self, space: Space) -> Space:
        def gray(key, leaf):
            self._check_leaf(key, leaf)
            low, high = inclusive_bounds(leaf)
            # Per pixel: each channel contributes its smaller/larger weighted bound (0 for weight 0).
            w = self.weights
            with np.errstate(invalid="ignore"):
                lo = np.sum(np.where(w == 0, 0.0, np.minimum(w * low, w * high)), axis=-1)
                hi = np.sum(np.where(w == 0, 0.0, np.maximum(w * low, w * high)), axis=-1)
            shape = leaf.shape[:-1] + ((1,) if self.keep_rank else ())
            if self.keep_rank:
                lo, hi = lo[..., None], hi[..., None]
            dtype = _output_dtype(leaf.dtype)
            if dtype == np.uint8:
                lo, hi = np.clip(np.round(lo), 0, 255), np.clip(np.round(hi), 0, 255)
            return make_box(leaf, dtype, shape, low=lo, high=hi)
        return map_leaf_spaces(space, gray)

    @graph_fn(flatten_ops=True, split_ops=True)
    def _graph_fn_apply(self, *inputs):
        images = inputs[0]
        if get_backend() == "tf":
            import tensorflow as tf
            is_uint8 = images.dtype == tf.uint8
            x = images if images.dtype.is_floating else tf.cast(images, tf.float32)
            gray = tf.reduce_sum(x * tf.constant(self.weights, dtype=x.dtype), axis=-1, keepdims=self.keep_rank)
            if is_uint8:
                gray = tf.cast(tf.clip_by_value(tf.round(gray), 0.0, 255.0), tf.uint8)
        else:
            import torch
            is_uint8 = images.dtype == torch.uint8
            x = images if images.is_floating_point() else images.to(torch.float32)
            weights = torch.as_tensor(self.weights, dtype=x.dtype, device=x.device)
            gray = torch.sum(x * weights, dim=-1, keepdim=self.keep_rank)
            if is_uint8:
                gray = torch.round(gray).clamp(0.0, 255.0).to(torch.uint8)
        return gray
