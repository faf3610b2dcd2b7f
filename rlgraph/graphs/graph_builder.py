"""The build: from a root component and its input spaces to created variables, known spaces and
one call plan per root API method.

Passes repeat until every root API method traced through: each pass calls every remaining root
API method with records carrying the root's input spaces (see `tracer.py`). Components become
input-complete as spaces arrive (`build_state.py`), then run `check_input_spaces` and
`create_variables`. A pass that makes no progress ends the build with an
`RLGraphInputIncompleteError` naming every stuck component, API method and argument.
"""
from __future__ import annotations

import contextlib
import time
from typing import Any, Dict, Optional

from rlgraph.backend_system import backend_scope, normalize_backend
from rlgraph.components.component_variables import restore_initial_values
from rlgraph.graphs.build_diagnostics import check_root_input_spaces, expand_var_positional, incomplete_error
from rlgraph.graphs.build_state import BuildStates
from rlgraph.graphs.op_records import DataOpRecord, has_pending, space_of
from rlgraph.graphs.plans import CallPlan
from rlgraph.graphs.trace_data import TRACE_BATCH_SIZE, TRACE_TIME_SIZE, TraceBackend
from rlgraph.graphs.tracer import Deferred, Tracer, edge_names
from rlgraph.spaces import Space
from rlgraph.utils.decorators import GraphFnInfo, tracing
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
        trace_batch_size: Rows of every batch rank in the first trace run (see `trace_data.py`).
        trace_time_size: Steps of every time rank in the first trace run.

    After `build`: `plans` (root API name -> `CallPlan`), `api_signatures` (root API name ->
    [(argument, space)]), `stats`, `edges`.
    """

    def __init__(self, action_space: Any = None, summary_spec: Optional[dict] = None,
                 trace_batch_size: int = TRACE_BATCH_SIZE, trace_time_size: int = TRACE_TIME_SIZE):
        self.action_space = Space.from_spec(action_space) if action_space is not None else None
        self.summary_regexp = (summary_spec or {}).get("summary_regexp")
        if not (isinstance(trace_batch_size, int) and isinstance(trace_time_size, int)) or \
                min(trace_batch_size, trace_time_size) < 2 or trace_batch_size == trace_time_size:
            raise RLGraphError("invalid trace sizes", where="GraphBuilder(trace_batch_size, trace_time_size)",
                               expected="two different ints >= 2 (batch and time ranks must be told apart)",
                               received=(trace_batch_size, trace_time_size))
        self.trace_batch_size = trace_batch_size
        self.trace_time_size = trace_time_size
        self.root_component = None
        self.input_spaces: Dict[str, Space] = {}
        self.api_signatures: Dict[str, list] = {}
        self.plans: Dict[str, CallPlan] = {}
        self.states = BuildStates(self.action_space)
        self._call_edges: set = set()  # Raw call edges of the trace (see `Tracer`).
        self.stats = BuildStats()
        self._backend_time = 0.0

    @property
    def edges(self) -> set:
        """The traced calls: (caller, callee) node ids, "<global scope>.<API>" / "<global scope>.<graph_fn>()"."""
        return edge_names(self._call_edges)

    def build(self, root_component, input_spaces: Optional[Dict[str, Any]], backend: str) -> BuildStats:
        """Builds `root_component`; returns the build statistics.

        Raises:
            RLGraphInputIncompleteError: Some component never received all its input spaces.
            RLGraphSpaceError: An argument received non-equivalent spaces in two calls, or a
                component's `check_input_spaces` rejected its spaces.
            RLGraphBuildError: An API method took a python decision on a traced value.
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
        self.states = BuildStates(self.action_space)
        self.plans = {}
        alt = (self.trace_batch_size + 1, self.trace_time_size + 1)
        trace = TraceBackend(backend, self.trace_batch_size, self.trace_time_size, *alt)
        components = root_component.get_all_sub_components()
        self._backend_time = 0.0
        try:
            with backend_scope(backend):
                passes = self._run_passes(root_component, components, trace)
                restore_initial_values(components)
            for component in components:
                component.api_method_inputs = dict(self.states.of(component).spaces)
        finally:
            self.states = BuildStates(self.action_space)  # The build's bookkeeping ends with it.
        total = time.perf_counter() - start
        variables = root_component.variable_registry
        self.stats = BuildStats(total_build_time=total, backend_time=self._backend_time,
                                build_overhead=total - self._backend_time, passes=passes,
                                variable_count=len(variables), component_count=len(components))
        return self.stats

    def _run_passes(self, root, components, trace) -> int:
        remaining = list(self.api_signatures)
        before = self._progress(components, remaining)
        self._complete_ready(components)
        for number in range(1, MAX_PASSES + 1):
            tracer = Tracer(self, trace, self._call_edges)
            tracing.tracer = tracer
            try:
                for api in list(remaining):
                    if self._trace_api(root, api, trace, tracer):
                        remaining.remove(api)
            finally:
                tracing.tracer = None
                self._backend_time += tracer.backend_time
            self._complete_ready(components)  # (Also readies the next pass: nothing changes in between.)
            if not remaining and all(c.variables_created for c in components):
                return number
            after = self._progress(components, remaining)
            if after == before:
                raise incomplete_error(root, components, remaining, tracer.deferred, self.states)
            before = after
        raise RLGraphError(f"the build did not finish in {MAX_PASSES} passes", where=root.global_scope)

    def _trace_api(self, root, api: str, trace: TraceBackend, tracer: Tracer) -> bool:
        args = [trace.zero_records(space) for _, space in self.api_signatures[api]]
        tracer.begin(f"{root.global_scope}.{api}", args)
        try:
            output = getattr(root, api)(*args)
        except Deferred:
            return False
        if has_pending(output) or not tracer.traced_through:
            return False
        self.plans[api] = tracer.plan.finish(output)
        return True

    # --- Input-completeness and variables --------------------------------------------------------
    def register_inputs(self, component, api_name: str, bound: dict) -> None:
        """Registers the spaces of an API call's arguments (name -> value) with `component`; completes
        it once it is input-complete, and re-checks a built one when a new argument name arrives."""
        new = False
        for name, value in bound.items():
            space = value.space if type(value) is DataOpRecord else space_of(value)
            if space is not None:
                new |= self.states.register(component, name, space, api_name)
        if not component.variables_created:
            if self.states.input_complete(component):
                self.complete_component(component)
        elif new:
            self._check(component, lambda: component.check_input_spaces(dict(self.states.of(component).spaces),
                                                                         self.action_space))

    def _complete_ready(self, components) -> None:
        for component in components:
            if not component.variables_created and self.states.input_complete(component):
                self.complete_component(component)

    def complete_component(self, component) -> None:
        """Runs `when_input_complete` on an input-complete component (once)."""
        if component.variables_created:
            return
        regexp = component.summary_regexp if component.summary_regexp is not None else self.summary_regexp
        spaces = dict(self.states.of(component).spaces)
        placement = component._placement  # (Its variables on its own device: placement.py.)
        with placement.scope() if placement is not None else contextlib.nullcontext():
            self._check(component, lambda: component.when_input_complete(spaces, self.action_space,
                                                                         summary_regexp=regexp))

    def _check(self, component, run) -> None:
        start = time.perf_counter()
        try:
            run()
        except AssertionError as error:
            raise RLGraphError(f"check_input_spaces rejected the input spaces ({error})",
                               where=component.global_scope,
                               received=dict(self.states.of(component).spaces)) from error
        finally:
            self._backend_time += time.perf_counter() - start

    def not_ready(self, component, info: GraphFnInfo) -> Optional[str]:
        """Why a graph function whose inputs are all computed cannot run yet (None: it can)."""
        if not component.variables_created:
            missing = self.states.missing(component)
            text = "; ".join(f"{api}({', '.join(a)})" for api, a in sorted(missing.items()))
            return f"its component is not input-complete (missing spaces: {text})" if missing else \
                "its component has not created its variables yet"
        if info.requires_variable_completeness:
            tree = component.parent_component if info.requires_variable_completeness == "parent" and \
                component.parent_component is not None else component
            waiting = [c.global_scope for c in tree.get_all_sub_components() if not c.variables_created]
            if waiting:
                return f"it requires variable-completeness; still without variables: {', '.join(waiting)}"
        return None

    def _progress(self, components, remaining) -> tuple:
        known = sum(len(self.states.of(c).spaces) for c in components)
        created = sum(1 for c in components if c.variables_created)
        return known, created, len(remaining)
