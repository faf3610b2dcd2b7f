"""Configs written in the original RLgraph's style, one or more per agent type, each run for 100
env steps on both backends.

The configs use the original's documented keys (docs/migrating.md): its type spellings
("replay_buffer", "prioritized_replay", "ring_buffer", "linear_decay", "open-ai-gym",
"gridworld", "fc"), TF1-era execution_spec keys, summary_spec/saver_spec save_steps and save_secs,
update_spec with update_mode and num_iterations, action_adapter_spec with pre_network_spec (shared
and per action name), dueling policies, Dict actions (GridWorld "ftj", RandomEnv), IMPALA's
feed_previous_*_through_nn and an Ape-X config with its ray_spec built as a plain agent. Each is a
JSON-able dict: the test writes it to a file and loads it with `Agent.from_spec(path)`.

Runs: `SingleThreadedWorker` for 100 env steps; "impala" through `IMPALAExecutor` inline (its
learner updates from the actors' rollouts), "single-impala" through its in-process actors until
they have stepped 100 times. The test checks that updates happened where the config asks for
them, that the weights changed with them, and that the agent acted inside the action space.
"""
import copy
import json

import numpy as np
import pytest

from rlgraph.agents import Agent
from rlgraph.environments import Environment
from rlgraph.execution import SingleThreadedWorker

STEPS = 100
TF1_EXECUTION_SPEC = {
    "seed": 10,
    "session_config": {"allow_soft_placement": True, "log_device_placement": False, "device_count": {"CPU": 1},
                       "intra_op_parallelism_threads": 1, "inter_op_parallelism_threads": 1},
    "disable_monitoring": True, "enable_timeline": False, "timeline_frequency": 1, "enable_profiler": False,
    "profiler_frequency": 1000, "default_device": None, "device_strategy": "default",
    "gpu_spec": {"gpus_enabled": False, "max_usable_gpus": 1, "allow_memory_growth": True},
    "distributed_spec": None,
}
SUMMARY_SPEC = {"summary_regexp": None, "save_steps": 50, "save_secs": None}
SAVER_SPEC = {"directory": None, "save_steps": None, "save_secs": 600, "checkpoint_basename": "model.ckpt",
              "max_checkpoints": 5}
CARTPOLE = {"type": "open-ai-gym", "gym_env": "CartPole-v0"}
PENDULUM = {"type": "openai", "gym_env": "Pendulum-v1"}
GRID_4X4 = {"type": "gridworld", "world": "4x4", "max_episode_steps": 30}
GRID_FTJ = {"type": "grid_world_env", "world": "2x2", "action_type": "ftj", "max_episode_steps": 20}
ONE_HOT_4X4 = [{"type": "reshape", "flatten": True, "flatten_categories": 16}]
ONE_HOT_2X2 = [{"type": "reshape", "flatten": True, "flatten_categories": 4}]
RANDOM_DICT_ENV = {"type": "random_env", "state_space": {"type": "float_box", "shape": [4]},
                   "action_space": {"forward": {"type": "int_box", "high": 3},
                                    "steer": {"type": "float_box", "low": -1.0, "high": 1.0, "shape": [2]}},
                   "terminal_prob": 0.05}


def _fc(units, scope, activation="tanh"):
    return {"type": "fc", "units": units, "activation": activation, "scope": scope}


DQN_UPDATE_SPEC = {"update_mode": "time_steps", "do_updates": True, "update_interval": 4, "steps_before_update": 16,
                   "batch_size": 8, "sync_interval": 16}
EPSILON = {"epsilon_spec": {"decay_spec": {"type": "linear_decay", "from": 1.0, "to": 0.1}}}

