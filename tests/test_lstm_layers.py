"""LSTMLayer and MultiLSTMLayer against the numpy references (`lstm_layer`, `peephole_lstm_layer`).

The layers take and return internal states as (c, h); the numpy references as (h, c).
"""
import numpy as np
import pytest

from rlgraph.components.layers.nn.lstm_layer import LSTMLayer
from rlgraph.components.layers.nn.multi_lstm_layer import MultiLSTMLayer
from rlgraph.spaces import FloatBox, IntBox, Tuple
from rlgraph.tests import ComponentTest
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

B, T, IN, UNITS = 2, 5, 3, 4


def seq_space(time_major=False, size=IN):
    return FloatBox(shape=(size,), add_batch_rank=True, add_time_rank=True, time_major=time_major)


def state_space(units=UNITS):
    return Tuple(FloatBox(shape=(units,), add_batch_rank=True), FloatBox(shape=(units,), add_batch_rank=True))


def random_inputs(seed=0, time_major=False):
    rng = np.random.RandomState(seed)
    x = rng.randn(B, T, IN).astype(np.float32)
    c0, h0 = rng.randn(B, UNITS).astype(np.float32), rng.randn(B, UNITS).astype(np.float32)
    return (x.swapaxes(0, 1).copy() if time_major else x), c0, h0


def assert_matches(out, ref_output, ref_h, ref_c, decimal=5):
    np.testing.assert_almost_equal(out["output"], ref_output, decimal=decimal)
    c, h = out["last_internal_states"]
    np.testing.assert_almost_equal(c, ref_c, decimal=decimal)
    np.testing.assert_almost_equal(h, ref_h, decimal=decimal)


def test_lstm_without_initial_states(backend):
    layer = LSTMLayer(units=UNITS)
    test = ComponentTest(layer, input_spaces=dict(inputs=seq_space()), backend=backend)
    x, _, _ = random_inputs()
    w = test.read_variable_values(layer.variable_registry)
    assert w["lstm/kernel"].shape == (IN + UNITS, 4 * UNITS) and w["lstm/bias"].shape == (4 * UNITS,)
    np.testing.assert_array_equal(w["lstm/bias"], 0.0)
    out = test.test(("apply", x))
    ref, (h, c) = rnp.lstm_layer(x, w["lstm/kernel"], w["lstm/bias"])
    assert out["output"].shape == (B, T, UNITS)
    assert_matches(out, ref, h, c)


@pytest.mark.parametrize("time_major", [False, True])
def test_lstm_with_initial_states_and_sequence_length(backend, time_major):
    layer = LSTMLayer(units=UNITS, time_major=time_major, biases_spec=0.1)
    test = ComponentTest(layer, input_spaces=dict(inputs=seq_space(time_major), initial_c_and_h_states=state_space(),
                                                  sequence_length=IntBox(add_batch_rank=True)), backend=backend)
    x, c0, h0 = random_inputs(1, time_major)
    lengths = np.array([2, 5], dtype=np.int32)
    w = test.read_variable_values(layer.variable_registry)
    out = test.test(("apply", [x, (c0, h0), lengths]))
    ref, (h, c) = rnp.lstm_layer(x, w["lstm/kernel"], w["lstm/bias"], initial_internal_states=(h0, c0),
                                 time_major=time_major, sequence_length=lengths)
    assert_matches(out, ref, h, c)
    # Row 0 outputs zeros after its 2 valid steps.
    row0 = out["output"][2:, 0] if time_major else out["output"][0, 2:]
    np.testing.assert_array_equal(row0, 0.0)


def test_lstm_zero_length_keeps_initial_state(backend):
    layer = LSTMLayer(units=UNITS)
    test = ComponentTest(layer, input_spaces=dict(inputs=seq_space(), initial_c_and_h_states=state_space(),
                                                  sequence_length=IntBox(add_batch_rank=True)), backend=backend)
    x, c0, h0 = random_inputs(2)
    out = test.test(("apply", [x, (c0, h0), np.array([0, 3], dtype=np.int32)]))
    c, h = out["last_internal_states"]
    np.testing.assert_almost_equal(c[0], c0[0], decimal=6)
    np.testing.assert_almost_equal(h[0], h0[0], decimal=6)
    np.testing.assert_array_equal(out["output"][0], 0.0)


