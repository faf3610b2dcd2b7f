"""`ConvertType`: casts values to another dtype."""
from __future__ import annotations

from typing import Any

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.preprocessing.leaf_spaces import (
    check_box_leaf, inclusive_bounds, leaf_spaces, make_box, map_leaf_spaces)
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpecError
from rlgraph.utils.util import convert_dtype

# Short names: "float" and "int" mean the 32-bit types (as everywhere in rlgraph).
DTYPE_NAMES = ("float", "float16", "float32", "float64", "int", "int8", "int16", "int32", "int64", "uint8", "bool")


class ConvertType(PreprocessLayer):
    """Casts every element to `to_dtype` (`tf.cast` / `Tensor.to` semantics on both backends).

    float -> int truncates toward zero; anything -> bool is `x != 0`; bool -> number gives 0/1.
    Values outside the target dtype's range (e.g. -1.0 -> uint8) are not defined, and the
    output space is then the unbounded box of that dtype. Dict/Tuple inputs are converted
    leaf by leaf. `get_preprocessed_space` gives a FloatBox, IntBox or BoolBox.

    Args:
        to_dtype: One of "float", "float16", "float32", "float64", "int", "int8", "int16",
            "int32", "int64", "uint8", "bool" (or the matching numpy/python type).
        scope: Default "convert-type".

    Raises:
        RLGraphSpecError: An unknown or unsupported dtype.
        RLGraphSpaceError: Non-numeric inputs.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> layer = ConvertType("int")
    >>> space = FloatBox(-5.0, 5.0, shape=(3,), add_batch_rank=True)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=space), backend="pytorch")
    >>> test.test(("apply", np.array([[-1.5, 0.2, 2.9]], dtype=np.float32))).tolist()
    [[-1, 0, 2]]
    >>> layer.get_preprocessed_space(space)
    IntBox(shape=(3,), dtype=int32, low=-5, high=6, +batch)
    """

    def __init__(self, to_dtype: Any, scope: str = "convert-type", **kwargs):
        super().__init__(scope=scope, **kwargs)
        try:
            # None must not pass: numpy reads np.dtype(None) as float64.
            dtype = None if to_dtype is None else convert_dtype(to_dtype, to="np")
        except Exception:  # noqa: BLE001 - any unparsable spec is reported below
            dtype = None
        if dtype is None or np.dtype(dtype).kind not in "iufb" or np.dtype(dtype) == np.uint64:
            raise RLGraphSpecError("unknown or unsupported dtype", where="ConvertType(to_dtype)",
                                   expected=", ".join(DTYPE_NAMES), received=repr(to_dtype))
        self.to_dtype = np.dtype(dtype)

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        for key, leaf in leaf_spaces(self.input_space(input_spaces)).items():
            check_box_leaf(leaf, key, f"{self.global_scope}.apply(inputs)")

    def get_preprocessed_space(self, space: Space) -> Space:
        def converted(key, leaf):
            check_box_leaf(leaf, key, f"{self.global_scope}.apply(inputs)")
            low, high = inclusive_bounds(leaf)
            if self.to_dtype.kind in "iu":
                with np.errstate(invalid="ignore"):
                    low, high = np.trunc(low), np.trunc(high)
            return make_box(leaf, self.to_dtype, leaf.shape, low=low, high=high)
        return map_leaf_spaces(space, converted)

    @graph_fn(flatten_ops=True, split_ops=True)
    def _graph_fn_apply(self, *inputs):
        x = inputs[0]
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.cast(x, convert_dtype(self.to_dtype, to="tf"))
        return x.to(convert_dtype(self.to_dtype, to="pytorch"))
