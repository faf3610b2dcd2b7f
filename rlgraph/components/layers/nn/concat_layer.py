"""`ConcatLayer`: concatenates n inputs along one data axis."""
from __future__ import annotations

from typing import List, Sequence, Union

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.nn.nn_layer import NNLayer
from rlgraph.spaces import BoolBox, BoxSpace, FloatBox, IntBox, Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError
from rlgraph.utils.util import convert_dtype


class ConcatLayer(NNLayer):
    """Concatenates its n inputs along `axis`, then applies the (optional) activation.

    Axis convention: a negative `axis` counts from the end, so -1 is the last data axis whatever
    batch/time ranks the inputs have (use negative axes to stay independent of them). A
    non-negative `axis` indexes the full tensor, batch and time ranks included: for [B, n] inputs
    axis=1 is the same as axis=-1, for [B, T, h, w] inputs axis=2 is h. The batch and time axes
    themselves cannot be concatenated along.

    All inputs need the same rank, the same batch/time ranks and the same sizes on every axis but
    `axis`. Mixed dtypes are promoted: any float input gives a float output (the widest float dtype),
    else any int input an int output (the widest int dtype), else bool.

    Args:
        axis: The axis to concatenate along (see above); default -1.
        scope: Default "concat".
        **kwargs: `activation` etc., see `NNLayer`.

    Raises:
        RLGraphSpecError: If `axis` is not an int.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> spaces = [FloatBox(shape=(2,), add_batch_rank=True), FloatBox(shape=(1,), add_batch_rank=True)]
    >>> test = ComponentTest(ConcatLayer(), input_spaces=dict(inputs=spaces), backend="pytorch")
    >>> test.test(("apply", [np.array([[1.0, 2.0]]), np.array([[3.0]])])).tolist()
    [[1.0, 2.0, 3.0]]
    >>> ConcatLayer().get_preprocessed_space(spaces).shape
    (3,)
    """

    def __init__(self, axis: int = -1, scope: str = "concat", **kwargs):
        super().__init__(scope=scope, **kwargs)
        if not isinstance(axis, (int, np.integer)) or isinstance(axis, bool):
            raise RLGraphSpecError("axis must be an int", where=f"{type(self).__name__}(axis)", received=repr(axis))
        self.axis = int(axis)
        self.out_dtype = None  # numpy dtype of the output, known once the input spaces are.

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        keys = sorted((k for k in input_spaces if k.startswith("inputs[")), key=lambda k: int(k[7:-1]))
        self.out_dtype = self.get_preprocessed_space([input_spaces[k] for k in keys]).dtype

    def data_axis(self, space: Space) -> int:
        """The index of the concat axis in `space.shape` (no batch/time ranks)."""
        rank = len(space.shape)
        leading = int(space.has_batch_rank) + int(space.has_time_rank)
        axis = self.axis + rank if self.axis < 0 else self.axis - leading
        if not 0 <= axis < rank:
            raise RLGraphSpaceError(space, f"axis {self.axis} is not a data axis of the input",
                                    where=f"{self.global_scope}.apply(inputs)",
                                    expected=f"axis in [{leading}, {leading + rank}) or [{-rank}, -1]",
                                    received=f"shape {space.shape} with {leading} batch/time rank(s)",
                                    hint="batch and time axes cannot be concatenated along; use a negative axis.")
        return axis

    def get_preprocessed_space(self, space: Union[Space, Sequence[Space]]) -> Space:
        """The space of the concatenation of inputs of `space` (one space or a list of them).

        Raises:
            RLGraphSpaceError: If the spaces are not numeric boxes or do not fit together.
        """
        spaces: List[Space] = list(space) if isinstance(space, (list, tuple)) else [space]
        where = f"{self.global_scope}.apply(inputs)"
        if not spaces:
            raise RLGraphSpaceError(None, "nothing to concatenate", where=where, expected="at least one input space")
        for i, s in enumerate(spaces):
            if not isinstance(s, BoxSpace) or s.dtype.kind not in "biuf":
                raise RLGraphSpaceError(s, f"input {i} is not a numeric box space", where=where,
                                        expected="a FloatBox, IntBox or BoolBox")
        first = spaces[0]
        axis = self.data_axis(first)
        for i, s in enumerate(spaces[1:], start=1):
            same_ranks = (s.has_batch_rank, s.has_time_rank, s.time_major) == \
                (first.has_batch_rank, first.has_time_rank, first.time_major)
            other_dims = [d for j, d in enumerate(s.shape) if j != axis]
            if not same_ranks or len(s.shape) != len(first.shape) or \
                    other_dims != [d for j, d in enumerate(first.shape) if j != axis]:
                raise RLGraphSpaceError(s, f"input {i} does not fit input 0 for a concat along axis {self.axis}",
                                        where=where,
                                        expected=f"shape {first.shape} except on data axis {axis}, same batch/time "
                                                 f"ranks as {first}",
                                        hint="reshape the inputs so that all axes but the concat axis agree.")
        shape = list(first.shape)
        shape[axis] = sum(int(s.shape[axis]) for s in spaces)
        ranks = dict(add_batch_rank=first.has_batch_rank, add_time_rank=first.has_time_rank,
                     time_major=first.time_major)
        return _concat_space(spaces, axis, tuple(shape), ranks)

    @graph_fn
    def _graph_fn_apply(self, *inputs):
        out_dtype = self.out_dtype
        if get_backend() == "tf":
            import tensorflow as tf
            if out_dtype is not None:
                tf_dtype = convert_dtype(out_dtype, to="tf")
                inputs = [x if x.dtype == tf_dtype else tf.cast(x, tf_dtype) for x in inputs]
            out = tf.concat(list(inputs), axis=self.axis)
        else:
            import torch
            if out_dtype is not None:
                torch_dtype = convert_dtype(out_dtype, to="pytorch")
                inputs = [x if x.dtype == torch_dtype else x.to(torch_dtype) for x in inputs]
            out = torch.cat(list(inputs), dim=self.axis)
        return self.activate(out)


def _concat_space(spaces: List[BoxSpace], axis: int, shape: tuple, ranks: dict) -> Space:
    """The box of the concatenated spaces: promoted dtype, bounds concatenated where they carry over."""
    dtypes = [s.dtype for s in spaces]
    floats = [d for d in dtypes if d.kind == "f"]
    ints = [d for d in dtypes if d.kind in "iu"]
    if floats:
        dtype = np.result_type(*floats)
        # Int/bool bounds (exclusive highs, dtype extremes) do not carry over into a float box.
        lows = [s.low.astype(np.float64) if s.dtype.kind == "f" else np.full(s.shape, -np.inf) for s in spaces]
        highs = [s.high.astype(np.float64) if s.dtype.kind == "f" else np.full(s.shape, np.inf) for s in spaces]
        return FloatBox(low=np.concatenate(lows, axis), high=np.concatenate(highs, axis), dtype=dtype, **ranks)
    if ints:
        dtype = np.result_type(*ints)
        # An unbounded IntBox spans its dtype's range, which a wider output dtype would not.
        if all(isinstance(s, IntBox) and getattr(s, "_bounded", False) for s in spaces):
            return IntBox(low=np.concatenate([s.low for s in spaces], axis),
                          high=np.concatenate([s.high for s in spaces], axis), dtype=dtype, **ranks)
        return IntBox(shape=shape, dtype=dtype, **ranks)
    return BoolBox(shape=shape, **ranks)
