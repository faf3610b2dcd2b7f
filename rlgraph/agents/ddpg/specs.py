"""How `DDPGAgent` reads its arguments: optimizer and noise specs, vinci's names, target rates.

Each function takes what the user passed (None where nothing was) and returns the value the
agent uses, or raises an `RLGraphSpecError` naming the argument.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from rlgraph.agents.specs import check_number
from rlgraph.spaces import FloatBox
from rlgraph.spaces.containers import ContainerSpace
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

# The learning rates of the DDPG paper (section 7, https://arxiv.org/abs/1509.02971).
DEFAULT_ACTOR_LEARNING_RATE = 1e-4
DEFAULT_CRITIC_LEARNING_RATE = 1e-3
# tau of the soft target updates (TD3's and Stable-Baselines3's; the paper's 1e-3 learns slower).
DEFAULT_TAU = 0.005
# The paper's Ornstein-Uhlenbeck noise (theta 0.15, sigma 0.2), in action units.
DEFAULT_NOISE_SPEC = {"type": "ornstein-uhlenbeck", "theta": 0.15, "sigma": 0.2}


def optimizer_spec(spec: Any, learning_rate: Any, default_rate: float, scope: str, names: Tuple[str, str],
                   owner: str) -> Dict[str, Any]:
    """An optimizer spec with its own scope: `spec`, else Adam at `learning_rate` or `default_rate`.

    Args:
        spec: The optimizer spec (a dict) or None.
        learning_rate: vinci's learning-rate argument, or None.
        default_rate: The learning rate without spec and `learning_rate`.
        scope: The optimizer's scope unless the spec names one.
        names: (the spec's argument name, the learning rate's argument name), for errors.
        owner: The agent class name.

    Raises:
        RLGraphSpecError: For a spec that is no dict, or a learning rate given twice.
    """
    spec_name, rate_name = names
    if spec is not None and not isinstance(spec, dict):
        raise RLGraphSpecError(f"{spec_name} must be a dict", where=f"{owner}({spec_name})",
                               expected='e.g. {"type": "adam", "learning_rate": 1e-3}', received=repr(spec)[:80])
    if learning_rate is not None:
        learning_rate = check_number(learning_rate, rate_name, owner, low=0.0)
    out = dict(spec or {"type": "adam"})
    if learning_rate is not None:
        if "learning_rate" in out:
            raise RLGraphSpecError(f"{rate_name} and {spec_name}.learning_rate are both given",
                                   where=f"{owner}({rate_name})",
                                   received=f"{learning_rate} and {out['learning_rate']}",
                                   hint=f"give the learning rate once ({rate_name} is vinci's name for it).")
        out["learning_rate"] = learning_rate
    out.setdefault("learning_rate", default_rate)
    out.setdefault("scope", scope)
    return out


def one_of(values: Dict[str, Any], owner: str) -> Optional[Tuple[str, Any]]:
    """(name, value) of the only non-None entry of `values` (None if all are None).

    Raises:
        RLGraphSpecError: If several are given (they are aliases of each other).
    """
    given = [(name, value) for name, value in values.items() if value is not None]
    if len(given) > 1:
        names = [name for name, _ in given]
        raise RLGraphSpecError(f"{' and '.join(names)} are aliases: give one", where=f"{owner}({names[0]})",
                               received=names)
    return given[0] if given else None


def exploration_spec(exploration: Any, noise_spec: Any, random_process: Any, owner: str,
                     default: Optional[dict] = None) -> Dict[str, Any]:
    """The `Exploration` spec: noise only (no epsilon), the `default` noise (else `DEFAULT_NOISE_SPEC`)
    if none is given.

    Raises:
        RLGraphSpecError: For several of the three, specs that are no dicts, or an epsilon_spec.
    """
    given = one_of({"exploration_spec": exploration, "noise_spec": noise_spec, "random_process": random_process},
                   owner)
    default = dict(DEFAULT_NOISE_SPEC if default is None else default)
    if given is None:
        return {"noise_spec": default}
    name, value = given
    if not isinstance(value, dict):
        expected = '{"noise_spec": {"type": "gaussian", "stddev": 0.1}}' if name == "exploration_spec" else \
            'e.g. {"type": "ornstein-uhlenbeck", "sigma": 0.2}'
        raise RLGraphSpecError(f"{name} must be a dict", where=f"{owner}({name})", received=repr(value)[:80],
                               expected=expected)
    if name != "exploration_spec":
        return {"noise_spec": dict(value)}
    if value.get("epsilon_spec") is not None:
        raise RLGraphSpecError("DDPG explores with noise on its continuous actions, not epsilon-greedy",
                               where=f"{owner}(exploration_spec.epsilon_spec)", received=repr(value["epsilon_spec"]),
                               hint='give exploration_spec={"noise_spec": {...}} or noise_spec.')
    out = dict(value)
    if out.get("noise_spec") is None:
        out["noise_spec"] = default
    return out


def update_spec(spec: Any, batch_size: Any, train_interval: Any, owner: str) -> Any:
    """`update_spec` with vinci's `batch_size` and `train_interval` (= update_interval) folded in.

    Raises:
        RLGraphSpecError: For `sync_interval` (DDPG syncs its targets softly after every update)
            or a value given both ways.
    """
    if not isinstance(spec, dict):
        if spec is not None or (batch_size is None and train_interval is None):
            return spec  # (The base class reports a spec that is no dict.)
        spec = {}
    if "sync_interval" in spec:
        raise RLGraphSpecError("DDPG updates its target networks softly after every update, not every "
                               "sync_interval steps", where=f"{owner}(update_spec.sync_interval)",
                               received=repr(spec["sync_interval"]),
                               hint="remove sync_interval; set the rates with target_actor_update / "
                                    "target_critic_update (or update_spec.sync_tau for both).")
    out = dict(spec)
    for alias, key, value in (("batch_size", "batch_size", batch_size), ("train_interval", "update_interval",
                                                                          train_interval)):
        if value is None:
            continue
        if key in out and out[key] != value:
            raise RLGraphSpecError(f"{alias} and update_spec.{key} differ", where=f"{owner}({alias})",
                                   received=f"{value} and {out[key]}", hint="give one of them.")
        out[key] = value
    return out


def target_rates(actor_rate: Any, critic_rate: Any, spec: Any, owner: str) -> Tuple[float, float]:
    """(tau of the target actor, tau of the target critic): each given, else update_spec.sync_tau
    if the user set it, else `DEFAULT_TAU`.

    Raises:
        RLGraphSpecError: For a rate outside (0, 1].
    """
    fallback = spec.get("sync_tau", DEFAULT_TAU) if isinstance(spec, dict) else DEFAULT_TAU
    rates = []
    for name, value in (("target_actor_update", actor_rate), ("target_critic_update", critic_rate)):
        rates.append(check_number(fallback if value is None else value, name, owner, 0.0, 1.0, low_inclusive=False,
                                  hint="the soft target update rate tau: 1 copies, smaller values average."))
    return rates[0], rates[1]


#: The `action_adapter_spec` keys DDPG's actor head reads (it has no distribution to parameterize).
ACTOR_HEAD_KEYS = ("pre_network_spec", "weights_spec", "biases_spec")


def actor_head_spec(spec: Any, owner: str) -> Dict[str, Any]:
    """The `DeterministicActor` arguments in `action_adapter_spec`: its pre-network and the action
    layer's initializers.

    Raises:
        RLGraphSpecError: For a spec that is no dict, or another key (an activation, a
            parameterization: the actor's output is squashed onto the bounds).
    """
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise RLGraphSpecError("action_adapter_spec must be a dict", where=f"{owner}(action_adapter_spec)",
                               expected=f"keys {', '.join(ACTOR_HEAD_KEYS)}", received=repr(spec)[:80])
    unknown = sorted(set(spec) - set(ACTOR_HEAD_KEYS))
    if unknown:
        raise RLGraphSpecError(f"unknown action_adapter_spec key(s) {unknown} for DDPG's actor head",
                               where=f"{owner}(action_adapter_spec)", expected=", ".join(ACTOR_HEAD_KEYS),
                               received=repr(spec)[:120],
                               hint="DDPG's actor is deterministic: its action layer's output is mapped onto the "
                                    "action bounds (squash_actions), so it takes no activation or parameterization.")
    return dict(spec)


def check_action_space(space: Any, algorithm: str, owner: str) -> FloatBox:
    """`space` if it is one FloatBox with finite bounds, low < high.

    Raises:
        RLGraphSpecError: Naming `action_space`, for any other space.
    """
    where = f"{owner}(action_space)"
    if not isinstance(space, FloatBox):
        hint = ("a Dict/Tuple of FloatBoxes is not supported (one noise process covers one FloatBox): "
                "concatenate the actions into one FloatBox." if isinstance(space, ContainerSpace) else
                "use DQN for discrete actions, or a continuous version of the environment.")
        raise RLGraphSpecError(f"{algorithm} needs continuous actions: one bounded FloatBox", where=where,
                               expected="FloatBox(low, high, shape)", received=str(space), hint=hint)
    if not (np.all(np.isfinite(space.low)) and np.all(np.isfinite(space.high)) and np.all(space.high > space.low)):
        raise RLGraphSpecError(f"{algorithm}'s actor maps onto the action bounds, which must be finite with "
                               "low < high", where=where, received=f"low {space.low}, high {space.high}",
                               hint="give the FloatBox finite bounds (e.g. rescale the actions to [-1, 1]).")
    return space


def half_range(action: FloatBox, dtype: Any = np.float32) -> np.ndarray:
    """(high - low) / 2 per action element (the action's shape)."""
    low, high = (np.broadcast_to(np.asarray(b, dtype), action.shape) for b in (action.low, action.high))
    return 0.5 * (high - low)


def target_smoothing(action: FloatBox, sigma: float, clip: Optional[float]) -> Dict[str, Any]:
    """`DDPGCore`'s target noise arguments in action units (half-range times sigma and clip); {} for
    sigma 0 (no smoothing)."""
    if sigma == 0:
        return {}
    half = half_range(action)
    return dict(target_noise=half * sigma, target_noise_clip=None if clip is None else half * clip)


def inverter_bounds(action: FloatBox, p_min: Optional[float], p_max: Optional[float], owner: str) -> tuple:
    """(p_min, p_max) of gradient inverting, shaped like the action (default: the action bounds).

    Raises:
        RLGraphSpecError: Unless p_max > p_min everywhere.
    """
    shape = action.shape
    p_min = np.broadcast_to(np.asarray(action.low if p_min is None else p_min, np.float32), shape).copy()
    p_max = np.broadcast_to(np.asarray(action.high if p_max is None else p_max, np.float32), shape).copy()
    if not np.all(p_max > p_min):
        raise RLGraphSpecError("gradient_inverter_max must exceed gradient_inverter_min",
                               where=f"{owner}(gradient_inverter_max)", received=f"{p_min} and {p_max}")
    return p_min, p_max
