"""`Transpose`: swaps the batch and time ranks ([B, T, ...] <-> [T, B, ...])."""
from __future__ import annotations

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.layer import preprocessed_space
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.spaces import ContainerSpace, Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError


class Transpose(PreprocessLayer):
    """Swaps the first two axes of data with batch and time ranks; the output space flips `time_major`.

    Batch-major input [B, T, ...] becomes time-major [T, B, ...] and vice versa; the data dims
    stay as they are.

    Args:
        scope: Default "transpose".

    Raises:
        RLGraphSpaceError: At build time, if the input lacks a batch or a time rank, or is a container.

    API:
        apply(inputs): The inputs with batch and time ranks swapped.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> space = FloatBox(shape=(1,), add_batch_rank=True, add_time_rank=True)
    >>> Transpose().get_preprocessed_space(space).time_major
    True
    >>> test = ComponentTest(Transpose(), input_spaces=dict(inputs=space), backend="pytorch")
    >>> test.test(("apply", np.array([[[1.0], [2.0], [3.0]]]))).shape  # [B=1, T=3, 1] -> [T, B, 1]
    (3, 1, 1)
    """

    def __init__(self, scope: str = "transpose", **kwargs):
        super().__init__(scope=scope, **kwargs)

    def get_preprocessed_space(self, space: Space) -> Space:
        """`space` with `time_major` flipped."""
        self._check(space)
        return space.with_extra_ranks(add_batch_rank=None, add_time_rank=None, time_major=not space.time_major)

    def _check(self, space: Space) -> None:
        where = f"{self.global_scope}.apply(inputs)"
        if isinstance(space, ContainerSpace):
            raise RLGraphSpaceError(space, "container spaces are not supported", where=where,
                                    hint="transpose each part in a DictPreprocessorStack.")
        if not (space.has_batch_rank and space.has_time_rank):
            raise RLGraphSpaceError(space, "transposing needs an input with batch and time ranks", where=where,
                                    expected="add_batch_rank=True, add_time_rank=True")

    def check_input_spaces(self, input_spaces, action_space=None):
        self._check(self.input_space(input_spaces))

    # It moves or keeps ranks that the traced shapes do not show.
    @graph_fn(output_space=preprocessed_space)
    def _graph_fn_apply(self, *inputs):
        x = inputs[0]
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.transpose(x, [1, 0] + list(range(2, len(x.shape))))
        return x.transpose(0, 1)
