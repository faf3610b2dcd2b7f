"""`Multiply`: scales values by a constant factor."""
from __future__ import annotations

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.preprocessing.leaf_spaces import (
    check_box_leaf, float_dtype, inclusive_bounds, leaf_spaces, make_box, map_leaf_spaces)
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class Multiply(PreprocessLayer):
    """out = x * factor, elementwise.

    Float inputs keep their dtype; int and bool inputs are cast to float32 first. Dict/Tuple
    inputs are scaled leaf by leaf. The output bounds are the scaled input bounds.

    Args:
        factor: A finite real number.
        scope: Default "multiply".

    Raises:
        RLGraphSpecError: A factor that is not a finite real number.
        RLGraphSpaceError: Non-numeric inputs.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import IntBox
    >>> layer = Multiply(factor=0.5)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=IntBox(10, shape=(2,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", np.array([[3, 8]], dtype=np.int32))).tolist()
    [[1.5, 4.0]]
    """

    def __init__(self, factor: float, scope: str = "multiply", **kwargs):
        super().__init__(scope=scope, **kwargs)
        if not isinstance(factor, (int, float, np.integer, np.floating)) or isinstance(factor, bool) \
                or not np.isfinite(factor):
            raise RLGraphSpecError("factor must be a finite real number", where="Multiply(factor)",
                                   received=repr(factor))
        self.factor = float(factor)

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        for key, leaf in leaf_spaces(self.input_space(input_spaces)).items():
            check_box_leaf(leaf, key, f"{self.global_scope}.apply(inputs)")

    def get_preprocessed_space(self, space: Space) -> Space:
        def scaled(key, leaf):
            check_box_leaf(leaf, key, f"{self.global_scope}.apply(inputs)")
            low, high = inclusive_bounds(leaf)
            if self.factor == 0.0:
                low, high = np.zeros(leaf.shape), np.zeros(leaf.shape)
            else:
                low, high = np.sort(np.stack([low * self.factor, high * self.factor]), axis=0)
            return make_box(leaf, float_dtype(leaf.dtype), leaf.shape, low=low, high=high)
        return map_leaf_spaces(space, scaled)

    @graph_fn(flatten_ops=True, split_ops=True)
    def _graph_fn_apply(self, *inputs):
        x = inputs[0]
        if get_backend() == "tf":
            import tensorflow as tf
            x = x if x.dtype.is_floating else tf.cast(x, tf.float32)
            return x * tf.cast(self.factor, x.dtype)
        import torch
        x = x if x.is_floating_point() else x.to(torch.float32)
        return x * self.factor
