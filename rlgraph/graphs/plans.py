"""Call plans: each root API method as the sequence of graph-function calls the build traced.

API methods only route data between graph functions (a traced value refuses python decisions,
see `op_records.py`), so one trace shows every call an API method will ever make: which graph
functions, in which order, and where each argument comes from (an API input, an earlier graph
function's result, or a constant fixed at build time). The PyTorch executor runs root API
methods by replaying this plan on the call's tensors, skipping the API layers in between;
TensorFlow's `tf.function` traces the same python once. Both backends thus run API-method
python once, at build time, and graph functions on every call.

Graph functions called from within a graph function are not steps: the outer one calls them.
"""
from __future__ import annotations

from typing import Any, Callable, List

from rlgraph.graphs.op_records import DataOpRecord
from rlgraph.utils.rlgraph_errors import RLGraphBuildError


class CallPlan:
    """A replayable sequence of graph-function calls (made by `PlanBuilder.finish`)."""

    __slots__ = ("steps", "output", "num_inputs")

    def __init__(self, steps: list, output: Callable, num_inputs: int):
        self.steps = steps  # (graph-function body, component, argument getters, keyword getters)
        self.output = output
        self.num_inputs = num_inputs

    def run(self, inputs: list) -> Any:
        values = list(inputs)
        append = values.append
        for body, component, getters, kwarg_getters in self.steps:
            args = [get(values) for get in getters]
            if kwarg_getters:
                append(body(component, *args, **{k: get(values) for k, get in kwarg_getters.items()}))
            else:
                append(body(component, *args))
        return self.output(values)


class PlanBuilder:
    """Collects the plan of one traced root API call.

    Args:
        where: "<root scope>.<API>", for error messages.
        inputs: The traced call's arguments (records, nested like their spaces); slot i is input i.
    """

    def __init__(self, where: str, inputs: list):
        self.where = where
        self.num_inputs = len(inputs)
        self.steps: List[tuple] = []
        for slot, value in enumerate(inputs):
            _mark(value, self, slot, ())

    def add_step(self, body: Callable, component: Any, args: tuple, kwargs: dict, output: Any) -> None:
        """Appends a graph-function call; its output's records become slot `num_inputs + index`."""
        getters = [self._getter(a) for a in args]
        kwarg_getters = {k: self._getter(v) for k, v in kwargs.items()}
        self.steps.append((body, component, getters, kwarg_getters))
        _mark(output, self, self.num_inputs + len(self.steps) - 1, ())

    def finish(self, output: Any) -> CallPlan:
        return CallPlan(self.steps, self._getter(output), self.num_inputs)

    def _getter(self, value: Any) -> Callable[[list], Any]:
        """fn(values) -> the run-time counterpart of traced `value`."""
        if type(value) is DataOpRecord:
            origin = value.origin
            if origin is None or origin[0] is not self:
                raise RLGraphBuildError("an API method passed on a traced value that does not come from this call "
                                        "(kept from another API call or build pass)", where=self.where,
                                        hint="do not store traced values on components; pass them as arguments.")
            return _path_getter(origin[1], origin[2])
        if isinstance(value, dict):
            getters = [(k, self._getter(v)) for k, v in value.items()]
            kind = type(value)
            return lambda values: kind((k, get(values)) for k, get in getters)
        if isinstance(value, (tuple, list)):
            getters = [self._getter(v) for v in value]
            kind = type(value)
            if hasattr(value, "_fields"):  # A namedtuple.
                return lambda values: kind(*[get(values) for get in getters])
            return lambda values: kind([get(values) for get in getters])
        # Constants fixed at build time: numbers, None, components, spaces, variables.
        return lambda values: value


def _mark(value: Any, plan: PlanBuilder, slot: int, path: tuple) -> None:
    """Gives every record in `value` its origin (plan, slot, path)."""
    if type(value) is DataOpRecord:
        value.origin = (plan, slot, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            _mark(item, plan, slot, path + (key,))
    elif isinstance(value, (tuple, list)):
        for index, item in enumerate(value):
            _mark(item, plan, slot, path + (index,))


def _path_getter(slot: int, path: tuple) -> Callable[[list], Any]:
    if not path:
        return lambda values: values[slot]
    if len(path) == 1:
        key = path[0]
        return lambda values: values[slot][key]

    def deep(values):
        value = values[slot]
        for key in path:
            value = value[key]
        return value
    return deep
