"""Weight initializers from specs: numbers, arrays, and named schemes, computed in numpy.

Variables on both backends are created from numpy values (see `rlgraph.spaces.variables`), so a
named initializer draws from numpy's global generator, which executors seed. The same seed
therefore gives bit-identical weights on TensorFlow and PyTorch.

Fan sizes follow the usual convention: for a kernel [in, out], fan_in = in and fan_out = out;
for a conv kernel [kh, kw, in, out], both are multiplied by the receptive field kh * kw.

>>> init = get_initializer("glorot_uniform")
>>> w = init((4, 3), np.dtype("float32"))
>>> bool(np.all(np.abs(w) <= np.sqrt(6.0 / 7.0)))
True
>>> get_initializer({"type": "constant", "value": 0.5})
0.5
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphSpecError
from rlgraph.utils.specifiable import normalize_type_name


def compute_fans(shape: Tuple[int, ...]) -> Tuple[float, float]:
    """(fan_in, fan_out) of a weight tensor of `shape` (see the module docstring)."""
    if len(shape) == 0:
        return 1.0, 1.0
    if len(shape) == 1:
        return float(shape[0]), float(shape[0])
    receptive = float(np.prod(shape[:-2])) if len(shape) > 2 else 1.0
    return shape[-2] * receptive, shape[-1] * receptive


def _truncated_normal(shape, stddev: float, mean: float = 0.0) -> np.ndarray:
    """Normal samples, redrawn where they fall more than 2 stddev from the mean (as TF does)."""
    values = np.random.normal(size=shape)
    bad = np.abs(values) > 2.0
    while np.any(bad):
        values[bad] = np.random.normal(size=int(bad.sum()))
        bad = np.abs(values) > 2.0
    return mean + stddev * values


def _glorot_uniform(shape, dtype, gain=1.0):
    fan_in, fan_out = compute_fans(shape)
    limit = gain * np.sqrt(6.0 / (fan_in + fan_out))
    return np.random.uniform(-limit, limit, size=shape)


def _glorot_normal(shape, dtype, gain=1.0):
    fan_in, fan_out = compute_fans(shape)
    # 0.8796 is the stddev of a unit normal truncated at 2 (keeps the variance after truncation).
    return _truncated_normal(shape, gain * np.sqrt(2.0 / (fan_in + fan_out)) / 0.87962566103423978)


def _he_normal(shape, dtype, gain=1.0):
    fan_in, _ = compute_fans(shape)
    return _truncated_normal(shape, gain * np.sqrt(2.0 / fan_in) / 0.87962566103423978)


def _he_uniform(shape, dtype, gain=1.0):
    fan_in, _ = compute_fans(shape)
    limit = gain * np.sqrt(6.0 / fan_in)
    return np.random.uniform(-limit, limit, size=shape)


def _lecun_normal(shape, dtype, gain=1.0):
    fan_in, _ = compute_fans(shape)
    return _truncated_normal(shape, gain * np.sqrt(1.0 / fan_in) / 0.87962566103423978)


def _fan_in_uniform(shape, dtype, gain=1.0, fan_in=None):
    """Uniform in +-gain / sqrt(fan_in): torch.nn.Linear's and Conv2d's default draw, for weights and
    biases alike (a bias takes the fan-in of its layer's kernel, see `bias_initializer`)."""
    fan_in = compute_fans(shape)[0] if fan_in is None else float(fan_in)
    limit = gain / np.sqrt(fan_in)
    return np.random.uniform(-limit, limit, size=shape)


def _orthogonal(shape, dtype, gain=1.0):
    """A (semi-)orthogonal matrix over the last axis (Saxe et al. 2013, https://arxiv.org/abs/1312.6120)."""
    if len(shape) < 2:
        raise RLGraphSpecError("the orthogonal initializer needs a weight of rank 2 or more", where="orthogonal",
                               received=f"shape {shape}")
    rows, cols = int(np.prod(shape[:-1])), int(shape[-1])
    flat = np.random.normal(size=(max(rows, cols), min(rows, cols)))
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))  # Makes the decomposition unique, so the draw is uniform.
    if rows < cols:
        q = q.T
    return gain * q.reshape(shape)


