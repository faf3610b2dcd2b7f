"""Call plans: the PyTorch executor's fast path for root API methods.

A root API method on PyTorch runs define-by-run through every API method of the component tree
(`get_actions` -> policy -> network -> layers ...), although only its graph functions touch
tensors. On a small network that composition costs more than the maths. So the executor
records, for one call, the sequence of outermost graph-function calls, where each of their
arguments came from (an API input, an earlier graph function's result, or a constant) and
where the outputs come from. Replaying that plan calls the same graph functions on the new
inputs and skips the API layers in between.

Safety rules:
- API methods only route data (DESIGN.md: backend code lives in graph functions). A plan is
  the same for every call with the same input shapes, so plans are kept per input-shape key.
- A plan is used only after two recordings of that key gave the same plan; a tensor argument
  whose origin is unknown (made outside a graph function) makes the API method unplannable,
  and it then always runs define-by-run.
- Graph functions called from within a graph function are not recorded: the outer one calls
  them again on replay.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from rlgraph.utils.decorators import tracing

_SCALARS = (bool, int, float, str, bytes, type(None), np.generic)


class NotPlannable(Exception):
    """A recorded call cannot be replayed safely (e.g. a tensor of unknown origin)."""


class PlanRecorder:
    """Collects the outermost graph-function calls of one API call (see `tracing.recorder`)."""

    def __init__(self):
        self.steps: List[Tuple[Callable, Any, tuple, dict, Any]] = []
        self.depth = 0

    def call(self, body: Callable, component: Any, args: tuple, kwargs: dict) -> Any:
        if self.depth:
            return body(component, *args, **kwargs)  # Nested: the outer graph function repeats it.
        self.depth += 1
        try:
            result = body(component, *args, **kwargs)
        finally:
            self.depth -= 1
        self.steps.append((body, component, args, kwargs, result))
        return result


def record_call(method: Callable, inputs: list) -> Tuple[Any, PlanRecorder]:
    """Runs `method(*inputs)` define-by-run while recording; returns (output, recorder)."""
    recorder = PlanRecorder()
    previous = tracing.recorder
    tracing.recorder = recorder
    try:
        output = method(*inputs)
    finally:
        tracing.recorder = previous
    return output, recorder


class CallPlan:
    """A replayable sequence of graph-function calls (built by `compile_plan`)."""

    __slots__ = ("steps", "output", "signature")

    def __init__(self, steps: list, output: Callable, signature: tuple):
        self.steps = steps
        self.output = output
        self.signature = signature  # What two recordings must share to be "the same plan".

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


def compile_plan(inputs: list, recorder: PlanRecorder, output: Any, is_tensor: Callable[[Any], bool]) -> CallPlan:
    """Turns one recorded call into a `CallPlan`.

    Raises:
        NotPlannable: If a tensor argument or output has no recorded origin.
    """
    origins: Dict[int, Tuple[int, tuple]] = {}  # id(leaf) -> (slot, path in that slot's value)

    def register(value: Any, slot: int, path: tuple = ()) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                register(item, slot, path + (key,))
        elif isinstance(value, (tuple, list)):
            for index, item in enumerate(value):
                register(item, slot, path + (index,))
        elif is_tensor(value):
            origins[id(value)] = (slot, path)
        elif slot >= len(inputs) and value is not None:
            # A number or object made at run time would be baked into the plan as a constant.
            raise NotPlannable(f"a graph function returned a {type(value).__name__}, not a tensor")

    def template(value: Any) -> Any:
        """A hashable description: ("ref", slot, path), ("const", id-or-value), or a container."""
        if isinstance(value, dict):
            return (type(value), tuple((k, template(v)) for k, v in value.items()))
        if isinstance(value, (tuple, list)):
            return (type(value), tuple(template(v) for v in value))
        if is_tensor(value):
            origin = origins.get(id(value))
            if origin is None:
                raise NotPlannable("a tensor argument was not made by a graph function")
            return ("ref",) + origin
        if isinstance(value, _SCALARS):
            return ("const", type(value), value)
        return ("object", id(value))  # Components, spaces, callables: the same object every call.

    for slot, value in enumerate(inputs):
        register(value, slot)
    steps, signature = [], []
    for index, (body, component, args, kwargs, result) in enumerate(recorder.steps):
        arg_templates = [template(a) for a in args]
        kwarg_templates = {k: template(v) for k, v in kwargs.items()}
        signature.append((body, id(component), tuple(arg_templates), tuple(sorted(kwarg_templates.items()))))
        steps.append((body, component, [_getter(t, a) for t, a in zip(arg_templates, args)],
                      {k: _getter(t, kwargs[k]) for k, t in kwarg_templates.items()}))
        register(result, len(inputs) + index)
    output_template = template(output)
    signature.append(("output", output_template))
    return CallPlan(steps, _getter(output_template, output), tuple(signature))


def _getter(template: Any, example: Any) -> Callable[[list], Any]:
    """fn(values) -> the value `template` describes (`example` is the recorded value)."""
    kind = template[0]
    if kind == "ref":
        slot, path = template[1], template[2]
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
    if kind in ("const", "object"):
        return lambda values: example
    container, items = template
    if issubclass(container, dict):
        getters = [(k, _getter(t, example[k])) for k, t in items]
        return lambda values: container((k, get(values)) for k, get in getters)
    getters = [_getter(t, e) for t, e in zip(items, example)]
    if hasattr(example, "_fields"):  # A namedtuple.
        return lambda values: container(*[get(values) for get in getters])
    return lambda values: container([get(values) for get in getters])


class PlanCache:
    """Plans per API method and input-shape key: record twice, compare, then replay.

    Args:
        is_tensor: Whether a value is a backend tensor (whose origin must be known).
        max_keys: Input-shape keys kept per API method (batch sizes seen); further keys run
            define-by-run.
    """

    def __init__(self, is_tensor: Callable[[Any], bool], max_keys: int = 8):
        self.is_tensor = is_tensor
        self.max_keys = max_keys
        self.plans: Dict[str, Dict[Any, Any]] = {}  # api -> key -> CallPlan, or the first signature
        self.unplannable: Dict[str, str] = {}  # api -> why

    def call(self, api: str, method: Callable, inputs: list, key: Any) -> Any:
        by_key = self.plans.get(api)
        if by_key is None:
            if api in self.unplannable:
                return method(*inputs)
            by_key = self.plans[api] = {}
        entry = by_key.get(key)
        if type(entry) is CallPlan:
            return entry.run(inputs)
        if entry is None and len(by_key) >= self.max_keys:
            return method(*inputs)
        output, recorder = record_call(method, inputs)
        try:
            plan = compile_plan(inputs, recorder, output, self.is_tensor)
        except NotPlannable as reason:
            self.unplannable[api] = str(reason)
            self.plans.pop(api, None)
            return output
        if entry is None:
            # First recording: replay once a second one agrees. The pending plan keeps the objects
            # it refers to alive, so that their ids cannot be reused by the second call's objects.
            by_key[key] = ("pending", plan)
        elif entry[1].signature == plan.signature:
            by_key[key] = plan
        else:
            self.unplannable[api] = "two calls took different paths through the API methods"
            self.plans.pop(api, None)
        return output

    def clear(self) -> None:
        self.plans.clear()
        self.unplannable.clear()


def input_key(inputs: list) -> Optional[tuple]:
    """The shapes of the input leaves (plans may depend on batch sizes)."""
    key = []
    for value in inputs:
        if isinstance(value, dict):
            key.append(input_key(list(value.values())))
        elif isinstance(value, (tuple, list)):
            key.append(input_key(list(value)))
        else:
            key.append(getattr(value, "shape", None))
    return tuple(key)
