"""Conv2DLayer, MaxPool2DLayer, ConcatLayer and ResidualLayer against numpy, on both backends."""
import numpy as np
import pytest
from backend_marks import needs_both_backends

from rlgraph.components.layers.nn.concat_layer import ConcatLayer
from rlgraph.components.layers.nn.conv2d_layer import Conv2DLayer
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.components.layers.nn.maxpool2d_layer import MaxPool2DLayer
from rlgraph.components.layers.nn.residual_layer import ResidualLayer
from rlgraph.spaces import BoolBox, FloatBox, IntBox
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal
from rlgraph.utils import numpy as rnp
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


def images(shape, seed=0):
    return np.random.RandomState(seed).normal(size=shape).astype(np.float32)


def nchw(x):
    return np.transpose(x, (0, 3, 1, 2))


# --- Conv2DLayer -------------------------------------------------------------------------------
CONV_CASES = [
    # (image shape HWC, filters, kernel_size, strides, padding, activation)
    ((5, 6, 2), 3, 3, 1, "valid", None),
    ((5, 6, 2), 3, 3, 2, "same", None),
    ((6, 5, 3), 2, (2, 3), (2, 1), "same", "relu"),  # Even kernel: asymmetric padding on H.
    ((7, 7, 1), 4, (3, 1), 2, "valid", "tanh"),
]


@pytest.mark.parametrize("hwc,filters,kernel_size,strides,padding,activation", CONV_CASES)
def test_conv2d_matches_numpy_with_weights_read_back(backend, hwc, filters, kernel_size, strides, padding,
                                                     activation):
    layer = Conv2DLayer(filters, kernel_size, strides, padding=padding, activation=activation,
                        biases_spec={"type": "truncated_normal", "stddev": 0.5})
    space = FloatBox(shape=hwc, add_batch_rank=True)
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend)
    w = test.read_variable_values(layer.variable_registry)
    kh, kw = (kernel_size, kernel_size) if isinstance(kernel_size, int) else kernel_size
    assert w["conv2d/kernel"].shape == (kh, kw, hwc[2], filters) and w["conv2d/bias"].shape == (filters,)
    x = images((2,) + hwc)
    expected = rnp.conv2d(x, w["conv2d/kernel"], strides, padding) + w["conv2d/bias"]
    expected = {None: lambda v: v, "relu": rnp.relu, "tanh": np.tanh}[activation](expected)
    out = test.test(("apply", x), expected_outputs=expected, decimals=5)
    assert layer.get_preprocessed_space(space).get_shape(with_batch_rank=2) == out.shape


def test_conv2d_channels_first(backend):
    layer = Conv2DLayer(filters=2, kernel_size=(3, 2), strides=2, padding="same", data_format="channels_first",
                        biases_spec=0.25, activation="relu")
    space = FloatBox(shape=(3, 5, 4), add_batch_rank=True)  # (C, H, W)
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend)
    kernel = test.read_variable_values(layer.variable_registry)["conv2d/kernel"]
    assert kernel.shape == (3, 2, 3, 2)  # TF layout on both backends.
    x_nhwc = images((2, 5, 4, 3), seed=1)
    expected = nchw(rnp.relu(rnp.conv2d(x_nhwc, kernel, 2, "same") + 0.25))
    out = test.test(("apply", nchw(x_nhwc)), expected_outputs=expected, decimals=5)
    assert out.shape == (2, 2, 3, 2)
    assert layer.get_preprocessed_space(space) == FloatBox(shape=(2, 3, 2), add_batch_rank=True)


def test_conv2d_batch_and_time_ranks_and_no_bias(backend):
    layer = Conv2DLayer(filters=1, kernel_size=2, strides=1, kernel_spec=1.0, biases_spec=False)
    space = FloatBox(shape=(3, 3, 1), add_batch_rank=True, add_time_rank=True)
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend)
    assert list(layer.variable_registry) == ["conv2d/kernel"]
    x = np.arange(2 * 3 * 9, dtype=np.float32).reshape((2, 3, 3, 3, 1))
    expected = rnp.conv2d(x.reshape((6, 3, 3, 1)), np.ones((2, 2, 1, 1))).reshape((2, 3, 2, 2, 1))
    test.test(("apply", x), expected_outputs=expected, decimals=5)
    assert layer.get_preprocessed_space(space) == FloatBox(shape=(2, 2, 1), add_batch_rank=True,
                                                           add_time_rank=True)


