"""The tracer: what API methods and graph functions do while the build runs.

API calls register the spaces of their arguments with the callee (which may make it
input-complete, so that it creates its variables right away). Graph-function calls run the
function on trace data once their component is ready, else they defer: with a declared
`returns` count they hand back pending records, otherwise the whole root API method is
retried in the next build pass.
"""
from __future__ import annotations

from time import perf_counter
from typing import Any, List, Optional, Set, Tuple

from rlgraph.graphs.op_records import DataOpRecord, PendingInput, PendingRecord, space_of, unpack_records
from rlgraph.utils.decorators import ApiInfo, GraphFnInfo
from rlgraph.utils.ops import run_graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphError


class Deferred(Exception):
    """Internal: a graph function could not run yet; the root API method is retried next pass."""


class Tracer:
    """One build pass. `builder` completes components (`complete_component`)."""

    def __init__(self, builder, trace_backend, call_edges: Optional[set] = None):
        self.builder = builder
        self.trace = trace_backend
        self.backend_time = 0.0
        self.deferred: List[Tuple[str, str, str]] = []  # (component scope, graph_fn, reason)
        # Call edges between nodes (global scope, API name) / (global scope, graph_fn name, True), added
        # to `call_edges` if given; `edges` names them as the visualizations do.
        self._edges: Set[tuple] = set() if call_edges is None else call_edges
        self._stack: List[tuple] = []

    @property
    def edges(self) -> Set[Tuple[str, str]]:
        """(caller, callee) node ids: "<global scope>.<API>" or "<global scope>.<graph_fn>()"."""
        return edge_names(self._edges)

    # --- API methods -----------------------------------------------------------------------------
    def call_api(self, component, info: ApiInfo, args: tuple, kwargs: dict) -> Any:
        if kwargs:
            pairs = bind_api_args(component, info, args, kwargs).items()
        else:
            # (The usual call: positional arguments only, whose names depend only on their count.)
            keys = info.call_keys.get(len(args))
            pairs = zip(keys if keys is not None else _positional_keys(component, info, args), args)
        _register_inputs(component, info.name, pairs)
        node = (component.global_scope, info.name)
        stack = self._stack
        if stack:
            self._edges.add((stack[-1], node))
        if not component.input_complete and component.check_input_completeness():
            self.builder.complete_component(component)
        stack.append(node)
        try:
            return info.func(component, *args, **kwargs)
        finally:
            stack.pop()

    # --- Graph functions -------------------------------------------------------------------------
    def call_graph_fn(self, component, info: GraphFnInfo, args: tuple, kwargs: dict) -> Any:
        leaves: list = []
        try:
            values = []
            for arg in args:
                if type(arg) is DataOpRecord:
                    leaves.append(arg)
                    values.append(arg.value)
                else:
                    values.append(unpack_records(arg, leaves))
            kw_values = {k: unpack_records(v, leaves) for k, v in kwargs.items()} if kwargs else {}
        except PendingInput:
            reason = "some of its inputs are not computed yet"
        else:
            ready = component.variables_created and not info.requires_variable_completeness
            reason = None if ready else self._not_ready(component, info)
        if self._stack:
            self._edges.add((self._stack[-1], (component.global_scope, info.name, True)))
        if reason is not None:
            self.deferred.append((component.global_scope, info.name, reason))
            if info.returns:
                pending = PendingRecord(reason)
                return pending if info.returns == 1 else tuple(pending for _ in range(info.returns))
            raise Deferred(reason)
        start = perf_counter()
        try:
            output = run_graph_fn(info, component, values, kw_values)
        except RLGraphError:
            raise
        except Exception as error:
            raise RLGraphError(f"graph function '{info.name}' failed while building ({type(error).__name__}: "
                               f"{error})", where=component.global_scope,
                               received=_describe_inputs(info, args, kwargs)) from error
        finally:
            self.backend_time += perf_counter() - start
        return self.trace.wrap_output(output, leaves)

    def _not_ready(self, component, info: GraphFnInfo):
        """Why a graph function whose inputs are all computed cannot run yet (None: it can)."""
        if not component.variables_created:
            missing = component.missing_input_spaces()
            text = "; ".join(f"{api}({', '.join(a)})" for api, a in sorted(missing.items()))
            return f"its component is not input-complete (missing spaces: {text})"
        if info.requires_variable_completeness and not component.check_variable_completeness():
            waiting = [c.global_scope for c in component.get_all_sub_components() if not c.variables_created]
            return f"it requires variable-completeness; still without variables: {', '.join(waiting)}"
        return None


