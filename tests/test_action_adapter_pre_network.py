"""`action_adapter_spec.pre_network_spec`: each action adapter's own layers between the policy
network and its action layer (rlgraph/components/action_adapters/pre_network.py), checked against a
numpy forward pass with known weights on both backends: DQN (IntBox), PPO (bounded FloatBox), a Dict
action space with per-action pre-networks, DDPG's actor head and IMPALA's per-action adapters; the
variable names, moving weights between backends, the policy export, and the errors.
"""
import numpy as np
import pytest

from rlgraph.agents import Agent
from rlgraph.backend_system import is_backend_installed
from rlgraph.components.action_adapters.action_adapter import ActionAdapter
from rlgraph.components.policies.policy import Policy
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

NET = [{"type": "dense", "units": 6, "activation": "relu", "scope": "hidden"}]
PRE = [{"type": "dense", "units": 5, "activation": "tanh", "scope": "pre-1"},
       {"type": "dense", "units": 4, "activation": "relu", "scope": "pre-2"}]
ACTIVATIONS = {"relu": lambda x: np.maximum(x, 0.0), "tanh": np.tanh, None: lambda x: x}


def _known_weights(executor_weights, seed):
    """Every variable of `executor_weights` (name -> array) replaced by seeded normal values."""
    rng = np.random.RandomState(seed)
    return {name: (0.5 * rng.normal(size=value.shape)).astype(np.float32)
            for name, value in sorted(executor_weights.items())}


def _dense_stack(x, weights, prefix, layers):
    """numpy: x through `layers` (specs with scope and activation) whose variables sit under `prefix`."""
    for layer in layers:
        kernel, bias = weights[f"{prefix}/{layer['scope']}/kernel"], weights[f"{prefix}/{layer['scope']}/bias"]
        x = ACTIVATIONS[layer.get("activation")](x @ kernel + bias)
    return x


def _head(x, weights, adapter, pre):
    """numpy: network output -> the adapter's pre-network -> its action layer (raw output)."""
    h = _dense_stack(x, weights, f"{adapter}/pre-network", pre)
    return h @ weights[f"{adapter}/action-layer/kernel"] + weights[f"{adapter}/action-layer/bias"]


def _states(n, dim, seed=0):
    return np.random.RandomState(seed).normal(size=(n, dim)).astype(np.float32)


def _set_policy_weights(agent, seed):
    weights = _known_weights(agent.get_weights(), seed)
    agent.set_weights(weights)
    return weights


def _dqn_spec(backend, **overrides):
    spec = dict(type="dqn", state_space=FloatBox(shape=(3,)), action_space=IntBox(3), network_spec=NET,
                dueling_q=False, action_adapter_spec={"pre_network_spec": PRE},
                memory_spec={"type": "replay-memory", "capacity": 16}, update_spec={"batch_size": 4},
                execution_spec={"seed": 1}, backend=backend)
    spec.update(overrides)
    return spec


