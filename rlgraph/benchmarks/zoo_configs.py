"""The zoo's hyperparameters (`zoo_table`) as an rlgraph config and as a Stable-Baselines3 model.

`rlgraph_config(pair)` is what configs/zoo/<algo>_<env>.json hold (`write_configs` writes them;
a test checks the files equal it), and what `rlgraph train --algo A --env E` trains for a pair of
the table. `make_sb3_model(pair, seed)` builds SB3's model exactly as the zoo's yml describes it
(VecNormalize, gSDE, log_std_init included): the peer of `rlgraph benchmark zoo`.

How SB3's hyperparameters map onto rlgraph's agents:
- DQN: vanilla (not double) Q target, Huber loss, hard target copies every
  `target_update_interval` env steps, epsilon decayed linearly over `exploration_fraction` of the
  run, Adam with epsilon 1e-8 and global gradient-norm clipping at `max_grad_norm`;
- PPO/A2C: batch_size = n_envs * n_steps (one rollout over all envs), PPO's sample_size = SB3's
  batch_size (its minibatch); weight_vf = 2 * vf_coef (rlgraph's value loss is 0.5 (V - G)^2,
  SB3's (V - G)^2); A2C's RMSprop with SB3's alpha and epsilon (both add epsilon outside the root);
  continuous actions: SB3's Gaussian policy, a state-independent log-std from `log_std_init`
  (`ActionAdapter(log_std_init=...)`) and unsquashed samples (`bounded_distribution_type`
  "normal"), which `OpenAIGymEnv` clips to the bounds as SB3 clips them; where the zoo sets
  `use_sde`, gSDE (`ActionAdapter(use_sde=True)`, its log-std matrix from `log_std_init`, one noise
  matrix per env, SB3's `sde_sample_freq`);
- SAC: warmup_random_steps = steps_before_update = learning_starts, a soft update (tau) after
  every gradient step; a fixed `ent_coef` is a fixed alpha (target_entropy None); with `use_sde`,
  gSDE with the log-std matrix from `log_std_init` and the mean clipped to +-2 (SB3's actor);
- TD3/DDPG: random_steps = steps_before_update = learning_starts; SB3's action noise acts on
  actions scaled to [-1, 1], so its std is multiplied by the action's half-range here; its
  Ornstein-Uhlenbeck noise (theta 0.15, dt 0.01) is rlgraph's (dt 1) with theta * dt and
  sigma * sqrt(dt).
- `normalize` (SB3's VecNormalize): a "moving-standardize" preprocessor whose statistics run over
  the whole training (`per_episode` false) and a clip at +-10 for the states, and
  `observe_spec.normalize_rewards` for the rewards (`rlgraph/agents/reward_scaling.py`).
Layers are initialized as SB3's are: torch.nn.Linear's fan-in uniform draw, or orthogonal with
gains sqrt(2) (hidden) and 0.01 (policy output) where SB3's `ortho_init` is on.
"""
from __future__ import annotations

import copy
import json
import math
import os
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from rlgraph.benchmarks.zoo_table import BY_NAME, ZOO_SOURCE, ZooPair

CONTINUOUS_ENVS = {"Pendulum-v1": 2.0, "MountainCarContinuous-v0": 1.0, "LunarLanderContinuous-v3": 1.0}
"""The continuous environments of the table -> their actions' half-range (high - low) / 2."""
THRESHOLDS = {"CartPole-v1": 475.0, "Acrobot-v1": -100.0, "MountainCar-v0": -110.0, "LunarLander-v3": 200.0,
              "Pendulum-v1": -200.0, "MountainCarContinuous-v0": 90.0, "LunarLanderContinuous-v3": 200.0}
