"""Helpers of the agent test modules: small DQN specs and agents, states, memory and target access.

Agents are built with one dense layer of 8 units, FloatBox(4) states and IntBox(3) actions.
"""

import numpy as np

from rlgraph.agents import DQNAgent
from rlgraph.spaces import FloatBox, IntBox

NET = [{"type": "dense", "units": 8}]
CARTPOLE_CONFIG = "configs/dqn_cartpole.json"


def _spec(backend, **overrides):
    spec = dict(state_space=FloatBox(shape=(4,)), action_space=IntBox(3), network_spec=NET, dueling_q=False,
                memory_spec={"type": "replay-memory", "capacity": 16}, observe_spec={"buffer_size": 4},
                execution_spec={"seed": 1, "max_timesteps": 1000}, backend=backend)
    spec.update(overrides)
    return spec


def _agent(backend, **overrides):
    return DQNAgent(**_spec(backend, **overrides))


def _states(n, start=0.0):
    """n states [n, 4]; row i is filled with start + i (so a stored row tells its step)."""
    return np.repeat(np.arange(start, start + n, dtype=np.float32)[:, None], 4, axis=1)


def _memory(agent):
    """The memory's stored records (first memory_size() rows), by field name (e.g. "rewards", "states/a")."""
    weights = agent.graph_executor.get_weights()
    prefix = next(k for k in weights if k.endswith("/memory/rewards"))[:-len("rewards")]
    size = agent.memory_size()
    return {k[len(prefix):]: v[:size] for k, v in weights.items() if k.startswith(prefix)}


def _target_names(agent):
    return sorted(k for k in agent.graph_executor.get_weights() if "/target-policy/" in k)


def _target_q(agent, states):
    q, _ = agent.call_api_method("get_target_q_values_and_actions", [states])
    return q


def _random_batch(rng, n, state_dim=4, num_actions=3):
    return dict(states=rng.normal(size=(n, state_dim)).astype(np.float32),
                actions=rng.randint(0, num_actions, size=n),
                rewards=rng.uniform(-3.0, 3.0, size=n).astype(np.float32),
                terminals=np.arange(n) % 3 == 2,
                next_states=rng.normal(size=(n, state_dim)).astype(np.float32))


def _perturb_target(agent, scale=0.5, seed=0):
    """Sets the target network to the online weights plus noise (so online and target differ)."""
    rng = np.random.RandomState(seed)
    weights = agent.graph_executor.get_weights()
    agent.set_weights({name: weights[name.replace("/target-policy/", "/policy/")] +
                       scale * rng.normal(size=weights[name].shape).astype(np.float32)
                       for name in _target_names(agent)})


# --- Acting -------------------------------------------------------------------------------------------
