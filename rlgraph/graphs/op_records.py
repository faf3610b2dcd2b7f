"""Records that flow through API methods while the build traces them.

A `DataOpRecord` is one leaf: its space and the trace value (a backend tensor). Containers are
plain python dicts/tuples of records, so API code can index and re-pack them freely. A
`PendingRecord` stands for a value that cannot be computed yet in this build pass.
"""
from __future__ import annotations

from typing import Any, Optional

from rlgraph.spaces import Dict, Space, Tuple
from rlgraph.spaces.containers import ContainerSpace
from rlgraph.spaces.space_utils import get_space_from_op


class DataOpRecord:
    """One traced value: `space` (a primitive Space, or None for "no data") and `value`.

    `leading` caches which batch/time sizes the value's leading dims carry (see
    `trace_data.RankContext`); None until known, reset when the space is replaced.

    The build makes most records with `shared=True`: their space is then a validated space that
    records of equal outputs share, and reading `space` gives the record its own copy first. The
    tracer reads `_space` directly where the space does not leave the build's bookkeeping.
    """
    __slots__ = ("_space", "value", "leading", "shared")

    def __init__(self, space: Optional[Space], value: Any, leading: Optional[tuple] = None, shared: bool = False):
        self._space = space
        self.value = value
        self.leading = leading
        self.shared = shared

    @property
    def space(self) -> Optional[Space]:
        if self.shared:
            self._space = self._space._fresh_copy()
            self.shared = False
        return self._space

    @space.setter
    def space(self, space: Optional[Space]) -> None:
        self._space = space
        self.shared = False
        self.leading = None

    def __repr__(self) -> str:
        return f"DataOpRecord({self._space!r})"


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


def unpack_records(value: Any, leaves: list) -> Any:
    """`value` with every record replaced by its trace value (dicts, tuples and lists are rebuilt),
    appending each DataOpRecord met to `leaves`: a graph function's inputs, in one walk.

    Raises:
        PendingInput: If any part of `value` is a PendingRecord.
    """
    kind = type(value)
    if kind is DataOpRecord:
        leaves.append(value)
        return value.value
    if kind is tuple:
        return tuple([unpack_records(v, leaves) for v in value])
    if kind is list:
        return [unpack_records(v, leaves) for v in value]
    if isinstance(value, dict):
        return {k: unpack_records(v, leaves) for k, v in value.items()}
    if isinstance(value, DataOpRecord):
        leaves.append(value)
        return value.value
    if isinstance(value, PendingRecord):
        raise PendingInput()
    if isinstance(value, (tuple, list)):
        # Tuple/list subclasses (named tuples) are passed on as they are (their records still count).
        for item in value:
            unpack_records(item, leaves)
    return value
