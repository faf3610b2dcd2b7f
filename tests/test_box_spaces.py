"""Box spaces: shapes, ranks, dtypes, bounds, sampling, membership, comparison, pickling."""
import copy
import pickle

import numpy as np
import pytest

from rlgraph.spaces import BoolBox, BoxSpace, FloatBox, IntBox, TextBox
from rlgraph.utils import RLGraphSpaceError


def test_float_box_basics():
    space = FloatBox(-1.0, 1.0, shape=(2, 3))
    assert space.shape == (2, 3) and space.rank == 2 and space.flat_dim == 6
    assert space.dtype == np.float32 and space.global_bounds == (-1.0, 1.0)
    np.testing.assert_array_equal(space.low, np.full((2, 3), -1.0))
    assert isinstance(space, BoxSpace)


def test_float_box_array_bounds_define_the_shape():
    space = FloatBox(low=[0.0, -1.0], high=[1.0, 2.0])
    assert space.shape == (2,) and space.global_bounds is False
    low, high = space.bounds
    np.testing.assert_array_equal(high, [1.0, 2.0])


def test_unbounded_float_box():
    space = FloatBox()
    assert space.shape == () and space.rank == 0 and space.flat_dim == 1
    assert space.global_bounds == (-np.inf, np.inf)


def test_int_box_categories():
    space = IntBox(4)
    assert (space.num_categories, space.global_bounds) == (4, (0, 4))
    assert IntBox(2, 5).num_categories == 3
    assert IntBox().num_categories == 0 and IntBox(low=[0, 0], high=[2, 3]).num_categories == 0
    image = IntBox(256, shape=(80, 80, 3), dtype="uint8")
    assert image.dtype == np.uint8 and image.num_categories == 256
    assert image.flat_dim == 19200 and image.flat_dim_with_categories == 19200 * 256
    assert IntBox(3, shape=(2,), add_batch_rank=True).get_shape(with_batch_rank=True, with_category_rank=True) \
        == (None, 2, 3)
    assert IntBox(low=[0, 0], high=[2, 3]).get_shape(with_category_rank=True) == (2,)


def test_int_box_high_is_exclusive():
    space = IntBox(3)
    assert space.contains(2) and not space.contains(3) and not space.contains(-1)
    samples = space.sample(1000)
    assert samples.min() == 0 and samples.max() == 2


@pytest.mark.parametrize("kwargs, expected", [
    (dict(), (5,)),
    (dict(with_batch_rank=True), (None, 5)),
    (dict(with_time_rank=True), (7, 5)),
    (dict(with_batch_rank=True, with_time_rank=True), (None, 7, 5)),
    (dict(with_batch_rank=True, with_time_rank=True, time_major=True), (7, None, 5)),
    (dict(with_batch_rank=-1, with_time_rank=True), (-1, 7, 5)),
    (dict(with_batch_rank=False, with_time_rank=True), (7, 5)),
])
def test_get_shape_with_ranks(kwargs, expected):
    space = FloatBox(shape=(5,), add_batch_rank=True, add_time_rank=7)
    assert space.get_shape(**kwargs) == expected


def test_get_shape_ignores_ranks_the_space_does_not_have():
    assert FloatBox(shape=(2,)).get_shape(with_batch_rank=True, with_time_rank=True) == (2,)
    space = BoolBox(add_batch_rank=32, add_time_rank=True, time_major=True)
    assert space.get_shape(with_batch_rank=True, with_time_rank=True) == (None, 32)
    assert space.get_shape(with_batch_rank=True, with_time_rank=True, time_major=False) == (32, None)


def test_with_rank_copies():
    space = IntBox(3, shape=(2,))
    batched = space.with_batch_rank()
    assert batched.has_batch_rank and not space.has_batch_rank and batched is not space
    both = space.with_extra_ranks(time_major=True)
    assert (both.has_batch_rank, both.has_time_rank, both.time_major) == (True, True, True)
    assert both.get_shape(with_batch_rank=True, with_time_rank=True) == (None, None, 2)
    kept = both.with_extra_ranks(add_batch_rank=False, add_time_rank=None, time_major=None)
    assert (kept.has_batch_rank, kept.has_time_rank, kept.time_major) == (False, True, True)
    assert batched.with_batch_rank(False).get_shape(with_batch_rank=True) == (2,)
    assert space.with_time_rank(10).get_shape(with_time_rank=True) == (10, 2)
    assert both.strip_ranks() == space


@pytest.mark.parametrize("space, size, shape", [
    (FloatBox(shape=(2,)), None, (2,)),
    (FloatBox(shape=(2,)), 1, (2,)),
    (FloatBox(shape=(2,), add_batch_rank=True), 1, (1, 2)),
    (FloatBox(shape=(2,)), 5, (5, 2)),
    (IntBox(4, shape=(3,)), (2, 6), (2, 6, 3)),
    (BoolBox(shape=(2, 2)), 3, (3, 2, 2)),
    (TextBox(shape=(2,)), 4, (4, 2)),
])
def test_sample_shapes(space, size, shape):
    sample = space.sample(size)
    assert np.shape(sample) == shape
    assert np.asarray(sample).dtype.kind == space.dtype.kind


def test_rank_zero_sample_is_a_numpy_scalar():
    assert isinstance(FloatBox().sample(), np.float32)
    assert isinstance(IntBox(2).sample(), np.int32)
    assert isinstance(BoolBox().sample(), np.bool_)
    assert isinstance(TextBox().sample(), np.str_)


