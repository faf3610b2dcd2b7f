"""The numpy reference maths against hand-worked values and scipy."""
import numpy as np
import pytest
from scipy import special

from rlgraph.utils import numpy as rnp


def test_softmax_worked_values():
    # exp([1, 2, 3]) / sum = [2.71828, 7.38906, 20.08554] / 30.19287
    np.testing.assert_allclose(rnp.softmax(np.array([1.0, 2.0, 3.0])), [0.09003057, 0.24472847, 0.66524096],
                               rtol=1e-6)
    np.testing.assert_allclose(rnp.softmax(np.array([[1000.0, 1000.0]])), [[0.5, 0.5]])


def test_softmax_and_log_softmax_against_scipy():
    x = np.random.RandomState(0).standard_normal((4, 5)) * 10
    np.testing.assert_allclose(rnp.softmax(x), special.softmax(x, axis=-1), rtol=1e-10)
    np.testing.assert_allclose(rnp.log_softmax(x), special.log_softmax(x, axis=-1), rtol=1e-10)
    np.testing.assert_allclose(rnp.softmax(x, axis=0).sum(axis=0), np.ones(5))


def test_one_hot():
    out = rnp.one_hot(np.array([[0, 2], [1, 1]]), depth=3)
    assert out.shape == (2, 2, 3) and out.dtype == np.float32
    np.testing.assert_array_equal(out[0], [[1, 0, 0], [0, 0, 1]])
    np.testing.assert_array_equal(rnp.one_hot([1], depth=2, on_value=5.0, off_value=-1.0), [[-1.0, 5.0]])


def test_activations():
    x = np.array([-2.0, 0.0, 3.0])
    np.testing.assert_array_equal(rnp.relu(x), [0.0, 0.0, 3.0])
    np.testing.assert_allclose(rnp.relu(x, alpha=0.1), [-0.2, 0.0, 3.0])
    np.testing.assert_allclose(rnp.sigmoid(x), special.expit(x))
    np.testing.assert_allclose(rnp.sigmoid(np.array([-800.0, 800.0])), [0.0, 1.0])
    np.testing.assert_allclose(rnp.elu(x), [np.exp(-2.0) - 1.0, 0.0, 3.0])
    np.testing.assert_allclose(rnp.selu(np.array([1.0])), [1.0507009873554805])
    np.testing.assert_allclose(rnp.softplus(np.array([0.0, 1000.0, -1000.0])), [np.log(2.0), 1000.0, 0.0])
    np.testing.assert_array_equal(rnp.linear(x), x)


def test_dense_layer_worked_values():
    x = np.array([[1.0, 2.0]])
    weights = np.array([[1.0, 0.0, -1.0], [0.5, 2.0, 1.0]])
    # [1*1 + 2*0.5, 1*0 + 2*2, 1*-1 + 2*1] + [0.1, 0.2, 0.3]
    np.testing.assert_allclose(rnp.dense_layer(x, weights, np.array([0.1, 0.2, 0.3])), [[2.1, 4.2, 1.3]])
    np.testing.assert_allclose(rnp.dense_layer(x, weights), [[2.0, 4.0, 1.0]])


def test_huber_loss():
    np.testing.assert_allclose(rnp.huber_loss(np.array([0.5, -2.0, 3.0])), [0.125, 1.5, 2.5])
    np.testing.assert_allclose(rnp.huber_loss(np.array([3.0]), delta=2.0), [4.0])


def test_lstm_cell_worked_values():
    # One unit, one input, all weights zero except the candidate input j = x: i = f = o = sigmoid(0) = 0.5
    # (f gets forget_bias 0 here). c_new = 0.5 * c + 0.5 * tanh(x); h_new = 0.5 * tanh(c_new).
    weights = np.zeros((2, 4))
    weights[0, 1] = 1.0
    h, c = rnp.lstm_cell(np.array([[1.0]]), np.array([[0.0]]), np.array([[2.0]]), weights, np.zeros(4),
                         forget_bias=0.0)
    c_expected = 0.5 * 2.0 + 0.5 * np.tanh(1.0)
    np.testing.assert_allclose(c, [[c_expected]])
    np.testing.assert_allclose(h, [[0.5 * np.tanh(c_expected)]])


def test_lstm_layer_equals_repeated_cells_and_time_major():
    rng = np.random.RandomState(3)
    inputs = rng.standard_normal((2, 4, 3))
    weights, biases = rng.standard_normal((3 + 5, 20)) * 0.3, rng.standard_normal(20) * 0.1
    outputs, (h_last, c_last) = rnp.lstm_layer(inputs, weights, biases)
    h, c = np.zeros((2, 5)), np.zeros((2, 5))
    for t in range(4):
        h, c = rnp.lstm_cell(inputs[:, t], h, c, weights, biases)
        np.testing.assert_allclose(outputs[:, t], h)
    np.testing.assert_allclose(h_last, h)
    np.testing.assert_allclose(c_last, c)
    outputs_tm, _ = rnp.lstm_layer(np.swapaxes(inputs, 0, 1), weights, biases, time_major=True)
    np.testing.assert_allclose(np.swapaxes(outputs_tm, 0, 1), outputs)


def test_lstm_layer_sequence_length_masks():
    rng = np.random.RandomState(4)
    inputs = rng.standard_normal((2, 3, 2))
    weights, biases = rng.standard_normal((2 + 4, 16)), np.zeros(16)
    outputs, (h_last, c_last) = rnp.lstm_layer(inputs, weights, biases, sequence_length=np.array([3, 1]))
    short_outputs, (h_short, c_short) = rnp.lstm_layer(inputs[1:, :1], weights, biases)
    np.testing.assert_allclose(outputs[1, 0], short_outputs[0, 0])
    np.testing.assert_array_equal(outputs[1, 1:], 0.0)
    np.testing.assert_allclose(h_last[1], h_short[0])
    np.testing.assert_allclose(c_last[1], c_short[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dtypes_are_kept(dtype):
    x = np.array([[0.5, -0.5]], dtype=dtype)
    assert rnp.softmax(x).dtype == dtype and rnp.relu(x).dtype == dtype and rnp.sigmoid(x).dtype == dtype
