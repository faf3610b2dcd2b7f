"""rl-baselines3-zoo's benchmark table for the algorithms rlgraph ships, as data.

Each `ZooPair` is one row of the zoo's `benchmark.md` for DQN, PPO, A2C, SAC, TD3 or DDPG on
CartPole-v1, Acrobot-v1, MountainCar-v0, LunarLander, Pendulum-v1, MountainCarContinuous-v0 or
LunarLanderContinuous: the published score (mean and std of the zoo's evaluation), the budget
in env steps, and the hyperparameters of the zoo's `hyperparams/<algo>.yml` for that env, in
Stable-Baselines3's names, with every SB3 default they rely on written out, so that one dict
says everything both libraries are given (`zoo_configs` turns it into an rlgraph config and an
SB3 model). Read from rl-baselines3-zoo at commit 22e3ff2 (2025); the zoo's table was made
with LunarLander-v2, gymnasium 1.x has LunarLander-v3 (the same task; the zoo's yml lists
v3 with the same hyperparameters).

Conventions in `hyperparameters`:
- schedules are ["linear", start, end] over the run (the zoo's "lin_x" is ["linear", x, 0.0]);
- DQN's `gradient_steps: -1` (as many gradient steps as env steps per round) is written as its
  value, `train_freq`;
- "net_arch" is the hidden layer sizes (the same for every network of the algorithm), "activation"
  their nonlinearity (SB3: tanh for PPO/A2C, ReLU for the others);
- "normalize" (SB3's VecNormalize of observations and rewards), "use_sde" (generalized state-
  dependent exploration), "log_std_init" and "ortho_init" are passed to SB3 as the zoo passes
  them; where rlgraph has no equivalent, the pair's `deviations` say so (and `zoo_configs`
  writes them into the config's "about" section).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Tuple

ZOO_SOURCE = "rl-baselines3-zoo (https://github.com/DLR-RM/rl-baselines3-zoo) at commit 22e3ff2"


@dataclass(frozen=True)
class ZooPair:
    """One (algorithm, environment) row of the zoo's benchmark table."""
    algo: str                            # rlgraph's --algo name: dqn, ppo, a2c, sac, td3, ddpg.
    env_id: str                          # The gymnasium id rlgraph trains on.
    steps: int                           # The zoo's budget (n_timesteps), in env steps.
    published: Tuple[float, float]       # The zoo's score: mean and std of its evaluation episodes.
    hyperparameters: Dict[str, Any] = field(default_factory=dict)
    zoo_env_id: str = ""                 # The id in the zoo's table where it differs (LunarLander-v2).

    @property
    def name(self) -> str:
        """"algo/EnvId", e.g. "dqn/CartPole-v1"."""
        return f"{self.algo}/{self.env_id}"

    @property
    def config_name(self) -> str:
        """The config file in configs/zoo/, e.g. "dqn_cartpole-v1.json"."""
        return f"{self.algo}_{self.env_id.lower()}.json"


# SB3 2.x's defaults (the constructor arguments the zoo's yml leaves out).
_DQN = {"learning_rate": 1e-4, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 32, "tau": 1.0,
        "gamma": 0.99, "train_freq": 4, "gradient_steps": 1, "target_update_interval": 10_000,
        "exploration_fraction": 0.1, "exploration_initial_eps": 1.0, "exploration_final_eps": 0.05,
        "max_grad_norm": 10.0, "net_arch": [64, 64], "activation": "relu", "adam_epsilon": 1e-8}
_PPO = {"n_envs": 1, "learning_rate": 3e-4, "n_steps": 2048, "batch_size": 64, "n_epochs": 10, "gamma": 0.99,
        "gae_lambda": 0.95, "clip_range": 0.2, "normalize_advantage": True, "ent_coef": 0.0, "vf_coef": 0.5,
        "max_grad_norm": 0.5, "net_arch": [64, 64], "activation": "tanh", "ortho_init": True, "log_std_init": 0.0,
        "adam_epsilon": 1e-5, "normalize": False, "use_sde": False, "sde_sample_freq": -1}
_A2C = {"n_envs": 1, "learning_rate": 7e-4, "n_steps": 5, "gamma": 0.99, "gae_lambda": 1.0, "ent_coef": 0.0,
        "vf_coef": 0.5, "max_grad_norm": 0.5, "rms_prop_eps": 1e-5, "rms_prop_alpha": 0.99,
        "normalize_advantage": False, "net_arch": [64, 64], "activation": "tanh", "ortho_init": True,
        "log_std_init": 0.0, "normalize": False, "use_sde": False, "sde_sample_freq": -1}
