"""The dict form of a critic's spec: {"network_spec": layers, "weights_spec": ..., "biases_spec": ...}
sets the initializers of the critic's output unit (SAC's `value_function_spec`, DDPG's and TD3's
`critic_network_spec`), as PPO's `value_function_spec` does for its value unit. The zoo's configs use
it to draw every layer as SB3 does (tests/test_zoo_configs.py checks that against SB3's networks).
"""
import numpy as np
import pytest

from rlgraph.agents import DDPGAgent, SACAgent, TD3Agent
from rlgraph.spaces import FloatBox
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

LAYERS = [{"type": "dense", "units": 5, "activation": "tanh", "scope": "hidden"}]
ACTIONS = FloatBox(low=-1.0, high=1.0, shape=(2,))


def _key(cls):
    """The argument that holds the critic's spec."""
    return "value_function_spec" if cls is SACAgent else "critic_network_spec"


def _make(cls, backend, critic_spec):
    return cls(state_space=FloatBox(shape=(3,)), action_space=ACTIONS, network_spec=LAYERS, backend=backend,
               memory_spec={"type": "replay-memory", "capacity": 16}, execution_spec={"seed": 2},
               **{_key(cls): critic_spec})


# (agent class, the scopes of its critics' Q units under the agent's.)
CRITICS = {
    "sac": (SACAgent, ["critics/critic-0/q-head", "critics/critic-1/q-head"]),
    "ddpg": (DDPGAgent, ["critic/q-layer"]),
    "td3": (TD3Agent, ["critic/q-layer", "critic-2/q-layer"]),
}


def _heads(agent, heads):
    weights = agent.graph_executor.get_weights()
    return {head: (weights[f"{agent.name}/{head}/kernel"], weights[f"{agent.name}/{head}/bias"]) for head in heads}


@pytest.mark.parametrize("algo", sorted(CRITICS))
def test_the_dict_form_sets_the_q_units_initializers(backend, algo):
    cls, heads = CRITICS[algo]
    agent = _make(cls, backend, {"network_spec": LAYERS, "weights_spec": 0.25, "biases_spec": -0.5})
    try:
        for kernel, bias in _heads(agent, heads).values():
            assert kernel.shape == (5, 1) and np.all(kernel == 0.25) and np.all(bias == -0.5)
        # The hidden layers are the list's: 5 tanh units on the 3 states (+ 2 actions).
        weights = agent.graph_executor.get_weights()
        assert weights[f"{agent.name}/{heads[0].rsplit('/', 1)[0]}/neural-network/hidden/kernel"].shape == (5, 5)
    finally:
        agent.terminate()


@pytest.mark.parametrize("algo", sorted(CRITICS))
def test_a_layer_list_keeps_the_default_q_unit(backend, algo):
    cls, heads = CRITICS[algo]
    agent = _make(cls, backend, LAYERS)
    try:
        for kernel, bias in _heads(agent, heads).values():
            if algo == "sac":  # Glorot uniform, bias 0.
                assert np.abs(kernel).max() <= np.sqrt(6.0 / 6.0) and np.any(kernel) and not np.any(bias)
            else:  # The DDPG paper's uniform [-3e-3, 3e-3] for both.
                assert np.abs(kernel).max() <= 3e-3 and np.abs(bias).max() <= 3e-3 and np.any(kernel)
    finally:
        agent.terminate()


@pytest.mark.parametrize("algo", sorted(CRITICS))
def test_an_unknown_key_in_the_dict_form_is_refused(backend, algo):
    cls, _ = CRITICS[algo]
    with pytest.raises(RLGraphSpecError, match="unknown key") as info:
        _make(cls, backend, {"network_spec": LAYERS, "weight_spec": 0.25})
    assert f"({_key(cls)})" in str(info.value) and "weight_spec" in str(info.value)
