"""Spaces: the dtype, shape and batch/time ranks of every piece of data in rlgraph.

Imports neither TensorFlow nor PyTorch (only `Space.get_variable` does, lazily).
"""
from rlgraph.spaces.bool_box import BoolBox
from rlgraph.spaces.box_space import BoxSpace
from rlgraph.spaces.containers import ContainerSpace, Dict, Tuple
from rlgraph.spaces.float_box import FloatBox
from rlgraph.spaces.int_box import IntBox
from rlgraph.spaces.space import Space
from rlgraph.spaces.text_box import TextBox
from rlgraph.spaces.space_utils import (check_space_equivalence, get_list_registry, get_space_from_op,
                                        sanity_check_space, space_from_gym, space_to_gym)

# Names usable as "type" in space specs (matched case- and punctuation-insensitively:
# "float-box", "FloatBox" and "float_box" are the same), plus python types.
Space.__lookup_classes__ = {
    "bool-box": BoolBox, "bool": BoolBox, bool: BoolBox,
    "int-box": IntBox, "int": IntBox, int: IntBox,
    "float-box": FloatBox, "float": FloatBox, float: FloatBox,
    "text-box": TextBox, "text": TextBox, "str": TextBox, str: TextBox,
    "dict": Dict, dict: Dict,
    "tuple": Tuple, "list": Tuple, tuple: Tuple, list: Tuple,
}

__all__ = ["Space", "BoxSpace", "IntBox", "FloatBox", "BoolBox", "TextBox", "ContainerSpace", "Dict", "Tuple",
           "check_space_equivalence", "get_list_registry", "get_space_from_op", "sanity_check_space",
           "space_from_gym", "space_to_gym"]