_SAC = {"learning_rate": 3e-4, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 256, "tau": 0.005,
        "gamma": 0.99, "train_freq": 1, "gradient_steps": 1, "ent_coef": "auto", "target_entropy": "auto",
        "net_arch": [256, 256], "activation": "relu", "log_std_init": -3.0, "adam_epsilon": 1e-8, "use_sde": False}
_TD3 = {"learning_rate": 1e-3, "buffer_size": 1_000_000, "learning_starts": 100, "batch_size": 256, "tau": 0.005,
        "gamma": 0.99, "train_freq": 1, "gradient_steps": 1, "policy_delay": 2, "target_policy_noise": 0.2,
        "target_noise_clip": 0.5, "noise_type": None, "noise_std": 0.0, "net_arch": [400, 300], "activation": "relu",
        "adam_epsilon": 1e-8}
# SB3's DDPG is its TD3 with one critic, no policy delay and no target smoothing.
_DDPG = dict(_TD3, policy_delay=1, target_policy_noise=0.0, target_noise_clip=0.0)
_DEFAULTS = {"dqn": _DQN, "ppo": _PPO, "a2c": _A2C, "sac": _SAC, "td3": _TD3, "ddpg": _DDPG}


def _pair(algo: str, env_id: str, steps: float, mean: float, std: float, zoo_env_id: str = "", **zoo: Any) -> ZooPair:
    unknown = set(zoo) - set(_DEFAULTS[algo])
    if unknown:  # A typo in the table must not pass silently as an unused hyperparameter.
        raise KeyError(f"{algo}/{env_id}: unknown hyperparameters {sorted(unknown)}")
    return ZooPair(algo, env_id, int(steps), (mean, std), dict(_DEFAULTS[algo], **zoo), zoo_env_id)


_LUNAR, _LUNAR_CONT = "LunarLander-v3", "LunarLanderContinuous-v3"
_TD3_PENDULUM_LIKE = dict(gamma=0.98, buffer_size=200_000, learning_starts=10_000, noise_type="normal", noise_std=0.1)
_TD3_MCC = dict(noise_type="ornstein-uhlenbeck", noise_std=0.5)

