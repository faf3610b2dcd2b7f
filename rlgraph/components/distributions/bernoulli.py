"""`Bernoulli`: independent True/False distributions, parameterised by logits."""
from __future__ import annotations

from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.components.distributions.distribution import Distribution, check_float_box, check_values_shape
from rlgraph.spaces import BoolBox, FloatBox, IntBox, Space


class Bernoulli(Distribution):
    """Element-wise Bernoulli distributions: P(True) = p = sigmoid(logits).

    Parameters: `logits` [B, ...] (log(p / (1 - p))).
    Values (actions): bools shaped like the logits (0/1 ints or floats are accepted too).

    All results are per element, shaped like the logits (not summed over the action's dims).

    - sample_stochastic: u < p with u ~ U[0, 1), bool.
    - sample_deterministic: p > 0.5 (logits > 0), bool; p = 0.5 gives False.
    - log_prob: x * logits - softplus(logits) (= log p for True, log(1 - p) for False).
    - entropy: softplus(logits) - p * logits.
    - kl_divergence(l_p, l_q): p (l_p - l_q) - softplus(l_p) + softplus(l_q).

    Args:
        scope: Default "bernoulli".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import BoolBox, FloatBox
    >>> test = ComponentTest(Bernoulli(), input_spaces=dict(parameters=FloatBox(add_batch_rank=True),
    ...                      values=BoolBox(add_batch_rank=True)), backend="pytorch")
    >>> logits = np.array([0.0, 2.0], np.float32)
    >>> test.test(("sample_deterministic", logits)).tolist()
    [False, True]
    >>> log_probs = test.test(("log_prob", [logits, np.array([True, False])]))  # log(0.5), log(1 - sigmoid(2))
    >>> np.round(log_probs.astype(float), 4).tolist()
    [-0.6931, -2.1269]
    """

    def __init__(self, scope: str = "bernoulli", **kwargs):
        super().__init__(scope=scope, **kwargs)

    def _stochastic(self, parameters):
        m = backend_maths()
        logits = m.floats(parameters)
        return m.uniform_like(logits) < m.sigmoid(logits)

    def _deterministic(self, parameters):
        return backend_maths().floats(parameters) > 0

    def _log_prob(self, parameters, values):
        m = backend_maths()
        logits = m.floats(parameters)
        return m.float_like(values, logits) * logits - m.softplus(logits)

    def _entropy(self, parameters):
        m = backend_maths()
        logits = m.floats(parameters)
        return m.softplus(logits) - m.sigmoid(logits) * logits

    def _kl(self, parameters, other_parameters):
        m = backend_maths()
        logits_p = m.floats(parameters)
        logits_q = m.float_like(other_parameters, logits_p)
        return m.sigmoid(logits_p) * (logits_p - logits_q) - m.softplus(logits_p) + m.softplus(logits_q)

    def _check_parameters(self, space: Space, where: str) -> None:
        check_float_box(space, where, "the logits")

    def _check_values(self, space: Space, parameters: Space, where: str) -> None:
        check_values_shape(space, parameters.shape, where, (BoolBox, IntBox, FloatBox),
                           expected=f"BoolBox with the logits' shape {tuple(parameters.shape)}")
