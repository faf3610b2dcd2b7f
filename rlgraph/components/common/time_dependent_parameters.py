"""Time-dependent parameters (schedules): a value that changes with the fraction of training done.

The family: `Constant`, `LinearDecay`, `PolynomialDecay` and `ExponentialDecay`, all built from
`TimeDependentParameter.from_spec`, which also reads the short forms

    0.1                                  -> Constant(0.1)
    ["linear", 1.0, 0.05]                -> LinearDecay(from_=1.0, to_=0.05)
    [1.0, 0.05]                          -> LinearDecay(from_=1.0, to_=0.05)  (the original RLgraph's form)
    ["polynomial", 1.0, 0.0, 2.0]        -> PolynomialDecay(from_=1.0, to_=0.0, power=2.0)
    ["exponential", 1.0, 0.01]           -> ExponentialDecay(from_=1.0, to_=0.01)
    ["exponential", 1.0, 0.0, 0.1]       -> ExponentialDecay(from_=1.0, to_=0.0, decay_rate=0.1)
    {"type": "linear-decay", "from": 1.0, "to": 0.1}   ("from"/"to" alias "from_"/"to_")

The original RLgraph's spellings resolve too: "constant_decay" with "constant_value", "lin",
"poly", "exp", and ExponentialDecay's "decay_rate"; its step-based keys (`ORIGINAL_STEP_KEYS`)
are refused with a hint, since schedules here run on the fraction of training done.

The family shares one module: the classes are a few lines each and the spec parsing needs all
of them. The spec keys' checks (`check_number`, the aliases, `ORIGINAL_STEP_KEYS`) are in
`schedule_keys.py`.
"""
from __future__ import annotations

import numbers
from typing import Any, Optional

import numpy as np

from rlgraph.backend_system import get_backend
# (`ORIGINAL_STEP_KEYS` and `check_number` are importable from here, as before the split.)
from rlgraph.components.common.schedule_keys import (ORIGINAL_STEP_KEYS, check_number, is_number,  # noqa: F401
                                                     refuse_step_keys, rename_key_aliases)
from rlgraph.components.component import Component
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError


def _clip(x: Any, low: float, high: float) -> Any:
    """Clips a python float, a numpy array or a tensor of the current backend."""
    if type(x) is float:
        return min(max(x, low), high)
    if isinstance(x, (np.ndarray, np.generic)):
        return np.clip(x, low, high)
    if get_backend() == "tf":
        import tensorflow as tf
        return tf.clip_by_value(x, low, high)
    return x.clamp(low, high)