#: The table: every pair of the zoo's benchmark.md for these algorithms and environments.
ZOO_PAIRS: Tuple[ZooPair, ...] = (
    # DQN (hyperparams/dqn.yml).
    _pair("dqn", "CartPole-v1", 5e4, 500.0, 0.0, learning_rate=2.3e-3, batch_size=64, buffer_size=100_000,
          learning_starts=1000, target_update_interval=10, train_freq=256, gradient_steps=128,
          exploration_fraction=0.16, exploration_final_eps=0.04, net_arch=[256, 256]),
    _pair("dqn", "Acrobot-v1", 1e5, -76.639, 11.752, learning_rate=6.3e-4, batch_size=128, buffer_size=50_000,
          learning_starts=0, target_update_interval=250, train_freq=4, gradient_steps=4, exploration_fraction=0.12,
          exploration_final_eps=0.1, net_arch=[256, 256]),
    _pair("dqn", "MountainCar-v0", 1.2e5, -100.849, 9.925, learning_rate=4e-3, batch_size=128, buffer_size=10_000,
          learning_starts=1000, gamma=0.98, target_update_interval=600, train_freq=16, gradient_steps=8,
          exploration_fraction=0.2, exploration_final_eps=0.07, net_arch=[256, 256]),
    _pair("dqn", _LUNAR, 1e5, 154.382, 79.241, "LunarLander-v2", learning_rate=6.3e-4, batch_size=128,
          buffer_size=50_000, learning_starts=0, target_update_interval=250, train_freq=4, gradient_steps=4,
          exploration_fraction=0.12, exploration_final_eps=0.1, net_arch=[256, 256]),
    # PPO (hyperparams/ppo.yml).
    _pair("ppo", "CartPole-v1", 1e5, 500.0, 0.0, n_envs=8, n_steps=32, batch_size=256, gae_lambda=0.8, gamma=0.98,
          n_epochs=20, learning_rate=["linear", 1e-3, 0.0], clip_range=["linear", 0.2, 0.0]),
    _pair("ppo", "Acrobot-v1", 1e6, -73.506, 18.201, normalize=True, n_envs=16, n_steps=256, gae_lambda=0.94,
          n_epochs=4),
    _pair("ppo", "MountainCar-v0", 1e6, -110.423, 19.473, normalize=True, n_envs=16, n_steps=16, gae_lambda=0.98,
          n_epochs=4),
    _pair("ppo", _LUNAR, 1e6, 242.119, 31.823, "LunarLander-v2", n_envs=16, n_steps=1024, batch_size=64,
          gae_lambda=0.98, gamma=0.999, n_epochs=4, ent_coef=0.01),
    _pair("ppo", "Pendulum-v1", 1e5, -172.225, 104.159, n_envs=4, n_steps=1024, gae_lambda=0.95, gamma=0.9,
          n_epochs=10, learning_rate=1e-3, use_sde=True, sde_sample_freq=4),
    _pair("ppo", "MountainCarContinuous-v0", 2e4, 88.343, 2.572, normalize=True, batch_size=256, n_steps=8,
          gamma=0.9999, learning_rate=7.77e-5, ent_coef=0.00429, clip_range=0.1, n_epochs=10, gae_lambda=0.9,
          max_grad_norm=5.0, vf_coef=0.19, use_sde=True, log_std_init=-3.29, ortho_init=False),
    _pair("ppo", _LUNAR_CONT, 1e6, 270.863, 32.072, "LunarLanderContinuous-v2", n_envs=16, n_steps=1024,
          batch_size=64, gae_lambda=0.98, gamma=0.999, n_epochs=4, ent_coef=0.01),
    # A2C (hyperparams/a2c.yml).
    _pair("a2c", "CartPole-v1", 5e5, 500.0, 0.0, n_envs=8),
    _pair("a2c", "Acrobot-v1", 5e5, -83.353, 17.213, normalize=True, n_envs=16),
    _pair("a2c", "MountainCar-v0", 1e6, -111.263, 24.087, normalize=True, n_envs=16),
    _pair("a2c", _LUNAR, 2e5, 155.751, 80.419, "LunarLander-v2", n_envs=8, gamma=0.995,
          learning_rate=["linear", 8.3e-4, 0.0], ent_coef=1e-5),
    _pair("a2c", "Pendulum-v1", 1e6, -162.965, 103.210, normalize=True, n_envs=8, max_grad_norm=0.5, n_steps=8,
          gae_lambda=0.9, vf_coef=0.4, gamma=0.9, normalize_advantage=False, learning_rate=["linear", 7e-4, 0.0],
          use_sde=True, log_std_init=-2.0, ortho_init=False),
    _pair("a2c", "MountainCarContinuous-v0", 1e5, 91.166, 0.255, normalize=True, n_envs=4, n_steps=100,
          use_sde=True, sde_sample_freq=16, log_std_init=0.0, ortho_init=False),
    _pair("a2c", _LUNAR_CONT, 5e6, 84.225, 145.906, "LunarLanderContinuous-v2", normalize=True, n_envs=4,
          max_grad_norm=0.5, n_steps=8, gae_lambda=0.9, vf_coef=0.4, normalize_advantage=False,
          learning_rate=["linear", 7e-4, 0.0], use_sde=True, log_std_init=-2.0, ortho_init=False),
    # SAC (hyperparams/sac.yml).
    _pair("sac", "Pendulum-v1", 2e4, -156.995, 88.714, learning_rate=1e-3),
    _pair("sac", "MountainCarContinuous-v0", 5e4, 94.679, 1.134, learning_rate=3e-4, buffer_size=50_000,
          batch_size=512, ent_coef=0.1, train_freq=32, gradient_steps=32, gamma=0.9999, tau=0.01, learning_starts=0,
          use_sde=True, log_std_init=-3.67, net_arch=[64, 64]),
    _pair("sac", _LUNAR_CONT, 5e5, 260.390, 65.467, "LunarLanderContinuous-v2", batch_size=256,
          learning_rate=["linear", 7.3e-4, 0.0], buffer_size=1_000_000, gamma=0.99, tau=0.01, learning_starts=10_000,
          net_arch=[400, 300]),
    # TD3 (hyperparams/td3.yml).
    _pair("td3", "Pendulum-v1", 2e4, -151.855, 90.227, **_TD3_PENDULUM_LIKE),
    _pair("td3", "MountainCarContinuous-v0", 3e5, 93.483, 0.075, **_TD3_MCC),
    _pair("td3", _LUNAR_CONT, 3e5, 207.451, 67.562, "LunarLanderContinuous-v2", **_TD3_PENDULUM_LIKE),
    # DDPG (hyperparams/ddpg.yml: the same settings as TD3's).
    _pair("ddpg", "Pendulum-v1", 2e4, -152.099, 94.282, **_TD3_PENDULUM_LIKE),
    _pair("ddpg", "MountainCarContinuous-v0", 3e5, 93.512, 0.048, **_TD3_MCC),
    _pair("ddpg", _LUNAR_CONT, 3e5, 230.217, 92.372, "LunarLanderContinuous-v2", **_TD3_PENDULUM_LIKE),
)

#: "algo/EnvId" -> pair.
BY_NAME: Dict[str, ZooPair] = {pair.name: pair for pair in ZOO_PAIRS}