@needs_both_backends
def test_conv2d_same_weights_give_same_outputs_across_backends():
    x = images((3, 6, 6, 2), seed=2)
    outputs, weights = {}, {}
    for backend in ("tf", "pytorch"):
        layer = Conv2DLayer(filters=4, kernel_size=3, strides=2, padding="same", activation="elu",
                            biases_spec={"type": "truncated_normal", "stddev": 0.1})
        test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(6, 6, 2), add_batch_rank=True)),
                             backend=backend, seed=42)
        weights[backend] = test.read_variable_values(layer.variable_registry)
        outputs[backend] = test.test(("apply", x))
    recursive_assert_almost_equal(weights["tf"], weights["pytorch"])
    recursive_assert_almost_equal(outputs["tf"], outputs["pytorch"], decimals=5)


def test_conv2d_spec_and_space_errors(backend):
    for kwargs, match in [(dict(padding="full"), r"Conv2DLayer\(padding\).*'valid' or 'same'"),
                          (dict(data_format="nhwc"), r"data_format.*'channels_last' or 'channels_first'"),
                          (dict(kernel_size=(3, 0)), r"kernel_size.*positive int"),
                          (dict(strides=1.5), r"strides.*positive int"),
                          (dict(filters=0), "filters must be a positive int")]:
        with pytest.raises(RLGraphSpecError, match=match):
            Conv2DLayer(**dict(dict(filters=2, kernel_size=3, strides=1), **kwargs))
    with pytest.raises(RLGraphSpaceError, match=r"conv2d\.apply\(inputs\).*rank-3 image.*shape \(4, 4\)"):
        ComponentTest(Conv2DLayer(2, 3, 1), input_spaces=dict(inputs=FloatBox(shape=(4, 4), add_batch_rank=True)),
                      backend=backend)
    with pytest.raises(RLGraphSpaceError, match="window .* does not fit"):
        ComponentTest(Conv2DLayer(2, 5, 1), input_spaces=dict(inputs=FloatBox(shape=(4, 4, 1), add_batch_rank=True)),
                      backend=backend)
    with pytest.raises(RLGraphSpaceError, match="batch rank"):
        ComponentTest(Conv2DLayer(2, 3, 1), input_spaces=dict(inputs=FloatBox(shape=(4, 4, 1))), backend=backend)


# --- MaxPool2DLayer ----------------------------------------------------------------------------
@pytest.mark.parametrize("pool_size,strides,padding", [(2, 2, "valid"), (3, 2, "same"), ((2, 3), (1, 2), "same"),
                                                       (3, 1, "valid")])
def test_max_pool2d_matches_numpy(backend, pool_size, strides, padding):
    layer = MaxPool2DLayer(pool_size, strides, padding=padding)
    space = FloatBox(shape=(5, 6, 2), add_batch_rank=True)
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend)
    x = images((3, 5, 6, 2), seed=3) - 5.0  # All negative: a zero-padded max would show.
    out = test.test(("apply", x), expected_outputs=rnp.max_pool2d(x, pool_size, strides, padding))
    assert layer.get_preprocessed_space(space).get_shape(with_batch_rank=3) == out.shape


def test_max_pool2d_channels_first_int_inputs_and_bounds(backend):
    layer = MaxPool2DLayer(pool_size=2, strides=2, padding="same", data_format="channels_first")
    space = IntBox(10, shape=(1, 3, 3), add_batch_rank=True)
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend)
    x = np.array([[[[1, 7, 2], [3, 0, 5], [9, 4, 6]]]])
    test.test(("apply", x), expected_outputs=np.array([[[[7.0, 5.0], [9.0, 6.0]]]]))
    assert layer.get_preprocessed_space(space) == FloatBox(0.0, 10.0, shape=(1, 2, 2), add_batch_rank=True)


def test_max_pool2d_errors(backend):
    with pytest.raises(RLGraphSpecError, match="padding"):
        MaxPool2DLayer(2, 2, padding="SAME-ish")
    with pytest.raises(RLGraphSpecError, match="pool_size"):
        MaxPool2DLayer((2, 2, 2), 2)
    with pytest.raises(RLGraphSpaceError, match=r"maxpool2d\.apply\(inputs\).*rank-3"):
        ComponentTest(MaxPool2DLayer(2, 2), input_spaces=dict(inputs=FloatBox(shape=(4,), add_batch_rank=True)),
                      backend=backend)


