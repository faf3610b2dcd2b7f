"""`LossFunction`: the base of all loss components (total loss and loss per batch item)."""
from __future__ import annotations

from typing import Any, Dict, Tuple

from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.keyed import check_keys
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class LossFunction(Component):
    """A loss: subclasses define `loss_per_item(...)` ([B] values) and `loss(...)`, which returns
    `(total_loss, loss_per_item)` with the total the batch mean (`loss_average`).

    Keyed inputs: a loss also reads its inputs as one record (TorchRL's losses read one keyed
    TensorDict): `record_keys` are the keys it needs, `optional_record_keys` those it may read,
    both listed with their shapes in the subclass's docstring, and `loss_from_record(record)`
    (defined by each subclass) computes from the record what the positional reference API
    computes from its arguments. `read_record` checks a record's keys while tracing.

    Args:
        discount: The discount factor gamma in [0, 1].
        scope: Default "loss-function".

    API:
        loss_average(loss_per_item): mean over the batch (any further ranks averaged first).
    """

    #: The keys `loss_from_record` needs and those it may read (see each subclass's docstring).
    record_keys: Tuple[str, ...] = ()
    optional_record_keys: Tuple[str, ...] = ()

    def __init__(self, discount: float = 0.98, scope: str = "loss-function", **kwargs):
        super().__init__(scope=scope, **kwargs)
        if not isinstance(discount, (int, float)) or isinstance(discount, bool) or not 0.0 <= discount <= 1.0:
            raise RLGraphSpecError("discount must be a number in [0, 1]", where=f"{type(self).__name__}(discount)",
                                   received=repr(discount))
        self.discount = float(discount)

    def read_record(self, record: Any, api_name: str = "loss_from_record") -> Dict[str, Any]:
        """The values of `record` under `record_keys` and `optional_record_keys` (None for an
        optional key it lacks), after checking its keys; called in python while tracing.

        Raises:
            RLGraphError: Naming this component and API method, for a record that is not a dict,
                lacks a required key or has a key this loss does not read.
        """
        check_keys(record, self.record_keys, self.optional_record_keys, where=f"{self.global_scope}.{api_name}(record)",
                   what=f"the record of {type(self).__name__}")
        return {key: record.get(key) for key in self.record_keys + self.optional_record_keys}

    @rlgraph_api(must_be_complete=False)
    def loss_average(self, loss_per_item):
        return self._graph_fn_loss_average(loss_per_item)

    @graph_fn
    def _graph_fn_loss_average(self, loss_per_item):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.reduce_mean(loss_per_item)
        return loss_per_item.mean()
