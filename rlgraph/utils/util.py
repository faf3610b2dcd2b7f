"""Small helpers used across rlgraph: dtype conversion between numpy/TF/PyTorch, list forcing.

Nothing here imports tensorflow or torch at module level; backend dtypes are converted lazily.
"""
from __future__ import annotations

import contextlib
import logging
import sys
from typing import Any, Optional, Union

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphError

# A small positive number for numerical stability (e.g. log(x + SMALL_NUMBER)); the original's value.
SMALL_NUMBER = 1e-6

# The logger of the rlgraph package (every module logs to a child of it): `root_logger.setLevel(...)`
# sets how much rlgraph reports. Unlike the original, importing rlgraph neither changes the level of
# python's root logger nor adds a handler to it; an application configures output itself (e.g.
# `logging.basicConfig(level=logging.INFO)`).
root_logger = logging.getLogger("rlgraph")


@contextlib.contextmanager
def log_to_stderr(level: Optional[str]):
    """While the block runs, rlgraph's log messages of `level` ("debug", "info", ...) and above go to
    stderr as "<logger>: <message>" (None: nothing changes, python's logging prints warnings only);
    the logger's level and handlers are restored after. The `--log-level` of the `rlgraph` command."""
    if level is None:
        yield
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    old_level = root_logger.level
    root_logger.addHandler(handler)
    root_logger.setLevel(level.upper())
    try:
        yield
    finally:
        root_logger.removeHandler(handler)
        root_logger.setLevel(old_level)

# Names users write in specs, mapped to numpy dtypes.
_NAMED_DTYPES = {
    "float": np.float32, "float16": np.float16, "float32": np.float32, "float64": np.float64, "double": np.float64,
    "int": np.int32, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "long": np.int64,
    "uint8": np.uint8, "uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64,
    "bool": np.bool_, "boolean": np.bool_, "str": np.str_, "string": np.str_, "text": np.str_,
}
_PYTHON_DTYPES = {float: np.float32, int: np.int32, bool: np.bool_, str: np.str_, bytes: np.bytes_}


def _backend_of(obj: Any) -> str:
    module = type(obj).__module__ or ""
    if module.startswith("tensorflow") or module.startswith("tf"):
        return "tf"
    if module.startswith("torch"):
        return "pytorch"
    return "np"


def convert_dtype(dtype: Any, to: str = "np") -> Any:
    """Converts a dtype given in any notation into numpy, TensorFlow or PyTorch notation.

    Args:
        dtype: A numpy dtype or type, a python type (float -> float32, int -> int32), a name
            ("float32", "int", "uint8", "bool", "str"), a `tf.DType` or a `torch.dtype`.
        to: "np", "tf" or "pytorch" ("torch" also accepted).

    Returns:
        The dtype in the requested notation (`np.dtype` for "np").

    Raises:
        RLGraphError: If the dtype is unknown or has no equivalent in the target backend.
    """
    np_dtype = _to_numpy_dtype(dtype)
    if to == "np":
        return np_dtype
    if to == "tf":
        import tensorflow as tf
        return tf.string if np_dtype.kind in "US" else tf.as_dtype(np_dtype)
    if to in ("pytorch", "torch"):
        import torch
        if np_dtype.kind in "USO":
            raise RLGraphError("PyTorch has no string dtype", where="convert_dtype", received=str(np_dtype),
                               hint="keep text as numpy arrays and hash it to integers before it reaches torch.")
        return torch.from_numpy(np.zeros((), dtype=np_dtype)).dtype
    raise RLGraphError("unknown dtype notation", where="convert_dtype", expected="'np', 'tf' or 'pytorch'",
                       received=repr(to))


def _to_numpy_dtype(dtype: Any) -> np.dtype:
    if isinstance(dtype, np.dtype):
        return dtype
    if isinstance(dtype, str):
        key = dtype.strip().lower()
        if key.startswith("np."):
            key = key[3:]
        if key in _NAMED_DTYPES:
            return np.dtype(_NAMED_DTYPES[key])
    elif isinstance(dtype, type) and dtype in _PYTHON_DTYPES:
        return np.dtype(_PYTHON_DTYPES[dtype])
    if dtype is None:  # np.dtype(None) would silently mean float64.
        raise RLGraphError("no dtype given", where="convert_dtype",
                           expected="a numpy/TF/PyTorch dtype, a python type or a name like 'float32'", received=None)
    backend = _backend_of(dtype)
    if backend == "tf":
        return np.dtype(np.str_) if dtype.name == "string" else np.dtype(dtype.as_numpy_dtype)
    if backend == "pytorch":
        # By name (torch.float32 -> "float32"), not through a tensor: inside torch.export's tracing
        # (the ONNX exporter) tensors are fake and have no numpy view.
        name = str(dtype).rsplit(".", 1)[-1]
        if name == "bool":
            return np.dtype(np.bool_)
        try:
            return np.dtype(name)
        except TypeError:  # A torch dtype numpy lacks (bfloat16, quantized types).
            import torch
            return torch.empty((), dtype=dtype).numpy().dtype
    try:
        return np.dtype(dtype)
    except (TypeError, ValueError) as error:  # ValueError: a string numpy cannot parse ("0x_c").
        raise RLGraphError("unknown dtype", where="convert_dtype",
                           expected="a numpy/TF/PyTorch dtype, a python type or a name like 'float32'",
                           received=repr(dtype)) from error


def force_list(elements: Any = None, to_tuple: bool = False) -> Union[list, tuple]:
    """Returns `elements` as a list (or tuple): None -> empty, a single item -> [item]."""
    ctor = tuple if to_tuple else list
    if elements is None:
        return ctor()
    if isinstance(elements, (list, tuple)) and type(elements) in (list, tuple):
        return ctor(elements)
    return ctor([elements])


def force_tuple(elements: Any = None) -> tuple:
    """Returns `elements` as a tuple: None -> (), a single item -> (item,)."""
    return force_list(elements, to_tuple=True)