# --- ConcatLayer -------------------------------------------------------------------------------
def test_concat_two_and_three_inputs(backend):
    a, b, c = images((2, 3)), images((2, 1), seed=1), images((2, 2), seed=2)
    spaces = [FloatBox(shape=(3,), add_batch_rank=True), FloatBox(shape=(1,), add_batch_rank=True)]
    test = ComponentTest(ConcatLayer(), input_spaces=dict(inputs=spaces), backend=backend)
    test.test(("apply", [a, b]), expected_outputs=np.concatenate([a, b], axis=-1))
    spaces.append(FloatBox(shape=(2,), add_batch_rank=True))
    layer = ConcatLayer(axis=1, activation="relu")  # Non-negative axes count the batch rank.
    test = ComponentTest(layer, input_spaces=dict(inputs=spaces), backend=backend)
    out = test.test(("apply", [a, b, c]), expected_outputs=rnp.relu(np.concatenate([a, b, c], axis=1)))
    assert layer.get_preprocessed_space(spaces).get_shape(with_batch_rank=2) == out.shape == (2, 6)


def test_concat_inner_axis_with_time_rank(backend):
    spaces = [FloatBox(shape=(2, 3), add_batch_rank=True, add_time_rank=True),
              FloatBox(shape=(4, 3), add_batch_rank=True, add_time_rank=True)]
    layer = ConcatLayer(axis=-2)
    test = ComponentTest(layer, input_spaces=dict(inputs=spaces), backend=backend)
    a, b = images((2, 5, 2, 3)), images((2, 5, 4, 3), seed=1)
    out = test.test(("apply", [a, b]), expected_outputs=np.concatenate([a, b], axis=2))
    assert ConcatLayer(axis=2).get_preprocessed_space(spaces) == layer.get_preprocessed_space(spaces)
    assert layer.get_preprocessed_space(spaces).get_shape(with_batch_rank=2, with_time_rank=5) == out.shape


def test_concat_dtype_promotion_and_spaces(backend):
    spaces = [IntBox(5, shape=(2,), add_batch_rank=True), FloatBox(-1.0, 1.0, shape=(1,), add_batch_rank=True)]
    test = ComponentTest(ConcatLayer(), input_spaces=dict(inputs=spaces), backend=backend)
    out = test.test(("apply", [np.array([[1, 4]]), np.array([[0.5]], dtype=np.float32)]),
                    expected_outputs=np.array([[1.0, 4.0, 0.5]]))
    assert out.dtype == np.float32
    layer = ConcatLayer()
    assert layer.get_preprocessed_space(spaces) == FloatBox([-np.inf, -np.inf, -1.0], [np.inf, np.inf, 1.0],
                                                            add_batch_rank=True)
    assert layer.get_preprocessed_space([IntBox(3, shape=(1,)), IntBox(2, 5, shape=(2,))]) == \
        IntBox([0, 2, 2], [3, 5, 5])
    assert layer.get_preprocessed_space([BoolBox(shape=(2,)), BoolBox(shape=(1,))]) == BoolBox(shape=(3,))
    assert layer.get_preprocessed_space(FloatBox(shape=(4,))) == FloatBox(shape=(4,))


def test_concat_errors(backend):
    with pytest.raises(RLGraphSpecError, match="axis must be an int"):
        ConcatLayer(axis="last")
    bad = [FloatBox(shape=(2, 3), add_batch_rank=True), FloatBox(shape=(3, 3), add_batch_rank=True)]
    with pytest.raises(RLGraphSpaceError, match=r"concat\.apply\(inputs\).*input 1 does not fit input 0"):
        ComponentTest(ConcatLayer(axis=-1), input_spaces=dict(inputs=bad), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="not a data axis"):
        ComponentTest(ConcatLayer(axis=0), input_spaces=dict(inputs=bad), backend=backend)
    mixed_ranks = [FloatBox(shape=(2,), add_batch_rank=True), FloatBox(shape=(2,), add_batch_rank=True,
                                                                        add_time_rank=True)]
    with pytest.raises(RLGraphSpaceError, match="does not fit"):
        ConcatLayer().get_preprocessed_space(mixed_ranks)


