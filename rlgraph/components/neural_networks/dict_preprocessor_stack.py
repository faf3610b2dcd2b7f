"""`DictPreprocessorStack`: one `PreprocessorStack` per key of a Dict (or index of a Tuple) input."""
from __future__ import annotations

from typing import Any, Dict as DictT

from rlgraph.components.neural_networks.preprocessor_stack import PreprocessorStack
from rlgraph.spaces import Dict, Space, Tuple
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class DictPreprocessorStack(PreprocessorStack):
    """Preprocesses the items of a container input separately; the output is the same container.

    Args:
        preprocessors: Key (Dict input) or index (Tuple input) -> a `PreprocessorStack`, or a list
            of preprocessor specs for one. Items without an entry pass through unchanged.
        scope: Default "dict-preprocessor-stack".

    API:
        preprocess(inputs): The container with each configured item preprocessed.
        reset(): Resets all per-item stacks.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import Dict, FloatBox
    >>> stack = DictPreprocessorStack({"a": [{"type": "multiply", "factor": 10.0}]})
    >>> space = Dict(a=FloatBox(), b=FloatBox(), add_batch_rank=True)
    >>> test = ComponentTest(stack, input_spaces=dict(inputs=space), backend="pytorch")
    >>> out = test.test(("preprocess", {"a": np.array([1.0]), "b": np.array([2.0])}))
    >>> out["a"].tolist(), out["b"].tolist()
    ([10.0], [2.0])
    """

    def __init__(self, preprocessors: DictT[Any, Any], scope: str = "dict-preprocessor-stack", **kwargs):
        if not isinstance(preprocessors, dict):
            raise RLGraphSpecError("preprocessors must be a dict key -> preprocessor list or stack",
                                   where=f"{type(self).__name__}(preprocessors)", received=type(preprocessors).__name__)
        self.stack_keys: DictT[Any, str] = {}
        stacks = []
        for key, spec in preprocessors.items():
            name = f"preprocessor-stack-{str(key).replace('/', '-')}"
            stack = spec if isinstance(spec, PreprocessorStack) else PreprocessorStack(*(spec or []), scope=name)
            if isinstance(spec, PreprocessorStack):
                stack.scope = stack.name = name
            self.stack_keys[key] = stack.scope
            stacks.append(stack)
        super().__init__(*stacks, scope=scope, api_methods={}, **kwargs)

    def _stack_for(self, key: Any):
        scope = self.stack_keys.get(key)
        if scope is None and isinstance(key, int):
            scope = self.stack_keys.get(str(key))
        return None if scope is None else self.sub_components[scope]

    @rlgraph_api
    def preprocess(self, inputs):
        if isinstance(inputs, dict):
            out = {}
            for key, value in inputs.items():
                stack = self._stack_for(key)
                out[key] = value if stack is None else stack.preprocess(value)
            return out
        if isinstance(inputs, tuple):
            return tuple(value if self._stack_for(i) is None else self._stack_for(i).preprocess(value)
                         for i, value in enumerate(inputs))
        raise RLGraphSpaceError(None, "a DictPreprocessorStack needs a Dict or Tuple input",
                                where=f"{self.global_scope}.preprocess(inputs)", received=type(inputs).__name__)

    def get_preprocessed_space(self, space: Space) -> Space:
        """The container space with each configured item's space preprocessed."""
        if isinstance(space, Dict):
            children = {k: (c if self._stack_for(k) is None else self._stack_for(k).get_preprocessed_space(c))
                        for k, c in space.items()}
            return Dict(children, add_batch_rank=space.has_batch_rank, add_time_rank=space.has_time_rank,
                        time_major=space.time_major)
        if isinstance(space, Tuple):
            children = [c if self._stack_for(i) is None else self._stack_for(i).get_preprocessed_space(c)
                        for i, c in enumerate(space)]
            return Tuple(*children, add_batch_rank=space.has_batch_rank, add_time_rank=space.has_time_rank,
                         time_major=space.time_major)
        raise RLGraphSpaceError(space, "a DictPreprocessorStack needs a Dict or Tuple space",
                                where=f"{self.global_scope}.get_preprocessed_space", received=space)
