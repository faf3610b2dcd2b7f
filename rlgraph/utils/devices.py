"""Where an executor keeps its variables and runs its API methods: `execution_spec.device`.

One key for both backends: `"auto"` (the default: the first GPU when the backend sees one, else the
CPU, as Stable-Baselines3's `device="auto"`), `"cpu"`, `"cuda"` (the first GPU) or `"cuda:N"`. An
explicit GPU that the backend does not see is refused (`RLGraphSpecError` naming the key), never
replaced by the CPU. PyTorch places the variables there at build and moves each call's inputs there
in one packed transfer (the results come back as numpy the same way, `torch_transfers.py`);
TensorFlow creates the variables and traces the functions under `tf.device` (its soft placement
keeps an op without a GPU kernel on the CPU).
Checkpoints hold host arrays, so one written on a GPU loads on a CPU-only machine and back.

The original RLgraph's TF1 device names (`execution_spec.default_device`, a component's `device`
argument) read as this key's values: `/device:GPU:1` is `"cuda:1"`, `/cpu:0` is `"cpu"`.
"""
from __future__ import annotations

import re
from typing import Any, Optional, Tuple

from rlgraph.utils.rlgraph_errors import RLGraphSpecError

DEVICE_KEY = "execution_spec.device"
_DEVICE = re.compile(r"^(auto|cpu|cuda)(?::(\d+))?$")
TF1_DEVICE = re.compile(r"^/?(?:device:)?(cpu|gpu):(\d+)$", re.IGNORECASE)
_EXPECTED = '"auto", "cpu", "cuda" or "cuda:N" (N: a GPU index)'


def check_device(value: Any, owner: str, key: str = DEVICE_KEY) -> str:
    """`value` as a device name ("auto", "cpu", "cuda", "cuda:N"); `cpu:0` and TF1 names such as
    "/device:GPU:0" are accepted too and returned as "cpu" / "cuda:0".

    Raises:
        RLGraphSpecError: For anything else, naming `key`.

    >>> check_device("/device:GPU:1", "Agent"), check_device("cpu:0", "Agent"), check_device("cuda", "Agent")
    ('cuda:1', 'cpu', 'cuda')
    """
    if isinstance(value, str):
        name = value.strip().lower()
        tf1 = TF1_DEVICE.match(name)
        if tf1:
            return "cpu" if tf1.group(1) == "cpu" else f"cuda:{int(tf1.group(2))}"
        match = _DEVICE.match(name)
        if match and not (match.group(1) == "auto" and match.group(2) is not None):
            kind, index = match.group(1), match.group(2)
            if kind == "cpu":
                return "cpu"
            return kind if index is None else f"{kind}:{int(index)}"
    raise RLGraphSpecError(f"{key} must name a device", where=f"{owner}({key})", expected=_EXPECTED,
                           received=repr(value),
                           hint='"auto" takes the first GPU the backend sees and the CPU where it sees none.')


def parse_device(name: str) -> Tuple[str, Optional[int]]:
    """("auto" | "cpu" | "cuda", GPU index or None) of a checked device name."""
    kind, _, index = name.partition(":")
    return kind, (int(index) if index else None)


def refuse_missing_gpu(name: str, backend: str, visible: int, owner: str) -> None:
    """Raises when `name` asks for a GPU index that `backend` does not see (`visible` GPUs)."""
    kind, index = parse_device(name)
    if kind != "cuda":
        return
    wanted = 0 if index is None else index
    if wanted < visible:
        return
    seen = "no GPU" if visible == 0 else f"{visible} GPU{'s' if visible > 1 else ''} (cuda:0..cuda:{visible - 1})"
    raise RLGraphSpecError(f"{DEVICE_KEY} asks for {name!r}, and {backend} sees {seen}", where=f"{owner}({DEVICE_KEY})",
                           expected=f"a visible device ({_EXPECTED})", received=repr(name),
                           hint='use "auto" (a GPU where there is one, else the CPU) or "cpu"; check the GPU driver, '
                                "CUDA_VISIBLE_DEVICES and that the backend's build has GPU support "
                                "(tensorflow-cpu and the CPU wheel of torch have none).")


def torch_device(name: str, owner: str) -> Any:
    """The `torch.device` of checked device name `name` (auto resolved), refusing GPUs torch does not see."""
    import torch
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    kind, index = parse_device(name)
    if kind == "auto":
        return torch.device("cuda:0" if visible else "cpu")
    refuse_missing_gpu(name, "PyTorch", visible, owner)
    return torch.device("cpu") if kind == "cpu" else torch.device(f"cuda:{0 if index is None else index}")


def tf_device(name: str, owner: str) -> str:
    """The TF device string ("/CPU:0", "/GPU:N") of checked device name `name`, refusing GPUs TF does not see."""
    import tensorflow as tf
    visible = len(tf.config.list_physical_devices("GPU"))
    kind, index = parse_device(name)
    if kind == "auto":
        return "/GPU:0" if visible else "/CPU:0"
    refuse_missing_gpu(name, "TensorFlow", visible, owner)
    return "/CPU:0" if kind == "cpu" else f"/GPU:{0 if index is None else index}"