CONFIGS = {
    "dqn": {
        "type": "dqn", "environment_spec": CARTPOLE, "discount": 0.99, "double_q": True, "dueling_q": False,
        "huber_loss": True, "n_step": 1,
        "memory_spec": {"type": "replay_buffer", "capacity": 256},
        "preprocessing_spec": [],
        "network_spec": [_fc(16, "hidden-1"), _fc(16, "hidden-2")],
        "exploration_spec": EPSILON,
        "observe_spec": {"buffer_size": 8},
        "update_spec": DQN_UPDATE_SPEC,
        "optimizer_spec": {"type": "adam", "learning_rate": 0.005, "clip_grad_norm": 10},
        "execution_spec": TF1_EXECUTION_SPEC, "summary_spec": SUMMARY_SPEC, "saver_spec": SAVER_SPEC,
    },
    "dqn-dueling-pre-network": {
        "type": "dqn", "environment_spec": GRID_4X4, "discount": 0.95,
        "memory_spec": {"type": "replay_memory", "capacity": 256},
        "preprocessing_spec": ONE_HOT_4X4,
        "network_spec": [_fc(32, "hidden", "relu")],
        "policy_spec": {"type": "dueling-policy", "units_state_value_stream": 16,
                        "action_adapter_spec": {"pre_network_spec": [{"type": "dense", "units": 16}]}},
        "exploration_spec": {"epsilon_spec": {"decay_spec": ["linear", 1.0, 0.05]}},
        "observe_spec": {"buffer_size": 16},
        "update_spec": dict(DQN_UPDATE_SPEC, update_steps=2),
        "optimizer_spec": {"type": "adam", "learning_rate": ["linear", 0.01, 0.0001]},
        "execution_spec": {"seed": 11, "session_config": {"intra_op_parallelism_threads": 1}},
    },
    "dqn-prioritized": {
        "type": "dqn", "environment_spec": CARTPOLE, "dueling_q": False, "n_step": 3,
        "memory_spec": {"type": "prioritized_replay", "capacity": 200, "alpha": 0.6, "beta": 0.4},
        "network_spec": [_fc(16, "hidden")],
        # Two layers per adapter: plain (non-dueling) adapters take pre-networks of any depth.
        "action_adapter_spec": {"pre_network_spec": [{"type": "dense", "units": 16, "activation": "relu"},
                                                     {"type": "dense", "units": 8, "activation": "tanh"}]},
        "exploration_spec": {"epsilon_spec": {"decay_spec": {"type": "exponential_decay", "from": 1.0, "to": 0.1,
                                                             "decay_rate": 0.1}}},
        "observe_spec": {"buffer_size": 4},
        "update_spec": DQN_UPDATE_SPEC,
        "optimizer_spec": {"type": "rmsprop", "learning_rate": 0.001, "decay": 0.95, "momentum": 0.0,
                           "epsilon": 0.01},
        "execution_spec": TF1_EXECUTION_SPEC,
    },
    "dqn-container-actions": {
        "type": "dqn", "environment_spec": GRID_FTJ,
        "memory_spec": {"type": "prioritized-replay", "capacity": 128},
        "preprocessing_spec": ONE_HOT_2X2,
        "network_spec": [_fc(16, "hidden", "lrelu")],
        "policy_spec": {"type": "dueling-policy", "units_state_value_stream": 16, "action_adapter_spec": {
            "turn": {"pre_network_spec": [{"type": "dense", "units": 16, "activation": "lrelu"}]},
            "forward": {"pre_network_spec": [{"type": "dense", "units": 16, "activation": "lrelu"}]},
            "jump": {"pre_network_spec": [{"type": "dense", "units": 8, "activation": "lrelu"}]}}},
        "exploration_spec": {"epsilon_spec": {"decay_spec": {"type": "linear-decay", "from": 1.0, "to": 0.05}}},
        "observe_spec": {"buffer_size": 32},
        "update_spec": {"do_updates": True, "update_interval": 4, "batch_size": 8, "sync_interval": 8},
        "optimizer_spec": {"type": "adam", "learning_rate": ["linear", 0.01, 0.00001], "clip_grad_norm": 10},
        "execution_spec": {"seed": 12},
    },
    "apex": {
        "type": "apex", "environment_spec": CARTPOLE, "discount": 0.99, "n_step": 3, "double_q": True,
        "dueling_q": True,
        "memory_spec": {"type": "prioritized_replay", "capacity": 256},
        "network_spec": [_fc(16, "hidden")],
        "policy_spec": {"units_state_value_stream": 16,
                        "action_adapter_spec": {"pre_network_spec": [{"type": "dense", "units": 16}]}},
        "exploration_spec": EPSILON,
        "observe_spec": {"buffer_size": 8},
        "update_spec": dict(DQN_UPDATE_SPEC, update_steps=1),
        "optimizer_spec": {"type": "adam", "learning_rate": 0.0005, "clip_grad_norm": 40},
        # The original's Ape-X configs carry their ray_spec; an agent built from them drops it.
        "execution_spec": dict(TF1_EXECUTION_SPEC, ray_spec={
            "executor_spec": {"redis_address": None, "num_cpus": 2, "num_gpus": 0, "num_sample_workers": 2,
                              "num_replay_workers": 1, "num_worker_samples": 50, "learn_queue_size": 1,
                              "min_sample_memory_size": 32, "weight_sync_steps": 400},
            "worker_spec": {"num_worker_environments": 2, "num_background_envs": 1, "n_step_adjustment": 3,
                            "worker_executes_postprocessing": True, "sample_exploration": False,
                            "exploration_min_value": 0.5},
            "apex_replay_spec": {"memory_spec": {"capacity": 2000, "alpha": 0.6, "beta": 0.4},
                                 "clip_rewards": True, "min_sample_memory_size": 32, "n_step_adjustment": 3}}),
        "summary_spec": SUMMARY_SPEC,
    },
    "dqfd": {
        "type": "dqfd", "environment_spec": GRID_4X4, "expert_margin": 0.5, "supervised_weight": 1.0,
        "demo_sample_ratio": 0.25, "double_q": False, "dueling_q": False, "huber_loss": True,
        "memory_spec": {"type": "replay", "capacity": 256},
        "demo_memory_spec": {"type": "replay", "capacity": 64},
        "preprocessing_spec": ONE_HOT_4X4,
        "network_spec": [_fc(16, "hidden", "relu")],
        "action_adapter_spec": {"pre_network_spec": [{"type": "dense", "units": 16, "activation": "relu"}]},
        "exploration_spec": EPSILON,
        "observe_spec": {"buffer_size": 8},
        "update_spec": DQN_UPDATE_SPEC,
        "optimizer_spec": {"type": "adam", "learning_rate": 0.005},
        "execution_spec": {"seed": 13},
    },
    "impala": {
        "type": "impala", "environment_spec": GRID_FTJ, "discount": 0.99, "worker_sample_size": 8,
        "fifo_queue_spec": {"capacity": 8},
        "feed_previous_action_through_nn": False, "feed_previous_reward_through_nn": False,
        "weight_pg": 1.0, "weight_baseline": 0.5, "weight_entropy": 0.01,
        "preprocessing_spec": ONE_HOT_2X2,
        "network_spec": {"layers": [_fc(16, "hidden-layer", "linear")], "scope": "impala-net"},
        "action_adapter_spec": {"forward": {"pre_network_spec": [{"type": "dense", "units": 8, "activation": "relu"}]},
                                "turn": {"pre_network_spec": [{"type": "dense", "units": 8}]}},
        "update_spec": {"do_updates": True, "batch_size": 2},
        "optimizer_spec": {"type": "adam", "learning_rate": 0.001, "clip_grad_norm": 40.0},
        "execution_spec": {"seed": 14, "ray_spec": {
            "executor_spec": {"num_sample_workers": 2, "weight_sync_steps": 16, "env_interaction_task_depth": 1},
            "worker_spec": {"num_worker_environments": 1}}},
    },
    "single-impala": {
        "type": "single-impala", "environment_spec": CARTPOLE, "worker_sample_size": 10, "num_workers": 1,
        "fifo_queue_spec": {"capacity": 4},
        "feed_previous_action_through_nn": False, "feed_previous_reward_through_nn": False,
        "network_spec": [_fc(16, "hidden", "relu")],
        "action_adapter_spec": {"pre_network_spec": [{"type": "dense", "units": 16, "activation": "relu"}]},
        "update_spec": {"do_updates": True, "batch_size": 2},
        "optimizer_spec": {"type": "adam", "learning_rate": 0.002},
        "execution_spec": {"seed": 15, "torch_num_threads": 1},
    },
    "ppo": {
        "type": "ppo", "environment_spec": CARTPOLE, "sample_episodes": False, "standardize_advantages": False,
        "clip_ratio": 0.2, "discount": 0.99, "gae_lambda": 0.95, "weight_entropy": 0.01,
        "memory_spec": {"type": "ring_buffer", "capacity": 64},
        "preprocessing_spec": [],
        "observe_spec": {"buffer_size": 16},
        "network_spec": [_fc(32, "hidden")],
        "value_function_spec": [_fc(32, "vf-hidden")],
        "action_adapter_spec": {"pre_network_spec": [{"type": "dense", "units": 16, "activation": "tanh"}]},
        "update_spec": {"update_mode": "time_steps", "do_updates": True, "update_interval": 16, "batch_size": 32,
                        "num_iterations": 4, "sample_size": 16},
        "optimizer_spec": {"type": "adam", "learning_rate": 0.0025},
        "execution_spec": TF1_EXECUTION_SPEC,
    },
    "ppo-container-actions": {
        "type": "ppo", "environment_spec": RANDOM_DICT_ENV,
        "memory_spec": {"type": "ring-buffer", "capacity": 64},
        "network_spec": [_fc(16, "hidden")],
        "value_function_spec": [_fc(16, "vf-hidden")],
        "action_adapter_spec": {"forward": {"pre_network_spec": [{"type": "dense", "units": 8, "activation": "relu"}]},
                                "steer": {"pre_network_spec": [{"type": "dense", "units": 16, "activation": "tanh"},
                                                               {"type": "dense", "units": 8}]}},
        "update_spec": {"update_mode": "time_steps", "batch_size": 32, "num_iterations": 2, "sample_size": 16},
        "optimizer_spec": {"type": "adam", "learning_rate": 0.001},
        "execution_spec": {"seed": 16},
    },
    "actor-critic": {
        "type": "actor-critic", "environment_spec": GRID_4X4, "discount": 0.9, "gae_lambda": 1.0,
        "weight_entropy": 0.01,
        "memory_spec": {"type": "ring_buffer", "capacity": 64},
        "preprocessing_spec": ONE_HOT_4X4,
        "network_spec": [_fc(16, "hidden")],
        "value_function_spec": [_fc(16, "vf-hidden")],
        "action_adapter_spec": {"pre_network_spec": [{"type": "dense", "units": 16}]},
        "update_spec": {"update_mode": "time_steps", "do_updates": True, "batch_size": 16},
        "optimizer_spec": {"type": "adam", "learning_rate": 0.005},
        "execution_spec": {"seed": 17}, "summary_spec": SUMMARY_SPEC,
    },
    "sac": {
        "type": "sac", "environment_spec": PENDULUM, "discount": 0.99, "initial_alpha": 0.2, "double_q": True,
        "memory_spec": {"type": "replay", "capacity": 256},
        "network_spec": [_fc(32, "hidden", "relu")],
        "value_function_spec": [_fc(32, "vf-hidden", "relu")],
        "action_adapter_spec": {"pre_network_spec": [{"type": "dense", "units": 16, "activation": "relu"}]},
        "value_function_sync_spec": {"sync_tau": 0.005, "sync_interval": 1},
        "optimizer_spec": {"type": "adam", "learning_rate": 0.0003},
        "value_function_optimizer_spec": {"type": "adam", "learning_rate": 0.0003},
        "observe_spec": {"buffer_size": 8},
        "update_spec": {"update_mode": "time_steps", "do_updates": True, "update_interval": 4,
                        "steps_before_update": 16, "batch_size": 16, "num_iterations": 1},
        "execution_spec": TF1_EXECUTION_SPEC,
    },
    "sac-discrete": {
        "type": "sac", "environment_spec": CARTPOLE, "gumbel_softmax_temperature": 1.0,
        "memory_spec": {"type": "replay_buffer", "capacity": 256},
        "network_spec": [_fc(16, "hidden", "relu")],
        "value_function_spec": [_fc(16, "vf-hidden", "relu")],
        "optimizer_spec": {"type": "adam", "learning_rate": 0.001},
        "observe_spec": {"buffer_size": 8},
        "update_spec": {"update_interval": 4, "steps_before_update": 16, "batch_size": 8},
        "execution_spec": {"seed": 18},
    },
    "ddpg": {
        "type": "ddpg", "environment_spec": PENDULUM, "discount": 0.99,
        "memory_spec": {"type": "replay_memory", "capacity": 256},
        "network_spec": [_fc(32, "hidden", "relu")],
        "critic_network_spec": [_fc(32, "critic-hidden", "relu")],
        "action_adapter_spec": {"pre_network_spec": [{"type": "dense", "units": 16, "activation": "relu"}]},
        "noise_spec": {"type": "ornstein_uhlenbeck", "theta": 0.15, "sigma": 0.2},
        "observe_spec": {"buffer_size": 8},
        "update_spec": {"update_interval": 4, "steps_before_update": 16, "batch_size": 16},
        "execution_spec": {"seed": 19},
    },
    "random": {
        "type": "random", "environment_spec": GRID_FTJ, "update_spec": False,
        "execution_spec": dict(TF1_EXECUTION_SPEC, seed=20),
    },
}
IMPALA_TYPES = ("impala", "single-impala")


