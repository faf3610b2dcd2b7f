"""`ActionAdapter`: turns a network's output into the parameters of one action distribution."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.action_adapters.pre_network import make_pre_network
from rlgraph.components.action_adapters.state_dependent_noise import (exploration_noise, resample_unit_noise,
                                                                     state_dependent_log_std)
from rlgraph.components.component import Component
from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.spaces import BoolBox, FloatBox, IntBox, Space
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

LOG_STD_MIN, LOG_STD_MAX = -20.0, 2.0  # Keeps exp(log_std) finite and non-degenerate.
PARAMETERIZATIONS = ("normal", "beta")


def reshape_last(x: Any, shape: tuple) -> Any:
    """Replaces the last dim of `x` by `shape`, keeping all leading (batch/time) dims."""
    if len(shape) == 1 and x.shape[-1] == shape[0]:
        return x  # Already so (e.g. the logits of a scalar categorical action).
    if get_backend() == "tf":
        import tensorflow as tf
        return tf.reshape(x, tf.concat([tf.shape(x)[:-1], tf.constant(shape, dtype=tf.int32)], 0))
    return x.reshape(*x.shape[:-1], *shape)


def space_kind(space: Any, where: str) -> str:
    """"categorical", "bernoulli" or "continuous" for a primitive action space; raises otherwise."""
    if isinstance(space, IntBox):
        bounds = space.global_bounds
        if space.num_categories < 1 or bounds is False or bounds[0] != 0:
            raise RLGraphSpaceError(space, "a discrete action space needs categories 0..n-1", where=where,
                                    expected="IntBox(n) or IntBox(n, shape=s)",
                                    hint="give the IntBox a bound `high` (its number of actions) and low=0.")
        return "categorical"
    if isinstance(space, BoolBox):
        return "bernoulli"
    if isinstance(space, FloatBox):
        return "continuous"
    raise RLGraphSpaceError(space, "an action adapter needs one primitive action space", where=where,
                            expected="IntBox(n), BoolBox or FloatBox",
                            hint="a policy handles Dict/Tuple action spaces with one adapter per leaf.")


class ActionAdapter(Component):
    """An optional pre-network and a dense "action layer" on a network's output, reshaped into one
    distribution's parameters.

    With a `pre_network_spec` the network output x first goes through that pre-network (scope
    "pre-network", inside the adapter): action layer(pre-network(x)); without one, action layer(x).

    The layer has `add_units` + (what the distribution needs) units; the first `add_units`
    outputs are extra (e.g. a state value, see `BaselineActionAdapter`), the rest parameterize:

    - IntBox(n), shape s: prod(s) * n logits, reshaped to [B, *s, n] (for `Categorical`).
    - BoolBox, shape s: prod(s) logits, reshaped to [B, *s] (for `Bernoulli`).
    - FloatBox, shape s: 2 * prod(s) outputs x = (x1, x2), each reshaped to [B, *s]:
      parameterization "normal": (mean, log_std) = (x1, clip(x2, -20, 2)) (for `Normal`,
      `SquashedNormal`); parameterization "beta": (alpha, beta) = (1 + softplus(x1), 1 + softplus(x2))
      (for `Beta`; both > 1, i.e. unimodal, as in Chou et al. 2017).
      With `log_std_init` (normal only): prod(s) outputs, the mean; log_std is a trainable variable
      "log-std" of shape s that no state changes (the PPO paper's and Stable-Baselines3's Gaussian
      policy), started at `log_std_init` and clipped to [-20, 2] like the state-dependent one.
      With `use_sde` (normal only): prod(s) outputs, the mean; the log-std is state-dependent through
      gSDE (`state_dependent_noise.py`): 0.5 log(phi^2 @ exp(2 L) + 1e-6) with phi the network output
      (no gradient into it) and L a trainable [n, prod(s)] matrix "sde-log-std" started at
      `log_std_init` (default -2) and clipped to [-20, 2]; the policy's stochastic actions are then
      mean + phi @ (exp(L) * Z) with the unit-noise matrices "sde-noise" Z, drawn again by
      `reset_noise` (the agent calls it every `sde_sample_freq` acting steps and after each update,
      see `rlgraph/agents/sde_schedule.py`).

    Inputs may carry any leading ranks ([B, in] or [B, T, in]); they are kept in the outputs.

    Args:
        action_space: One primitive action space (IntBox with n categories, BoolBox, FloatBox).
        add_units: Extra units in front of the parameter units.
        units: The layer's total units; if given it must equal add_units + the parameter units.
        weights_spec: Initializer of the action layer's kernel (see `DenseLayer`).
        biases_spec: Initializer of its bias.
        activation: Activation of the action layer (default: linear).
        parameterization: "normal" or "beta": how FloatBox outputs are read (ignored otherwise).
        log_std_init: None (default): the log-std is an output of the action layer; a number: a
            state-independent trainable log-std started there (FloatBox, "normal" only); with
            `use_sde`, where the gSDE log-std matrix starts (default -2.0, as Stable-Baselines3's).
        use_sde: Generalized state-dependent exploration (see above; FloatBox, "normal", no
            pre-network). Default False.
        sde_matrices: gSDE unit-noise matrices: set it to the number of environments that act in
            one `get_action` batch, so that each explores with its own (default 1).
        sde_sample_freq: gSDE: acting steps between two draws of the unit noise; -1 (default): a new
            draw only after each update (at the start of each rollout), as Stable-Baselines3's.
        sde_learn_features: gSDE: let the policy's gradient flow through the features phi (in the
            noise and its variance) back into the network, as Stable-Baselines3's SAC does
            (`learn_features=True`; the SAC agent's default with gSDE); False (default, as its PPO
            and A2C): only sigma learns there.
        clip_mean: gSDE: clip the Gaussian mean to [-clip_mean, clip_mean] (no gradient beyond, as
            a hard tanh; Stable-Baselines3's SAC does this with 2.0 under gSDE). Default: no clip.
        pre_network_spec: Layers between the network output and the action layer (the original
            RLgraph's key): a list of layer specs, one layer spec, a network spec or a
            `NeuralNetwork`; feed-forward (see `make_pre_network`). Default: none.
        scope: Default "action-adapter".

    Raises:
        RLGraphSpaceError: If `action_space` is not a usable primitive space.
        RLGraphSpecError: For a bad `units`, `add_units`, `parameterization`, `log_std_init`,
            `pre_network_spec` or gSDE argument.

    API:
        get_action_layer_output(nn_output): The raw action-layer output [B, units].
        get_parameters(nn_output): The distribution parameters (see above).
        get_logits(nn_output): Alias of `get_parameters`.
        get_logits_probabilities_log_probs(nn_output): (logits, softmax(logits), log_softmax(logits))
            for IntBox; (logits, sigmoid, log_sigmoid) for BoolBox; (parameters, None, None) for FloatBox.
        get_exploration_noise(nn_output) (gSDE only; switched off otherwise): phi @ (exp(L) * Z),
            shaped like the mean.
        reset_noise() (gSDE only): draws new unit-noise matrices Z.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, IntBox
    >>> adapter = ActionAdapter(IntBox(3), weights_spec=0.0, biases_spec=np.array([0.0, 1.0, 2.0], np.float32))
    >>> test = ComponentTest(adapter, input_spaces=dict(nn_output=FloatBox(shape=(4,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> logits, probs, log_probs = test.test(("get_logits_probabilities_log_probs", np.ones((2, 4), np.float32)))
    >>> logits.tolist(), np.round(probs[0].astype(float), 3).tolist()
    ([[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]], [0.09, 0.245, 0.665])
    """

    def __init__(self, action_space: Any, add_units: int = 0, units: Optional[int] = None, weights_spec: Any = None,
                 biases_spec: Any = None, activation: Any = None, parameterization: str = "normal",
                 pre_network_spec: Any = None, log_std_init: Optional[float] = None, use_sde: bool = False,
                 sde_matrices: int = 1, sde_sample_freq: int = -1, sde_learn_features: bool = False,
                 clip_mean: Optional[float] = None,
                 scope: str = "action-adapter", **kwargs):
        super().__init__(scope=scope, **kwargs)
        name = type(self).__name__
        self.action_space = Space.from_spec(action_space).strip_ranks()
        self.kind = space_kind(self.action_space, where=f"{name}(action_space)")
        if parameterization not in PARAMETERIZATIONS:
            raise RLGraphSpecError("unknown parameterization", where=f"{name}(parameterization)",
                                   expected=" or ".join(repr(p) for p in PARAMETERIZATIONS),
                                   received=repr(parameterization))
        self.parameterization = parameterization
        if isinstance(add_units, bool) or not isinstance(add_units, (int, np.integer)) or add_units < 0:
            raise RLGraphSpecError("add_units must be an int >= 0", where=f"{name}(add_units)",
                                   received=repr(add_units))
        self.add_units = int(add_units)
        self.action_shape = tuple(self.action_space.shape)
        flat = int(np.prod(self.action_shape, dtype=np.int64))
        self.num_categories = self.action_space.num_categories if self.kind == "categorical" else 0
        self.use_sde = self._check_sde(use_sde, sde_matrices, sde_sample_freq, pre_network_spec, name)
        if not isinstance(sde_learn_features, (bool, np.bool_)) or (sde_learn_features and not self.use_sde):
            raise RLGraphSpecError("sde_learn_features must be a bool, true only with use_sde",
                                   where=f"{name}(sde_learn_features)", received=repr(sde_learn_features))
        self.sde_learn_features = bool(sde_learn_features)
        self.clip_mean = self._check_clip_mean(clip_mean, name)
        if self.use_sde and log_std_init is None:
            log_std_init = -2.0
        self.log_std_init = self._check_log_std_init(log_std_init, name)
        free_std = self.log_std_init is not None
        self.parameter_units = flat * {"categorical": self.num_categories, "bernoulli": 1,
                                       "continuous": 1 if free_std else 2}[self.kind]
        self.log_std = self.sde_log_std = self.sde_noise = None
        needed = self.add_units + self.parameter_units
        if units is not None and units != needed:
            raise RLGraphSpecError("units does not fit the action space", where=f"{name}(units)",
                                   expected=f"{needed} (add_units {self.add_units} + {self.parameter_units} for "
                                            f"{self.action_space})", received=repr(units),
                                   hint="leave units=None to derive it from the action space.")
        self.units = needed
        self.pre_network = make_pre_network(pre_network_spec, where=f"{name}(pre_network_spec)")
        self.action_layer = DenseLayer(units=needed, weights_spec=weights_spec, biases_spec=biases_spec,
                                       activation=activation, scope="action-layer")
        self.add_components(*[c for c in (self.pre_network, self.action_layer) if c is not None])
        if not self.use_sde:
            self.switch_off_apis(["get_exploration_noise", "reset_noise"])

    def _check_log_std_init(self, value: Any, name: str) -> Optional[float]:
        if value is None:
            return None
        if self.kind != "continuous" or self.parameterization != "normal":
            raise RLGraphSpecError("log_std_init needs a FloatBox action and the normal parameterization",
                                   where=f"{name}(log_std_init)", received=f"{self.action_space}, "
                                   f"parameterization {self.parameterization!r}", hint="leave log_std_init None.")
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
                not np.isfinite(value) or not LOG_STD_MIN <= value <= LOG_STD_MAX:
            raise RLGraphSpecError("log_std_init must be a finite number", where=f"{name}(log_std_init)",
                                   expected=f"a number in [{LOG_STD_MIN}, {LOG_STD_MAX}], e.g. 0.0 (std 1)",
                                   received=repr(value))
        return float(value)

    def _check_sde(self, use_sde: Any, matrices: Any, sample_freq: Any, pre_network_spec: Any, name: str) -> bool:
        if not isinstance(use_sde, (bool, np.bool_)):
            raise RLGraphSpecError("use_sde must be a bool", where=f"{name}(use_sde)", received=repr(use_sde))
        if isinstance(matrices, bool) or not isinstance(matrices, (int, np.integer)) or matrices < 1:
            raise RLGraphSpecError("sde_matrices must be an int >= 1", where=f"{name}(sde_matrices)",
                                   received=repr(matrices), hint="the number of environments acting together.")
        if isinstance(sample_freq, bool) or not isinstance(sample_freq, (int, np.integer)) or \
                not (sample_freq == -1 or sample_freq >= 1):
            raise RLGraphSpecError("sde_sample_freq must be -1 or an int >= 1", where=f"{name}(sde_sample_freq)",
                                   received=repr(sample_freq), hint="-1: a new draw after each update only.")
        self.sde_matrices, self.sde_sample_freq = int(matrices), int(sample_freq)
        if use_sde and (self.kind != "continuous" or self.parameterization != "normal"):
            raise RLGraphSpecError("use_sde needs a FloatBox action and the normal parameterization",
                                   where=f"{name}(use_sde)", received=f"{self.action_space}, parameterization "
                                   f"{self.parameterization!r}",
                                   hint='gSDE perturbs Gaussian actions; for a bounded action use '
                                        'bounded_distribution_type "normal" or "squashed-normal".')
        if use_sde and pre_network_spec is not None:
            raise RLGraphSpecError("use_sde takes its features from the network output: no pre-network",
                                   where=f"{name}(pre_network_spec)", hint="move the pre-network's layers into "
                                   "the network, or leave use_sde off.")
        return bool(use_sde)

    def _check_clip_mean(self, value: Any, name: str) -> Optional[float]:
        if value is None:
            return None
        if not self.use_sde or isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not (np.isfinite(value) and value > 0):
            raise RLGraphSpecError("clip_mean must be a positive number, with use_sde", where=f"{name}(clip_mean)",
                                   received=repr(value), hint="e.g. 2.0 (Stable-Baselines3's SAC with gSDE).")
        return float(value)

    def create_variables(self, input_spaces, action_space=None):
        if self.use_sde:
            latent = int(input_spaces["nn_output"].shape[0])
            actions = self.parameter_units
            self.sde_log_std = self.get_variable("sde-log-std", shape=(latent, actions), dtype="float",
                                                 initializer=self.log_std_init, trainable=True)
            self.sde_noise = self.get_variable("sde-noise", shape=(self.sde_matrices, latent, actions),
                                               dtype="float", initializer={"type": "normal", "stddev": 1.0},
                                               trainable=False)
        elif self.log_std_init is not None:
            self.log_std = self.get_variable("log-std", shape=self.action_shape, dtype="float",
                                             initializer=self.log_std_init, trainable=True)

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        space = input_spaces.get("nn_output")
        if isinstance(space, Space) and (not isinstance(space, FloatBox) or len(space.shape) != 1):
            raise RLGraphSpaceError(space, "the network output must be a flat float vector",
                                    where=f"{self.global_scope}.get_action_layer_output(nn_output)",
                                    expected="FloatBox(shape=(n,), add_batch_rank=True)",
                                    hint="end the network with a dense layer or a flatten.")

    # --- API ---------------------------------------------------------------------------------------
    @rlgraph_api
    def get_action_layer_output(self, nn_output):
        """The raw action-layer output [B, (T,) units] (after the pre-network, if any)."""
        return self.action_layer.apply(self.pre_network_output(nn_output))

    @rlgraph_api
    def get_parameters(self, nn_output):
        """The distribution parameters (logits [B, *s, n] / logits [B, *s] / a pair [B, *s] each)."""
        if self.use_sde:
            return self._graph_fn_sde_parameters(self.get_action_layer_output(nn_output), nn_output)
        return self._graph_fn_parameters(self.get_action_layer_output(nn_output))

    @rlgraph_api
    def get_exploration_noise(self, nn_output):
        """gSDE: the exploration noise phi @ (exp(L) * Z) of each row, shaped like the mean."""
        return self._graph_fn_exploration_noise(nn_output)

    @rlgraph_api
    def reset_noise(self):
        """gSDE: draws new unit-noise matrices."""
        return self._graph_fn_reset_noise()

    @rlgraph_api
    def get_logits(self, nn_output):
        """Alias of `get_parameters` (reference name)."""
        return self.get_parameters(nn_output)

    @rlgraph_api
    def get_logits_probabilities_log_probs(self, nn_output):
        """(logits, probabilities, log-probabilities); (parameters, None, None) for a FloatBox."""
        return self._graph_fn_probabilities(self.get_parameters(nn_output))

    def pre_network_output(self, nn_output):
        """The pre-network's output on `nn_output`; `nn_output` itself without a pre-network (call
        inside API methods)."""
        return nn_output if self.pre_network is None else self.pre_network.apply(nn_output)["output"]

    # --- Graph functions ---------------------------------------------------------------------------
    @graph_fn(returns=1)
    def _graph_fn_parameters(self, action_layer_output):
        return self.to_parameters(action_layer_output[..., self.add_units:] if self.add_units else action_layer_output)

    @graph_fn(returns=1)
    def _graph_fn_sde_parameters(self, action_layer_output, nn_output):
        mean = reshape_last(action_layer_output[..., self.add_units:] if self.add_units else action_layer_output,
                            self.action_shape)
        if self.clip_mean is not None:
            mean = backend_maths().clip(mean, -self.clip_mean, self.clip_mean)
        log_std = state_dependent_log_std(nn_output, self.sde_log_std, LOG_STD_MIN, LOG_STD_MAX,
                                          self.sde_learn_features)
        return mean, reshape_last(log_std, self.action_shape)

    @graph_fn(returns=1)
    def _graph_fn_exploration_noise(self, nn_output):
        noise = exploration_noise(nn_output, self.sde_log_std, self.sde_noise, LOG_STD_MIN, LOG_STD_MAX,
                                  self.sde_learn_features)
        return reshape_last(noise, self.action_shape)

    @graph_fn
    def _graph_fn_reset_noise(self):
        return resample_unit_noise(self.sde_noise)

    @graph_fn(returns=3)
    def _graph_fn_probabilities(self, parameters):
        m = backend_maths()
        if self.kind == "categorical":
            return parameters, m.softmax(parameters), m.log_softmax(parameters)
        if self.kind == "bernoulli":
            # log sigmoid(x) = -softplus(-x): finite for large |x|.
            return parameters, m.sigmoid(parameters), -m.softplus(-parameters)
        return parameters, None, None

    def to_parameters(self, x):
        """Backend maths: parameter units [..., parameter_units] -> the distribution parameters."""
        m = backend_maths()
        if self.kind == "categorical":
            return reshape_last(x, self.action_shape + (self.num_categories,))
        if self.kind == "bernoulli":
            return reshape_last(x, self.action_shape)
        if self.log_std is not None:
            mean = reshape_last(x, self.action_shape)
            return mean, m.zeros_like(mean) + m.clip(self.log_std, LOG_STD_MIN, LOG_STD_MAX)
        half = self.parameter_units // 2
        first, second = reshape_last(x[..., :half], self.action_shape), reshape_last(x[..., half:], self.action_shape)
        if self.parameterization == "beta":
            return 1.0 + m.softplus(first), 1.0 + m.softplus(second)
        return first, m.clip(second, LOG_STD_MIN, LOG_STD_MAX)
