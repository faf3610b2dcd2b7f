"""`GraphExecutor`: builds a root component and serves its API methods with numpy in and out.

Backend subclasses: `TensorFlowExecutor` (tensorflow_executor.py) and `PyTorchExecutor`
(pytorch_executor.py). Create one with `GraphExecutor.from_spec(backend, ...)` or
`executor_for(backend, ...)`: the backend name is looked up in `GraphExecutor.__lookup_classes__`,
which `rlgraph/graphs/__init__.py` fills (as the other packages fill their families' tables), so
that this module does not import its subclasses.
"""
from __future__ import annotations

import abc
import contextlib
import logging
import time
from typing import Any, Dict, Optional

import numpy as np

from rlgraph.backend_system import get_backend, normalize_backend
from rlgraph.components.api_aliases import class_aliases, resolve_api_name
from rlgraph.graphs.compilation import CompileStatus
from rlgraph.graphs.executor_saving import ExecutorSaving
from rlgraph.graphs.executor_variables import ExecutorVariables
from rlgraph.graphs.graph_builder import BuildStats, GraphBuilder
from rlgraph.graphs.input_checks import make_converter
from rlgraph.graphs.placement import Placement, component_devices
from rlgraph.utils.compile_spec import check_compile, compiled_api_methods
from rlgraph.utils.devices import check_device
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphError, RLGraphSpecError
from rlgraph.utils.specifiable import Specifiable, closest_match

logger = logging.getLogger(__name__)


