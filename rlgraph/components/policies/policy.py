"""`Policy`: a network, one action adapter and one distribution per action-space leaf."""
from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any, Optional

import numpy as np

from rlgraph.components.action_adapters.action_adapter import ActionAdapter, space_kind
from rlgraph.components.action_adapters.pre_network import adapter_spec_errors, leaf_adapter_spec
from rlgraph.components.component import Component
from rlgraph.components.distributions.bernoulli import Bernoulli
from rlgraph.components.distributions.beta import Beta
from rlgraph.components.distributions.categorical import Categorical
from rlgraph.components.distributions.normal import Normal
from rlgraph.components.distributions.squashed_normal import SquashedNormal
from rlgraph.components.neural_networks.neural_network import NeuralNetwork
from rlgraph.spaces import Space
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

# distributions_spec["bounded_distribution_type"] -> (distribution class, adapter parameterization).
BOUNDED_DISTRIBUTIONS = {"squashed-normal": (SquashedNormal, "normal"), "beta": (Beta, "beta"),
                         "normal": (Normal, "normal")}
DISTRIBUTIONS_SPEC_KEYS = ("bounded_distribution_type",)
_TUPLE_SEGMENT = re.compile(r"_T(\d+)_")


def leaf_of(nested: Any, key: str) -> Any:
    """The item of `nested` (dicts/tuples shaped like the action space) at flat auto-key `key`."""
    for segment in (s for s in key.split("/") if s):
        match = _TUPLE_SEGMENT.fullmatch(segment)
        nested = nested[int(match.group(1))] if match else nested[segment]
    return nested


