"""The IMPALA "small" and "large" network specs: torso shapes, conv kernels, residual block, errors."""
import json
import re

import numpy as np
import pytest
from backend_marks import needs_both_backends

from rlgraph.agents.impala.networks import impala_network_spec
from rlgraph.components import Component
from rlgraph.components.neural_networks import NeuralNetwork
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

# Conv kernel shapes [kh, kw, in, out] for a 3-channel image, by hand from Figure 3 of the paper.
SMALL_KERNELS = [(8, 8, 3, 16), (4, 4, 16, 32)]
# Per section: the entry conv, then 2 residual blocks x 2 convs (3 x (1 + 2 x 2) = 15 kernels).
LARGE_KERNELS = ([(3, 3, 3, 16)] + [(3, 3, 16, 16)] * 4 + [(3, 3, 16, 32)] + [(3, 3, 32, 32)] * 4 +
                 [(3, 3, 32, 32)] * 5)
# Dense input sizes for 72 x 96 images. small ("valid"): (72-8)//4+1 = 17, (96-8)//4+1 = 23, then
# (17-4)//2+1 = 7, (23-4)//2+1 = 10 -> 7*10*32. large (pools "same", stride 2): 72x96 -> 36x48 ->
# 18x24 -> 9x12 -> 9*12*32.
DENSE_IN = {"small": 7 * 10 * 32, "large": 9 * 12 * 32}


def build_torso(architecture, backend, space):
    """The network without its last layer (the LSTM, which the agent unrolls itself)."""
    spec = impala_network_spec(architecture)
    assert spec[-1] == {"type": "lstm", "units": 256, "scope": "lstm"}
    net = NeuralNetwork.from_spec(spec[:-1])
    return net, ComponentTest(net, input_spaces=dict(inputs=space), backend=backend)


@pytest.mark.parametrize("architecture", ["small", "large"])
def test_torso_output_shape_and_conv_kernels(backend, architecture):
    net, test = build_torso(architecture, backend, FloatBox(shape=(72, 96, 3), add_batch_rank=True))
    weights = test.read_variable_values(net.variable_registry)
    kernels = [w.shape for name, w in weights.items() if name.endswith("/kernel") and w.ndim == 4]
    assert kernels == (SMALL_KERNELS if architecture == "small" else LARGE_KERNELS)
    assert len(kernels) == (2 if architecture == "small" else 15)
    assert weights["neural-network/dense/kernel"].shape == (DENSE_IN[architecture], 256)
    x = np.random.RandomState(0).uniform(0.0, 255.0, size=(3, 72, 96, 3)).astype(np.float32)
    out = test.test(("apply", x))["output"]
    assert out.shape == (3, 256)
    assert out.dtype == np.float32 and np.all(out >= 0.0)  # Ends in dense 256 relu.


def test_uint8_images_are_scaled_to_unit_floats(backend):
    # The first layer alone: uint8 pixels / 255 as float32.
    layer = Component.from_spec(impala_network_spec("small")[0])
    space = IntBox(256, shape=(2, 2, 1), dtype="uint8", add_batch_rank=True)
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend)
    out = test.test(("apply", np.array([[[[0], [51]], [[102], [255]]]], dtype=np.uint8)))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out[0, :, :, 0], [[0.0, 0.2], [0.4, 1.0]], rtol=1e-6)


def test_large_residual_block_matches_numpy(backend):
    spec = impala_network_spec("large")[3]  # scale, conv, pool, then the first residual block.
    assert spec["scope"] == "section-0-block-0"
    block = Component.from_spec(spec)
    test = ComponentTest(block, input_spaces=dict(inputs=FloatBox(shape=(3, 4, 16), add_batch_rank=True)),
                         backend=backend)
    w = test.read_variable_values(block.variable_registry)
    x = np.random.RandomState(1).normal(size=(2, 3, 4, 16)).astype(np.float32)
    h = x
    for i in range(2):  # x + conv(relu(conv(relu(x))))
        h = rnp.conv2d(rnp.relu(h), w[f"section-0-block-0/unit-{i}/conv/kernel"], 1, "same") + \
            w[f"section-0-block-0/unit-{i}/conv/bias"]
    test.test(("apply", x), expected_outputs=x + h, decimals=5)


@needs_both_backends
@pytest.mark.parametrize("architecture", ["small", "large"])
def test_torso_same_weights_same_outputs_across_backends(architecture):
    x = np.random.RandomState(2).uniform(0.0, 255.0, size=(2, 40, 48, 3)).astype(np.float32)
    weights, outputs = None, {}
    for backend in ("pytorch", "tf"):
        net = NeuralNetwork.from_spec(impala_network_spec(architecture)[:-1])
        test = ComponentTest(net, input_spaces=dict(inputs=FloatBox(shape=(40, 48, 3), add_batch_rank=True)),
                             backend=backend, seed=None)
        if weights is None:
            rng = np.random.RandomState(3)
            weights = {k: (0.1 * rng.normal(size=v.shape)).astype(np.float32)
                       for k, v in test.graph_executor.get_weights().items()}
        test.graph_executor.set_weights(weights)
        outputs[backend] = test.test(("apply", x))["output"]
    np.testing.assert_allclose(outputs["tf"], outputs["pytorch"], rtol=1e-4, atol=1e-4)


def test_specs_are_fresh_json_data():
    for architecture in ("small", "large"):
        spec = impala_network_spec(architecture)
        assert json.loads(json.dumps(spec)) == spec
        spec[0]["divisor"] = 1.0
        assert impala_network_spec(architecture)[0]["divisor"] == 255.0


@pytest.mark.parametrize("architecture", ["medium", "Small", None])
def test_unknown_architecture(architecture):
    pattern = (r"IMPALAAgent\(architecture\): unknown network architecture. Expected 'small' or 'large'; "
               rf"received {re.escape(repr(architecture))}\..*`network_spec`.*overrides")
    with pytest.raises(RLGraphSpecError, match=pattern):
        impala_network_spec(architecture)
