"""Numpy reference of the image preprocessing layers."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from rlgraph.utils.numpy.maths import _as_float
from rlgraph.utils.rlgraph_errors import RLGraphError


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
