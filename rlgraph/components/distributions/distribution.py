"""`Distribution`: the base of the probability-distribution components."""
from __future__ import annotations

import math
from typing import Any, Dict, Optional

from rlgraph.components.component import Component
from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.spaces import BoolBox, FloatBox, Space, Tuple
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError

# The API method named in errors about an argument's space.
_API_OF_ARG = {"parameters": "sample_stochastic", "values": "log_prob", "other_parameters": "kl_divergence",
               "max_likelihood": "draw", "noise": "sample_with_noise"}


class Distribution(Component):
    """A probability distribution whose parameters come in as tensors (e.g. from a network's head).

    The component holds no variables and no backend distribution object: each API method takes the
    distribution `parameters` first and computes its result with plain tensor maths, identically on
    TF and PyTorch. Every API method accepts any leading batch (and time) ranks. Subclasses document
    their parameter format and implement the hooks `_stochastic`, `_deterministic`, `_log_prob`,
    `_entropy` and `_kl` (plus `_check_parameters` / `_check_values` for build-time space checks).

    Random draws use the agent's own random stream (`tf.random.*` in its traced functions,
    `rlgraph.utils.torch_random` on PyTorch), which the executor seeds (`ComponentTest(seed=...)`,
    `execution_spec["seed"]`): the same seed gives the same samples.

    Args:
        scope: Default "distribution".

    API:
        sample_stochastic(parameters): A random sample.
        sample_deterministic(parameters): The most likely value (the mode; see each subclass).
        draw(parameters, max_likelihood=True): `sample_deterministic` if `max_likelihood` (a scalar
            bool, python or tensor) is True, else `sample_stochastic`.
        sample_and_log_prob(parameters, max_likelihood=True): (action, log_prob), as `draw` and
            `log_prob` of that action (some subclasses compute the log-prob more stably from the draw).
        log_prob(parameters, values): log p(values) (shape: see each subclass).
        entropy(parameters): The entropy (shape like `log_prob`).
        kl_divergence(parameters, other_parameters): KL(p || q) with q given by `other_parameters`
            in the same format (shape like `log_prob`).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> from rlgraph.components.distributions.categorical import Categorical
    >>> test = ComponentTest(Categorical(), input_spaces=dict(parameters=FloatBox(shape=(3,), add_batch_rank=True),
    ...                      max_likelihood=bool), backend="pytorch")
    >>> test.test(("draw", [np.array([[0.0, 2.0, 1.0]], np.float32), True])).tolist()
    [1]
    """

    def __init__(self, scope: str = "distribution", **kwargs):
        super().__init__(scope=scope, **kwargs)
        # The space of one sample (e.g. the action leaf a policy samples), set by the owner: samples
        # then have it (with the parameters' batch/time ranks), bounds included, which shapes lack.
        self.value_space = None

    def _sample_space(self, parameters: Any, *other_arguments: Any) -> Any:
        """The declared output space of the sampling graph functions (None: inferred)."""
        if self.value_space is None or parameters is None:
            return None
        leaf = next(iter(parameters.flatten().values())) if hasattr(parameters, "flatten") else parameters
        return self.value_space.with_extra_ranks(leaf.has_batch_rank, leaf.has_time_rank, leaf.time_major)

    def _sample_and_log_prob_spaces(self, parameters: Any, *other_arguments: Any) -> Any:
        sample = self._sample_space(parameters)
        return None if sample is None else (sample, None)

    def get_distribution(self, parameters: Any) -> "BoundDistribution":
        """This distribution bound to `parameters`, for use INSIDE graph functions (e.g. of a loss
        that needs log-probs and entropies of one set of parameters several times).

        Not an API method: only tensors travel between API methods, so the bound object lives
        within one graph function. Its methods run the same maths as the API methods. Used this
        way, the distribution holds no variables and need not be a sub-component of the caller.
        """
        return BoundDistribution(self, parameters)

    # --- API ---------------------------------------------------------------------------------------
    @rlgraph_api
    def sample_stochastic(self, parameters):
        """A random sample (see the subclass for its shape and dtype)."""
        return self._graph_fn_sample_stochastic(parameters)

    @rlgraph_api
    def sample_deterministic(self, parameters):
        """The max-likelihood value (the mode; see the subclass)."""
        return self._graph_fn_sample_deterministic(parameters)

    @rlgraph_api
    def draw(self, parameters, max_likelihood=True):
        """`sample_deterministic` if `max_likelihood` (a scalar bool) else `sample_stochastic`."""
        return self._graph_fn_draw(parameters, max_likelihood)

    @rlgraph_api
    def sample_and_log_prob(self, parameters, max_likelihood=True):
        """(action, log_prob): a draw as in `draw` and its log-probability as in `log_prob`."""
        return self._graph_fn_sample_and_log_prob(parameters, max_likelihood)

    @rlgraph_api(must_be_complete=False)
    def sample_with_noise(self, parameters, noise):
        """(action, log_prob) of the sample made from given exploration `noise` (shaped like the
        action) instead of a fresh draw: Gaussians (`Normal`, `SquashedNormal`) only, where the
        noise is added to the mean before any squashing (gSDE's exploration, see `ActionAdapter`)."""
        return self._graph_fn_sample_with_noise(parameters, noise)

    @rlgraph_api(must_be_complete=False)
    def log_prob(self, parameters, values):
        """log p(values) under the distribution given by `parameters`."""
        return self._graph_fn_log_prob(parameters, values)

    @rlgraph_api
    def entropy(self, parameters):
        """The entropy of the distribution given by `parameters`."""
        return self._graph_fn_entropy(parameters)

    @rlgraph_api(must_be_complete=False)
    def kl_divergence(self, parameters, other_parameters):
        """KL(p || q): p given by `parameters`, q by `other_parameters` (same format)."""
        return self._graph_fn_kl_divergence(parameters, other_parameters)

    # --- Graph functions ---------------------------------------------------------------------------
    @graph_fn(returns=1, output_space="_sample_space")
    def _graph_fn_sample_stochastic(self, parameters):
        return self._stochastic(parameters)

    @graph_fn(returns=1, output_space="_sample_space")
    def _graph_fn_sample_deterministic(self, parameters):
        return self._deterministic(parameters)

    @graph_fn(returns=1, output_space="_sample_space")
    def _graph_fn_draw(self, parameters, max_likelihood):
        return backend_maths().cond(max_likelihood, lambda: self._deterministic(parameters),
                                    lambda: self._stochastic(parameters), where=f"{self.global_scope}.draw")

    @graph_fn(returns=2, output_space="_sample_and_log_prob_spaces")
    def _graph_fn_sample_and_log_prob(self, parameters, max_likelihood):
        return backend_maths().cond(max_likelihood, lambda: self._sample_and_log_prob(parameters, True),
                                    lambda: self._sample_and_log_prob(parameters, False),
                                    where=f"{self.global_scope}.sample_and_log_prob")

    @graph_fn(returns=2, output_space="_sample_and_log_prob_spaces")
    def _graph_fn_sample_with_noise(self, parameters, noise):
        return self._with_noise(parameters, noise)

    @graph_fn(returns=1)
    def _graph_fn_log_prob(self, parameters, values):
        return self._log_prob(parameters, values)

    @graph_fn(returns=1)
    def _graph_fn_entropy(self, parameters):
        return self._entropy(parameters)

    @graph_fn(returns=1)
    def _graph_fn_kl_divergence(self, parameters, other_parameters):
        return self._kl(parameters, other_parameters)

    # --- Hooks of the subclasses (called inside graph functions; use `backend_maths()`) --------------
    def _stochastic(self, parameters):
        raise _abstract(self, "_stochastic")

    def _deterministic(self, parameters):
        raise _abstract(self, "_deterministic")

    def _sample_and_log_prob(self, parameters, deterministic: bool):
        action = self._deterministic(parameters) if deterministic else self._stochastic(parameters)
        return action, self._log_prob(parameters, action)

    def _with_noise(self, parameters, noise):
        raise _abstract(self, "_with_noise")

    def _log_prob(self, parameters, values):
        raise _abstract(self, "_log_prob")

    def _entropy(self, parameters):
        raise _abstract(self, "_entropy")

    def _kl(self, parameters, other_parameters):
        raise _abstract(self, "_kl")

    # --- Space checks ------------------------------------------------------------------------------
    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        self._check_spaces(input_spaces)

    def _check_spaces(self, spaces: Dict[str, Any], api_of_arg: Optional[Dict[str, str]] = None) -> None:
        apis = dict(_API_OF_ARG, **(api_of_arg or {}))
        where = {arg: f"{self.global_scope}.{api}({arg})" for arg, api in apis.items()}
        flag = spaces.get("max_likelihood")
        if isinstance(flag, Space) and not (isinstance(flag, BoolBox) and flag.shape == () and
                                            not flag.has_batch_rank and not flag.has_time_rank):
            raise RLGraphSpaceError(flag, "max_likelihood must be one scalar bool",
                                    where=where["max_likelihood"], expected="BoolBox() (or bool)",
                                    hint="choose deterministic or stochastic draws for the whole batch.")
        parameters = spaces.get("parameters")
        if not isinstance(parameters, Space):
            return
        self._check_parameters(parameters, where["parameters"])
        other = spaces.get("other_parameters")
        if isinstance(other, Space):
            self._check_parameters(other, where["other_parameters"])
            if _shapes(other) != _shapes(parameters):
                raise RLGraphSpaceError(other, "other_parameters must have the shape of parameters",
                                        where=where["other_parameters"],
                                        expected=f"shapes {_shapes(parameters)}",
                                        received=f"shapes {_shapes(other)}")
        for name in ("values", "noise"):
            if isinstance(spaces.get(name), Space):
                self._check_values(spaces[name], parameters, where[name])

    def _check_parameters(self, space: Space, where: str) -> None:
        """Raises an `RLGraphSpaceError` if `space` is no valid parameter space."""

    def _check_values(self, space: Space, parameters: Space, where: str) -> None:
        """Raises an `RLGraphSpaceError` if `space` does not fit values of these parameters."""


