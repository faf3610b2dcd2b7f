"""`ComponentTest`: build one component as a root and call its API methods with numpy data."""
from __future__ import annotations

from typing import Any, Dict, Optional

from rlgraph.backend_system import get_backend, normalize_backend
from rlgraph.graphs import GraphBuilder, GraphExecutor
from rlgraph.spaces import Space
from rlgraph.tests.test_util import recursive_assert_almost_equal


class ComponentTest:
    """Builds `component` on one backend and runs its API methods.

    Args:
        component: The component under test; it becomes the root.
        input_spaces: API argument name -> Space (or space spec) for the root's API methods.
        action_space: Passed to every component's `check_input_spaces` / `create_variables`.
        seed: Seeds numpy and the backend before and after the build.
        logging_level: Accepted for reference compatibility (logging is configured by the caller).
        execution_spec: Passed to the executor.
        backend: "tf" or "pytorch" (default: `get_backend()`).
        auto_build: Build right away (else call `build()`).
        build_kwargs: Extra arguments of `GraphBuilder` (e.g. trace sizes).

    >>> from rlgraph.components import Component
    >>> from rlgraph.utils.decorators import rlgraph_api
    >>> class Double(Component):
    ...     @rlgraph_api
    ...     def _graph_fn_double(self, x):
    ...         return x * 2
    >>> test = ComponentTest(Double(), input_spaces=dict(x=float), backend="pytorch")
    >>> float(test.test(("double", 1.5), expected_outputs=3.0))
    3.0
    """

    def __init__(self, component: Any, input_spaces: Optional[Dict[str, Any]] = None, action_space: Any = None,
                 seed: Optional[int] = 10, logging_level: Any = None, execution_spec: Optional[dict] = None,
                 backend: Optional[str] = None, auto_build: bool = True, build_kwargs: Optional[dict] = None,
                 **kwargs):
        self.component = component
        self.input_spaces = dict(input_spaces or {})  # Specs are resolved by the builder.
        self.action_space = Space.from_spec(action_space) if action_space is not None else None
        self.seed = seed
        self.backend = normalize_backend(backend) if backend is not None else get_backend()
        builder = GraphBuilder(action_space=self.action_space, **dict(build_kwargs or {}))
        spec = dict(execution_spec or {})
        if seed is not None:
            spec.setdefault("seed", seed)
        self.graph_executor = GraphExecutor.from_spec(self.backend, graph_builder=builder, execution_spec=spec,
                                                      **kwargs)
        self.build_stats = None
        if auto_build:
            self.build()

    def build(self):
        """Builds the component; returns the build statistics."""
        self.build_stats = self.graph_executor.build([self.component], self.input_spaces)
        return self.build_stats

    def test(self, *api_calls: Any, expected_outputs: Any = None, decimals: int = 7, fn_test=None) -> Any:
        """Executes API calls (see `GraphExecutor.execute`) and compares with `expected_outputs`.

        Args:
            *api_calls: Calls as `execute` takes them: "api" or ("api", inputs[, return_keys]).
            expected_outputs: The expected result (a list of them for several calls); None: no check.
            decimals: Decimals that numbers must agree to.
            fn_test: Optional fn(test, outputs) -> None for custom checks.

        Returns:
            The outputs.
        """
        outputs = self.graph_executor.execute(*api_calls)
        if fn_test is not None:
            fn_test(self, outputs)
        if expected_outputs is not None:
            recursive_assert_almost_equal(outputs, expected_outputs, decimals=decimals)
        return outputs

    def read_variable_values(self, *variables: Any) -> Any:
        """Numpy values of variables (objects, names, or a dict/list of them)."""
        if len(variables) == 1:
            return self.graph_executor.read_variable_values(variables[0])
        return self.graph_executor.read_variable_values(list(variables))

    get_variable_values = read_variable_values

    def variable_test(self, variables: Any, expected_values: Any, decimals: int = 7) -> None:
        """Asserts that `variables` hold `expected_values`."""
        recursive_assert_almost_equal(self.read_variable_values(variables), expected_values, decimals=decimals)

    def terminate(self) -> None:
        self.graph_executor.terminate()
