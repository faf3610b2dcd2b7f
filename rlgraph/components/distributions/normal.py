"""`Normal`: independent Gaussians, one per action element."""
from __future__ import annotations

import math

from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.components.distributions.distribution import Distribution, check_float_pair, check_values_shape
from rlgraph.spaces import FloatBox, Space

HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


class Normal(Distribution):
    """Element-wise Gaussian distributions N(mean, std^2) with std = exp(log_std).

    Parameters: a tuple (mean, log_std), each [B, ...] of one shape.
    Values (actions): floats shaped like `mean`.

    All results are per element, shaped like the action: log-probs, entropies and KL divergences are
    NOT summed over the action's own dims (`MultivariateNormal` sums over the last axis; sum them
    yourself for a joint log-prob of a multi-dimensional action).

    - sample_stochastic: mean + std * eps, eps ~ N(0, 1) (reparameterised: differentiable in the
      parameters).
    - sample_deterministic: mean.
    - sample_with_noise(parameters, noise): (mean + noise, its log_prob) (gSDE's exploration).
    - log_prob: -0.5 ((x - mean) / std)^2 - log_std - 0.5 log(2 pi).
    - entropy: 0.5 + 0.5 log(2 pi) + log_std.
    - kl_divergence((m1, s1), (m2, s2)): log(std2 / std1) + (std1^2 + (m1 - m2)^2) / (2 std2^2) - 0.5.

    Args:
        scope: Default "normal".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, Tuple
    >>> box = FloatBox(shape=(2,), add_batch_rank=True)
    >>> test = ComponentTest(Normal(), input_spaces=dict(parameters=Tuple(box, box), values=box), backend="pytorch")
    >>> params = (np.array([[0.0, 1.0]], np.float32), np.array([[0.0, 0.0]], np.float32))
    >>> np.round(test.test(("log_prob", [params, np.array([[0.0, 1.0]], np.float32)])).astype(float), 4).tolist()
    [[-0.9189, -0.9189]]
    """

    def __init__(self, scope: str = "normal", **kwargs):
        super().__init__(scope=scope, **kwargs)

    # Per-element maths, shared with the subclasses.
    @staticmethod
    def _mean_log_std(parameters):
        m = backend_maths()
        mean = m.floats(parameters[0])
        return mean, m.float_like(parameters[1], mean)

    def _normal_sample(self, parameters):
        m = backend_maths()
        mean, log_std = self._mean_log_std(parameters)
        return mean + m.exp(log_std) * m.normal_like(mean)

    def _normal_log_prob(self, parameters, values):
        m = backend_maths()
        mean, log_std = self._mean_log_std(parameters)
        z = (m.float_like(values, mean) - mean) * m.exp(-log_std)
        return -0.5 * z * z - log_std - HALF_LOG_2PI

    def _normal_entropy(self, parameters):
        _, log_std = self._mean_log_std(parameters)
        return log_std + (0.5 + HALF_LOG_2PI)

    def _normal_kl(self, parameters, other_parameters):
        m = backend_maths()
        mean_p, log_std_p = self._mean_log_std(parameters)
        mean_q = m.float_like(other_parameters[0], mean_p)
        log_std_q = m.float_like(other_parameters[1], mean_p)
        var_ratio = m.exp(2.0 * (log_std_p - log_std_q))
        z = (mean_p - mean_q) * m.exp(-log_std_q)
        return (log_std_q - log_std_p) + 0.5 * (var_ratio + z * z) - 0.5

    # Hooks.
    def _stochastic(self, parameters):
        return self._normal_sample(parameters)

    def _deterministic(self, parameters):
        return self._mean_log_std(parameters)[0]

    def _with_noise(self, parameters, noise):
        mean, _ = self._mean_log_std(parameters)
        action = mean + backend_maths().float_like(noise, mean)
        return action, self._normal_log_prob(parameters, action)

    def _log_prob(self, parameters, values):
        return self._normal_log_prob(parameters, values)

    def _entropy(self, parameters):
        return self._normal_entropy(parameters)

    def _kl(self, parameters, other_parameters):
        return self._normal_kl(parameters, other_parameters)

    def _check_parameters(self, space: Space, where: str) -> None:
        check_float_pair(space, where, "mean, log_std")

    def _check_values(self, space: Space, parameters: Space, where: str) -> None:
        check_values_shape(space, parameters[0].shape, where, (FloatBox,),
                           expected=f"FloatBox with the mean's shape {tuple(parameters[0].shape)}")
