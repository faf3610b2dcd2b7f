"""Auto-key flattening of nested data and the dm-tree helpers."""
from collections import OrderedDict

import numpy as np
import pytest

from rlgraph.utils import RLGraphError
from rlgraph.utils.nest import flatten_op, map_structure, pack_sequence_as, unflatten_op


def test_flatten_op_keys_and_order():
    data = {"b": (1, {"z": 2, "a": 3}), "a": 4}
    flat = flatten_op(data)
    assert isinstance(flat, OrderedDict)
    assert list(flat.items()) == [("/a", 4), ("/b/_T0_", 1), ("/b/_T1_/a", 3), ("/b/_T1_/z", 2)]


def test_flatten_op_without_leading_separator_and_mapping():
    flat = flatten_op({"a": (1, 2)}, scope_separator_at_start=False, mapping=lambda key, leaf: leaf * 10)
    assert flat == OrderedDict([("a/_T0_", 10), ("a/_T1_", 20)])


def test_primitive_flattens_to_empty_key():
    array = np.arange(3)
    flat = flatten_op(array)
    assert list(flat) == [""] and flat[""] is array
    assert unflatten_op(flat) is array


def test_unflatten_inverts_flatten():
    data = {"a": (np.zeros(2), {"b": 1.0, "c": (True, "x")}), "d": 5}
    back = unflatten_op(flatten_op(data))
    assert set(back) == {"a", "d"} and isinstance(back["a"], tuple) and isinstance(back["a"][1]["c"], tuple)
    assert back["a"][1]["c"] == (True, "x") and back["d"] == 5
    np.testing.assert_array_equal(back["a"][0], np.zeros(2))


def test_unflatten_orders_tuple_items_numerically():
    flat = {f"/_T{i}_": i for i in range(12)}
    assert unflatten_op(flat) == tuple(range(12))


def test_bad_dict_key_is_rejected():
    with pytest.raises(RLGraphError, match="auto-key"):
        flatten_op({"a/b": 1})
    with pytest.raises(RLGraphError, match="auto-key"):
        flatten_op({"_T0_": 1})


def test_dm_tree_helpers():
    data = {"x": (1, 2), "y": 3}
    assert map_structure(lambda v: v * 2, data) == {"x": (2, 4), "y": 6}
    assert pack_sequence_as(data, [7, 8, 9]) == {"x": (7, 8), "y": 9}
