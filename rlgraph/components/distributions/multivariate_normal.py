"""`MultivariateNormal`: a Gaussian over d-dimensional vectors with a diagonal covariance."""
from __future__ import annotations

from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.components.distributions.distribution import check_float_pair
from rlgraph.components.distributions.normal import Normal
from rlgraph.spaces import Space


class MultivariateNormal(Normal):
    """A d-dimensional Gaussian N(mean, diag(std^2)), std = exp(log_std), over the last axis.

    Parameters: a tuple (mean, log_std), each [B, ..., d].
    Values (actions): floats [B, ..., d].

    Samples are those of `Normal` ([B, ..., d]); log_prob, entropy and kl_divergence are the sums of
    the per-dimension `Normal` terms over the last axis (exact for a diagonal covariance), [B, ...].

    Args:
        scope: Default "multivariate-normal".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, Tuple
    >>> box = FloatBox(shape=(2,), add_batch_rank=True)
    >>> test = ComponentTest(MultivariateNormal(), input_spaces=dict(parameters=Tuple(box, box)), backend="pytorch")
    >>> params = (np.zeros((1, 2), np.float32), np.zeros((1, 2), np.float32))
    >>> np.round(test.test(("entropy", [params])).astype(float), 4).tolist()  # d * (0.5 + 0.5 log(2 pi))
    [2.8379]
    """

    def __init__(self, scope: str = "multivariate-normal", **kwargs):
        super().__init__(scope=scope, **kwargs)

    def _log_prob(self, parameters, values):
        return backend_maths().sum_last(self._normal_log_prob(parameters, values))

    def _entropy(self, parameters):
        return backend_maths().sum_last(self._normal_entropy(parameters))

    def _kl(self, parameters, other_parameters):
        return backend_maths().sum_last(self._normal_kl(parameters, other_parameters))

    def _check_parameters(self, space: Space, where: str) -> None:
        check_float_pair(space, where, "mean, log_std", min_rank=1)
