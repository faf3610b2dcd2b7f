"""`SquashedNormal`: a tanh-squashed Gaussian for bounded continuous actions (as in SAC)."""
from __future__ import annotations

import math

from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.components.distributions.distribution import check_bounds
from rlgraph.components.distributions.normal import Normal

EPSILON = 1e-6  # Values are kept in (-1 + EPSILON, 1 - EPSILON) (tanh scale) before atanh.
LOG_2 = math.log(2.0)


class SquashedNormal(Normal):
    """Element-wise a = low + (high - low) * (tanh(u) + 1) / 2 with u ~ N(mean, std^2), std = exp(log_std)
    (Haarnoja et al. 2018, https://arxiv.org/abs/1801.01290, appendix C).

    Parameters: a tuple (mean, log_std), each [B, ...] of one shape (those of the Gaussian u).
    Values (actions): floats in [low, high] shaped like `mean`.

    All results are per element, shaped like the action (sum them over the action's dims for a joint
    log-prob, as SAC does). By the change of variables,

        log p(a) = log N(u; mean, std) - log(1 - tanh(u)^2) - log((high - low) / 2),
        log(1 - tanh(u)^2) = 2 (log 2 - u - softplus(-2 u))     (stable for large |u|).

    - sample_stochastic: the squashed reparameterised Gaussian sample (differentiable in the parameters).
    - sample_with_noise(parameters, noise): squash(mean + noise) and its log_prob (gSDE's exploration).
    - sample_deterministic: low + (high - low) * (tanh(mean) + 1) / 2.
    - sample_and_log_prob: the log-prob is computed from the drawn u itself (no atanh round trip).
    - log_prob(parameters, values): u = atanh(y), y the value mapped to [-1, 1] and clipped to
      [-1 + 1e-6, 1 - 1e-6] (so |u| <= 7.25 and values on the bounds give finite log-probs).
    - entropy: no closed form exists; this returns the one-sample Monte-Carlo estimate -log p(a)
      with a freshly drawn a (stochastic, unbiased).
    - kl_divergence: the Gaussian KL divergence of the u's (exact: the squashing is a bijection).

    Args:
        low: The lower bound of the actions.
        high: The upper bound (> low).
        scope: Default "squashed-normal".

    Raises:
        RLGraphSpecError: If the bounds are not finite numbers with low < high.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, Tuple
    >>> box = FloatBox(add_batch_rank=True)
    >>> test = ComponentTest(SquashedNormal(low=0.0, high=2.0), input_spaces=dict(parameters=Tuple(box, box)),
    ...                      backend="pytorch")
    >>> params = (np.array([0.0, 100.0], np.float32), np.array([0.0, 0.0], np.float32))
    >>> test.test(("sample_deterministic", [params])).tolist()
    [1.0, 2.0]
    """

    def __init__(self, low: float = -1.0, high: float = 1.0, scope: str = "squashed-normal", **kwargs):
        super().__init__(scope=scope, **kwargs)
        self.low, self.high = check_bounds(low, high, type(self).__name__)
        self._log_half_range = math.log((self.high - self.low) / 2.0)

    def _squash(self, u):
        return self.low + (self.high - self.low) * (backend_maths().tanh(u) + 1.0) / 2.0

    def _squashed_log_prob(self, parameters, u):
        """log p(a) of a = squash(u), per element."""
        m = backend_maths()
        log_det = 2.0 * (LOG_2 - u - m.softplus(-2.0 * u)) + self._log_half_range
        return self._normal_log_prob(parameters, u) - log_det

    def _stochastic(self, parameters):
        return self._squash(self._normal_sample(parameters))

    def _deterministic(self, parameters):
        return self._squash(self._mean_log_std(parameters)[0])

    def _sample_and_log_prob(self, parameters, deterministic: bool):
        u = self._mean_log_std(parameters)[0] if deterministic else self._normal_sample(parameters)
        return self._squash(u), self._squashed_log_prob(parameters, u)

    def _with_noise(self, parameters, noise):
        m = backend_maths()
        mean = self._mean_log_std(parameters)[0]
        u = mean + m.float_like(noise, mean)
        return self._squash(u), self._squashed_log_prob(parameters, u)

    def _log_prob(self, parameters, values):
        m = backend_maths()
        mean, _ = self._mean_log_std(parameters)
        y = 2.0 * (m.float_like(values, mean) - self.low) / (self.high - self.low) - 1.0
        y = m.clip(y, -1.0 + EPSILON, 1.0 - EPSILON)
        u = 0.5 * (m.log1p(y) - m.log1p(-y))  # atanh(y)
        return self._squashed_log_prob(parameters, u)

    def _entropy(self, parameters):
        return -self._sample_and_log_prob(parameters, deterministic=False)[1]
