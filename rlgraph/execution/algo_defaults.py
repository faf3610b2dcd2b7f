"""`rlgraph train --algo ALGO --env ID`: a config without a config file.

`algo_config(algo, env_id)` picks, in this order:

1. the shipped config for that algorithm and environment: for every pair of rl-baselines3-zoo's
   benchmark table, configs/zoo/<algo>_<env>.json with the zoo's hyperparameters and budget
   (`zoo_config_name`; written from `rlgraph.benchmarks.zoo_table`; e.g. dqn on CartPole-v1 ->
   configs/zoo/dqn_cartpole-v1.json); else one of configs/ (`TUNED_CONFIGS`, e.g. impala on
   CartPole-v1 -> configs/impala_cartpole.json);
2. for an Atari game ("ALE/..."), the algorithm's shipped Atari config with the game changed
   (as `--env` changes it: preprocessing kept, the target return from the gymnasium registry);
3. the algorithm's defaults below (`ALGO_DEFAULTS`), sized for low-dimensional control tasks,
   with the plain gymnasium environment and its registry `reward_threshold` as target.

The shipped configs are the repository's configs/ directory. setup.py installs the same files as
package data in rlgraph/configs/, so an installed rlgraph finds them without a checkout, and a
checkout (editable install) reads configs/ itself: one copy of each file, never two that drift.
The defaults are python dicts in the package, so they need neither.

Where an algorithm cannot act in the environment (DQN on continuous actions, DDPG or TD3 on
discrete ones) the environment's action space is checked first, and the error says which algorithms fit.

>>> config, source = algo_config("dqn", "CartPole-v1")
>>> os.path.relpath(source, os.path.dirname(os.path.dirname(source))), config["environment_spec"]
('zoo/dqn_cartpole-v1.json', {'type': 'openai-gym', 'gym_env': 'CartPole-v1'})
>>> config, source = algo_config("impala", "Acrobot-v1")
>>> source, config["training_spec"]["stop_at_return"]
("rlgraph's impala defaults", -100.0)
"""
from __future__ import annotations

import copy
import json
import logging
import os
from typing import Any, Dict, List, Optional, Tuple

import rlgraph
from rlgraph.agents import (ActorCriticAgent, Agent, ApexAgent, DDPGAgent, DQNAgent, IMPALAAgent, PPOAgent,
                            SACAgent, TD3Agent)
from rlgraph.environments.env_utils import check_env_id
from rlgraph.execution.env_ids import ATARI_NAMESPACE, default_env_spec, env_id, reward_threshold, with_env_id
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

logger = logging.getLogger(__name__)


def _mlp(units: int, activation: str, prefix: str = "", **init: Any) -> List[dict]:
    return [dict({"type": "dense", "units": units, "activation": activation, "scope": f"{prefix}hidden-{i}"}, **init)
            for i in (1, 2)]


# torch.nn.Linear's draw: the seed study of docs/performance.md ("Learning quality") found DQN
# learning CartPole clearly better with it than with glorot weights and zero biases.
_FAN_IN_INIT = {"weights_spec": "fan_in_uniform", "biases_spec": "fan_in_uniform"}


_TRAINING = {"evaluation_interval": 5000, "evaluation_episodes": 5}
_ONE_THREAD = {"torch_num_threads": 1}  # Small networks: more threads cost more than they bring.

