"""`LossFunction`: the base of all loss components (total loss and loss per batch item)."""
from __future__ import annotations

from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class LossFunction(Component):
    """A loss: subclasses define `loss_per_item(...)` ([B] values) and `loss(...)`, which returns
    `(total_loss, loss_per_item)` with the total the batch mean (`loss_average`).

    Args:
        discount: The discount factor gamma in [0, 1].
        scope: Default "loss-function".

    API:
        loss_average(loss_per_item): mean over the batch (any further ranks averaged first).
    """

    def __init__(self, discount: float = 0.98, scope: str = "loss-function", **kwargs):
        super().__init__(scope=scope, **kwargs)
        if not isinstance(discount, (int, float)) or isinstance(discount, bool) or not 0.0 <= discount <= 1.0:
            raise RLGraphSpecError("discount must be a number in [0, 1]", where=f"{type(self).__name__}(discount)",
                                   received=repr(discount))
        self.discount = float(discount)

    @rlgraph_api(must_be_complete=False)
    def loss_average(self, loss_per_item):
        return self._graph_fn_loss_average(loss_per_item)

    @graph_fn
    def _graph_fn_loss_average(self, loss_per_item):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.reduce_mean(loss_per_item)
        return loss_per_item.mean()
