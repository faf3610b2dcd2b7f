"""`ImageCrop`: cuts a fixed rectangle out of images."""
from __future__ import annotations

import numpy as np

from rlgraph.components.layers.preprocessing.leaf_spaces import (
    check_box_leaf, inclusive_bounds, leaf_spaces, make_box, map_leaf_spaces)
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class ImageCrop(PreprocessLayer):
    """Crops [H, W, C] or [H, W] images (behind batch/time ranks) to [height, width(, C)].

    out = images[..., y:y + height, x:x + width(, :)]: `x` is the first column, `y` the first
    row. The crop must lie inside the image. Dtype and per-pixel bounds are kept. Dict/Tuple
    inputs are cropped leaf by leaf (each leaf must contain the rectangle).

    Args:
        x: The first column (offset from the left), >= 0.
        y: The first row (offset from the top), >= 0.
        width: The number of columns, >= 1.
        height: The number of rows, >= 1.
        scope: Default "image-crop".

    Raises:
        RLGraphSpecError: Negative offsets or non-positive sizes.
        RLGraphSpaceError: Non-image inputs, or a rectangle outside the image.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> layer = ImageCrop(x=1, y=0, width=2, height=1)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(2, 3), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", np.arange(6, dtype=np.float32).reshape((1, 2, 3)))).tolist()
    [[[1.0, 2.0]]]
    """

    def __init__(self, x: int, y: int, width: int, height: int, scope: str = "image-crop", **kwargs):
        super().__init__(scope=scope, **kwargs)
        for name, value, smallest in (("x", x, 0), ("y", y, 0), ("width", width, 1), ("height", height, 1)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < smallest:
                raise RLGraphSpecError(f"{name} must be an int >= {smallest}", where=f"ImageCrop({name})",
                                       expected=f"an int >= {smallest}", received=repr(value))
        self.x, self.y, self.width, self.height = int(x), int(y), int(width), int(height)
        self._leaves = {}

    def _check_leaf(self, key: str, leaf: Space) -> None:
        where = f"{self.global_scope}.apply(inputs)"
        check_box_leaf(leaf, key, where, ranks=(2, 3))
        rows, cols = leaf.shape[0], leaf.shape[1]
        if self.y + self.height > rows or self.x + self.width > cols:
            raise RLGraphSpaceError(leaf, "the crop rectangle reaches outside the image", where=where,
                                    expected=f"rows y..y+height <= {rows} and columns x..x+width <= {cols}",
                                    received=f"rows {self.y}..{self.y + self.height}, "
                                             f"columns {self.x}..{self.x + self.width}",
                                    hint="reduce the offsets or the crop size.")

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        self._leaves = leaf_spaces(self.input_space(input_spaces))
        for key, leaf in self._leaves.items():
            self._check_leaf(key, leaf)

    def get_preprocessed_space(self, space: Space) -> Space:
        def crop(key, leaf):
            self._check_leaf(key, leaf)
            window = (slice(self.y, self.y + self.height), slice(self.x, self.x + self.width))
            low, high = inclusive_bounds(leaf)
            return make_box(leaf, leaf.dtype, low[window].shape, low=low[window], high=high[window])
        return map_leaf_spaces(space, crop)

    @graph_fn(flatten_ops=True, split_ops=True, add_auto_key_as_first_param=True)
    def _graph_fn_apply(self, key, *inputs):
        images = inputs[0]
        window = (Ellipsis, slice(self.y, self.y + self.height), slice(self.x, self.x + self.width))
        if self._leaves[key].rank == 3:
            window += (slice(None),)
        # Basic slicing is the same on tf.Tensor and torch.Tensor.
        return images[window]
