"""Action adapters and policies against numpy, on both backends."""
import numpy as np
import pytest

from rlgraph.components.action_adapters.action_adapter import ActionAdapter
from rlgraph.components.action_adapters.baseline_action_adapter import BaselineActionAdapter
from rlgraph.components.action_adapters.dueling_action_adapter import DuelingActionAdapter
from rlgraph.components.policies.dueling_policy import DuelingPolicy
from rlgraph.components.policies.policy import Policy
from rlgraph.components.policies.shared_value_function_policy import SharedValueFunctionPolicy
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils.numpy import log_softmax, softmax
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

NET = [{"type": "dense", "units": 5, "activation": "relu", "scope": "hidden"}]


def _states(n=4, dim=3, seed=0):
    return np.random.RandomState(seed).randn(n, dim).astype(np.float32)


def _weights(test, prefix):
    w = test.graph_executor.get_weights()
    return w[f"{prefix}/kernel"], w[f"{prefix}/bias"]


def _hidden(test, x, scope="policy"):
    k, b = _weights(test, f"{scope}/neural-network/hidden")
    return np.maximum(x @ k + b, 0.0)


def test_adapter_int_box_shape_and_time_rank(backend):
    space = IntBox(3, shape=(2,))
    adapter = ActionAdapter(space)
    test = ComponentTest(adapter, input_spaces=dict(nn_output=FloatBox(shape=(4,), add_batch_rank=True,
                                                                        add_time_rank=True)), backend=backend)
    x = np.random.RandomState(1).randn(2, 3, 4).astype(np.float32)  # [B, T, in]
    k, b = _weights(test, "action-adapter/action-layer")
    logits = (x @ k + b).reshape(2, 3, 2, 3)
    out = test.test(("get_logits_probabilities_log_probs", x))
    np.testing.assert_allclose(out[0], logits, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[1], softmax(logits), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out[2], log_softmax(logits), rtol=1e-5, atol=1e-6)
    assert test.test(("get_action_layer_output", x)).shape == (2, 3, 6)