def _shapes(space: Space) -> tuple:
    if isinstance(space, Tuple):
        return tuple(_shapes(s) for s in space)
    return tuple(space.shape)


def check_float_box(space: Space, where: str, what: str, min_rank: int = 0) -> None:
    """Raises unless `space` is a FloatBox of at least `min_rank` (non-batch) dims."""
    if not isinstance(space, FloatBox) or len(space.shape) < min_rank:
        raise RLGraphSpaceError(space, f"{what} must be a FloatBox" +
                                (f" of rank >= {min_rank}" if min_rank else ""), where=where,
                                expected=f"FloatBox(shape=({'n,' if min_rank else ''}), add_batch_rank=True)")


def check_float_pair(space: Space, where: str, names: str, min_rank: int = 0) -> None:
    """Raises unless `space` is a Tuple of two FloatBoxes of one shape (rank >= `min_rank`)."""
    if not isinstance(space, Tuple) or len(space) != 2 or \
            not all(isinstance(s, FloatBox) and len(s.shape) >= min_rank for s in space) or \
            space[0].shape != space[1].shape:
        raise RLGraphSpaceError(space, f"the parameters must be a tuple ({names}) of two FloatBoxes of one shape" +
                                (f" (rank >= {min_rank})" if min_rank else ""), where=where,
                                expected=f"Tuple(FloatBox(shape=s), FloatBox(shape=s)) for ({names})",
                                hint="an action adapter outputs this tuple for the distribution.")