# Agent class -> (canonical --algo name, defaults). Each agent's docs page explains the keys.
ALGO_DEFAULTS: Dict[type, Tuple[str, Dict[str, Any]]] = {
    # DQN (https://arxiv.org/abs/1312.5602) with double Q-learning (https://arxiv.org/abs/1509.06461).
    DQNAgent: ("dqn", {
        "type": "dqn", "discount": 0.99, "double_q": True, "dueling_q": False, "huber_loss": True, "n_step": 1,
        "memory_spec": {"type": "replay-memory", "capacity": 50000},
        "network_spec": _mlp(256, "relu", **_FAN_IN_INIT), "action_adapter_spec": dict(_FAN_IN_INIT),
        "exploration_spec": {"epsilon_spec": {"decay_spec": {
            "type": "linear-decay", "from": 1.0, "to": 0.05, "start_percentage": 0.0, "stop_percentage": 0.2}}},
        "observe_spec": {"buffer_size": 32},
        "update_spec": {"update_interval": 4, "steps_before_update": 1000, "batch_size": 64, "sync_interval": 500,
                        "update_steps": 1},
        "optimizer_spec": {"type": "adam", "learning_rate": 0.0005},
        "execution_spec": dict(_ONE_THREAD),
        "training_spec": dict(_TRAINING, num_timesteps=100000)}),
    # PPO (https://arxiv.org/abs/1707.06347), the paper's MuJoCo settings over 4 envs.
    PPOAgent: ("ppo", {
        "type": "ppo", "discount": 0.99, "gae_lambda": 0.95, "clip_ratio": 0.2, "standardize_advantages": True,
        "weight_entropy": 0.0, "weight_vf": 0.5,
        "network_spec": _mlp(64, "tanh"), "value_function_spec": _mlp(64, "tanh", "vf-"),
        "update_spec": {"batch_size": 2048, "sample_size": 64, "num_epochs": 10},
        "optimizer_spec": {"type": "adam", "learning_rate": 0.0003, "clip_grad_norm": 0.5},
        "execution_spec": dict(_ONE_THREAD),
        "training_spec": dict(_TRAINING, num_timesteps=200000, num_environments=4, evaluation_interval=10000)}),
    # A2C, the synchronous form of A3C (https://arxiv.org/abs/1602.01783): 5 steps of 8 envs per update.
    ActorCriticAgent: ("actor-critic", {
        "type": "actor-critic", "discount": 0.99, "gae_lambda": 1.0, "weight_entropy": 0.01, "weight_vf": 0.5,
        "network_spec": _mlp(64, "tanh"), "value_function_spec": _mlp(64, "tanh", "vf-"),
        "update_spec": {"batch_size": 40},
        "optimizer_spec": {"type": "rmsprop", "learning_rate": 0.0007, "decay": 0.99, "epsilon": 1e-05,
                           "clip_grad_norm": 0.5},
        "execution_spec": dict(_ONE_THREAD),
        "training_spec": dict(_TRAINING, num_timesteps=500000, num_environments=8, evaluation_interval=10000)}),
    # SAC (https://arxiv.org/abs/1812.05905; discrete actions: https://arxiv.org/abs/1910.07207).
    SACAgent: ("sac", {
        "type": "sac", "discount": 0.99, "initial_alpha": 1.0, "target_entropy": "auto", "double_q": True,
        "warmup_random_steps": 1000,
        "memory_spec": {"type": "replay-memory", "capacity": 100000},
        "network_spec": _mlp(256, "relu"), "value_function_spec": _mlp(256, "relu", "vf-"),
        "optimizer_spec": {"type": "adam", "learning_rate": 0.0003},
        "value_function_optimizer_spec": {"type": "adam", "learning_rate": 0.0003},
        "alpha_optimizer_spec": {"type": "adam", "learning_rate": 0.0003},
        "observe_spec": {"buffer_size": 200},
        "update_spec": {"update_interval": 1, "steps_before_update": 1000, "batch_size": 256, "sync_interval": 1,
                        "sync_tau": 0.005, "num_iterations": 1},
        "execution_spec": dict(_ONE_THREAD),
        "training_spec": dict(_TRAINING, num_timesteps=100000)}),
    # DDPG (https://arxiv.org/abs/1509.02971) with TD3's Gaussian noise and sizes
    # (https://arxiv.org/abs/1802.09477).
    DDPGAgent: ("ddpg", {
        "type": "ddpg", "discount": 0.99,
        "network_spec": _mlp(256, "relu"), "critic_network_spec": _mlp(256, "relu"),
        "memory_spec": {"type": "replay-memory", "capacity": 100000},
        "noise_spec": {"type": "gaussian", "stddev": 0.1},
        "optimizer_spec": {"type": "adam", "learning_rate": 0.001},
        "critic_optimizer_spec": {"type": "adam", "learning_rate": 0.001},
        "target_actor_update": 0.005, "target_critic_update": 0.005, "random_steps": 1000,
        "observe_spec": {"buffer_size": 32},
        "update_spec": {"update_interval": 1, "steps_before_update": 1000, "batch_size": 256, "update_steps": 1},
        "execution_spec": dict(_ONE_THREAD),
        "training_spec": dict(_TRAINING, num_timesteps=100000)}),
    # IMPALA (https://arxiv.org/abs/1802.01561): 2 actors on Ray (docs/distributed.md).
    IMPALAAgent: ("impala", {
        "type": "impala", "discount": 0.99, "worker_sample_size": 50, "fifo_queue_spec": {"capacity": 64},
        "network_spec": _mlp(64, "tanh"),
        "weight_pg": 1.0, "weight_baseline": 0.5, "weight_entropy": 0.01, "reward_clipping": None,
        "update_spec": {"batch_size": 8},
        "optimizer_spec": {"type": "adam", "learning_rate": 0.001, "clip_grad_norm": 40.0},
        "execution_spec": dict(_ONE_THREAD, ray_spec={
            "executor_spec": {"num_sample_workers": 2, "num_cpus_per_worker": 0.5, "weight_sync_steps": 50,
                              "env_interaction_task_depth": 1},
            "worker_spec": {"num_worker_environments": 1}}),
        "training_spec": dict(_TRAINING, num_timesteps=500000, evaluation_interval=10000, log_interval=2000)}),
    # Ape-X (https://arxiv.org/abs/1803.00933): 2 sample workers and a replay shard on Ray.
    ApexAgent: ("apex", {
        "type": "apex", "discount": 0.99, "double_q": True, "dueling_q": True, "huber_loss": True, "n_step": 3,
        "network_spec": _mlp(128, "relu"),
        "exploration_spec": {"epsilon_spec": {"decay_spec": {
            "type": "linear-decay", "from": 1.0, "to": 0.02, "start_percentage": 0.0, "stop_percentage": 0.1}}},
        "update_spec": {"batch_size": 128, "sync_interval": 500, "update_interval": 4, "update_steps": 1},
        "optimizer_spec": {"type": "adam", "learning_rate": 0.001, "clip_grad_norm": 10},
        "execution_spec": dict(_ONE_THREAD, ray_spec={
            "executor_spec": {"num_sample_workers": 2, "num_replay_workers": 1, "num_cpus_per_worker": 0.5,
                              "num_cpus_per_replay_actor": 0.5, "num_worker_samples": 50, "weight_sync_steps": 100,
                              "replay_sampling_task_depth": 2, "learn_queue_size": 2},
            "worker_spec": {"num_worker_environments": 1},
            "apex_replay_spec": {"memory_spec": {"capacity": 50000, "alpha": 0.6, "beta": 0.4},
                                 "min_sample_memory_size": 1000}}),
        "training_spec": dict(_TRAINING, num_timesteps=200000)}),
}
# TD3 (https://arxiv.org/abs/1802.09477): DDPG's defaults with the TD3 agent's own (twin critics, policy
# delay 2, target noise 0.2 clipped at 0.5, acting noise 0.1; noises in half-ranges of the action).
ALGO_DEFAULTS[TD3Agent] = ("td3", {**{k: v for k, v in ALGO_DEFAULTS[DDPGAgent][1].items() if k != "noise_spec"},
                                   "type": "td3"})
