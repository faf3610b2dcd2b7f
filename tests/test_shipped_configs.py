"""Every shipped config compiles on both backends and acts in its environment. Every config then
runs at least 100 env steps and learns in them: the single-process configs for 100 steps in a
`SingleThreadedWorker` with small update settings (`SMALL_WORKER`), the distributed configs (Ape-X,
IMPALA) for 300 steps through their executor, inline (for Pong that is a few rollouts of the small
IMPALA network, enough to check that it builds, acts, learns and syncs weights; learning Pong is
far beyond the suite)."""
import glob
import os

import numpy as np
import pytest

from rlgraph.execution.distributed_training import executor_class
from rlgraph.execution.training import is_distributed, make_agent_and_env, resolve_config
from rlgraph.utils.specifiable import load_spec_file

CONFIGS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "configs", "*.json")))
DISTRIBUTED = [c for c in CONFIGS if is_distributed(load_spec_file(c))]
# Smaller memories so that building does not allocate gigabytes.
SMALL = ["memory_spec.capacity=256"]
RAY = "execution_spec.ray_spec."
# A distributed config, small and in this process: the replay, the batches, the actors. The rest
# of its ray_spec is checked as shipped (the executor validates all of it).
SMALL_DISTRIBUTED = [RAY + "executor_spec.mode=inline", RAY + "apex_replay_spec.memory_spec.capacity=256",
                     RAY + "apex_replay_spec.min_sample_memory_size=32", RAY + "executor_spec.num_worker_samples=16",
                     RAY + "executor_spec.num_sample_workers=2", RAY + "executor_spec.num_replay_workers=1",
                     RAY + "worker_spec.num_worker_environments=1", "update_spec.batch_size=8"]
# An IMPALA config likewise: 2 actors of one env, batches of 4 rollouts (the rollout length as shipped).
SMALL_IMPALA = [RAY + "executor_spec.mode=inline", RAY + "executor_spec.num_sample_workers=2",
                RAY + "worker_spec.num_worker_environments=1", "update_spec.batch_size=4"]


# A single-process config's 100-step run: small memories and batches, updates from step 16 on,
# so that every config updates several times (the shipped settings wait up to 20000 steps).
SMALL_WORKER = {
    "off-policy": SMALL + ["update_spec.steps_before_update=16", "update_spec.update_interval=4",
                           "update_spec.batch_size=16", "update_spec.update_steps=1", "observe_spec.buffer_size=8"],
    "sac": ["warmup_random_steps=16"],  # (So that its policy, not uniform draws, acts after step 16.)
    "ppo": ["update_spec.batch_size=32", "update_spec.sample_size=16", "update_spec.num_epochs=2"],
    "actor-critic": ["update_spec.batch_size=32"],
}
WORKER_STEPS = 100


def _is_impala(config):
    from rlgraph.agents import Agent, IMPALAAgent
    return issubclass(Agent.resolve_type(config["type"]), IMPALAAgent)


def _is_on_policy(config):
    from rlgraph.agents import Agent
    from rlgraph.agents.pg.agent import PolicyGradientAgent
    return issubclass(Agent.resolve_type(config["type"]), PolicyGradientAgent)


def test_the_expected_configs_ship():
    names = {os.path.basename(c) for c in CONFIGS}
    assert {"dqn_cartpole.json", "dqn_cartpole_tf.json", "dqn_gridworld_4x4.json", "dqn_pong.json",
            "apex_cartpole.json", "apex_pong.json", "impala_cartpole.json", "impala_pong.json",
            "ppo_cartpole.json", "ppo_pendulum.json", "ppo_pong.json", "a2c_cartpole.json", "sac_pendulum.json",
            "ddpg_pendulum.json", "td3_pendulum.json"} <= names
    assert {os.path.basename(c) for c in DISTRIBUTED} == {"apex_cartpole.json", "apex_pong.json",
                                                          "impala_cartpole.json", "impala_pong.json"}


