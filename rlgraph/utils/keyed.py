"""Checks of keyed structures (records, loss inputs): one place for the error a wrong key set gets."""
from __future__ import annotations

from typing import Any, Iterable, Optional

from rlgraph.utils.rlgraph_errors import RLGraphError
from rlgraph.utils.specifiable import closest_match


def check_keys(mapping: Any, required: Iterable[str], optional: Iterable[str] = (), where: str = "",
               hint: Optional[str] = None, what: str = "the record") -> None:
    """Raises a clear `RLGraphError` unless `mapping` is a dict holding every key of `required`
    and no key outside `required` and `optional`.

    Only the keys are looked at, never the values (API methods call it while tracing).

    Args:
        mapping: The structure to check.
        required: Keys it must hold.
        optional: Keys it may hold.
        where: The component/API method and argument, for the error.
        hint: What to do; by default the valid keys.
        what: How the error names the structure.

    Raises:
        RLGraphError: Naming the missing and unknown keys, the closest valid key to an unknown one,
            and the keys received.

    >>> check_keys({"a": 1}, ["a"], ["b"])
    >>> check_keys({"a": 1, "c": 2}, ["a"], ["b"], where="loss(record)")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    rlgraph.utils.rlgraph_errors.RLGraphError: loss(record): the record has unknown key(s) ['c']. Expected ['a', '(b)']; ...
    """
    required, optional = tuple(required), tuple(optional)
    expected = list(required) + [f"({key})" for key in optional]
    if not isinstance(mapping, dict):
        raise RLGraphError(f"{what} must be a dict", where=where, expected=f"a dict with keys {expected}",
                           received=type(mapping).__name__)
    valid = set(required) | set(optional)
    missing = [key for key in required if key not in mapping]
    unknown = sorted(str(key) for key in mapping if key not in valid)
    if not missing and not unknown:
        return
    problems = ([f"lacks {missing}"] if missing else []) + ([f"has unknown key(s) {unknown}"] if unknown else [])
    guess = closest_match(unknown[0], missing or list(required) + list(optional)) if unknown else None
    raise RLGraphError(f"{what} {' and '.join(problems)}", where=where, expected=expected,
                       received=sorted(str(key) for key in mapping),
                       hint=f"did you mean '{guess}'?" if guess else (hint or f"the keys are {expected}."))
