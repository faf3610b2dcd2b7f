"""`Layer`: a component with one `apply` API method mapping n inputs to m outputs."""
from __future__ import annotations

from typing import Any, Dict

from rlgraph.components.component import Component
from rlgraph.spaces import Space
from rlgraph.utils.decorators import declare_output_space, graph_fn, rlgraph_api  # noqa: F401 (re-exported)
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError


class Layer(Component):
    """A simple component whose `apply(*inputs)` API method runs `_graph_fn_apply`.

    Subclasses override `_graph_fn_apply` (backend code) and, when the layer changes the
    shape or dtype of its input, `get_preprocessed_space`.

    API:
        apply(*inputs): The layer's outputs for `inputs`.
    """

    # True: `apply`'s output gets the space `get_preprocessed_space` gives, instead of the one the
    # build infers from the traced shapes (needed where a layer folds, moves or adds ranks).
    declares_output_space = False

    def __init__(self, scope: str = "layer", **kwargs):
        super().__init__(scope=scope, **kwargs)

    @rlgraph_api
    def apply(self, *inputs):
        out = self._graph_fn_apply(*inputs)
        if self.declares_output_space:
            return declare_output_space(out, lambda: self.get_preprocessed_space(inputs[0].space))
        return out

    @graph_fn
    def _graph_fn_apply(self, *inputs):
        return inputs[0] if len(inputs) == 1 else inputs

    def __call__(self, *inputs: Any) -> Any:
        """Keras-style assembly: returns a `LayerNode` recording this layer applied to `inputs`
        (spaces for network inputs, or other layers' nodes); see `NeuralNetwork(outputs=...)`."""
        from rlgraph.components.layers.layer_node import LayerNode
        return LayerNode(self, inputs)

    def get_preprocessed_space(self, space: Space) -> Space:
        """The space of `apply`'s output for an input of `space` (default: unchanged).

        Args:
            space: The incoming space.

        Returns:
            The space after this layer.
        """
        return space

    def input_space(self, input_spaces: Dict[str, Any], index: int = 0) -> Space:
        """The space of `apply`'s positional input `index` (as `check_input_spaces` receives it)."""
        key = f"inputs[{index}]"
        if key not in input_spaces and index == 0 and "inputs" in input_spaces:
            key = "inputs"  # Subclasses whose `apply` takes a named `inputs` argument.
        if key not in input_spaces:
            raise RLGraphSpaceError(None, f"no space for input {index} of apply", where=f"{self.global_scope}.apply",
                                    expected=f"a space for '{key}'", received=sorted(input_spaces))
        return input_spaces[key]
