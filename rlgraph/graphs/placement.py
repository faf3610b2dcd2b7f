"""Per-component devices: the reference's `Component(device=...)`, `memory_spec.device` and the
original's `execution_spec.device_map`.

An executor runs on `execution_spec.device`. A component may name a device of its own (its
`device` argument, or an entry of `execution_spec.device_map` naming its scope); its sub-components
inherit it unless they name another. Such a component's variables are created on that device and
its graph functions run there: the executor gives it a `Placement`, whose `scope()` the build
enters around `create_variables`, and whose `call` runs each of the component's graph functions,
at build and at every call, on that device: PyTorch moves the tensor arguments that are elsewhere
(one packed copy per source device, see `torch_transfers.move_to`; tensors that carry gradients one
by one, so that gradients flow back across the copy) and makes the device the default of the
factory functions; TensorFlow traces the function under `tf.device`, and inserts the copies itself.
The results stay on the component's device until the next graph function (or the executor's output
conversion) needs them elsewhere. Once one component is placed, every other component gets the
placement of the executor's device, so that what comes to it from a placed component is moved back.

Variables are never copied: a component that reads or updates another's variables (an optimizer,
a synchronizer) must be on their device, which the build checks (`refuse_variables_elsewhere`).

An agent without placed components has no placement anywhere and pays nothing for this. The typical
use is a big replay memory kept in host memory while the networks train on a GPU
(`memory_spec: {"device": "cpu", ...}` with `execution_spec.device: "cuda"`).

Device names are checked as `execution_spec.device`'s ("cpu", "cuda", "cuda:N", "auto", and the
original's TF1 names such as "/device:GPU:0"); a GPU the backend does not see is refused, naming
the component. A `device_map` key that names no component is refused too.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

from rlgraph.utils.devices import DEVICE_MAP_KEY, check_device, check_device_map
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class Placement:
    """Where one component's variables live and its graph functions run (made by an executor's
    `_placement` hook).

    Args:
        name: The checked device name ("cpu", "cuda:1", ...).
        device: The backend's device (a `torch.device`, a TF device string).
        scope: fn() -> a context manager under which the component's variables are created.
        call: fn(body, component, args, kwargs) -> `body(component, *args, **kwargs)` run on the device.
        home: Whether this is the executor's own device (given to the unplaced components once one
            is placed).

    `moving` holds the (component, graph function body) pairs of a home placement that received
    arguments from another device at build (the placement's `call` adds them): devices are fixed at
    build, so only their call-plan steps need the move at run time (`step_body`).
    """

    __slots__ = ("name", "device", "scope", "call", "home", "moving")

    def __init__(self, name: str, device: Any, scope: Callable[[], Any], call: Callable[..., Any],
                 home: bool = False):
        self.name = name
        self.device = device
        self.scope = scope
        self.call = call
        self.home = home
        self.moving: set = set()

    def __repr__(self) -> str:
        return f"Placement({self.name!r})"


def run_graph_fn_body(body: Callable, component: Any, args: tuple, kwargs: dict) -> Any:
    """`body(component, *args, **kwargs)`, on the component's own device where it has one."""
    placement = component._placement
    if placement is None:
        return body(component, *args, **kwargs)
    return placement.call(body, component, args, kwargs)


def placed_body(body: Callable, component: Any) -> Callable:
    """`body`, or where `component` has a placement, a function of the same signature that runs it there."""
    placement = component._placement
    if placement is None:
        return body
    call = placement.call

    def run_placed(self, *args, **kwargs):
        return call(body, self, args, kwargs)
    return run_placed


def refuse_variables_elsewhere(component: Any, device: Any, arguments: Any,
                               elsewhere: Callable[[Any, Any], Optional[str]]) -> None:
    """Raises when `arguments` (a graph function's, at build) hold variables that live on another
    device than `device`, where the graph function of `component` runs: a component that reads or
    updates another's variables (an optimizer, a synchronizer) must share their device (PyTorch would
    update a copy; TensorFlow's fused update ops need their variables and slots in one place).

    Args:
        elsewhere: fn(leaf, device) -> the leaf's device name if it is a variable off `device`, else None.
    """
    found: list = []
    _walk(arguments, lambda leaf: found.append(elsewhere(leaf, device)))
    found = [name for name in found if name is not None]
    if found:
        raise RLGraphSpecError(f"a graph function of this component (on {device}) receives variables that live on "
                               f"{found[0]}", where=f"{component.global_scope}(device)",
                               expected=f"variables on {device}", received=f"{len(found)} variable(s) on {found[0]}",
                               hint="a component that reads or updates another's variables (an optimizer, a "
                                    "synchronizer) must be on their device: give it the same device (its own "
                                    "device argument or an execution_spec.device_map entry).")


def _walk(value: Any, visit: Callable[[Any], None]) -> None:
    if isinstance(value, dict):
        for item in value.values():
            _walk(item, visit)
    elif isinstance(value, (tuple, list)):
        for item in value:
            _walk(item, visit)
    elif value is not None:
        visit(value)


def step_body(body: Callable, component: Any) -> Callable:
    """The body a call plan's step runs: `placed_body`, except on the executor's own device where the
    build saw nothing come from elsewhere (there it is `body` itself, and costs nothing)."""
    placement = component._placement
    if placement is not None and placement.home and (id(component), body) not in placement.moving:
        return body
    return placed_body(body, component)


def component_devices(root: Any, device_map: Optional[Dict[str, Any]], owner: str) -> Dict[Any, str]:
    """Every component of `root`'s tree that has a device of its own (its `device`, a `device_map`
    entry for its global scope or its scope, or its parent's), mapped to the checked device name.
    Components that name none are left out (they run on the executor's device).

    Raises:
        RLGraphSpecError: A device name that is not one, naming the component (or the map's key);
            a `device_map` that is not a dict of names, or a key that names no component.
    """
    wanted = check_device_map(device_map, owner) or {}
    components = root.get_all_sub_components()
    used = set()
    own: Dict[Any, Optional[str]] = {}
    for component in components:
        key = next((k for k in (component.global_scope, component.scope) if k in wanted), None)
        name = None
        if key is not None:
            name = wanted[key]
            used.add(key)
        elif component.device is not None:
            name = check_device(component.device, component.global_scope or component.scope, key="device")
        own[component] = name
    unknown = sorted(set(wanted) - used)
    if unknown:
        scopes = sorted(c.global_scope for c in components)
        raise RLGraphSpecError(f"{DEVICE_MAP_KEY} names no component of the agent: {', '.join(map(repr, unknown))}",
                               where=f"{owner}({DEVICE_MAP_KEY})", expected=f"component scopes, e.g. {scopes[:8]}",
                               received=unknown,
                               hint="a key is a component's scope (\"replay-memory\") or its global scope "
                                    "(\"dqn-agent/replay-memory\").")
    devices: Dict[Any, str] = {}
    for component in reversed(components):  # (The root first, then level by level downwards.)
        name = own[component]
        if name is None and component.parent_component is not None:
            name = devices.get(component.parent_component)
        if name is not None:
            devices[component] = name
    return devices
