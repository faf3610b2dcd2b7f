"""`PreprocessLayer`: a layer with a `reset` API method, the base of all preprocessors."""
from __future__ import annotations

from rlgraph.components.layers.layer import Layer
from rlgraph.utils.decorators import graph_fn, rlgraph_api


class PreprocessLayer(Layer):
    """A layer that preprocesses its input in `apply` and can `reset` its state.

    Stateless preprocessors keep the default `reset`, which does nothing. Stateful ones (frame
    stacking, moving statistics) set `self.stateful = True` and override `_graph_fn_reset` to
    reinitialize their variables; an agent calls `reset` at every episode start.

    API:
        apply(inputs): The preprocessed inputs.
        reset(): Resets the preprocessor's state.
    """

    def __init__(self, scope: str = "pre-process", **kwargs):
        super().__init__(scope=scope, **kwargs)
        self.stateful = False

    @rlgraph_api
    def reset(self):
        return self._graph_fn_reset()

    @graph_fn
    def _graph_fn_reset(self):
        return None
