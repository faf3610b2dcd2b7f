"""Container handling for graph functions: `flatten_ops`, `split_ops`, auto-keys.

Backend-agnostic: containers are python dicts and tuples of tensors (or of anything else).
"""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict

from rlgraph.utils.nest import flatten_op, unflatten_op
from rlgraph.utils.rlgraph_errors import RLGraphError


class FlattenedDataOp(OrderedDict):
    """A container flattened to auto-key -> leaf ("/a/_T0_": x). Graph functions with
    `flatten_ops` receive these; returning one re-nests it."""


def is_container(value: Any) -> bool:
    return isinstance(value, (dict, tuple)) and not isinstance(value, FlattenedDataOp)


def flatten_container(value: Any) -> Any:
    """Flattens a dict/tuple into a `FlattenedDataOp`; other values are returned unchanged."""
    if isinstance(value, FlattenedDataOp) or not is_container(value):
        return value
    return FlattenedDataOp(flatten_op(value))


def unflatten_result(value: Any) -> Any:
    """Re-nests `FlattenedDataOp`s (also inside a tuple of results)."""
    if isinstance(value, FlattenedDataOp):
        return unflatten_op(value)
    if type(value) is tuple:
        return tuple(unflatten_result(v) for v in value)
    return value


def _wants(flag: Any, name: str) -> bool:
    return flag is True or (not isinstance(flag, bool) and name in flag)


def run_graph_fn(info, component, args: tuple, kwargs: Dict[str, Any]) -> Any:
    """Calls a graph function, applying its `flatten_ops` / `split_ops` / auto-key flags."""
    if not kwargs:
        for arg in args:
            if isinstance(arg, (dict, tuple)):
                break
        else:
            # No container input (the common case at run time): nothing to flatten or split.
            if not info.split_ops:
                return unflatten_result(info.func(component, *args))
            if info.add_auto_key_as_first_param:
                return info.func(component, "", *args)
            return info.func(component, *args)
    names = info.arg_names
    flag = info.flatten_ops
    if flag:
        args = tuple(flatten_container(a) if _wants(flag, names[i] if i < len(names) else "") else a
                     for i, a in enumerate(args))
        kwargs = {k: flatten_container(v) if _wants(flag, k) else v for k, v in kwargs.items()}
    if not info.split_ops:
        return unflatten_result(info.func(component, *args, **kwargs))
    return _split_call(info, component, args, kwargs)


def _split_call(info, component, args: tuple, kwargs: Dict[str, Any]) -> Any:
    flat = [a for a in list(args) + list(kwargs.values()) if isinstance(a, FlattenedDataOp)]
    where = f"graph_fn {type(component).__name__}.{info.name}"
    if not flat:
        keys = [""]
    else:
        keys = list(flat[0].keys())
        for other in flat[1:]:
            if list(other.keys()) != keys:
                raise RLGraphError("split_ops needs all container inputs to have the same structure", where=where,
                                   expected=f"keys {keys}", received=f"keys {list(other.keys())}")

    def pick(value, key):
        return value[key] if isinstance(value, FlattenedDataOp) else value

    results = []
    for key in keys:
        call_args = tuple(pick(a, key) for a in args)
        call_kwargs = {k: pick(v, key) for k, v in kwargs.items()}
        if info.add_auto_key_as_first_param:
            call_args = (key,) + call_args
        results.append(info.func(component, *call_args, **call_kwargs))
    if not flat:
        return results[0]
    if type(results[0]) is tuple:
        n = len(results[0])
        return tuple(unflatten_op(OrderedDict((k, r[i]) for k, r in zip(keys, results))) for i in range(n))
    return unflatten_op(OrderedDict(zip(keys, results)))
