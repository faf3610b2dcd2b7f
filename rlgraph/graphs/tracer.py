"""The tracer: what API methods and graph functions do while the build runs.

API calls register the spaces of their arguments with the builder (which may make the callee
input-complete, so that it creates its variables right away). Graph-function calls run the
function twice on trace data (see `trace_data.py`) once their component is ready, else they
defer: with a declared `returns` count they hand back pending records, otherwise the whole root
API method is retried in the next build pass. Each outermost graph-function call of a root API
method that traces through becomes a step of its call plan (`plans.py`).
"""
from __future__ import annotations

from time import perf_counter
from typing import Any, List, Optional, Set, Tuple

from rlgraph.graphs.op_records import DataOpRecord, PendingInput, PendingRecord, space_of, unpack_records
from rlgraph.graphs.placement import placed_body, run_graph_fn_body, step_body
from rlgraph.graphs.plans import PlanBuilder
from rlgraph.spaces import Space
from rlgraph.spaces.containers import ContainerSpace
from rlgraph.utils.decorators import ApiInfo, GraphFnInfo
from rlgraph.utils.rlgraph_errors import RLGraphBuildError, RLGraphError, RLGraphSpaceError


class Deferred(Exception):
    """Internal: a graph function could not run yet; the root API method is retried next pass."""


class Tracer:
    """One build pass. `builder` holds the build states and completes components."""

    def __init__(self, builder, trace_backend, call_edges: Set[tuple]):
        self.builder = builder
        self.trace = trace_backend
        self.backend_time = 0.0
        self.deferred: List[Tuple[str, str, str]] = []  # (component scope, graph_fn, reason)
        # Call edges between nodes (global scope, API name) / (global scope, graph_fn name, True).
        self._edges = call_edges
        self._stack: List[tuple] = []  # (node, component, API name, bound arguments) of the API calls in progress
        self._depth = 0  # > 0 while a graph function runs: calls it makes run directly
        self.plan: Optional[PlanBuilder] = None
        self.traced_through = True  # False once a graph function of the current root API call deferred

    def begin(self, where: str, inputs: list) -> None:
        """Starts tracing one root API call with argument records `inputs`."""
        self.plan = PlanBuilder(where, inputs)
        self.traced_through = True

    # --- API methods -----------------------------------------------------------------------------
    def call_api(self, component, info: ApiInfo, args: tuple, kwargs: dict) -> Any:
        if self._depth:
            return info.func(component, *args, **kwargs)
        bound = bind_api_args(component, info, args, kwargs)
        self.builder.register_inputs(component, info.name, bound)
        node = (component.global_scope, info.name)
        if self._stack:
            self._edges.add((self._stack[-1][0], node))
        self._stack.append((node, component, info.name, bound))
        try:
            return info.func(component, *args, **kwargs)
        finally:
            self._stack.pop()

    # --- Graph functions -------------------------------------------------------------------------
    def call_graph_fn(self, component, info: GraphFnInfo, args: tuple, kwargs: dict) -> Any:
        if self._depth:
            return run_graph_fn_body(info.body, component, args, kwargs)  # Part of the calling graph function.
        leaves: list = []
        try:
            values = unpack_records(args, leaves)
            kw_values = unpack_records(kwargs, leaves) if kwargs else {}
        except PendingInput:
            reason = "some of its inputs are not computed yet"
        else:
            reason = self.builder.not_ready(component, info)
        if self._stack:
            self._edges.add((self._stack[-1][0], (component.global_scope, info.name, True)))
        if reason is not None:
            self.deferred.append((component.global_scope, info.name, reason))
            self.traced_through = False
            if info.returns:
                pending = PendingRecord(reason)
                return pending if info.returns == 1 else tuple(pending for _ in range(info.returns))
            raise Deferred(reason)
        alt_values = unpack_records(args, [], "alt")
        alt_kw_values = unpack_records(kwargs, [], "alt") if kwargs else {}
        start = perf_counter()
        self._depth += 1
        try:
            body = placed_body(info.body, component)
            output = body(component, *values, **kw_values)
            alt_output = body(component, *alt_values, **alt_kw_values)
        except RLGraphError:
            raise
        except Exception as error:
            raise RLGraphError(f"graph function '{info.name}' failed while building ({type(error).__name__}: "
                               f"{error})", where=component.global_scope,
                               received=_describe_inputs(info, args, kwargs)) from error
        finally:
            self._depth -= 1
            self.backend_time += perf_counter() - start
        records = self.trace.wrap_output(output, alt_output, leaves)
        if info.output_space is not None:
            _declare(records, _declared_space(component, info, args, kwargs), component, info)
        self.plan.add_step(step_body(info.body, component), component, args, kwargs, records)
        return records

    def describe_value_use(self, record: DataOpRecord, operation: str) -> RLGraphBuildError:
        """The error for API code that used traced `record` in `operation` (see `op_records`)."""
        where, what = "an API method", "a traced value"
        if self._stack:
            _, component, api, bound = self._stack[-1]
            where = f"{component.global_scope}.{api}"
            arg = next((name for name, value in bound.items() if _contains(value, record)), None)
            if arg is not None:
                where, what = f"{where}({arg})", f"its argument '{arg}'"
            else:
                what = "a value computed by a graph function"
        return RLGraphBuildError(
            f"the API method takes a python decision on, or computes with, {what} (`{operation}`)", where=where,
            hint="API methods run once, at build time, on trace data, so such a decision would hold for every "
                 "later call. Move it into a graph function (@graph_fn), or make it a constructor argument.")


