"""A convolutional DQN learns alike on both backends: the same initial weights (rlgraph initializes
in numpy) and the same batches give the same losses and weights on PyTorch and TF.

Both backends' conv layers keep their kernels as [height, width, in, out] and PyTorch's forward
pass permutes them, so PyTorch's kernel gradients come back strided; this test caught Adam's fused
kernel applying such gradients to the wrong elements (see tests/test_optimizers.py).
"""
import numpy as np
import pytest

from rlgraph.agents import Agent
from rlgraph.spaces import IntBox

pytest.importorskip("torch")
pytest.importorskip("tensorflow")

NETWORK = [{"type": "convert-type", "to_dtype": "float32"}, {"type": "divide", "divisor": 255.0},
           {"type": "conv2d", "filters": 4, "kernel_size": 3, "strides": 2, "activation": "relu"},
           {"type": "conv2d", "filters": 6, "kernel_size": 2, "strides": 1, "activation": "relu"},
           {"type": "reshape", "flatten": True}, {"type": "dense", "units": 16, "activation": "relu"}]
STATES = IntBox(256, shape=(12, 12, 2), dtype="uint8")


def _agent(backend):
    spec = {"type": "dqn", "network_spec": NETWORK, "double_q": True, "discount": 0.9,
            "optimizer_spec": {"type": "adam", "learning_rate": 0.01},
            "memory_spec": {"type": "replay", "capacity": 64}, "execution_spec": {"seed": 4}}
    return Agent.from_spec(spec, state_space=STATES, action_space=IntBox(3), backend=backend)


def test_conv_dqn_updates_alike_on_both_backends():
    rng = np.random.RandomState(0)
    batch = dict(states=rng.randint(0, 256, (16, 12, 12, 2)).astype(np.uint8),
                 actions=rng.randint(0, 3, 16).astype(np.int32), rewards=rng.randn(16).astype(np.float32),
                 terminals=rng.rand(16) < 0.2, next_states=rng.randint(0, 256, (16, 12, 12, 2)).astype(np.uint8))
    torch_agent, tf_agent = _agent("pytorch"), _agent("tf")
    start = tf_agent.get_weights()
    for name, value in torch_agent.get_weights().items():
        np.testing.assert_array_equal(value, start[name], err_msg=name)
    for step in range(4):
        ours, theirs = torch_agent.update(batch), tf_agent.update(batch)
        np.testing.assert_allclose(ours[0], theirs[0], rtol=2e-5, err_msg=f"loss of update {step + 1}")
    weights, expected = torch_agent.get_weights(), tf_agent.get_weights()
    changed = [name for name in expected if "conv" in name and not np.allclose(expected[name], start[name])]
    assert len(changed) == 4  # Both conv kernels and biases learned.
    for name in expected:
        np.testing.assert_allclose(weights[name], expected[name], rtol=1e-4, atol=1e-5, err_msg=name)
