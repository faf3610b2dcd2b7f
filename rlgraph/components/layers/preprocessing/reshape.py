"""`ReShape`: reshapes or flattens the data dims, one-hot flattens ints, folds/unfolds the time rank.

Also home of `box_like` (a box space like another with a new shape and ranks), which the
shape-changing preprocessors share.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.spaces import BoolBox, ContainerSpace, FloatBox, IntBox, Space, TextBox
from rlgraph.utils.decorators import graph_fn, rlgraph_api, tracing
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


def box_like(space: Space, shape: tuple, low: Any = None, high: Any = None, add_batch_rank: bool = False,
             add_time_rank: bool = False, time_major: bool = False) -> Space:
    """A primitive space of `space`'s class and dtype with data shape `shape` and the given ranks.

    Args:
        space: The template (FloatBox, IntBox, BoolBox or TextBox).
        shape: The new data shape (without batch/time ranks).
        low: Element-wise lower bounds of `shape` (default: `space`'s global lower bound, if any).
        high: Element-wise upper bounds likewise.
        add_batch_rank: See `Space`.
        add_time_rank: See `Space`.
        time_major: See `Space`.

    Returns:
        The new space; unbounded IntBoxes and FloatBoxes stay unbounded.
    """
    ranks = dict(add_batch_rank=add_batch_rank, add_time_rank=add_time_rank, time_major=time_major)
    if isinstance(space, BoolBox):
        return BoolBox(shape=shape, **ranks)
    if isinstance(space, TextBox):
        return TextBox(shape=shape, **ranks)
    bounds = space.global_bounds
    if low is None or high is None:
        low, high = bounds if bounds is not False else (None, None)
    if isinstance(space, IntBox):
        info = np.iinfo(space.dtype)
        if low is None or bounds == (info.min, info.max):
            return IntBox(shape=shape, dtype=space.dtype, **ranks)  # Unbounded stays unbounded.
        return IntBox(low=low, high=high, shape=shape, dtype=space.dtype, **ranks)
    return FloatBox(low=low, high=high, shape=shape, dtype=space.dtype, **ranks)


def _check_new_shape(new_shape: Any, where: str) -> Optional[tuple]:
    if new_shape is None:
        return None
    if not isinstance(new_shape, (tuple, list)) or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and (d > 0 or d == -1) for d in new_shape):
        raise RLGraphSpecError("new_shape must be a tuple of positive ints with at most one -1", where=where,
                               received=repr(new_shape))
    if list(new_shape).count(-1) > 1:
        raise RLGraphSpecError("new_shape may contain at most one -1", where=where, received=repr(new_shape))
    return tuple(int(d) for d in new_shape)


class ReShape(PreprocessLayer):
    """Reshapes the data dims of its input, or flattens them, and can fold or unfold the time rank.

    Modes (one reshaping mode, optionally combined with one folding mode):
      * `new_shape`: [lead..., *shape] -> [lead..., *new_shape] (one -1 is inferred).
      * `flatten=True`: [lead..., *shape] -> [lead..., n] with n = prod(shape). With
        `flatten_categories` an IntBox input is one-hot encoded first: n = prod(shape) * k, and
        the output is a FloatBox in [0, 1]. Values are shifted by the space's lower bound
        (category c is `c - low`). Non-int inputs are simply flattened.
      * `fold_time_rank=True`: [B, T, ...] (or [T, B, ...]) -> [B*T, ...], rows in the input's
        order; the output space has a batch rank only.
      * `unfold_time_rank=True`: [B*T, ...] -> [B, T, ...]; B and T are read at run time from the
        second argument of `apply`, the unfolded original (or any data of its leading shape).
        The output takes the original's layout; `time_major` transposes it to [T, B, ...] (True)
        or [B, T, ...] (False).

    `lead` are the input's batch/time ranks, kept unchanged unless (un)folding.

    Args:
        new_shape: The new data shape (without batch/time ranks), may hold one -1.
        flatten: Flatten the data dims into one.
        flatten_categories: With `flatten`: one-hot encode int inputs over this many categories
            first; True reads `num_categories` from the IntBox input space.
        fold_time_rank: Merge the batch and time ranks into one batch rank.
        unfold_time_rank: Split the batch rank into batch and time ranks.
        time_major: With `unfold_time_rank` only: the output layout (None: the original's).
        scope: Default "reshape".

    Raises:
        RLGraphSpecError: For contradictory or malformed arguments.
        RLGraphSpaceError: At build time, if `new_shape` does not fit the input's size, the
            input lacks the ranks a fold/unfold needs, or categories cannot be determined.

    API:
        apply(inputs, input_before_time_rank_folding=None): The reshaped inputs; the second
            argument is needed (only) by `unfold_time_rank`.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import IntBox
    >>> layer = ReShape(flatten=True, flatten_categories=True)
    >>> space = IntBox(3, shape=(2,), add_batch_rank=True)
    >>> layer.get_preprocessed_space(space).shape
    (6,)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=space), backend="pytorch")
    >>> test.test(("apply", np.array([[0, 2]]))).tolist()
    [[1.0, 0.0, 0.0, 0.0, 0.0, 1.0]]
    """

    def __init__(self, new_shape: Optional[Sequence[int]] = None, flatten: bool = False,
                 flatten_categories: Union[None, bool, int] = None, fold_time_rank: bool = False,
                 unfold_time_rank: bool = False, time_major: Optional[bool] = None, scope: str = "reshape",
                 **kwargs):
        super().__init__(scope=scope, **kwargs)
        where = type(self).__name__
        self.new_shape = _check_new_shape(new_shape, f"{where}(new_shape)")
        for arg, value in (("flatten", flatten), ("fold_time_rank", fold_time_rank),
                           ("unfold_time_rank", unfold_time_rank), ("time_major", time_major)):
            if not isinstance(value, (bool, np.bool_)) and not (arg == "time_major" and value is None):
                raise RLGraphSpecError(f"{arg} must be true or false", where=f"{where}({arg})", received=repr(value))
        self.flatten = bool(flatten)
        if flatten_categories is not None and not isinstance(flatten_categories, bool) and not (
                isinstance(flatten_categories, (int, np.integer)) and flatten_categories > 0):
            raise RLGraphSpecError("flatten_categories must be None, a bool or a positive int",
                                   where=f"{where}(flatten_categories)", received=repr(flatten_categories))
        self.flatten_categories = flatten_categories if flatten_categories not in (None, False) else None
        if self.flatten_categories is not None and not self.flatten:
            raise RLGraphSpecError("flatten_categories needs flatten=True", where=f"{where}(flatten_categories)",
                                   hint="pass flatten=True as well.")
        if self.flatten and self.new_shape is not None:
            raise RLGraphSpecError("new_shape and flatten=True exclude each other", where=where,
                                   received=f"new_shape={self.new_shape}, flatten=True")
        self.fold_time_rank = bool(fold_time_rank)
        self.unfold_time_rank = bool(unfold_time_rank)
        if self.fold_time_rank and self.unfold_time_rank:
            raise RLGraphSpecError("fold_time_rank and unfold_time_rank exclude each other", where=where)
        if time_major is not None and not self.unfold_time_rank:
            raise RLGraphSpecError("time_major only applies with unfold_time_rank=True", where=f"{where}(time_major)",
                                   received=repr(time_major), hint="folding reads the layout from the input space.")
        self.time_major = None if time_major is None else bool(time_major)
        if not (self.flatten or self.new_shape is not None or self.fold_time_rank or self.unfold_time_rank):
            raise RLGraphSpecError("nothing to do: pass new_shape, flatten, fold_time_rank or unfold_time_rank",
                                   where=where)
        # Set by `check_input_spaces`, read by the graph function.
        self._num_lead = 0
        self._data_shape = ()
        self._depth = 0
        self._offset = 0
        self._swap = False  # Unfold: transpose [B, T] <-> [T, B] after the reshape.

    # --- Spaces ------------------------------------------------------------------------------------
    def _categories(self, space: Space) -> int:
        """The one-hot depth for `space` (0: no one-hot encoding)."""
        if self.flatten_categories is None or not isinstance(space, IntBox):
            return 0
        if self.flatten_categories is True:
            if not space.num_categories:
                raise RLGraphSpaceError(space, "flatten_categories=True needs an IntBox with categories",
                                        where=f"{self.global_scope}.apply(inputs)",
                                        expected="an IntBox with global bounds, e.g. IntBox(3)",
                                        hint="pass the number of categories as flatten_categories=k.")
            return space.num_categories
        return int(self.flatten_categories)

    def _data_shape_for(self, space: Space) -> tuple:
        where = f"{self.global_scope}.apply(inputs)"
        if isinstance(space, ContainerSpace):
            raise RLGraphSpaceError(space, "container spaces are not supported", where=where,
                                    hint="reshape each part in a DictPreprocessorStack.")
        size = space.flat_dim
        if self.flatten:
            return (size * (self._categories(space) or 1),)
        if self.new_shape is None:
            return tuple(space.shape)
        known = int(np.prod([d for d in self.new_shape if d != -1], dtype=np.int64))
        if -1 in self.new_shape:
            if size % known:
                raise RLGraphSpaceError(space, f"new_shape {self.new_shape} does not fit the input's "
                                        f"{size} elements", where=where, expected=f"a size divisible by {known}")
            return tuple(size // known if d == -1 else d for d in self.new_shape)
        if known != size:
            raise RLGraphSpaceError(space, f"new_shape {self.new_shape} holds {known} elements, the input {size}",
                                    where=where, expected=f"a new_shape with {size} elements")
        return self.new_shape

    def _check_ranks(self, space: Space, original: Optional[Space]) -> None:
        where = f"{self.global_scope}.apply"
        if self.fold_time_rank and not (space.has_batch_rank and space.has_time_rank):
            raise RLGraphSpaceError(space, "fold_time_rank needs an input with batch and time ranks",
                                    where=f"{where}(inputs)", expected="add_batch_rank=True, add_time_rank=True")
        if self.unfold_time_rank:
            if not space.has_batch_rank or space.has_time_rank:
                raise RLGraphSpaceError(space, "unfold_time_rank needs an input with a batch rank and no time rank",
                                        where=f"{where}(inputs)", expected="add_batch_rank=True only")
            if original is not None and not (original.has_batch_rank and original.has_time_rank):
                raise RLGraphSpaceError(original, "the original input needs batch and time ranks",
                                        where=f"{where}(input_before_time_rank_folding)",
                                        expected="add_batch_rank=True, add_time_rank=True")

    def _output_space(self, space: Space, original: Optional[Space]) -> Space:
        self._check_ranks(space, original)
        shape = self._data_shape_for(space)
        if self.fold_time_rank:
            ranks = (True, False, False)
        elif self.unfold_time_rank:
            layout = self.time_major
            if layout is None:
                layout = bool(original.time_major) if original is not None else False
            ranks = (True, True, layout)
        else:
            ranks = (space.has_batch_rank, space.has_time_rank, space.time_major)
        if self._categories(space):
            return FloatBox(0.0, 1.0, shape=shape, add_batch_rank=ranks[0], add_time_rank=ranks[1],
                            time_major=ranks[2])
        low = high = None
        if isinstance(space, (FloatBox, IntBox)):
            low, high = space.low.reshape(shape), space.high.reshape(shape)
        return box_like(space, shape, low, high, *ranks)

    def get_preprocessed_space(self, space: Space) -> Space:
        """The output space; with `unfold_time_rank` the layout is `time_major` (default batch-major)."""
        return self._output_space(space, None)

    def check_input_spaces(self, input_spaces, action_space=None):
        space = input_spaces.get("inputs")
        original = input_spaces.get("input_before_time_rank_folding")
        if self.unfold_time_rank and original is None:
            raise RLGraphSpaceError(None, "unfold_time_rank needs the unfolded original input",
                                    where=f"{self.global_scope}.apply(input_before_time_rank_folding)",
                                    expected="a space with batch and time ranks",
                                    hint="call apply(folded, original), passing the data before folding.")
        self._output_space(space, original)
        self._num_lead = int(space.has_batch_rank) + int(space.has_time_rank)
        self._data_shape = self._data_shape_for(space)
        self._depth = self._categories(space)
        bounds = space.global_bounds if self._depth else False
        self._offset = int(bounds[0]) if bounds is not False and space.num_categories else 0
        self._swap = self.unfold_time_rank and self.time_major is not None and \
            bool(original.time_major) != self.time_major

    # --- API ----------------------------------------------------------------------------------------
    @rlgraph_api
    def apply(self, inputs, input_before_time_rank_folding=None):
        return self._graph_fn_apply(inputs, input_before_time_rank_folding)

    # Folding and unfolding move ranks that the traced shapes do not show.
    @graph_fn(output_space=lambda self, inputs, original=None: self._output_space(inputs, original))
    def _graph_fn_apply(self, inputs, input_before_time_rank_folding=None):
        x, original = inputs, input_before_time_rank_folding
        backend = get_backend()
        if self.unfold_time_rank and tracing.tracer is not None and \
                int(x.shape[0]) != int(original.shape[0]) * int(original.shape[1]):
            # Build trace on zero data: the folded rows need not match the original's B*T.
            return self._zeros((int(original.shape[0]), int(original.shape[1])) + self._data_shape, x, backend)
        if backend == "tf":
            return self._reshape_tf(x, original)
        return self._reshape_torch(x, original)

    def _zeros(self, shape: tuple, x: Any, backend: str) -> Any:
        if self._swap:
            shape = (shape[1], shape[0]) + shape[2:]
        if backend == "tf":
            import tensorflow as tf
            return tf.zeros(shape, dtype=tf.float32 if self._depth else x.dtype)
        import torch
        return torch.zeros(shape, dtype=torch.float32 if self._depth else x.dtype)

    def _reshape_tf(self, x, original):
        import tensorflow as tf
        if self._depth:
            x = tf.one_hot(tf.cast(x, tf.int32) - self._offset, depth=self._depth, dtype=tf.float32)
        if self.fold_time_rank:
            lead = tf.constant([-1])
        elif self.unfold_time_rank:
            lead = tf.shape(original)[:2]
        else:
            lead = tf.shape(x)[:self._num_lead]
        out = tf.reshape(x, tf.concat([lead, tf.constant(self._data_shape, dtype=tf.int32)], axis=0))
        if self._swap:
            out = tf.transpose(out, [1, 0] + list(range(2, len(out.shape))))
        return out

    def _reshape_torch(self, x, original):
        import torch
        if self._depth:
            x = torch.nn.functional.one_hot(x.long() - self._offset, num_classes=self._depth).float()
        if self.fold_time_rank:
            lead = (-1,)
        elif self.unfold_time_rank:
            lead = tuple(original.shape[:2])
        else:
            lead = tuple(x.shape[:self._num_lead])
        out = x.reshape(lead + self._data_shape)
        if self._swap:
            out = out.transpose(0, 1)
        return out
