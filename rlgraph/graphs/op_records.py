"""Records that flow through API methods while the build traces them.

A `DataOpRecord` is one leaf: its space and two trace values of that space, computed with two
different batch/time sizes (see `trace_data.py`). Containers are plain python dicts/tuples of
records, so API code can index and re-pack them freely. A `PendingRecord` stands for a value
that cannot be computed yet in this build pass.

API methods only route records: a record refuses to be turned into a python bool, number or
length, compared, iterated or computed with (`RLGraphBuildError`), because such a decision
would be taken once, at build time, on trace data, and then hold for every later call.
"""
from __future__ import annotations

from typing import Any, Optional

from rlgraph.spaces import Dict, Space, Tuple
from rlgraph.spaces.containers import ContainerSpace
from rlgraph.spaces.space_utils import get_space_from_op
from rlgraph.utils.decorators import tracing
from rlgraph.utils.rlgraph_errors import RLGraphBuildError


class DataOpRecord:
    """One traced value: `space` (a primitive Space, or None for "no data"), `value` and `alt`.

    Attributes:
        value: The trace value computed from inputs of the trace's first batch/time sizes.
        alt: The same computed from inputs of the second sizes (None where not computed).
        origin: Where the value comes from in the root API call being traced: (plan id, slot,
            path) for the call plan (see `plans.py`); None for values made outside it.
    """
    __slots__ = ("space", "value", "alt", "origin")

    def __init__(self, space: Optional[Space], value: Any, alt: Any = None, origin: Optional[tuple] = None):
        self.space = space
        self.value = value
        self.alt = alt
        self.origin = origin

    def __repr__(self) -> str:
        return f"DataOpRecord({self.space!r})"

    __hash__ = object.__hash__

    def _refuse(self, operation: str):
        tracer = tracing.tracer
        if tracer is not None:
            raise tracer.describe_value_use(self, operation)  # Names the API method and argument.
        raise RLGraphBuildError(f"a traced value was used in `{operation}` outside of the build",
                                hint="traced values exist only while the build runs.")

    def __bool__(self):
        self._refuse("bool(x) / if x:")

    def __len__(self):
        self._refuse("len(x)")

    def __iter__(self):
        self._refuse("iteration over x")

    def __int__(self):
        self._refuse("int(x)")

    def __float__(self):
        self._refuse("float(x)")

    def __complex__(self):
        self._refuse("complex(x)")

    def __index__(self):
        self._refuse("x used as an index")

    def __array__(self, *args, **kwargs):
        self._refuse("numpy conversion of x")

    def __getitem__(self, key):
        self._refuse(f"x[{key!r}]")


def _refusing(symbol: str):
    def method(self, *args):
        self._refuse(symbol)
    return method


for _name, _symbol in (("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="),
                       ("add", "+"), ("radd", "+"), ("sub", "-"), ("rsub", "-"), ("mul", "*"), ("rmul", "*"),
                       ("truediv", "/"), ("rtruediv", "/"), ("floordiv", "//"), ("rfloordiv", "//"),
                       ("mod", "%"), ("rmod", "%"), ("pow", "**"), ("rpow", "**"), ("matmul", "@"),
                       ("rmatmul", "@"), ("and", "&"), ("rand", "&"), ("or", "|"), ("ror", "|"),
                       ("xor", "^"), ("rxor", "^"), ("neg", "unary -"), ("pos", "unary +"),
                       ("abs", "abs(x)"), ("invert", "~")):
    setattr(DataOpRecord, f"__{_name}__", _refusing(_symbol))


class PendingRecord:
    """A value whose computation waits for a component that is not ready yet."""
    __slots__ = ("reason",)

    def __init__(self, reason: str):
        self.reason = reason

    def __getitem__(self, key: Any) -> "PendingRecord":
        return self

    def __repr__(self) -> str:
        return f"PendingRecord({self.reason})"


def has_pending(value: Any) -> bool:
    if type(value) is DataOpRecord:
        return False
    if isinstance(value, PendingRecord):
        return True
    if isinstance(value, dict):
        return any(has_pending(v) for v in value.values())
    if isinstance(value, (tuple, list)):
        return any(has_pending(v) for v in value)
    return False


def space_of(value: Any) -> Optional[Space]:
    """The space of an API argument: records, containers of records, or python constants.

    Returns None while any part is pending, or for python objects that carry no data space.
    """
    if isinstance(value, DataOpRecord):
        return value.space
    if isinstance(value, PendingRecord) or value is None:
        return None
    if isinstance(value, dict) and value:
        children = {k: space_of(v) for k, v in value.items()}
        if any(c is None for c in children.values()):
            return None
        return _container(Dict._from_children(dict(sorted(children.items()))))
    if isinstance(value, (tuple, list)) and value:
        children = [space_of(v) for v in value]
        if any(c is None for c in children):
            return None
        return _container(Tuple._from_children(tuple(children)))
    try:
        return get_space_from_op(value)
    except Exception:  # noqa: BLE001 - a python object without a data space
        return None


def _container(space: ContainerSpace) -> ContainerSpace:
    children = [c for _, c in space._children()]
    Space.__init__(space, add_batch_rank=all(c.has_batch_rank for c in children),
                   add_time_rank=all(c.has_time_rank for c in children),
                   time_major=all(c.time_major for c in children))
    return space


class PendingInput(Exception):
    """Raised by `unpack_records` when part of an argument is still pending."""


def unpack_records(value: Any, leaves: list, attr: str = "value") -> Any:
    """`value` with every record replaced by its trace value `attr` ("value" or "alt"); dicts,
    tuples and lists are rebuilt. Appends each DataOpRecord met to `leaves`.

    Raises:
        PendingInput: If any part of `value` is a PendingRecord.
    """
    if isinstance(value, DataOpRecord):
        leaves.append(value)
        return getattr(value, attr)
    kind = type(value)
    if kind is tuple or kind is list:
        return kind([unpack_records(v, leaves, attr) for v in value])
    if isinstance(value, dict):
        return {k: unpack_records(v, leaves, attr) for k, v in value.items()}
    if isinstance(value, PendingRecord):
        raise PendingInput()
    if isinstance(value, (tuple, list)):
        # Tuple/list subclasses (named tuples) are passed on as they are (their records still count).
        for item in value:
            unpack_records(item, leaves, attr)
    return value
