"""Property tests over random nested spaces (hypothesis, derandomized for reproducible CI runs)."""
import pickle

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox, Space, TextBox, Tuple
from rlgraph.utils.nest import flatten_op, unflatten_op

settings.register_profile("rlgraph", max_examples=40, deadline=None, derandomize=True)
settings.load_profile("rlgraph")

shapes = st.lists(st.integers(1, 3), min_size=0, max_size=3).map(tuple)


@st.composite
def boxes(draw):
    kind = draw(st.sampled_from(["float", "int", "bool", "text"]))
    shape = draw(shapes)
    if kind == "float":
        low = draw(st.floats(-5, 5))
        return FloatBox(low, low + draw(st.floats(0.1, 5)), shape=shape,
                        dtype=draw(st.sampled_from(["float32", "float64"])))
    if kind == "int":
        return IntBox(draw(st.integers(1, 50)), shape=shape, dtype=draw(st.sampled_from(["int32", "int64", "uint8"])))
    if kind == "bool":
        return BoolBox(shape=shape)
    return TextBox(shape=shape)


keys = st.text(alphabet="abcdefgh", min_size=1, max_size=3)
spaces = st.recursive(
    boxes(),
    lambda children: st.one_of(st.dictionaries(keys, children, min_size=1, max_size=3).map(Dict),
                               st.lists(children, min_size=1, max_size=3).map(Tuple)),
    max_leaves=6)


@given(spaces, st.integers(0, 2 ** 31 - 1))
def test_samples_are_members(space, seed):
    space.seed(seed)
    assert space.contains(space.sample())
    zeros = flatten_op(space.zeros())
    assert all(np.all(np.asarray(z) == np.zeros((), np.asarray(z).dtype)) for z in zeros.values())


@given(spaces, st.integers(2, 4))
def test_batched_samples_belong_to_the_batched_space(space, size):
    batched = space.with_batch_rank()
    sample = batched.sample(size)
    assert batched.contains(sample)
    for key, leaf in batched.flatten().items():
        assert leaf.get_shape(with_batch_rank=True) == (None,) + leaf.shape
        assert np.shape(flatten_op(sample)[key]) == (size,) + leaf.shape


@given(spaces)
def test_flatten_then_unflatten_is_identity(space):
    sample = space.sample()
    rebuilt = unflatten_op(flatten_op(sample))
    assert list(flatten_op(rebuilt)) == list(flatten_op(sample)) == list(space.flatten())
    for a, b in zip(flatten_op(rebuilt).values(), flatten_op(sample).values()):
        np.testing.assert_array_equal(a, b)
    structure = space.unflatten(space.flatten())
    assert Space.from_spec(structure) == space if isinstance(structure, (dict, tuple)) else structure == space


@given(spaces)
def test_flat_dim_is_the_sum_over_leaves(space):
    assert space.flat_dim == sum(int(np.prod(leaf.shape)) for leaf in space.flatten().values())


@given(spaces)
def test_pickle_round_trip(space):
    assert pickle.loads(pickle.dumps(space)) == space