class TimeDependentParameter(Component):
    """Base class of values that depend on the time percentage t in [0, 1] (fraction of training done).

    Abstract: build one of the subclasses (or use `from_spec`). Subclasses implement `_value(t)` with plain arithmetic operators (plus `_clip`), so that the
    same formula runs on numpy (`value_at`), TF and PyTorch (`get`). Time percentages outside
    [0, 1] are clipped.

    Args:
        from_: The value at t = 0.
        to_: The value at t = 1.
        max_time_steps: Optional number of time steps that t = 1 stands for; only needed by
            `value_at_time_step`.
        scope: Default "time-dependent-parameter".

    Raises:
        RLGraphSpecError: For a non-number `from_`/`to_` or a bad `max_time_steps`.

    API:
        get(time_percentage) -> the value, float32, scalar or [B] like `time_percentage`.

    >>> schedule = TimeDependentParameter.from_spec(["linear", 1.0, 0.0])
    >>> schedule.value_at(0.25)
    0.75
    """

    __lookup_classes__: dict = {}  # Filled at the end of this module.
    short_form_args: tuple = ()  # Constructor arguments, in order, of the list short form.

    def __init__(self, from_: float = 1.0, to_: float = 0.0, max_time_steps: Optional[int] = None,
                 scope: str = "time-dependent-parameter", **kwargs):
        super().__init__(scope=scope, **kwargs)
        where = type(self).__name__
        self.from_ = check_number(from_, "from_", where)
        self.to_ = check_number(to_, "to_", where)
        if max_time_steps is not None and (isinstance(max_time_steps, bool) or
                                           not isinstance(max_time_steps, numbers.Integral) or max_time_steps < 1):
            raise RLGraphSpecError("max_time_steps must be a positive int or None", where=f"{where}(max_time_steps)",
                                   expected="1, 2, ... or None", received=repr(max_time_steps))
        self.max_time_steps = None if max_time_steps is None else int(max_time_steps)

    def check_input_spaces(self, input_spaces, action_space=None):
        space = input_spaces.get("time_percentage")
        if space is not None and (not isinstance(space, (FloatBox, IntBox)) or space.shape != () or
                                  space.has_time_rank):
            raise RLGraphSpaceError(space, "time_percentage must be a number per item",
                                    where=f"{self.global_scope}.get(time_percentage)",
                                    expected="FloatBox() (a python float), optionally with a batch rank ([B])",
                                    hint="pass the fraction of training done, e.g. time_step / max_time_steps.")

    @rlgraph_api
    def _graph_fn_get(self, time_percentage):
        """The value at `time_percentage` (scalar or [B], clipped to [0, 1]) as float32."""
        if get_backend() == "tf":
            import tensorflow as tf
            t = tf.cast(time_percentage, tf.float32)
            return tf.cast(self._value(_clip(t, 0.0, 1.0)), tf.float32)
        import torch
        if isinstance(time_percentage, torch.Tensor) and torch.compiler.is_compiling():
            # torch.compile traces tensors, not their values: the python maths below in float64 ops.
            t = time_percentage.to(torch.float64)
            return torch.as_tensor(self._value(_clip(t, 0.0, 1.0))).to(torch.float32)
        if not isinstance(time_percentage, torch.Tensor) or time_percentage.dim() == 0:
            # One time for the whole batch (the acting path): python maths and one small tensor
            # instead of a chain of tensor ops on a scalar.
            value = self._value(_clip(float(time_percentage), 0.0, 1.0))
            return torch.from_numpy(np.array(value, dtype=np.float32))  # (torch.tensor is ~4x slower)
        t = time_percentage.to(torch.float32)
        return torch.as_tensor(self._value(_clip(t, 0.0, 1.0))).to(torch.float32)

    def value_at(self, time_percentage: Any) -> Any:
        """The value at `time_percentage` in numpy (no graph needed, e.g. for workers).

        Returns:
            A python float for a scalar input, else a float32 array shaped like the input.
        """
        t = np.clip(np.asarray(time_percentage, dtype=np.float32), 0.0, 1.0)
        value = np.asarray(self._value(t), dtype=np.float32)
        return float(value) if value.ndim == 0 else value

    def value_at_time_step(self, time_step: Any) -> Any:
        """`value_at(time_step / max_time_steps)`.

        Raises:
            RLGraphSpecError: If the parameter has no `max_time_steps`.
        """
        if self.max_time_steps is None:
            raise RLGraphSpecError("value_at_time_step needs max_time_steps", where=self.global_scope,
                                   hint="construct the parameter with max_time_steps=..., or call value_at(t).")
        return self.value_at(np.asarray(time_step, dtype=np.float64) / self.max_time_steps)

    def _value(self, t: Any) -> Any:
        """The formula; `t` is clipped to [0, 1] (numpy array or backend tensor)."""
        raise RLGraphError(f"{type(self).__name__} defines no formula", where=self.global_scope,
                           hint="use Constant, LinearDecay, PolynomialDecay or ExponentialDecay (or from_spec).")

    @classmethod
    def from_spec(cls, spec: Any = None, **kwargs) -> "TimeDependentParameter":
        """Creates a parameter from a full spec or a short form (see the module docstring).

        Raises:
            RLGraphSpecError: For an unknown type, a list not starting with a type name, a key
                given twice ("from" and "from_"), or arguments that do not fit the class.
        """
        if is_number(spec):
            return Constant(value=float(spec), **kwargs)
        if isinstance(spec, (list, tuple)):
            if len(spec) == 2 and all(is_number(v) for v in spec):
                # The original RLgraph's bare form [from, to]: a linear decay.
                return super().from_spec(LinearDecay,
                                         **{"from_": spec[0], "to_": spec[1], **rename_key_aliases(kwargs)})
            if not spec or not isinstance(spec[0], str):
                raise RLGraphSpecError("a list spec must start with a type name", where=f"{cls.__name__}.from_spec",
                                       expected='e.g. ["linear", 1.0, 0.05] (or [from, to]: linear)',
                                       received=repr(spec))
            ctor = cls.resolve_type(spec[0])
            names = getattr(ctor, "short_form_args", ())
            if len(spec) - 1 > len(names):
                raise RLGraphSpecError("too many values in a list spec", where=f"{cls.__name__}.from_spec",
                                       expected=f'[{spec[0]!r}, ' + ", ".join(names) + "]", received=repr(spec))
            return super().from_spec(ctor, **{**dict(zip(names, spec[1:])), **rename_key_aliases(kwargs)})
        if isinstance(spec, dict):
            spec = rename_key_aliases(spec)
            refuse_step_keys(spec)
        refuse_step_keys(kwargs)
        return super().from_spec(spec, **rename_key_aliases(kwargs))

    @classmethod
    def resolve_type(cls, type_: Any) -> Any:
        """As `Specifiable.resolve_type` (a dotted path or class must be a `TimeDependentParameter`);
        a spec without "type" makes a `LinearDecay` (from the base class) or the class `from_spec`
        was called on."""
        if type_ is None:
            return LinearDecay if cls is TimeDependentParameter else cls
        return super().resolve_type(type_)


