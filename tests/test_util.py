"""dtype conversion between notations and list forcing."""
import numpy as np
import pytest

from rlgraph.utils import RLGraphError, convert_dtype, force_list, force_tuple


@pytest.mark.parametrize("given, expected", [
    ("float", np.float32), ("float32", np.float32), ("np.float64", np.float64), (float, np.float32),
    (int, np.int32), ("int64", np.int64), ("uint8", np.uint8), (bool, np.bool_), ("bool", np.bool_),
    (np.int16, np.int16), (np.dtype("float16"), np.float16), (str, np.str_), ("string", np.str_),
])
def test_to_numpy(given, expected):
    assert convert_dtype(given) == np.dtype(expected)


def test_unknown_dtype():
    with pytest.raises(RLGraphError, match="unknown dtype"):
        convert_dtype("quaternion")


def test_unknown_target():
    with pytest.raises(RLGraphError, match="'np', 'tf' or 'pytorch'"):
        convert_dtype("float32", to="jax")


def test_tf_round_trip():
    tf = pytest.importorskip("tensorflow")
    assert convert_dtype("float32", to="tf") == tf.float32
    assert convert_dtype(np.uint8, to="tf") == tf.uint8
    assert convert_dtype(str, to="tf") == tf.string
    assert convert_dtype(tf.int64) == np.int64
    assert convert_dtype(tf.string) == np.dtype(np.str_)


def test_torch_round_trip():
    torch = pytest.importorskip("torch")
    assert convert_dtype("float32", to="pytorch") == torch.float32
    assert convert_dtype(bool, to="torch") == torch.bool
    assert convert_dtype(torch.int64) == np.int64
    with pytest.raises(RLGraphError, match="no string dtype"):
        convert_dtype(str, to="pytorch")


def test_force_list_and_tuple():
    assert force_list(None) == [] and force_tuple(None) == ()
    assert force_list(3) == [3] and force_tuple((1, 2)) == (1, 2)
    assert force_list((1, 2)) == [1, 2]
    array = np.zeros(2)
    assert force_list(array)[0] is array
