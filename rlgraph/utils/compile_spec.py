"""`execution_spec.compile`: which root API methods the backend's compiler compiles, and how.

`false` (the default) runs every API method as traced (TF: a `tf.function`; PyTorch: its call plan
replayed eagerly). `true` compiles every root API method: PyTorch with `torch.compile` (the whole
call plan as one graph, Inductor), TensorFlow with XLA (`jit_compile=True`). A dict chooses:

- `api_methods`: the root API methods to compile (default: all), e.g. `["update_from_external_batch"]`;
- `mode`: torch.compile's mode, `"default"`, `"reduce-overhead"` (CUDA graphs on a GPU),
  `"max-autotune"` or `"max-autotune-no-cudagraphs"`; default `"reduce-overhead"` on a GPU and
  `"default"` on the CPU. TensorFlow's XLA has no modes: TF refuses any other value than the default.

How each backend compiles, what stays uncompiled and why: `rlgraph/graphs/compilation.py` and
docs/backends.md ("Devices and compilation").
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Union

from rlgraph.utils.rlgraph_errors import RLGraphSpecError

COMPILE_KEY = "execution_spec.compile"
TORCH_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
COMPILE_KEYS = ("api_methods", "mode")


def check_compile(value: Any, owner: str) -> Union[bool, Dict[str, Any]]:
    """`value` checked: False, or {"api_methods": None | tuple of names, "mode": None | a torch mode}.

    Raises:
        RLGraphSpecError: For anything but a bool or a dict of the keys above, naming the key.

    >>> check_compile(True, "Agent")
    {'api_methods': None, 'mode': None}
    >>> check_compile({"api_methods": ["update"], "mode": "default"}, "Agent")
    {'api_methods': ('update',), 'mode': 'default'}
    >>> check_compile(False, "Agent")
    False
    """
    if value is None or value is False:
        return False
    if value is True:
        return {"api_methods": None, "mode": None}
    where = f"{owner}({COMPILE_KEY})"
    if not isinstance(value, dict):
        raise RLGraphSpecError(f"{COMPILE_KEY} must be true, false or a dict", where=where,
                               expected=f"a bool, or a dict with keys {list(COMPILE_KEYS)}", received=repr(value))
    unknown = sorted(set(value) - set(COMPILE_KEYS))
    if unknown:
        raise RLGraphSpecError(f"unknown {COMPILE_KEY} key(s) {unknown}", where=where, expected=list(COMPILE_KEYS),
                               received=unknown)
    names = value.get("api_methods")
    if names is not None:
        if isinstance(names, str):
            names = [names]
        if not isinstance(names, (list, tuple)) or not names or not all(isinstance(n, str) and n for n in names):
            raise RLGraphSpecError(f"{COMPILE_KEY}.api_methods must be a non-empty list of root API method names",
                                   where=where, expected='e.g. ["update_from_external_batch"] (null: all)',
                                   received=repr(value.get("api_methods")))
        names = tuple(names)
    mode = value.get("mode")
    if mode is not None and mode not in TORCH_MODES:
        raise RLGraphSpecError(f"{COMPILE_KEY}.mode must be one of torch.compile's modes", where=where,
                               expected=list(TORCH_MODES), received=repr(mode),
                               hint='null: "reduce-overhead" on a GPU, "default" on the CPU.')
    return {"api_methods": names, "mode": mode}


def compiled_api_methods(spec: Union[bool, Dict[str, Any]], available: Any, owner: str) -> Optional[set]:
    """The root API methods that `spec` (checked) compiles among `available` (None: none).

    Raises:
        RLGraphSpecError: For a listed name that is no root API method.
    """
    if not spec:
        return None
    available = list(available)
    names = spec["api_methods"]
    if names is None:
        return set(available)
    missing = [n for n in names if n not in available]
    if missing:
        raise RLGraphSpecError(f"{COMPILE_KEY}.api_methods names no root API method {missing}",
                               where=f"{owner}({COMPILE_KEY}.api_methods)", expected=sorted(available),
                               received=missing)
    return set(names)
