"""The build: from a root component and its input spaces to created variables and known spaces.

Passes repeat until every root API method traced through: each pass calls every remaining root
API method with records carrying the root's input spaces (see `tracer.py`). Components become
input-complete as spaces arrive, then run `check_input_spaces` and `create_variables`. A pass
that makes no progress ends the build with an `RLGraphInputIncompleteError` naming every stuck
component, API method and argument.
"""
from __future__ import annotations

import time
from typing import Any, Dict, Optional

from rlgraph.backend_system import backend_scope, normalize_backend
from rlgraph.components.component_variables import restore_initial_values, row_write_log
from rlgraph.graphs.build_diagnostics import check_root_input_spaces, expand_var_positional, incomplete_error
from rlgraph.graphs.op_records import has_pending
from rlgraph.graphs.trace_data import TRACE_BATCH_SIZE, TRACE_TIME_SIZE, TraceBackend
from rlgraph.graphs.tracer import Deferred, Tracer, edge_names
from rlgraph.spaces import Space
from rlgraph.utils.decorators import tracing
from rlgraph.utils.rlgraph_errors import RLGraphError
from rlgraph.utils.specifiable import Specifiable

MAX_PASSES = 100


class BuildStats(dict):
    """Build figures (seconds): total_build_time, backend_time, build_overhead, passes,
    variable_count, component_count; executors add their own (e.g. function tracing)."""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class GraphBuilder(Specifiable):
    """Builds a root component for one backend.

    Args:
        action_space: Passed to every component's `check_input_spaces` / `create_variables`.
        summary_spec: {"summary_regexp": ...} applied to components without their own.
        trace_batch_size: Rows of every batch rank in the trace data (see `trace_data.py`).
        trace_time_size: Steps of every time rank in the trace data.
    """

    def __init__(self, action_space: Any = None, summary_spec: Optional[dict] = None,
                 trace_batch_size: int = TRACE_BATCH_SIZE, trace_time_size: int = TRACE_TIME_SIZE):
        self.action_space = Space.from_spec(action_space) if action_space is not None else None
        self.summary_regexp = (summary_spec or {}).get("summary_regexp")
        self.trace_batch_size = trace_batch_size
        self.trace_time_size = trace_time_size
        self.root_component = None
        self.input_spaces: Dict[str, Space] = {}
        self.api_signatures: Dict[str, list] = {}
        self._call_edges: set = set()  # Raw call edges of the trace (see `Tracer`).
        self._edge_names: Optional[tuple] = None  # (len(_call_edges), edges) last named.
        self.stats = BuildStats()
        self._backend_time = 0.0

    @property
    def edges(self) -> set:
        """The traced calls: (caller, callee) node ids, "<global scope>.<API>" / "<global scope>.<graph_fn>()"."""
        if self._edge_names is None or self._edge_names[0] != len(self._call_edges):
            self._edge_names = (len(self._call_edges), edge_names(self._call_edges))
        return self._edge_names[1]

    def build(self, root_component, input_spaces: Optional[Dict[str, Any]], backend: str) -> BuildStats:
        """Builds `root_component`; returns the build statistics.

        Raises:
            RLGraphInputIncompleteError: Some component never received all its input spaces.
            RLGraphSpaceError: An argument received non-equivalent spaces in two calls, or a
                component's `check_input_spaces` rejected its spaces.
        """
        start = time.perf_counter()
        backend = normalize_backend(backend)
        if root_component.parent_component is not None:
            raise RLGraphError("the root component must not have a parent", where=root_component.global_scope)
        if root_component.variables_created:
            raise RLGraphError("this component has been built already", where=root_component.global_scope,
                               hint="build a copy: component.copy().")
        self.root_component = root_component
        self.input_spaces = {k: Space.from_spec(v) for k, v in
                             expand_var_positional(root_component, dict(input_spaces or {})).items()}
        self.api_signatures = check_root_input_spaces(root_component, self.input_spaces)
        trace = TraceBackend(backend, self.trace_batch_size, self.trace_time_size)
        components = root_component.get_all_sub_components()
        self._backend_time = 0.0
        with backend_scope(backend), row_write_log() as row_writes:
            passes = self._run_passes(root_component, components, trace)
            restore_initial_values(components, row_writes)
            for component in components:
                component.check_variable_completeness()
        total = time.perf_counter() - start
        variables = root_component.variable_registry
        self.stats = BuildStats(total_build_time=total, backend_time=self._backend_time,
                                build_overhead=total - self._backend_time, passes=passes,
                                variable_count=len(variables), component_count=len(components))
        return self.stats

    def _run_passes(self, root, components, trace) -> int:
        remaining = list(self.api_signatures)
        before = _progress(components, remaining)
        self._complete_ready(components)
        for number in range(1, MAX_PASSES + 1):
            tracer = Tracer(self, trace, self._call_edges)
            tracing.tracer = tracer
            try:
                for api in list(remaining):
                    if self._trace_api(root, api, trace):
                        remaining.remove(api)
            finally:
                tracing.tracer = None
                self._backend_time += tracer.backend_time
            self._complete_ready(components)  # (Also readies the next pass: nothing changes in between.)
            if not remaining and all(c.input_complete for c in components):
                return number
            after = _progress(components, remaining)
            if after == before:
                raise incomplete_error(root, components, remaining, tracer.deferred)
            before = after
        raise RLGraphError(f"the build did not finish in {MAX_PASSES} passes", where=root.global_scope)

    def _trace_api(self, root, api: str, trace: TraceBackend) -> bool:
        args = [trace.zero_records(space) for _, space in self.api_signatures[api]]
        try:
            output = getattr(root, api)(*args)
        except Deferred:
            return False
        return not has_pending(output)

    def _complete_ready(self, components) -> None:
        for component in components:
            if not component.variables_created and component.check_input_completeness():
                self.complete_component(component)

    def complete_component(self, component) -> None:
        """Runs `when_input_complete` on an input-complete component (once)."""
        if component.variables_created:
            return
        start = time.perf_counter()
        regexp = component.summary_regexp if component.summary_regexp is not None else self.summary_regexp
        try:
            component.when_input_complete(None, self.action_space, summary_regexp=regexp)
        except AssertionError as error:
            raise RLGraphError(f"check_input_spaces rejected the input spaces ({error})",
                               where=component.global_scope,
                               received={k: v for k, v in component.api_method_inputs.items()}) from error
        finally:
            self._backend_time += time.perf_counter() - start


def _progress(components, remaining) -> tuple:
    known = sum(1 for c in components for v in c.api_method_inputs.values() if v is not None)
    created = sum(1 for c in components if c.variables_created)
    return known, created, len(remaining)
