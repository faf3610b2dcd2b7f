"""`ComponentTest`: build one component as a root and call its API methods with numpy data."""
from __future__ import annotations

from typing import Any, Dict, Optional

from rlgraph.backend_system import get_backend, normalize_backend
from rlgraph.graphs import GraphBuilder, GraphExecutor
from rlgraph.spaces import Space
from rlgraph.tests.test_util import recursive_assert_almost_equal
from rlgraph.utils.rlgraph_errors import RLGraphError
from rlgraph.utils.util import root_logger


class ComponentTest:
    """Builds `component` on one backend and runs its API methods.

    Args:
        component: The component under test; it becomes the root.
        input_spaces: API argument name -> Space (or space spec) for the root's API methods.
        action_space: Passed to every component's `check_input_spaces` / `create_variables`.
        seed: Seeds numpy and the backend before and after the build.
        logging_level: If given, the level of rlgraph's logger (`rlgraph.utils.root_logger`).
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
        if logging_level is not None:
            root_logger.setLevel(logging_level)
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
        """Numpy values of variables (objects, global names, or a dict/list of them); without
        arguments a dict global name -> value of all the component's variables."""
        if not variables:
            return self.graph_executor.read_variable_values(None)
        if len(variables) == 1:
            return self.graph_executor.read_variable_values(variables[0])
        return self.graph_executor.read_variable_values(list(variables))

    def get_variable_values(self, component: Any = None, names: Any = None) -> Dict[str, Any]:
        """Numpy values of a component's variables, keyed by their names relative to it.

        Args:
            component: A component of the tested tree (default: the tested component).
            names: A name or a list of names relative to `component` ("kernel", "dense/bias"),
                or global names; None: all of its variables.

        Returns:
            {name: value} (numpy on both backends).
        """
        component = self.component if component is None else component
        names = [] if names is None else [names] if isinstance(names, str) else list(names)
        variables = component.get_variables(*names)
        return {name: value for name, value in zip(variables, self.graph_executor.read_variable_values(
            list(variables.values())))}

    @staticmethod
    def read_params(name: str, params: Dict[str, Any], transpose_torch_params: bool = True) -> Any:
        """The value in `params` (as `read_variable_values()` returns them) of variable `name`.

        `name` is a key of `params`, else the prefix of one (the first match in order), else
        the one key that is `name` without some of its inner scopes: the original's TF 1
        variables had scopes that rlgraph's do not ("neural-network/d0/dense/kernel" finds
        "neural-network/d0/kernel"; first and last parts must be equal).

        Args:
            name: The key, a prefix of it, or the original's longer name.
            params: Variable name -> value.
            transpose_torch_params: Accepted for compatibility with the original, whose PyTorch
                weights had another layout than its TF ones. rlgraph's variables have the same
                layout on both backends (a dense kernel is [in, units]), so values are never
                transposed; a torch tensor is returned as a numpy array.

        Raises:
            RLGraphError: If nothing matches (the message lists the keys).
        """
        value = ComponentTest.read_prefixed_params(name, params)
        if hasattr(value, "detach"):
            value = value.detach().cpu().numpy()
        return value

    @staticmethod
    def read_prefixed_params(name: str, params: Dict[str, Any]) -> Any:
        """The value of `params` whose key is `name` (or starts with it); see `read_params`."""
        if name in params:
            return params[name]
        for key in params:
            if key.startswith(name.rstrip("/")):
                return params[key]
        parts = name.strip("/").split("/")
        matches = [k for k in params if _drops_inner_scopes(k.split("/"), parts)]
        if len(matches) == 1:
            return params[matches[0]]
        raise RLGraphError(f"no value for variable '{name}'", where="ComponentTest.read_params",
                           expected=f"one of {sorted(params)} (or a prefix of one)")

    @staticmethod
    def assert_equal(outs: Any, expected_outputs: Any, decimals: int = 7) -> None:
        """`recursive_assert_almost_equal(outs, expected_outputs, decimals)`."""
        recursive_assert_almost_equal(outs, expected_outputs, decimals=decimals)

    def variable_test(self, variables: Any, expected_values: Any, decimals: int = 7) -> None:
        """Asserts that `variables` hold `expected_values`."""
        recursive_assert_almost_equal(self.read_variable_values(variables), expected_values, decimals=decimals)

    def terminate(self) -> None:
        self.graph_executor.terminate()


def _drops_inner_scopes(key_parts: list, name_parts: list) -> bool:
    """Whether `key_parts` is `name_parts` without some of its inner parts (same first and last)."""
    if len(key_parts) >= len(name_parts) or key_parts[0] != name_parts[0] or key_parts[-1] != name_parts[-1]:
        return False
    remaining = iter(name_parts[1:-1])
    return all(part in remaining for part in key_parts[1:-1])
