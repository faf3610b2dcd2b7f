"""`PyTorchExecutor`: runs root API methods define-by-run on torch tensors."""
from __future__ import annotations

import contextlib
import ctypes
import hashlib
import io
import os
from typing import Any, Dict, Optional

import numpy as np

from rlgraph.backend_system import backend_scope
from rlgraph.graphs.compilation import TorchCompiledRun
from rlgraph.graphs.graph_executor import GraphExecutor, numpy_structure
from rlgraph.graphs.placement import Placement, refuse_variables_elsewhere
from rlgraph.graphs.torch_transfers import move_to, to_device, to_host
from rlgraph.utils import torch_random
from rlgraph.utils.compile_spec import TORCH_MODES, check_compile
from rlgraph.utils.decorators import tracing
from rlgraph.utils.devices import torch_device
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphError


_SUBNORMAL, _ONE = 5e-324, 1.0  # (Module globals, so the product is not folded at compile time.)


class PyTorchExecutor(GraphExecutor):
    """Runs root API methods by replaying their call plans (the graph-function calls the build
    traced, see `rlgraph/graphs/plans.py`); methods declared `no_grad=True` run under
    `torch.no_grad()`. `store_model` writes a dict of tensors (`torch.save`); `export_graph` writes
    only the legacy format "pickled-module" (asked for by name): a pickled `torch.nn.Module` that
    calls the root's API methods by name (policies export with `Agent.export_policy`).

    On glibc (Linux), creating one raises the process's malloc thresholds (see
    `keep_freed_heap_memory`), so that the heap memory of an update's temporaries is reused by
    the next update instead of going back to the OS after each one.
    """

    backend = "pytorch"
    graph_export_formats = ("pickled-module",)
    compile_modes = TORCH_MODES
    _on_host = True  # Whether `self.device` is the CPU (then calls skip the device context and transfers).
    _pin = False  # Whether inputs are staged in pinned host memory (a CUDA device).
    _gpu_rng = None  # The GPU whose generator state checkpoints keep (set with the device and placements).
    # The executor's own random generators, by device kind ("cpu", "cuda"), current while it runs a
    # call or builds (rlgraph/utils/torch_random.py); None: torch's global one (under compile).
    _generators: Optional[Dict[str, Any]] = None

    def _configure_backend(self) -> None:
        import torch
        threads = self.execution_spec.get("torch_num_threads")
        if threads:
            torch.set_num_threads(int(threads))
        # Flush-to-zero for subnormal floats during API calls (TensorFlow's kernels do the same on
        # CPUs): Adam's second moments of rarely active units decay into subnormals, whose arithmetic
        # is ~10-100x slower. The CPU flag is per thread and process-visible (numpy, Python floats), so
        # it is switched on for each call and back off after it; execution_spec
        # {"torch_flush_denormal": False} leaves the thread's setting alone.
        self._flush_denormal = bool(self.execution_spec.get("torch_flush_denormal", True))
        self._set_flush_denormal = torch.set_flush_denormal
        keep_freed_heap_memory()

    def _resolve_device(self, name: str) -> Any:
        import torch
        device = torch_device(name, type(self).__name__)
        self._on_host = device.type == "cpu"
        # Pinned staging memory makes the packed input transfer asynchronous (CUDA only).
        self._pin = device.type == "cuda" and torch.cuda.is_available()
        # The GPU whose generator state checkpoints keep after the CPU's (None: no GPU in use).
        self._gpu_rng = device if device.type == "cuda" else None
        self._generators = None
        if not check_compile(self.execution_spec.get("compile", False), type(self).__name__):
            # Without a seed the streams start from torch's global generator (so torch.manual_seed
            # still makes an unseeded agent reproducible, as it did before).
            seed = self.execution_spec.get("seed")
            seed = int(torch.randint(0, 2 ** 62, (1,))) if seed is None else int(seed)
            self._generators = {"cpu": torch.Generator().manual_seed(seed)}
            if device.type == "cuda":
                self._generators["cuda"] = torch.Generator(device).manual_seed(seed)
        return device

    def _device_scope(self) -> Any:
        # A torch.device as a context makes it the default of the factory functions (torch.zeros,
        # torch.arange, torch.as_tensor of an array, ...) that graph functions call. On the CPU there
        # is nothing to change: no context, whose dispatch mode would cost every op a few µs.
        # The executor's generators are the current ones too: the build's trace draws random numbers.
        if self._on_host:
            return torch_random.using_generators(self._generators)
        scope = contextlib.ExitStack()
        scope.enter_context(self.device)
        scope.enter_context(torch_random.using_generators(self._generators))
        return scope

    def _resolve_component_device(self, name: str, owner: str) -> Any:
        return torch_device(name, owner, key="device")

    def _placement(self, name: str, device: Any, home: bool) -> Placement:
        import torch
        if device.type == "cuda" and self._generators is not None and "cuda" not in self._generators:
            # (Random ops of a component on a GPU draw from a GPU generator of the executor's own.)
            self._generators["cuda"] = torch.Generator(device).manual_seed(int(self._generators["cpu"].initial_seed()))
        if device.type == "cuda" and self._gpu_rng is None:
            self._gpu_rng = device

        def call(body, component, args, kwargs):
            moved_args = move_to(args, device)
            moved_kwargs = move_to(kwargs, device) if kwargs else kwargs
            if tracing.tracer is not None:  # At build: the arguments' variables are checked, and the moves seen.
                refuse_variables_elsewhere(component, device, (args, kwargs), _parameters_elsewhere)
                if moved_args is not args or moved_kwargs is not kwargs:
                    placement.moving.add((id(component), body))
            if home:  # (The API call runs in the executor device's context already.)
                return body(component, *moved_args, **moved_kwargs)
            with device:
                return body(component, *moved_args, **moved_kwargs)
        placement = Placement(name, device, lambda: device, call, home=home)
        return placement

    def _after_build(self) -> None:
        import torch
        root = self.root_component
        self._set_grad_enabled = torch._C._set_grad_enabled  # (torch.no_grad() costs ~1 us more per call)
        self._is_grad_enabled = torch.is_grad_enabled
        self._methods = {api: (self._plan_run(api), root.api_methods[api].no_grad)
                         for api in self.graph_builder.api_signatures}

    def _plan_run(self, api: str) -> Any:
        """fn(tensors) running root API method `api`: its call plan, compiled where execution_spec.compile
        asks (see compilation.py)."""
        run = self.graph_builder.plans[api].run
        if api not in self.compiled_apis:
            return run
        return TorchCompiledRun(run, api, self._compile_mode, not self._on_host, self.compile_status,
                                f"{self._where()}.{api}")

    def _to_tensor(self, array: np.ndarray) -> Any:
        import torch
        if array.dtype.kind in "USO":
            # PyTorch has no string tensors: text reaches graph functions as numpy string arrays.
            return array
        # On a GPU the host tensors of all leaves move in one packed transfer per call (`_call_api`).
        return torch.from_numpy(array if array.flags.writeable else array.copy())

    def _call_api(self, name: str, tensors: list) -> Any:
        run, no_grad = self._methods[name]
        # Subnormal * 1.0 stays non-zero unless flush-to-zero is already on (~30 ns to ask).
        flush = self._flush_denormal and _SUBNORMAL * _ONE != 0.0
        with backend_scope("pytorch"):
            generators = torch_random.set_current(self._generators)
            if no_grad:
                grad_enabled = self._is_grad_enabled()
                self._set_grad_enabled(False)
            if flush:
                self._set_flush_denormal(True)
            try:
                if self._on_host:
                    return run(tensors)
                tensors = to_device(tensors, self.device, self._pin)
                with self.device:
                    return run(tensors)
            finally:
                torch_random.set_current(generators)
                if flush:
                    self._set_flush_denormal(False)
                if no_grad:
                    self._set_grad_enabled(grad_enabled)

    def _to_numpy(self, output: Any) -> Any:
        if self._on_host:
            return numpy_structure(output, _torch_to_numpy)
        return to_host(output, self.device, _torch_to_numpy)  # (One transfer for all the device results.)

    def _read(self, variable: Any) -> np.ndarray:
        return variable.detach().cpu().numpy().copy()

    def _assign(self, variable: Any, value: np.ndarray) -> None:
        import torch
        with torch.no_grad():
            variable.copy_(torch.as_tensor(value, dtype=variable.dtype))

    def _seed_backend(self, seed: int) -> None:
        # The global generator too: a user's graph function that draws with plain torch.rand draws
        # from it (as before the executor had generators of its own).
        import torch
        torch.manual_seed(seed)
        for generator in (self._generators or {}).values():
            generator.manual_seed(seed)

    def _get_backend_rng_state(self) -> Any:
        # The CPU generator's state, followed on a GPU by that GPU's generator state (its random ops
        # draw from it).
        import torch
        own = self._generators
        state = (own["cpu"].get_state() if own else torch.get_rng_state()).numpy().copy()
        if self._gpu_rng is None:
            return state
        gpu = own["cuda"].get_state() if own else torch.cuda.get_rng_state(self._gpu_rng)
        return np.concatenate([state, gpu.numpy()])

    def _set_backend_rng_state(self, state: Any) -> None:
        import torch
        state = np.asarray(state, dtype=np.uint8)
        size = torch.get_rng_state().numel()
        own = self._generators
        cpu = torch.from_numpy(state[:size].copy())
        if own:
            own["cpu"].set_state(cpu)
        else:
            torch.set_rng_state(cpu)
        if self._gpu_rng is not None and state.size > size:
            gpu = torch.from_numpy(state[size:].copy())
            if own:
                own["cuda"].set_state(gpu)
            else:
                torch.cuda.set_rng_state(gpu, self._gpu_rng)

    def _check_backend_rng_state(self, state: np.ndarray) -> None:
        # The CPU generator's state has one length; a fresh generator takes it as the global one
        # would, so anything torch refuses is refused here, before the load changes anything. A state
        # written on a GPU carries that GPU's generator after it: checked on a GPU, ignored on the CPU.
        import torch
        expected = torch.get_rng_state().numel()
        if state.ndim != 1 or state.size < expected:
            raise ValueError(f"at least {expected} bytes expected, {state.size} found")
        torch.Generator().set_state(torch.from_numpy(np.array(state[:expected], dtype=np.uint8)))
        if self._gpu_rng is not None and state.size > expected:
            gpu = torch.cuda.get_rng_state(self._gpu_rng).numel()
            if state.size != expected + gpu:
                raise ValueError(f"{expected} + {gpu} bytes expected on {self._gpu_rng}, {state.size} found")

    def _save(self, path: str, exclude: frozenset = frozenset()) -> str:
        import torch
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        path = path if path.endswith(".pt") else path + ".pt"
        state = {k: r.variable.detach().cpu() for k, r in self._records().items() if k not in exclude}
        # torch.load does not verify the archive's CRCs: a digest of the tensors catches damaged files.
        state[_CHECKSUM_KEY] = torch.frombuffer(bytearray(_digest(state)), dtype=torch.uint8)
        with open(path, "wb") as handle:  # (Python's file: a write that fails raises its OSError.)
            try:
                torch.save(state, handle)
            except RuntimeError as error:  # torch's archive writer turns that OSError (a full disk) into this.
                if not isinstance(error.__context__, OSError):
                    raise
                raise OSError(error.__context__.errno, error.__context__.strerror, path) from error
        return path

    def _read_checkpoint(self, path: str) -> dict:
        if not os.path.exists(path) and os.path.exists(path + ".pt"):
            path += ".pt"
        if not os.path.exists(path):
            raise RLGraphCheckpointError(f"no PyTorch checkpoint at '{path}'", where=f"{self._where()}.load_model")
        with open(path, "rb") as handle:
            return self._parse_checkpoint(handle.read(), path)

    def _read_checkpoint_files(self, files: Any, name: str) -> dict:
        return self._parse_checkpoint(files.read(name + ".pt"), os.path.join(files.path, name + ".pt"))

    def _parse_checkpoint(self, data: bytes, path: str) -> dict:
        """The tensors of a `_save` file held in `data` (read with `weights_only=True`, digest checked)."""
        import torch
        try:
            state = torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except Exception as error:  # noqa: BLE001 - torch raises several types for damaged files.
            raise RLGraphCheckpointError(f"cannot read the checkpoint '{path}' ({type(error).__name__}: {error})",
                                         where=f"{self._where()}.load_model") from error
        if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
            raise RLGraphCheckpointError(f"'{path}' is not an rlgraph checkpoint", where=self._where(),
                                         received=type(state).__name__)
        stored = state.pop(_CHECKSUM_KEY, None)
        if stored is not None and bytes(stored.numpy().tobytes()) != _digest(state):
            raise RLGraphCheckpointError(f"checkpoint '{path}' is damaged: its contents do not match their digest",
                                         where=f"{self._where()}.load_model", hint="restore the file from a copy.")
        return {name: tensor.numpy() for name, tensor in state.items()}

    def _export(self, path: str) -> str:
        import torch
        module = __getattr__("ExportedComponent")(self.root_component, list(self._methods))
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        try:
            torch.save(module, path)
        except Exception as error:  # noqa: BLE001 - pickling can fail in many ways.
            raise RLGraphCheckpointError(f"cannot export the component ({type(error).__name__}: {error})",
                                         where=self._where(),
                                         hint="components defined in functions or holding lambdas cannot be "
                                              "pickled; define them at module level.") from error
        return path


