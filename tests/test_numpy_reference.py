"""The numpy reference maths against hand-worked values, scipy where installed, and invariants."""
import numpy as np
import pytest

from rlgraph.utils import RLGraphError
from rlgraph.utils import numpy as rnp


def _scipy(module):
    return pytest.importorskip(f"scipy.{module}", reason="scipy is a test extra; install '.[test]'")


# --- softmax / log_softmax / one_hot -------------------------------------------------------------------------------

def test_softmax_worked_values():
    # exp([1, 2, 3]) = [2.71828, 7.38906, 20.08554], sum 30.19287.
    np.testing.assert_allclose(rnp.softmax(np.array([1.0, 2.0, 3.0])), [0.09003057, 0.24472847, 0.66524096],
                               rtol=1e-6)
    # log of the same: x - log(30.19287) = x - 3.40760596.
    np.testing.assert_allclose(rnp.log_softmax(np.array([1.0, 2.0, 3.0])), [-2.40760596, -1.40760596, -0.40760596],
                               rtol=1e-7)
    # A naive exp(1000) overflows; the max shift does not.
    np.testing.assert_allclose(rnp.softmax(np.array([[1000.0, 1000.0]])), [[0.5, 0.5]])
    np.testing.assert_allclose(rnp.log_softmax(np.array([0.0, -1000.0])), [0.0, -1000.0])


def test_softmax_invariants():
    x = np.random.RandomState(0).standard_normal((3, 4, 5)) * 5
    for axis in (0, 1, -1):
        p = rnp.softmax(x, axis=axis)
        np.testing.assert_allclose(p.sum(axis=axis), 1.0)
        assert np.all(p > 0)
        np.testing.assert_allclose(rnp.log_softmax(x, axis=axis), np.log(p), atol=1e-12)
    np.testing.assert_allclose(rnp.softmax(x + 123.0), rnp.softmax(x))


def test_softmax_and_log_softmax_against_scipy():
    special = _scipy("special")
    x = np.random.RandomState(1).standard_normal((4, 5)) * 10
    for axis in (0, -1):
        np.testing.assert_allclose(rnp.softmax(x, axis=axis), special.softmax(x, axis=axis), rtol=1e-10)
        np.testing.assert_allclose(rnp.log_softmax(x, axis=axis), special.log_softmax(x, axis=axis), rtol=1e-10)


def test_one_hot():
    out = rnp.one_hot(np.array([[0, 2], [1, 1]]), depth=3)
    assert out.shape == (2, 2, 3) and out.dtype == np.float32
    np.testing.assert_array_equal(out, [[[1, 0, 0], [0, 0, 1]], [[0, 1, 0], [0, 1, 0]]])
    np.testing.assert_array_equal(rnp.one_hot([1], depth=2, on_value=5.0, off_value=-1.0), [[-1.0, 5.0]])
    # Scalar in, [depth] out; out-of-range indices give all off_value, as tf.one_hot does.
    np.testing.assert_array_equal(rnp.one_hot(1, depth=3), [0, 1, 0])
    np.testing.assert_array_equal(rnp.one_hot(np.array([-1, 3]), depth=3), np.zeros((2, 3)))
    assert rnp.one_hot(np.array([0]), depth=2, dtype=np.int32).dtype == np.int32


# --- activations ---------------------------------------------------------------------------------------------------

