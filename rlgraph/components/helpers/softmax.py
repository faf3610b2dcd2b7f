"""`SoftMax`: probabilities and log-probabilities from logits, over the last axis."""
from __future__ import annotations

from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.utils.decorators import graph_fn, rlgraph_api


class SoftMax(Component):
    """Turns logits [..., num_categories] into probabilities and log-probabilities over the last axis.

    The log-probabilities come from log_softmax (logits - logsumexp(logits)), so they stay finite
    where a probability underflows to 0, and large logits do not overflow. Container (Dict/Tuple)
    logits are handled per leaf and give containers of the same structure.

    Args:
        scope: Default "softmax".

    API:
        get_probabilities_and_log_probs(logits) -> (probabilities, log_probs), each shaped like `logits`.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> test = ComponentTest(SoftMax(), input_spaces=dict(logits=FloatBox(shape=(2,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> probs, log_probs = test.test(("get_probabilities_and_log_probs", np.array([[0.0, 0.0]], np.float32)))
    >>> probs.tolist(), np.round(log_probs.astype(float), 4).tolist()
    ([[0.5, 0.5]], [[-0.6931, -0.6931]])
    """

    def __init__(self, scope: str = "softmax", **kwargs):
        super().__init__(scope=scope, **kwargs)

    @rlgraph_api
    def get_probabilities_and_log_probs(self, logits):
        """Returns (probabilities, log_probs), each shaped (and nested) like `logits`."""
        return self._graph_fn_get_probabilities_and_log_probs(logits)

    @graph_fn(returns=2, flatten_ops=True, split_ops=True)
    def _graph_fn_get_probabilities_and_log_probs(self, logits):
        if get_backend() == "tf":
            import tensorflow as tf
            if not logits.dtype.is_floating:
                logits = tf.cast(logits, tf.float32)
            log_probs = tf.nn.log_softmax(logits, axis=-1)
            return tf.nn.softmax(logits, axis=-1), log_probs
        import torch
        if not logits.is_floating_point():
            logits = logits.to(torch.float32)
        return torch.softmax(logits, dim=-1), torch.log_softmax(logits, dim=-1)
