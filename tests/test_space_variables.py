"""`Space.get_variable` on both backends: shapes, dtypes, initial values, containers, input feeds."""
import numpy as np
import pytest

import rlgraph
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox, TextBox, Tuple
from rlgraph.utils import RLGraphSpaceError, RLGraphSpecError


def _value(variable):
    return variable.numpy() if hasattr(variable, "numpy") and not hasattr(variable, "detach") \
        else variable.detach().numpy()


def _shape(variable):
    return tuple(variable.shape)


def test_box_variable_shape_dtype_and_zeros(backend):
    variable = FloatBox(shape=(2, 3)).get_variable("v", backend=backend)
    assert _shape(variable) == (2, 3)
    np.testing.assert_array_equal(_value(variable), np.zeros((2, 3), dtype=np.float32))
    assert _value(variable).dtype == np.float32


@pytest.mark.parametrize("initializer, expected", [
    (1.5, np.full((2,), 1.5, np.float32)),
    ([1.0, -2.0], np.array([1.0, -2.0], np.float32)),
    (lambda shape, dtype: np.arange(np.prod(shape), dtype=dtype).reshape(shape), np.array([0.0, 1.0], np.float32)),
])
def test_initializers(backend, initializer, expected):
    variable = FloatBox(shape=(2,)).get_variable("w", backend=backend, initializer=initializer)
    np.testing.assert_array_equal(_value(variable), expected)


def test_int_and_bool_variables(backend):
    ints = IntBox(5, shape=(3,), dtype="int64").get_variable("i", backend=backend, initializer=4)
    assert _value(ints).tolist() == [4, 4, 4] and _value(ints).dtype == np.int64
    flags = BoolBox(shape=(2,)).get_variable("b", backend=backend)
    assert _value(flags).tolist() == [False, False]


def test_fixed_batch_and_time_ranks(backend):
    space = FloatBox(shape=(4,))
    assert _shape(space.get_variable("a", backend=backend, add_batch_rank=8)) == (8, 4)
    assert _shape(space.get_variable("b", backend=backend, add_batch_rank=8, add_time_rank=5)) == (8, 5, 4)
    assert _shape(space.get_variable("c", backend=backend, add_batch_rank=8, add_time_rank=5,
                                     time_major=True)) == (5, 8, 4)
    assert _shape(FloatBox(shape=(4,), add_batch_rank=16).get_variable("d", backend=backend)) == (16, 4)


def test_variable_batch_rank_starts_empty(backend):
    variable = FloatBox(shape=(2,), add_batch_rank=True).get_variable("buffer", backend=backend)
    assert _value(variable).shape == (0, 2)


def test_trainable(backend):
    variable = FloatBox(shape=(2,)).get_variable("w", backend=backend, trainable=True, initializer=0.5)
    assert variable.trainable if backend == "tf" else variable.requires_grad
    local = FloatBox(shape=(2,)).get_variable("l", backend=backend, trainable=True, local=True)
    assert not (local.trainable if backend == "tf" else local.requires_grad)


def test_container_variables_are_nested_like_the_space(backend):
    space = Dict(a=FloatBox(shape=(2,)), b=Tuple(IntBox(3), BoolBox()))
    variables = space.get_variable("mem", backend=backend, add_batch_rank=4)
    assert set(variables) == {"a", "b"} and isinstance(variables["b"], tuple)
    assert _shape(variables["a"]) == (4, 2) and _shape(variables["b"][0]) == (4,)
    if backend == "tf":
        assert variables["b"][1].name.startswith("mem/b/_T1_")


def test_input_feed(backend):
    space = FloatBox(shape=(3,), add_batch_rank=True, add_time_rank=True)
    feed = space.get_variable("state", backend=backend, is_input_feed=True)
    if backend == "tf":
        import tensorflow as tf
        assert isinstance(feed, tf.TensorSpec) and feed.shape.as_list() == [None, None, 3]
    else:
        assert tuple(feed.shape) == (1, 1, 3) and float(feed.sum()) == 0.0


def test_default_backend_is_used(backend):
    with rlgraph.backend_scope(backend):
        variable = FloatBox().get_variable("x")
    assert type(variable).__module__.split(".")[0] == ("tensorflow" if backend == "tf" else "torch")


def test_python_variables():
    assert FloatBox(shape=(2,), add_batch_rank=True).get_variable("p", is_python=True) == []
    np.testing.assert_array_equal(FloatBox(shape=(2,)).get_variable("p", is_python=True, initializer=3.0),
                                  [3.0, 3.0])


def test_text_variables():
    tf = pytest.importorskip("tensorflow")
    variable = TextBox(shape=(2,)).get_variable("t", backend="tf")
    assert variable.dtype == tf.string and variable.numpy().tolist() == [b"", b""]
    pytest.importorskip("torch")
    with pytest.raises(Exception, match="no string dtype"):
        TextBox().get_variable("t", backend="pytorch")


def test_bad_initializers():
    with pytest.raises(RLGraphSpaceError, match="does not fit"):
        FloatBox(shape=(2,)).get_variable("w", is_python=True, initializer=[1.0, 2.0, 3.0])
    with pytest.raises(RLGraphSpecError, match="unsupported initializer"):
        FloatBox(shape=(2,)).get_variable("w", is_python=True, initializer=object())


def test_torch_int_variables_cannot_be_trainable():
    pytest.importorskip("torch")
    with pytest.raises(RLGraphSpaceError, match="only float variables"):
        IntBox(3).get_variable("i", backend="pytorch", trainable=True)