def _contains(value: Any, record: DataOpRecord) -> bool:
    if value is record:
        return True
    if isinstance(value, dict):
        return any(_contains(v, record) for v in value.values())
    if isinstance(value, (tuple, list)):
        return any(_contains(v, record) for v in value)
    return False


def _declared_space(component, info: GraphFnInfo, args: tuple, kwargs: dict) -> Any:
    declared = info.output_space
    if isinstance(declared, Space):
        return declared
    fn = getattr(component, declared) if isinstance(declared, str) else \
        (lambda *a, **k: declared(component, *a, **k))
    return fn(*[space_of(a) for a in args], **{k: space_of(v) for k, v in kwargs.items()})


def _declare(records: Any, space: Any, component, info: GraphFnInfo) -> None:
    """Gives the output `records` the declared `space` (nested alike), checking it fits."""
    where = f"{component.global_scope}.{info.name}"
    if space is None:
        return  # Not declared: the inferred space stays.
    if type(records) is DataOpRecord:
        if isinstance(space, ContainerSpace):
            raise RLGraphSpaceError(space, "the declared output space is a container, the output one value",
                                    where=where)
        _check_fits(records, space, where)
        records.space = space
    elif isinstance(records, dict):
        for key, value in records.items():
            _declare(value, space[key], component, info)
    elif isinstance(records, (tuple, list)):
        if len(space) != len(records):
            raise RLGraphSpaceError(None, "the declared output spaces do not match the outputs", where=where,
                                    expected=f"{len(records)} spaces", received=len(space))
        for value, child in zip(records, space):
            _declare(value, child, component, info)


def _check_fits(record: DataOpRecord, space: Any, where: str) -> None:
    shape = getattr(record.value, "shape", None)
    if space is None or shape is None or not hasattr(space, "get_shape"):
        return
    expected = space.get_shape(with_batch_rank=True, with_time_rank=True)
    if len(expected) != len(shape) or any(e is not None and e != int(s) for e, s in zip(expected, shape)):
        raise RLGraphSpaceError(space, "the graph function's output does not fit its declared output space",
                                where=where, expected=expected, received=tuple(int(s) for s in shape),
                                hint="fix the graph function's `output_space`.")


def edge_names(edges: Set[tuple]) -> Set[Tuple[str, str]]:
    """Names the raw call edges of `Tracer`: (caller, callee) node ids as the visualizations use them."""
    names: dict = {}
    for caller, callee in edges:
        for node in (caller, callee):
            if node not in names:
                names[node] = f"{node[0]}.{node[1]}" + ("()" if len(node) > 2 else "")
    return {(names[caller], names[callee]) for caller, callee in edges}


def bind_api_args(component, info: ApiInfo, args: tuple, kwargs: dict) -> dict:
    """Maps call arguments to parameter names ("name[i]" for `*args` items)."""
    names = info.arg_names
    if len(args) > len(names) and info.var_positional is None:
        raise RLGraphError(f"too many positional arguments for API method '{info.name}'",
                           where=f"{component.global_scope}.{info.name}",
                           expected=f"at most {len(names)} ({', '.join(names)})", received=len(args))
    bound = dict(zip(names, args))
    for i in range(len(names), len(args)):
        bound[f"{info.var_positional}[{i - len(names)}]"] = args[i]
    for key, value in kwargs.items():
        if key in bound:
            raise RLGraphError(f"argument '{key}' given twice", where=f"{component.global_scope}.{info.name}")
        bound[key] = value
    missing = [n for n in info.required if n not in bound]
    if missing:
        raise RLGraphError(f"API method '{info.name}' called without required argument(s) {missing}",
                           where=f"{component.global_scope}.{info.name}",
                           expected=f"arguments ({', '.join(names)})")
    return bound


def _describe_inputs(info: GraphFnInfo, args: tuple, kwargs: dict) -> str:
    names = list(info.arg_names) + [f"args[{i}]" for i in range(len(args) - len(info.arg_names))]
    parts = [f"{n}: {space_of(a)}" for n, a in zip(names, args)]
    parts += [f"{k}: {space_of(v)}" for k, v in kwargs.items()]
    return "inputs " + (", ".join(parts) if parts else "(none)")
