"""Nested data (dicts, tuples, lists of arrays or tensors): dm-tree wrappers and auto-keys.

Auto-keys name each leaf of a nested structure by its path, exactly as `Space.flatten` names
the leaves of a container space: a dict key "a" adds "/a", a tuple index i adds "/_T{i}_".
`{"a": (x, {"b": y})}` flattens to `{"/a/_T0_": x, "/a/_T1_/b": y}`; a bare leaf to `{"": x}`.
Dict keys are visited in sorted order (as dm-tree and Dict spaces do). A dict key must be a
non-empty string without "/" that is not itself a tuple segment ("_T0_" would read back as a
tuple position): see `is_valid_dict_key`. Empty dicts and tuples have no leaves, so they leave
no trace in a flat dict; `Space.unflatten` rebuilds them from the space's own structure.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from typing import Any, Callable, Iterable, Mapping

import numpy as np
import tree

FLAT_TUPLE_OPEN = "_T"
FLAT_TUPLE_CLOSE = "_"
_TUPLE_KEY = re.compile(r"^_T(\d+)_$")
DICT_KEY_RULE = "a non-empty string without '/' that is not of the form '_T<n>_'"

flatten = tree.flatten
map_structure = tree.map_structure
map_structure_with_path = tree.map_structure_with_path
assert_same_structure = tree.assert_same_structure
pack_sequence_as = tree.unflatten_as
is_nested = tree.is_nested


def is_valid_dict_key(key: Any) -> bool:
    """Whether `key` can name a dict entry in an auto-key (see `DICT_KEY_RULE`): "" would give an
    empty path segment, "/" would split it, "_T<n>_" would unflatten to a tuple position."""
    return isinstance(key, str) and key != "" and "/" not in key and _TUPLE_KEY.match(key) is None


def tuple_key(index: int) -> str:
    """The auto-key segment of tuple position `index`: 3 -> "_T3_"."""
    return f"{FLAT_TUPLE_OPEN}{index}{FLAT_TUPLE_CLOSE}"


def flatten_op(nested: Any, scope_separator_at_start: bool = True, separator: str = "/",
               mapping: Callable[[str, Any], Any] = None) -> "OrderedDict[str, Any]":
    """Flattens a nested dict/tuple structure into an OrderedDict auto-key -> leaf.

    Args:
        nested: The structure. Dicts (including Dict spaces) and tuples/lists are containers;
            everything else is a leaf.
        scope_separator_at_start: Whether keys start with the separator ("/a" vs "a").
        separator: The scope separator.
        mapping: Optional fn(key, leaf) -> value applied to every leaf.

    Returns:
        The flat OrderedDict in sorted-dict-key / tuple order.
    """
    out: "OrderedDict[str, Any]" = OrderedDict()
    _flatten_into(nested, "", out, separator, mapping)
    if not scope_separator_at_start:
        out = OrderedDict((k[len(separator):] if k.startswith(separator) else k, v) for k, v in out.items())
    return out


def _flatten_into(nested: Any, scope: str, out: dict, separator: str, mapping) -> None:
    if isinstance(nested, Mapping):
        for key in sorted(nested):
            _check_key(key)
            _flatten_into(nested[key], f"{scope}{separator}{key}", out, separator, mapping)
    elif isinstance(nested, (tuple, list)):
        for index, item in enumerate(nested):
            _flatten_into(item, f"{scope}{separator}{tuple_key(index)}", out, separator, mapping)
    else:
        out[scope] = mapping(scope, nested) if mapping is not None else nested


def _check_key(key: Any) -> None:
    if not is_valid_dict_key(key):
        from rlgraph.utils.rlgraph_errors import RLGraphError
        raise RLGraphError("dict key cannot be used in an auto-key", where="flatten_op", expected=DICT_KEY_RULE,
                           received=repr(key))


def unflatten_op(flat: Mapping[str, Any], separator: str = "/") -> Any:
    """Rebuilds the nested structure from an auto-key -> leaf mapping (inverse of `flatten_op`).

    Keys with "_T{i}_" segments become tuples; other segments become dict keys.
    """
    if list(flat.keys()) == [""]:
        return flat[""]
    root: dict = {}
    for key, value in flat.items():
        parts = [p for p in key.split(separator) if p != ""]
        node = root
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return _tuplify(root)


def _tuplify(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    converted = {k: _tuplify(v) for k, v in node.items()}
    if converted and all(_TUPLE_KEY.match(k) for k in converted):
        indices = sorted(converted, key=lambda k: int(_TUPLE_KEY.match(k).group(1)))
        return tuple(converted[k] for k in indices)
    return converted


def leaves(nested: Any) -> Iterable[Any]:
    """The leaves of `nested` in auto-key order."""
    return flatten_op(nested).values()


# Row helpers for the agents' hot paths: plain arrays skip the nesting machinery.
def add_batch_rank(nested: Any) -> Any:
    """`nested` with a leading batch axis of size 1 on every leaf."""
    if isinstance(nested, (dict, tuple)):
        return map_structure(lambda leaf: np.asarray(leaf)[None], nested)
    return np.asarray(nested)[None]


def batch_row(nested: Any, i: int) -> Any:
    """Row `i` of every leaf of a batched structure."""
    if isinstance(nested, (dict, tuple)):
        return map_structure(lambda leaf: leaf[i], nested)
    return nested[i]


def first_row(nested: Any) -> Any:
    """Row 0 of every leaf (a single item out of a batch of one)."""
    return batch_row(nested, 0)