# Agent types that `--algo` refuses -> why.
UNSUPPORTED = {
    "dqfd": "DQfD learns from expert demonstrations, which `rlgraph train` cannot supply; write a script that "
            "fills its demo memory (docs/agents/dqfd.md), or use --algo dqn.",
    "single-impala": "use --algo impala (its actors run on Ray, or inline with "
                     'execution_spec.ray_spec.executor_spec.mode="inline").',
    "random": "a random agent learns nothing; evaluate an untrained checkpoint instead.",
}
# The action spaces each algorithm can act in: "discrete" (IntBox leaves), "continuous" (FloatBox leaves).
ACTION_KINDS = {DQNAgent: ("discrete",), ApexAgent: ("discrete",), IMPALAAgent: ("discrete",),
                DDPGAgent: ("continuous",), TD3Agent: ("continuous",), PPOAgent: ("discrete", "continuous"),
                ActorCriticAgent: ("discrete", "continuous"), SACAgent: ("discrete", "continuous")}
# (Agent class, gymnasium id) -> the shipped config tuned for them (a file in configs/).
TUNED_CONFIGS: Dict[Tuple[type, str], str] = {
    (DQNAgent, "CartPole-v1"): "dqn_cartpole.json",
    (DQNAgent, "ALE/Pong-v5"): "dqn_pong.json",
    (ApexAgent, "CartPole-v1"): "apex_cartpole.json",
    (ApexAgent, "ALE/Pong-v5"): "apex_pong.json",
    (IMPALAAgent, "CartPole-v1"): "impala_cartpole.json",
    (IMPALAAgent, "ALE/Pong-v5"): "impala_pong.json",
}
# The configs of the zoo's table (configs/zoo/, written from `rlgraph.benchmarks.zoo_table`) are
# found by name: zoo/<algo>_<env id in lower case>.json, with the algorithm named as the zoo names it.
# For their pairs they come before TUNED_CONFIGS (rlgraph's own configs for those pairs, e.g.
# configs/dqn_cartpole.json, stay in configs/ for use by path).
ZOO_DIRECTORY = "zoo"
ZOO_ALGO_NAMES = {DQNAgent: "dqn", PPOAgent: "ppo", ActorCriticAgent: "a2c", SACAgent: "sac", TD3Agent: "td3",
                  DDPGAgent: "ddpg"}


