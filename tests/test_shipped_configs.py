"""Every shipped config compiles on both backends and acts in its environment."""
import glob
import os

import numpy as np
import pytest

from rlgraph.execution.training import make_agent_and_env, resolve_config

CONFIGS = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "configs", "*.json")))
# Smaller memories so that building does not allocate gigabytes.
SMALL = ["memory_spec.capacity=256"]


def test_the_expected_configs_ship():
    names = {os.path.basename(c) for c in CONFIGS}
    assert {"dqn_cartpole.json", "dqn_cartpole_tf.json", "dqn_gridworld_4x4.json", "dqn_pong.json"} <= names


@pytest.mark.parametrize("config", CONFIGS, ids=os.path.basename)
def test_config_builds_and_acts(config, backend):
    resolved = resolve_config(config, backend=backend, overrides=SMALL)
    agent, env_spec = make_agent_and_env(resolved)
    from rlgraph.environments import Environment
    env = Environment.from_spec(env_spec)
    state = env.reset()
    action = agent.get_action(state)
    assert env.action_space.contains(np.asarray(action))
    next_state, reward, terminal, _ = env.step(action)
    preprocessed = agent.preprocess_states(state)
    agent.observe(preprocessed, action, None, reward, agent.preprocess_states(next_state), True)
    assert agent.memory_size() == 1
    env.terminate()
    agent.terminate()
