"""Aliases of API methods: a second name under which a component class offers one of its API methods.

The original RLgraph named a layer's API method `call` (and its graph function `_graph_fn_call`);
rlgraph names it `apply`. A class declares the old name once, as data:

    class Layer(Component):
        call = ApiAlias("apply")

and then, for that class and all its subclasses:

- `layer.call(x)` is `layer.apply(x)` (the same bound API method, also for `apply` methods that
  an instance defines itself, like a Stack's chains);
- a subclass that defines `call` (with `@rlgraph_api`), or `_graph_fn_call` (with `@graph_fn` or
  `@rlgraph_api`), defines `apply` / `_graph_fn_apply`: the method is registered under the
  canonical name, so the build, call plans and executors only ever see `apply`;
- `resolve_api_name(component, "call")` gives "apply" (used by `ComponentTest.test(("call", x))`,
  `Stack(api_methods={"call"})`, `expose_apis`, `switched_off_apis`).

Nothing is resolved per call at run time: subclasses are rewritten once, when the class is created,
and executors map an alias to its API method once, after the build.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional

from rlgraph.utils.decorators import GRAPH_FN_PREFIX, ApiInfo, GraphFnInfo, api_wrapper, graph_fn_wrapper
from rlgraph.utils.rlgraph_errors import RLGraphError

# Class object -> {alias: canonical API name}, merged over the class's bases.
_CLASS_ALIASES: Dict[type, Dict[str, str]] = {}


class ApiAlias:
    """A class attribute naming another API method of the class: `call = ApiAlias("apply")`.

    Reading the attribute on an instance gives the target API method of that instance (its own
    instance-level method if it has one, else the class's, looked up from the class that holds
    this alias, so that `super().call(x)` in a subclass reaches the parent's `apply`).

    Args:
        target: The canonical API method name.
    """

    def __init__(self, target: str):
        self.target = target
        self.name: Optional[str] = None
        self.owner: Optional[type] = None

    def __set_name__(self, owner: type, name: str) -> None:
        self.owner, self.name = owner, name

    def __get__(self, instance: Any, owner: Optional[type] = None) -> Any:
        if instance is None:
            return self
        own = instance.__dict__.get(self.target)
        if own is not None:
            return own
        for klass in (self.owner or type(instance)).__mro__:
            if self.target in klass.__dict__:
                return klass.__dict__[self.target].__get__(instance, type(instance))
        raise AttributeError(f"'{type(instance).__name__}' object has no API method '{self.target}' "
                             f"(of which '{self.name}' is an alias)")

    def __repr__(self) -> str:
        return f"ApiAlias({self.target!r})"


def class_aliases(cls: type) -> Dict[str, str]:
    """{alias: canonical API name} of a component class."""
    return _CLASS_ALIASES.get(cls, {})


def resolve_api_name(component: Any, name: str) -> str:
    """The canonical API method name for `name` on `component` (`name` itself if it is no alias)."""
    if name in component.api_methods:
        return name
    return _CLASS_ALIASES.get(type(component), {}).get(name, name)


def install_aliases(cls: type, apis: Dict[str, tuple], graph_fns: Dict[str, GraphFnInfo]) -> None:
    """Called once per component class (from `__init_subclass__`): records the class's aliases and
    moves methods the class defines under an alias name to the canonical name.

    Args:
        cls: The new class.
        apis: The class's own {API name: (ApiInfo, wrapper)}; changed in place.
        graph_fns: The class's own {graph_fn name: GraphFnInfo}; changed in place.

    Raises:
        RLGraphError: If the class defines both an alias and its target.
    """
    aliases: Dict[str, str] = {}
    for base in reversed(cls.__mro__[1:]):
        aliases.update(_CLASS_ALIASES.get(base, {}))
    for attr, value in list(cls.__dict__.items()):
        if isinstance(value, ApiAlias) and not attr.startswith(GRAPH_FN_PREFIX):
            aliases[attr] = value.target
    if not aliases:
        return
    _CLASS_ALIASES[cls] = aliases
    for alias, target in aliases.items():
        _move_api(cls, apis, alias, target)
        _move_graph_fn(cls, graph_fns, GRAPH_FN_PREFIX + alias, GRAPH_FN_PREFIX + target)
        # Fresh aliases per class: they resolve from this class on (see `ApiAlias.__get__`).
        for name, canonical in ((alias, target), (GRAPH_FN_PREFIX + alias, GRAPH_FN_PREFIX + target)):
            descriptor = ApiAlias(canonical)
            descriptor.__set_name__(cls, name)
            setattr(cls, name, descriptor)


def _both_defined(cls: type, alias: str, target: str) -> RLGraphError:
    return RLGraphError(f"the class defines both '{alias}' and '{target}', but '{alias}' is an alias of '{target}'",
                        where=cls.__qualname__, hint=f"define only '{target}' (or only '{alias}').")


def _move_api(cls: type, apis: Dict[str, tuple], alias: str, target: str) -> None:
    """A method the class defines as `alias` (an API method, or an undecorated override) becomes `target`."""
    if alias in apis:
        info, _ = apis.pop(alias)
        if target in apis:
            raise _both_defined(cls, alias, target)
        renamed = _renamed_api(info, target)
        apis[target] = (renamed, _api_attribute(renamed))
        setattr(cls, target, apis[target][1])
        return
    own = cls.__dict__.get(alias)
    if own is None or isinstance(own, ApiAlias):
        return
    if target in cls.__dict__:
        raise _both_defined(cls, alias, target)
    setattr(cls, target, own)


def _move_graph_fn(cls: type, graph_fns: Dict[str, GraphFnInfo], alias: str, target: str) -> None:
    """`_graph_fn_<alias>` defined by the class becomes `_graph_fn_<target>`."""
    own = cls.__dict__.get(alias)
    if own is None or isinstance(own, ApiAlias):
        return
    if target in cls.__dict__:
        raise _both_defined(cls, alias, target)
    graph_fns.pop(alias, None)
    if isinstance(getattr(own, "rlgraph_api", None), ApiInfo):
        # `@rlgraph_api def _graph_fn_<alias>`: `_move_api` registered the renamed API method, whose
        # wrapper carries the renamed graph function.
        wrapper = cls.__dict__[target[len(GRAPH_FN_PREFIX):]]
        graph_fns[target] = wrapper.rlgraph_graph_fn
        setattr(cls, target, wrapper)
        return
    info = getattr(own, "rlgraph_graph_fn", None)
    if isinstance(info, GraphFnInfo):
        renamed = dataclasses.replace(info, name=target)
        graph_fns[target] = renamed
        setattr(cls, target, graph_fn_wrapper(renamed))
    else:
        setattr(cls, target, own)


def _renamed_api(info: ApiInfo, name: str) -> ApiInfo:
    """A copy of `info` registered as `name` (its thin-wrapped graph function renamed alike)."""
    if info.graph_fn is None:
        return dataclasses.replace(info, name=name)
    graph_fn = dataclasses.replace(info.graph_fn, name=GRAPH_FN_PREFIX + name)
    return dataclasses.replace(info, name=name, graph_fn=graph_fn, func=graph_fn_wrapper(graph_fn))


def _api_attribute(info: ApiInfo) -> Any:
    wrapper = api_wrapper(info)
    if info.graph_fn is not None:
        wrapper.rlgraph_graph_fn = info.graph_fn
    return wrapper
