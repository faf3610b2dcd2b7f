"""Each PyTorch agent draws its random numbers from a generator of its own.

torch's random functions draw from one global generator per process, so two agents in one process
(an agent and its copy, several learners, a user's experiment with two agents) used to take numbers
from each other's stream: what one agent did changed the other's exploration and replay samples, and
building an agent reseeded the stream of every agent built before it. TensorFlow has no such
coupling (a traced function's random ops keep their own state), so PyTorch now matches it: the
executor owns one `torch.Generator` per device kind it draws on, seeded by `execution_spec.seed`,
saved and restored with its checkpoints, and makes them the current generators of the calling thread
while it runs an API call (or builds). rlgraph's graph functions draw through the functions below,
which take the current generator for the device of the draw; outside an executor's call they draw
from torch's global generator, as plain torch code does.

A user's own graph function may draw with plain `torch.rand`: that draws from the global generator,
which the executor still seeds too (as before), but is not isolated from other agents. To draw from
the agent's stream, use these functions (or pass `generator(device)` as torch's `generator=`).

Under `execution_spec.compile` the executor has no generators of its own: `torch.compile` cannot
trace an explicit generator, and a compiled method must draw what the uncompiled one draws, so such
an agent draws from the global generator in all its methods.

>>> import torch
>>> with using_generators({"cpu": torch.Generator().manual_seed(3)}):
...     first = rand((2,), dtype=torch.float32, device="cpu")
>>> bool(torch.equal(first, torch.rand((2,), generator=torch.Generator().manual_seed(3))))
True
"""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Dict, Iterator, Optional

_local = threading.local()


def generator(device: Any) -> Optional[Any]:
    """The calling thread's current generator for `device` (a torch.device or a name such as "cpu",
    "cuda:0"), or None (torch's global generator) outside an executor's call."""
    generators = getattr(_local, "generators", None)
    if generators is None:
        return None
    kind = device.type if hasattr(device, "type") else str(device).partition(":")[0]
    return generators.get(kind)


@contextlib.contextmanager
def using_generators(generators: Optional[Dict[str, Any]]) -> Iterator[None]:
    """Makes `generators` (device kind -> torch.Generator; None: the global one) the calling
    thread's current generators inside the block."""
    previous = getattr(_local, "generators", None)
    _local.generators = generators
    try:
        yield
    finally:
        _local.generators = previous


def set_current(generators: Optional[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
    """Sets the calling thread's current generators; returns the previous ones (for the executor's
    hot path, where a context manager costs more than the call it wraps)."""
    previous = getattr(_local, "generators", None)
    _local.generators = generators
    return previous


def _current(device: Any) -> Optional[Any]:
    """The current generator for a draw on `device` (None: torch's default device)."""
    import torch
    if torch.compiler.is_compiling():
        return None  # (No executor generators under torch.compile; Dynamo need not trace the lookup.)
    if device is None:
        generators = getattr(_local, "generators", None)
        if generators is None:
            return None
        # The default device is the CPU unless a torch function mode is active (a device context is
        # one): the mode stack's length is a cheap question, get_default_device walks the stack (~6 us
        # of an epsilon-greedy action's two draws each). The answer is the same either way.
        if not torch._C._len_torch_function_stack():
            return generators.get("cpu")
        device = torch.get_default_device()
    return generator(device)


def _draw_kwargs(dtype: Any, device: Any) -> dict:
    # Only the arguments that are set: torch (and torch.compile's fake tensors) take a missing
    # generator or device differently from an explicit None in some functions (e.g. randint).
    kwargs = {"dtype": dtype} if dtype is not None else {}
    if device is not None:
        kwargs["device"] = device
    current = _current(device)
    if current is not None:
        kwargs["generator"] = current
    return kwargs


def rand(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """`torch.rand` from the current generator (uniform in [0, 1))."""
    import torch
    return torch.rand(shape, **_draw_kwargs(dtype, device))


def randn(shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """`torch.randn` from the current generator."""
    import torch
    return torch.randn(shape, **_draw_kwargs(dtype, device))


def randn_like(x: Any) -> Any:
    """`torch.randn_like(x)` from the current generator."""
    return randn(x.shape, dtype=x.dtype, device=x.device)


def rand_like(x: Any) -> Any:
    """`torch.rand_like(x)` from the current generator."""
    return rand(x.shape, dtype=x.dtype, device=x.device)


def randint(low: Any, high: Any, shape: Any, *, dtype: Any = None, device: Any = None) -> Any:
    """`torch.randint(low, high, shape)` from the current generator."""
    import torch
    return torch.randint(low, high, shape, **_draw_kwargs(dtype, device))


def normal_(variable: Any) -> Any:
    """Fills `variable` in place with standard normal draws from the current generator."""
    current = _current(variable.device)
    return variable.normal_() if current is None else variable.normal_(generator=current)


def standard_gamma(alpha: Any) -> Any:
    """Gamma(alpha, 1) draws shaped like `alpha` from the current generator (differentiable in alpha)."""
    import torch
    current = _current(alpha.device)
    return torch._standard_gamma(alpha) if current is None else torch._standard_gamma(alpha, generator=current)
