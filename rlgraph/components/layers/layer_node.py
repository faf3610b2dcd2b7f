"""Keras-style assembly: calling a layer on a space or on another layer's output records a node.

>>> from rlgraph.spaces import FloatBox
>>> from rlgraph.components.layers import DenseLayer
>>> x = FloatBox(shape=(3,), add_batch_rank=True)
>>> hidden = DenseLayer(units=4, scope="hidden")(x)
>>> out = DenseLayer(units=2, scope="out")(hidden)
>>> [node.layer.scope for node in out.topological_order()]
['hidden', 'out']
"""
from __future__ import annotations

from typing import Any, Dict, List

from rlgraph.spaces import Space
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class LayerNode:
    """One call of `layer` in a keras-style network: its inputs are spaces (network inputs) or
    other nodes; `output_index` picks one item of a node whose layer returns a tuple."""

    def __init__(self, layer: Any, inputs: tuple, output_index: Any = None):
        for i, item in enumerate(inputs):
            if not isinstance(item, (Space, LayerNode)):
                raise RLGraphSpecError("a layer is called on spaces (network inputs) or on other layers' outputs",
                                       where=f"{layer.global_scope}(...) input {i}", received=type(item).__name__,
                                       hint="pass a Space for a network input, e.g. FloatBox(shape=(4,), "
                                            "add_batch_rank=True).")
        self.layer = layer
        self.inputs = tuple(inputs)
        self.output_index = output_index

    def __getitem__(self, index: Any) -> "LayerNode":
        """One item of this node's (tuple or dict) output, as an input for further layers."""
        return LayerNode(_Select(self, index), (self,))

    def input_spaces(self) -> List[Space]:
        """The network-input spaces this node depends on, in order of first use (depth first)."""
        out: List[Space] = []
        for node in self.topological_order(include_selects=True):
            for item in node.inputs:
                if isinstance(item, Space) and not any(item is s for s in out):
                    out.append(item)
        return out

    def topological_order(self, include_selects: bool = False) -> List["LayerNode"]:
        """All nodes this one depends on (itself last), each once, inputs before users."""
        order: List[LayerNode] = []
        seen: Dict[int, bool] = {}

        def visit(node: LayerNode):
            if id(node) in seen:
                return
            seen[id(node)] = True
            for item in node.inputs:
                if isinstance(item, LayerNode):
                    visit(item)
            order.append(node)
        visit(self)
        return order if include_selects else [n for n in order if not isinstance(n.layer, _Select)]


class _Select:
    """A pseudo layer that picks one item of another node's output."""

    def __init__(self, node: LayerNode, index: Any):
        self.node, self.index = node, index
        self.scope = self.global_scope = f"{node.layer.scope}[{index!r}]"