def test_activation_worked_values():
    x = np.array([-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(rnp.relu(x), [0.0, 0.0, 3.0])
    np.testing.assert_allclose(rnp.relu(x, alpha=0.1), [-0.2, 0.0, 3.0])
    # exp(-2) - 1 = -0.86466472
    np.testing.assert_allclose(rnp.elu(x), [-0.8646647167633873, 0.0, 3.0])
    np.testing.assert_allclose(rnp.elu(x, alpha=2.0), [-1.7293294335267746, 0.0, 3.0])
    # selu(-1) = 1.0507 * 1.6733 * (exp(-1) - 1) = -1.11133074; selu(1) = 1.0507.
    np.testing.assert_allclose(rnp.selu(np.array([-1.0, 1.0])), [-1.1113307378125625, 1.0507009873554805])
    # softplus(0) = log 2, softplus(1) = log(1 + e) = 1.31326169; huge |x| neither overflows nor loses x.
    np.testing.assert_allclose(rnp.softplus(np.array([0.0, 1.0, 1000.0, -1000.0])),
                               [np.log(2.0), 1.3132616875182228, 1000.0, 0.0])
    np.testing.assert_allclose(rnp.sigmoid(np.array([0.0, 1.0, -1.0])), [0.5, 0.7310585786300049, 0.2689414213699951])
    np.testing.assert_allclose(rnp.tanh(x), np.tanh(x))
    np.testing.assert_array_equal(rnp.linear(x), x)


def test_sigmoid_and_softplus_are_stable_and_match_references():
    special = _scipy("special")
    x = np.linspace(-50.0, 50.0, 101)
    np.testing.assert_allclose(rnp.sigmoid(x), special.expit(x), rtol=1e-12)
    np.testing.assert_allclose(rnp.softplus(x), np.logaddexp(0.0, x), rtol=1e-12)
    with np.errstate(over="raise"):
        np.testing.assert_allclose(rnp.sigmoid(np.array([-800.0, 800.0])), [0.0, 1.0])
        np.testing.assert_allclose(rnp.elu(np.array([800.0])), [800.0])
    # sigmoid(x) + sigmoid(-x) = 1
    np.testing.assert_allclose(rnp.sigmoid(x) + rnp.sigmoid(-x), 1.0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", ["softmax", "log_softmax", "relu", "sigmoid", "tanh", "elu", "selu", "softplus",
                                  "linear", "huber_loss"])
def test_dtypes_are_kept(name, dtype):
    x = np.array([[0.5, -0.5, 2.0]], dtype=dtype)
    assert getattr(rnp, name)(x).dtype == dtype


def test_integer_inputs_compute_in_float():
    assert rnp.sigmoid(np.array([0, 1])).dtype == np.float64
    np.testing.assert_allclose(rnp.softmax(np.array([0, 0])), [0.5, 0.5])


# --- dense / LSTM --------------------------------------------------------------------------------------------------

def test_dense_layer_worked_values():
    x = np.array([[1.0, 2.0]])
    weights = np.array([[1.0, 0.0, -1.0], [0.5, 2.0, 1.0]])
    # [1*1 + 2*0.5, 1*0 + 2*2, 1*-1 + 2*1] + [0.1, 0.2, 0.3]
    np.testing.assert_allclose(rnp.dense_layer(x, weights, np.array([0.1, 0.2, 0.3])), [[2.1, 4.2, 1.3]])
    np.testing.assert_allclose(rnp.dense_layer(x, weights), [[2.0, 4.0, 1.0]])


def test_lstm_cell_candidate_block_from_weights():
    # One unit, one input, all weights zero except the candidate input j = x: i = f = o = sigmoid(0) = 0.5
    # (forget_bias 0 here). c_new = 0.5 * 2 + 0.5 * tanh(1) = 1.38079708; h_new = 0.5 * tanh(c_new).
    weights = np.zeros((2, 4))
    weights[0, 1] = 1.0
    h, c = rnp.lstm_cell(np.array([[1.0]]), np.array([[0.0]]), np.array([[2.0]]), weights, np.zeros(4),
                         forget_bias=0.0)
    np.testing.assert_allclose(c, [[1.3807970779778824]])
    np.testing.assert_allclose(h, [[0.5 * np.tanh(1.3807970779778824)]])


def test_lstm_cell_gate_order_from_biases():
    # x = h = 0, so only the biases [b_i, b_j, b_f, b_o] = [0, 1, -1, 2] act; forget_bias 1 lifts f to 0.
    # i = f = sigmoid(0) = 0.5, j = tanh(1) = 0.76159416, o = sigmoid(2) = 0.88079708.
    # c_new = 0.5 * 1 + 0.5 * 0.76159416 = 0.88079708; h_new = 0.88079708 * tanh(0.88079708) = 0.62256359.
    weights = np.random.RandomState(2).standard_normal((3, 4))
    h, c = rnp.lstm_cell(np.zeros((1, 2)), np.zeros((1, 1)), np.ones((1, 1)), weights,
                         np.array([0.0, 1.0, -1.0, 2.0]), forget_bias=1.0)
    np.testing.assert_allclose(c, [[0.8807970779778824]])
    np.testing.assert_allclose(h, [[0.6225635894330775]])


def test_lstm_layer_equals_repeated_cells_and_time_major():
    rng = np.random.RandomState(3)
    inputs = rng.standard_normal((2, 4, 3))
    weights, biases = rng.standard_normal((3 + 5, 20)) * 0.3, rng.standard_normal(20) * 0.1
    h0, c0 = rng.standard_normal((2, 5)), rng.standard_normal((2, 5))
    for initial, (h, c) in ((None, (np.zeros((2, 5)), np.zeros((2, 5)))), ((h0, c0), (h0, c0))):
        outputs, (h_last, c_last) = rnp.lstm_layer(inputs, weights, biases, initial_internal_states=initial,
                                                   forget_bias=0.5)
        assert outputs.shape == (2, 4, 5)
        for t in range(4):
            h, c = rnp.lstm_cell(inputs[:, t], h, c, weights, biases, forget_bias=0.5)
            np.testing.assert_allclose(outputs[:, t], h)
        np.testing.assert_allclose(h_last, h)
        np.testing.assert_allclose(c_last, c)
    outputs, _ = rnp.lstm_layer(inputs, weights, biases)
    outputs_tm, _ = rnp.lstm_layer(np.swapaxes(inputs, 0, 1), weights, biases, time_major=True)
    assert outputs_tm.shape == (4, 2, 5)
    np.testing.assert_allclose(np.swapaxes(outputs_tm, 0, 1), outputs)


def test_lstm_layer_sequence_length_masks():
    rng = np.random.RandomState(4)
    inputs = rng.standard_normal((3, 3, 2))
    weights, biases = rng.standard_normal((2 + 4, 16)), np.zeros(16)
    h0, c0 = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    outputs, (h_last, c_last) = rnp.lstm_layer(inputs, weights, biases, initial_internal_states=(h0, c0),
                                               sequence_length=np.array([3, 1, 0]))
    full, (h_full, c_full) = rnp.lstm_layer(inputs, weights, biases, initial_internal_states=(h0, c0))
    short, (h_short, c_short) = rnp.lstm_layer(inputs[1:2, :1], weights, biases,
                                               initial_internal_states=(h0[1:2], c0[1:2]))
    # Row 0 is fully valid; row 1 stops after one step; row 2 never starts and keeps (h0, c0).
    np.testing.assert_allclose(outputs[0], full[0])
    np.testing.assert_allclose(h_last[0], h_full[0])
    np.testing.assert_allclose(outputs[1, 0], short[0, 0])
    np.testing.assert_array_equal(outputs[1, 1:], 0.0)
    np.testing.assert_allclose(h_last[1], h_short[0])
    np.testing.assert_allclose(c_last[1], c_short[0])
    np.testing.assert_array_equal(outputs[2], 0.0)
    np.testing.assert_array_equal(h_last[2], h0[2])
    np.testing.assert_array_equal(c_last[2], c0[2])


def test_lstm_layer_keeps_float32():
    rng = np.random.RandomState(5)
    outputs, (h, c) = rnp.lstm_layer(rng.standard_normal((2, 3, 2)).astype(np.float32),
                                     rng.standard_normal((5, 12)).astype(np.float32), np.zeros(12, np.float32))
    assert outputs.dtype == h.dtype == c.dtype == np.float32


# --- conv / pool ---------------------------------------------------------------------------------------------------

X_3x3 = np.arange(1.0, 10.0).reshape(1, 3, 3, 1)  # [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
ONES_2x2 = np.ones((2, 2, 1, 1))


def test_conv2d_worked_values():
    # Each output is the sum of a 2x2 window: 1+2+4+5 = 12, 2+3+5+6 = 16, 4+5+7+8 = 24, 5+6+8+9 = 28.
    np.testing.assert_allclose(rnp.conv2d(X_3x3, ONES_2x2)[0, ..., 0], [[12, 16], [24, 28]])
    # "same", stride 1: pad_total = 1, all of it at the bottom/right (TF), so the last row/column
    # windows see one zero row/column: 3+6 = 9, 7+8 = 15, 8+9 = 17, 9.
    np.testing.assert_allclose(rnp.conv2d(X_3x3, ONES_2x2, padding="same")[0, ..., 0],
                               [[12, 16, 9], [24, 28, 15], [15, 17, 9]])
    # "same", stride 2: out 2x2 (ceil(3 / 2)), pad_total = (2-1)*2 + 2 - 3 = 1, again bottom/right.
    np.testing.assert_allclose(rnp.conv2d(X_3x3, ONES_2x2, strides=2, padding="SAME")[0, ..., 0], [[12, 9], [15, 9]])
    # Not flipped (cross-correlation): kernel [[1, 0], [0, 0]] picks the window's top-left.
    kernel = np.zeros((2, 2, 1, 1))
    kernel[0, 0] = 1.0
    np.testing.assert_allclose(rnp.conv2d(X_3x3, kernel)[0, ..., 0], [[1, 2], [4, 5]])
    # 3x3 kernel on 3x3 "same" pads one each side: centre output is the sum 45, corner 1+2+4+5.
    out = rnp.conv2d(X_3x3, np.ones((3, 3, 1, 1)), padding="same")[0, ..., 0]
    assert out[1, 1] == 45 and out[0, 0] == 12 and out[2, 2] == 28


def test_conv2d_against_scipy_correlate():
    signal = _scipy("signal")
    rng = np.random.RandomState(6)
    x, kernel = rng.standard_normal((2, 5, 6, 3)), rng.standard_normal((3, 2, 3, 4))

    def reference(x_padded, stride):
        out = np.stack([np.stack([sum(signal.correlate(x_padded[b, :, :, i], kernel[:, :, i, o], mode="valid")
                                      for i in range(3)) for o in range(4)], axis=-1) for b in range(2)])
        return out[:, ::stride[0], ::stride[1]]

    np.testing.assert_allclose(rnp.conv2d(x, kernel), reference(x, (1, 1)), atol=1e-12)
    np.testing.assert_allclose(rnp.conv2d(x, kernel, strides=(2, 3)), reference(x, (2, 3)), atol=1e-12)
    # "same", stride 1 on H=5, kh=3: pad 1 top, 1 bottom; W=6, kw=2: pad 0 left, 1 right.
    x_padded = np.pad(x, ((0, 0), (1, 1), (0, 1), (0, 0)))
    np.testing.assert_allclose(rnp.conv2d(x, kernel, padding="same"), reference(x_padded, (1, 1)), atol=1e-12)


@pytest.mark.parametrize("size, k, stride", [(5, 3, 1), (5, 3, 2), (6, 3, 2), (4, 1, 3), (7, 4, 2)])
def test_conv2d_output_sizes(size, k, stride):
    x = np.zeros((1, size, size, 2))
    kernel = np.zeros((k, k, 2, 3))
    same, valid = -(-size // stride), (size - k) // stride + 1  # ceil(size / stride); windows that fit
    assert rnp.conv2d(x, kernel, strides=stride, padding="same").shape == (1, same, same, 3)
    assert rnp.conv2d(x, kernel, strides=stride).shape == (1, valid, valid, 3)


def test_conv2d_rejects_bad_padding():
    with pytest.raises(RLGraphError, match="conv2d: unknown padding"):
        rnp.conv2d(X_3x3, ONES_2x2, padding="full")
    with pytest.raises(RLGraphError, match="must fit the input"):
        rnp.conv2d(X_3x3, np.ones((4, 4, 1, 1)))
    with pytest.raises(RLGraphError, match="max_pool2d: unknown padding"):
        rnp.max_pool2d(X_3x3, 2, padding="causal")


def test_max_pool2d_worked_values():
    x = np.arange(1.0, 17.0).reshape(1, 4, 4, 1)
    # 2x2 windows, stride 2 (the default): maxima are the bottom-right elements 6, 8, 14, 16.
    np.testing.assert_array_equal(rnp.max_pool2d(x, 2)[0, ..., 0], [[6, 8], [14, 16]])
    np.testing.assert_array_equal(rnp.max_pool2d(x, (2, 2), strides=1)[0, ..., 0],
                                  [[6, 7, 8], [10, 11, 12], [14, 15, 16]])
    # "same" on 3x3: pad bottom/right; padding never wins, even against negatives:
    # windows {-1,-2,-4,-5}, {-3,-6}, {-7,-8}, {-9}.
    np.testing.assert_array_equal(rnp.max_pool2d(-X_3x3, 2, 2, padding="same")[0, ..., 0], [[-1, -3], [-7, -9]])
    np.testing.assert_array_equal(rnp.max_pool2d(-X_3x3.astype(np.int32), 2, 2, padding="same")[0, ..., 0],
                                  [[-1, -3], [-7, -9]])


def test_max_pool2d_against_loops():
    x = np.random.RandomState(7).standard_normal((2, 5, 7, 3)).astype(np.float32)
    out = rnp.max_pool2d(x, (3, 2), strides=(2, 2))
    assert out.shape == (2, 2, 3, 3) and out.dtype == np.float32
    for i in range(2):
        for j in range(3):
            np.testing.assert_array_equal(out[:, i, j], x[:, 2 * i:2 * i + 3, 2 * j:2 * j + 2].max(axis=(1, 2)))


# --- losses --------------------------------------------------------------------------------------------------------

def test_huber_loss():
    # |0.5| <= 1: 0.5 * 0.25 = 0.125; |-2| > 1: 1 * (2 - 0.5) = 1.5; 3 - 0.5 = 2.5.
    np.testing.assert_allclose(rnp.huber_loss(np.array([0.5, -2.0, 3.0])), [0.125, 1.5, 2.5])
    # delta 2: 2 * (3 - 1) = 4.
    np.testing.assert_allclose(rnp.huber_loss(np.array([3.0]), delta=2.0), [4.0])
    # Continuous at |x| = delta, and 0.5 x^2 inside.
    np.testing.assert_allclose(rnp.huber_loss(np.array([1.0 - 1e-9, 1.0 + 1e-9])), 0.5, atol=1e-8)
    x = np.linspace(-1.0, 1.0, 9)
    np.testing.assert_allclose(rnp.huber_loss(x), 0.5 * x ** 2)


def test_mse():
    predictions, targets = np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([[1.0, 0.0], [0.0, 4.0]])
    # Squared errors [[0, 4], [9, 0]].
    np.testing.assert_allclose(rnp.mse(predictions, targets), 13.0 / 4)
    np.testing.assert_allclose(rnp.mse(predictions, targets, axis=-1), [2.0, 4.5])


# --- returns, GAE, V-trace -----------------------------------------------------------------------------------------

def test_discounted_returns_worked_values():
    # gamma 0.9, bootstrap 10: G_2 = 3 + 0.9 * 10 = 12; G_1 = 2 (terminal); G_0 = 1 + 0.9 * 2 = 2.8.
    rewards, terminals = np.array([[1.0, 2.0, 3.0]]), np.array([[False, True, False]])
    np.testing.assert_allclose(rnp.discounted_returns(rewards, terminals, 0.9, np.array([10.0])), [[2.8, 2.0, 12.0]])
    # No terminal, no bootstrap: G_0 = 1 + 0.9 * 2 + 0.81 * 3 = 5.23, G_1 = 2 + 2.7 = 4.7.
    np.testing.assert_allclose(rnp.discounted_returns(rewards, np.zeros((1, 3)), 0.9), [[5.23, 4.7, 3.0]])


def test_discounted_returns_batched_closed_form():
    rng = np.random.RandomState(8)
    rewards, bootstrap = rng.standard_normal((4, 6)), rng.standard_normal(4)
    returns = rnp.discounted_returns(rewards, np.zeros((4, 6), dtype=bool), 0.95, bootstrap)
    for t in range(6):
        expected = (rewards[:, t:] * 0.95 ** np.arange(6 - t)).sum(axis=1) + 0.95 ** (6 - t) * bootstrap
        np.testing.assert_allclose(returns[:, t], expected)


def test_gae_worked_values():
    # gamma 0.9, lambda 0.5, values [0.5, 1], bootstrap 2:
    # delta_1 = 1 + 0.9 * 2 - 1 = 1.8, delta_0 = 1 + 0.9 * 1 - 0.5 = 1.4;
    # A_1 = 1.8, A_0 = 1.4 + 0.9 * 0.5 * 1.8 = 2.21.
    rewards, values = np.array([[1.0, 1.0]]), np.array([[0.5, 1.0]])
    np.testing.assert_allclose(rnp.gae(rewards, values, np.array([2.0]), np.array([[0, 0]]), 0.9, 0.5),
                               [[2.21, 1.8]])
    # A terminal at t = 0 cuts both the bootstrap and the trace: A_0 = 1 - 0.5 = 0.5.
    np.testing.assert_allclose(rnp.gae(rewards, values, np.array([2.0]), np.array([[1, 0]]), 0.9, 0.5),
                               [[0.5, 1.8]])


def test_gae_lambda_limits():
    rng = np.random.RandomState(9)
    rewards, values, bootstrap = rng.standard_normal((3, 7)), rng.standard_normal((3, 7)), rng.standard_normal(3)
    terminals = rng.uniform(size=(3, 7)) < 0.3
    returns = rnp.discounted_returns(rewards, terminals, 0.97, bootstrap)
    np.testing.assert_allclose(rnp.gae(rewards, values, bootstrap, terminals, 0.97, 1.0), returns - values,
                               atol=1e-12)
    next_values = np.concatenate([values[:, 1:], bootstrap[:, None]], axis=1)
    td_errors = rewards + 0.97 * (1 - terminals) * next_values - values
    np.testing.assert_allclose(rnp.gae(rewards, values, bootstrap, terminals, 0.97, 0.0), td_errors, atol=1e-12)
    assert rnp.gae(rewards.astype(np.float32), values.astype(np.float32), bootstrap, terminals, 0.97, 0.9).dtype \
        == np.float32


def test_vtrace_worked_values():
    # T = 2, B = 1; pi/mu = [2, 0.5], gamma 0.9, rewards [1, 2], values [0.5, 1], bootstrap 3.
    # Clipped at 1: rho = c = [1, 0.5].
    # delta_1 = 0.5 * (2 + 0.9 * 3 - 1) = 1.85 -> v_1 = 1 + 1.85 = 2.85
    # delta_0 = 1 * (1 + 0.9 * 1 - 0.5) = 1.4 -> v_0 = 0.5 + 1.4 + 0.9 * 1 * 1.85 = 3.565
    # pg_0 = 1 * (1 + 0.9 * 2.85 - 0.5) = 3.065; pg_1 = 0.5 * (2 + 0.9 * 3 - 1) = 1.85.
    log_rhos = np.log([[2.0], [0.5]])
    args = (np.full((2, 1), 0.9), np.array([[1.0], [2.0]]), np.array([[0.5], [1.0]]), np.array([3.0]))
    vs, pg = rnp.vtrace(log_rhos, *args)
    np.testing.assert_allclose(vs, [[3.565], [2.85]])
    np.testing.assert_allclose(pg, [[3.065], [1.85]])
    # Without the rho clips rho_0 = 2, but c_0 stays min(1, 2) = 1:
    # v_0 = 0.5 + 2 * 1.4 + 0.9 * 1.85 = 4.965; pg_0 = 2 * 3.065 = 6.13.
    vs, pg = rnp.vtrace(log_rhos, *args, clip_rho_threshold=None, clip_pg_rho_threshold=None)
    np.testing.assert_allclose(vs, [[4.965], [2.85]])
    np.testing.assert_allclose(pg, [[6.13], [1.85]])


def test_vtrace_on_policy_is_n_step_returns():
    rng = np.random.RandomState(10)
    rewards, values, bootstrap = rng.standard_normal((5, 3)), rng.standard_normal((5, 3)), rng.standard_normal(3)
    terminals = rng.uniform(size=(5, 3)) < 0.3
    discounts = 0.9 * (1.0 - terminals)
    vs, pg = rnp.vtrace(np.zeros((5, 3)), discounts, rewards, values, bootstrap, clip_rho_threshold=None,
                        clip_pg_rho_threshold=None)
    n_step = rnp.discounted_returns(rewards.T, terminals.T, 0.9, bootstrap).T
    np.testing.assert_allclose(vs, n_step, atol=1e-12)
    vs_tp1 = np.concatenate([vs[1:], bootstrap[None]])
    np.testing.assert_allclose(pg, rewards + discounts * vs_tp1 - values, atol=1e-12)


def test_vtrace_matches_direct_sum():
    # Eq. (1) of Espeholt et al. 2018 summed directly:
    # v_s = V_s + sum_{t >= s} (prod_{i=s}^{t-1} gamma_i c_i) * rho_t * (r_t + gamma_t V_{t+1} - V_t).
    rng = np.random.RandomState(11)
    T, B = 6, 2
    log_rhos = rng.standard_normal((T, B))
    discounts = rng.uniform(0.8, 1.0, size=(T, B))
    rewards, values, bootstrap = rng.standard_normal((T, B)), rng.standard_normal((T, B)), rng.standard_normal(B)
    vs, pg = rnp.vtrace(log_rhos, discounts, rewards, values, bootstrap, clip_rho_threshold=1.2,
                        clip_pg_rho_threshold=0.8)
    rhos = np.exp(log_rhos)
    rho_t, c_t = np.minimum(1.2, rhos), np.minimum(1.0, rhos)
    v_ext = np.concatenate([values, bootstrap[None]])
    expected = values.copy()
    for s in range(T):
        trace = np.ones(B)
        for t in range(s, T):
            expected[s] += trace * rho_t[t] * (rewards[t] + discounts[t] * v_ext[t + 1] - values[t])
            trace = trace * discounts[t] * c_t[t]
    np.testing.assert_allclose(vs, expected, atol=1e-12)
    vs_ext = np.concatenate([vs, bootstrap[None]])
    np.testing.assert_allclose(pg, np.minimum(0.8, rhos) * (rewards + discounts * vs_ext[1:] - values), atol=1e-12)
    vs32, pg32 = rnp.vtrace(*(a.astype(np.float32) for a in (log_rhos, discounts, rewards, values, bootstrap)))
    assert vs32.dtype == pg32.dtype == np.float32