class Policy(Component):
    """Maps states to actions: network -> action adapter -> distribution, for any action space.

    A container action space (Dict/Tuple of IntBox/BoolBox/FloatBox) gets one `ActionAdapter` and
    one distribution per leaf, in the order of `action_space.flatten()`, scoped "action-adapter-i"
    and "<distribution>-i" (i = 0, 1, ...). Outputs are nested like the action space. Leaves:

    - IntBox(n): `Categorical` on logits [B, *s, n]; actions int32 [B, *s].
    - BoolBox: `Bernoulli` on logits [B, *s]; actions bool [B, *s].
    - FloatBox with finite bounds (one low, one high for all elements): `SquashedNormal(low, high)`
      (or per `distributions_spec`); without bounds: `Normal`. Parameters (mean, log_std).

    Args:
        network_spec: A `NeuralNetwork` (or any component with `apply(inputs, ...)` returning
            {"output": [B, n], ...}) or its spec (e.g. a list of layer specs).
        action_space: The action space (required).
        action_adapter_spec: Extra `ActionAdapter` arguments for every leaf (dict, e.g.
            {"weights_spec": 0.1, "activation": "tanh"}; may hold a "type"). Its `pre_network_spec`
            gives each adapter its own pre-network between the network output and its action layer
            (network -> pre-network -> action layer). An entry keyed by a key of a Dict action space
            (e.g. "turn": {...}) applies to that leaf only.
        max_likelihood: Whether `get_action` / `get_action_and_log_prob` take the most likely
            action (True) or sample (False).
        distributions_spec: Optional {"bounded_distribution_type": "squashed-normal" | "beta" |
            "normal"} for bounded FloatBox leaves.
        scope: Default "policy".

    Raises:
        RLGraphSpecError: Missing action space, unknown `distributions_spec` keys or values.
        RLGraphSpaceError: An action-space leaf no adapter can handle.

    API (every method takes `nn_inputs` (the states) and optional `internal_states` for RNNs):
        get_nn_output: The network's {"output": ..., ["last_internal_states": ...]}.
        get_action_layer_output: The raw action-layer outputs (nested).
        get_adapter_outputs: The distribution parameters (nested).
        get_action / get_deterministic_action (alias get_max_likelihood_action) /
            get_stochastic_action: Actions (nested).
        get_action_and_log_prob: (actions, log_probs) (nested).
        reset_noise(): new gSDE exploration noise (only for policies with gSDE leaves, see
            `ActionAdapter(use_sde=True)`: their stochastic actions are mean + that noise).
        get_adapter_outputs_and_noise: (parameters, {flat key: gSDE noise}) (gSDE policies only).
        get_log_prob(nn_inputs, actions): log p(actions) (nested; per element for FloatBox leaves).
        get_entropy: Entropies (nested).
        get_log_prob_and_entropy(nn_inputs, actions): (log_probs, entropies), one network pass.
        get_kl_divergence(nn_inputs, other_parameters): KL(pi || q) per leaf (nested).
        get_logits_probabilities_log_probs: (logits, probabilities, log_probs), each nested
            (None for the probabilities of FloatBox leaves).
        get_q_values: The logits (nested; Q-values in DQN).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, IntBox
    >>> policy = Policy([{"type": "dense", "units": 3, "weights_spec": 1.0}], action_space=IntBox(2),
    ...                 action_adapter_spec=dict(weights_spec=np.array([[1.0, 0.0]] * 3, np.float32)))
    >>> test = ComponentTest(policy, input_spaces=dict(nn_inputs=FloatBox(shape=(2,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("get_action", np.array([[1.0, 1.0], [-1.0, -1.0]], np.float32))).tolist()
    [0, 1]
    """

    def __init__(self, network_spec: Any, action_space: Any = None, action_adapter_spec: Optional[dict] = None,
                 max_likelihood: bool = True, distributions_spec: Optional[dict] = None, scope: str = "policy",
                 **kwargs):
        super().__init__(scope=scope, **kwargs)
        name = type(self).__name__
        if action_space is None:
            raise RLGraphSpecError("a policy needs its action space", where=f"{name}(action_space)",
                                   hint="pass action_space=IntBox(n), FloatBox(...) or a Dict/Tuple of them.")
        if not isinstance(max_likelihood, (bool, np.bool_)):
            raise RLGraphSpecError("max_likelihood must be a bool", where=f"{name}(max_likelihood)",
                                   received=repr(max_likelihood))
        self.max_likelihood = bool(max_likelihood)
        self.action_space = Space.from_spec(action_space).strip_ranks()
        self.distributions_spec = self._check_distributions_spec(distributions_spec)
        if action_adapter_spec is not None and not isinstance(action_adapter_spec, dict):
            raise RLGraphSpecError("action_adapter_spec must be a dict of adapter arguments",
                                   where=f"{name}(action_adapter_spec)", received=repr(action_adapter_spec))
        self.action_adapter_spec = dict(action_adapter_spec or {})
        self.network = network_spec if isinstance(network_spec, Component) else NeuralNetwork.from_spec(network_spec)
        self.flat_action_space = self.action_space.flatten()
        self.action_adapters: "OrderedDict[str, Component]" = OrderedDict()
        self.distributions: "OrderedDict[str, Component]" = OrderedDict()
        for i, (key, leaf) in enumerate(self.flat_action_space.items()):
            kind = space_kind(leaf, where=f"{name}(action_space) at {key or 'the top'}")
            distribution, parameterization = self._make_distribution(kind, leaf, i, key)
            distribution.value_space = leaf.strip_ranks()
            with adapter_spec_errors(name, key):
                self.action_adapters[key] = self._make_action_adapter(leaf, i, parameterization)
            self.distributions[key] = distribution
        self.add_components(self.network, *self.action_adapters.values(), *self.distributions.values())
        # The leaves explored by gSDE (`ActionAdapter(use_sde=True)`): their stochastic actions are
        # mean + the adapter's exploration noise; `reset_noise` draws that noise anew.
        self.sde_keys = [key for key, adapter in self.action_adapters.items() if getattr(adapter, "use_sde", False)]
        if not self.sde_keys:
            self.switch_off_apis(["reset_noise", "get_adapter_outputs_and_noise"])

    @property
    def sde_sample_freq(self) -> int:
        """Acting steps between two gSDE noise draws (the smallest of the gSDE leaves'); -1: only
        after each update; None without gSDE leaves."""
        if not self.sde_keys:
            return None
        freqs = [self.action_adapters[k].sde_sample_freq for k in self.sde_keys]
        positive = [f for f in freqs if f > 0]
        return min(positive) if positive else -1

    # --- Construction hooks ------------------------------------------------------------------------
    def _make_action_adapter(self, leaf: Space, index: int, parameterization: str) -> Component:
        spec = self._leaf_adapter_spec(index)
        if "parameterization" not in spec and parameterization != "normal":
            spec["parameterization"] = parameterization
        return ActionAdapter.from_spec(spec, action_space=leaf, scope=f"action-adapter-{index}")

    def _leaf_adapter_spec(self, index: int) -> dict:
        """The adapter arguments of action leaf `index` (see `leaf_adapter_spec`)."""
        return leaf_adapter_spec(self.action_adapter_spec, list(self.flat_action_space), index)

    def _make_distribution(self, kind: str, leaf: Space, index: int, key: str):
        if kind == "categorical":
            return Categorical(scope=f"categorical-{index}"), "normal"
        if kind == "bernoulli":
            return Bernoulli(scope=f"bernoulli-{index}"), "normal"
        bounds = leaf.global_bounds
        if bounds is False and np.all(np.isfinite(leaf.low)) and np.all(np.isfinite(leaf.high)):
            raise RLGraphSpaceError(leaf, "a bounded FloatBox action needs one low and one high for all elements",
                                    where=f"{type(self).__name__}(action_space) at {key or 'the top'}",
                                    hint="rescale the actions to common bounds, e.g. [-1, 1].")
        if bounds is False or not (np.isfinite(bounds[0]) and np.isfinite(bounds[1])):
            return Normal(scope=f"normal-{index}"), "normal"
        type_ = self.distributions_spec["bounded_distribution_type"]
        cls, parameterization = BOUNDED_DISTRIBUTIONS[type_]
        scope = f"{type_}-{index}"
        if cls is Normal:
            return Normal(scope=scope), parameterization
        return cls(low=float(bounds[0]), high=float(bounds[1]), scope=scope), parameterization

    def _check_distributions_spec(self, spec: Optional[dict]) -> dict:
        where = f"{type(self).__name__}(distributions_spec)"
        spec = dict(spec or {})
        unknown = sorted(set(spec) - set(DISTRIBUTIONS_SPEC_KEYS))
        if unknown:
            raise RLGraphSpecError(f"unknown distributions_spec key(s) {unknown}", where=where,
                                   expected=", ".join(DISTRIBUTIONS_SPEC_KEYS))
        type_ = str(spec.get("bounded_distribution_type", "squashed-normal")).lower().replace("_", "-")
        if type_ not in BOUNDED_DISTRIBUTIONS:
            raise RLGraphSpecError("unknown bounded_distribution_type", where=where,
                                   expected=" or ".join(repr(t) for t in BOUNDED_DISTRIBUTIONS),
                                   received=repr(spec["bounded_distribution_type"]))
        return dict(bounded_distribution_type=type_)

    # --- Helpers (run inside API methods) -----------------------------------------------------------
    def _nn_output(self, nn_inputs, internal_states):
        if internal_states is None:
            return self.network.apply(nn_inputs)
        return self.network.apply(nn_inputs, internal_states)

    def _nest(self, flat: "OrderedDict[str, Any]") -> Any:
        """Rebuilds a flat key -> value dict in the structure of the action space."""
        if list(flat) == [""]:
            return flat[""]
        return self.action_space.unflatten(flat)

    def _adapters_of(self, out, api: str):
        """key -> adapter.<api>(`out`, the network's output), flat."""
        return OrderedDict((k, getattr(a, api)(out)) for k, a in self.action_adapters.items())

    def _map_adapters(self, api: str, nn_inputs, internal_states):
        """key -> adapter.<api>(network output), flat."""
        return self._adapters_of(self._nn_output(nn_inputs, internal_states)["output"], api)

    def _log_prob_and_entropy_of(self, parameters, actions):
        """(log pi(actions), entropies), both nested, of the flat distribution `parameters`."""
        log_probs = OrderedDict((k, d.log_prob(parameters[k], leaf_of(actions, k)))
                                for k, d in self.distributions.items())
        entropies = OrderedDict((k, d.entropy(parameters[k])) for k, d in self.distributions.items())
        return self._nest(log_probs), self._nest(entropies)

    def _logits_probabilities_log_probs_of(self, out):
        """(logits, probabilities, log_probs), each nested, of the network's output `out`."""
        flat = self._adapters_of(out, "get_logits_probabilities_log_probs")
        return tuple(self._nest(OrderedDict((k, v[i]) for k, v in flat.items())) for i in range(3))

    def _flat_parameters(self, nn_inputs, internal_states):
        return self._map_adapters("get_parameters", nn_inputs, internal_states)

    def _map_distributions(self, api: str, nn_inputs, internal_states, *extra):
        parameters = self._flat_parameters(nn_inputs, internal_states)
        return OrderedDict((k, getattr(d, api)(parameters[k], *(leaf_of(e, k) for e in extra)))
                           for k, d in self.distributions.items())

    # --- API ---------------------------------------------------------------------------------------
    @rlgraph_api
    def get_nn_output(self, nn_inputs, internal_states=None):
        """The network's output dict {"output": [B, n], ["last_internal_states": ...]}."""
        return self._nn_output(nn_inputs, internal_states)

    @rlgraph_api
    def get_action_layer_output(self, nn_inputs, internal_states=None):
        """The raw action-layer outputs, nested like the action space."""
        return self._nest(self._map_adapters("get_action_layer_output", nn_inputs, internal_states))

    @rlgraph_api
    def get_adapter_outputs(self, nn_inputs, internal_states=None):
        """The distribution parameters, nested like the action space."""
        return self._nest(self._flat_parameters(nn_inputs, internal_states))

    def _sampled(self, nn_inputs, internal_states, with_log_probs: bool):
        """Flat (actions, log_probs) of stochastic draws: gSDE leaves from their adapters' exploration
        noise, the others freshly drawn (log_probs empty unless `with_log_probs`)."""
        out = self._nn_output(nn_inputs, internal_states)["output"]
        parameters = self._adapters_of(out, "get_parameters")
        actions, log_probs = OrderedDict(), OrderedDict()
        for key, distribution in self.distributions.items():
            if key in self.sde_keys:
                noise = self.action_adapters[key].get_exploration_noise(out)
                actions[key], log_probs[key] = distribution.sample_with_noise(parameters[key], noise)
            elif with_log_probs:
                actions[key], log_probs[key] = distribution.sample_and_log_prob(parameters[key], False)
            else:
                actions[key] = distribution.sample_stochastic(parameters[key])
        return actions, log_probs

    @rlgraph_api
    def get_action(self, nn_inputs, internal_states=None):
        """Actions: the most likely ones if `max_likelihood` (constructor) else samples."""
        if not self.max_likelihood and self.sde_keys:
            return self._nest(self._sampled(nn_inputs, internal_states, False)[0])
        api = "sample_deterministic" if self.max_likelihood else "sample_stochastic"
        return self._nest(self._map_distributions(api, nn_inputs, internal_states))

    @rlgraph_api
    def get_deterministic_action(self, nn_inputs, internal_states=None):
        """The most likely actions (argmax of the logits, the Gaussians' means mapped to the bounds)."""
        return self._nest(self._map_distributions("sample_deterministic", nn_inputs, internal_states))

    @rlgraph_api
    def get_max_likelihood_action(self, nn_inputs, internal_states=None):
        """Alias of `get_deterministic_action` (reference name)."""
        return self.get_deterministic_action(nn_inputs, internal_states)

    @rlgraph_api
    def get_stochastic_action(self, nn_inputs, internal_states=None):
        """Actions sampled from the distributions (gSDE leaves: mean + their exploration noise)."""
        if self.sde_keys:
            return self._nest(self._sampled(nn_inputs, internal_states, False)[0])
        return self._nest(self._map_distributions("sample_stochastic", nn_inputs, internal_states))

    @rlgraph_api
    def get_action_and_log_prob(self, nn_inputs, internal_states=None):
        """(actions, log_probs), both nested; drawn as in `get_action`."""
        if not self.max_likelihood and self.sde_keys:
            actions, log_probs = self._sampled(nn_inputs, internal_states, True)
            return self._nest(actions), self._nest(log_probs)
        parameters = self._flat_parameters(nn_inputs, internal_states)
        actions, log_probs = OrderedDict(), OrderedDict()
        for key, distribution in self.distributions.items():
            actions[key], log_probs[key] = distribution.sample_and_log_prob(parameters[key], self.max_likelihood)
        return self._nest(actions), self._nest(log_probs)

    @rlgraph_api
    def get_adapter_outputs_and_noise(self, nn_inputs, internal_states=None):
        """(distribution parameters nested like the action space, {flat key: gSDE exploration noise}
        of the gSDE leaves) from one network pass (only for policies with gSDE leaves)."""
        out = self._nn_output(nn_inputs, internal_states)["output"]
        parameters = self._nest(self._adapters_of(out, "get_parameters"))
        return parameters, {key: self.action_adapters[key].get_exploration_noise(out) for key in self.sde_keys}

    @rlgraph_api
    def reset_noise(self):
        """Draws new gSDE exploration noise for every gSDE leaf (switched off without them)."""
        return tuple(self.action_adapters[key].reset_noise() for key in self.sde_keys)

    @rlgraph_api(must_be_complete=False)
    def get_log_prob(self, nn_inputs, actions, internal_states=None):
        """log pi(actions | nn_inputs), nested (per element for FloatBox leaves)."""
        return self._nest(self._map_distributions("log_prob", nn_inputs, internal_states, actions))

    @rlgraph_api
    def get_entropy(self, nn_inputs, internal_states=None):
        """The entropies of the action distributions, nested."""
        return self._nest(self._map_distributions("entropy", nn_inputs, internal_states))

    @rlgraph_api(must_be_complete=False)
    def get_log_prob_and_entropy(self, nn_inputs, actions, internal_states=None):
        """(log pi(actions | nn_inputs), entropies), both nested, from one pass of the network (a
        policy-gradient loss needs both: calling `get_log_prob` and `get_entropy` runs it twice)."""
        return self._log_prob_and_entropy_of(self._flat_parameters(nn_inputs, internal_states), actions)

    @rlgraph_api(must_be_complete=False)
    def get_kl_divergence(self, nn_inputs, other_parameters, internal_states=None):
        """KL(pi || q) per leaf, q given by `other_parameters` (nested like `get_adapter_outputs`)."""
        return self._nest(self._map_distributions("kl_divergence", nn_inputs, internal_states, other_parameters))

    @rlgraph_api
    def get_logits_probabilities_log_probs(self, nn_inputs, internal_states=None):
        """(logits, probabilities, log_probs), each nested; FloatBox leaves give (parameters, None, None)."""
        return self._logits_probabilities_log_probs_of(self._nn_output(nn_inputs, internal_states)["output"])

    @rlgraph_api
    def get_q_values(self, nn_inputs, internal_states=None):
        """The logits of the discrete leaves (Q-values for DQN), nested like the action space."""
        return self._nest(self._flat_parameters(nn_inputs, internal_states))
