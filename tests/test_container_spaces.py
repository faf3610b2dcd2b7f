"""Dict and Tuple spaces: construction, sorted keys, nested shapes, sampling, flattening, pickling."""
import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

from rlgraph.spaces import BoolBox, ContainerSpace, Dict, FloatBox, IntBox, TextBox, Tuple
from rlgraph.utils import RLGraphSpaceError


def image_text():
    return Dict(image=IntBox(256, shape=(80, 80, 3), dtype="uint8"), text=TextBox())


def test_reference_example_shape_rank_dtype():
    space = image_text()
    assert space.shape == ((80, 80, 3), ())
    assert space.rank == (3, 0)
    assert space.dtype == (np.uint8, np.str_)
    assert space.flat_dim == 80 * 80 * 3 + 1
    assert isinstance(space, ContainerSpace) and isinstance(space, dict)


def test_dict_keys_are_sorted():
    space = Dict({"z": FloatBox(shape=(1,)), "a": IntBox(2, shape=(2, 2))}, m=BoolBox(shape=(3,)))
    assert list(space.keys()) == ["a", "m", "z"]
    assert space.shape == ((2, 2), (3,), (1,))


def test_construction_from_specs():
    space = Dict(pos=FloatBox(shape=(2,)), flags={"done": bool}, pair=[float, int],
                 typed={"type": "int-box", "low": 0, "high": 3})
    assert space["flags"] == Dict(done=BoolBox())
    assert space["pair"] == Tuple(FloatBox(), IntBox())
    assert space["typed"] == IntBox(3)
    assert Tuple([FloatBox(), IntBox(2)]) == Tuple(FloatBox(), IntBox(2))


def test_bad_construction():
    with pytest.raises(RLGraphSpaceError, match="invalid Dict key"):
        Dict({"a/b": FloatBox()})
    with pytest.raises(RLGraphSpaceError, match="key given twice"):
        Dict({"a": FloatBox()}, a=IntBox(2))
    with pytest.raises(RLGraphSpaceError, match="unknown keyword"):
        Tuple(FloatBox(), add_batch_rnak=True)


def test_nested_shapes_with_ranks():
    space = Tuple(FloatBox(shape=(2,)), Dict(b=IntBox(3), a=BoolBox(shape=(4,))), add_batch_rank=True)
    assert space.shape == ((2,), ((4,), ()))
    assert space.get_shape(with_batch_rank=True) == ((None, 2), ((None, 4), (None,)))
    assert space.rank == (1, (1, 0))
    assert space.dtype == (np.float32, (np.bool_, np.int32))
    assert space.flat_dim == 7
    assert space[1]["a"].has_batch_rank


def test_rank_flags_propagate_to_copies_and_children():
    space = Dict(a=FloatBox(), b=Tuple(IntBox(2)))
    timed = space.with_extra_ranks(add_batch_rank=True, add_time_rank=True, time_major=True)
    assert timed["b"][0].get_shape(with_batch_rank=True, with_time_rank=True) == (None, None)
    assert timed["b"][0].time_major and not space["b"][0].has_batch_rank
    assert timed.get_shape(with_batch_rank=-1, with_time_rank=True) == ((None, -1), ((None, -1),))


def test_sample_non_horizontal_and_horizontal():
    space = Dict(a=FloatBox(shape=(2,)), b=Tuple(IntBox(3), TextBox()))
    space.seed(5)
    batch = space.sample(4)
    assert batch["a"].shape == (4, 2) and batch["b"][0].shape == (4,) and batch["b"][1].shape == (4,)
    assert space.with_batch_rank().contains(batch)
    single = space.sample()
    assert single["a"].shape == (2,) and space.contains(single)
    rows = space.sample(3, horizontal=True)
    assert rows.shape == (3,) and rows.dtype == object
    assert all(space.contains(row) for row in rows)


