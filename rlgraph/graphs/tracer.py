"""The tracer: what API methods and graph functions do while the build runs.

API calls register the spaces of their arguments with the callee (which may make it
input-complete, so that it creates its variables right away). Graph-function calls run the
function on trace data once their component is ready, else they defer: with a declared
`returns` count they hand back pending records, otherwise the whole root API method is
retried in the next build pass.
"""
from __future__ import annotations

import time
from typing import Any, List, Set, Tuple

from rlgraph.graphs.op_records import PendingRecord, has_pending, space_of, values_of
from rlgraph.utils.decorators import ApiInfo, GraphFnInfo
from rlgraph.utils.ops import run_graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphError


class Deferred(Exception):
    """Internal: a graph function could not run yet; the root API method is retried next pass."""


class Tracer:
    """One build pass. `builder` completes components (`complete_component`)."""

    def __init__(self, builder, trace_backend):
        self.builder = builder
        self.trace = trace_backend
        self.backend_time = 0.0
        self.deferred: List[Tuple[str, str, str]] = []  # (component scope, graph_fn, reason)
        self.edges: Set[Tuple[str, str]] = set()
        self._stack: List[str] = []

    # --- API methods -----------------------------------------------------------------------------
    def call_api(self, component, info: ApiInfo, args: tuple, kwargs: dict) -> Any:
        bound = bind_api_args(component, info, args, kwargs)
        for name, value in bound.items():
            space = space_of(value)
            if space is not None:
                component.register_input_space(name, space, info.name)
        node = f"{component.global_scope}.{info.name}"
        if self._stack:
            self.edges.add((self._stack[-1], node))
        if not component.input_complete and component.check_input_completeness():
            self.builder.complete_component(component)
        self._stack.append(node)
        try:
            return info.func(component, *args, **kwargs)
        finally:
            self._stack.pop()

    # --- Graph functions -------------------------------------------------------------------------
    def call_graph_fn(self, component, info: GraphFnInfo, args: tuple, kwargs: dict) -> Any:
        reason = self._not_ready(component, info, args, kwargs)
        if self._stack:
            self.edges.add((self._stack[-1], f"{component.global_scope}.{info.name}()"))
        if reason is not None:
            self.deferred.append((component.global_scope, info.name, reason))
            if info.returns:
                pending = PendingRecord(reason)
                return pending if info.returns == 1 else tuple(pending for _ in range(info.returns))
            raise Deferred(reason)
        values = values_of(args)
        kw_values = {k: values_of(v) for k, v in kwargs.items()}
        start = time.perf_counter()
        try:
            output = run_graph_fn(info, component, values, kw_values)
        except RLGraphError:
            raise
        except Exception as error:
            raise RLGraphError(f"graph function '{info.name}' failed while building ({type(error).__name__}: "
                               f"{error})", where=component.global_scope,
                               received=_describe_inputs(info, args, kwargs)) from error
        finally:
            self.backend_time += time.perf_counter() - start
        return self.trace.to_records(output, [args, kwargs])

    def _not_ready(self, component, info: GraphFnInfo, args: tuple, kwargs: dict):
        if has_pending(args) or has_pending(kwargs):
            return "some of its inputs are not computed yet"
        if not component.variables_created:
            missing = component.missing_input_spaces()
            text = "; ".join(f"{api}({', '.join(a)})" for api, a in sorted(missing.items()))
            return f"its component is not input-complete (missing spaces: {text})"
        if info.requires_variable_completeness and not component.check_variable_completeness():
            waiting = [c.global_scope for c in component.get_all_sub_components() if not c.variables_created]
            return f"it requires variable-completeness; still without variables: {', '.join(waiting)}"
        return None


def bind_api_args(component, info: ApiInfo, args: tuple, kwargs: dict) -> dict:
    """Maps call arguments to parameter names ("name[i]" for `*args` items)."""
    where = f"{component.global_scope}.{info.name}"
    bound = {}
    names = info.arg_names
    if len(args) > len(names) and info.var_positional is None:
        raise RLGraphError(f"too many positional arguments for API method '{info.name}'", where=where,
                           expected=f"at most {len(names)} ({', '.join(names)})", received=len(args))
    for i, value in enumerate(args):
        key = names[i] if i < len(names) else f"{info.var_positional}[{i - len(names)}]"
        bound[key] = value
    for key, value in kwargs.items():
        if key in bound:
            raise RLGraphError(f"argument '{key}' given twice", where=where)
        bound[key] = value
    missing = [n for n in info.required if n not in bound]
    if missing:
        raise RLGraphError(f"API method '{info.name}' called without required argument(s) {missing}",
                           where=where, expected=f"arguments ({', '.join(names)})")
    return bound


def _describe_inputs(info: GraphFnInfo, args: tuple, kwargs: dict) -> str:
    names = list(info.arg_names) + [f"args[{i}]" for i in range(len(args) - len(info.arg_names))]
    parts = [f"{n}: {space_of(a)}" for n, a in zip(names, args)]
    parts += [f"{k}: {space_of(v)}" for k, v in kwargs.items()]
    return "inputs " + (", ".join(parts) if parts else "(none)")