# --- ResidualLayer -----------------------------------------------------------------------------
def test_residual_dense_units_match_numpy(backend):
    unit = {"type": "rlgraph.components.layers.nn.dense_layer.DenseLayer", "units": 3, "activation": "tanh",
            "biases_spec": {"type": "truncated_normal", "stddev": 0.3}}
    layer = ResidualLayer(unit, repeats=3, activation="relu")
    space = FloatBox(shape=(3,), add_batch_rank=True)
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend)
    w = test.read_variable_values(layer.variable_registry)
    assert sorted(w) == [f"residual-layer/unit-{i}/{v}" for i in range(3) for v in ("bias", "kernel")]
    assert not np.allclose(w["residual-layer/unit-0/kernel"], w["residual-layer/unit-1/kernel"])
    x = images((4, 3))
    h = x
    for i in range(3):
        h = np.tanh(rnp.dense_layer(h, w[f"residual-layer/unit-{i}/kernel"], w[f"residual-layer/unit-{i}/bias"]))
    out = test.test(("apply", x), expected_outputs=rnp.relu(x + h), decimals=5)
    assert layer.get_preprocessed_space(space).get_shape(with_batch_rank=4) == out.shape


def test_residual_conv_units_match_numpy(backend):
    layer = ResidualLayer(Conv2DLayer(filters=2, kernel_size=3, strides=1, padding="same", activation="relu"))
    space = FloatBox(shape=(4, 5, 2), add_batch_rank=True)
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend)
    w = test.read_variable_values(layer.variable_registry)
    x = images((2, 4, 5, 2), seed=4)
    h = x
    for i in range(2):
        h = rnp.relu(rnp.conv2d(h, w[f"residual-layer/unit-{i}/kernel"], 1, "same")
                     + w[f"residual-layer/unit-{i}/bias"])
    test.test(("apply", x), expected_outputs=x + h, decimals=5)


@needs_both_backends
def test_residual_same_weights_across_backends():
    x = images((3, 4), seed=5)
    outputs = {}
    for backend in ("tf", "pytorch"):
        layer = ResidualLayer(DenseLayer(units=4, activation="relu"), repeats=2)
        test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(4,), add_batch_rank=True)),
                             backend=backend, seed=7)
        test.graph_executor.set_weights({f"residual-layer/unit-{i}/kernel": np.full((4, 4), 0.1 * (i + 1) - 0.15)
                                         for i in range(2)})
        outputs[backend] = test.test(("apply", x))
    recursive_assert_almost_equal(outputs["tf"], outputs["pytorch"], decimals=5)


def test_residual_errors(backend):
    with pytest.raises(RLGraphSpecError, match="repeats must be a positive int"):
        ResidualLayer(DenseLayer(units=2), repeats=0)
    with pytest.raises(RLGraphSpecError, match="residual_unit must be"):
        ResidualLayer(3)
    layer = ResidualLayer(DenseLayer(units=2))
    with pytest.raises(RLGraphSpaceError, match=r"residual-layer\.apply\(inputs\).*residual-layer/unit-0 changes "
                                                r"it.*shape \(3,\).*units: residual-layer/unit-0, residual-layer/unit-1"):
        ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(3,), add_batch_rank=True)), backend=backend)


class _FirstColumn(DenseLayer):
    """A unit that drops columns but (wrongly) keeps the default output space: caught at trace time."""

    def get_preprocessed_space(self, space):
        return space

    @graph_fn
    def _graph_fn_apply(self, *inputs):
        return inputs[0][:, :1]


def test_residual_shape_change_caught_on_traced_tensors(backend):
    layer = ResidualLayer(_FirstColumn(units=1), repeats=1)
    with pytest.raises(RLGraphSpaceError, match=r"residual-layer/unit-0 changes it.*received shape \(5, 1\)"):
        ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(2,), add_batch_rank=True)), backend=backend)


def test_residual_unit_spec_with_class_and_copy():
    layer = ResidualLayer({"type": DenseLayer, "units": 2}, repeats=2, scope="res")
    clone = layer.copy(scope="res-copy")
    assert [u.global_scope for u in clone.units] == ["res-copy/unit-0", "res-copy/unit-1"]
    assert all(u is clone.sub_components[u.scope] for u in clone.units)