"""The "solved" return of each environment (gymnasium's reward_threshold; Pendulum: the zoo's -200)."""
EVALUATIONS_PER_RUN = 20
_FAN_IN = {"weights_spec": "fan_in_uniform", "biases_spec": "fan_in_uniform"}
_OU_THETA, _OU_DT = 0.15, 1e-2  # SB3's OrnsteinUhlenbeckActionNoise defaults.
_NORMALIZE_CLIP = 10.0  # VecNormalize's clip_obs and clip_reward.
_ALGO_TYPES = {"dqn": "dqn", "ppo": "ppo", "a2c": "actor-critic", "sac": "sac", "td3": "td3", "ddpg": "ddpg"}


def is_continuous(pair: ZooPair) -> bool:
    return pair.env_id in CONTINUOUS_ENVS


def num_envs(pair: ZooPair) -> int:
    return int(pair.hyperparameters.get("n_envs", 1))


def threshold(pair: ZooPair) -> Optional[float]:
    return THRESHOLDS.get(pair.env_id)


def to_env_action(pair: ZooPair) -> Callable[[Any], Any]:
    """Converts one action of a batch into what the gymnasium env takes (continuous actions clipped
    to the env's bounds, symmetric in the table's envs)."""
    if is_continuous(pair):  # (Clipped to the bounds, as SB3's `predict` and rlgraph's OpenAIGymEnv clip.)
        bound = CONTINUOUS_ENVS[pair.env_id]
        return lambda action: np.clip(np.asarray(action, dtype=np.float32).reshape(-1), -bound, bound)
    return int


def deviations(pair: ZooPair) -> List[str]:
    """What of the zoo's settings rlgraph's config cannot mirror (written into its "about")."""
    hp, notes = pair.hyperparameters, []
    if hp.get("use_sde") and pair.algo not in ("ppo", "a2c", "sac"):
        notes.append("gSDE (state-dependent exploration): a Gaussian policy instead")
    return notes