def check_values_shape(space: Space, shape: tuple, where: str, types: tuple, expected: str) -> None:
    """Raises unless `space` is one of `types` with `shape`."""
    if not isinstance(space, types) or tuple(space.shape) != tuple(shape):
        raise RLGraphSpaceError(space, "the values do not fit the distribution's parameters", where=where,
                                expected=expected)


def _abstract(distribution: Distribution, hook: str) -> RLGraphError:
    """The error for a hook that a concrete distribution must define."""
    return RLGraphError(f"{type(distribution).__name__} does not define `{hook}`", where=distribution.global_scope,
                        hint="use a concrete distribution (Categorical, Normal, ...) or implement the hook.")


class BoundDistribution:
    """A `Distribution` with fixed `parameters` (see `Distribution.get_distribution`)."""

    def __init__(self, distribution: Distribution, parameters: Any):
        self.distribution, self.parameters = distribution, parameters

    def sample(self, deterministic: bool = False) -> Any:
        """The mode if `deterministic`, else a random sample."""
        if deterministic:
            return self.distribution._deterministic(self.parameters)
        return self.distribution._stochastic(self.parameters)

    def log_prob(self, values: Any) -> Any:
        return self.distribution._log_prob(self.parameters, values)

    def entropy(self) -> Any:
        return self.distribution._entropy(self.parameters)

    def kl_divergence(self, other: "BoundDistribution") -> Any:
        """KL(self || other); `other` has the same parameter format."""
        return self.distribution._kl(self.parameters, other.parameters)


def sub_distribution(spec: Any, scope: str, where: str) -> Distribution:
    """A distribution from a spec ("normal", {"type": "beta", ...}) or a Distribution object (kept
    as it is), for use inside another distribution's graph functions (not as a sub-component)."""
    if isinstance(spec, Distribution):
        return spec
    if isinstance(spec, str):
        spec = {"type": spec}
    if isinstance(spec, dict):
        spec = dict(spec)
        spec.setdefault("scope", scope)
    distribution = Distribution.from_spec(spec)
    if not isinstance(distribution, Distribution):
        raise RLGraphSpecError("the spec does not describe a distribution", where=where, received=repr(spec),
                               expected='a Distribution or its spec ("categorical", {"type": "normal"}, ...)')
    return distribution


def check_bounds(low: Any, high: Any, where: str) -> tuple:
    """(low, high) as floats for a bounded distribution; raises RLGraphSpecError unless finite and low < high."""
    for name, value in (("low", low), ("high", high)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise RLGraphSpecError(f"{name} must be a finite number", where=f"{where}({name})", received=repr(value))
    if not low < high:
        raise RLGraphSpecError("low must be smaller than high", where=f"{where}(low, high)",
                               received=f"low={low}, high={high}")
    return float(low), float(high)