def test_adapter_bool_and_float(backend):
    x = _states(dim=4)
    test = ComponentTest(ActionAdapter(BoolBox(shape=(2,))), input_spaces=dict(
        nn_output=FloatBox(shape=(4,), add_batch_rank=True)), backend=backend)
    k, b = _weights(test, "action-adapter/action-layer")
    logits, probs, log_probs = test.test(("get_logits_probabilities_log_probs", x))
    np.testing.assert_allclose(logits, x @ k + b, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(probs, 1.0 / (1.0 + np.exp(-(x @ k + b))), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(log_probs, np.log(probs), rtol=1e-4, atol=1e-5)

    bias = np.array([0.0, 0.0, 0.0, 0.0, 50.0, -50.0], np.float32)  # log_std clipped to [-20, 2]
    for parameterization in ("normal", "beta"):
        adapter = ActionAdapter(FloatBox(shape=(3,)), parameterization=parameterization, biases_spec=bias)
        test = ComponentTest(adapter, input_spaces=dict(nn_output=FloatBox(shape=(4,), add_batch_rank=True)),
                             backend=backend)
        k, _ = _weights(test, "action-adapter/action-layer")
        raw = x @ k + bias
        first, second = test.test(("get_parameters", x))
        if parameterization == "normal":
            np.testing.assert_allclose(first, raw[:, :3], rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(second, np.clip(raw[:, 3:], -20.0, 2.0), rtol=1e-5, atol=1e-5)
        else:
            np.testing.assert_allclose(first, 1.0 + np.logaddexp(0.0, raw[:, :3]), rtol=1e-5, atol=1e-5)
            np.testing.assert_allclose(second, 1.0 + np.logaddexp(0.0, raw[:, 3:]), rtol=1e-5, atol=1e-5)
        assert test.test(("get_logits_probabilities_log_probs", x))[1] is None


def test_adapter_state_independent_log_std(backend):
    x = np.random.RandomState(2).randn(2, 3, 4).astype(np.float32)  # [B, T, in]
    adapter = ActionAdapter(FloatBox(shape=(2,)), log_std_init=-0.5)
    test = ComponentTest(adapter, input_spaces=dict(nn_output=FloatBox(shape=(4,), add_batch_rank=True,
                                                                        add_time_rank=True)), backend=backend)
    k, b = _weights(test, "action-adapter/action-layer")
    assert k.shape == (4, 2)  # The layer outputs the mean only.
    np.testing.assert_array_equal(test.graph_executor.get_weights()["action-adapter/log-std"], [-0.5, -0.5])
    mean, log_std = test.test(("get_parameters", x))
    np.testing.assert_allclose(mean, x @ k + b, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(log_std, np.full((2, 3, 2), -0.5, np.float32))  # The same for every state.
    test.graph_executor.set_weights({"action-adapter/log-std": np.array([0.25, 7.0], np.float32)})
    np.testing.assert_allclose(test.test(("get_parameters", x))[1][1, 2], [0.25, 2.0])  # Clipped to [-20, 2].


def test_ppo_trains_the_state_independent_log_std(backend):
    from rlgraph.agents import Agent
    agent = Agent.from_spec(
        {"type": "ppo", "backend": backend, "network_spec": NET, "value_function_spec": NET,
         "action_adapter_spec": {"log_std_init": -1.0},
         "policy_spec": {"distributions_spec": {"bounded_distribution_type": "normal"}},
         "update_spec": {"batch_size": 8, "sample_size": 8, "num_epochs": 1},
         "optimizer_spec": {"type": "adam", "learning_rate": 0.01}, "execution_spec": {"seed": 3}},
        state_space=FloatBox(shape=(3,)), action_space=FloatBox(low=-2.0, high=2.0, shape=(1,)))
    name = next(n for n in agent.get_weights() if n.endswith("log-std"))
    np.testing.assert_array_equal(agent.get_weights()[name], [-1.0])
    rng = np.random.RandomState(0)
    states = rng.randn(9, 1, 3).astype(np.float32)
    for i in range(8):
        action = agent.get_action(states[i])
        agent.observe(states[i], action, None, np.float32([1.0 if action[0, 0] > 0 else -1.0]), states[i + 1],
                      np.array([i == 7]))
    agent.update()
    moved = agent.get_weights()[name]
    assert moved.shape == (1,) and abs(float(moved[0]) + 1.0) > 1e-4  # The optimizer steps it.
    agent.terminate()


def test_dueling_and_baseline_adapters(backend):
    x = _states(dim=4)
    adapter = DuelingActionAdapter(IntBox(3), units_state_value_stream=5, units_advantage_stream=6)
    test = ComponentTest(adapter, input_spaces=dict(nn_output=FloatBox(shape=(4,), add_batch_rank=True)),
                         backend=backend)
    scope = "dueling-action-adapter"
    kv, bv = _weights(test, f"{scope}/dense-layer-state-value-stream")
    kn, bn = _weights(test, f"{scope}/state-value-node")
    ka, ba = _weights(test, f"{scope}/dense-layer-advantage-stream")
    kh, bh = _weights(test, f"{scope}/action-layer")
    v = (np.maximum(x @ kv + bv, 0.0) @ kn + bn)[:, 0]
    a = np.maximum(x @ ka + ba, 0.0) @ kh + bh
    q = v[:, None] + a - a.mean(axis=-1, keepdims=True)
    out = test.test(("get_dueling_output", x))
    for got, want in zip(out, (v, a, q)):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(test.test(("get_parameters", x)), q, rtol=1e-5, atol=1e-5)

    test = ComponentTest(BaselineActionAdapter(IntBox(2)), input_spaces=dict(
        nn_output=FloatBox(shape=(4,), add_batch_rank=True)), backend=backend)
    k, b = _weights(test, "baseline-action-adapter/action-layer")
    values, logits = test.test(("get_state_values_and_parameters", x))
    np.testing.assert_allclose(values, (x @ k + b)[:, :1], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(logits, (x @ k + b)[:, 1:], rtol=1e-5, atol=1e-6)


def test_policy_discrete(backend):
    space = IntBox(4)
    test = ComponentTest(Policy(NET, action_space=space), input_spaces=dict(
        nn_inputs=FloatBox(shape=(3,), add_batch_rank=True), actions=space.with_batch_rank()), backend=backend)
    x = _states(n=6)
    k, b = _weights(test, "policy/action-adapter-0/action-layer")
    logits = _hidden(test, x) @ k + b
    np.testing.assert_array_equal(test.test(("get_action", x)), np.argmax(logits, -1))
    np.testing.assert_array_equal(test.test(("get_deterministic_action", x)), np.argmax(logits, -1))
    np.testing.assert_allclose(test.test(("get_q_values", x)), logits, rtol=1e-5, atol=1e-5)
    actions = np.array([0, 1, 2, 3, 0, 1])
    np.testing.assert_allclose(test.test(("get_log_prob", [x, actions])),
                               log_softmax(logits)[np.arange(6), actions], rtol=1e-5, atol=1e-5)
    p = softmax(logits)
    np.testing.assert_allclose(test.test(("get_entropy", x)), -(p * np.log(p)).sum(-1), rtol=1e-5, atol=1e-5)
    action, log_prob = test.test(("get_action_and_log_prob", x))
    np.testing.assert_allclose(log_prob, log_softmax(logits)[np.arange(6), action], rtol=1e-5, atol=1e-5)
    # Stochastic draws: valid, reproducible under one seed, not all equal to the argmax.
    many = np.repeat(x[:1], 200, axis=0)
    draws = test.test(("get_stochastic_action", many))
    assert draws.dtype == np.int32 and draws.min() >= 0 and draws.max() < 4 and len(set(draws.tolist())) > 1
    again = ComponentTest(Policy(NET, action_space=space), input_spaces=dict(
        nn_inputs=FloatBox(shape=(3,), add_batch_rank=True)), backend=backend)
    np.testing.assert_array_equal(again.test(("get_stochastic_action", many)), draws)


def test_policy_dict_action_space(backend):
    space = Dict(discrete=IntBox(3), continuous=FloatBox(shape=(2,), low=-1.0, high=1.0))
    policy = Policy(NET, action_space=space, max_likelihood=False)
    test = ComponentTest(policy, input_spaces=dict(nn_inputs=FloatBox(shape=(3,), add_batch_rank=True),
                                                   actions=space.with_batch_rank()), backend=backend)
    assert sorted(policy.sub_components) == ["action-adapter-0", "action-adapter-1", "categorical-1",
                                             "neural-network", "squashed-normal-0"]
    x = _states(n=50)
    actions, log_probs = test.test(("get_action_and_log_prob", x))
    assert set(actions) == {"discrete", "continuous"} and set(log_probs) == set(actions)
    assert actions["continuous"].shape == (50, 2) and np.all(np.abs(actions["continuous"]) <= 1.0)
    assert actions["discrete"].shape == (50,) and set(actions["discrete"].tolist()) <= {0, 1, 2}
    # Log-probs of given actions vs numpy (categorical leaf; squashed normal via change of variables).
    params = test.test(("get_adapter_outputs", x))
    h = _hidden(test, x)
    k, b = _weights(test, "policy/action-adapter-1/action-layer")
    np.testing.assert_allclose(params["discrete"], h @ k + b, rtol=1e-5, atol=1e-5)
    given = {"discrete": np.zeros(50, np.int64), "continuous": np.full((50, 2), 0.5, np.float32)}
    out = test.test(("get_log_prob", [x, given]))
    np.testing.assert_allclose(out["discrete"], log_softmax(h @ k + b)[:, 0], rtol=1e-5, atol=1e-5)
    mean, log_std = params["continuous"]
    u = np.arctanh(0.5)
    want = -0.5 * ((u - mean) / np.exp(log_std)) ** 2 - log_std - 0.5 * np.log(2 * np.pi) - np.log(1 - 0.25)
    np.testing.assert_allclose(out["continuous"], want, rtol=1e-4, atol=1e-4)
    logits, probs, _ = test.test(("get_logits_probabilities_log_probs", x))
    assert probs["continuous"] is None and probs["discrete"].shape == (50, 3)
    det = test.test(("get_deterministic_action", x))
    np.testing.assert_allclose(det["continuous"], np.tanh(mean), rtol=1e-5, atol=1e-5)


def test_policy_beta_and_kl(backend):
    space = FloatBox(shape=(2,), low=0.0, high=2.0)
    policy = Policy(NET, action_space=space, distributions_spec={"bounded_distribution_type": "beta"})
    test = ComponentTest(policy, input_spaces=dict(nn_inputs=FloatBox(shape=(3,), add_batch_rank=True),
                                                   other_parameters=(FloatBox(shape=(2,), add_batch_rank=True),
                                                                     FloatBox(shape=(2,), add_batch_rank=True))),
                         backend=backend)
    assert "beta-0" in policy.sub_components
    x = _states()
    alpha, beta = test.test(("get_adapter_outputs", x))
    assert np.all(alpha > 1.0) and np.all(beta > 1.0)
    actions = test.test(("get_stochastic_action", x))
    assert np.all((actions >= 0.0) & (actions <= 2.0))
    np.testing.assert_allclose(test.test(("get_kl_divergence", [x, (alpha, beta)])), 0.0, atol=1e-5)


def test_dueling_policy(backend):
    policy = DuelingPolicy(NET, action_space=IntBox(3), units_state_value_stream=4, units_advantage_stream=4)
    test = ComponentTest(policy, input_spaces=dict(nn_inputs=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend=backend)
    x = _states()
    v, a, q = test.test(("get_state_values_advantages_q_values", x))
    np.testing.assert_allclose(q, v[:, None] + a - a.mean(-1, keepdims=True), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(test.test(("get_q_values", x)), q, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(test.test(("get_action", x)), np.argmax(q, -1))


def test_shared_value_function_policy(backend):
    policy = SharedValueFunctionPolicy(NET, action_space=IntBox(2))
    test = ComponentTest(policy, input_spaces=dict(nn_inputs=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend=backend)
    x = _states()
    h = _hidden(test, x, scope="shared-value-function-policy")
    kv, bv = _weights(test, "shared-value-function-policy/value-function-node")
    k, b = _weights(test, "shared-value-function-policy/action-adapter-0/action-layer")
    np.testing.assert_allclose(test.test(("get_state_values", x)), h @ kv + bv, rtol=1e-5, atol=1e-5)
    values, logits, probs, log_probs = test.test(("get_state_values_logits_probabilities_log_probs", x))
    np.testing.assert_allclose(values, h @ kv + bv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(probs, softmax(h @ k + b), rtol=1e-5, atol=1e-5)
    values, params = test.test(("get_state_values_and_parameters", x))
    np.testing.assert_allclose(values, h @ kv + bv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(params, h @ k + b, rtol=1e-5, atol=1e-5)


def test_shared_value_function_policy_reads_both_heads_from_one_pass(backend, monkeypatch):
    """The PPO/A2C loss's numbers (V(s), log pi(a|s), entropy) from one API, equal to a numpy
    reference; on PyTorch each call runs the network's hidden layer once (counted in torch.addmm)."""
    policy = SharedValueFunctionPolicy(NET, action_space=IntBox(2))
    test = ComponentTest(policy, input_spaces=dict(nn_inputs=FloatBox(shape=(3,), add_batch_rank=True),
                                                   actions=IntBox(2, add_batch_rank=True)), backend=backend)
    x, actions = _states(), np.array([0, 1, 1, 0])
    h = _hidden(test, x, scope="shared-value-function-policy")
    kv, bv = _weights(test, "shared-value-function-policy/value-function-node")
    k, b = _weights(test, "shared-value-function-policy/action-adapter-0/action-layer")
    log_p = np.log(softmax(h @ k + b))
    passes = []
    if backend == "pytorch":  # The hidden layer's matmuls: those with a kernel of 3 input rows.
        import torch
        addmm = torch.addmm
        monkeypatch.setattr(torch, "addmm", lambda bias, x, kernel: passes.append(kernel.shape[0] == 3) or
                            addmm(bias, x, kernel))
    values, log_probs, entropies = test.test(("get_state_values_log_prob_and_entropy", [x, actions]))
    np.testing.assert_allclose(values, h @ kv + bv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(log_probs, log_p[np.arange(4), actions], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(entropies, -(np.exp(log_p) * log_p).sum(-1), rtol=1e-5, atol=1e-5)
    if backend == "pytorch":
        assert sum(passes) == 1 and len(passes) == 3  # Hidden layer once; the value and action heads.


def test_bad_specs():
    with pytest.raises(RLGraphSpaceError):
        ActionAdapter(IntBox())  # No categories.
    with pytest.raises(RLGraphSpaceError):
        ActionAdapter(Dict(a=IntBox(2)))
    with pytest.raises(RLGraphSpecError):
        ActionAdapter(IntBox(2), units=5)
    with pytest.raises(RLGraphSpecError):
        ActionAdapter(FloatBox(shape=(2,)), parameterization="gamma")
    with pytest.raises(RLGraphSpecError, match="log_std_init needs a FloatBox"):
        ActionAdapter(IntBox(2), log_std_init=0.0)
    with pytest.raises(RLGraphSpecError, match=r"ActionAdapter\(log_std_init\)"):
        ActionAdapter(FloatBox(shape=(2,)), log_std_init=float("nan"))
    with pytest.raises(RLGraphSpecError):
        ActionAdapter(FloatBox(shape=(2,)), parameterization="beta", log_std_init=0.0)
    with pytest.raises(RLGraphSpecError):
        BaselineActionAdapter(IntBox(2), add_units=2)
    with pytest.raises(RLGraphSpaceError):
        DuelingActionAdapter(FloatBox(), units_state_value_stream=2, units_advantage_stream=2)
    with pytest.raises(RLGraphSpecError):
        Policy(NET)  # No action space.
    with pytest.raises(RLGraphSpecError):
        Policy(NET, action_space=FloatBox(low=-1.0, high=1.0), distributions_spec={"bounded": "beta"})
    with pytest.raises(RLGraphSpecError):
        Policy(NET, action_space=FloatBox(low=-1.0, high=1.0), distributions_spec={"bounded_distribution_type": "x"})
    with pytest.raises(RLGraphSpaceError):
        Policy(NET, action_space=FloatBox(low=[-1.0, 0.0], high=[1.0, 1.0]))


def test_bad_network_output_space(backend):
    with pytest.raises(RLGraphSpaceError, match="flat float vector"):
        ComponentTest(ActionAdapter(IntBox(2)), input_spaces=dict(nn_output=FloatBox(shape=(2, 2),
                                                                                     add_batch_rank=True)),
                      backend=backend)