class Constant(TimeDependentParameter):
    """A value that does not change with time.

    Args:
        value: The constant.
        constant_value: The original RLgraph's name of `value` (give one of them).
        scope: Default "constant".

    >>> Constant(0.5).value_at([0.0, 1.0]).tolist()
    [0.5, 0.5]
    """

    short_form_args = ("value",)

    def __init__(self, value: Optional[float] = None, constant_value: Optional[float] = None,
                 scope: str = "constant", **kwargs):
        if value is not None and constant_value is not None:
            raise RLGraphSpecError("value and constant_value both given", where=f"{type(self).__name__}(value)",
                                   received=f"{value!r} and {constant_value!r}", hint="give one of them.")
        value = constant_value if value is None else value
        value = check_number(0.0 if value is None else value, "value", type(self).__name__)
        given = sorted(key.rstrip("_") for key in ("from_", "to_") if key in kwargs)
        if given:  # A decay spec turned into a constant one: its end points would clash with `value`.
            raise RLGraphSpecError(f"a constant has no {' or '.join(given)}", where=type(self).__name__,
                                   expected="value", received=given, hint="give the constant as 'value'.")
        super().__init__(from_=value, to_=value, scope=scope, **kwargs)
        self.value = value

    def _value(self, t: Any) -> Any:
        return t * 0.0 + self.value


class _Decay(TimeDependentParameter):
    """A decay from `from_` to `to_` over [start_percentage, stop_percentage] of the time.

    Before `start_percentage` the value is `from_`; after `stop_percentage` it stays at the end
    value. Subclasses map the progress p = clip((t - start) / (stop - start), 0, 1) to the value.
    """

    def __init__(self, from_: float = 1.0, to_: float = 0.0, start_percentage: float = 0.0,
                 stop_percentage: float = 1.0, scope: str = "decay", **kwargs):
        super().__init__(from_=from_, to_=to_, scope=scope, **kwargs)
        where = type(self).__name__
        self.start_percentage = check_number(start_percentage, "start_percentage", where, 0.0, 1.0)
        self.stop_percentage = check_number(stop_percentage, "stop_percentage", where, 0.0, 1.0)
        if self.stop_percentage <= self.start_percentage:
            raise RLGraphSpecError("stop_percentage must be greater than start_percentage",
                                   where=f"{where}(stop_percentage)", expected=f"> {self.start_percentage}",
                                   received=repr(stop_percentage))

    def _value(self, t: Any) -> Any:
        progress = _clip((t - self.start_percentage) / (self.stop_percentage - self.start_percentage), 0.0, 1.0)
        return self._decay(progress)

    def _decay(self, p: Any) -> Any:
        raise RLGraphError(f"{type(self).__name__} defines no decay formula", where=self.global_scope,
                           hint="use LinearDecay, PolynomialDecay or ExponentialDecay.")


class LinearDecay(_Decay):
    """Linear interpolation: value = from_ + (to_ - from_) * p.

    p is the progress through [start_percentage, stop_percentage] (see `_Decay`), so the value
    is `from_` until `start_percentage` and `to_` from `stop_percentage` on.

    Args:
        from_: Start value.
        to_: End value.
        start_percentage: Time percentage where the decay starts.
        stop_percentage: Time percentage where it ends (> start_percentage).
        scope: Default "linear-decay".

    >>> decay = LinearDecay(from_=1.0, to_=0.0, start_percentage=0.5)
    >>> decay.value_at([0.25, 0.75, 1.0]).tolist()
    [1.0, 0.5, 0.0]
    """

    short_form_args = ("from_", "to_", "start_percentage", "stop_percentage")

    def __init__(self, from_: float = 1.0, to_: float = 0.0, start_percentage: float = 0.0,
                 stop_percentage: float = 1.0, scope: str = "linear-decay", **kwargs):
        super().__init__(from_=from_, to_=to_, start_percentage=start_percentage, stop_percentage=stop_percentage,
                         scope=scope, **kwargs)

    def _decay(self, p: Any) -> Any:
        return self.from_ + (self.to_ - self.from_) * p


