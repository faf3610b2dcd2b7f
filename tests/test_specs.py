"""Specifiable.from_spec / from_file: type names, dicts, kwargs, _args, dotted paths, files, validation."""
import json

import pytest
import yaml

from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox, Space, TextBox, Tuple
from rlgraph.utils import RLGraphSpecError, Specifiable


@pytest.mark.parametrize("name", ["float-box", "FloatBox", "float_box", "floatbox", "Float Box", "float"])
def test_type_name_spellings(name):
    assert Space.from_spec({"type": name, "shape": [2]}) == FloatBox(shape=(2,))


@pytest.mark.parametrize("type_, expected", [(float, FloatBox()), (int, IntBox()), (bool, BoolBox()),
                                             (str, TextBox()), ("text-box", TextBox()), ("bool", BoolBox())])
def test_python_types_and_aliases(type_, expected):
    assert Space.from_spec(type_) == expected


def test_dict_spec_kwargs_override_and_args():
    assert Space.from_spec({"type": "int-box", "low": 0, "high": 4}, high=6) == IntBox(0, 6)
    assert Space.from_spec("int-box", low=1, high=3) == IntBox(1, 3)
    assert Space.from_spec({"type": "int-box", "_args": [2, 5]}) == IntBox(2, 5)
    assert Space.from_spec(type="float-box", shape=(3,)) == FloatBox(shape=(3,))


def test_container_specs():
    assert Space.from_spec([float, {"type": "int-box", "high": 3}]) == Tuple(FloatBox(), IntBox(3))
    assert Space.from_spec({"a": bool, "b": [int]}, add_batch_rank=True) == \
        Dict(a=BoolBox(), b=Tuple(IntBox()), add_batch_rank=True)
    assert Space.from_spec({"type": "dict", "x": "float"}) == Dict(x=FloatBox())
    assert Space.from_spec({"type": "tuple", "_args": [bool, str]}) == Tuple(BoolBox(), TextBox())


def test_dotted_path_and_instances():
    assert Space.from_spec("rlgraph.spaces.FloatBox", shape=(2,)) == FloatBox(shape=(2,))
    space = IntBox(3)
    assert Space.from_spec(space) is space
    assert Space.from_spec(IntBox, high=3) == space


def test_json_and_yaml_files(tmp_path):
    spec = {"type": "dict", "pos": {"type": "float-box", "shape": [2]}, "gear": {"type": "int-box", "high": 5}}
    expected = Dict(pos=FloatBox(shape=(2,)), gear=IntBox(5))
    json_file = tmp_path / "space.json"
    json_file.write_text(json.dumps(spec))
    yaml_file = tmp_path / "space.yaml"
    yaml_file.write_text(yaml.safe_dump(spec))
    assert Space.from_spec(str(json_file)) == expected
    assert Space.from_file(str(yaml_file)) == expected
    assert Space.from_file(str(json_file), add_batch_rank=True) == expected.with_batch_rank()


def test_unknown_key_names_class_key_closest_match_and_valid_keys():
    with pytest.raises(RLGraphSpecError) as info:
        Space.from_spec({"type": "float-box", "hihg": 1.0})
    message = str(info.value)
    assert message.startswith("FloatBox: unknown key 'hihg'")
    assert "did you mean 'high'?" in message
    assert "add_batch_rank, add_time_rank, dtype, high, low, shape, time_major" in message


def test_unknown_type_lists_names_and_closest_match():
    with pytest.raises(RLGraphSpecError) as info:
        Space.from_spec({"type": "flaot-box"})
    assert "did you mean 'float-box'?" in str(info.value) and "int-box" in str(info.value)


def test_bad_paths_and_files(tmp_path):
    with pytest.raises(RLGraphSpecError, match="cannot import"):
        Space.from_spec("rlgraph.spaces.NoSuchSpace")
    with pytest.raises(RLGraphSpecError, match="spec file not found"):
        Space.from_spec("missing/space.json")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(RLGraphSpecError, match="cannot parse"):
        Space.from_file(str(broken))
    text_file = tmp_path / "space.txt"
    text_file.write_text("float-box")
    with pytest.raises(RLGraphSpecError, match="unknown spec file type"):
        Specifiable.from_file(str(text_file))


def test_missing_required_argument():
    class Needs(Specifiable):
        def __init__(self, required, optional=1):
            self.required, self.optional = required, optional

    with pytest.raises(RLGraphSpecError, match="Needs: spec does not fit the constructor"):
        Needs.from_spec({"optional": 2})


class Schedule(Specifiable):
    pass


class Constant(Schedule):
    def __init__(self, value=1.0):
        self.value = value


class Linear(Schedule):
    def __init__(self, start=1.0, end=0.0, steps=100, **kwargs):
        super().__init__(**kwargs)
        self.start, self.end, self.steps = start, end, steps


Schedule.__lookup_classes__ = {"constant": Constant, "linear": Linear, "linear-decay": Linear}
Schedule.__default_constructor__ = Constant


def test_own_lookup_table_and_default_constructor():
    linear = Schedule.from_spec({"type": "LinearDecay", "steps": 10})
    assert isinstance(linear, Linear) and linear.steps == 10
    constant = Schedule.from_spec({"value": 0.5})
    assert isinstance(constant, Constant) and constant.value == 0.5
    # Linear forwards **kwargs to a base without __init__: the chain is closed, so typos are caught.
    with pytest.raises(RLGraphSpecError, match="did you mean 'steps'"):
        Schedule.from_spec({"type": "linear", "stesp": 3})


def test_open_kwargs_class_accepts_anything():
    class Bag(Specifiable):
        __spec_open_kwargs__ = True

        def __init__(self, **kwargs):
            self.items = kwargs

    assert Bag.from_spec({"anything": 1}).items == {"anything": 1}