def _load(name, backend, tmp_path):
    """(agent, environment spec) of config `name`, read back from a JSON file as a user would."""
    config = copy.deepcopy(CONFIGS[name])
    env_spec = config["environment_spec"] if config["type"] in IMPALA_TYPES else config.pop("environment_spec")
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(config))
    env = Environment.from_spec(env_spec)
    spaces = dict(state_space=env.state_space, action_space=env.action_space)
    env.terminate()
    if config["type"] == "impala":  # The learner runs in the executor; it is built there.
        return str(path), env_spec, spaces
    return Agent.from_spec(str(path), backend=backend, **spaces), env_spec, spaces


def _changed(before, after):
    return sorted(k for k in before if not np.array_equal(before[k], after[k]))


def _run_impala(path, env_spec, backend):
    from rlgraph.execution.ray import IMPALAExecutor
    from rlgraph.utils.specifiable import load_spec_file
    config = load_spec_file(path)
    config["backend"] = backend
    config["execution_spec"]["ray_spec"]["executor_spec"]["mode"] = "inline"  # No Ray: actors in this process.
    with IMPALAExecutor(env_spec, config) as executor:
        before = executor.local_agent.get_weights()
        result = executor.execute_workload({"num_timesteps": STEPS})
        assert result["timesteps_executed"] >= STEPS and result["restarts"] == 0
        assert result["learner_updates"] > 0 and np.isfinite(result["mean_loss"])
        assert executor.local_agent.backend == backend
        return before, executor.local_agent.get_weights()


