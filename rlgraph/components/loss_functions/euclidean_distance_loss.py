"""`EuclideanDistanceLoss`: the L2 distance between predictions and labels, per batch item."""
from __future__ import annotations

from rlgraph.backend_system import get_backend
from rlgraph.components.loss_functions.loss_function import LossFunction
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError


class EuclideanDistanceLoss(LossFunction):
    """The Euclidean (L2) distance d = sqrt(sum_j (prediction_j - label_j)^2) per batch item.

    The sum runs over all non-batch axes of one item (for [B] inputs d = |prediction - label|).
    With a time rank ([B, T, ...] or [T, B, ...]) the distance is taken per step and averaged over
    time, so `loss_per_item` is always [B]. The labels are constants (no gradient flows into them),
    and the gradient at d = 0 is 0 (not NaN).

    Args:
        scope: Default "euclidean-distance-loss".

    API:
        loss(predictions, labels): (total_loss, loss_per_item): the batch mean and [B].
        loss_per_item(predictions, labels): [B].

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> f = FloatBox(shape=(2,), add_batch_rank=True)
    >>> test = ComponentTest(EuclideanDistanceLoss(), input_spaces=dict(predictions=f, labels=f), backend="pytorch")
    >>> total, per_item = test.test(("loss", [np.array([[3.0, 4.0], [1.0, 1.0]], np.float32),
    ...                                       np.zeros((2, 2), np.float32)]))
    >>> per_item.astype(float).round(4).tolist(), round(float(total), 4)
    ([5.0, 1.4142], 3.2071)
    """

    def __init__(self, scope: str = "euclidean-distance-loss", **kwargs):
        super().__init__(scope=scope, **kwargs)
        self.time_axis = None
        self.item_rank = 0  # Ranks of one step's data (the axes summed over).

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        predictions, labels = input_spaces.get("predictions"), input_spaces.get("labels")
        where = f"{self.global_scope}.loss"
        if predictions is not None:
            if not isinstance(predictions, FloatBox) or not predictions.has_batch_rank:
                raise RLGraphSpaceError(predictions, "predictions must be a float box with a batch rank",
                                        where=f"{where}(predictions)", expected="FloatBox(..., add_batch_rank=True)")
            self.item_rank = len(predictions.shape)
            if predictions.has_time_rank:
                self.time_axis = 0 if predictions.time_major else 1
        if predictions is not None and labels is not None:
            same = isinstance(labels, (FloatBox, IntBox)) and labels.shape == predictions.shape and \
                labels.has_batch_rank and labels.has_time_rank == predictions.has_time_rank and \
                bool(labels.time_major) == bool(predictions.time_major)
            if not same:
                raise RLGraphSpaceError(labels, "labels must have the shape and ranks of the predictions",
                                        where=f"{where}(labels)", expected=predictions)

    @rlgraph_api
    def loss(self, predictions, labels):
        loss_per_item = self.loss_per_item(predictions, labels)
        return self.loss_average(loss_per_item), loss_per_item

    @rlgraph_api
    def _graph_fn_loss_per_item(self, predictions, labels):
        lead = 1 if self.time_axis is None else 2
        axes = list(range(lead, lead + self.item_rank))
        if get_backend() == "tf":
            import tensorflow as tf
            diff = predictions - tf.stop_gradient(tf.cast(labels, predictions.dtype))
            squared = tf.reduce_sum(tf.square(diff), axis=axes) if axes else tf.square(diff)
            positive = squared > 0.0
            # sqrt'(0) is infinite; the inner where keeps that out of the gradient.
            distance = tf.where(positive, tf.sqrt(tf.where(positive, squared, tf.ones_like(squared))), 0.0)
            return distance if self.time_axis is None else tf.reduce_mean(distance, axis=self.time_axis)
        import torch
        diff = predictions - labels.detach().to(predictions.dtype)
        squared = torch.square(diff).sum(dim=axes) if axes else torch.square(diff)
        positive = squared > 0.0
        distance = torch.where(positive, torch.sqrt(torch.where(positive, squared, torch.ones_like(squared))),
                               torch.zeros_like(squared))
        return distance if self.time_axis is None else distance.mean(dim=self.time_axis)
