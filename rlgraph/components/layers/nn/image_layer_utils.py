"""Helpers shared by the 2-D image layers (Conv2DLayer, MaxPool2DLayer): argument checks, TF padding
geometry, image layouts, and folding of leading batch/time ranks."""
from __future__ import annotations

from typing import Any, Sequence, Tuple, Union

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.nn.nn_layer import NNLayer
from rlgraph.spaces import Space
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

IntPair = Union[int, Sequence[int]]
PADDINGS = ("valid", "same")
DATA_FORMATS = ("channels_last", "channels_first")


def int_pair(value: IntPair, where: str) -> Tuple[int, int]:
    """`value` (an int or a pair of ints, all >= 1) as a pair; raises `RLGraphSpecError` otherwise."""
    items = [value] * 2 if isinstance(value, (int, np.integer)) else value
    try:
        ok = len(items) == 2 and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1
                                     for v in items)
    except TypeError:
        ok = False
    if not ok:
        raise RLGraphSpecError("must be a positive int or a pair of positive ints", where=where,
                               expected="e.g. 3 or (3, 2)", received=repr(value))
    return int(items[0]), int(items[1])


def check_choice(value: str, choices: Sequence[str], where: str) -> str:
    """`value` lower-cased if it is one of `choices`; raises `RLGraphSpecError` otherwise."""
    if not isinstance(value, str) or value.lower() not in choices:
        raise RLGraphSpecError("unknown value", where=where, expected=" or ".join(repr(c) for c in choices),
                               received=repr(value))
    return value.lower()


def window_geometry(size: int, window: int, stride: int, padding: str) -> Tuple[int, int, int]:
    """(out_size, pad_before, pad_after) of one spatial axis under TF's padding rules.

    "valid": no padding, out = (size - window) // stride + 1 (0 or less if the window does not fit).
    "same": out = ceil(size / stride), padded by max((out - 1) * stride + window - size, 0) in total,
    with the odd element after (bottom/right), as TF does; PyTorch layers pad explicitly to match.

    >>> window_geometry(5, 2, 2, "same"), window_geometry(5, 3, 2, "valid")
    ((3, 0, 1), (2, 0, 0))
    """
    if padding == "valid":
        return (size - window) // stride + 1, 0, 0
    out = -(-size // stride)
    total = max((out - 1) * stride + window - size, 0)
    return out, total // 2, total - total // 2


def spatial_dims(space: Space, data_format: str) -> Tuple[int, int, int]:
    """(H, W, C) of a rank-3 image space in `data_format`."""
    shape = tuple(int(d) for d in space.shape)
    return (shape[0], shape[1], shape[2]) if data_format == "channels_last" else (shape[1], shape[2], shape[0])


def image_shape(h: int, w: int, c: int, data_format: str) -> Tuple[int, int, int]:
    """The rank-3 shape of an (H, W, C) image in `data_format`."""
    return (h, w, c) if data_format == "channels_last" else (c, h, w)


def check_image_space(layer: NNLayer, space: Space, windows: Tuple[int, int], padding: str, data_format: str,
                      what: str) -> None:
    """Raises `RLGraphSpaceError` unless `space` is a rank-3 image that a `windows`-sized window fits."""
    where = f"{layer.global_scope}.apply(inputs)"
    if len(space.shape) != 3:
        layout = "(H, W, C)" if data_format == "channels_last" else "(C, H, W)"
        raise RLGraphSpaceError(space, f"a {what} needs rank-3 image inputs (plus batch/time ranks)", where=where,
                                expected=f"shape {layout}", received=f"shape {space.shape}",
                                hint="reshape the input, or set data_format to match it.")
    h, w, _ = spatial_dims(space, data_format)
    if padding == "valid" and (windows[0] > h or windows[1] > w):
        raise RLGraphSpaceError(space, f"the {what} window {windows} does not fit the image ({h}, {w})", where=where,
                                expected=f"H >= {windows[0]} and W >= {windows[1]}", received=f"shape {space.shape}",
                                hint="use padding='same' or a smaller window.")


def fold_leading_ranks(x: Any) -> Tuple[Any, Any]:
    """Reshapes [..., A, B, C] to [N, A, B, C]; returns (x, leading dims) for `unfold_leading_ranks`."""
    if len(x.shape) == 4:
        return x, None
    if get_backend() == "tf":
        import tensorflow as tf
        lead = tf.shape(x)[:-3]
        return tf.reshape(x, tf.concat([[-1], tf.shape(x)[-3:]], axis=0)), lead
    return x.reshape((-1,) + tuple(x.shape[-3:])), tuple(x.shape[:-3])


def unfold_leading_ranks(x: Any, lead: Any) -> Any:
    """Undoes `fold_leading_ranks` on a result [N, A', B', C']."""
    if lead is None:
        return x
    if get_backend() == "tf":
        import tensorflow as tf
        return tf.reshape(x, tf.concat([lead, tf.shape(x)[1:]], axis=0))
    return x.reshape(lead + tuple(x.shape[1:]))
