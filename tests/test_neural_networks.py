"""Stack, NeuralNetwork (spec list and keras style) and MultiInputStreamNeuralNetwork, on both backends."""
import json
import pickle

import numpy as np
import pytest
from backend_marks import needs_both_backends

from rlgraph.components import Component
from rlgraph.components.layers import DenseLayer
from rlgraph.components.neural_networks import MultiInputStreamNeuralNetwork, NeuralNetwork, Stack
from rlgraph.spaces import Dict, FloatBox, IntBox, Tuple
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError

THREE_LAYERS = """[
    {"type": "dense", "units": 8, "activation": "relu", "scope": "hidden"},
    {"type": "dense", "units": 8, "activation": "tanh", "scope": "hidden"},
    {"type": "dense", "units": 3, "scope": "out"}
]"""


def test_three_layer_network_from_json_list(backend):
    net = NeuralNetwork.from_spec(json.loads(THREE_LAYERS), scope="policy")
    assert [c.scope for c in net.layers] == ["hidden", "hidden-1", "out"]
    space = FloatBox(shape=(5,), add_batch_rank=True)
    test = ComponentTest(net, input_spaces=dict(inputs=space), backend=backend)
    w = test.read_variable_values(net.variable_registry)
    assert sorted(w) == ["policy/hidden-1/bias", "policy/hidden-1/kernel", "policy/hidden/bias",
                         "policy/hidden/kernel", "policy/out/bias", "policy/out/kernel"]
    x = np.random.RandomState(4).normal(size=(7, 5)).astype(np.float32)
    h1 = rnp.relu(rnp.dense_layer(x, w["policy/hidden/kernel"], w["policy/hidden/bias"]))
    h2 = np.tanh(rnp.dense_layer(h1, w["policy/hidden-1/kernel"], w["policy/hidden-1/bias"]))
    expected = rnp.dense_layer(h2, w["policy/out/kernel"], w["policy/out/bias"])
    out = test.test(("apply", x))
    assert set(out) == {"output"}
    recursive_assert_almost_equal(out["output"], expected, decimals=5)


@needs_both_backends
def test_network_parity_with_the_same_weights():
    x = np.random.RandomState(5).normal(size=(4, 5)).astype(np.float32)
    weights = None
    outputs = {}
    for backend in ("pytorch", "tf"):
        net = NeuralNetwork.from_spec(json.loads(THREE_LAYERS))
        test = ComponentTest(net, input_spaces=dict(inputs=FloatBox(shape=(5,), add_batch_rank=True)),
                             backend=backend, seed=None)
        if weights is None:
            rng = np.random.RandomState(6)
            weights = {k: rng.normal(size=v.shape).astype(np.float32) for k, v in test.graph_executor.get_weights().items()}
        test.graph_executor.set_weights(weights)
        outputs[backend] = test.test(("apply", x))["output"]
    recursive_assert_almost_equal(outputs["tf"], outputs["pytorch"], decimals=5)


def test_stack_chains_named_api_methods(backend):
    class AddOne(Component):
        from rlgraph.utils.decorators import rlgraph_api as _api

        @_api
        def _graph_fn_run(self, x):
            return x + 1.0

    stack = Stack(AddOne(scope="a"), AddOne(scope="a"), AddOne(scope="a"), api_methods={"go": "run"})
    assert [c.scope for c in stack.layers] == ["a", "a-1", "a-2"]
    test = ComponentTest(stack, input_spaces=dict(inputs=FloatBox(add_batch_rank=True)), backend=backend)
    test.test(("go", np.array([0.5, 1.0])), expected_outputs=np.array([3.5, 4.0]))


def test_stack_errors(backend):
    with pytest.raises(RLGraphSpecError, match="unknown type in spec.*did you mean 'dense'"):
        Stack.from_spec([{"type": "dence", "units": 2}])
    with pytest.raises(RLGraphSpecError, match="Stack item 0"):
        Stack(42)
    stack = Stack(DenseLayer(units=2), api_methods={"run"})
    with pytest.raises(RLGraphError, match="no sub-component has an API method .run."):
        ComponentTest(stack, input_spaces=dict(inputs=FloatBox(shape=(2,), add_batch_rank=True)), backend=backend)


def test_network_spec_as_dict_with_layers_and_copy_pickle(backend):
    net = NeuralNetwork.from_spec({"layers": [{"type": "dense", "units": 2, "weights_spec": 0.5}], "scope": "q"})
    clone = pickle.loads(pickle.dumps(net.copy(scope="target")))
    for component, scope in ((net, "q"), (clone, "target")):
        test = ComponentTest(component, input_spaces=dict(inputs=FloatBox(shape=(2,), add_batch_rank=True)),
                             backend=backend)
        assert sorted(component.variable_registry) == [f"{scope}/dense/bias", f"{scope}/dense/kernel"]
        test.test(("apply", np.array([[1.0, 3.0]], dtype=np.float32)), expected_outputs={"output": [[2.0, 2.0]]})