class PolynomialDecay(_Decay):
    """Polynomial decay: value = to_ + (from_ - to_) * (1 - p) ** power.

    Args:
        from_: Start value.
        to_: End value (reached at `stop_percentage`).
        power: The exponent (> 0); 1.0 is linear.
        start_percentage: Time percentage where the decay starts.
        stop_percentage: Time percentage where it ends.
        scope: Default "polynomial-decay".

    >>> PolynomialDecay(from_=1.0, to_=0.0, power=2.0).value_at(0.5)
    0.25
    """

    short_form_args = ("from_", "to_", "power", "start_percentage", "stop_percentage")

    def __init__(self, from_: float = 1.0, to_: float = 0.0, power: float = 2.0, start_percentage: float = 0.0,
                 stop_percentage: float = 1.0, scope: str = "polynomial-decay", **kwargs):
        super().__init__(from_=from_, to_=to_, start_percentage=start_percentage, stop_percentage=stop_percentage,
                         scope=scope, **kwargs)
        self.power = check_number(power, "power", type(self).__name__, low=0.0, low_open=True)

    def _decay(self, p: Any) -> Any:
        return self.to_ + (self.from_ - self.to_) * (1.0 - p) ** self.power


class ExponentialDecay(_Decay):
    """Exponential decay towards `to_`: value = to_ + (from_ - to_) * 0.5 ** (p / half_life).

    The distance to `to_` halves every `half_life` (a fraction of the decay period). The value
    approaches `to_` but does not reach it: with the default half_life 0.1 a fraction
    2**-10 (about 0.001) of the distance remains at `stop_percentage`.

    Args:
        from_: Start value.
        to_: The asymptote.
        half_life: Fraction of the decay period after which the distance to `to_` has halved (> 0;
            default 0.1).
        decay_rate: Instead of `half_life`, the original RLgraph's parameter: the fraction of the
            distance left at `stop_percentage`, in (0, 1) (value = to_ + (from_ - to_) * decay_rate ** p;
            half_life = ln 0.5 / ln decay_rate).
        start_percentage: Time percentage where the decay starts.
        stop_percentage: Time percentage where it ends (the value stays constant afterwards).
        scope: Default "exponential-decay".

    >>> ExponentialDecay(from_=1.0, to_=0.0, half_life=0.5).value_at(0.5)
    0.5
    >>> round(ExponentialDecay(from_=1.0, to_=0.0, decay_rate=0.1).value_at(1.0), 6)
    0.1
    """

    # (The third value is the original RLgraph's decay_rate, so that its list specs mean the same.)
    short_form_args = ("from_", "to_", "decay_rate", "start_percentage", "stop_percentage")

    def __init__(self, from_: float = 1.0, to_: float = 0.0, half_life: Optional[float] = None,
                 decay_rate: Optional[float] = None, start_percentage: float = 0.0, stop_percentage: float = 1.0,
                 scope: str = "exponential-decay", **kwargs):
        super().__init__(from_=from_, to_=to_, start_percentage=start_percentage, stop_percentage=stop_percentage,
                         scope=scope, **kwargs)
        where = type(self).__name__
        if decay_rate is not None:
            if half_life is not None:
                raise RLGraphSpecError("half_life and decay_rate both given", where=f"{where}(decay_rate)",
                                       received=f"{half_life!r} and {decay_rate!r}", hint="give one of them.")
            decay_rate = check_number(decay_rate, "decay_rate", where, low=0.0, low_open=True)
            if decay_rate >= 1.0:
                raise RLGraphSpecError("decay_rate must be < 1", where=f"{where}(decay_rate)",
                                       expected="a fraction in (0, 1)", received=repr(decay_rate),
                                       hint='1.0 means no decay: use {"type": "constant", "value": from}.')
            half_life = float(np.log(0.5) / np.log(decay_rate))
        self.half_life = check_number(0.1 if half_life is None else half_life, "half_life", where, low=0.0,
                                      low_open=True)

    def _decay(self, p: Any) -> Any:
        return self.to_ + (self.from_ - self.to_) * 0.5 ** (p / self.half_life)


# Canonical names first; "constant-decay", "lin", "poly" and "exp" are the original RLgraph's spellings.
TimeDependentParameter.__lookup_classes__ = {
    "constant": Constant, "constant-parameter": Constant, "constant-decay": Constant,
    "linear": LinearDecay, "linear-decay": LinearDecay, "lin": LinearDecay,
    "polynomial": PolynomialDecay, "polynomial-decay": PolynomialDecay, "poly": PolynomialDecay,
    "exponential": ExponentialDecay, "exponential-decay": ExponentialDecay, "exp": ExponentialDecay,
}
