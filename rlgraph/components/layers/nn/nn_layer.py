"""`NNLayer`: a layer with an activation function, the base of the neural-network layers."""
from __future__ import annotations

from typing import Any, Optional, Sequence

from rlgraph.components.layers.layer import Layer
from rlgraph.components.layers.nn.activation_functions import check_activation_name, get_activation_function
from rlgraph.spaces import ContainerSpace
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError


class NNLayer(Layer):
    """A neural-network layer: some computation followed by an activation function.

    Subclasses create their variables in `create_variables` and override `_graph_fn_apply`,
    calling `self.activate(x)` on their result. Used as is, an `NNLayer` only applies the
    activation function.

    Args:
        activation: The activation name or callable (see `get_activation_function`); None: linear.
        activation_params: Extra parameters of the activation (e.g. [0.1] for leaky_relu).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> test = ComponentTest(NNLayer(activation="relu"), input_spaces=dict(inputs=FloatBox(shape=(2,),
    ...                      add_batch_rank=True)), backend="pytorch")
    >>> test.test(("apply", np.array([[-1.0, 3.0]], dtype=np.float32))).tolist()
    [[0.0, 3.0]]
    """

    is_recurrent = False  # Recurrent layers (LSTMLayer) take and return internal states.

    def __init__(self, activation: Optional[Any] = None, activation_params: Optional[Sequence[Any]] = None,
                 scope: str = "nn-layer", **kwargs):
        super().__init__(scope=scope, **kwargs)
        check_activation_name(activation, f"{type(self).__name__}(activation)")
        self.activation = activation
        self.activation_params = tuple(activation_params or ())
        self.layer = None  # A backend layer object, for subclasses that wrap one.
        self._activation_fn = None  # Resolved by `activate` on first use.

    def check_input_spaces(self, input_spaces, action_space=None):
        """Inputs must be primitive spaces with a batch rank."""
        for key, space in sorted(input_spaces.items()):
            if not key.startswith("inputs[") or space is None:
                continue
            if isinstance(space, ContainerSpace):
                raise RLGraphSpaceError(space, "container spaces are not supported",
                                        where=f"{self.global_scope}.apply({key})",
                                        hint="split the container first (e.g. a multi-input-stream network).")
            if not space.has_batch_rank:
                raise RLGraphSpaceError(space, "the input needs a batch rank", where=f"{self.global_scope}.apply({key})",
                                        expected="a space with add_batch_rank=True", received=space)

    def activate(self, x: Any) -> Any:
        """Applies the activation function to `x`. It is resolved on first use: a component is
        built for one backend only, so the lookup stays off the per-call path."""
        fn = self._activation_fn
        if fn is None:
            fn = self._activation_fn = get_activation_function(self.activation, *self.activation_params) or _identity
        return fn(x)

    @graph_fn
    def _graph_fn_apply(self, *inputs):
        return self.activate(inputs[0])

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_activation_fn"] = None  # Backend callables (lambdas) do not pickle; copies resolve their own.
        return state


def _identity(x: Any) -> Any:
    return x
