"""Initializers, activation functions and DenseLayer against numpy, on both backends."""
import json

import numpy as np
import pytest
from backend_marks import needs_both_backends

from rlgraph.components import Component
from rlgraph.components.layers import DenseLayer, NNLayer
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal
from rlgraph.utils import numpy as rnp
from rlgraph.utils.initializers import bias_initializer, compute_fans, get_initializer
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

F32 = np.dtype("float32")


# --- Initializers ------------------------------------------------------------------------------
def test_fans_of_dense_and_conv_kernels():
    assert compute_fans((4, 3)) == (4, 3)
    assert compute_fans((3, 3, 2, 8)) == (18, 72)


def test_glorot_uniform_bounds_and_variance():
    np.random.seed(1)
    w = get_initializer("xavier")((200, 300), F32)
    limit = np.sqrt(6.0 / 500.0)
    assert w.dtype == F32 and np.all(np.abs(w) <= limit)
    # Var of U(-a, a) = a^2 / 3 = 2 / (fan_in + fan_out).
    assert abs(w.var() - 2.0 / 500.0) < 0.05 * 2.0 / 500.0


def test_he_normal_and_truncated_normal():
    np.random.seed(2)
    w = get_initializer("he_normal")((400, 300), F32)
    # A truncated normal rescaled so that its stddev is sqrt(2 / fan_in).
    assert abs(w.std() - np.sqrt(2.0 / 400)) < 0.03 * np.sqrt(2.0 / 400)
    t = get_initializer({"type": "truncated_normal", "stddev": 0.1})((1000,), F32)
    assert np.all(np.abs(t) <= 0.2) and abs(t.mean()) < 0.01


def test_orthogonal_rows_and_columns():
    np.random.seed(3)
    w = get_initializer("orthogonal")((6, 4), F32)
    recursive_assert_almost_equal(w.T @ w, np.eye(4), decimals=5)
    w = get_initializer({"type": "orthogonal", "gain": 2.0})((3, 5), F32)
    recursive_assert_almost_equal(w @ w.T, 4.0 * np.eye(3), decimals=5)


def test_fan_in_uniform_bounds_variance_and_bias_fan_in():
    np.random.seed(4)
    w = get_initializer("fan_in_uniform")((400, 300), F32)
    # torch.nn.Linear's draw: U(-1/sqrt(fan_in), 1/sqrt(fan_in)), variance 1 / (3 fan_in).
    assert np.all(np.abs(w) <= 1.0 / 20.0) and abs(w.var() - 1.0 / 1200.0) < 0.03 / 1200.0
    w = get_initializer({"type": "torch_default", "gain": 2.0})((3, 3, 4, 8), F32)  # fan_in 3 * 3 * 4.
    assert np.all(np.abs(w) <= 2.0 / 6.0) and np.abs(w).max() > 0.9 * 2.0 / 6.0
    # A bias has no fan-in of its own: the layer's kernel gives it.
    assert bias_initializer("fan_in_uniform", (256, 2)) == {"type": "fan_in_uniform", "fan_in": 256.0}
    assert bias_initializer({"type": "torch_default", "gain": 0.5}, (3, 3, 4, 8)) == {
        "type": "torch_default", "gain": 0.5, "fan_in": 36.0}
    assert bias_initializer(0.0, (256, 2)) == 0.0 and bias_initializer("he_uniform", (2, 2)) == "he_uniform"
    b = get_initializer({"type": "fan_in_uniform", "fan_in": 4})((1000,), F32)
    assert np.all(np.abs(b) <= 0.5) and np.abs(b).max() > 0.49
    with pytest.raises(RLGraphSpecError, match="fan_in must be a positive number"):
        get_initializer({"type": "fan_in_uniform", "fan_in": 0})((2,), F32)
    with pytest.raises(RLGraphSpecError, match="unknown initializer parameter"):
        get_initializer({"type": "he_uniform", "fan_in": 3})


@needs_both_backends
def test_dense_layer_fan_in_uniform_bias_uses_the_kernel_fan_in_on_both_backends():
    values = {}
    for backend in ("tf", "pytorch"):
        layer = DenseLayer(units=300, weights_spec="fan_in_uniform", biases_spec="fan_in_uniform")
        test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(16,), add_batch_rank=True)),
                             backend=backend, seed=5)
        values[backend] = test.read_variable_values(layer.variable_registry)
    recursive_assert_almost_equal(values["tf"], values["pytorch"])  # Drawn in numpy: the same on both.
    bias = values["tf"]["dense/bias"]
    assert bias.shape == (300,) and np.all(np.abs(bias) <= 0.25) and np.abs(bias).max() > 0.24


def test_constant_array_and_errors():
    assert get_initializer(0.3) == 0.3
    assert get_initializer({"type": "constant", "value": 2.0}) == 2.0
    assert get_initializer("zeros") == 0.0
    with pytest.raises(RLGraphSpecError, match="unknown initializer 'glorious'"):
        get_initializer("glorious")
    with pytest.raises(RLGraphSpecError, match="unknown initializer parameter.*stdev"):
        get_initializer({"type": "truncated_normal", "stdev": 0.1})


# --- Activation functions ------------------------------------------------------------------------
ACTIVATIONS = [
    ("relu", (), rnp.relu), ("tanh", (), np.tanh), ("sigmoid", (), rnp.sigmoid), ("elu", (), rnp.elu),
    ("selu", (), rnp.selu), ("softplus", (), rnp.softplus), ("linear", (), lambda x: x),
    ("leaky_relu", (0.1,), lambda x: rnp.relu(x, alpha=0.1)), ("lrelu", (), lambda x: rnp.relu(x, alpha=0.2)),
    ("elu", (0.5,), lambda x: rnp.elu(x, alpha=0.5)), ("softmax", (), rnp.softmax),
]


