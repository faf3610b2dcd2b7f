"""The algorithms and rlgraph variants of the learning-quality study (`rlgraph benchmark learning`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Tuple

#: The peer library's name in the study's runs and tables.
SB3 = "sb3"


@dataclass(frozen=True)
class StudyAlgo:
    """What the study needs of one algorithm: its peer benchmark module and run settings."""
    module: str            # The SB3 peer benchmark (HYPERPARAMETERS, rlgraph_config, make_sb3_model).
    env_id: str
    steps: int             # Env steps per run.
    eval_interval: int     # Env steps between evaluations.
    threshold: float       # The "solved" return (the env's reward_threshold, or rl-zoo's for Pendulum).
    num_envs: int          # Envs rlgraph's worker steps (SB3's model brings its own).
    continuous: bool       # Box actions (Pendulum) rather than Discrete.


ALGOS: Dict[str, StudyAlgo] = {
    "dqn": StudyAlgo("rlgraph.benchmarks.dqn_vs_sb3", "CartPole-v1", 50_000, 2_500, 475.0, 1, False),
    "ppo": StudyAlgo("rlgraph.benchmarks.ppo_vs_sb3", "CartPole-v1", 100_000, 5_000, 475.0, 8, False),
    "sac": StudyAlgo("rlgraph.benchmarks.sac_vs_sb3", "Pendulum-v1", 20_000, 1_000, -200.0, 1, True),
}
# --quick: a run of seconds through every phase (warm-up, updates, two evaluations), 2 seeds.
QUICK = {"steps": 600, "eval_interval": 300, "eval_episodes": 2, "seeds": [1, 2],
         "hyperparameters": {"dqn": {"learning_starts": 100, "train_freq": 64, "gradient_steps": 8},
                             "ppo": {"n_epochs": 2},
                             "sac": {"learning_starts": 100, "batch_size": 64, "net_arch": [64, 64]}}}


def _glorot_init(config: dict) -> dict:
    """rlgraph's DenseLayer default: glorot-uniform weights and zero biases (instead of the
    fan-in uniform draw of torch.nn.Linear that dqn-sb3 and the shipped DQN configs use)."""
    for layer in config["network_spec"]:
        layer.update(weights_spec="glorot_uniform", biases_spec=0.0)
    config["action_adapter_spec"] = dict(config.get("action_adapter_spec") or {}, weights_spec="glorot_uniform",
                                         biases_spec=0.0)
    return config


def _set(path: str, value: Any) -> Callable[[dict], dict]:
    def change(config: dict) -> dict:
        node = config
        keys = path.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        if value is _DELETE:
            node.pop(keys[-1], None)
        else:
            node[keys[-1]] = value
        return config
    return change


_DELETE = object()
# algo -> variant -> (what it changes, config -> config). "baseline" is SB3's hyperparameters.
VARIANTS: Dict[str, Dict[str, Tuple[str, Callable[[dict], dict]]]] = {
    "dqn": {
        "baseline": ("rl-zoo hyperparameters as in dqn-sb3: fan-in uniform init (torch's), Adam eps 1e-8, "
                     "grad-norm clip 10", lambda config: config),
        "glorot-init": ("glorot-uniform weights and zero biases (rlgraph's DenseLayer default)", _glorot_init),
        "adam-eps-1e-7": ("Adam epsilon 1e-7 (rlgraph's default) instead of torch's 1e-8",
                          _set("optimizer_spec.epsilon", 1e-7)),
        "no-clip": ("no gradient-norm clipping (SB3 clips at 10)", _set("optimizer_spec.clip_grad_norm", _DELETE)),
        "double-q": ("double Q-learning target (SB3's DQN has none)", _set("double_q", True)),
        "mse": ("0.5 * TD^2 loss instead of Huber (SB3: smooth L1)", _set("huber_loss", False)),
    },
    "ppo": {"baseline": ("rl-zoo hyperparameters as in ppo-sb3", lambda config: config)},
    "sac": {"baseline": ("rl-zoo hyperparameters as in sac-sb3", lambda config: config)},
}
