"""`ImageResize`: resizes images to a fixed height and width, identically on both backends."""
from __future__ import annotations

import functools

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.preprocessing.leaf_spaces import (
    check_box_leaf, inclusive_bounds, leaf_spaces, make_box, map_leaf_spaces)
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

INTERPOLATIONS = ("bilinear", "nearest", "area")


@functools.lru_cache(maxsize=64)
def interpolation_matrix(n_in: int, n_out: int, interpolation: str) -> np.ndarray:
    """The [n_out, n_in] matrix that resizes one axis: out = matrix @ x.

    Half-pixel centers, no antialiasing (what `tf.image.resize(..., antialias=False)` computes):
    "bilinear" weights the two source pixels around (o + 0.5) * n_in / n_out - 0.5 (clamped to
    the edge); "nearest" picks source pixel floor((o + 0.5) * n_in / n_out); "area" weights each
    source pixel by the share of the output pixel's footprint [o, o + 1) * n_in / n_out it covers.
    """
    matrix = np.zeros((n_out, n_in), dtype=np.float64)
    rows = np.arange(n_out)
    scale = n_in / n_out
    if interpolation == "nearest":
        # float32 products like TF's kernel, so exact-integer positions round the same way.
        src = np.floor((rows + 0.5).astype(np.float32) * np.float32(scale)).astype(np.int64)
        matrix[rows, np.minimum(src, n_in - 1)] = 1.0
    elif interpolation == "bilinear":
        src = np.maximum((rows + 0.5) * scale - 0.5, 0.0)
        i0 = np.minimum(np.floor(src).astype(np.int64), n_in - 1)
        frac = src - i0
        np.add.at(matrix, (rows, i0), 1.0 - frac)
        np.add.at(matrix, (rows, np.minimum(i0 + 1, n_in - 1)), frac)
    else:
        cols = np.arange(n_in)
        overlap = np.minimum((rows[:, None] + 1) * scale, cols[None] + 1) - np.maximum(rows[:, None] * scale, cols[None])
        matrix = np.clip(overlap, 0.0, None) / scale
    return matrix


class ImageResize(PreprocessLayer):
    """Resizes [H, W, C] or [H, W] images (behind batch/time ranks) to [height, width(, C)].

    Both backends apply the same separable interpolation matrices (`interpolation_matrix`), one
    per image axis, so TF and PyTorch agree to float rounding; the results equal
    `tf.image.resize(images, (height, width), method, antialias=False)` (bilinear also
    `F.interpolate(mode="bilinear", align_corners=False)`, nearest `mode="nearest-exact"`).
    The maths runs in the input's float dtype (float32 for ints). Integer inputs come back in
    their dtype, rounded (half to even) and clipped to the dtype's range. Dict/Tuple inputs
    are resized leaf by leaf.

    Args:
        width: The output width (columns).
        height: The output height (rows).
        interpolation: "bilinear" (default), "nearest" or "area".
        scope: Default "image-resize".

    Raises:
        RLGraphSpecError: Non-positive sizes or an unknown interpolation.
        RLGraphSpaceError: Inputs that are not int/float boxes of rank 2 or 3.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> layer = ImageResize(width=2, height=1)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(2, 4), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", np.array([[[0.0, 2.0, 4.0, 6.0], [2.0, 4.0, 6.0, 8.0]]], dtype=np.float32))).tolist()
    [[[2.0, 6.0]]]
    """

    def __init__(self, width: int, height: int, interpolation: str = "bilinear", scope: str = "image-resize",
                 **kwargs):
        super().__init__(scope=scope, **kwargs)
        for name, value in (("width", width), ("height", height)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise RLGraphSpecError(f"{name} must be a positive int", where=f"ImageResize({name})",
                                       expected="an int >= 1", received=repr(value))
        if interpolation not in INTERPOLATIONS:
            raise RLGraphSpecError("unknown interpolation", where="ImageResize(interpolation)",
                                   expected=" or ".join(repr(i) for i in INTERPOLATIONS), received=repr(interpolation))
        self.width = int(width)
        self.height = int(height)
        self.interpolation = interpolation
        self._leaves = {}

    def _where(self) -> str:
        return f"{self.global_scope}.apply(inputs)"

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        self._leaves = leaf_spaces(self.input_space(input_spaces))
        for key, leaf in self._leaves.items():
            check_box_leaf(leaf, key, self._where(), ranks=(2, 3), kinds="iuf")

    def get_preprocessed_space(self, space: Space) -> Space:
        def resize(key, leaf):
            check_box_leaf(leaf, key, self._where(), ranks=(2, 3), kinds="iuf")
            low, high = inclusive_bounds(leaf)
            shape = (self.height, self.width) + tuple(leaf.shape[2:])
            # Every output is a convex combination of inputs: the global bounds hold.
            low, high = np.full(shape, low.min() if low.size else -np.inf), np.full(shape, high.max() if high.size else np.inf)
            return make_box(leaf, leaf.dtype, shape, low=low, high=high)
        return map_leaf_spaces(space, resize)

    @graph_fn(flatten_ops=True, split_ops=True, add_auto_key_as_first_param=True)
    def _graph_fn_apply(self, key, *inputs):
        images = inputs[0]
        leaf = self._leaves[key]
        rows = interpolation_matrix(int(leaf.shape[0]), self.height, self.interpolation)
        cols = interpolation_matrix(int(leaf.shape[1]), self.width, self.interpolation)
        # "oh,...hw(c)->...ow(c)" then the same along the columns.
        spec_h, spec_w = ("oh,...hwc->...owc", "pw,...owc->...opc") if leaf.rank == 3 else \
            ("oh,...hw->...ow", "pw,...ow->...op")
        if get_backend() == "tf":
            import tensorflow as tf
            x = images if images.dtype.is_floating else tf.cast(images, tf.float32)
            out = tf.einsum(spec_w, tf.constant(cols, dtype=x.dtype),
                            tf.einsum(spec_h, tf.constant(rows, dtype=x.dtype), x))
            if not images.dtype.is_floating:
                out = tf.cast(tf.clip_by_value(tf.round(out), images.dtype.min, images.dtype.max), images.dtype)
        else:
            import torch
            x = images if images.is_floating_point() else images.to(torch.float32)
            as_tensor = functools.partial(torch.as_tensor, dtype=x.dtype, device=x.device)
            out = torch.einsum(spec_w, as_tensor(cols), torch.einsum(spec_h, as_tensor(rows), x))
            if not images.is_floating_point():
                info = torch.iinfo(images.dtype)
                out = torch.round(out).clamp(info.min, info.max).to(images.dtype)
        return out