_SCHEMES = {
    "glorotuniform": _glorot_uniform, "xavier": _glorot_uniform, "xavieruniform": _glorot_uniform,
    "glorotnormal": _glorot_normal, "xaviernormal": _glorot_normal,
    "henormal": _he_normal, "heuniform": _he_uniform, "lecunnormal": _lecun_normal,
    "orthogonal": _orthogonal, "faninuniform": _fan_in_uniform, "torchdefault": _fan_in_uniform,
}
# Schemes whose spec may name the fan-in ({"type": "fan_in_uniform", "fan_in": 256}).
_FAN_IN_SCHEMES = ("faninuniform", "torchdefault")


def bias_initializer(spec: Any, kernel_shape: Tuple[int, ...]) -> Any:
    """The initializer spec of a layer's bias: a "fan_in_uniform" spec without "fan_in" gets its
    kernel's fan-in (a bias alone has none); any other spec is returned unchanged.

    >>> bias_initializer("fan_in_uniform", (256, 2))
    {'type': 'fan_in_uniform', 'fan_in': 256.0}
    >>> bias_initializer(0.0, (256, 2))
    0.0
    """
    named = {"type": spec} if isinstance(spec, str) else spec
    if (isinstance(named, dict) and "fan_in" not in named and isinstance(named.get("type"), str)
            and normalize_type_name(named["type"]) in _FAN_IN_SCHEMES):
        return dict(named, fan_in=compute_fans(tuple(kernel_shape))[0])
    return spec


def get_initializer(spec: Any, where: str = "initializer") -> Optional[Any]:
    """Turns an initializer spec into what `get_variable(initializer=...)` takes.

    Args:
        spec: None (the variable's default), a number or array (used as is), a callable
            fn(shape, np_dtype) -> array, a name ("xavier"/"glorot_uniform", "glorot_normal",
            "he_normal", "he_uniform", "lecun_normal", "fan_in_uniform" (alias "torch_default":
            uniform in +-gain/sqrt(fan_in), torch.nn.Linear's draw), "truncated_normal", "normal",
            "uniform", "orthogonal", "zeros", "ones") or a dict {"type": name, ...} with the
            scheme's parameters (`gain`; `fan_in` for fan_in_uniform; `stddev`/`mean` for normals;
            `minval`/`maxval` for uniform; `value` for "constant").
        where: Named in error messages (the component and argument).

    Returns:
        None, a number, an array or a callable fn(shape, np_dtype) -> array.

    Raises:
        RLGraphSpecError: For unknown names or parameters.
    """
    if spec is None or callable(spec) and not isinstance(spec, (dict, str)):
        return spec
    if isinstance(spec, (int, float, np.number, np.ndarray, list, tuple)) and not isinstance(spec, bool):
        return spec
    if isinstance(spec, str):
        spec = {"type": spec}
    if not isinstance(spec, dict) or "type" not in spec:
        raise RLGraphSpecError("unsupported initializer spec", where=where,
                               expected="None, a number, an array, a callable, a name or {'type': name, ...}",
                               received=repr(spec))
    params = dict(spec)
    name = normalize_type_name(str(params.pop("type")))
    for key, value in params.items():
        if not _finite_values(value):
            raise RLGraphSpecError(f"initializer parameter '{key}' must be a finite number", where=where,
                                   expected=f"a number within +-{FLOAT32_MAX:.3g} (the weights are float32)",
                                   received=repr(spec)[:120])
    allowed = {"gain"}
    if name in ("truncatednormal", "normal", "randomnormal"):
        allowed = {"stddev", "mean"}
    elif name in ("uniform", "randomuniform"):
        allowed = {"minval", "maxval"}
    elif name == "constant":
        allowed = {"value"}
    elif name in ("zeros", "ones"):
        allowed = set()
    elif name in _FAN_IN_SCHEMES:
        allowed = {"gain", "fan_in"}
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise RLGraphSpecError(f"unknown initializer parameter(s) {unknown}", where=where,
                               expected=sorted(allowed) or "no parameters", received=repr(spec))
    if name == "zeros":
        return 0.0
    if name == "ones":
        return 1.0
    if name == "constant":
        return params.get("value", 0.0)
    if name in ("truncatednormal", "normal", "randomnormal"):
        stddev, mean = float(params.get("stddev", 0.05)), float(params.get("mean", 0.0))
        if name == "truncatednormal":
            return _Scheme(lambda shape, dtype: _truncated_normal(shape, stddev, mean))
        return _Scheme(lambda shape, dtype: np.random.normal(mean, stddev, size=shape))
    if name in ("uniform", "randomuniform"):
        low, high = float(params.get("minval", -0.05)), float(params.get("maxval", 0.05))
        return _Scheme(lambda shape, dtype: np.random.uniform(low, high, size=shape))
    if name not in _SCHEMES:
        raise RLGraphSpecError(f"unknown initializer '{spec['type']}'", where=where,
                               expected="a number, an array, a callable, or one of: glorot_uniform (xavier), "
                               "glorot_normal, he_normal, he_uniform, lecun_normal, fan_in_uniform (torch_default), "
                               "orthogonal, truncated_normal, normal, uniform, constant, zeros, ones")
    scheme, gain = _SCHEMES[name], float(params.get("gain", 1.0))
    if name in _FAN_IN_SCHEMES and params.get("fan_in") is not None:
        fan_in = params["fan_in"]
        if isinstance(fan_in, bool) or not isinstance(fan_in, (int, float, np.number)) or not fan_in > 0:
            raise RLGraphSpecError("fan_in must be a positive number", where=where, received=repr(spec))
        return _Scheme(lambda shape, dtype: scheme(shape, dtype, gain, fan_in=fan_in))
    return _Scheme(lambda shape, dtype: scheme(shape, dtype, gain))


