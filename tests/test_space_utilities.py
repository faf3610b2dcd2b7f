"""space_utils: equivalence, inference from data, sanity checks, list registries."""
import numpy as np
import pytest

from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox, TextBox, Tuple
from rlgraph.spaces.space_utils import (check_space_equivalence, get_list_registry, get_space_from_op,
                                        sanity_check_space)
from rlgraph.utils import RLGraphSpaceError


def test_documented_equivalence_returns_the_generic_space():
    hard, generic = FloatBox(shape=(64,)), FloatBox(add_batch_rank=True)
    assert check_space_equivalence(hard, generic) is generic
    assert check_space_equivalence(generic, hard) is generic
    same = FloatBox(shape=(2,))
    assert check_space_equivalence(same, FloatBox(shape=(2,))) is same


@pytest.mark.parametrize("a, b", [
    (FloatBox(shape=(2,)), FloatBox(shape=(3,))),
    (FloatBox(shape=(2,)), IntBox(shape=(2,))),
    (FloatBox(), FloatBox(dtype="float64")),
    (IntBox(3), IntBox(4)),
    (FloatBox(shape=(2, 2)), FloatBox(shape=(2,), add_batch_rank=True, add_time_rank=True)),
    (Dict(a=FloatBox()), Dict(b=FloatBox())),
    (Tuple(FloatBox()), Dict(a=FloatBox())),
])
def test_not_equivalent(a, b):
    assert check_space_equivalence(a, b) is False


def test_equivalence_ignores_float_bounds_and_recurses_into_containers():
    assert check_space_equivalence(FloatBox(0.0, 1.0), FloatBox()) is not False
    a = Dict(x=FloatBox(shape=(5, 2)), y=IntBox(3, add_batch_rank=True))
    b = Dict(x=FloatBox(shape=(2,), add_batch_rank=True), y=IntBox(3, shape=(7,)))
    mixed = check_space_equivalence(a, b)
    assert mixed["x"] == b["x"] and mixed["y"] == a["y"]


def test_space_from_numpy_data():
    assert get_space_from_op(np.zeros((3, 2), dtype=np.float32)) == FloatBox(shape=(3, 2))
    assert get_space_from_op(np.zeros((3, 2), dtype=np.float32), add_batch_rank=True) == \
        FloatBox(shape=(2,), add_batch_rank=True)
    assert get_space_from_op(np.zeros((4, 5, 2), np.uint8), add_batch_rank=True, add_time_rank=True) == \
        IntBox(shape=(2,), dtype="uint8", add_batch_rank=True, add_time_rank=True)
    assert get_space_from_op(np.array([True])) == BoolBox(shape=(1,))
    assert get_space_from_op(np.array(["a", "b"])) == TextBox(shape=(2,))
    assert get_space_from_op(1.5) == FloatBox() and get_space_from_op(3) == IntBox()
    assert get_space_from_op(True) == BoolBox() and get_space_from_op("hi") == TextBox()


def test_space_from_nested_data():
    space = get_space_from_op({"a": np.zeros((2,), np.float64), "b": (np.int64(1), False)})
    assert space == Dict(a=FloatBox(shape=(2,), dtype="float64"), b=Tuple(IntBox(dtype="int64"), BoolBox()))


def test_space_from_tensors(backend):
    if backend == "tf":
        import tensorflow as tf
        spec = tf.TensorSpec(shape=(None, None, 3), dtype=tf.float32)
        assert get_space_from_op(spec) == FloatBox(shape=(3,), add_batch_rank=True, add_time_rank=True)
        assert get_space_from_op(tf.zeros((2, 3), tf.int64)) == IntBox(shape=(2, 3), dtype="int64")
    else:
        import torch
        assert get_space_from_op(torch.zeros((2, 3))) == FloatBox(shape=(2, 3))
        assert get_space_from_op(torch.zeros((2, 3), dtype=torch.bool), add_batch_rank=True) == \
            BoolBox(shape=(3,), add_batch_rank=True)


def test_space_from_bad_data():
    with pytest.raises(RLGraphSpaceError, match="cannot infer"):
        get_space_from_op(object())
    with pytest.raises(RLGraphSpaceError, match="fewer dims"):
        get_space_from_op(np.float32(1.0), add_batch_rank=True)


def test_sanity_check_passes():
    space = IntBox(4, shape=(2,), add_batch_rank=True)
    sanity_check_space(space, allowed_types=[IntBox], non_allowed_types=[FloatBox], must_have_batch_rank=True,
                       must_have_time_rank=False, must_have_batch_or_time_rank=True, must_have_categories=True,
                       num_categories=(2, 10), rank=1)
    sanity_check_space(space, num_categories=4, rank=(0, None))


@pytest.mark.parametrize("kwargs, message", [
    (dict(allowed_types=[FloatBox]), "one of FloatBox"),
    (dict(non_allowed_types=[IntBox]), "none of IntBox"),
    (dict(must_have_batch_rank=False), "no batch rank"),
    (dict(must_have_time_rank=True), "a time rank"),
    (dict(must_have_categories=False), "no global bounds"),
    (dict(num_categories=(5, None)), r"num_categories in \[5, inf\]"),
    (dict(num_categories=3), r"num_categories in \{3\}"),
    (dict(rank=(2, 3)), r"rank in \[2, 3\]"),
])
def test_sanity_check_failures(kwargs, message):
    space = IntBox(4, shape=(2,), add_batch_rank=True)
    with pytest.raises(RLGraphSpaceError, match=message) as info:
        sanity_check_space(space, **kwargs)
    assert info.value.space is space


def test_sanity_check_batch_or_time_and_categories_on_non_int():
    with pytest.raises(RLGraphSpaceError, match="a batch rank or a time rank"):
        sanity_check_space(FloatBox(), must_have_batch_or_time_rank=True)
    with pytest.raises(RLGraphSpaceError, match="an IntBox"):
        sanity_check_space(FloatBox(), must_have_categories=True)


def test_sanity_check_container_leaves():
    space = Dict(a=FloatBox(shape=(2,)), b=FloatBox(shape=(2, 2)))
    sanity_check_space(space, allowed_types=[Dict], rank=(1, 2))
    with pytest.raises(RLGraphSpaceError, match="leaf '/b'"):
        sanity_check_space(space, rank=1)


def test_list_registry():
    space = Dict(a=FloatBox(shape=(2,)), b=Tuple(IntBox(3), BoolBox()))
    registry = get_list_registry(space)
    assert list(registry) == ["/a", "/b/_T0_", "/b/_T1_"] and all(v == [] for v in registry.values())
    filled = get_list_registry(space, capacity=3, initializer=-1)
    assert filled["/b/_T0_"] == [-1, -1, -1]
    nested = get_list_registry(space, capacity=2, flatten=False)
    assert nested == {"a": [0, 0], "b": ([0, 0], [0, 0])}
    zeros = get_list_registry(FloatBox(shape=(2,)), capacity=2, initializer="zeros", add_batch_rank=True)
    assert [z.shape for z in zeros[""]] == [(1, 2), (1, 2)]
    assert get_list_registry(space, capacity=1)["/a"] is not get_list_registry(space, capacity=1)["/a"]
