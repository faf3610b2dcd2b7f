"""`Sequence`: stacks the last few inputs (frame stacking while acting)."""
from __future__ import annotations

from typing import Any

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.layer import preprocessed_space
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.components.layers.preprocessing.reshape import box_like
from rlgraph.spaces import ContainerSpace, FloatBox, IntBox, Space
from rlgraph.utils.decorators import graph_fn, tracing
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


def _positive_int(value: Any, where: str) -> int:
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
        raise RLGraphSpecError("must be a positive int", where=where, received=repr(value))
    return int(value)


class Sequence(PreprocessLayer):
    """Frame stacking: outputs the last `sequence_length` inputs, oldest first.

    The state is a buffer variable [sequence_length, batch_size, ...] (a ring, written at
    "index"), the write index and a "reset happened" flag. The first input after a `reset` (and
    after the build) fills every slot, so the first output repeats that frame; later inputs
    replace the oldest frame. Frame stacking as in DQN (Mnih et al. 2015,
    https://www.nature.com/articles/nature14236).

    Shapes: inputs [B, ...] with B == batch_size; outputs [B, ..., sequence_length] with
    `add_rank=True` (frames stacked on a new last axis), else [B, ..., C * sequence_length]
    (frames concatenated along the last axis).

    Args:
        sequence_length: The number of frames to stack.
        batch_size: The (fixed) batch size of the inputs, e.g. the number of parallel environments.
        add_rank: Stack on a new last axis (True) or concatenate along the last axis (False).
        scope: Default "sequence".

    Raises:
        RLGraphSpecError: For a non-positive `sequence_length` or `batch_size`.
        RLGraphSpaceError: At build time for inputs without a batch rank, with a time rank, or
            (`add_rank=False`) without data dims; at run time for a batch size other than `batch_size`.

    API:
        apply(inputs): The stacked frames.
        reset(): Forget the stored frames (the next input fills all slots).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> test = ComponentTest(Sequence(sequence_length=3), input_spaces=dict(inputs=FloatBox(shape=(1,),
    ...                      add_batch_rank=True)), backend="pytorch")
    >>> [test.test(("apply", np.array([[float(i)]]))).tolist() for i in (1, 2)]
    [[[[1.0, 1.0, 1.0]]], [[[1.0, 1.0, 2.0]]]]
    """

    def __init__(self, sequence_length: int = 2, batch_size: int = 1, add_rank: bool = True, scope: str = "sequence",
                 **kwargs):
        super().__init__(scope=scope, **kwargs)
        self.sequence_length = _positive_int(sequence_length, f"{type(self).__name__}(sequence_length)")
        self.batch_size = _positive_int(batch_size, f"{type(self).__name__}(batch_size)")
        self.add_rank = bool(add_rank)
        self.stateful = True
        self.buffer = None
        self.index = None
        self.reset_flag = None
        self._data_shape = ()

    # --- Spaces ------------------------------------------------------------------------------------
    def get_preprocessed_space(self, space: Space) -> Space:
        """[B, *shape] -> [B, *shape, L] (add_rank) or [B, *shape[:-1], shape[-1] * L]."""
        self._check(space)
        length = self.sequence_length
        low = high = None
        if isinstance(space, (FloatBox, IntBox)):
            if self.add_rank:
                low, high = (np.repeat(bound[..., None], length, axis=-1) for bound in (space.low, space.high))
            else:
                low, high = (np.concatenate([bound] * length, axis=-1) for bound in (space.low, space.high))
        shape = space.shape + (length,) if self.add_rank else space.shape[:-1] + (space.shape[-1] * length,)
        return box_like(space, shape, low, high, add_batch_rank=True, add_time_rank=False, time_major=False)

    def _check(self, space: Space) -> None:
        where = f"{self.global_scope}.apply(inputs)"
        if isinstance(space, ContainerSpace):
            raise RLGraphSpaceError(space, "container spaces are not supported", where=where,
                                    hint="stack each part in a DictPreprocessorStack.")
        if not space.has_batch_rank or space.has_time_rank:
            raise RLGraphSpaceError(space, "frame stacking needs inputs with a batch rank and no time rank",
                                    where=where, expected="add_batch_rank=True, add_time_rank=False")
        if not self.add_rank and not space.shape:
            raise RLGraphSpaceError(space, "add_rank=False concatenates along the last data axis; the input has none",
                                    where=where, expected="a data shape of rank >= 1", hint="use add_rank=True.")

    def check_input_spaces(self, input_spaces, action_space=None):
        self._check(self.input_space(input_spaces))

    def create_variables(self, input_spaces, action_space=None):
        space = self.input_space(input_spaces)
        self._data_shape = tuple(space.shape)
        self.buffer = self.get_variable("buffer", shape=(self.sequence_length, self.batch_size) + self._data_shape,
                                        dtype=space.dtype, trainable=False)
        self.index = self.get_variable("index", dtype="int32", initializer=0, trainable=False)
        self.reset_flag = self.get_variable("reset-flag", dtype="bool", initializer=True, trainable=False)

    # --- API ----------------------------------------------------------------------------------------
    # It moves or keeps ranks that the traced shapes do not show.
    @graph_fn(output_space=preprocessed_space)
    def _graph_fn_apply(self, *inputs):
        x = inputs[0]
        batch = x.shape[0]
        if batch is not None and int(batch) != self.batch_size:
            if tracing.tracer is None:
                raise RLGraphSpaceError(None, "the batch size differs from the layer's batch_size",
                                        where=f"{self.global_scope}.apply(inputs)", expected=self.batch_size,
                                        received=int(batch), hint="set Sequence(batch_size=...) to the acting batch.")
            # Build trace on zero data with another batch size: stack without touching the state.
            return self._arrange([x] * self.sequence_length)
        if get_backend() == "tf":
            return self._arrange(self._update_tf(x))
        return self._arrange(self._update_torch(x))

    def _update_tf(self, x):
        import tensorflow as tf
        length = self.sequence_length
        check = tf.debugging.assert_equal(tf.shape(x)[0], self.batch_size, message=(
            f"{self.global_scope}.apply(inputs): the batch size differs from the layer's batch_size "
            f"{self.batch_size}. Hint: set Sequence(batch_size=...) to the acting batch."))
        # The scatter below is not stateful, so without this dependency it may fail first (with
        # TF's own message) inside a tf.function.
        with tf.control_dependencies([check] if check is not None else []):
            x = tf.cast(tf.identity(x), self.buffer.dtype)
        index = self.index.read_value()
        filled = tf.tile(x[None], [length] + [1] * len(x.shape))
        written = tf.tensor_scatter_nd_update(self.buffer.read_value(), tf.reshape(index, (1, 1)), x[None])
        frames = tf.where(self.reset_flag.read_value(), filled, written)
        self.buffer.assign(frames)
        self.index.assign((index + 1) % length)
        self.reset_flag.assign(False)
        order = (index + 1 + tf.range(length, dtype=index.dtype)) % length  # Oldest frame first.
        return tf.unstack(tf.gather(frames, order), num=length)

    def _update_torch(self, x):
        import torch
        length = self.sequence_length
        with torch.no_grad():
            index = int(self.index)
            if bool(self.reset_flag):
                self.buffer.copy_(x.to(self.buffer.dtype).unsqueeze(0).expand_as(self.buffer))
            else:
                self.buffer[index] = x.to(self.buffer.dtype)
            self.index.fill_((index + 1) % length)
            self.reset_flag.fill_(False)
            return [self.buffer[(index + 1 + i) % length].clone() for i in range(length)]

    def _arrange(self, frames: list) -> Any:
        """Frames (oldest first, each [B, ...]) -> stacked on a new last axis or concatenated along it."""
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.stack(frames, axis=-1) if self.add_rank else tf.concat(frames, axis=-1)
        import torch
        return torch.stack(frames, dim=-1) if self.add_rank else torch.cat(frames, dim=-1)

    @graph_fn
    def _graph_fn_reset(self):
        if get_backend() == "tf":
            self.index.assign(0)
            self.reset_flag.assign(True)
            return None
        import torch
        with torch.no_grad():
            self.index.fill_(0)
            self.reset_flag.fill_(True)
        return None
