"""`Divide`: divides values by a constant divisor."""
from __future__ import annotations

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.preprocessing.leaf_spaces import (
    check_box_leaf, float_dtype, inclusive_bounds, leaf_spaces, make_box, map_leaf_spaces)
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class Divide(PreprocessLayer):
    """out = x / divisor, elementwise (a true division, e.g. uint8 pixels / 255).

    Float inputs keep their dtype; int and bool inputs are cast to float32 first. Dict/Tuple
    inputs are divided leaf by leaf. The output bounds are the divided input bounds.

    Args:
        divisor: A finite, non-zero real number.
        scope: Default "divide".

    Raises:
        RLGraphSpecError: A divisor that is zero or not a finite real number.
        RLGraphSpaceError: Non-numeric inputs.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import IntBox
    >>> layer = Divide(divisor=4)
    >>> space = IntBox(256, shape=(2,), dtype="uint8", add_batch_rank=True)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=space), backend="pytorch")
    >>> test.test(("apply", np.array([[2, 255]], dtype=np.uint8))).tolist()
    [[0.5, 63.75]]
    >>> layer.get_preprocessed_space(space)
    FloatBox(shape=(2,), dtype=float32, low=0.0, high=63.75, +batch)
    """

    def __init__(self, divisor: float, scope: str = "divide", **kwargs):
        super().__init__(scope=scope, **kwargs)
        if not isinstance(divisor, (int, float, np.integer, np.floating)) or isinstance(divisor, bool) \
                or not np.isfinite(divisor) or divisor == 0:
            raise RLGraphSpecError("divisor must be a finite, non-zero real number", where="Divide(divisor)",
                                   received=repr(divisor))
        self.divisor = float(divisor)

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        for key, leaf in leaf_spaces(self.input_space(input_spaces)).items():
            check_box_leaf(leaf, key, f"{self.global_scope}.apply(inputs)")

    def get_preprocessed_space(self, space: Space) -> Space:
        def divided(key, leaf):
            check_box_leaf(leaf, key, f"{self.global_scope}.apply(inputs)")
            low, high = inclusive_bounds(leaf)
            low, high = np.sort(np.stack([low / self.divisor, high / self.divisor]), axis=0)
            return make_box(leaf, float_dtype(leaf.dtype), leaf.shape, low=low, high=high)
        return map_leaf_spaces(space, divided)

    @graph_fn(flatten_ops=True, split_ops=True)
    def _graph_fn_apply(self, *inputs):
        x = inputs[0]
        if get_backend() == "tf":
            import tensorflow as tf
            x = x if x.dtype.is_floating else tf.cast(x, tf.float32)
            return x / tf.cast(self.divisor, x.dtype)
        import torch
        x = x if x.is_floating_point() else x.to(torch.float32)
        return x / self.divisor
