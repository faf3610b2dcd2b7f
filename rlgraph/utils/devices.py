"""Where an executor keeps its variables and runs its API methods: `execution_spec.device`.

One key for both backends: `"auto"` (the default: the first GPU when the backend sees one, else the
CPU, as Stable-Baselines3's `device="auto"`), `"cpu"`, `"cuda"` (the first GPU) or `"cuda:N"`. An
explicit GPU that the backend does not see is refused (`RLGraphSpecError` naming the key), never
replaced by the CPU. `"cpu:N"` (N > 0) names TensorFlow's logical CPU device N (where
`tf.config.set_logical_device_configuration` made several); PyTorch has one CPU device and refuses it.
The same names place single components (`Component(device=...)`, rlgraph/graphs/placement.py). PyTorch places the variables there at build and moves each call's inputs there
in one packed transfer (the results come back as numpy the same way, `torch_transfers.py`);
TensorFlow creates the variables and traces the functions under `tf.device` (its soft placement
keeps an op without a GPU kernel on the CPU).
Checkpoints hold host arrays, so one written on a GPU loads on a CPU-only machine and back.

The original RLgraph's TF1 device names (`execution_spec.default_device`, a component's `device`
argument) read as this key's values: `/device:GPU:1` is `"cuda:1"`, `/cpu:0` is `"cpu"`.
"""
from __future__ import annotations

import re
from typing import Any, Dict, Optional, Tuple

from rlgraph.utils.rlgraph_errors import RLGraphSpecError

DEVICE_KEY = "execution_spec.device"
DEVICE_MAP_KEY = "execution_spec.device_map"
_DEVICE = re.compile(r"^(auto|cpu|cuda)(?::(\d+))?$")
TF1_DEVICE = re.compile(r"^/?(?:device:)?(cpu|gpu):(\d+)$", re.IGNORECASE)
_EXPECTED = '"auto", "cpu", "cuda" or "cuda:N" (N: a GPU index)'


def check_device(value: Any, owner: str, key: str = DEVICE_KEY) -> str:
    """`value` as a device name ("auto", "cpu", "cpu:N", "cuda", "cuda:N"); `cpu:0` and TF1 names such
    as "/device:GPU:0" are accepted too and returned as "cpu" / "cuda:0".

    Raises:
        RLGraphSpecError: For anything else, naming `key`.

    >>> check_device("/device:GPU:1", "Agent"), check_device("cpu:0", "Agent"), check_device("cuda", "Agent")
    ('cuda:1', 'cpu', 'cuda')
    """
    if isinstance(value, str):
        name = value.strip().lower()
        tf1 = TF1_DEVICE.match(name)
        if tf1:
            index = int(tf1.group(2))
            return (f"cpu:{index}" if index else "cpu") if tf1.group(1) == "cpu" else f"cuda:{index}"
        match = _DEVICE.match(name)
        if match and not (match.group(1) == "auto" and match.group(2) is not None):
            kind, index = match.group(1), match.group(2)
            if kind == "cpu":
                return f"cpu:{int(index)}" if index and int(index) else "cpu"
            return kind if index is None else f"{kind}:{int(index)}"
    raise RLGraphSpecError(f"{key} must name a device", where=f"{owner}({key})", expected=_EXPECTED,
                           received=repr(value),
                           hint='"auto" takes the first GPU the backend sees and the CPU where it sees none.')


def check_device_map(device_map: Any, owner: str) -> Optional[Dict[str, str]]:
    """`execution_spec.device_map` ({component scope: device name}, the original's key) with its
    names checked (`check_device`); None stays None. Whether each key names a component is checked
    at build (rlgraph/graphs/placement.py).

    Raises:
        RLGraphSpecError: Not a dict with string keys, or a value that names no device (naming its key).
    """
    if device_map is None:
        return None
    if not isinstance(device_map, dict) or not all(isinstance(k, str) and k for k in device_map):
        raise RLGraphSpecError(f"{DEVICE_MAP_KEY} must map component scopes to devices",
                               where=f"{owner}({DEVICE_MAP_KEY})",
                               expected='{"<component scope>": "cpu" | "cuda" | "cuda:N"}',
                               received=repr(device_map)[:200])
    return {key: check_device(value, owner, key=f"{DEVICE_MAP_KEY}[{key!r}]") for key, value in device_map.items()}