def zoo_config_name(cls: type, new_id: str) -> Optional[str]:
    """The name (under configs/) of the zoo config of agent class `cls` on `new_id`, where one is shipped.

    >>> zoo_config_name(SACAgent, "Pendulum-v1"), zoo_config_name(IMPALAAgent, "CartPole-v1")
    ('zoo/sac_pendulum-v1.json', None)
    """
    algo = ZOO_ALGO_NAMES.get(cls)
    name = f"{ZOO_DIRECTORY}/{algo}_{new_id.lower()}.json" if algo and "/" not in new_id else None
    return name if name and shipped_config(name) else None


def algo_names() -> List[str]:
    """The canonical `--algo` names."""
    return [name for name, _ in ALGO_DEFAULTS.values()]


def shipped_config(name: str) -> Optional[str]:
    """Path of shipped config `name`: rlgraph/configs/ of an installed package, else configs/ of the
    checkout the package runs from; None where neither holds it."""
    package = os.path.dirname(os.path.abspath(rlgraph.__file__))
    for directory in (os.path.join(package, "configs"), os.path.join(os.path.dirname(package), "configs")):
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    return None


def algo_class(algo: str, where: str = "rlgraph train --algo") -> type:
    """The agent class of `--algo` name `algo` (any name of the agent lookup table, e.g. "a2c").

    Raises:
        RLGraphSpecError: For a name that is unknown, or an agent `--algo` does not train.
    """
    choices = ", ".join(algo_names())
    if not isinstance(algo, str):
        raise RLGraphSpecError("an algorithm name is needed", where=where, expected=choices, received=repr(algo))
    try:
        cls = Agent.resolve_type(algo) if "." not in algo else None
    except RLGraphSpecError:
        cls = None
    if cls not in ALGO_DEFAULTS:
        reason = next((text for name, text in UNSUPPORTED.items()
                       if cls is not None and Agent.resolve_type(name) is cls), None)
        raise RLGraphSpecError("no defaults for this algorithm" if reason else "unknown algorithm", where=where,
                               expected=f"one of {choices}", received=repr(algo),
                               hint=reason or "give a config file instead of --algo for other agents.")
    return cls


