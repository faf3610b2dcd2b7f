"""`Normalize`: per-sample min-max scaling to [0, 1]."""
from __future__ import annotations

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.preprocessing.leaf_spaces import (
    check_box_leaf, float_dtype, leaf_spaces, make_box, map_leaf_spaces)
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class Normalize(PreprocessLayer):
    """Scales each sample to [0, 1]: (x - min) / max(max - min, epsilon).

    min and max are taken over all axes of the input space (not the batch or time ranks), so
    every [b] (or [b, t]) item is normalized on its own; a constant sample becomes all zeros.
    Float inputs keep their dtype, int and bool inputs give float32. Dict/Tuple inputs are
    normalized leaf by leaf. Input spaces need rank >= 1.

    Args:
        epsilon: Lower limit of the divisor (guards constant samples), > 0.
        scope: Default "normalize".

    Raises:
        RLGraphSpecError: A non-positive epsilon.
        RLGraphSpaceError: Non-box or rank-0 inputs.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> layer = Normalize()
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(3,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", np.array([[2.0, 4.0, 6.0], [1.0, 1.0, 1.0]], dtype=np.float32))).tolist()
    [[0.0, 0.5, 1.0], [0.0, 0.0, 0.0]]
    """

    def __init__(self, epsilon: float = 1e-8, scope: str = "normalize", **kwargs):
        super().__init__(scope=scope, **kwargs)
        if not isinstance(epsilon, (int, float, np.integer, np.floating)) or isinstance(epsilon, bool) \
                or not epsilon > 0:
            raise RLGraphSpecError("epsilon must be a positive number", where="Normalize(epsilon)",
                                   received=repr(epsilon))
        self.epsilon = float(epsilon)
        self._leaves = {}

    def _check_leaf(self, key: str, leaf: Space) -> None:
        check_box_leaf(leaf, key, f"{self.global_scope}.apply(inputs)", ranks=tuple(range(1, 33)))

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        self._leaves = leaf_spaces(self.input_space(input_spaces))
        for key, leaf in self._leaves.items():
            self._check_leaf(key, leaf)

    def get_preprocessed_space(self, space: Space) -> Space:
        def normalized(key, leaf):
            self._check_leaf(key, leaf)
            return make_box(leaf, float_dtype(leaf.dtype), leaf.shape, low=np.zeros(leaf.shape),
                            high=np.ones(leaf.shape))
        return map_leaf_spaces(space, normalized)

    @graph_fn(flatten_ops=True, split_ops=True, add_auto_key_as_first_param=True)
    def _graph_fn_apply(self, key, *inputs):
        x = inputs[0]
        rank = self._leaves[key].rank
        ndim = len(x.shape)
        axes = list(range(ndim - rank, ndim))
        if get_backend() == "tf":
            import tensorflow as tf
            x = x if x.dtype.is_floating else tf.cast(x, tf.float32)
            low = tf.reduce_min(x, axis=axes, keepdims=True)
            high = tf.reduce_max(x, axis=axes, keepdims=True)
            return (x - low) / tf.maximum(high - low, tf.cast(self.epsilon, x.dtype))
        import torch
        x = x if x.is_floating_point() else x.to(torch.float32)
        low = torch.amin(x, dim=axes, keepdim=True)
        high = torch.amax(x, dim=axes, keepdim=True)
        return (x - low) / torch.clamp(high - low, min=self.epsilon)