FLOAT32_MAX = float(np.finfo(np.float32).max)


def _finite_values(value: Any) -> bool:
    """Whether `value` is a number or an array of numbers (no bools, no strings), each finite in float32."""
    if isinstance(value, (bool, np.bool_, str)):
        return False
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return False
    return bool(np.all(np.abs(array) <= FLOAT32_MAX))  # (False for NaN, inf and float32 overflows alike.)


def check_initializer_spec(spec: Any, where: str, allow_false: bool = False) -> Any:
    """`spec` (unchanged) if it is a valid initializer spec for float32 weights (see `get_initializer`),
    else an `RLGraphSpecError` naming `where`: a layer checks its `weights_spec` / `biases_spec` at
    construction, not only when the build draws the weights.

    A number or array must be finite within float32 (1e39 or Infinity would make the kernel inf), a
    bool is no number (`allow_false`: False means "no bias"), and a name or dict is resolved now.
    """
    if spec is None or (allow_false and spec is False) or (callable(spec) and not isinstance(spec, (dict, str))):
        return spec
    if isinstance(spec, (bool, np.bool_)) or (isinstance(spec, (int, float, np.number, np.ndarray, list, tuple))
                                              and not _finite_values(spec)):
        raise RLGraphSpecError("an initial value must be finite numbers within float32", where=where,
                               expected=f"a number or array within +-{FLOAT32_MAX:.3g}, a name or {{'type': name, ...}}"
                                        + (" (false: no bias)" if allow_false else ""),
                               received=repr(spec)[:80])
    if isinstance(spec, (str, dict)):
        get_initializer(spec, where)
    return spec


class _Scheme:
    """A named initializer: fn(shape, np_dtype) -> array in that dtype."""

    def __init__(self, draw: Callable):
        self.draw = draw

    def __call__(self, shape, dtype) -> np.ndarray:
        return np.asarray(self.draw(tuple(shape), dtype), dtype=dtype)
