"""`Categorical`: a distribution over n categories, parameterised by logits."""
from __future__ import annotations

from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.components.distributions.distribution import Distribution, check_float_box, check_values_shape
from rlgraph.spaces import IntBox, Space


class Categorical(Distribution):
    """A categorical distribution: p_i = softmax(logits)_i over the last axis.

    Parameters: `logits` [B, ..., n] (unnormalised log-probabilities; -inf masks a category).
    Values (actions): int32 category indices [B, ...] (the logits' shape without the last axis).

    - sample_stochastic: i ~ p, drawn with the Gumbel-max trick argmax(logits + g), g ~ Gumbel(0, 1)
      (exact; works for any number of leading ranks). int32 [B, ...].
    - sample_deterministic: argmax(logits), int32 [B, ...].
    - log_prob(logits, values): log_softmax(logits)[values], [B, ...] (one number per action).
    - entropy: -sum_i p_i log p_i, [B, ...].
    - kl_divergence(logits_p, logits_q): sum_i p_i (log p_i - log q_i), [B, ...].

    Args:
        scope: Default "categorical".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, IntBox
    >>> test = ComponentTest(Categorical(), input_spaces=dict(parameters=FloatBox(shape=(2,), add_batch_rank=True),
    ...                      values=IntBox(2, add_batch_rank=True)), backend="pytorch")
    >>> logits = np.log(np.array([[0.25, 0.75]], np.float32))
    >>> np.round(test.test(("log_prob", [logits, np.array([1])])).astype(float), 4).tolist()  # log(0.75)
    [-0.2877]
    """

    def __init__(self, scope: str = "categorical", **kwargs):
        super().__init__(scope=scope, **kwargs)

    def _stochastic(self, parameters):
        m = backend_maths()
        logits = m.floats(parameters)
        gumbel = -m.log(-m.log(m.uniform_like(logits)))
        return m.argmax_last(logits + gumbel)

    def _deterministic(self, parameters):
        return backend_maths().argmax_last(parameters)

    def _log_prob(self, parameters, values):
        m = backend_maths()
        return m.gather_last(m.log_softmax(m.floats(parameters)), values)

    def _entropy(self, parameters):
        m = backend_maths()
        log_p = m.log_softmax(m.floats(parameters))
        p = m.exp(log_p)
        # p log p -> 0 where p = 0 (a -inf logit); the product itself would give nan.
        return -m.sum_last(p * m.where(p > 0, log_p, m.zeros_like(log_p)))

    def _kl(self, parameters, other_parameters):
        m = backend_maths()
        log_p = m.log_softmax(m.floats(parameters))
        log_q = m.log_softmax(m.float_like(other_parameters, log_p))
        p = m.exp(log_p)
        return m.sum_last(p * m.where(p > 0, log_p - log_q, m.zeros_like(log_p)))

    def _check_parameters(self, space: Space, where: str) -> None:
        check_float_box(space, where, "the logits", min_rank=1)

    def _check_values(self, space: Space, parameters: Space, where: str) -> None:
        check_values_shape(space, parameters.shape[:-1], where, (IntBox,),
                           expected=f"IntBox with shape {tuple(parameters.shape[:-1])} (category indices)")