_CHECKSUM_KEY = "__rlgraph_sha256__"

# glibc's malloc gives the free memory above the top of its heap back to the OS whenever more than
# M_TRIM_THRESHOLD is free there, and serves blocks larger than M_MMAP_THRESHOLD with mmap/munmap
# (fresh pages each time). Both start at 128 KiB and glibc raises them only after the process has freed
# a large mmap-ed block (mallopt(3), "dynamic mmap threshold"), which depends on what ran before. An
# update whose temporaries outgrow the trim threshold (SAC on Pendulum with 256x256 networks and batch
# 256: ~5.5 MiB of activations, gradients and Adam inputs) hands its memory back at the end of every
# call and page-faults it in again in the next: ~2,000 page faults and 3-4 ms of system time in a 15 ms
# gradient step, measured (`rlgraph benchmark sac-sb3`). These are the values glibc's own rule reaches at
# most (its DEFAULT_MMAP_THRESHOLD_MAX on 64-bit, and twice that), set once for the process. Every result
# stays the same (only where the memory comes from changes); the process may keep up to 64 MiB of freed
# heap memory instead of returning it to the OS.
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt's parameter numbers (<malloc.h>)
MMAP_THRESHOLD = 32 * 1024 * 1024
TRIM_THRESHOLD = 2 * MMAP_THRESHOLD
_heap_kept: list = []  # [True] once done (or [False] where there is no glibc): once per process.