def edge_names(edges: Set[tuple]) -> Set[Tuple[str, str]]:
    """Names the raw call edges of `Tracer`: (caller, callee) node ids as the visualizations use them."""
    names: dict = {}
    for caller, callee in edges:
        for node in (caller, callee):
            if node not in names:
                names[node] = f"{node[0]}.{node[1]}" + ("()" if len(node) > 2 else "")
    return {(names[caller], names[callee]) for caller, callee in edges}


def _register_inputs(component, api_name: str, pairs) -> None:
    """Registers the spaces of (argument name, value) `pairs` with `component`."""
    plain = _PLAIN_REGISTER.get(type(component))
    if plain is None:
        plain = _plain_register(type(component))
    for name, value in pairs:
        if type(value) is not DataOpRecord:
            space = space_of(value)
        elif not value.shared:
            space = value._space  # (What `value.space` returns.)
            if plain and component.api_method_inputs.get(name) is space:
                continue  # Registered already (the same record passed on to this component again).
        elif plain:
            # The same shared space as registered last time, with nothing stored since: registering it
            # again would change nothing. (Else the record gets its own copy, which is registered.)
            seen = component.shared_input_spaces.get(name)
            if seen is not None and seen[0] is value._space and component.api_method_inputs.get(name) is seen[1]:
                continue
            shared = value._space
            component.register_input_space(name, value.space, api_name)
            component.shared_input_spaces[name] = (shared, component.api_method_inputs.get(name))
            continue
        else:
            space = value.space
        if space is not None:
            component.register_input_space(name, space, api_name)


def _plain_register(cls: type) -> bool:
    """Whether components of `cls` use `Component.register_input_space` as it is (no override)."""
    from rlgraph.components.component import Component
    plain = _PLAIN_REGISTER[cls] = cls.register_input_space is Component.register_input_space
    return plain


_PLAIN_REGISTER: dict = {}


def bind_api_args(component, info: ApiInfo, args: tuple, kwargs: dict) -> dict:
    """Maps call arguments to parameter names ("name[i]" for `*args` items)."""
    names = info.arg_names
    if len(args) <= len(names):
        bound = dict(zip(names, args))
    elif info.var_positional is None:
        raise RLGraphError(f"too many positional arguments for API method '{info.name}'",
                           where=f"{component.global_scope}.{info.name}",
                           expected=f"at most {len(names)} ({', '.join(names)})", received=len(args))
    else:
        bound = dict(zip(names, args))
        for i in range(len(names), len(args)):
            bound[f"{info.var_positional}[{i - len(names)}]"] = args[i]
    for key, value in kwargs.items():
        if key in bound:
            raise RLGraphError(f"argument '{key}' given twice", where=f"{component.global_scope}.{info.name}")
        bound[key] = value
    for name in info.required:
        if name not in bound:
            missing = [n for n in info.required if n not in bound]
            raise RLGraphError(f"API method '{info.name}' called without required argument(s) {missing}",
                               where=f"{component.global_scope}.{info.name}",
                               expected=f"arguments ({', '.join(names)})")
    return bound


def _positional_keys(component, info: ApiInfo, args: tuple) -> tuple:
    """The parameter names of a call with positional `args` only (cached in `info.call_keys` by count).

    Raises:
        RLGraphError: If the arguments do not bind (see `bind_api_args`).
    """
    keys = info.call_keys[len(args)] = tuple(bind_api_args(component, info, args, {}))
    return keys


def _describe_inputs(info: GraphFnInfo, args: tuple, kwargs: dict) -> str:
    names = list(info.arg_names) + [f"args[{i}]" for i in range(len(args) - len(info.arg_names))]
    parts = [f"{n}: {space_of(a)}" for n, a in zip(names, args)]
    parts += [f"{k}: {space_of(v)}" for k, v in kwargs.items()]
    return "inputs " + (", ".join(parts) if parts else "(none)")
