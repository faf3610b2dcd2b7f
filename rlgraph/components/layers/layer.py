"""`Layer`: a component with one `apply` API method mapping n inputs to m outputs."""
from __future__ import annotations

from typing import Any, Dict

from rlgraph.components.api_aliases import ApiAlias
from rlgraph.components.component import Component
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn, rlgraph_api  # noqa: F401 (re-exported)
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError


class Layer(Component):
    """A simple component whose `apply(*inputs)` API method runs `_graph_fn_apply`.

    Subclasses override `_graph_fn_apply` (backend code) and, when the layer changes the
    shape or dtype of its input, `get_preprocessed_space`.

    API:
        apply(*inputs): The layer's outputs for `inputs` (alias `call`, the original's name: a
            subclass may define `call` / `_graph_fn_call` instead, see `ApiAlias`).
    """

    call = ApiAlias("apply")

    def __init__(self, scope: str = "layer", **kwargs):
        super().__init__(scope=scope, **kwargs)

    @rlgraph_api
    def apply(self, *inputs):
        return self._graph_fn_apply(*inputs)

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


def preprocessed_space(layer: "Layer", inputs: Any, *other_inputs: Any) -> Any:
    """`@graph_fn(output_space=preprocessed_space)`: a layer's output has the space its
    `get_preprocessed_space` gives for the first input's space (for layers that fold, move or
    keep ranks that the traced shapes do not show)."""
    return layer.get_preprocessed_space(inputs)
