"""`RankReinterpreter`: reads leading data dims as batch and/or time ranks, without touching the data."""
from __future__ import annotations

from typing import Optional

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.layer import preprocessed_space
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.components.layers.preprocessing.reshape import box_like
from rlgraph.spaces import ContainerSpace, FloatBox, IntBox, Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class RankReinterpreter(PreprocessLayer):
    """Declares leading data dims to be batch and/or time ranks; the data passes through unchanged.

    The data [lead..., d0, d1, ...] stays as it is; only its space changes: each requested rank
    that the input lacks takes over the first remaining data dim, in data order. Examples:

      * FloatBox(shape=(n, m), batch) with `add_time_rank=True`: [B, n, m] is read as
        [B, T=n, m], i.e. FloatBox(shape=(m,), batch, time), batch-major.
      * FloatBox(shape=(n, m), time) with `add_batch_rank=True`: [T, n, m] is read as
        [T, B=n, m], time-major.
      * FloatBox(shape=(n, m, k)) (no ranks) with both: [n, m, k] is read as [B, T, k], or as
        [T, B, k] with `time_major=True`.

    Removing ranks is not this layer's job (see `ReShape(fold_time_rank=True)`). Element-wise
    bounds of the consumed dims are merged (min of low, max of high).

    Args:
        add_batch_rank: Read a data dim as the batch rank.
        add_time_rank: Read a data dim as the time rank.
        time_major: Only when both ranks are added: whether the first data dim is time
            (None: False). Otherwise the layout follows from the rank the input already has.
        scope: Default "rank-reinterpreter".

    Raises:
        RLGraphSpecError: If neither rank is requested, or `time_major` is given for one rank.
        RLGraphSpaceError: At build time, if the input has a requested rank already, has too few
            data dims, or is a container.

    API:
        apply(inputs): The inputs (unchanged data, new space).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> layer = RankReinterpreter(add_time_rank=True)
    >>> out_space = layer.get_preprocessed_space(FloatBox(shape=(4, 2), add_batch_rank=True))
    >>> out_space.shape, out_space.has_batch_rank, out_space.has_time_rank, out_space.time_major
    ((2,), True, True, False)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(4, 2), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", np.ones((1, 4, 2)))).shape
    (1, 4, 2)
    """

    def __init__(self, add_batch_rank: bool = False, add_time_rank: bool = False, time_major: Optional[bool] = None,
                 scope: str = "rank-reinterpreter", **kwargs):
        super().__init__(scope=scope, **kwargs)
        where = type(self).__name__
        self.add_batch_rank = bool(add_batch_rank)
        self.add_time_rank = bool(add_time_rank)
        if not (self.add_batch_rank or self.add_time_rank):
            raise RLGraphSpecError("nothing to reinterpret: pass add_batch_rank and/or add_time_rank", where=where)
        if time_major is not None and not (self.add_batch_rank and self.add_time_rank):
            raise RLGraphSpecError("time_major only applies when both ranks are added", where=f"{where}(time_major)",
                                   received=repr(time_major),
                                   hint="with one added rank the layout follows from the rank the input has.")
        self.time_major = None if time_major is None else bool(time_major)

    def get_preprocessed_space(self, space: Space) -> Space:
        """The space with the requested ranks taken from the leading data dims (see the class doc)."""
        where = f"{self.global_scope}.apply(inputs)"
        if isinstance(space, ContainerSpace):
            raise RLGraphSpaceError(space, "container spaces are not supported", where=where,
                                    hint="reinterpret each part in a DictPreprocessorStack.")
        for wanted, present, name in ((self.add_batch_rank, space.has_batch_rank, "batch"),
                                      (self.add_time_rank, space.has_time_rank, "time")):
            if wanted and present:
                raise RLGraphSpaceError(space, f"the input has a {name} rank already", where=where,
                                        expected=f"a space without a {name} rank")
        consumed = int(self.add_batch_rank) + int(self.add_time_rank)
        if len(space.shape) < consumed:
            raise RLGraphSpaceError(space, f"{consumed} data dim(s) needed to read as ranks", where=where,
                                    expected=f"a data shape of rank >= {consumed}", received=f"shape {space.shape}")
        if consumed == 2:
            time_major = bool(self.time_major)
        else:
            # The existing rank comes first in the data; the new one follows it.
            time_major = space.has_time_rank
        shape = tuple(space.shape[consumed:])
        low = high = None
        if isinstance(space, (FloatBox, IntBox)):
            axes = tuple(range(consumed))
            low, high = np.min(space.low, axis=axes), np.max(space.high, axis=axes)
        return box_like(space, shape, low, high, add_batch_rank=True if self.add_batch_rank else space.has_batch_rank,
                        add_time_rank=True if self.add_time_rank else space.has_time_rank,
                        time_major=time_major and (self.add_time_rank or space.has_time_rank))

    def check_input_spaces(self, input_spaces, action_space=None):
        self.get_preprocessed_space(self.input_space(input_spaces))

    # It moves or keeps ranks that the traced shapes do not show.
    @graph_fn(output_space=preprocessed_space)
    def _graph_fn_apply(self, *inputs):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.identity(inputs[0])
        return inputs[0]