def test_lstm_forget_bias_cell_clip_and_peepholes(backend):
    layer = LSTMLayer(units=UNITS, forget_bias=0.3, cell_clip=0.2, use_peepholes=True)
    test = ComponentTest(layer, input_spaces=dict(inputs=seq_space(), initial_c_and_h_states=state_space()),
                         backend=backend)
    peepholes = {"lstm/w_i_diag": np.full(UNITS, 0.3, np.float32), "lstm/w_f_diag": np.full(UNITS, -0.2, np.float32),
                 "lstm/w_o_diag": np.full(UNITS, 0.5, np.float32)}
    test.graph_executor.set_weights(peepholes)
    x, c0, h0 = random_inputs(3)
    x = 3.0 * x  # Large inputs, so that the clip is active.
    w = test.read_variable_values(layer.variable_registry)
    out = test.test(("apply", [x, (c0, h0)]))
    ref, (h, c) = rnp.peephole_lstm_layer(x, w["lstm/kernel"], w["lstm/bias"],
                                          peepholes=tuple(peepholes[k] for k in sorted(peepholes, key=_gate_order)),
                                          cell_clip=0.2, initial_internal_states=(h0, c0), forget_bias=0.3)
    assert_matches(out, ref, h, c)
    assert np.abs(out["last_internal_states"][0]).max() <= 0.2 + 1e-6
    # Without peepholes or clipping the reference is `lstm_layer`, which cell_clip changes.
    plain, _ = rnp.lstm_layer(x, w["lstm/kernel"], w["lstm/bias"], initial_internal_states=(h0, c0), forget_bias=0.3)
    assert np.abs(plain - out["output"]).max() > 1e-3


def _gate_order(name):
    return ["lstm/w_i_diag", "lstm/w_f_diag", "lstm/w_o_diag"].index(name)


def test_lstm_static_loop_matches_dynamic(backend):
    x, c0, h0 = random_inputs(4)
    outs = []
    for static_loop in (False, T):
        layer = LSTMLayer(units=UNITS, static_loop=static_loop)
        test = ComponentTest(layer, input_spaces=dict(inputs=seq_space()), backend=backend, seed=5)
        outs.append(test.test(("apply", x)))
    np.testing.assert_almost_equal(outs[0]["output"], outs[1]["output"], decimal=6)


def test_multi_lstm_matches_chained_numpy_layers(backend):
    stack = MultiLSTMLayer(num_lstms=2, units=[UNITS, 3], skip_connections=[[], [True]])
    spaces = dict(inputs=seq_space(), initial_c_and_h_states=Tuple(state_space(), state_space(3)),
                  sequence_length=IntBox(add_batch_rank=True))
    test = ComponentTest(stack, input_spaces=spaces, backend=backend)
    assert list(stack.sub_components) == ["lstm-0", "lstm-1"]
    rng = np.random.RandomState(6)
    x, c0, h0 = random_inputs(6)
    c1, h1 = rng.randn(B, 3).astype(np.float32), rng.randn(B, 3).astype(np.float32)
    lengths = np.array([5, 3], dtype=np.int32)
    w = test.read_variable_values(stack.variable_registry)
    assert w["multi-lstm/lstm-1/kernel"].shape == (UNITS + IN + 3, 12)  # Skip connection: [out_0, x] + h.
    out = test.test(("apply", [x, ((c0, h0), (c1, h1)), lengths]))
    out0, (h0_ref, c0_ref) = rnp.lstm_layer(x, w["multi-lstm/lstm-0/kernel"], w["multi-lstm/lstm-0/bias"],
                                            initial_internal_states=(h0, c0), sequence_length=lengths)
    out1, (h1_ref, c1_ref) = rnp.lstm_layer(np.concatenate([out0, x], axis=-1), w["multi-lstm/lstm-1/kernel"],
                                            w["multi-lstm/lstm-1/bias"], initial_internal_states=(h1, c1),
                                            sequence_length=lengths)
    np.testing.assert_almost_equal(out["output"], out1, decimal=5)
    (c0_out, h0_out), (c1_out, h1_out) = out["last_internal_states"]
    for got, want in ((c0_out, c0_ref), (h0_out, h0_ref), (c1_out, c1_ref), (h1_out, h1_ref)):
        np.testing.assert_almost_equal(got, want, decimal=5)


def test_multi_lstm_without_initial_states(backend):
    stack = MultiLSTMLayer(num_lstms=3, units=2)
    test = ComponentTest(stack, input_spaces=dict(inputs=seq_space()), backend=backend)
    x, _, _ = random_inputs(7)
    w = test.read_variable_values(stack.variable_registry)
    out = test.test(("apply", x))
    ref = x
    for i in range(3):
        ref, (h, c) = rnp.lstm_layer(ref, w[f"multi-lstm/lstm-{i}/kernel"], w[f"multi-lstm/lstm-{i}/bias"])
        np.testing.assert_almost_equal(out["last_internal_states"][i][0], c, decimal=5)
    np.testing.assert_almost_equal(out["output"], ref, decimal=5)