def test_bounded_float_samples_are_uniform_unbounded_normal():
    uniform = FloatBox(2.0, 4.0)
    uniform.seed(0)
    values = uniform.sample(20000)
    assert values.min() >= 2.0 and values.max() <= 4.0 and abs(values.mean() - 3.0) < 0.02
    normal = FloatBox()
    normal.seed(0)
    values = normal.sample(20000)
    assert abs(values.mean()) < 0.03 and abs(values.std() - 1.0) < 0.03
    half = FloatBox(low=1.0)
    half.seed(0)
    values = half.sample(20000)
    assert values.min() >= 1.0 and abs(values.mean() - 2.0) < 0.05  # 1 + Exp(1)


def test_fill_value_and_zeros():
    np.testing.assert_array_equal(IntBox(10, shape=(2,)).sample(3, fill_value=7), np.full((3, 2), 7))
    np.testing.assert_array_equal(FloatBox(shape=(2,)).zeros(), [0.0, 0.0])
    assert BoolBox(shape=(2,)).zeros().tolist() == [False, False]
    assert TextBox(shape=(2,)).zeros().tolist() == ["", ""]
    assert TextBox().sample(fill_value="go") == "go"


def test_seeding():
    a, b = IntBox(100, shape=(5,)), IntBox(100, shape=(5,))
    a.seed(3)
    b.seed(3)
    np.testing.assert_array_equal(a.sample(4), b.sample(4))
    np.random.seed(11)
    first = FloatBox(shape=(3,)).sample()
    np.random.seed(11)
    np.testing.assert_array_equal(FloatBox(shape=(3,)).sample(), first)


def test_text_samples_are_words():
    space = TextBox(shape=(50,))
    space.seed(1)
    words = space.sample().tolist()
    assert all(1 <= len(w) <= 8 and w.isalpha() and w.islower() for w in words)


def test_contains():
    space = FloatBox(-1.0, 1.0, shape=(2,))
    assert space.contains(np.array([0.5, -1.0], dtype=np.float32))
    assert space.contains([0, 1])  # ints are valid reals
    assert not space.contains(np.array([0.5, 1.5]))
    assert not space.contains(np.array([0.5]))
    assert not space.contains(np.array([True, False]))
    assert not space.contains(np.array([np.nan, 0.0]))
    ints = IntBox(5, shape=(2,))
    assert ints.contains(np.array([0, 4])) and not ints.contains(np.array([0.0, 4.0]))
    assert BoolBox(shape=(2,)).contains([True, False]) and not BoolBox(shape=(2,)).contains([1, 0])
    assert TextBox().contains("hello") and not TextBox().contains(3.0)


def test_contains_accepts_the_space_s_own_batch_and_time_dims():
    space = FloatBox(shape=(2,), add_batch_rank=True, add_time_rank=3)
    assert space.contains(np.zeros((2,)))
    assert space.contains(np.zeros((5, 3, 2)))
    assert not space.contains(np.zeros((5, 4, 2)))  # fixed time size 3
    assert not FloatBox(shape=(2,)).contains(np.zeros((5, 2)))


def test_force_batch():
    space = FloatBox(shape=(2,))
    assert space.force_batch([1.0, 2.0]).shape == (1, 2)
    assert space.force_batch(np.zeros((4, 2))).shape == (4, 2)
    assert TextBox().force_batch("a").tolist() == ["a"]
    assert IntBox(3).force_batch(2).tolist() == [2]


def test_equality_and_hash():
    assert FloatBox(shape=(2,)) == FloatBox(shape=(2,))
    assert hash(FloatBox(shape=(2,))) == hash(FloatBox(shape=(2,)))
    assert FloatBox(shape=(2,)) != FloatBox(shape=(3,))
    assert FloatBox(shape=(2,)) != FloatBox(shape=(2,), add_batch_rank=True)
    assert FloatBox(0.0, 1.0) != FloatBox(0.0, 2.0)
    assert IntBox(3) != FloatBox(0.0, 3.0)
    assert IntBox(3) != IntBox(3, dtype="int64")


def test_repr():
    assert repr(FloatBox(-1.0, 1.0, shape=(2,), add_batch_rank=True)) == \
        "FloatBox(shape=(2,), dtype=float32, low=-1.0, high=1.0, +batch)"
    assert repr(IntBox(4)) == "IntBox(shape=(), dtype=int32, low=0, high=4)"
    assert repr(IntBox()) == "IntBox(shape=(), dtype=int32)"
    assert repr(TextBox(add_time_rank=True)) == "TextBox(shape=(), dtype=str, +time)"


@pytest.mark.parametrize("space", [FloatBox(-1.0, 1.0, shape=(2,), add_batch_rank=True), IntBox(4, dtype="uint8"),
                                   BoolBox(shape=(3,)), TextBox(add_time_rank=True)])
def test_pickle_and_deepcopy(space):
    assert pickle.loads(pickle.dumps(space)) == space
    assert copy.deepcopy(space) == space


def test_invalid_arguments_raise_space_errors():
    with pytest.raises(RLGraphSpaceError, match="integer dtype"):
        IntBox(3, dtype="float32")
    with pytest.raises(RLGraphSpaceError, match="float dtype"):
        FloatBox(dtype="int32")
    with pytest.raises(RLGraphSpaceError, match="greater than low"):
        IntBox(2, 2)
    with pytest.raises(RLGraphSpaceError, match="does not fit the shape"):
        FloatBox(low=[0.0, 0.0], shape=(3,))
    with pytest.raises(RLGraphSpaceError, match="invalid shape"):
        FloatBox(shape=(-1,))
    with pytest.raises(RLGraphSpaceError, match="rank flag"):
        FloatBox(add_batch_rank=-3)


def test_unbounded_int_box_contains_its_dtype_maximum():
    space = IntBox(shape=(2,), dtype="uint8")
    assert space.contains(np.array([0, 255], dtype=np.uint8))
    assert not IntBox(255, shape=(2,), dtype="uint8").contains(np.array([0, 255], dtype=np.uint8))