def check_host_memory_device(spec: Dict[str, Any], owner: str, what: str) -> Dict[str, Any]:
    """`spec` (a memory spec) without its "device" key, for memories kept in host memory as numpy
    arrays (`what` names it): there `memory_spec.device` can only name the CPU.

    Raises:
        RLGraphSpecError: For a device that is not one, or not the CPU, naming `memory_spec.device`.
    """
    if "device" not in spec:
        return spec
    spec = dict(spec)
    name = check_device(spec.pop("device"), owner, key="memory_spec.device")
    if name != "cpu":
        raise RLGraphSpecError(f"{what} is kept in host memory (numpy arrays): memory_spec.device can only be the CPU",
                               where=f"{owner}(memory_spec.device)", expected='"cpu"', received=repr(name),
                               hint="the in-graph replay memories of off-policy agents (\"replay-memory\", "
                                    "\"prioritized-replay\") can live on a GPU.")
    return spec


def parse_device(name: str) -> Tuple[str, Optional[int]]:
    """("auto" | "cpu" | "cuda", device index or None) of a checked device name."""
    kind, _, index = name.partition(":")
    return kind, (int(index) if index else None)


def refuse_missing_gpu(name: str, backend: str, visible: int, owner: str, key: str = DEVICE_KEY) -> None:
    """Raises when `name` asks for a GPU index that `backend` does not see (`visible` GPUs), naming
    `owner` and its `key`."""
    kind, index = parse_device(name)
    if kind != "cuda":
        return
    wanted = 0 if index is None else index
    if wanted < visible:
        return
    seen = "no GPU" if visible == 0 else f"{visible} GPU{'s' if visible > 1 else ''} (cuda:0..cuda:{visible - 1})"
    raise RLGraphSpecError(f"{key} asks for {name!r}, and {backend} sees {seen}", where=f"{owner}({key})",
                           expected=f"a visible device ({_EXPECTED})", received=repr(name),
                           hint='use "auto" (a GPU where there is one, else the CPU) or "cpu"; check the GPU driver, '
                                "CUDA_VISIBLE_DEVICES and that the backend's build has GPU support "
                                "(tensorflow-cpu and the CPU wheel of torch have none).")


def torch_device(name: str, owner: str, key: str = DEVICE_KEY) -> Any:
    """The `torch.device` of checked device name `name` (auto resolved), refusing GPUs torch does not
    see (naming `owner` and its `key`)."""
    import torch
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    kind, index = parse_device(name)
    if kind == "auto":
        return torch.device("cuda:0" if visible else "cpu")
    if kind == "cpu" and index:
        raise RLGraphSpecError(f"{key} asks for {name!r}: PyTorch has one CPU device", where=f"{owner}({key})",
                               expected='"cpu"', received=repr(name),
                               hint="logical CPU devices (cpu:N) are TensorFlow's; on PyTorch use \"cpu\".")
    refuse_missing_gpu(name, "PyTorch", visible, owner, key)
    return torch.device("cpu") if kind == "cpu" else torch.device(f"cuda:{0 if index is None else index}")


def tf_device(name: str, owner: str, key: str = DEVICE_KEY) -> str:
    """The TF device string ("/CPU:0", "/GPU:N") of checked device name `name`, refusing GPUs TF does
    not see (naming `owner` and its `key`)."""
    import tensorflow as tf
    visible = len(tf.config.list_physical_devices("GPU"))
    kind, index = parse_device(name)
    if kind == "auto":
        return "/GPU:0" if visible else "/CPU:0"
    if kind == "cpu" and index:
        cpus = len(tf.config.list_logical_devices("CPU"))
        if index >= cpus:
            raise RLGraphSpecError(f"{key} asks for {name!r}, and TensorFlow has {cpus} logical CPU device(s)",
                                   where=f"{owner}({key})", expected=f"cpu:0..cpu:{cpus - 1}", received=repr(name),
                                   hint="tf.config.set_logical_device_configuration splits the CPU into several "
                                        "logical devices (before TensorFlow starts).")
    refuse_missing_gpu(name, "TensorFlow", visible, owner, key)
    return f"/CPU:{index or 0}" if kind == "cpu" else f"/GPU:{0 if index is None else index}"
