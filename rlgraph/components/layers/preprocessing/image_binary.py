"""`ImageBinary`: marks the pixels where any channel exceeds a threshold."""
from __future__ import annotations

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.preprocessing.leaf_spaces import check_box_leaf, leaf_spaces, make_box, map_leaf_spaces
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class ImageBinary(PreprocessLayer):
    """Binarizes [H, W, C] images (behind batch/time ranks) into [H, W] (or [H, W, 1]).

    out[..., h, w] = 1 if x[..., h, w, c] > threshold for at least one channel c, else 0
    (strictly greater). The output keeps the input's dtype (bool inputs give True/False).
    Dict/Tuple inputs are binarized leaf by leaf.

    Args:
        threshold: The value a channel must exceed.
        keep_rank: Keep a size-1 channel axis: [H, W, 1] instead of [H, W].
        scope: Default "image-binary".

    Raises:
        RLGraphSpecError: A threshold that is not a real number.
        RLGraphSpaceError: Inputs that are not [H, W, C] boxes.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> layer = ImageBinary(threshold=0.5)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(1, 2, 2), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", np.array([[[[0.2, 0.7], [0.5, 0.1]]]], dtype=np.float32))).tolist()
    [[[1.0, 0.0]]]
    """

    def __init__(self, threshold: float = 0.0, keep_rank: bool = False, scope: str = "image-binary", **kwargs):
        super().__init__(scope=scope, **kwargs)
        if not isinstance(threshold, (int, float, np.integer, np.floating)) or isinstance(threshold, bool) \
                or np.isnan(threshold):
            raise RLGraphSpecError("threshold must be a real number", where="ImageBinary(threshold)",
                                   received=repr(threshold))
        self.threshold = float(threshold)
        self.keep_rank = bool(keep_rank)

    def _check_leaf(self, key: str, leaf: Space) -> None:
        check_box_leaf(leaf, key, f"{self.global_scope}.apply(inputs)", ranks=(3,))

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        for key, leaf in leaf_spaces(self.input_space(input_spaces)).items():
            self._check_leaf(key, leaf)

    def get_preprocessed_space(self, space: Space) -> Space:
        def binary(key, leaf):
            self._check_leaf(key, leaf)
            shape = leaf.shape[:-1] + ((1,) if self.keep_rank else ())
            return make_box(leaf, leaf.dtype, shape, low=np.zeros(shape), high=np.ones(shape))
        return map_leaf_spaces(space, binary)

    @graph_fn(flatten_ops=True, split_ops=True)
    def _graph_fn_apply(self, *inputs):
        images = inputs[0]
        if get_backend() == "tf":
            import tensorflow as tf
            # Compare in float64 so that int thresholds like -0.5 on uint8 need no wrap-around care.
            x = images if images.dtype.is_floating else tf.cast(images, tf.float64)
            hit = tf.reduce_any(x > tf.cast(self.threshold, x.dtype), axis=-1, keepdims=self.keep_rank)
            return tf.cast(hit, images.dtype)
        import torch
        hit = torch.any(images > self.threshold, dim=-1, keepdim=self.keep_rank)
        return hit.to(images.dtype)