@pytest.mark.parametrize("config", CONFIGS, ids=os.path.basename)
def test_config_builds_and_acts(config, backend):
    """(For a distributed config: the learner's agent, as `rlgraph evaluate` builds it. An IMPALA
    agent learns from rollouts, not from observed transitions: it only acts here.)"""
    impala = _is_impala(load_spec_file(config))
    # (A small replay memory keeps the build cheap; on-policy agents keep no replay.)
    resolved = resolve_config(config, backend=backend,
                              overrides=[] if impala or _is_on_policy(load_spec_file(config)) else SMALL)
    agent, env_spec = make_agent_and_env(resolved)
    from rlgraph.environments import Environment
    env = Environment.from_spec(env_spec)
    state = env.reset()
    action = agent.get_action(state)
    assert env.action_space.contains(np.asarray(action))
    next_state, reward, terminal, _ = env.step(action)
    if impala:  # (IMPALA learns from rollouts: no observe; test_distributed_config_runs_inline updates it.)
        assert env.action_space.contains(np.asarray(agent.get_action(next_state)))
    else:
        preprocessed = agent.preprocess_states(state)
        agent.observe(preprocessed, action, None, reward, agent.preprocess_states(next_state), True)
        assert agent.memory_size() == 1
    env.terminate()
    agent.terminate()


@pytest.mark.parametrize("config", DISTRIBUTED, ids=os.path.basename)
def test_distributed_config_runs_inline(config, backend):
    from rlgraph.execution.ray import IMPALAExecutor
    impala = _is_impala(load_spec_file(config))
    resolved = resolve_config(config, backend=backend, num_timesteps=300, seed=1,
                              overrides=SMALL_IMPALA if impala else SMALL_DISTRIBUTED)
    assert is_distributed(resolved) and (executor_class(resolved) is IMPALAExecutor) == impala
    agent_config = {k: v for k, v in resolved.items() if k not in ("environment_spec", "training_spec")}
    with executor_class(resolved)(resolved["environment_spec"], agent_config) as executor:
        result = executor.execute_workload({"num_timesteps": 300})
        assert result["timesteps_executed"] >= 300 and result["restarts"] == 0
        assert result["learner_updates"] > 0 and np.isfinite(result["mean_loss"])
        assert executor.local_agent.backend == backend
        if impala:  # The learner's weights reached the actors.
            assert result["max_policy_lag"] >= result["mean_policy_lag"] >= 0
            assert max(a.handle.obj.version for a in executor.actors_list) > 0
        else:
            assert sum(result["replay_sizes"]) > 32


def _worker_overrides(config):
    from rlgraph.agents import Agent, PPOAgent, SACAgent
    cls = Agent.resolve_type(config["type"])
    if not _is_on_policy(config):
        return SMALL_WORKER["off-policy"] + (SMALL_WORKER["sac"] if issubclass(cls, SACAgent) else [])
    return SMALL_WORKER["ppo" if issubclass(cls, PPOAgent) else "actor-critic"]


@pytest.mark.parametrize("config", [c for c in CONFIGS if c not in DISTRIBUTED], ids=os.path.basename)
def test_config_runs_100_steps_in_a_worker(config, backend):
    from rlgraph.execution import SingleThreadedWorker
    resolved = resolve_config(config, backend=backend, num_timesteps=WORKER_STEPS, seed=1,
                              overrides=_worker_overrides(load_spec_file(config)))
    agent, env_spec = make_agent_and_env(resolved)
    before = agent.get_weights()
    stats = SingleThreadedWorker(agent, env_spec, seed=1).execute_timesteps(WORKER_STEPS)
    assert stats["timesteps_executed"] == WORKER_STEPS
    assert stats["num_updates"] > 0 and np.isfinite(stats["mean_loss"])
    after = agent.get_weights()
    assert sorted(after) == sorted(before) and any(not np.array_equal(before[k], after[k]) for k in before)
    agent.terminate()