def algo_config(algo: str, new_id: str, where: str = "rlgraph train --algo") -> Tuple[dict, str]:
    """(config, where it comes from) for algorithm `algo` on gymnasium id `new_id`; see the module
    docstring for the order. The config still goes through `training.resolve_config`.

    Raises:
        RLGraphSpecError: For an algorithm `--algo` does not train, an Atari game with no Atari
            config of the algorithm, or an action space the algorithm cannot act in.
    """
    cls = algo_class(algo, where)
    name, defaults = ALGO_DEFAULTS[cls]
    if not isinstance(new_id, str) or not new_id:
        raise RLGraphSpecError("--algo needs an environment id", where=f"{where} {name} --env",
                               expected="a gymnasium id such as CartPole-v1", received=repr(new_id))
    check_env_id(new_id, f"{where} {name} --env")  # Never "module:EnvId" (unless allowed): gymnasium imports it.
    tuned = zoo_config_name(cls, new_id) or TUNED_CONFIGS.get((cls, new_id))
    if tuned is None and new_id.startswith(ATARI_NAMESPACE):
        tuned = next((file for (c, i), file in TUNED_CONFIGS.items() if c is cls and i.startswith(ATARI_NAMESPACE)),
                     None)
        if tuned is None:
            atari = [n for c, (n, _) in ALGO_DEFAULTS.items()
                     if any(c is k and i.startswith(ATARI_NAMESPACE) for k, i in TUNED_CONFIGS)]
            raise RLGraphSpecError(f"no Atari config for {name}", where=f"{where} {name} --env {new_id}",
                                   expected=f"an algorithm with an Atari config: {', '.join(atari)}",
                                   received=name, hint=f"use --algo {atari[0]}, or write a config with a "
                                                       "convolutional network_spec (see configs/dqn_pong.json).")
    path = shipped_config(tuned) if tuned else None
    if tuned and path is None:
        logger.warning("%s: the shipped config %s is not installed; using rlgraph's %s defaults", where, tuned, name)
    if path is not None:
        with open(path) as handle:
            config = json.load(handle)
        if env_id(config["environment_spec"]) != new_id:
            config["environment_spec"] = with_env_id(config["environment_spec"], new_id, f"{where} --env")
            config.setdefault("training_spec", {})["stop_at_return"] = reward_threshold(new_id)
        source = path
    else:
        config = copy.deepcopy(defaults)
        config["environment_spec"] = default_env_spec(new_id)
        config["training_spec"]["stop_at_return"] = reward_threshold(new_id)
        source = f"rlgraph's {name} defaults"
    _check_action_space(cls, name, config["environment_spec"], where)
    return config, source


def _check_action_space(cls: type, name: str, env_spec: dict, where: str) -> None:
    """Refuses an environment whose actions `cls` cannot take (before the slower agent build)."""
    from rlgraph.environments import Environment
    probe = Environment.from_spec(env_spec)
    action_space = probe.action_space
    probe.terminate()
    leaves = list(action_space.flatten().values())
    kinds = {"discrete" if isinstance(leaf, IntBox) else "continuous" if isinstance(leaf, FloatBox) else "other"
             for leaf in leaves}
    if kinds <= set(ACTION_KINDS[cls]):
        return
    fits = [ALGO_DEFAULTS[c][0] for c, supported in ACTION_KINDS.items() if kinds <= set(supported)]
    wanted = " or ".join(ACTION_KINDS[cls])
    raise RLGraphSpecError(f"{name} needs {wanted} actions", where=f"{where} {name} --env {env_id(env_spec)}",
                           expected=f"an environment with {wanted} actions", received=str(action_space),
                           hint=f"for this environment use one of: {', '.join(fits)}." if fits else None)
