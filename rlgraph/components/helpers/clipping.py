"""`Clipping`: clips values to [-clip_value, clip_value] when a clip value is set."""
from __future__ import annotations

from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class Clipping(Component):
    """Clips values elementwise to [-clip_value, clip_value]; with clip_value = 0 they pass unchanged.

    Typical uses are reward clipping (DQN, https://doi.org/10.1038/nature14236, clips to [-1, 1])
    and clipping the advantages or TD errors of a loss. Container (Dict/Tuple) values are clipped
    per leaf.

    Args:
        clip_value: The bound (>= 0); 0 switches clipping off.
        scope: Default "clipping".

    Raises:
        RLGraphSpecError: If `clip_value` is not a number >= 0.

    API:
        clip_if_needed(values) -> values clipped (shaped like `values`).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> test = ComponentTest(Clipping(clip_value=1.0), input_spaces=dict(values=FloatBox(add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("clip_if_needed", np.array([-3.0, 0.5, 2.0], np.float32))).tolist()
    [-1.0, 0.5, 1.0]
    """

    def __init__(self, clip_value: float = 0.0, scope: str = "clipping", **kwargs):
        super().__init__(scope=scope, **kwargs)
        if isinstance(clip_value, bool) or not isinstance(clip_value, (int, float)) or not clip_value >= 0.0:
            raise RLGraphSpecError("clip_value must be a number >= 0", where=f"{type(self).__name__}(clip_value)",
                                   expected="a float >= 0 (0: no clipping)", received=repr(clip_value))
        self.clip_value = float(clip_value)

    @rlgraph_api
    def clip_if_needed(self, values):
        """Returns `values` clipped to [-clip_value, clip_value] (unchanged if clip_value is 0)."""
        return self._graph_fn_clip_if_needed(values)

    @graph_fn(flatten_ops=True, split_ops=True)
    def _graph_fn_clip_if_needed(self, values):
        if self.clip_value == 0.0:
            return values
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.clip_by_value(values, tf.cast(-self.clip_value, values.dtype),
                                    tf.cast(self.clip_value, values.dtype))
        return values.clamp(-self.clip_value, self.clip_value)
