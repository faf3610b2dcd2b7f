"""`CategoricalCrossEntropyLoss`: softmax cross-entropy of logits against class indices or distributions."""
from __future__ import annotations

from rlgraph.backend_system import get_backend
from rlgraph.components.loss_functions.loss_function import LossFunction
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError


class CategoricalCrossEntropyLoss(LossFunction):
    """The categorical cross-entropy -sum_k labels_k * log_softmax(logits)_k per batch item.

    `predictions` are unnormalised logits [B, num_categories]. `labels` are either class indices
    [B] (an IntBox; converted to one-hot) or label distributions [B, num_categories] (a FloatBox,
    each row summing to 1; they are constants, no gradient flows into them). With a time rank the
    per-step values are averaged over time, so `loss_per_item` is always [B].

    Args:
        scope: Default "categorical-cross-entropy-loss".

    API:
        loss(predictions, labels): (total_loss, loss_per_item): the batch mean and [B].
        loss_per_item(predictions, labels): [B].

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, IntBox
    >>> spaces = dict(predictions=FloatBox(shape=(2,), add_batch_rank=True), labels=IntBox(2, add_batch_rank=True))
    >>> test = ComponentTest(CategoricalCrossEntropyLoss(), input_spaces=spaces, backend="pytorch")
    >>> # Equal logits: -log(1/2) = log 2 for either class.
    >>> test.test(("loss_per_item", [np.zeros((2, 2), np.float32), np.array([0, 1])])).astype(float).round(4).tolist()
    [0.6931, 0.6931]
    """

    def __init__(self, scope: str = "categorical-cross-entropy-loss", **kwargs):
        super().__init__(scope=scope, **kwargs)
        self.time_axis = None
        self.num_categories = None

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        predictions, labels = input_spaces.get("predictions"), input_spaces.get("labels")
        where = f"{self.global_scope}.loss"
        if predictions is not None:
            if not isinstance(predictions, FloatBox) or len(predictions.shape) != 1 or not predictions.has_batch_rank:
                raise RLGraphSpaceError(predictions, "predictions must be logits [B, num_categories]",
                                        where=f"{where}(predictions)",
                                        expected="FloatBox(shape=(num_categories,), add_batch_rank=True)")
            self.num_categories = int(predictions.shape[0])
            if predictions.has_time_rank:
                self.time_axis = 0 if predictions.time_major else 1
        if predictions is None or labels is None:
            return
        ranks_match = labels.has_batch_rank and labels.has_time_rank == predictions.has_time_rank and \
            bool(labels.time_major) == bool(predictions.time_major)
        if isinstance(labels, IntBox):
            ok = ranks_match and labels.shape == () and labels.num_categories in (0, self.num_categories)
            expected = f"IntBox({self.num_categories}) with the ranks of the predictions"
        else:
            ok = isinstance(labels, FloatBox) and ranks_match and labels.shape == predictions.shape
            expected = f"FloatBox(shape=({self.num_categories},)) with the ranks of the predictions"
        if not ok:
            raise RLGraphSpaceError(labels, "labels do not fit the logits", where=f"{where}(labels)",
                                    expected=expected + " (class indices [B] or distributions [B, n])")

    @rlgraph_api
    def loss(self, predictions, labels):
        loss_per_item = self.loss_per_item(predictions, labels)
        return self.loss_average(loss_per_item), loss_per_item

    @rlgraph_api
    def _graph_fn_loss_per_item(self, predictions, labels):
        if get_backend() == "tf":
            import tensorflow as tf
            if labels.dtype.is_integer:
                labels = tf.one_hot(labels, self.num_categories, dtype=predictions.dtype)
            labels = tf.stop_gradient(tf.cast(labels, predictions.dtype))
            cross_entropy = -tf.reduce_sum(labels * tf.nn.log_softmax(predictions, axis=-1), axis=-1)
            return cross_entropy if self.time_axis is None else tf.reduce_mean(cross_entropy, axis=self.time_axis)
        import torch
        if not torch.is_floating_point(labels):
            labels = torch.nn.functional.one_hot(labels.long(), self.num_categories)
        labels = labels.detach().to(predictions.dtype)
        cross_entropy = -(labels * torch.log_softmax(predictions, dim=-1)).sum(dim=-1)
        return cross_entropy if self.time_axis is None else cross_entropy.mean(dim=self.time_axis)