def _run_single_impala(agent):
    before = agent.get_weights()
    try:
        while agent.actor_statistics()["timesteps"] < STEPS:
            assert np.isfinite(agent.update().loss)
        assert agent.num_updates > 0
        return before, agent.get_weights()
    finally:
        agent.terminate()


def _observe_demonstrations(agent, env_spec):
    """A few expert transitions (the 4x4 grid's shortest path: down, down, right, ...) before the run."""
    env = Environment.from_spec(dict(env_spec, max_episode_steps=None))
    state, rows = env.reset(), []
    for action in (2, 2, 1, 1, 2, 1):
        next_state, reward, terminal, _ = env.step(action)
        rows.append((state, action, reward, next_state, terminal))
        state = next_state
        if terminal:
            break
    env.terminate()
    states, actions, rewards, next_states, terminals = (np.array(column) for column in zip(*rows))
    agent.observe_demos(agent.preprocess_states(states), actions, rewards.astype(np.float32),
                        agent.preprocess_states(next_states), terminals)
    assert agent.demo_memory_size() == len(rows)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_original_style_config_runs_100_steps(name, backend, tmp_path):
    if CONFIGS[name]["environment_spec"]["type"] in ("open-ai-gym", "openai"):
        pytest.importorskip("gymnasium", reason="the config's environment needs gymnasium")
    agent, env_spec, spaces = _load(name, backend, tmp_path)
    if name == "impala":
        before, after = _run_impala(agent, env_spec, backend)
        assert _changed(before, after)
    elif name == "single-impala":
        assert agent.backend == backend
        before, after = _run_single_impala(agent)
        assert _changed(before, after)
    else:
        assert agent.backend == backend
        _check_worker_run(name, agent, env_spec, spaces)


def _check_worker_run(name, agent, env_spec, spaces):
    """100 worker steps: updates where the config asks for them, every policy variable moved."""
    if name == "dqfd":
        _observe_demonstrations(agent, env_spec)
    before = agent.get_weights()
    stats = SingleThreadedWorker(agent, env_spec, seed=1).execute_timesteps(STEPS)
    assert stats["timesteps_executed"] == STEPS
    learns = CONFIGS[name].get("update_spec") is not False and CONFIGS[name]["type"] != "random"
    if learns:
        assert stats["num_updates"] > 0 and agent.num_updates >= stats["num_updates"]
        assert np.isfinite(stats["mean_loss"])
        changed = _changed(before, agent.get_weights())
        # Every policy variable moved, the pre-networks' included.
        assert changed == sorted(before), f"unchanged: {sorted(set(before) - set(changed))}"
    else:
        assert stats["num_updates"] == 0 and agent.get_weights() == before == {}
    env = Environment.from_spec(env_spec)
    assert spaces["action_space"].contains(agent.get_action(env.reset(), use_exploration=False))
    env.terminate()
    agent.terminate()
