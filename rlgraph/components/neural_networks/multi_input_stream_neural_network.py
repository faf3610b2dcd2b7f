"""`MultiInputStreamNeuralNetwork`: one network per item of a Dict/Tuple input, concatenated, then a post network."""
from __future__ import annotations

import math

from typing import Any, Dict as DictT, List, Union

from rlgraph.backend_system import get_backend
from rlgraph.components.neural_networks.neural_network import NeuralNetwork
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class MultiInputStreamNeuralNetwork(NeuralNetwork):
    """A network for container states: each item goes through its own stream network, the
    streams' outputs are flattened to [B, n], cast to float32 and concatenated, and the result
    goes through the post network.

    Args:
        input_network_specs: For a Dict input, key -> layer-spec list (or NeuralNetwork); for a
            Tuple input, a list of them in order. An empty list (or None) passes that item
            through (flattened and cast).
        post_network_spec: Layer-spec list (or NeuralNetwork) after the concatenation.
        scope: Default "multi-input-stream-nn".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import Dict, FloatBox
    >>> net = MultiInputStreamNeuralNetwork(
    ...     input_network_specs={"a": [{"type": "dense", "units": 2}], "b": []},
    ...     post_network_spec=[{"type": "dense", "units": 1}])
    >>> space = Dict(a=FloatBox(shape=(3,)), b=FloatBox(shape=(2, 2)), add_batch_rank=True)
    >>> test = ComponentTest(net, input_spaces=dict(inputs=space), backend="pytorch")
    >>> test.test(("apply", space.sample(4)))["output"].shape
    (4, 1)
    """

    def __init__(self, input_network_specs: Union[DictT[str, Any], List[Any]], post_network_spec: Any = None,
                 scope: str = "multi-input-stream-nn", **kwargs):
        if isinstance(input_network_specs, dict):
            keys = sorted(input_network_specs)
        elif isinstance(input_network_specs, (list, tuple)):
            keys = list(range(len(input_network_specs)))
        else:
            raise RLGraphSpecError("input_network_specs must be a dict (Dict states) or a list (Tuple states)",
                                   where=f"{type(self).__name__}(input_network_specs)",
                                   received=type(input_network_specs).__name__)
        self.stream_keys = keys
        streams = [self._network(input_network_specs[k], f"input-stream-{k}") for k in keys]
        post = self._network(post_network_spec, "post-network")
        super().__init__(*streams, post, scope=scope, **kwargs)

    @staticmethod
    def _network(spec: Any, scope: str) -> NeuralNetwork:
        if isinstance(spec, NeuralNetwork):
            spec.scope = spec.name = scope
            return spec
        return NeuralNetwork(*(spec or []), scope=scope)

    def has_rnn(self) -> bool:
        return False

    @rlgraph_api
    def apply(self, inputs, internal_states=None, sequence_length=None):
        if isinstance(inputs, dict):
            missing = [k for k in self.stream_keys if k not in inputs]
            if missing:
                raise RLGraphSpaceError(None, f"input has no item(s) {missing}", where=f"{self.global_scope}.apply",
                                        expected=f"keys {self.stream_keys}", received=f"keys {sorted(inputs)}")
            items = [inputs[k] for k in self.stream_keys]
        elif isinstance(inputs, tuple):
            if len(inputs) != len(self.stream_keys):
                raise RLGraphSpaceError(None, "wrong number of Tuple items", where=f"{self.global_scope}.apply",
                                        expected=len(self.stream_keys), received=len(inputs))
            items = list(inputs)
        else:
            raise RLGraphSpaceError(None, "needs a Dict or Tuple input", where=f"{self.global_scope}.apply(inputs)",
                                    received=type(inputs).__name__)
        outputs = [self.sub_components[f"input-stream-{k}"].apply(item)["output"]
                   for k, item in zip(self.stream_keys, items)]
        concatenated = self._graph_fn_concat(*outputs)
        return self.sub_components["post-network"].apply(concatenated)

    @graph_fn
    def _graph_fn_concat(self, *streams):
        if get_backend() == "tf":
            import tensorflow as tf
            flat = [tf.reshape(tf.cast(s, tf.float32), (tf.shape(s)[0], -1)) for s in streams]
            return tf.concat(flat, axis=-1)
        import torch
        # An explicit row size: reshape(B, -1) is ambiguous for an empty batch.
        flat = [s.reshape(s.shape[0], math.prod(s.shape[1:])).to(torch.float32) for s in streams]
        return torch.cat(flat, dim=-1)
