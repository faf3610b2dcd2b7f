"""`MixtureDistribution`: a categorical mixture of n sub-distributions ("experts")."""
from __future__ import annotations

from typing import Any, List, Optional

from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.components.distributions.categorical import Categorical
from rlgraph.components.distributions.distribution import Distribution, check_float_box, sub_distribution
from rlgraph.spaces import Dict, FloatBox, Space
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError


class MixtureDistribution(Distribution):
    """p(x) = sum_k w_k p_k(x) with mixture weights w = softmax(logits) over `num_experts` experts.

    Parameters: a Dict {"categorical": logits [B, n], "parameters0": the parameters of expert 0,
    ..., "parameters<n-1>": ...}. Values: one value of the experts' shape ([B, ...]); each expert's
    density is taken over the whole value (its log-prob summed over the value's own dims, so a
    `Normal` expert acts as a diagonal Gaussian, like a `MultivariateNormal`).

    - sample_stochastic: k ~ Categorical(w), then a sample of expert k (every expert is sampled;
      the one drawn is selected per row).
    - sample_deterministic: sum_k w_k d_k, with d_k expert k's `sample_deterministic`: the mixture's
      mean when each d_k is the expert's mean (Normal, MultivariateNormal), as in the original.
    - log_prob: log sum_k exp(log w_k + log p_k(x)) (logsumexp, stable), [B].
    - entropy: the mixture's entropy has no closed form; this returns the upper bound
      H(w) + sum_k w_k H(p_k) = H(k, x), the entropy of the pair (expert, value), [B]. It exceeds
      the true entropy H(x) by H(k | x): exact when the experts do not overlap, up to H(w) too
      high when they coincide. The original raised NotImplementedError.
    - kl_divergence: no closed form: raises `RLGraphError` when built (leave `other_parameters`
      without a space, or switch it off: `switched_off_apis={"kl_divergence"}`).

    Args:
        *sub_distributions: The experts: distributions or specs ("normal", {"type": ...}).
        num_experts: The number of experts. With a single spec, that spec is used for every
            expert; otherwise it must equal the number of specs given.
        scope: Default "mixed-distribution".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import Dict, FloatBox, Tuple
    >>> mix = MixtureDistribution("normal", num_experts=2)
    >>> mean_log_std = Tuple(FloatBox(), FloatBox())
    >>> params = Dict(categorical=FloatBox(shape=(2,)), parameters0=mean_log_std, parameters1=mean_log_std,
    ...               add_batch_rank=True)
    >>> test = ComponentTest(mix, input_spaces=dict(parameters=params), backend="pytorch")
    >>> p = {"categorical": np.log(np.array([[0.25, 0.75]], np.float32)),
    ...      "parameters0": (np.array([-2.0], np.float32), np.zeros(1, np.float32)),
    ...      "parameters1": (np.array([2.0], np.float32), np.zeros(1, np.float32))}
    >>> np.round(test.test(("sample_deterministic", p)).astype(float), 4).tolist()  # 0.25 * -2 + 0.75 * 2
    [1.0]
    """

    def __init__(self, *sub_distributions: Any, num_experts: Optional[int] = None,
                 scope: str = "mixed-distribution", **kwargs):
        super().__init__(scope=scope, **kwargs)
        where = type(self).__name__
        if num_experts is not None and (isinstance(num_experts, bool) or not isinstance(num_experts, int)
                                        or num_experts < 1):
            raise RLGraphSpecError("num_experts must be a positive int", where=f"{where}(num_experts)",
                                   received=repr(num_experts))
        specs = list(sub_distributions)
        if not specs:
            raise RLGraphSpecError("a mixture needs its experts' distributions", where=where,
                                   expected='MixtureDistribution("normal", num_experts=3) or '
                                            'MixtureDistribution(spec_0, spec_1, ...)')
        if num_experts is not None and len(specs) == 1:
            specs = specs * num_experts
        elif num_experts is not None and num_experts != len(specs):
            raise RLGraphSpecError("num_experts does not match the number of sub-distributions",
                                   where=f"{where}(num_experts)", expected=len(specs), received=num_experts)
        self.sub_distributions: List[Distribution] = [
            sub_distribution(spec, f"sub-distribution-{i}", f"{where}(sub_distributions[{i}])")
            for i, spec in enumerate(specs)]
        self.num_experts = len(self.sub_distributions)
        self.categorical = Categorical(scope="main-categorical")
        self.lead_ranks = 1  # Batch (+ time) ranks, read from the parameters' space at build.

    # --- Hooks -------------------------------------------------------------------------------------
    def _logits(self, parameters):
        return backend_maths().floats(parameters["categorical"])

    def _expert_parameters(self, parameters, k: int):
        return parameters[f"parameters{k}"]

    def _stochastic(self, parameters):
        m = backend_maths()
        k = self.categorical._stochastic(self._logits(parameters))
        samples = [d._stochastic(self._expert_parameters(parameters, j)) for j, d in enumerate(self.sub_distributions)]
        out = samples[0]
        for j in range(1, self.num_experts):
            out = m.where(m.expand_last(k == j, m.rank(samples[j])), samples[j], out)
        return out

    def _deterministic(self, parameters):
        m = backend_maths()
        weights = m.softmax(self._logits(parameters))
        out = None
        for j, dist in enumerate(self.sub_distributions):
            value = m.floats(dist._deterministic(self._expert_parameters(parameters, j)))
            term = m.expand_last(weights[..., j], m.rank(value)) * value
            out = term if out is None else out + term
        return out

    def _expert_log_probs(self, parameters, values):
        """log p_k(values) of every expert, stacked on the last axis: [B, n]."""
        m = backend_maths()
        return m.stack_last([m.sum_from(m.floats(d._log_prob(self._expert_parameters(parameters, j), values)),
                                        self.lead_ranks) for j, d in enumerate(self.sub_distributions)])

    def _log_prob(self, parameters, values):
        m = backend_maths()
        log_w = m.log_softmax(self._logits(parameters))
        return m.logsumexp_last(log_w + m.float_like(self._expert_log_probs(parameters, values), log_w))

    def _entropy(self, parameters):
        m = backend_maths()
        logits = self._logits(parameters)
        entropies = m.stack_last([m.sum_from(m.floats(d._entropy(self._expert_parameters(parameters, j))),
                                             self.lead_ranks) for j, d in enumerate(self.sub_distributions)])
        return self.categorical._entropy(logits) + m.sum_last(m.softmax(logits) * m.float_like(entropies, logits))

    def _kl(self, parameters, other_parameters):
        raise RLGraphError("the KL divergence of two mixtures has no closed form", where=f"{self.global_scope}"
                           ".kl_divergence", hint="switch it off: MixtureDistribution(..., "
                                                  "switched_off_apis={'kl_divergence'}).")

    # --- Space checks ------------------------------------------------------------------------------
    def _check_parameters(self, space: Space, where: str) -> None:
        names = ["categorical"] + [f"parameters{j}" for j in range(self.num_experts)]
        if not isinstance(space, Dict) or sorted(space.keys()) != sorted(names):
            raise RLGraphSpaceError(space, "the parameters must be a Dict of the mixture logits and each expert's "
                                    "parameters", where=where, expected=f"a Dict with keys {names}")
        check_float_box(space["categorical"], f"{where}/categorical", "the mixture logits", min_rank=1)
        if space["categorical"].shape[-1] != self.num_experts:
            raise RLGraphSpaceError(space["categorical"], "one mixture logit per expert", where=f"{where}/categorical",
                                    expected=f"shape (..., {self.num_experts})",
                                    received=tuple(space["categorical"].shape))
        logits = space["categorical"]
        self.lead_ranks = int(logits.has_batch_rank) + int(logits.has_time_rank)
        for j, dist in enumerate(self.sub_distributions):
            dist._check_parameters(space[f"parameters{j}"], f"{where}/parameters{j}")

    def _check_values(self, space: Space, parameters: Space, where: str) -> None:
        if not isinstance(space, FloatBox):
            raise RLGraphSpaceError(space, "a mixture's values must be floats", where=where,
                                    expected="a FloatBox of the experts' value shape")
        for j, dist in enumerate(self.sub_distributions):
            dist._check_values(space, parameters[f"parameters{j}"], where)