# --- the forward pass, per agent kind ----------------------------------------------------------------
def test_dqn_q_values_are_network_then_pre_network_then_action_layer(backend):
    agent = Agent.from_spec(_dqn_spec(backend))
    weights = _set_policy_weights(agent, seed=3)
    scope = next(k for k in weights if k.endswith("/policy/neural-network/hidden/kernel"))[:-len("/kernel")]
    policy = scope[:-len("/neural-network/hidden")]
    assert sorted(k[len(policy) + 1:] for k in weights if "pre-network" in k) == [
        "action-adapter-0/pre-network/pre-1/bias", "action-adapter-0/pre-network/pre-1/kernel",
        "action-adapter-0/pre-network/pre-2/bias", "action-adapter-0/pre-network/pre-2/kernel"]
    x = _states(7, 3)
    h = _dense_stack(x, weights, f"{policy}/neural-network", NET)
    expected = _head(h, weights, f"{policy}/action-adapter-0", PRE)
    np.testing.assert_allclose(agent.get_q_values(x), expected, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(agent.get_action(x, use_exploration=False), expected.argmax(axis=-1))


def test_ppo_bounded_float_box_action_is_the_squashed_mean(backend):
    low, high = -2.0, 2.0
    agent = Agent.from_spec(dict(type="ppo", state_space=FloatBox(shape=(3,)),
                                 action_space=FloatBox(low=low, high=high, shape=(2,)), network_spec=NET,
                                 value_function_spec=[{"type": "dense", "units": 4}],
                                 action_adapter_spec={"pre_network_spec": PRE}, execution_spec={"seed": 2},
                                 backend=backend))
    weights = _set_policy_weights(agent, seed=4)
    policy = next(k for k in weights if k.endswith("/neural-network/hidden/kernel"))[:-len("/neural-network/"
                                                                                            "hidden/kernel")]
    x = _states(5, 3, seed=1)
    raw = _head(_dense_stack(x, weights, f"{policy}/neural-network", NET), weights, f"{policy}/action-adapter-0", PRE)
    mean = raw[:, :2]  # (mean, log_std): the first half of the action layer's units.
    expected = low + (np.tanh(mean) + 1.0) / 2.0 * (high - low)
    np.testing.assert_allclose(agent.get_action(x, use_exploration=False), expected, rtol=1e-5, atol=1e-5)


def test_dict_action_space_with_a_pre_network_per_action(backend):
    turn_pre = [{"type": "dense", "units": 3, "activation": "tanh", "scope": "turn-hidden"}]
    actions = Dict(forward=IntBox(3), turn=FloatBox(shape=(2,), low=-1.0, high=1.0), jump=IntBox(2))
    policy = Policy(NET, action_space=actions, action_adapter_spec={
        "forward": {"pre_network_spec": PRE}, "turn": {"pre_network_spec": turn_pre}})  # jump: none.
    test = ComponentTest(policy, input_spaces=dict(nn_inputs=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend=backend)
    weights = _known_weights(test.graph_executor.get_weights(), seed=5)
    test.graph_executor.set_weights(weights)
    index = {key.lstrip("/"): i for i, key in enumerate(actions.flatten())}
    assert not any(k.startswith(f"policy/action-adapter-{index['jump']}/pre-network") for k in weights)
    x = _states(4, 3, seed=2)
    h = _dense_stack(x, weights, "policy/neural-network", NET)
    out = test.test(("get_adapter_outputs", x))
    forward = _head(h, weights, f"policy/action-adapter-{index['forward']}", PRE)
    np.testing.assert_allclose(out["forward"], forward, rtol=1e-5, atol=1e-5)
    turn = _head(h, weights, f"policy/action-adapter-{index['turn']}", turn_pre)
    np.testing.assert_allclose(out["turn"][0], turn[:, :2], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["turn"][1], np.clip(turn[:, 2:], -20.0, 2.0), rtol=1e-5, atol=1e-5)
    jump = _head(h, weights, f"policy/action-adapter-{index['jump']}", [])
    np.testing.assert_allclose(out["jump"], jump, rtol=1e-5, atol=1e-5)


def test_ddpg_actor_head_has_the_pre_network(backend):
    agent = Agent.from_spec(dict(type="ddpg", state_space=FloatBox(shape=(3,)),
                                 action_space=FloatBox(low=-1.0, high=3.0, shape=(2,)), network_spec=NET,
                                 action_adapter_spec={"pre_network_spec": PRE, "weights_spec": 0.1},
                                 memory_spec={"type": "replay-memory", "capacity": 16}, update_spec={"batch_size": 4},
                                 execution_spec={"seed": 3}, backend=backend))
    weights = _set_policy_weights(agent, seed=6)
    actor = next(k for k in weights if k.endswith("/action-layer/kernel"))[:-len("/action-layer/kernel")]
    x = _states(6, 3, seed=3)
    z = _head(_dense_stack(x, weights, f"{actor}/neural-network", NET), weights, actor, PRE)
    np.testing.assert_allclose(agent.get_action(x, use_exploration=False), -1.0 + (np.tanh(z) + 1.0) / 2.0 * 4.0,
                               rtol=1e-5, atol=1e-5)


def test_impala_adapters_take_per_action_pre_networks(backend):
    agent = Agent.from_spec(dict(type="impala", state_space=FloatBox(shape=(3,)),
                                 action_space=Dict(a=IntBox(2), b=IntBox(3)), network_spec=NET, worker_sample_size=4,
                                 action_adapter_spec={"a": {"pre_network_spec": [{"type": "dense", "units": 7}]},
                                                      "b": {"pre_network_spec": PRE}}, backend=backend))
    shapes = {k.split("/policy/", 1)[1]: v.shape for k, v in agent.get_weights().items() if "pre-network" in k}
    assert shapes["action-adapter-0/pre-network/dense/kernel"] == (6, 7)
    assert shapes["action-adapter-1/pre-network/pre-2/kernel"] == (5, 4)
    actions = agent.get_action(_states(2, 3), use_exploration=False)
    assert set(actions) == {"a", "b"} and actions["b"].shape == (2,)


# --- names across backends, the export ------------------------------------------------------------
def test_pre_network_weights_move_between_backends(backend):
    other = "tf" if backend == "pytorch" else "pytorch"
    if not is_backend_installed(other):
        pytest.skip(reason=f"needs both backends; {other!r} is not installed")
    source = Agent.from_spec(_dqn_spec(backend, execution_spec={"seed": 11}))
    target = Agent.from_spec(_dqn_spec(other, execution_spec={"seed": 12}))
    assert sorted(source.get_weights()) == sorted(target.get_weights())
    _set_policy_weights(source, seed=7)
    x = _states(5, 3, seed=4)
    target.set_weights(source.get_weights())
    np.testing.assert_allclose(target.get_q_values(x), source.get_q_values(x), rtol=1e-5, atol=1e-5)


def test_export_policy_includes_the_pre_network(backend, tmp_path):
    pytest.importorskip("torch", reason="the TorchScript export needs PyTorch")
    from rlgraph.agents.policy_export import load_and_run
    agent = Agent.from_spec(_dqn_spec(backend))
    _set_policy_weights(agent, seed=8)  # (A twin on the other backend must get the pre-network's weights too.)
    path = agent.export_policy(str(tmp_path / "policy.pt"), "torchscript")
    x = _states(50, 3, seed=5)
    np.testing.assert_array_equal(load_and_run("torchscript", path, x, agent.state_space),
                                  agent.get_action(x, use_exploration=False))


# --- errors --------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, message", [
    ([{"type": "dense_layerr", "units": 4}], "bad pre_network_spec: unknown type"),
    ("dense", "cannot make a pre-network"),
    ([{"type": "dense", "units": 4, "activaton": "relu"}], "bad pre_network_spec: unknown key 'activaton'"),
    ([{"type": "lstm", "units": 4}], "cannot hold recurrent layers"),
])
def test_a_bad_pre_network_spec_is_named(bad, message):
    with pytest.raises(RLGraphSpecError, match=message) as error:
        ActionAdapter(IntBox(2), pre_network_spec=bad)
    assert "ActionAdapter(pre_network_spec)" in str(error.value)