def keep_freed_heap_memory() -> bool:
    """Sets glibc's M_MMAP_THRESHOLD to 32 MiB and M_TRIM_THRESHOLD to 64 MiB, once per process.

    Returns:
        Whether the thresholds are set (False where the C library is not glibc).
    """
    if not _heap_kept:
        try:
            is_glibc = os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
        except (AttributeError, ValueError, OSError):  # No confstr or no such name: not glibc.
            is_glibc = False
        done = False
        if is_glibc:
            mallopt = ctypes.CDLL(None).mallopt
            # (Setting either turns glibc's dynamic adjustment off: both are set.)
            done = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(_M_TRIM_THRESHOLD,
                                                                                      TRIM_THRESHOLD))
        _heap_kept.append(done)
    return _heap_kept[0]


def _digest(state: dict) -> bytes:
    """SHA-256 over the names, dtypes, shapes and bytes of `state`'s tensors, in name order."""
    digest = hashlib.sha256()
    for key in sorted(state):
        array = state[key].numpy()
        digest.update(f"{key}|{array.dtype}|{array.shape}|".encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.digest()


def _parameters_elsewhere(value: Any, device: Any) -> Optional[str]:
    """The device of `value` if it is a variable (a `torch.nn.Parameter`) off `device`, else None."""
    import torch
    if isinstance(value, torch.nn.Parameter) and value.device != device:
        return str(value.device)
    return None


def _torch_to_numpy(value: Any) -> Any:
    # Numpy arrays (e.g. text results on PyTorch) and python values pass through unchanged.
    if hasattr(value, "detach"):
        # A copy: a returned variable must not change with later in-place updates (TF returns snapshots too).
        if value.requires_grad or value.device.type != "cpu":
            value = value.detach().cpu()
        return value.numpy().copy()
    return value


def _make_exported_class():
    import torch

    class _Exported(torch.nn.Module):
        """A plain `nn.Module` around a built root component: `module("api", *tensors)`."""

        def __init__(self, root, api_names):
            super().__init__()
            self.root = root
            self.api_names = list(api_names)
            for index, record in enumerate(root.variable_records_of_tree().values()):
                variable = record.variable
                if isinstance(variable, torch.nn.Parameter):
                    self.register_parameter(f"v{index}", variable)
                else:
                    self.register_buffer(f"v{index}", variable, persistent=True)

        def forward(self, api_name: str, *args):
            if api_name not in self.api_names:
                raise RLGraphError(f"no API method '{api_name}'", where="exported component",
                                   expected=self.api_names)
            # On the device of its variables, as the executor's calls run (inputs are the caller's to
            # put there, as for any torch module).
            tensors = list(self.parameters()) + list(self.buffers())
            device = tensors[0].device if tensors else torch.device("cpu")
            with backend_scope("pytorch"), (contextlib.nullcontext() if device.type == "cpu" else device):
                return getattr(self.root, api_name)(*args)
    return _Exported


_LAZY_CLASSES: dict = {}  # "ExportedComponent" -> the class, once made.


def __getattr__(name: str):
    # `ExportedComponent` (the legacy pickled-module export's class) is created lazily so that
    # importing this module does not import torch; it is cached (pickle finds a class by name and
    # checks that the name gives the same class) outside the module's namespace, which stays the
    # same before and after its first use.
    if name == "ExportedComponent":
        if name not in _LAZY_CLASSES:
            cls = _make_exported_class()
            cls.__qualname__ = cls.__name__ = name
            cls.__module__ = __name__
            _LAZY_CLASSES[name] = cls
        return _LAZY_CLASSES[name]
    raise AttributeError(name)
