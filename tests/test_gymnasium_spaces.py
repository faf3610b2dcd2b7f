"""Conversion between rlgraph spaces and gymnasium spaces."""
import gymnasium.spaces as gs
import numpy as np
import pytest

from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox, TextBox, Tuple, space_from_gym, space_to_gym
from rlgraph.utils import RLGraphSpaceError


def test_discrete():
    assert space_from_gym(gs.Discrete(4)) == IntBox(4, dtype="int64")
    shifted = space_from_gym(gs.Discrete(3, start=-1))
    assert (shifted.global_bounds, shifted.num_categories) == ((-1, 2), 3)
    back = space_to_gym(IntBox(-1, 2))
    assert isinstance(back, gs.Discrete) and (back.n, back.start) == (3, -1)


def test_multi_discrete():
    space = space_from_gym(gs.MultiDiscrete([3, 5]))
    assert space.shape == (2,) and space.high.tolist() == [3, 5] and space.low.tolist() == [0, 0]
    back = space_to_gym(IntBox(low=[0, 1], high=[3, 5]))
    assert isinstance(back, gs.MultiDiscrete) and back.nvec.tolist() == [3, 4] and back.start.tolist() == [0, 1]


def test_float_box():
    gym_box = gs.Box(low=np.array([-1.0, 0.0], np.float32), high=np.array([1.0, 5.0], np.float32))
    space = space_from_gym(gym_box)
    assert isinstance(space, FloatBox) and space.shape == (2,) and space.high.tolist() == [1.0, 5.0]
    assert space_from_gym(gs.Box(-np.inf, np.inf, shape=(3,))) == FloatBox(shape=(3,))
    back = space_to_gym(FloatBox(-2.0, 2.0, shape=(2,), dtype="float64"))
    assert isinstance(back, gs.Box) and back.dtype == np.float64 and back.high.tolist() == [2.0, 2.0]


def test_int_and_bool_box():
    space = space_from_gym(gs.Box(0, 255, shape=(2, 2), dtype=np.uint8))
    assert space == IntBox(256, shape=(2, 2), dtype="uint8")  # gymnasium's inclusive high 255 -> exclusive 256
    assert space_from_gym(gs.Box(0, 1, shape=(3,), dtype=bool)) == BoolBox(shape=(3,))
    unbounded = space_to_gym(IntBox(shape=(2,)))
    assert isinstance(unbounded, gs.Box) and unbounded.dtype == np.int32


def test_multi_binary():
    assert space_from_gym(gs.MultiBinary(4)) == IntBox(2, shape=(4,), dtype="int8")
    back = space_to_gym(BoolBox(shape=(3,)))
    assert isinstance(back, gs.MultiBinary) and back.shape == (3,)


def test_text():
    assert space_from_gym(gs.Text(max_length=10)) == TextBox()
    assert isinstance(space_to_gym(TextBox()), gs.Text)


def test_nested_round_trip():
    gym_space = gs.Dict({"pos": gs.Box(-1.0, 1.0, shape=(2,)), "extra": gs.Tuple([gs.Discrete(3), gs.Discrete(2)])})
    space = space_from_gym(gym_space, add_batch_rank=True)
    assert space == Dict(pos=FloatBox(-1.0, 1.0, shape=(2,)), extra=Tuple(IntBox(3, dtype="int64"),
                                                                          IntBox(2, dtype="int64")),
                         add_batch_rank=True)
    back = space_to_gym(space)
    assert back == gym_space
    sample = gym_space.sample()
    assert space.contains(sample)


def test_unknown_gym_space():
    with pytest.raises(RLGraphSpaceError, match="no rlgraph equivalent"):
        space_from_gym(gs.Graph(node_space=gs.Discrete(2), edge_space=None))