def test_a_bad_per_action_pre_network_names_the_action(backend):
    spec = _dqn_spec(backend, action_space=Dict(forward=IntBox(2), turn=IntBox(3)),
                     action_adapter_spec={"forward": {"pre_network_spec": PRE},
                                          "turn": {"pre_network_spec": [{"type": "dense", "unitz": 3}]}})
    with pytest.raises(RLGraphSpecError, match=r"action_adapter_spec\) for action 'turn': "
                                               r"ActionAdapter\(pre_network_spec\)"):
        Agent.from_spec(spec)
    with pytest.raises(RLGraphSpecError, match=r"DDPGAgent\(action_adapter_spec\).*'activation'"):
        Agent.from_spec(dict(type="ddpg", state_space=FloatBox(shape=(3,)),
                             action_space=FloatBox(low=-1.0, high=1.0, shape=(1,)), network_spec=NET,
                             action_adapter_spec={"activation": "tanh"}, backend=backend))


def test_no_pre_network_spec_means_no_pre_network():
    for spec in (None, []):
        adapter = ActionAdapter(IntBox(2), pre_network_spec=spec)
        assert adapter.pre_network is None and list(adapter.sub_components) == ["action-layer"]
    one_layer = ActionAdapter(IntBox(2), pre_network_spec={"type": "dense", "units": 3})
    network = ActionAdapter(IntBox(2), pre_network_spec={"layers": [{"type": "dense", "units": 3}]})
    assert [c.scope for c in one_layer.pre_network.layers] == [c.scope for c in network.pre_network.layers] == [
        "dense"]