@pytest.mark.parametrize("name,params,reference", ACTIVATIONS, ids=[f"{a[0]}{a[1]}" for a in ACTIVATIONS])
def test_activation_functions_match_numpy(backend, name, params, reference):
    x = np.linspace(-3.0, 3.0, 12, dtype=np.float32).reshape((3, 4))
    test = ComponentTest(NNLayer(activation=name, activation_params=params),
                         input_spaces=dict(inputs=FloatBox(shape=(4,), add_batch_rank=True)), backend=backend)
    test.test(("apply", x), expected_outputs=reference(x), decimals=5)


def test_unknown_activation_is_rejected_at_construction():
    with pytest.raises(RLGraphSpecError, match="unknown activation function 'rellu'.*relu"):
        DenseLayer(units=2, activation="rellu")


# --- DenseLayer --------------------------------------------------------------------------------
def test_dense_layer_matches_numpy_with_weights_read_back(backend):
    layer = DenseLayer(units=3, activation="tanh", biases_spec={"type": "truncated_normal", "stddev": 0.5})
    test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(4,), add_batch_rank=True)), backend=backend)
    values = test.read_variable_values(layer.variable_registry)
    assert sorted(values) == ["dense/bias", "dense/kernel"]
    assert values["dense/kernel"].shape == (4, 3) and values["dense/bias"].shape == (3,)
    assert np.any(values["dense/bias"] != 0.0)
    x = np.random.RandomState(0).normal(size=(6, 4)).astype(np.float32)
    expected = np.tanh(rnp.dense_layer(x, values["dense/kernel"], values["dense/bias"]))
    test.test(("apply", x), expected_outputs=expected, decimals=5)


def test_dense_layer_worked_values_and_no_bias(backend):
    # kernel of ones: each output is the sum of the inputs; no bias.
    layer = DenseLayer(units=2, weights_spec=1.0, biases_spec=False)
    test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(3,), add_batch_rank=True)), backend=backend)
    assert list(layer.variable_registry) == ["dense/kernel"]
    test.test(("apply", np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 0.5]], dtype=np.float32)),
              expected_outputs=np.array([[6.0, 6.0], [-0.5, -0.5]]))


def test_dense_layer_over_batch_and_time(backend):
    layer = DenseLayer(units=2, weights_spec=np.array([[1.0, 0.0], [0.0, 2.0]]), biases_spec=np.array([0.5, -0.5]))
    space = FloatBox(shape=(2,), add_batch_rank=True, add_time_rank=True)
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend)
    x = np.arange(12, dtype=np.float32).reshape((2, 3, 2))
    expected = np.stack([x[..., 0] + 0.5, 2 * x[..., 1] - 0.5], axis=-1)
    test.test(("apply", x), expected_outputs=expected)
    out_space = layer.get_preprocessed_space(space)
    assert out_space == FloatBox(shape=(2,), add_batch_rank=True, add_time_rank=True)


@needs_both_backends
def test_dense_layer_same_seed_same_weights_across_backends():
    outputs, weights = {}, {}
    x = np.random.RandomState(1).normal(size=(3, 5)).astype(np.float32)
    for backend in ("tf", "pytorch"):
        layer = DenseLayer(units=4, weights_spec="he_normal", activation="relu")
        test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(5,), add_batch_rank=True)),
                             backend=backend, seed=123)
        weights[backend] = test.read_variable_values(layer.variable_registry)
        outputs[backend] = test.test(("apply", x))
    recursive_assert_almost_equal(weights["tf"], weights["pytorch"])
    recursive_assert_almost_equal(outputs["tf"], outputs["pytorch"], decimals=5)


def test_dense_layer_input_errors(backend):
    with pytest.raises(RLGraphSpaceError, match=r"dense\.apply\(inputs\).*rank-1 inputs.*shape \(2, 3\)"):
        ComponentTest(DenseLayer(units=2), input_spaces=dict(inputs=FloatBox(shape=(2, 3), add_batch_rank=True)),
                      backend=backend)
    with pytest.raises(RLGraphSpaceError, match="batch rank"):
        ComponentTest(DenseLayer(units=2), input_spaces=dict(inputs=FloatBox(shape=(3,))), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="container spaces are not supported"):
        ComponentTest(DenseLayer(units=2), input_spaces=dict(inputs=Dict(a=FloatBox(shape=(2,)),
                                                                          add_batch_rank=True)), backend=backend)
    test = ComponentTest(DenseLayer(units=2), input_spaces=dict(inputs=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend=backend)
    with pytest.raises(RLGraphSpaceError, match=r"shape \(None, 3\).*shape \(2, 4\)"):
        test.test(("apply", np.zeros((2, 4), dtype=np.float32)))


def test_dense_layer_spec_errors():
    with pytest.raises(RLGraphSpecError, match="units must be a positive int"):
        DenseLayer(units=0)
    with pytest.raises(RLGraphSpecError, match="unknown key 'unit'"):
        Component.from_spec({"type": "dense", "unit": 3})
    layer = Component.from_spec(json.loads('{"type": "dense-layer", "units": 3, "activation": "relu"}'))
    assert isinstance(layer, DenseLayer) and layer.units == 3


def test_dense_layer_int_inputs_are_cast(backend):
    layer = DenseLayer(units=1, weights_spec=2.0, biases_spec=1.0)
    test = ComponentTest(layer, input_spaces=dict(inputs=IntBox(5, shape=(2,), add_batch_rank=True)),
                         backend=backend)
    test.test(("apply", np.array([[1, 3]])), expected_outputs=np.array([[9.0]]))
