"""`GumbelSoftmax`: the relaxed (differentiable) one-hot categorical distribution."""
from __future__ import annotations

from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.components.distributions.categorical import Categorical
from rlgraph.components.distributions.distribution import check_values_shape
from rlgraph.spaces import BoolBox, FloatBox, IntBox, Space
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class GumbelSoftmax(Categorical):
    """The Gumbel-softmax (concrete) relaxation of a categorical distribution (Jang et al. 2016,
    https://arxiv.org/abs/1611.01144): samples are points of the simplex that approach one-hot
    vectors as the temperature goes to 0, and are differentiable in the logits.

    Parameters: `logits` [B, ..., n], as for `Categorical`.
    Values (actions): one-hot or relaxed one-hot vectors [B, ..., n] (float, shaped like the logits).

    - sample_stochastic: softmax((logits + g) / temperature), g ~ Gumbel(0, 1) i.i.d., [B, ..., n].
    - sample_deterministic: one_hot(argmax(logits)), [B, ..., n] (dtype of the logits).
    - log_prob(logits, values): the categorical log-probability of the category argmax(values),
      [B, ...]. This is exact for one-hot values and a hard (straight) choice for relaxed ones; it is
      not the density of the relaxed sample (which also depends on the temperature).
    - entropy, kl_divergence: those of the underlying categorical distribution, [B, ...].

    Args:
        temperature: tau > 0; small values give nearly one-hot samples (with high-variance gradients).
        scope: Default "gumbel-softmax".

    Raises:
        RLGraphSpecError: If `temperature` is not a positive number.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> test = ComponentTest(GumbelSoftmax(temperature=0.5), input_spaces=dict(
    ...     parameters=FloatBox(shape=(3,), add_batch_rank=True)), backend="pytorch")
    >>> logits = np.array([[0.0, 3.0, 1.0]], np.float32)
    >>> test.test(("sample_deterministic", logits)).tolist()
    [[0.0, 1.0, 0.0]]
    >>> float(np.round(test.test(("sample_stochastic", logits)).sum(), 5))  # a point of the simplex
    1.0
    """

    def __init__(self, temperature: float = 1.0, scope: str = "gumbel-softmax", **kwargs):
        super().__init__(scope=scope, **kwargs)
        if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) or not temperature > 0:
            raise RLGraphSpecError("temperature must be a positive number", where=f"{type(self).__name__}(temperature)",
                                   received=repr(temperature))
        self.temperature = float(temperature)

    def _stochastic(self, parameters):
        m = backend_maths()
        logits = m.floats(parameters)
        gumbel = -m.log(-m.log(m.uniform_like(logits)))
        return m.softmax((logits + gumbel) / self.temperature)

    def _deterministic(self, parameters):
        m = backend_maths()
        logits = m.floats(parameters)
        return m.one_hot(m.argmax_last(logits), int(logits.shape[-1]), like=logits)

    def _log_prob(self, parameters, values):
        m = backend_maths()
        return m.gather_last(m.log_softmax(m.floats(parameters)), m.argmax_last(m.floats(values)))

    def _check_values(self, space: Space, parameters: Space, where: str) -> None:
        check_values_shape(space, parameters.shape, where, (FloatBox, IntBox, BoolBox),
                           expected=f"a box of shape {tuple(parameters.shape)} (one-hot or relaxed one-hot)")
