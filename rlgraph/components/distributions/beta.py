"""`Beta`: element-wise Beta distributions, scaled to an interval [low, high]."""
from __future__ import annotations

import math

from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.components.distributions.distribution import (Distribution, check_bounds, check_float_pair,
                                                         check_values_shape)
from rlgraph.spaces import FloatBox, Space

EPSILON = 1e-6  # Values are kept in [EPSILON, 1 - EPSILON] (unit scale) so that log-probs stay finite.


class Beta(Distribution):
    """Element-wise Beta(alpha, beta) distributions on [0, 1], mapped affinely to [low, high]
    (bounded continuous actions; Chou et al. 2017, http://proceedings.mlr.press/v70/chou17a.html).

    Parameters: a tuple (alpha, beta), each [B, ...] of one shape, all > 0 (e.g. 1 + softplus(x)
    from a network keeps both > 1, where the mode is well defined).
    Values (actions): floats in [low, high] shaped like `alpha`.

    With x = (a - low) / (high - low) the unit-interval value, all results are per element:

    - sample_stochastic: low + (high - low) * x, x = g1 / (g1 + g2), g1 ~ Gamma(alpha), g2 ~ Gamma(beta)
      (reparameterised gamma draws: differentiable in the parameters).
    - sample_deterministic: the mode (alpha - 1) / (alpha + beta - 2) where alpha > 1 and beta > 1,
      else the mean alpha / (alpha + beta) (the mode is then 0, 1 or not unique), scaled.
    - log_prob: (alpha - 1) log x + (beta - 1) log(1 - x) - log B(alpha, beta) - log(high - low), with x
      clipped to [1e-6, 1 - 1e-6] so that values on the bounds give finite log-probs.
    - entropy: log B(a, b) - (a - 1) psi(a) - (b - 1) psi(b) + (a + b - 2) psi(a + b) + log(high - low).
    - kl_divergence: the Beta KL divergence (unchanged by the common scaling).

    Args:
        low: The lower bound of the actions.
        high: The upper bound (> low).
        scope: Default "beta".

    Raises:
        RLGraphSpecError: If the bounds are not numbers with low < high.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, Tuple
    >>> box = FloatBox(add_batch_rank=True)
    >>> test = ComponentTest(Beta(low=-1.0, high=1.0), input_spaces=dict(parameters=Tuple(box, box)),
    ...                      backend="pytorch")
    >>> params = (np.array([2.0, 3.0], np.float32), np.array([2.0, 1.5], np.float32))
    >>> np.round(test.test(("sample_deterministic", [params])).astype(float), 4).tolist()  # modes 0.5 and 0.8, scaled
    [0.0, 0.6]
    """

    def __init__(self, low: float = 0.0, high: float = 1.0, scope: str = "beta", **kwargs):
        super().__init__(scope=scope, **kwargs)
        self.low, self.high = check_bounds(low, high, type(self).__name__)

    def _alpha_beta(self, parameters):
        m = backend_maths()
        alpha = m.floats(parameters[0])
        return alpha, m.float_like(parameters[1], alpha)

    def _scale(self, x):
        return self.low + (self.high - self.low) * x

    def _stochastic(self, parameters):
        m = backend_maths()
        alpha, beta = self._alpha_beta(parameters)
        g1, g2 = m.standard_gamma(alpha), m.standard_gamma(beta)
        return self._scale(g1 / (g1 + g2))

    def _deterministic(self, parameters):
        m = backend_maths()
        alpha, beta = self._alpha_beta(parameters)
        has_mode = (alpha > 1.0) & (beta > 1.0)
        x = m.where(has_mode, (alpha - 1.0) / (alpha + beta - 2.0), alpha / (alpha + beta))
        return self._scale(x)

    @staticmethod
    def _log_beta_fn(alpha, beta):
        m = backend_maths()
        return m.lgamma(alpha) + m.lgamma(beta) - m.lgamma(alpha + beta)

    def _log_prob(self, parameters, values):
        m = backend_maths()
        alpha, beta = self._alpha_beta(parameters)
        x = m.clip((m.float_like(values, alpha) - self.low) / (self.high - self.low), EPSILON, 1.0 - EPSILON)
        return (alpha - 1.0) * m.log(x) + (beta - 1.0) * m.log1p(-x) - self._log_beta_fn(alpha, beta) - \
            math.log(self.high - self.low)

    def _entropy(self, parameters):
        m = backend_maths()
        alpha, beta = self._alpha_beta(parameters)
        return self._log_beta_fn(alpha, beta) - (alpha - 1.0) * m.digamma(alpha) - (beta - 1.0) * m.digamma(beta) + \
            (alpha + beta - 2.0) * m.digamma(alpha + beta) + math.log(self.high - self.low)

    def _kl(self, parameters, other_parameters):
        m = backend_maths()
        a1, b1 = self._alpha_beta(parameters)
        a2, b2 = m.float_like(other_parameters[0], a1), m.float_like(other_parameters[1], a1)
        return self._log_beta_fn(a2, b2) - self._log_beta_fn(a1, b1) + (a1 - a2) * m.digamma(a1) + \
            (b1 - b2) * m.digamma(b1) + (a2 - a1 + b2 - b1) * m.digamma(a1 + b1)

    def _check_parameters(self, space: Space, where: str) -> None:
        check_float_pair(space, where, "alpha, beta")

    def _check_values(self, space: Space, parameters: Space, where: str) -> None:
        check_values_shape(space, parameters[0].shape, where, (FloatBox,),
                           expected=f"FloatBox with alpha's shape {tuple(parameters[0].shape)}")
