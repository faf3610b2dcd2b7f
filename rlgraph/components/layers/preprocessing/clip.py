"""`Clip`: limits values to [min, max]."""
from __future__ import annotations

import math

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.preprocessing.leaf_spaces import (
    check_box_leaf, inclusive_bounds, leaf_spaces, make_box, map_leaf_spaces)
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError
from rlgraph.utils.util import convert_dtype


def _is_real(value) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool) \
        and not np.isnan(value)


class Clip(PreprocessLayer):
    """Clips every element to [min, max] (e.g. rewards to [-1, 1], Mnih et al. 2015).

    The dtype is kept. Integer inputs are clipped to the integers inside [min, max]
    (ceil(min) .. floor(max), limited to the dtype's range). Dict/Tuple inputs are clipped
    leaf by leaf. The output space's bounds are the input bounds clipped the same way.

    Args:
        min: The lower limit (may be -inf).
        max: The upper limit (may be +inf), >= min.
        scope: Default "clip".

    Raises:
        RLGraphSpecError: Non-numeric limits or min > max.
        RLGraphSpaceError: Non-numeric inputs, or int inputs when no integer lies in [min, max].

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> layer = Clip(min=-1.0, max=1.0)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(3,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", np.array([[-3.0, 0.5, 2.0]], dtype=np.float32))).tolist()
    [[-1.0, 0.5, 1.0]]
    """

    def __init__(self, min: float = -1.0, max: float = 1.0, scope: str = "clip", **kwargs):  # noqa: A002
        super().__init__(scope=scope, **kwargs)
        for name, value in (("min", min), ("max", max)):
            if not _is_real(value):
                raise RLGraphSpecError(f"{name} must be a real number", where=f"Clip({name})", received=repr(value))
        if min > max:
            raise RLGraphSpecError("min must not exceed max", where="Clip(min, max)", expected="min <= max",
                                   received=f"min={min!r}, max={max!r}")
        self.min = float(min)
        self.max = float(max)

    def _limits(self, dtype, key: str = "", leaf: Space = None) -> tuple:
        """(low, high) in terms of `dtype`: the float limits, or the integers in them within the dtype's range."""
        dtype = np.dtype(dtype)
        if dtype.kind == "f":
            return self.min, self.max
        info = np.iinfo(dtype)
        low = info.min if self.min == -math.inf else max(info.min, math.ceil(self.min))
        high = info.max if self.max == math.inf else min(info.max, math.floor(self.max))
        if low > high:
            raise RLGraphSpaceError(leaf, f"no {dtype.name} value lies in [{self.min}, {self.max}]"
                                    + (f" (input at '{key}')" if key else ""),
                                    where=f"{self.global_scope}.apply(inputs)", expected="an integer in [min, max]",
                                    hint="widen the limits or convert the input to float first.")
        return low, high

    def _check_leaf(self, key: str, leaf: Space) -> None:
        check_box_leaf(leaf, key, f"{self.global_scope}.apply(inputs)", kinds="iuf")
        self._limits(leaf.dtype, key, leaf)

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        for key, leaf in leaf_spaces(self.input_space(input_spaces)).items():
            self._check_leaf(key, leaf)

    def get_preprocessed_space(self, space: Space) -> Space:
        def clipped(key, leaf):
            self._check_leaf(key, leaf)
            low, high = self._limits(leaf.dtype, key, leaf)
            in_low, in_high = inclusive_bounds(leaf)
            return make_box(leaf, leaf.dtype, leaf.shape, low=np.clip(in_low, low, high),
                            high=np.clip(in_high, low, high))
        return map_leaf_spaces(space, clipped)

    @graph_fn(flatten_ops=True, split_ops=True)
    def _graph_fn_apply(self, *inputs):
        x = inputs[0]
        low, high = self._limits(convert_dtype(x.dtype, to="np"))
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.clip_by_value(x, tf.constant(low, dtype=x.dtype), tf.constant(high, dtype=x.dtype))
        import torch
        return torch.clamp(x, low, high)