class GraphExecutor(ExecutorVariables, ExecutorSaving, Specifiable, metaclass=abc.ABCMeta):
    """Builds and runs one root component.

    Args:
        graph_builder: A `GraphBuilder` (or its spec); default: a new one.
        execution_spec: {"seed": int, "torch_num_threads": int, ...}.
        saver_spec: {"directory": ...} default place for `store_model`.
        summary_spec: Passed to the default graph builder.
        seed: Shortcut for execution_spec["seed"].
    """

    backend = None
    # Backend name -> executor class ({"tf": TensorFlowExecutor, "pytorch": PyTorchExecutor}); filled by
    # rlgraph/graphs/__init__.py once both subclasses are defined.
    __lookup_classes__: dict = {}
    # execution_spec.compile modes the backend's compiler takes (None: its default).
    compile_modes: tuple = ("default",)

    def __init__(self, graph_builder: Any = None, execution_spec: Optional[dict] = None,
                 saver_spec: Optional[dict] = None, summary_spec: Optional[dict] = None,
                 seed: Optional[int] = None, **kwargs):
        if kwargs:
            raise RLGraphError(f"unknown executor argument(s) {sorted(kwargs)}", where=type(self).__name__)
        self.graph_builder = graph_builder if isinstance(graph_builder, GraphBuilder) else \
            GraphBuilder.from_spec(graph_builder or {}, summary_spec=summary_spec)
        self.execution_spec = dict(execution_spec or {})
        if seed is not None:
            self.execution_spec["seed"] = seed
        self.saver_spec = dict(saver_spec or {})
        # The executor's own numpy stream, for draws an agent makes outside its graph (e.g. DDPG's
        # random first actions): seeded by `seed()`, kept by checkpoints; without a seed it starts
        # from numpy's global generator. Agents in one process do not share it.
        seed = self.execution_spec.get("seed")
        self.numpy_rng = np.random.RandomState(np.random.randint(0, 2 ** 31) if seed is None else seed)
        self.root_component = None
        self.device = None  # The backend's device, set at build (execution_spec.device).
        # Components with a device of their own, by global scope (placement.py), set at build.
        self.placements: Dict[str, Placement] = {}
        # Root API methods compiled by the backend's compiler (execution_spec.compile), set at build.
        self.compiled_apis: frozenset = frozenset()
        self.compile_status = CompileStatus()  # Per compiled method: compiled or why not (compilation.py).
        self.build_stats = BuildStats()
        self._converters: Dict[str, list] = {}
        self._api_aliases: Dict[str, str] = {}  # Alias -> root API method (e.g. "call" -> "apply").

    @classmethod
    def resolve_type(cls, type_: Any):
        """A backend name ("tf", "pytorch", ...) picks that backend's executor; anything else
        resolves as in `Specifiable.resolve_type` (so it must be a `GraphExecutor` class)."""
        if isinstance(type_, str):
            try:
                backend = normalize_backend(type_)
            except RLGraphError:
                backend = None
            if backend in GraphExecutor.__lookup_classes__:
                return GraphExecutor.__lookup_classes__[backend]
        return super().resolve_type(type_)

    # --- Build --------------------------------------------------------------------------------------
    def build(self, root_components: Any, input_spaces: Optional[Dict[str, Any]] = None,
              **kwargs) -> BuildStats:
        """Builds the root component (a component or a one-element list) and prepares its API methods.

        Returns:
            The build statistics (`total_build_time`, `build_overhead`, `variable_count`, ...).
        """
        start = time.perf_counter()
        if isinstance(root_components, (list, tuple)):
            if len(root_components) != 1:
                raise RLGraphError("exactly one root component is supported", where=type(self).__name__,
                                   received=len(root_components))
            root_components = root_components[0]
        if kwargs:
            raise RLGraphError(f"unknown build argument(s) {sorted(kwargs)}", where=f"{type(self).__name__}.build")
        self.root_component = root_components
        self.seed(self.execution_spec.get("seed"))
        self._configure_backend()
        self.device = self._resolve_device(check_device(self.execution_spec.get("device", "auto"), type(self).__name__))
        compile_spec = check_compile(self.execution_spec.get("compile", False), type(self).__name__)
        if compile_spec and compile_spec["mode"] not in (None,) + self.compile_modes:
            raise RLGraphSpecError(f"{self.backend}'s compiler has no mode {compile_spec['mode']!r}",
                                   where=f"{type(self).__name__}(execution_spec.compile.mode)",
                                   expected=list(self.compile_modes), received=repr(compile_spec["mode"]),
                                   hint="TF compiles with XLA, which has no modes; leave the mode out.")
        self.placements = self._place_components(root_components)
        with self._device_scope():
            stats = self.graph_builder.build(root_components, input_spaces, self.backend)
        prepare_start = time.perf_counter()
        # Per root API: the input converters and the number of required inputs.
        self._converters = {
            api: ([make_converter(space, f"{root_components.global_scope}.{api}({name})", self._to_tensor)
                   for name, space in args], len(root_components.api_methods[api].required))
            for api, args in self.graph_builder.api_signatures.items()}
        self._api_aliases = {alias: api for alias, api in class_aliases(type(root_components)).items()
                             if api in self._converters}
        self.compiled_apis = frozenset(compiled_api_methods(compile_spec, self._converters, type(self).__name__) or ())
        self._compile_mode = compile_spec["mode"] if compile_spec else None
        self.compile_status = CompileStatus()
        with self._device_scope():
            self._after_build()
        # Re-seed so that runs do not depend on how many random ops the build's trace drew.
        self.seed(self.execution_spec.get("seed"))
        prepare = time.perf_counter() - prepare_start
        self.build_stats = BuildStats(stats, total_build_time=time.perf_counter() - start,
                                      backend_time=stats["backend_time"] + prepare)
        self.build_stats["build_overhead"] = self.build_stats["total_build_time"] - self.build_stats["backend_time"]
        if self.compiled_apis:
            self.build_stats["compile"] = self.compile_status  # (Filled at each method's first call.)
        return self.build_stats

    def _configure_backend(self) -> None:
        """Backend settings from `execution_spec` (threads, ...)."""

    def _resolve_device(self, name: str) -> Any:
        """Backend hook: the backend's device for checked `execution_spec.device` name `name` ("auto"
        resolved), refusing a GPU the backend does not see (`rlgraph/utils/devices.py`)."""
        return name

    def _device_scope(self) -> Any:
        """Backend hook: the context under which variables are created and API methods run on `self.device`."""
        return contextlib.nullcontext()

    def _place_components(self, root: Any) -> Dict[str, Placement]:
        """Gives each component whose own device (see `placement.py`) is not the executor's a
        `Placement`, and where there is one, every other component the placement of the executor's
        device (its arguments come from other devices too); returns {global scope: placement} of the
        components off the executor's device."""
        names = component_devices(root, self.execution_spec.get("device_map"), type(self).__name__)
        components = root.get_all_sub_components()
        placements: Dict[str, Placement] = {}
        by_device: Dict[Any, Placement] = {}
        for component in components:
            component._placement = None
            name = names.get(component)
            if name is None:
                continue
            device = self._resolve_component_device(name, component.global_scope)
            if device == self.device:
                continue
            if device not in by_device:
                by_device[device] = self._placement(name, device, home=False)
            component._placement = placements[component.global_scope] = by_device[device]
        if placements:
            home = self._placement(str(self.device), self.device, home=True)
            for component in components:
                if component._placement is None:
                    component._placement = home
        return placements

    def _resolve_component_device(self, name: str, owner: str) -> Any:
        """Backend hook: the backend's device of a component's checked device `name` (refusing a GPU
        the backend does not see, naming `owner`)."""
        return name

    def _placement(self, name: str, device: Any, home: bool) -> Placement:
        """Backend hook: the `Placement` of backend device `device` (checked name `name`); `home`: the
        executor's own device (whose context the API calls already run in)."""
        raise RLGraphError(f"the {self.backend} executor cannot place components on a device of their own",
                           where=type(self).__name__, received=name)

    def _after_build(self) -> None:
        """Backend preparation after the build (e.g. tracing functions)."""

    def seed(self, seed: Optional[int]) -> None:
        """Seeds the executor's own streams (`numpy_rng` and the backend's, see `_seed_backend`) and
        numpy's global generator (which the build's weight initializers draw from)."""
        if seed is not None:
            np.random.seed(seed)
            self.numpy_rng.seed(seed)
            self._seed_backend(seed)

    def get_rng_state(self) -> dict:
        """The states of the executor's random streams: its numpy one and the backend's (where it has
        one); what checkpoints keep."""
        return {"numpy": self.numpy_rng.get_state(), "backend": self._get_backend_rng_state()}

    def set_rng_state(self, state: dict) -> None:
        """Restores a `get_rng_state` result."""
        self.numpy_rng.set_state(state["numpy"])
        if state.get("backend") is not None:
            self._set_backend_rng_state(state["backend"])

    def check_backend_rng_state(self, state: np.ndarray, where: str) -> None:
        """Refuses a backend generator state (uint8 [N], from a checkpoint of this backend) that
        `set_rng_state` would not take, before anything is restored.

        Raises:
            RLGraphCheckpointError: Naming what the backend expects.
        """
        try:
            self._check_backend_rng_state(state)
        except Exception as error:  # noqa: BLE001 - each backend raises its own types for a bad state.
            raise RLGraphCheckpointError(f"the {self.backend} random generator state is damaged ({error})",
                                         where=where, received=f"{state.dtype} {state.shape}") from None

    def _get_backend_rng_state(self) -> Any:
        """Backend hook: the backend generator's state, or None where it cannot be captured."""
        return None

    def _check_backend_rng_state(self, state: np.ndarray) -> None:
        """Backend hook: raises (any exception) for a state `_set_backend_rng_state` would not take."""

    def _set_backend_rng_state(self, state: Any) -> None:
        """Backend hook."""

    # --- Execution ----------------------------------------------------------------------------------
    def execute(self, *api_calls: Any) -> Any:
        """Runs root API methods.

        Args:
            *api_calls: Each an API name, or a tuple (name, inputs[, return_keys]); `inputs` is
                one argument, or a list of positional arguments; `return_keys` picks items
                (indices for tuple results, keys for dict results).

        Returns:
            The numpy result (nested like the output), or a list of them for several calls.
        """
        results = [self._execute_one(call) for call in api_calls]
        return results[0] if len(results) == 1 else results

    def _execute_one(self, call: Any) -> Any:
        if isinstance(call, str):
            name, inputs, keys = call, None, None
        else:
            name, inputs, keys = (tuple(call) + (None, None))[:3]
        entry = self._converters.get(name)
        if entry is None:
            # Only names that are no root API method get here: an alias (`call` for `apply`) or an error.
            name = self._api_aliases.get(name) or self._resolve_api_name(name)
            entry = self._converters[name]
        if inputs is None:
            args = []
        elif isinstance(inputs, list):
            args = inputs
        else:
            args = [inputs]
        converters, required = entry
        if len(args) > len(converters) or len(args) < required:
            raise RLGraphError(f"wrong number of inputs for API method '{name}'", where=self._where(),
                               expected=f"{required} to {len(converters)} "
                               f"({', '.join(n for n, _ in self.graph_builder.api_signatures[name])})",
                               received=len(args))
        if len(args) < len(converters):
            # Optional arguments that have a space but were left out get their python default: the
            # API method was built (traced) with every argument that has a space.
            signature = self.graph_builder.api_signatures[name]
            defaults = self.root_component.api_methods[name].defaults
            args = list(args)
            for arg, _ in signature[len(args):]:
                if defaults.get(arg) is None:
                    raise RLGraphError(f"API method '{name}' was built with an input space for argument '{arg}', "
                                       "so every call must pass it", where=f"{self._where()}.{name}({arg})",
                                       expected=f"{len(converters)} inputs "
                                       f"({', '.join(n for n, _ in signature)})", received=len(args))
                args.append(defaults[arg])
        tensors = [convert(value) for convert, value in zip(converters, args)]
        output = self._call_api(name, tensors)
        if keys is not None:
            output = _pick(output, keys, name)  # Before the conversion: unpicked outputs are not copied.
        return self._to_numpy(output)

    def _resolve_api_name(self, name: str) -> str:
        """The root API method that `name` names: itself or the method it is an alias of (`call` for
        `apply`, see `ApiAlias`).

        Raises:
            RLGraphError: If there is no such root API method, or it is switched off.
        """
        root = self.root_component
        resolved = resolve_api_name(root, name) if root is not None else name
        if resolved in self._converters:
            return resolved
        if resolved in getattr(root, "switched_off_apis", ()):
            raise RLGraphError(f"root API method '{name}' is switched off", where=f"{self._where()}.{name}",
                               expected=sorted(self._converters),
                               hint="remove it from the component's switched_off_apis to build and call it.")
        raise RLGraphError(f"no root API method '{name}'", where=self._where(), expected=sorted(self._converters),
                           hint=f"did you mean '{closest_match(name, list(self._converters))}'?")

    def _where(self) -> str:
        return getattr(self.root_component, "global_scope", type(self).__name__)

    # Variables (`read_variable_values`, `get_weights`, `set_weights`): `ExecutorVariables` in
    # executor_variables.py; saving (`store_model`, `load_model`, `export_graph`): `ExecutorSaving`
    # in executor_saving.py.

    def terminate(self) -> None:
        """Releases backend resources."""

    # --- Backend hooks ----------------------------------------------------------------------------
    @abc.abstractmethod
    def _to_tensor(self, array: np.ndarray) -> Any:
        """Backend hook."""

    @abc.abstractmethod
    def _call_api(self, name: str, tensors: list) -> Any:
        """Backend hook."""

    @abc.abstractmethod
    def _to_numpy(self, output: Any) -> Any:
        """Backend hook."""

    @abc.abstractmethod
    def _read(self, variable: Any) -> np.ndarray:
        """Backend hook."""

    @abc.abstractmethod
    def _assign(self, variable: Any, value: np.ndarray) -> None:
        """Backend hook."""

    @abc.abstractmethod
    def _seed_backend(self, seed: int) -> None:
        """Backend hook."""

    @abc.abstractmethod
    def _save(self, path: str, exclude: frozenset = frozenset()) -> str:
        """Backend hook: writes every variable but the global names in `exclude`."""

    @abc.abstractmethod
    def _read_checkpoint(self, path: str) -> dict:
        """Backend hook: global variable name -> numpy value of each variable stored at `path`
        (read and integrity-checked only; nothing is assigned).

        Raises:
            RLGraphCheckpointError: A missing or unreadable file.
        """

    @abc.abstractmethod
    def _export(self, path: str) -> str:
        """Backend hook."""


def _pick(output: Any, keys: Any, name: str) -> Any:
    single = not isinstance(keys, (list, tuple))
    keys = [keys] if single else list(keys)
    try:
        picked = [output[k] for k in keys]
    except (KeyError, IndexError, TypeError):
        raise RLGraphError(f"return_keys {keys} do not fit the output of '{name}'", where="execute",
                           received=type(output).__name__) from None
    return picked[0] if single else picked


def executor_for(backend: Optional[str] = None, **kwargs) -> GraphExecutor:
    """A new executor for `backend` (default: `get_backend()`)."""
    return GraphExecutor.from_spec(backend or get_backend(), **kwargs)


def numpy_structure(output: Any, to_numpy) -> Any:
    """Maps `to_numpy` over every leaf of dicts, tuples and lists (None stays None)."""
    if isinstance(output, dict):
        return type(output)((k, numpy_structure(v, to_numpy)) for k, v in output.items())
    if isinstance(output, (tuple, list)):
        items = [numpy_structure(v, to_numpy) for v in output]
        return type(output)(*items) if hasattr(output, "_fields") else type(output)(items)
    return output if output is None else to_numpy(output)
