"""Configs of the original RLgraph: TF1-era execution/summary/saver keys (mapped or dropped with one
warning), `update_spec: false`, its type spellings, the dueling adapters' `pre_network_spec`,
IMPALA's `batch_apply`/`memory_spec`, removed gym ids, and whole configs written in its style run
with a `SingleThreadedWorker` on both backends."""
import json
import logging
import math

import numpy as np
import pytest

from rlgraph.agents import Agent, IMPALAAgent, PPOAgent
from rlgraph.components import Component
from rlgraph.components.common.time_dependent_parameters import (Constant, ExponentialDecay, LinearDecay,
                                                                 PolynomialDecay, TimeDependentParameter)
from rlgraph.components.layers.nn.lstm_layer import LSTMLayer
from rlgraph.components.memories import FIFOQueue, PrioritizedReplay, ReplayMemory, RingBuffer
from rlgraph.environments import Environment, GridWorld, OpenAIGymEnv
from rlgraph.execution import SingleThreadedWorker
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

LOGGER = "rlgraph.agents.original_keys"
NET = [{"type": "dense", "units": 4}]
TF1_EXECUTION_SPEC = {
    "seed": 3,
    "session_config": {"allow_soft_placement": True, "log_device_placement": False, "device_count": {"CPU": 1},
                       "intra_op_parallelism_threads": 1, "inter_op_parallelism_threads": 1},
    "disable_monitoring": True, "enable_timeline": False, "trace_enabled": False, "enable_profiler": False,
    "profiler_frequency": 1000, "default_device": None, "device_strategy": "default",
    "gpu_spec": {"gpus_enabled": True, "max_usable_gpus": 1, "allow_memory_growth": True},
    "distributed_spec": None, "ray_spec": {"executor_spec": {"num_sample_workers": 2}},
}


def _dqn(backend, **overrides):
    spec = dict(type="dqn", state_space=FloatBox(shape=(3,)), action_space=IntBox(2), network_spec=NET,
                dueling_q=False, memory_spec={"type": "replay", "capacity": 32}, observe_spec={"buffer_size": 4},
                update_spec={"batch_size": 4, "update_interval": 2, "sync_interval": 8}, backend=backend,
                auto_build=False)
    spec.update(overrides)
    return Agent.from_spec(spec)


def _original_key_warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]


