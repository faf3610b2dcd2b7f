"""`ResidualLayer`: y = activation(x + F(x)) with F a chain of copies of one residual unit."""
from __future__ import annotations

from typing import Any, List

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.components.layers.nn.nn_layer import NNLayer
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class ResidualLayer(NNLayer):
    """A residual block: activation(x + unit_n(...unit_1(x))).

    The shortcut is the identity, as in He et al. 2016, "Identity Mappings in Deep Residual
    Networks" (https://arxiv.org/abs/1603.05027): with the default `activation=None` nothing follows
    the addition and the unit itself carries its (pre-)activations; `activation="relu"` gives the
    original ResNet block of He et al. 2015 (https://arxiv.org/abs/1512.03385).

    `residual_unit` is a template: `repeats` copies of it, with scopes "unit-0" ... "unit-{n-1}" and
    their own variables, become sub-components and are chained through their `apply` API methods.
    The chain must keep the input's shape ([B, ...] in, [B, ...] out).

    Args:
        residual_unit: A layer component, or a spec for one (a dict with a "type" that is a class, a
            registered name or a dotted path such as "rlgraph.components.layers.nn.dense_layer.DenseLayer").
        repeats: How many copies of the unit to chain (>= 1).
        scope: Default "residual-layer".
        **kwargs: `activation` etc., see `NNLayer`.

    Raises:
        RLGraphSpecError: If `residual_unit` is not a layer (spec) with an `apply` API or `repeats` < 1.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> from rlgraph.components.layers.nn.dense_layer import DenseLayer
    >>> layer = ResidualLayer(DenseLayer(units=2, weights_spec=1.0, biases_spec=False), repeats=2)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(2,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", np.array([[1.0, 2.0]], dtype=np.float32))).tolist()
    [[7.0, 8.0]]
    >>> sorted(test.read_variable_values(layer.variable_registry))
    ['residual-layer/unit-0/kernel', 'residual-layer/unit-1/kernel']
    """

    def __init__(self, residual_unit: Any, repeats: int = 2, scope: str = "residual-layer", **kwargs):
        super().__init__(scope=scope, **kwargs)
        name = type(self).__name__
        if not isinstance(repeats, (int, np.integer)) or isinstance(repeats, bool) or repeats < 1:
            raise RLGraphSpecError("repeats must be a positive int", where=f"{name}(repeats)", received=repr(repeats))
        if isinstance(residual_unit, Component):
            unit = residual_unit
        elif isinstance(residual_unit, (dict, str)) or callable(residual_unit):
            unit = Component.from_spec(residual_unit)
        else:
            raise RLGraphSpecError("residual_unit must be a layer component or a spec for one",
                                   where=f"{name}(residual_unit)", received=repr(residual_unit))
        if not isinstance(unit, Component) or "apply" not in unit.api_methods:
            raise RLGraphSpecError("residual_unit must be a component with an `apply` API method",
                                   where=f"{name}(residual_unit)", received=repr(unit),
                                   hint="use a Layer (e.g. DenseLayer, Conv2DLayer) or a network.")
        self.repeats = int(repeats)
        self.units: List[Component] = [unit.copy(scope=f"unit-{i}") for i in range(self.repeats)]
        self.add_components(*self.units)

    @rlgraph_api
    def apply(self, *inputs):
        x = inputs[0]
        out = x
        for unit in self.units:
            out = unit.apply(out)
        return self._graph_fn_add(x, out)

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        space = self.input_space(input_spaces)
        out = space
        for unit in self.units:
            if not hasattr(unit, "get_preprocessed_space"):
                return  # Shapes are checked on the traced tensors in `_graph_fn_add` instead.
            out = unit.get_preprocessed_space(out)
            if tuple(out.shape) != tuple(space.shape):
                raise self._shape_error(space.shape, out.shape, unit.global_scope)

    def _shape_error(self, in_shape: Any, out_shape: Any, culprit: str) -> RLGraphSpaceError:
        scopes = ", ".join(u.global_scope for u in self.units)
        return RLGraphSpaceError(None, f"the residual units must keep the input's shape, but {culprit} changes it",
                                 where=f"{self.global_scope}.apply(inputs)", expected=f"shape {tuple(in_shape)}",
                                 received=f"shape {tuple(out_shape)} (units: {scopes})",
                                 hint="give the unit as many outputs (units/filters, 'same' padding) as inputs.")

    @graph_fn
    def _graph_fn_add(self, x, residual):
        """activation(x + residual); x [B, ...], residual of the same shape."""
        last = self.units[-1].global_scope
        if get_backend() == "tf":
            import tensorflow as tf
            if not x.shape.is_compatible_with(residual.shape):
                raise self._shape_error(x.shape, residual.shape, last)
            if x.dtype != residual.dtype:
                x = tf.cast(x, residual.dtype)
        else:
            if tuple(x.shape) != tuple(residual.shape):
                raise self._shape_error(x.shape, residual.shape, last)
            if x.dtype != residual.dtype:
                x = x.to(residual.dtype)
        return self.activate(x + residual)

    def get_preprocessed_space(self, space: Space) -> Space:
        """The space of the unit chain's output (the input's shape; the dtype of the units' output)."""
        for unit in self.units:
            space = unit.get_preprocessed_space(space) if hasattr(unit, "get_preprocessed_space") else space
        return space
