"""`JointCumulativeDistribution`: independent distributions over the leaves of a container action."""
from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any, Callable, Dict

from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.components.distributions.distribution import Distribution, sub_distribution
from rlgraph.spaces import ContainerSpace, Space
from rlgraph.utils.nest import flatten_op, unflatten_op
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

_TUPLE_SEGMENT = re.compile(r"^_T(\d+)_$")


class JointCumulativeDistribution(Distribution):
    """The product of independent distributions, one per leaf (auto-key) of a container action:
    p(a) = prod_k p_k(a_k).

    Parameters: a container (Dict/Tuple) that holds, at each key of `distribution_specs`, the
    parameters of that key's distribution (themselves a tuple for e.g. a Normal's (mean, log_std)).
    Values (actions): the container of actions, with one leaf at each key.

    - sample_stochastic / sample_deterministic / draw: the container of the per-key samples.
    - log_prob: sum_k log p_k(a_k), each term first summed over the key's own action dims, so
      the result has only the batch (and time) ranks: [B] (or [B, T]).
    - entropy: sum_k H(p_k), likewise [B] (exact: the keys are independent).
    - kl_divergence: sum_k KL(p_k || q_k), likewise [B] (exact for independent keys).

    Args:
        distribution_specs: {key: distribution or its spec}. A key is an auto-key ("/a",
            "/b/ba", "/_T0_") or a top-level dict key ("a"). Specs become distributions scoped
            "sub-distribution-<i>"; they are used inside this component's graph functions (no
            sub-components, no variables).
        scope: Default "joint-cumulative-distribution".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import Dict, FloatBox, IntBox, Tuple
    >>> dist = JointCumulativeDistribution({"a": "categorical", "b": "normal"})
    >>> params = Dict(a=FloatBox(shape=(2,)), b=Tuple(FloatBox(), FloatBox()), add_batch_rank=True)
    >>> actions = Dict(a=IntBox(2), b=FloatBox(), add_batch_rank=True)
    >>> test = ComponentTest(dist, input_spaces=dict(parameters=params, values=actions), backend="pytorch")
    >>> p = {"a": np.zeros((1, 2), np.float32), "b": (np.zeros(1, np.float32), np.zeros(1, np.float32))}
    >>> log_p = test.test(("log_prob", [p, {"a": np.array([1]), "b": np.zeros(1, np.float32)}]))
    >>> np.round(log_p.astype(float), 4).tolist()  # log(1/2) + log N(0; 0, 1)
    [-1.6121]
    """

    def __init__(self, distribution_specs: Dict[str, Any], scope: str = "joint-cumulative-distribution", **kwargs):
        super().__init__(scope=scope, **kwargs)
        where = f"{type(self).__name__}(distribution_specs)"
        if not isinstance(distribution_specs, dict) or not distribution_specs:
            raise RLGraphSpecError("distribution_specs must be a non-empty dict {key: distribution spec}",
                                   where=where, received=repr(distribution_specs))
        self.flattened_sub_distributions: Dict[str, Distribution] = OrderedDict()
        for index, (key, spec) in enumerate(distribution_specs.items()):
            if not isinstance(key, str) or not key.strip("/"):
                raise RLGraphSpecError("a key must be an auto-key ('/a/b', '/_T0_') or a dict key", where=where,
                                       received=repr(key))
            flat_key = "/" + key.strip("/")
            self.flattened_sub_distributions[flat_key] = sub_distribution(spec, f"sub-distribution-{index}",
                                                                          f"{where}[{key!r}]")
        self.lead_ranks = 1  # Batch (+ time) ranks of the parameters, read from their space at build.

    # --- Hooks -------------------------------------------------------------------------------------
    def _per_key(self, fn: Callable, *containers: Any) -> "OrderedDict[str, Any]":
        return OrderedDict((key, fn(dist, *[pick(c, key) for c in containers]))
                           for key, dist in self.flattened_sub_distributions.items())

    def _joint(self, terms: "OrderedDict[str, Any]") -> Any:
        """sum_k of the per-key terms, each summed over its own action dims first."""
        m = backend_maths()
        total = None
        for term in terms.values():
            term = m.sum_from(m.floats(term), self.lead_ranks)
            total = term if total is None else total + term
        return total

    def _stochastic(self, parameters):
        return unflatten_op(self._per_key(lambda d, p: d._stochastic(p), parameters))

    def _deterministic(self, parameters):
        return unflatten_op(self._per_key(lambda d, p: d._deterministic(p), parameters))

    def _sample_and_log_prob(self, parameters, deterministic: bool):
        pairs = self._per_key(lambda d, p: d._sample_and_log_prob(p, deterministic), parameters)
        actions = unflatten_op(OrderedDict((k, pair[0]) for k, pair in pairs.items()))
        return actions, self._joint(OrderedDict((k, pair[1]) for k, pair in pairs.items()))

    def _log_prob(self, parameters, values):
        return self._joint(self._per_key(lambda d, p, v: d._log_prob(p, v), parameters, values))

    def _entropy(self, parameters):
        return self._joint(self._per_key(lambda d, p: d._entropy(p), parameters))

    def _kl(self, parameters, other_parameters):
        return self._joint(self._per_key(lambda d, p, q: d._kl(p, q), parameters, other_parameters))

    # --- Space checks ------------------------------------------------------------------------------
    def _check_parameters(self, space: Space, where: str) -> None:
        if not isinstance(space, ContainerSpace):
            raise RLGraphSpaceError(space, "the parameters must be a container (Dict or Tuple) with the parameters "
                                    "of each sub-distribution at its key", where=where,
                                    expected=f"a container with keys {list(self.flattened_sub_distributions)}")
        leaf = next(iter(flatten_op(space).values()))
        self.lead_ranks = int(leaf.has_batch_rank) + int(leaf.has_time_rank)
        for key, dist in self.flattened_sub_distributions.items():
            dist._check_parameters(_pick_space(space, key, where, "parameters"), f"{where}{key}")

    def _check_values(self, space: Space, parameters: Space, where: str) -> None:
        for key, dist in self.flattened_sub_distributions.items():
            dist._check_values(_pick_space(space, key, where, "values"), pick(parameters, key), f"{where}{key}")


def pick(container: Any, flat_key: str) -> Any:
    """The item of a nested dict/tuple (data or space) at auto-key `flat_key` (`"/a/_T1_"` -> `c["a"][1]`)."""
    for part in flat_key.strip("/").split("/"):
        match = _TUPLE_SEGMENT.match(part)
        container = container[int(match.group(1))] if match else container[part]
    return container


def _pick_space(space: Space, key: str, where: str, what: str) -> Space:
    try:
        return pick(space, key)
    except (KeyError, IndexError, TypeError):
        raise RLGraphSpaceError(space, f"the {what} have nothing at key '{key}'", where=where,
                                expected=f"a container with keys {key!r} (auto-keys of the sub-distributions)") \
            from None
