"""`ContainerLossFunction`: a weighted sum of per-key losses over container predictions and labels."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Union

from rlgraph.components.loss_functions.loss_function import LossFunction
from rlgraph.spaces import ContainerSpace
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class ContainerLossFunction(LossFunction):
    """loss_per_item = sum_k weight_k * loss_k.loss_per_item(predictions[k], labels[k]), [B].

    For container action spaces (a supervised loss per action component, e.g. a cross-entropy for
    a discrete key and a Euclidean distance for a continuous one). Each sub-loss is a supervised
    loss with the API `loss_per_item(predictions, labels)` -> [B] (`CategoricalCrossEntropyLoss`,
    `EuclideanDistanceLoss`, ...); it is a sub-component scoped "loss-function-<i>".

    Args:
        loss_functions_spec: {key: loss spec or LossFunction} for Dict predictions/labels, or a
            list of them for Tuple ones (position i for item i). A spec dict may carry a "weight"
            (used when `weights` is not given; the spec itself is not changed).
        weights: {key: weight} (dict spec) or [weight, ...] (list spec). Default: the specs'
            "weight" entries, else 1.0 for every key.
        scope: Default "mixture-loss" (the original's).

    API:
        loss(predictions, labels): (total_loss, loss_per_item): the batch mean and [B].
        loss_per_item(predictions, labels): [B].

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import Dict, FloatBox
    >>> loss = ContainerLossFunction({"a": {"type": "euclidean-distance-loss", "weight": 0.5},
    ...                               "b": "euclidean-distance-loss"})
    >>> space = Dict(a=FloatBox(shape=(2,)), b=FloatBox(), add_batch_rank=True)
    >>> test = ComponentTest(loss, input_spaces=dict(predictions=space, labels=space), backend="pytorch")
    >>> zeros = {"a": np.zeros((1, 2), np.float32), "b": np.zeros(1, np.float32)}
    >>> test.test(("loss_per_item", [{"a": np.array([[3.0, 4.0]], np.float32), "b": np.array([-1.0], np.float32)},
    ...                              zeros])).tolist()  # 0.5 * 5 + 1 * 1
    [3.5]
    """

    def __init__(self, loss_functions_spec: Union[Dict[str, Any], Sequence[Any]],
                 weights: Union[None, Dict[str, float], Sequence[float]] = None, scope: str = "mixture-loss",
                 **kwargs):
        super().__init__(scope=scope, **kwargs)
        where = f"{type(self).__name__}(loss_functions_spec)"
        if isinstance(loss_functions_spec, dict):
            keys: List[Any] = list(loss_functions_spec)
            specs = list(loss_functions_spec.values())
        elif isinstance(loss_functions_spec, (list, tuple)):
            keys, specs = list(range(len(loss_functions_spec))), list(loss_functions_spec)
        else:
            raise RLGraphSpecError("loss_functions_spec must be a dict {key: loss spec} or a list of loss specs",
                                   where=where, received=repr(loss_functions_spec))
        if not specs:
            raise RLGraphSpecError("loss_functions_spec is empty", where=where)
        self.keys = keys
        self.loss_functions: Dict[Any, LossFunction] = {}
        spec_weights = {}
        for index, (key, spec) in enumerate(zip(keys, specs)):
            if isinstance(spec, dict) and "weight" in spec:
                spec = dict(spec)
                spec_weights[key] = spec.pop("weight")
            self.loss_functions[key] = self._sub_loss(spec, index, f"{where}[{key!r}]")
        self.weights = self._weights(weights, spec_weights)
        if isinstance(loss_functions_spec, (list, tuple)):
            self.weights = [self.weights[k] for k in keys]
            self.loss_functions = [self.loss_functions[k] for k in keys]
        self.add_components(*self._items_of(self.loss_functions))

    @staticmethod
    def _items_of(container: Any) -> List[Any]:
        return list(container.values()) if isinstance(container, dict) else list(container)

    def _sub_loss(self, spec: Any, index: int, where: str) -> LossFunction:
        scope = f"loss-function-{index}"
        if isinstance(spec, LossFunction):
            if spec.parent_component is None and not spec.variables_created:
                spec.scope = spec.name = scope
                spec.propagate_scope(None)
            return spec
        if isinstance(spec, str):
            spec = {"type": spec}
        if isinstance(spec, dict):
            spec = dict(spec, scope=spec.get("scope", scope))
        loss = LossFunction.from_spec(spec)
        if not isinstance(loss, LossFunction):
            raise RLGraphSpecError("the spec does not describe a loss function", where=where, received=repr(spec))
        return loss

    def _weights(self, weights: Any, spec_weights: Dict[Any, Any]) -> Dict[Any, float]:
        where = f"{type(self).__name__}(weights)"
        if weights is None:
            given = spec_weights
        elif isinstance(weights, dict):
            given = dict(weights)
        elif isinstance(weights, (list, tuple)) and len(weights) == len(self.keys):
            given = dict(zip(self.keys, weights))
        else:
            raise RLGraphSpecError("weights must be a dict keyed like the losses, or a list with one weight per loss",
                                   where=where, expected=f"keys {self.keys}", received=repr(weights))
        unknown = [k for k in given if k not in self.loss_functions]
        if unknown:
            raise RLGraphSpecError(f"weights for unknown key(s) {unknown}", where=where, expected=f"keys {self.keys}")
        out = {}
        for key in self.keys:
            value = given.get(key, 1.0)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise RLGraphSpecError(f"the weight of '{key}' must be a number", where=where, received=repr(value))
            out[key] = float(value)
        return out

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        for arg in ("predictions", "labels"):
            space: Optional[Any] = input_spaces.get(arg)
            if space is None:
                continue
            ok = isinstance(space, ContainerSpace)
            try:
                ok = ok and all(space[k] is not None for k in self.keys)
            except (KeyError, IndexError, TypeError):
                ok = False
            if not ok:
                raise RLGraphSpaceError(space, f"the {arg} must be a container with an item per loss",
                                        where=f"{self.global_scope}.loss({arg})",
                                        expected=f"a {'Dict' if isinstance(self.keys[0], str) else 'Tuple'} "
                                                 f"with keys {self.keys}")

    @rlgraph_api
    def loss(self, predictions, labels):
        loss_per_item = self.loss_per_item(predictions, labels)
        return self.loss_average(loss_per_item), loss_per_item

    @rlgraph_api
    def loss_per_item(self, predictions, labels):
        losses = [self.loss_functions[k].loss_per_item(predictions[k], labels[k]) for k in self.keys]
        return self._graph_fn_weighted_sum(*losses)

    @graph_fn
    def _graph_fn_weighted_sum(self, *losses_per_item):
        weights = self._items_of(self.weights)
        total = weights[0] * losses_per_item[0]
        for weight, loss_per_item in zip(weights[1:], losses_per_item[1:]):
            total = total + weight * loss_per_item
        return total
