"""Backend selection: which deep-learning backend builds and runs graphs right now.

`get_backend()` answers, in this order:
1. the backend of the innermost active `backend_scope` in this thread (builders and executors
   enter one, so two agents on different backends can live in one process);
2. the process default set with `set_backend()`;
3. the `RLGRAPH_BACKEND` environment variable;
4. "pytorch" if torch is installed, else "tf" if tensorflow is installed.

Nothing here imports tensorflow or torch: availability is probed with `importlib.util.find_spec`.
"""
from __future__ import annotations

import functools
import importlib.util
import os
import threading
from typing import Optional

from rlgraph.utils.rlgraph_errors import RLGraphBackendUnavailableError, RLGraphError

BACKENDS = ("tf", "pytorch")
DISTRIBUTED_BACKENDS = ("ray",)
_ALIASES = {"tf": "tf", "tensorflow": "tf", "tf2": "tf", "pytorch": "pytorch", "torch": "pytorch"}
_MODULES = {"tf": "tensorflow", "pytorch": "torch", "ray": "ray"}

_default_backend: Optional[str] = None
_default_distributed_backend: Optional[str] = None
_local = threading.local()


def normalize_backend(name: str, source: str = "backend") -> str:
    """Returns the canonical backend name ("tf" or "pytorch") for `name` or an alias ("torch").

    Raises:
        RLGraphError: If `name` is not a known backend.
    """
    key = str(name).strip().lower()
    if key not in _ALIASES:
        raise RLGraphError("unknown backend", where=source, expected=" or ".join(repr(b) for b in BACKENDS),
                           received=repr(name), hint="'torch' is accepted as an alias of 'pytorch'.")
    return _ALIASES[key]


def is_backend_installed(name: str) -> bool:
    """Whether the python package of backend `name` can be imported (without importing it)."""
    key = name if name in DISTRIBUTED_BACKENDS else normalize_backend(name)
    return _module_exists(_MODULES[key])


@functools.lru_cache(maxsize=None)
def _module_exists(module: str) -> bool:
    # Cached: get_backend() runs inside graph functions, and installs don't change mid-process.
    return importlib.util.find_spec(module) is not None


def _require_installed(name: str) -> str:
    if not is_backend_installed(name):
        raise RLGraphBackendUnavailableError(name)
    return name


def set_backend(name: Optional[str]) -> None:
    """Sets the process-wide default backend ("tf", "pytorch" or "torch"); None resets it.

    Raises:
        RLGraphError: If the name is unknown.
        RLGraphBackendUnavailableError: If the backend's package is not installed.
    """
    global _default_backend
    _default_backend = None if name is None else _require_installed(normalize_backend(name, "set_backend"))


def default_backend() -> str:
    """The process default backend (ignores any active `backend_scope`)."""
    if _default_backend is not None:
        return _default_backend
    env = os.environ.get("RLGRAPH_BACKEND")
    if env:
        return _require_installed(normalize_backend(env, "environment variable RLGRAPH_BACKEND"))
    for name in ("pytorch", "tf"):
        if is_backend_installed(name):
            return name
    raise RLGraphBackendUnavailableError(
        "pytorch", "neither PyTorch nor TensorFlow is installed, so no backend can build or run graphs",
        hint="install one with `pip install -c constraints.txt -e \".[torch]\"` (or \".[tf]\").")


def get_backend() -> str:
    """The backend of the graph being built or executed now, else the process default."""
    stack = getattr(_local, "stack", None)
    if stack:
        return stack[-1]
    return default_backend()


class backend_scope:  # noqa: N801 - used like a function: `with backend_scope("tf"):`
    """Makes `get_backend()` return `name` inside the block (per thread, nestable).

    Builders and executors wrap their work in this so that components built for one backend
    see that backend regardless of the process default. A plain class rather than a generator
    context manager: executors enter it on every API call.
    """

    __slots__ = ("backend", "_stack")
    _checked = set()  # Backend names already validated (and found installed).

    def __init__(self, name: str):
        if name not in backend_scope._checked:
            backend = _require_installed(normalize_backend(name, "backend_scope"))
            if backend == name:
                backend_scope._checked.add(name)  # A canonical, installed name: check it once only.
            name = backend
        self.backend = name
        self._stack = None

    def __enter__(self) -> str:
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self.backend)
        self._stack = stack
        return self.backend

    def __exit__(self, *exc) -> None:
        self._stack.pop()


def set_distributed_backend(name: Optional[str]) -> None:
    """Sets the distributed backend ("ray") or None for single-process execution."""
    global _default_distributed_backend
    if name is not None:
        name = str(name).strip().lower()
        if name not in DISTRIBUTED_BACKENDS:
            raise RLGraphError("unknown distributed backend", where="set_distributed_backend",
                               expected="'ray' or None", received=repr(name))
        _require_installed(name)
    _default_distributed_backend = name


def get_distributed_backend() -> Optional[str]:
    """Returns "ray" or None: `set_distributed_backend()`, else `RLGRAPH_DISTRIBUTED_BACKEND`, else None."""
    if _default_distributed_backend is not None:
        return _default_distributed_backend
    env = os.environ.get("RLGRAPH_DISTRIBUTED_BACKEND", "").strip().lower()
    if env in ("", "none"):
        return None
    if env not in DISTRIBUTED_BACKENDS:
        raise RLGraphError("unknown distributed backend", where="environment variable RLGRAPH_DISTRIBUTED_BACKEND",
                           expected="'ray' or 'none'", received=repr(env))
    return env