# --- execution_spec / summary_spec / saver_spec ------------------------------------------------
def test_tf1_execution_keys_are_accepted_with_one_warning(backend, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        agent = _dqn(backend, execution_spec=TF1_EXECUTION_SPEC)
    warnings = _original_key_warnings(caplog)
    assert len(warnings) == 1
    for key in ("session_config", "disable_monitoring", "enable_timeline", "trace_enabled", "enable_profiler",
                "default_device", "device_strategy", "gpu_spec", "distributed_spec", "ray_spec"):
        assert f"execution_spec.{key} ignored" in warnings[0]
    assert "intra_op_parallelism_threads -> execution_spec.tf_num_threads (1)" in warnings[0]
    assert "GPU options have no equivalent" in warnings[0]  # gpu_spec (gpus_enabled true): execution_spec.device.
    assert agent.execution_spec["tf_num_threads"] == 1 and agent.execution_spec["seed"] == 3
    assert "session_config" not in agent.execution_spec


def test_no_warning_without_original_keys(backend, caplog):
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        _dqn(backend, execution_spec={"seed": 1}, summary_spec={"summary_interval": 5})
    assert _original_key_warnings(caplog) == []


def test_unknown_keys_that_are_not_original_ones_are_still_refused(backend):
    with pytest.raises(RLGraphSpecError, match=r"unknown key\(s\) \['session_konfig'\] in execution_spec. Expected"):
        _dqn(backend, execution_spec={"session_konfig": {}})
    with pytest.raises(RLGraphSpecError, match=r"unknown key\(s\) \['save_stepz'\] in summary_spec"):
        _dqn(backend, summary_spec={"save_stepz": 3})
    with pytest.raises(RLGraphSpecError, match="execution_spec.mode must be one of"):
        _dqn(backend, execution_spec={"mode": "distributed", "distributed_spec": {"job": "ps"}})


def test_summary_and_saver_keys_are_mapped(backend, caplog, tmp_path):
    summary = {"directory": str(tmp_path / "tb"), "summary_regexp": ".*", "save_steps": 10, "save_secs": None}
    saver = {"directory": str(tmp_path / "ckpt"), "checkpoint_basename": "model.ckpt", "max_checkpoints": 5,
             "save_secs": 600, "save_steps": 100}
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        agent = _dqn(backend, summary_spec=summary, saver_spec=saver)
    assert agent.summary_spec == {"directory": summary["directory"], "summary_interval": 10, "summary_regexp": ".*"}
    assert agent.saver_spec == {"directory": saver["directory"], "checkpoint_frequency": 100, "max_checkpoints": 5,
                                 "save_replay": True}
    warnings = _original_key_warnings(caplog)
    assert len(warnings) == 1
    assert "summary_spec.save_steps -> summary_spec.summary_interval (10)" in warnings[0]
    assert "saver_spec.save_steps -> saver_spec.checkpoint_frequency (100)" in warnings[0]
    assert "saver_spec.save_secs ignored" in warnings[0] and "saver_spec.checkpoint_basename ignored" in warnings[0]
    # Same value twice is fine; two different values are an error that names both keys.
    assert _dqn(backend, summary_spec={"save_steps": 7, "summary_interval": 7}).summary_spec["summary_interval"] == 7
    with pytest.raises(RLGraphSpecError, match=r"summary_spec.save_steps and summary_spec.summary_interval both"):
        _dqn(backend, summary_spec={"save_steps": 7, "summary_interval": 8})


# --- update_spec: false -------------------------------------------------------------------------
@pytest.mark.parametrize("update_spec", [False, {"do_updates": False, "batch_size": 4}])
def test_update_spec_false_means_no_updates(backend, update_spec):
    agent = _dqn(backend, update_spec=update_spec, execution_spec={"seed": 2}, auto_build=True)
    assert agent.update_spec["do_updates"] is False
    before = agent.get_weights()
    worker = SingleThreadedWorker(agent, {"type": "random-env", "state_space": FloatBox(shape=(3,)),
                                          "action_space": IntBox(2)}, seed=4)
    stats = worker.execute_timesteps(100)
    assert stats["timesteps_executed"] == 100 and stats["num_updates"] == 0 and agent.num_updates == 0
    assert agent.timesteps == 99 and agent.memory_size() > 0  # Acting and observing went on.
    after = agent.get_weights()
    assert all(np.array_equal(before[k], after[k]) for k in before)


# --- type spellings -----------------------------------------------------------------------------
@pytest.mark.parametrize("name, cls", [
    ("replay", ReplayMemory), ("replay-memory", ReplayMemory), ("replay_buffer", ReplayMemory),
    ("prioritized_replay", PrioritizedReplay), ("prioritized-replay", PrioritizedReplay),
    ("prioritized", PrioritizedReplay), ("prioritized_replay_buffer", PrioritizedReplay),
    ("ring_buffer", RingBuffer), ("ring-buffer", RingBuffer), ("fifo_queue", FIFOQueue), ("fifo", FIFOQueue),
])
def test_original_memory_types_resolve(name, cls):
    assert Component.resolve_type(name) is cls


@pytest.mark.parametrize("name, cls", [
    ("linear_decay", LinearDecay), ("linear-decay", LinearDecay), ("lin", LinearDecay),
    ("constant_decay", Constant), ("constant", Constant), ("polynomial_decay", PolynomialDecay),
    ("poly", PolynomialDecay), ("exponential_decay", ExponentialDecay), ("exp", ExponentialDecay),
])
def test_original_schedule_types_resolve(name, cls):
    assert TimeDependentParameter.resolve_type(name) is cls


def test_original_schedule_arguments():
    assert TimeDependentParameter.from_spec({"type": "constant_decay", "constant_value": 0.1}).value_at(0.7) == \
        pytest.approx(0.1)
    linear = TimeDependentParameter.from_spec({"type": "linear_decay", "from": 1.0, "to": 0.1})
    assert linear.value_at(0.5) == pytest.approx(0.55)  # 1.0 + (0.1 - 1.0) * 0.5
    # The original's exponential decay: to + (from - to) * decay_rate ** t.
    exp = TimeDependentParameter.from_spec({"type": "exponential_decay", "from": 2.0, "to": 1.0, "decay_rate": 0.25})
    assert exp.value_at(0.5) == pytest.approx(1.5) and exp.value_at(1.0) == pytest.approx(1.25)
    assert exp.half_life == pytest.approx(0.5)  # 0.25 ** t = 0.5 ** (t / 0.5)
    short = TimeDependentParameter.from_spec(["exponential", 1.0, 0.0, 0.1])  # (from, to, decay_rate)
    assert short.value_at(1.0) == pytest.approx(0.1)
    poly = TimeDependentParameter.from_spec(["polynomial", 1.0, 0.0, 2.0])  # (from, to, power)
    assert poly.value_at(0.5) == pytest.approx(0.25)
    for spec, pattern in (({"type": "linear_decay", "from": 1.0, "to": 0.0, "num_timesteps": 100}, "stop_percentage"),
                          ({"type": "linear_decay", "start_timestep": 10}, "start_percentage"),
                          ({"type": "exponential", "decay_rate": 1.0}, "constant"),
                          ({"type": "exponential", "decay_rate": 0.5, "half_life": 0.1}, "one of them"),
                          ({"type": "constant", "value": 1.0, "constant_value": 2.0}, "one of them")):
        with pytest.raises(RLGraphSpecError, match=pattern):
            TimeDependentParameter.from_spec(spec)


@pytest.mark.parametrize("name", ["open-ai-gym", "openai-gym", "openai_gym", "openai", "gym", "OpenAIGymEnv"])
def test_original_environment_types_resolve(name):
    assert Environment.resolve_type(name) is OpenAIGymEnv
    assert Environment.resolve_type("gridworld") is GridWorld
    assert Environment.resolve_type("grid_world_env") is GridWorld


@pytest.mark.parametrize("family, name, reason", [
    (Environment, "deterministic_env", "GridWorld or RandomEnv"),
    (Environment, "gaussian_density_as_reward", "GridWorld or RandomEnv"),
    (Environment, "mlagents", "OpenAIGymEnv"), (Component, "multi_gpu_synchronizer", "Ray"),
    (Component, "categorical_distribution_adapter", "distributions_spec"), (Component, "decay", "linear-decay"),
])
def test_unsupported_original_types_name_the_reason(family, name, reason):
    with pytest.raises(RLGraphSpecError, match=f"type '{name}' of the original RLgraph is not supported") as info:
        family.resolve_type(name)
    assert reason in str(info.value)


def test_original_layer_spellings():
    assert Component.resolve_type("fc").__name__ == "DenseLayer"
    assert Component.resolve_type("conv2d").__name__ == "Conv2DLayer"
    # The original's configs give LSTMs "linear" (its LSTM layer ignored the activation).
    assert LSTMLayer(units=2, activation="linear").activation is None
    with pytest.raises(RLGraphSpecError, match="takes no activation"):
        LSTMLayer(units=2, activation="relu")


# --- the dueling adapters' pre_network_spec -----------------------------------------------------
def test_dueling_pre_network_spec_is_the_advantage_stream(backend):
    policy = {"type": "dueling-policy", "units_state_value_stream": 3,
              "action_adapter_spec": {"pre_network_spec": [{"type": "dense", "units": 5}]}}
    agent = _dqn(backend, policy_spec=policy, auto_build=True)
    adapter = agent.root_component.policy.action_adapters[""]
    assert adapter.dense_layer_advantage_stream.units == 5 and adapter.dense_layer_advantage_stream.activation is None
    assert adapter.dense_layer_state_value_stream.units == 3
    assert agent.get_action(np.zeros(3, np.float32), use_exploration=False) in (0, 1)
    # Per action key (a Dict action space), as the original's container-action configs write it.
    keyed = dict(policy, action_adapter_spec={
        "turn": {"pre_network_spec": [{"type": "dense", "units": 6, "activation": "lrelu"}]},
        "jump": {"pre_network_spec": [{"type": "dense", "units": 2}]}})
    agent = _dqn(backend, policy_spec=keyed, action_space=Dict(turn=IntBox(3), jump=IntBox(2)))
    adapters = agent.root_component.policy.action_adapters
    assert adapters["/turn"].dense_layer_advantage_stream.units == 6
    assert adapters["/turn"].dense_layer_advantage_stream.activation == "lrelu"
    assert adapters["/jump"].dense_layer_advantage_stream.units == 2
    two_layers = dict(policy, action_adapter_spec={"pre_network_spec": NET * 2})
    with pytest.raises(RLGraphSpecError, match="pre_network_spec must be one dense layer"):
        _dqn(backend, policy_spec=two_layers)


# --- IMPALA: batch_apply, memory_spec; PPO: the original's value-function spec ---------------------
def test_impala_batch_apply_and_memory_spec(backend, caplog):
    spec = dict(type="impala", state_space=FloatBox(shape=(3,)), action_space=IntBox(2), network_spec=NET,
                worker_sample_size=4, batch_apply=True, memory_spec={"type": "fifo_queue", "capacity": 7},
                backend=backend, auto_build=False)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        agent = Agent.from_spec(spec)
    assert isinstance(agent, IMPALAAgent) and agent.fifo_queue_spec["capacity"] == 7
    warnings = _original_key_warnings(caplog)
    assert len(warnings) == 1
    assert "batch_apply ignored" in warnings[0] and "memory_spec -> fifo_queue_spec" in warnings[0]
    with pytest.raises(RLGraphSpecError, match="memory_spec and fifo_queue_spec both given"):
        Agent.from_spec(dict(spec, fifo_queue_spec={"capacity": 3}))
    with pytest.raises(RLGraphSpecError, match="IMPALA's memory is a FIFO queue"):
        Agent.from_spec(dict(spec, memory_spec={"type": "replay", "capacity": 3}))
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        caplog.clear()
        Agent.from_spec(dict(spec, role="actor"))  # Actors copy a learner's config: no second warning.
    assert _original_key_warnings(caplog) == []


def test_ppo_value_function_spec_in_the_original_form(backend):
    agent = PPOAgent(state_space=FloatBox(shape=(3,)), action_space=IntBox(2), network_spec=NET,
                     value_function_spec={"type": "value_function", "network_spec": [{"type": "dense", "units": 3}]},
                     backend=backend)
    assert type(agent.root_component.value_function).__name__ == "ValueFunction"
    assert np.shape(agent.get_action(np.zeros((2, 3), np.float32))) == (2,)
    with pytest.raises(RLGraphSpecError, match="value-function spec"):
        PPOAgent(state_space=FloatBox(shape=(3,)), action_space=IntBox(2), network_spec=NET, backend=backend,
                 value_function_spec={"type": "policy", "network_spec": NET}, auto_build=False)


# --- environment ids -----------------------------------------------------------------------------
def test_old_gym_ids():
    pytest.importorskip("gymnasium")
    env = OpenAIGymEnv("CartPole-v0")  # Still registered.
    assert env.action_space.num_categories == 2
    env.terminate()
    with pytest.raises(RLGraphSpecError, match="Pendulum-v1"):
        Environment.from_spec({"type": "open-ai-gym", "gym_env": "Pendulum-v0"})


def test_removed_atari_ids_name_the_replacement():
    pytest.importorskip("ale_py")
    with pytest.raises(RLGraphSpecError, match=r'"gym_env": "ALE/Pong-v5", "frameskip": 4, '
                                               r'"repeat_action_probability": 0.0\}') as info:
        Environment.from_spec({"type": "openai", "gym_env": "PongDeterministic-v4"})
    replacement = json.loads(str(info.value).split("the same environment is ")[1].split(" (keys")[0])
    env = Environment.from_spec(dict(replacement, type="openai"))  # The named replacement works.
    assert env.gym_env.unwrapped._frameskip == 4 and env.frameskip == 1  # ALE skips, the adapter does not.
    env.terminate()
    with pytest.raises(RLGraphSpecError, match=r'"gym_env": "Pong-v0", "obs_type": "ram"'):
        Environment.from_spec({"type": "openai", "gym_env": "Pong-ram-v0"})


# --- whole configs in the original's style ---------------------------------------------------------
ORIGINAL_STYLE_DQN = {
    "type": "dqn",
    "discount": 0.99,
    "memory_spec": {"type": "prioritized_replay", "capacity": 64, "alpha": 0.6, "beta": 0.4},
    "saver_spec": None,
    "preprocessing_spec": [],
    "network_spec": [{"type": "dense", "units": 8, "activation": "tanh", "scope": "hidden"}],
    "policy_spec": {"type": "dueling-policy", "units_state_value_stream": 4,
                    "action_adapter_spec": {"pre_network_spec": [{"type": "dense", "units": 4}]}},
    "exploration_spec": {"epsilon_spec": {"decay_spec": {"type": "linear_decay", "from": 1.0, "to": 0.1}}},
    "execution_spec": TF1_EXECUTION_SPEC,
    "observe_spec": {"buffer_size": 8},
    "update_spec": {"update_mode": "time_steps", "do_updates": True, "update_interval": 4,
                    "steps_before_update": 16, "batch_size": 8, "sync_interval": 16},
    "summary_spec": {"summary_regexp": ".*", "save_steps": 1, "save_secs": None},
    "optimizer_spec": {"type": "adam", "learning_rate": 0.001, "clip_grad_norm": 20},
}


def _run_original_style(backend, config, env_spec, tmp_path, steps=100):
    path = tmp_path / "original_style.json"
    path.write_text(json.dumps(config))
    env = Environment.from_spec(env_spec)
    agent = Agent.from_spec(str(path), state_space=env.state_space, action_space=env.action_space, backend=backend)
    env.terminate()
    stats = SingleThreadedWorker(agent, env_spec, seed=1).execute_timesteps(steps)
    assert stats["timesteps_executed"] == steps
    return agent, stats


def test_original_style_dqn_config_runs(backend, tmp_path):
    agent, stats = _run_original_style(backend, ORIGINAL_STYLE_DQN, {"type": "random-env", "state_space": FloatBox(
        shape=(3,)), "action_space": IntBox(3)}, tmp_path)
    assert agent.root_component.prioritized and agent.summary_spec["summary_interval"] == 1
    # Updates every 4 observed steps from step 16 on: steps 16, 20, ..., 96 (21 rounds of one update).
    assert stats["num_updates"] == agent.num_updates == 21
    assert math.isfinite(stats["mean_loss"])


def test_original_style_config_with_update_spec_false_runs(backend, tmp_path):
    config = dict(ORIGINAL_STYLE_DQN, update_spec=False, memory_spec={"type": "replay_buffer", "capacity": 64},
                  exploration_spec={"epsilon_spec": {"decay_spec": {"type": "constant_decay", "constant_value": 0.2}}})
    agent, stats = _run_original_style(backend, config, {"type": "random", "state_space": FloatBox(shape=(3,)),
                                                         "action_space": IntBox(3)}, tmp_path)
    assert stats["num_updates"] == 0 and agent.num_updates == 0 and agent.memory_size() > 0


def test_original_style_config_with_open_ai_gym_env_runs(backend, tmp_path):
    pytest.importorskip("gymnasium")
    config = dict(ORIGINAL_STYLE_DQN, memory_spec={"type": "replay_memory", "capacity": 64},
                  environment_spec={"type": "open-ai-gym", "gym_env": "CartPole-v0"},
                  policy_spec=None, dueling_q=False)
    agent, stats = _run_original_style(backend, config, config["environment_spec"], tmp_path)
    assert stats["num_updates"] == 21 and stats["episodes_executed"] >= 1


def test_from_spec_keeps_the_translated_sections(backend, caplog):
    spec = dict(type="dqn", state_space=FloatBox(shape=(3,)), action_space=IntBox(2), network_spec=NET,
                update_spec=False, summary_spec={"save_steps": 3}, execution_spec={"seed": 1}, backend=backend,
                auto_build=False)
    agent = Agent.from_spec(spec)
    assert agent.spec["update_spec"] == {"do_updates": False} and agent.spec["summary_spec"] == {"summary_interval": 3}
    assert agent.spec["execution_spec"] is spec["execution_spec"]  # Untouched sections stay as given.
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        replica = Agent.from_spec(dict(agent.spec, state_space=FloatBox(shape=(3,)), action_space=IntBox(2),
                                       backend=backend))
    assert _original_key_warnings(caplog) == [] and replica.update_spec["do_updates"] is False