def test_lstm_tf_pytorch_parity():
    pytest.importorskip("tensorflow")
    pytest.importorskip("torch")
    x, c0, h0 = random_inputs(8)
    lengths = np.array([4, 1], dtype=np.int32)
    results, weights = [], None
    for backend in ("tf", "pytorch"):
        layer = LSTMLayer(units=UNITS, cell_clip=1.0)
        test = ComponentTest(layer, input_spaces=dict(inputs=seq_space(), initial_c_and_h_states=state_space(),
                                                      sequence_length=IntBox(add_batch_rank=True)), backend=backend)
        if weights is None:
            weights = test.read_variable_values(layer.variable_registry)
        else:
            test.graph_executor.set_weights(weights)
        results.append(test.test(("apply", [x, (c0, h0), lengths])))
    np.testing.assert_allclose(results[0]["output"], results[1]["output"], atol=1e-5)
    for a, b in zip(results[0]["last_internal_states"], results[1]["last_internal_states"]):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_lstm_rejects_space_without_time_rank(backend):
    with pytest.raises(RLGraphSpaceError, match="time rank"):
        ComponentTest(LSTMLayer(units=2), input_spaces=dict(inputs=FloatBox(shape=(3,), add_batch_rank=True)),
                      backend=backend)


def test_lstm_rejects_bad_states_and_time_major_mismatch(backend):
    with pytest.raises(RLGraphSpaceError, match="initial states"):
        ComponentTest(LSTMLayer(units=2), input_spaces=dict(inputs=seq_space(), initial_c_and_h_states=state_space(3)),
                      backend=backend)
    with pytest.raises(RLGraphSpaceError, match="time_major"):
        ComponentTest(LSTMLayer(units=2), input_spaces=dict(inputs=seq_space(time_major=True)), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="fixed time size"):
        ComponentTest(LSTMLayer(units=2, static_loop=True), input_spaces=dict(inputs=seq_space()), backend=backend)


def test_constructor_errors():
    with pytest.raises(RLGraphSpecError, match="units"):
        LSTMLayer(units=0)
    with pytest.raises(RLGraphSpecError, match="cell_clip"):
        LSTMLayer(units=2, cell_clip=-1.0)
    with pytest.raises(RLGraphSpecError, match="activation"):
        LSTMLayer(units=2, activation="relu")
    with pytest.raises(RLGraphSpecError, match="units"):
        MultiLSTMLayer(num_lstms=2, units=[2, 3, 4])
    with pytest.raises(RLGraphSpecError, match="computed after"):
        MultiLSTMLayer(num_lstms=2, units=2, skip_connections=[[False, True], []])


def test_get_preprocessed_space():
    space = LSTMLayer(units=6).get_preprocessed_space(seq_space())
    assert isinstance(space, FloatBox) and space.shape == (6,) and space.has_batch_rank and space.has_time_rank
    space = MultiLSTMLayer(num_lstms=2, units=[4, 5], time_major=True).get_preprocessed_space(seq_space(True))
    assert space.shape == (5,) and space.time_major and space.has_time_rank


def test_state_spaces_have_no_time_rank_even_when_units_equal_the_trace_time_size(backend):
    """The build's trace uses 7 time steps; 7 units must not make the [B, 7] states look like sequences."""
    from rlgraph.components import Component
    from rlgraph.utils.decorators import rlgraph_api

    class Sink(Component):
        @rlgraph_api
        def _graph_fn_first(self, states):
            return states[0]

    class Wrapper(Component):
        def __init__(self):
            super().__init__(scope="wrapper")
            self.lstm, self.sink = LSTMLayer(units=7), Sink(scope="sink")
            self.add_components(self.lstm, self.sink)

        @rlgraph_api
        def run(self, inputs):
            return self.sink.first(self.lstm.apply(inputs)["last_internal_states"])

    wrapper = Wrapper()
    space = FloatBox(shape=(3,), add_batch_rank=True, add_time_rank=True)
    test = ComponentTest(wrapper, input_spaces=dict(inputs=space), backend=backend)
    state_space = wrapper.sink.api_method_inputs["states"]
    assert state_space[0] == FloatBox(shape=(7,), add_batch_rank=True)
    assert test.test(("run", np.zeros((2, 4, 3), dtype=np.float32))).shape == (2, 7)
