"""API methods and graph functions of components: the class registry, instance-level APIs,
exposed child APIs, pickling of instance-level wrappers, and which argument spaces a component
needs (a mixin of `Component`)."""
from __future__ import annotations

import types
from typing import TYPE_CHECKING, Any, Dict, Iterable, List

from rlgraph.components.api_aliases import install_aliases, resolve_api_name
from rlgraph.utils.decorators import ApiInfo, GraphFnInfo, api_wrapper, graph_fn_wrapper, make_api_info
from rlgraph.utils.rlgraph_errors import RLGraphError
from rlgraph.utils.specifiable import closest_match

if TYPE_CHECKING:
    from rlgraph.components.component import Component

# Class object -> {api name: (ApiInfo, wrapper)} / {graph_fn name: GraphFnInfo}, own methods only.
_CLASS_APIS: Dict[type, Dict[str, tuple]] = {}
_CLASS_GRAPH_FNS: Dict[type, Dict[str, GraphFnInfo]] = {}


class ComponentApisMixin:
    """API and graph-function registration of `Component` (`api_methods`, `graph_fns`)."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        apis, graph_fns = {}, {}
        for attr, value in list(cls.__dict__.items()):
            info = getattr(value, "rlgraph_api", None)
            if isinstance(info, ApiInfo):
                apis[info.name] = (info, value)
                if info.name != attr:
                    setattr(cls, info.name, value)  # `_graph_fn_x` thin-wrapped as API `x`.
            gf = getattr(value, "rlgraph_graph_fn", None)
            if isinstance(gf, GraphFnInfo):
                graph_fns[gf.name] = gf
        install_aliases(cls, apis, graph_fns)  # E.g. a layer's `call` / `_graph_fn_call` become `apply`.
        _CLASS_APIS[cls] = apis
        _CLASS_GRAPH_FNS[cls] = graph_fns

    def register_api(self, info: ApiInfo, wrapper, ok_to_overwrite: bool = False) -> None:
        """Defines an API method on this instance only (`rlgraph_api(component=self)`)."""
        if info.name in self.api_methods and not ok_to_overwrite and info.name in self.__dict__:
            raise RLGraphError(f"API method '{info.name}' is already defined", where=self.global_scope,
                               hint="pass ok_to_overwrite=True to replace it.")
        if info.name in self.__dict__.get("switched_off_apis", ()):
            setattr(self, info.name, SwitchedOffApi(self, info.name))  # Not built (see `switch_off_apis`).
            return
        self.api_methods[info.name] = info
        setattr(self, info.name, types.MethodType(wrapper, self))
        if info.graph_fn is not None:
            self.graph_fns[info.graph_fn.name] = info.graph_fn

    def register_graph_fn(self, info: GraphFnInfo, bound) -> None:
        """Defines a graph function on this instance only (`graph_fn(component=self)`)."""
        self.graph_fns[info.name] = info
        setattr(self, info.name, bound)

    def _expose_api(self, child: "Component", name: str) -> None:
        child_name = resolve_api_name(child, name)  # (Exposed under the name asked for.)
        if child_name not in child.api_methods:
            raise RLGraphError(f"cannot expose unknown API method '{name}'", where=child.global_scope,
                               expected=sorted(child.api_methods))
        child_info = child.api_methods[child_name]
        info = make_api_info(child_info.func, name, child_info.must_be_complete, child_info.returns,
                             child_info.no_grad)
        info.func = _ExposedApi(child, child_name)
        self.register_api(info, api_wrapper(info), ok_to_overwrite=True)

    def switch_off_apis(self, names: Iterable[str]) -> None:
        """Leaves the API methods `names` (aliases allowed) out of the build: they do not count for
        input-completeness, the root does not offer them, and calling one raises an `RLGraphError`
        (the original's `switched_off_apis` constructor argument calls this)."""
        names = [names] if isinstance(names, str) else list(names or ())
        bad = [n for n in names if not isinstance(n, str)]
        if bad:
            raise RLGraphError("switched_off_apis must be API method names",
                               where=f"{self.global_scope}(switched_off_apis)", received=repr(bad))
        self.switched_off_apis = frozenset(resolve_api_name(self, n) for n in names) | \
            self.__dict__.get("switched_off_apis", frozenset())
        for name in self.switched_off_apis:
            if self.api_methods.pop(name, None) is not None:
                setattr(self, name, SwitchedOffApi(self, name))

    def check_switched_off_apis(self) -> None:
        """Raises an `RLGraphError` for a name in `switched_off_apis` that is no API method (called at build)."""
        unknown = sorted(n for n in self.__dict__.get("switched_off_apis", ())
                         if not isinstance(self.__dict__.get(n), SwitchedOffApi))
        if unknown:
            guess = closest_match(unknown[0], list(self.api_methods))
            raise RLGraphError(f"switched_off_apis names unknown API method(s) {unknown}",
                               where=f"{self.global_scope}(switched_off_apis)", expected=sorted(self.api_methods),
                               hint=f"did you mean '{guess}'?" if guess else None)

    def get_number_of_allowed_inputs(self, api_method_name: str) -> tuple:
        """(min, max) number of positional arguments of an API method; max None for `*args`."""
        info = self.api_methods[resolve_api_name(self, api_method_name)]
        return len(info.required), None if info.var_positional else len(info.arg_names)

    # --- Pickling ---------------------------------------------------------------------------------
    def __getstate__(self) -> dict:
        # Class-level API methods come back from the class registry; instance-level ones are
        # re-bound in __setstate__ (bound wrappers themselves do not pickle).
        state = self.__dict__.copy()
        apis, graph_fns = class_apis(type(self)), class_graph_fns(type(self))
        state["api_methods"] = {k: v for k, v in self.api_methods.items() if apis.get(k, (None,))[0] is not v}
        state["graph_fns"] = {k: v for k, v in self.graph_fns.items() if graph_fns.get(k) is not v}
        for name in list(state["api_methods"]) + list(state["graph_fns"]):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        instance_apis, instance_graph_fns = self.api_methods, self.graph_fns
        self.api_methods = {n: info for n, (info, _) in class_apis(type(self)).items()
                            if n not in self.__dict__.get("switched_off_apis", ())}
        self.graph_fns = dict(class_graph_fns(type(self)))
        for info in instance_graph_fns.values():
            self.register_graph_fn(info, types.MethodType(graph_fn_wrapper(info), self))
        for info in instance_apis.values():
            self.register_api(info, api_wrapper(info), ok_to_overwrite=True)


class SwitchedOffApi:
    """Stands in for an API method that `switched_off_apis` left out of the build (picklable)."""

    def __init__(self, component: Any, name: str):
        self.component, self.name = component, name

    def __call__(self, *args, **kwargs):
        raise RLGraphError(f"API method '{self.name}' is switched off",
                           where=f"{self.component.global_scope}.{self.name}", hint=f"remove '{self.name}' from the component's switched_off_apis to build and call it.")


class _ExposedApi:
    """The body of an API method that forwards to a sub-component's API method (picklable)."""

    def __init__(self, child: Any, name: str):
        self.child, self.name = child, name

    def __call__(self, component, *args, **kwargs):
        return getattr(self.child, self.name)(*args, **kwargs)


def missing_input_spaces(component: Any, spaces: Dict[str, Any],
                         action_space: Any = None) -> Dict[str, List[str]]:
    """API method (or "input_spaces_needed") -> the names of the arguments `component` needs whose
    space is not in `spaces` (see `Component.input_spaces_needed`)."""
    declared = component.input_spaces_needed
    if declared is not None:
        lacking = [n for n in declared if spaces.get(n) is None and not (
            n == "action_space" and (getattr(component, "action_space", None) is not None or action_space is not None))]
        return {"input_spaces_needed": lacking} if lacking else {}
    missing = {}
    for name, info in component.api_methods.items():
        if not info.must_be_complete:
            continue
        lacking = [a for a in info.required if spaces.get(a) is None]
        # An API method taking only `*args` needs at least its first item.
        if info.var_positional and not info.arg_names and spaces.get(f"{info.var_positional}[0]") is None:
            lacking.append(f"{info.var_positional}[0]")
        if lacking:
            missing[name] = lacking
    return missing


def class_apis(cls: type) -> Dict[str, tuple]:
    merged: Dict[str, tuple] = {}
    for klass in reversed(cls.__mro__):
        merged.update(_CLASS_APIS.get(klass, {}))
    return merged


def class_graph_fns(cls: type) -> Dict[str, GraphFnInfo]:
    merged: Dict[str, GraphFnInfo] = {}
    for klass in reversed(cls.__mro__):
        merged.update(_CLASS_GRAPH_FNS.get(klass, {}))
    return merged