def test_container_seed_is_reproducible():
    a, b = Tuple(FloatBox(shape=(3,)), IntBox(10, shape=(2,))), Tuple(FloatBox(shape=(3,)), IntBox(10, shape=(2,)))
    a.seed(9)
    b.seed(9)
    first, second = a.sample(2), b.sample(2)
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])


def test_zeros():
    zeros = Dict(a=FloatBox(shape=(2,)), b=BoolBox(), c=TextBox()).zeros(size=2)
    np.testing.assert_array_equal(zeros["a"], np.zeros((2, 2)))
    assert zeros["b"].tolist() == [False, False] and zeros["c"].tolist() == ["", ""]


def test_contains_checks_structure():
    space = Dict(a=IntBox(2), b=Tuple(FloatBox(), BoolBox()))
    assert space.contains({"a": 1, "b": (0.5, True)})
    assert not space.contains({"a": 2, "b": (0.5, True)})
    assert not space.contains({"a": 1})
    assert not space.contains({"a": 1, "b": (0.5,)})
    assert not space.contains({"a": 1, "b": (0.5, True), "c": 3})
    assert not space.contains([1, (0.5, True)])


def test_force_batch():
    space = Dict(a=FloatBox(shape=(2,)), b=Tuple(IntBox(3)))
    batched = space.force_batch({"a": [1.0, 2.0], "b": (1,)})
    assert batched["a"].shape == (1, 2) and batched["b"][0].tolist() == [1]


def test_flatten_auto_keys():
    space = Dict(a=Tuple(FloatBox(), Dict(b=IntBox(2))), c=BoolBox())
    flat = space.flatten()
    assert isinstance(flat, OrderedDict)
    assert list(flat) == ["/a/_T0_", "/a/_T1_/b", "/c"]
    assert flat["/a/_T1_/b"] == IntBox(2)
    assert list(space.flatten(scope_separator_at_start=False)) == ["a/_T0_", "a/_T1_/b", "c"]
    assert list(space.flatten(custom_scope_separator=".")) == [".a._T0_", ".a._T1_.b", ".c"]
    assert list(space.flatten(mapping=lambda key, leaf: leaf.flat_dim).values()) == [1, 1, 1]
    assert list(FloatBox().flatten()) == [""]


def test_unflatten_rebuilds_structure():
    space = Dict(a=Tuple(FloatBox(), Dict(b=IntBox(2))), c=BoolBox())
    rebuilt = space.unflatten(space.flatten())
    assert rebuilt == {"a": (FloatBox(), {"b": IntBox(2)}), "c": BoolBox()}
    values = space.unflatten(space.flatten(mapping=lambda key, leaf: key))
    assert values == {"a": ("/a/_T0_", {"b": "/a/_T1_/b"}), "c": "/c"}


def test_equality():
    assert image_text() == image_text()
    assert image_text() != image_text().with_batch_rank()
    assert Dict(a=FloatBox()) != Dict(b=FloatBox())
    assert Tuple(FloatBox(), IntBox(2)) != Tuple(IntBox(2), FloatBox())
    assert Tuple(FloatBox()) != (FloatBox(),)


def test_repr():
    assert repr(Dict(b=IntBox(2), a=FloatBox(), add_batch_rank=True)) == (
        "Dict(a=FloatBox(shape=(), dtype=float32, +batch), b=IntBox(shape=(), dtype=int32, low=0, high=2, +batch), "
        "+batch)")
    assert repr(Tuple(BoolBox())) == "Tuple(BoolBox(shape=(), dtype=bool))"


@pytest.mark.parametrize("space", [image_text().with_batch_rank(), Tuple(FloatBox(), Dict(x=[IntBox(3), TextBox()])),
                                   Dict()])
def test_pickle_and_deepcopy(space):
    clone = pickle.loads(pickle.dumps(space))
    assert clone == space and type(clone) is type(space)
    deep = copy.deepcopy(space)
    assert deep == space
    for key, leaf in deep.flatten().items():
        assert leaf is not space.flatten()[key]