def test_keras_style_network_with_two_inputs_and_shared_layer(backend):
    a = FloatBox(shape=(3,), add_batch_rank=True)
    b = FloatBox(shape=(2,), add_batch_rank=True)
    shared = DenseLayer(units=4, activation="relu", scope="shared")
    ha = shared(a)
    hb = DenseLayer(units=3, scope="proj")(b)
    out_a = DenseLayer(units=1, scope="head")(ha)
    net = NeuralNetwork(outputs=[out_a, hb], inputs=[a, b], scope="keras")
    test = ComponentTest(net, input_spaces={"inputs": [a, b]}, backend=backend)
    w = test.read_variable_values(net.variable_registry)
    xa = np.random.RandomState(7).normal(size=(4, 3)).astype(np.float32)
    xb = np.random.RandomState(8).normal(size=(4, 2)).astype(np.float32)
    expected_a = rnp.dense_layer(rnp.relu(rnp.dense_layer(xa, w["keras/shared/kernel"], w["keras/shared/bias"])),
                                 w["keras/head/kernel"], w["keras/head/bias"])
    expected_b = rnp.dense_layer(xb, w["keras/proj/kernel"], w["keras/proj/bias"])
    out = test.test(("apply", [xa, xb]))
    recursive_assert_almost_equal(out["output"], (expected_a, expected_b), decimals=5)


def test_keras_style_errors():
    a = FloatBox(shape=(3,), add_batch_rank=True)
    with pytest.raises(RLGraphSpecError, match="spaces .network inputs. or on other layers' outputs"):
        DenseLayer(units=2)(np.zeros(3))
    node = DenseLayer(units=2)(a)
    with pytest.raises(RLGraphSpecError, match="not in `inputs`"):
        NeuralNetwork(outputs=node, inputs=[FloatBox(shape=(3,), add_batch_rank=True)])
    with pytest.raises(RLGraphSpecError, match="either layers or keras-style outputs"):
        NeuralNetwork(DenseLayer(units=1), outputs=node)


def test_multi_input_stream_network_dict_and_tuple(backend):
    for container in ("dict", "tuple"):
        streams = [[{"type": "dense", "units": 3, "activation": "relu"}], []]
        if container == "dict":
            specs = {"img": streams[0], "vec": streams[1]}
            space = Dict(img=FloatBox(shape=(4,)), vec=IntBox(3, shape=(2,)), add_batch_rank=True)
        else:
            specs = streams
            space = Tuple(FloatBox(shape=(4,)), IntBox(3, shape=(2,)), add_batch_rank=True)
        net = MultiInputStreamNeuralNetwork(input_network_specs=specs,
                                            post_network_spec=[{"type": "dense", "units": 2}], scope="multi")
        test = ComponentTest(net, input_spaces=dict(inputs=space), backend=backend)
        w = test.read_variable_values(net.variable_registry)
        first = "img" if container == "dict" else 0
        sample = space.sample(6)
        x0, x1 = (sample["img"], sample["vec"]) if container == "dict" else sample
        h = rnp.relu(rnp.dense_layer(x0, w[f"multi/input-stream-{first}/dense/kernel"],
                                     w[f"multi/input-stream-{first}/dense/bias"]))
        concat = np.concatenate([h, x1.astype(np.float32)], axis=-1)
        expected = rnp.dense_layer(concat, w["multi/post-network/dense/kernel"], w["multi/post-network/dense/bias"])
        recursive_assert_almost_equal(test.test(("apply", sample))["output"], expected, decimals=5)


def test_multi_input_stream_network_rejects_wrong_container(backend):
    net = MultiInputStreamNeuralNetwork(input_network_specs={"a": [], "b": []}, post_network_spec=[])
    with pytest.raises(RLGraphError, match=r"input has no item\(s\) \['b'\]"):
        ComponentTest(net, input_spaces=dict(inputs=Dict(a=FloatBox(), c=FloatBox(), add_batch_rank=True)),
                      backend=backend)
    with pytest.raises(RLGraphSpecError, match="must be a dict .Dict states. or a list"):
        MultiInputStreamNeuralNetwork(input_network_specs="a")


def test_network_with_lstm_returns_last_internal_states(backend):
    from rlgraph.components.layers.nn.lstm_layer import LSTMLayer
    net = NeuralNetwork(DenseLayer(units=3, activation="tanh"), LSTMLayer(units=2), DenseLayer(units=1), scope="rnn")
    assert net.has_rnn()
    space = FloatBox(shape=(4,), add_batch_rank=True, add_time_rank=True)
    states = Tuple(FloatBox(shape=(2,), add_batch_rank=True), FloatBox(shape=(2,), add_batch_rank=True))
    test = ComponentTest(net, input_spaces=dict(inputs=space, internal_states=states), backend=backend)
    w = test.read_variable_values(net.variable_registry)
    rng = np.random.RandomState(9)
    x = rng.normal(size=(2, 5, 4)).astype(np.float32)
    c0, h0 = rng.normal(size=(2, 2)).astype(np.float32), rng.normal(size=(2, 2)).astype(np.float32)
    hidden = np.tanh(rnp.dense_layer(x, w["rnn/dense/kernel"], w["rnn/dense/bias"]))
    seq, (h_last, c_last) = rnp.lstm_layer(hidden, w["rnn/lstm/kernel"], w["rnn/lstm/bias"],
                                           initial_internal_states=(h0, c0))
    expected = rnp.dense_layer(seq, w["rnn/dense-1/kernel"], w["rnn/dense-1/bias"])
    out = test.test(("apply", [x, (c0, h0)]))
    recursive_assert_almost_equal(out["output"], expected, decimals=5)
    recursive_assert_almost_equal(out["last_internal_states"], (c_last, h_last), decimals=5)
