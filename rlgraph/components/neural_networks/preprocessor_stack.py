"""`PreprocessorStack`: preprocessing layers chained into `preprocess`, with one `reset` for all."""
from __future__ import annotations

from typing import Any

from rlgraph.components.neural_networks.stack import Stack
from rlgraph.spaces import Space
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class PreprocessorStack(Stack):
    """A stack of `PreprocessLayer`s.

    API:
        preprocess(inputs): `inputs` sent through every preprocessor's `apply` in order (unchanged
            when the stack is empty).
        reset(): Resets every preprocessor (agents call it at episode starts when `is_stateful`).

    Args:
        *preprocessors: PreprocessLayer components or specs, e.g. {"type": "grayscale"}.
        scope: Default "preprocessor-stack".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> stack = PreprocessorStack({"type": "multiply", "factor": 2.0}, {"type": "clip", "min": 0.0, "max": 3.0})
    >>> stack.get_preprocessed_space(FloatBox(shape=(2,), add_batch_rank=True)).shape
    (2,)
    >>> test = ComponentTest(stack, input_spaces=dict(inputs=FloatBox(shape=(2,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("preprocess", np.array([[1.0, 2.0]], dtype=np.float32))).tolist()
    [[2.0, 3.0]]
    """

    def __init__(self, *preprocessors: Any, scope: str = "preprocessor-stack", **kwargs):
        kwargs.setdefault("api_methods", {"preprocess": "apply"})
        super().__init__(*preprocessors, scope=scope, **kwargs)
        from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
        for component in self.sub_components.values():
            if not isinstance(component, (PreprocessLayer, PreprocessorStack)):
                raise RLGraphSpecError("a PreprocessorStack holds only preprocessing layers",
                                       where=f"{self.global_scope}/{component.scope}",
                                       expected="PreprocessLayer components", received=type(component).__name__)

    @property
    def is_stateful(self) -> bool:
        """Whether some preprocessor keeps state between calls (so `reset` matters)."""
        return any(getattr(c, "stateful", False) or getattr(c, "is_stateful", False)
                   for c in self.sub_components.values())

    @rlgraph_api(must_be_complete=False)
    def reset(self):
        for component in self.sub_components.values():
            component.reset()
        return None

    def get_preprocessed_space(self, space: Space) -> Space:
        """The space after all preprocessors, in order.

        Args:
            space: The incoming space.

        Returns:
            The space after preprocessing.
        """
        for component in self.sub_components.values():
            space = component.get_preprocessed_space(space)
        return space