def rlgraph_config(pair: ZooPair, backend: str = "pytorch", seed: Optional[int] = None, steps: Optional[int] = None,
                   threads: int = 1) -> dict:
    """The rlgraph run config of `pair`: agent spec, "environment_spec", "training_spec" and "about".

    Args:
        pair: A row of `zoo_table.ZOO_PAIRS` (or its name, "dqn/CartPole-v1").
        backend: "pytorch" or "tf".
        seed: execution_spec.seed (None: none in the config).
        steps: Env steps of the run (default: the zoo's budget); also `execution_spec.max_timesteps`,
            which the schedules (epsilon, learning rates, clip ratio) span, as SB3's progress does.
        threads: torch/tf intra-op threads.
    """
    pair = BY_NAME[pair] if isinstance(pair, str) else pair
    hp, steps = pair.hyperparameters, int(steps or pair.steps)
    config = dict(type=_ALGO_TYPES[pair.algo], backend=backend, **_AGENTS[pair.algo](pair, hp, steps))
    if hp.get("normalize"):
        normalize = _normalize(hp)
        config["preprocessing_spec"] = normalize["preprocessing_spec"]
        config["observe_spec"] = dict(config.get("observe_spec") or {}, **normalize["observe_spec"])
    execution = {"max_timesteps": steps, "torch_num_threads": threads, "tf_num_threads": threads}
    if seed is not None:
        execution["seed"] = int(seed)
    config["execution_spec"] = execution
    config["environment_spec"] = {"type": "openai-gym", "gym_env": pair.env_id}
    config["training_spec"] = {"num_timesteps": steps, "num_environments": num_envs(pair),
                               "evaluation_interval": max(1, steps // EVALUATIONS_PER_RUN),
                               "evaluation_episodes": 5}
    zoo_id = pair.zoo_env_id or pair.env_id
    config["about"] = {
        "source": f"{ZOO_SOURCE}: hyperparams/{pair.algo}.yml, {pair.env_id}; score from benchmark.md ({zoo_id})",
        "zoo_score": list(pair.published), "zoo_budget": pair.steps, "deviations": deviations(pair)}
    return config


def _normalize(hp: Dict[str, Any]) -> dict:
    """SB3's VecNormalize (obs and rewards, clipped at 10): states standardized by statistics over the
    whole run, rewards scaled by the running std of the return (with the algorithm's gamma, as the
    zoo passes it)."""
    return {"preprocessing_spec": [{"type": "moving-standardize", "per_episode": False, "scope": "normalize"},
                                   {"type": "clip", "min": -_NORMALIZE_CLIP, "max": _NORMALIZE_CLIP,
                                    "scope": "clip"}],
            "observe_spec": {"normalize_rewards": {"gamma": hp["gamma"], "clip": _NORMALIZE_CLIP}}}


def _layers(hp: Dict[str, Any], prefix: str, init: Dict[str, Any]) -> List[dict]:
    return [dict({"type": "dense", "units": units, "activation": hp["activation"], "scope": f"{prefix}hidden-{i + 1}"},
                 **init) for i, units in enumerate(hp["net_arch"])]


def _dqn(pair: ZooPair, hp: Dict[str, Any], steps: int) -> dict:
    return {
        "discount": hp["gamma"], "double_q": False, "dueling_q": False, "huber_loss": True, "n_step": 1,
        "memory_spec": {"type": "replay-memory", "capacity": min(hp["buffer_size"], steps)},
        "network_spec": _layers(hp, "", _FAN_IN), "action_adapter_spec": dict(_FAN_IN),
        "exploration_spec": {"epsilon_spec": {"decay_spec": {
            "type": "linear-decay", "from": hp["exploration_initial_eps"], "to": hp["exploration_final_eps"],
            "start_percentage": 0.0, "stop_percentage": hp["exploration_fraction"]}}},
        "observe_spec": {"buffer_size": 32},
        "update_spec": {"update_interval": hp["train_freq"], "steps_before_update": hp["learning_starts"],
                        "batch_size": hp["batch_size"], "sync_interval": hp["target_update_interval"],
                        "update_steps": hp["gradient_steps"]},
        "optimizer_spec": {"type": "adam", "learning_rate": hp["learning_rate"], "epsilon": hp["adam_epsilon"],
                           "clip_grad_norm": hp["max_grad_norm"]},
    }


def _on_policy_layers(hp: Dict[str, Any]) -> tuple:
    """(hidden init, policy output init, value output init) as SB3's `ortho_init` on or off
    (on: orthogonal with gains sqrt(2), 0.01 and 1, zero biases; off: torch's `Linear` default)."""
    if hp["ortho_init"]:
        return tuple({"weights_spec": {"type": "orthogonal", "gain": gain}, "biases_spec": 0.0}
                     for gain in (math.sqrt(2.0), 0.01, 1.0))
    return dict(_FAN_IN), dict(_FAN_IN), dict(_FAN_IN)


def _pg_common(pair: ZooPair, hp: Dict[str, Any]) -> dict:
    hidden, head, value_head = _on_policy_layers(hp)
    config = {"discount": hp["gamma"], "gae_lambda": hp["gae_lambda"],
              "standardize_advantages": hp["normalize_advantage"], "weight_entropy": hp["ent_coef"],
              "weight_vf": 2.0 * hp["vf_coef"], "network_spec": _layers(hp, "", hidden),
              "value_function_spec": dict(network_spec=_layers(hp, "vf-", hidden), **value_head),
              "action_adapter_spec": head}
    if is_continuous(pair):
        # SB3's Gaussian: a free log-std, actions unsquashed (OpenAIGymEnv clips them to the bounds);
        # with use_sde, gSDE with one noise matrix per env and SB3's sde_sample_freq.
        config["action_adapter_spec"] = dict(head, log_std_init=hp["log_std_init"])
        if hp.get("use_sde"):
            config["action_adapter_spec"].update(use_sde=True, sde_matrices=num_envs(pair),
                                                 sde_sample_freq=hp["sde_sample_freq"])
        config["policy_spec"] = {"distributions_spec": {"bounded_distribution_type": "normal"}}
    return config


def _ppo(pair: ZooPair, hp: Dict[str, Any], steps: int) -> dict:
    return dict(_pg_common(pair, hp), clip_ratio=copy.deepcopy(hp["clip_range"]),
                update_spec={"batch_size": num_envs(pair) * hp["n_steps"], "sample_size": hp["batch_size"],
                             "num_epochs": hp["n_epochs"]},
                optimizer_spec={"type": "adam", "learning_rate": copy.deepcopy(hp["learning_rate"]),
                                "epsilon": hp["adam_epsilon"], "clip_grad_norm": hp["max_grad_norm"]})


def _a2c(pair: ZooPair, hp: Dict[str, Any], steps: int) -> dict:
    return dict(_pg_common(pair, hp), update_spec={"batch_size": num_envs(pair) * hp["n_steps"]},
                optimizer_spec={"type": "rmsprop", "learning_rate": copy.deepcopy(hp["learning_rate"]),
                                "decay": hp["rms_prop_alpha"], "epsilon": hp["rms_prop_eps"],
                                "clip_grad_norm": hp["max_grad_norm"]})


def _sac(pair: ZooPair, hp: Dict[str, Any], steps: int) -> dict:
    adam = {"type": "adam", "learning_rate": copy.deepcopy(hp["learning_rate"]), "epsilon": hp["adam_epsilon"]}
    fixed = not (isinstance(hp["ent_coef"], str) and hp["ent_coef"].startswith("auto"))
    return {
        "discount": hp["gamma"], "initial_alpha": float(hp["ent_coef"]) if fixed else 1.0,
        "target_entropy": None if fixed else hp["target_entropy"], "double_q": True,
        "warmup_random_steps": hp["learning_starts"],
        "memory_spec": {"type": "replay-memory", "capacity": min(hp["buffer_size"], steps)},
        # Every layer as torch's `Linear` default, SB3's (the actor's mean and log-std outputs and
        # the critics' Q heads too).
        "network_spec": _layers(hp, "", _FAN_IN), "action_adapter_spec": dict(_FAN_IN),
        "value_function_spec": dict(network_spec=_layers(hp, "vf-", _FAN_IN), **_FAN_IN),
        "optimizer_spec": dict(adam), "value_function_optimizer_spec": dict(adam),
        **({} if fixed else {"alpha_optimizer_spec": dict(adam)}),
        "observe_spec": {"buffer_size": 1},
        "update_spec": {"update_interval": hp["train_freq"], "steps_before_update": hp["learning_starts"],
                        "batch_size": hp["batch_size"], "num_iterations": hp["gradient_steps"],
                        "sync_interval": 0, "sync_tau": hp["tau"]},
        # SB3's SAC actor with gSDE: its log-std matrix from log_std_init, the mean clipped to +-2.
        **({"action_adapter_spec": {"use_sde": True, "log_std_init": hp["log_std_init"], "clip_mean": 2.0,
                                    "sde_matrices": num_envs(pair), "sde_sample_freq": hp.get("sde_sample_freq", -1),
                                    **_FAN_IN}}
           if hp.get("use_sde") else {}),
    }


def _noise_spec(pair: ZooPair, hp: Dict[str, Any]) -> dict:
    scale = CONTINUOUS_ENVS[pair.env_id]
    if hp["noise_type"] == "ornstein-uhlenbeck":
        return {"type": "ornstein-uhlenbeck", "theta": _OU_THETA * _OU_DT,
                "sigma": hp["noise_std"] * math.sqrt(_OU_DT) * scale}
    return {"type": "gaussian", "stddev": hp["noise_std"] * scale}


def _td3(pair: ZooPair, hp: Dict[str, Any], steps: int) -> dict:
    adam = {"type": "adam", "learning_rate": hp["learning_rate"], "epsilon": hp["adam_epsilon"]}
    config = {
        "discount": hp["gamma"], "network_spec": _layers(hp, "", _FAN_IN),
        "critic_network_spec": dict(network_spec=_layers(hp, "", _FAN_IN), **_FAN_IN),
        "action_adapter_spec": dict(_FAN_IN),
        "memory_spec": {"type": "replay-memory", "capacity": min(hp["buffer_size"], steps)},
        "noise_spec": _noise_spec(pair, hp), "optimizer_spec": dict(adam), "critic_optimizer_spec": dict(adam),
        "target_actor_update": hp["tau"], "target_critic_update": hp["tau"], "random_steps": hp["learning_starts"],
        "observe_spec": {"buffer_size": 32},
        "update_spec": {"update_interval": hp["train_freq"], "steps_before_update": hp["learning_starts"],
                        "batch_size": hp["batch_size"], "update_steps": hp["gradient_steps"]},
    }
    if pair.algo == "td3":
        config.update(policy_delay=hp["policy_delay"], target_policy_noise=hp["target_policy_noise"],
                      target_noise_clip=hp["target_noise_clip"])
    return config


_AGENTS = {"dqn": _dqn, "ppo": _ppo, "a2c": _a2c, "sac": _sac, "td3": _td3, "ddpg": _td3}


def write_configs(directory: str, pairs=None) -> List[str]:
    """Writes <directory>/<algo>_<env>.json (configs/zoo/) for each pair (default: the whole table);
    returns the paths.

    >>> import tempfile
    >>> from rlgraph.benchmarks.zoo_table import BY_NAME
    >>> [os.path.basename(p) for p in write_configs(tempfile.mkdtemp(), [BY_NAME["dqn/CartPole-v1"]])]
    ['dqn_cartpole-v1.json']
    """
    from rlgraph.benchmarks.zoo_table import ZOO_PAIRS
    os.makedirs(directory, exist_ok=True)
    paths = []
    for pair in pairs or ZOO_PAIRS:
        path = os.path.join(directory, pair.config_name)
        with open(path, "w") as handle:
            handle.write(config_text(pair))
        paths.append(path)
    return paths


def config_text(pair: ZooPair) -> str:
    """The JSON text of `pair`'s shipped config: no seed, no backend (rlgraph's default or --backend)."""
    config = rlgraph_config(pair)
    del config["backend"]
    return json.dumps(config, indent=2) + "\n"


# --- Stable-Baselines3 ---------------------------------------------------------------------------------
def _schedule(value: Any) -> Any:
    """SB3's form of a ["linear", start, end] schedule: a function of the remaining progress (1 -> 0)."""
    if isinstance(value, (list, tuple)):
        _, start, end = value
        return lambda remaining: end + (start - end) * remaining
    return value


def make_sb3_model(pair: ZooPair, seed: int, steps: Optional[int] = None) -> Any:
    """SB3's model for `pair`, set up as the zoo's yml sets it (its own vec env of n_envs, seeded)."""
    from rlgraph.benchmarks.sb3_peer import require_sb3
    sb3 = require_sb3("zoo")
    import torch
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.noise import NormalActionNoise, OrnsteinUhlenbeckActionNoise
    from stable_baselines3.common.vec_env import VecNormalize
    pair = BY_NAME[pair] if isinstance(pair, str) else pair
    hp = pair.hyperparameters
    env = make_vec_env(pair.env_id, n_envs=num_envs(pair), seed=seed)
    if hp.get("normalize"):
        env = VecNormalize(env, gamma=hp["gamma"])
    activation = {"tanh": torch.nn.Tanh, "relu": torch.nn.ReLU}[hp["activation"]]
    policy_kwargs: Dict[str, Any] = {"net_arch": list(hp["net_arch"]), "activation_fn": activation}
    common = dict(learning_rate=_schedule(hp["learning_rate"]), gamma=hp["gamma"], seed=seed, device="cpu", verbose=0)
    if pair.algo in ("ppo", "a2c"):
        policy_kwargs.update(ortho_init=hp["ortho_init"])
        if is_continuous(pair):
            policy_kwargs["log_std_init"] = hp["log_std_init"]
        common.update(n_steps=hp["n_steps"], gae_lambda=hp["gae_lambda"], ent_coef=hp["ent_coef"],
                      vf_coef=hp["vf_coef"], max_grad_norm=hp["max_grad_norm"], use_sde=hp["use_sde"],
                      sde_sample_freq=hp["sde_sample_freq"], normalize_advantage=hp["normalize_advantage"])
        if pair.algo == "ppo":
            policy_kwargs["optimizer_kwargs"] = {"eps": hp["adam_epsilon"]}
            model = sb3.PPO("MlpPolicy", env, batch_size=hp["batch_size"], n_epochs=hp["n_epochs"],
                            clip_range=_schedule(hp["clip_range"]), policy_kwargs=policy_kwargs, **common)
        else:  # (SB3's A2C makes its RMSprop with alpha 0.99 and eps rms_prop_eps itself.)
            model = sb3.A2C("MlpPolicy", env, rms_prop_eps=hp["rms_prop_eps"], policy_kwargs=policy_kwargs, **common)
        return model
    policy_kwargs["optimizer_kwargs"] = {"eps": hp["adam_epsilon"]}
    off_policy = dict(common, buffer_size=hp["buffer_size"], learning_starts=hp["learning_starts"],
                      batch_size=hp["batch_size"], tau=hp["tau"], train_freq=hp["train_freq"],
                      gradient_steps=hp["gradient_steps"])
    if pair.algo == "dqn":
        return sb3.DQN("MlpPolicy", env, target_update_interval=hp["target_update_interval"],
                       exploration_fraction=hp["exploration_fraction"],
                       exploration_initial_eps=hp["exploration_initial_eps"],
                       exploration_final_eps=hp["exploration_final_eps"], max_grad_norm=hp["max_grad_norm"],
                       policy_kwargs=policy_kwargs, **off_policy)
    if pair.algo == "sac":
        if hp["use_sde"]:
            policy_kwargs["log_std_init"] = hp["log_std_init"]
        return sb3.SAC("MlpPolicy", env, ent_coef=hp["ent_coef"], target_entropy=hp["target_entropy"],
                       use_sde=hp["use_sde"], policy_kwargs=policy_kwargs, **off_policy)
    actions = env.action_space.shape[-1]
    noise = None
    if hp["noise_type"] == "normal":
        noise = NormalActionNoise(np.zeros(actions), hp["noise_std"] * np.ones(actions))
    elif hp["noise_type"] == "ornstein-uhlenbeck":
        noise = OrnsteinUhlenbeckActionNoise(np.zeros(actions), hp["noise_std"] * np.ones(actions))
    if pair.algo == "td3":
        return sb3.TD3("MlpPolicy", env, action_noise=noise, policy_delay=hp["policy_delay"],
                       target_policy_noise=hp["target_policy_noise"], target_noise_clip=hp["target_noise_clip"],
                       policy_kwargs=policy_kwargs, **off_policy)
    return sb3.DDPG("MlpPolicy", env, action_noise=noise, policy_kwargs=policy_kwargs, **off_policy)


def sb3_act(model: Any) -> Callable[[np.ndarray], np.ndarray]:
    """Deterministic actions of `model` for a batch of raw observations (normalized first with the
    running statistics of its VecNormalize, where the zoo normalizes)."""
    from stable_baselines3.common.vec_env import VecNormalize
    env = model.get_env()

    def act(states: np.ndarray) -> np.ndarray:
        if isinstance(env, VecNormalize):
            states = env.normalize_obs(states)
        return model.predict(states, deterministic=True)[0]
    return act
