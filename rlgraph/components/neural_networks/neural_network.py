"""`NeuralNetwork`: a stack of layers whose `apply` returns {"output": ..., ["last_internal_states": ...]}."""
from __future__ import annotations

from typing import Any, List, Optional, Sequence, Union

from rlgraph.components.layers.layer_node import LayerNode, _Select
from rlgraph.components.neural_networks.stack import Stack, force_tuple  # noqa: F401 (re-exported)
from rlgraph.spaces import Space
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class NeuralNetwork(Stack):
    """A neural network made of layers, defined in one of two ways.

    - Sequentially: `NeuralNetwork(layer_or_spec, ...)` or `NeuralNetwork.from_spec([...])` with
      a list of layer specs (the JSON form of agent configs). `apply(inputs, internal_states=None,
      sequence_length=None)` feeds `inputs` through every layer's `apply` in order; recurrent
      layers (`is_recurrent`, e.g. `LSTMLayer`) also get `internal_states` and `sequence_length`.
    - Keras style: call layers on spaces and on each other's results, then
      `NeuralNetwork(outputs=node)` (or a list of nodes). `apply(*inputs)` takes one input per
      network-input space, in the order of `inputs=[...]` if given, else in order of first use.

    In both cases `apply` returns a dict: "output" (a tuple for several keras outputs) and,
    when the network has a recurrent layer, "last_internal_states" of the last one.

    Args:
        *layers: Layer components or specs (sequential form).
        outputs: A `LayerNode` or a list of them (keras form).
        inputs: The network-input spaces in `apply`'s argument order (keras form).
        scope: Default "neural-network".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> net = NeuralNetwork.from_spec([{"type": "dense", "units": 3, "activation": "relu"},
    ...                                {"type": "dense", "units": 2}])
    >>> test = ComponentTest(net, input_spaces=dict(inputs=FloatBox(shape=(4,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", np.ones((5, 4), dtype=np.float32)))["output"].shape
    (5, 2)
    """

    def __init__(self, *layers: Any, outputs: Optional[Union[LayerNode, Sequence[LayerNode]]] = None,
                 inputs: Optional[Sequence[Space]] = None, scope: str = "neural-network", **kwargs):
        kwargs.setdefault("api_methods", {})
        self.keras_outputs: Optional[List[LayerNode]] = None
        self.keras_inputs: Optional[List[Space]] = None
        if outputs is not None:
            if layers:
                raise RLGraphSpecError("give either layers or keras-style outputs, not both",
                                       where=f"{type(self).__name__}({scope})")
            self.keras_outputs = list(force_tuple(outputs))
            layers = tuple(self._keras_layers(self.keras_outputs))
            discovered = []
            for node in self.keras_outputs:
                for space in node.input_spaces():
                    if not any(space is s for s in discovered):
                        discovered.append(space)
            self.keras_inputs = list(inputs) if inputs is not None else discovered
            missing = [s for s in discovered if not any(s is i for i in self.keras_inputs)]
            if missing:
                raise RLGraphSpecError("the outputs depend on input spaces that are not in `inputs`",
                                       where=f"{type(self).__name__}({scope})", received=missing)
        super().__init__(*layers, scope=scope, **kwargs)
        if self.keras_outputs is not None:
            rlgraph_api(_KerasApply(), component=self, name="apply", ok_to_overwrite=True)

    @staticmethod
    def _keras_layers(outputs: List[LayerNode]) -> list:
        layers = []
        for out in outputs:
            for node in out.topological_order():
                if not any(node.layer is layer for layer in layers):
                    layers.append(node.layer)
        return layers

    def has_rnn(self) -> bool:
        """Whether any layer is recurrent (then `apply` also returns "last_internal_states")."""
        return any(getattr(layer, "is_recurrent", False) for layer in self.sub_components.values())

    @rlgraph_api
    def apply(self, inputs, internal_states=None, sequence_length=None):
        x = inputs
        last_internal_states = None
        for layer in self.sub_components.values():
            if "apply" not in layer.api_methods:
                continue  # A helper sub-component (e.g. Synchronizable), not a layer.
            if getattr(layer, "is_recurrent", False):
                result = layer.apply(x, internal_states, sequence_length)
                x, last_internal_states = result["output"], result["last_internal_states"]
            elif type(x) is tuple:
                x = layer.apply(*x)
            else:
                x = layer.apply(x)
        if last_internal_states is not None:
            return dict(output=x, last_internal_states=last_internal_states)
        return dict(output=x)


class _KerasApply:
    """The `apply` body of a keras-style network (picklable; reads the graph off the network)."""
    __name__ = __qualname__ = "keras_apply"

    def __call__(self, network, *inputs):
        values = {id(space): value for space, value in zip(network.keras_inputs, inputs)}
        results = {}
        last_internal_states = None
        for out in network.keras_outputs:
            for node in out.topological_order(include_selects=True):
                if id(node) in results:
                    continue
                args = [values[id(i)] if isinstance(i, Space) else results[id(i)] for i in node.inputs]
                if isinstance(node.layer, _Select):
                    results[id(node)] = args[0][node.layer.index]
                    continue
                result = node.layer.apply(*args)
                if getattr(node.layer, "is_recurrent", False) and isinstance(result, dict):
                    last_internal_states = result["last_internal_states"]
                results[id(node)] = result
        outputs = tuple(results[id(node)] for node in network.keras_outputs)
        out = dict(output=outputs[0] if len(outputs) == 1 else outputs)
        if last_internal_states is not None:
            out["last_internal_states"] = last_internal_states
        return out
