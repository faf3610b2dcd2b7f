"""The function that makes an environment from its spec, handed down by `rlgraph.environments` to the layers below it.

Components sit below environments (docs: DESIGN's layer table) and never import them; the one
component that runs an environment, `EnvironmentStepper`, still takes the original RLgraph's
environment spec (`{"type": "grid-world", ...}`). Resolving such a spec needs the environment
family's lookup table, which lives in `rlgraph.environments`. So that package, when imported,
registers `Environment.from_spec` here (one explicit call in its `__init__.py`), and
`make_environment` calls whatever was registered. IMPALA's in-process actors (an agent, also below
environments) make their vector envs the same way. The package face `rlgraph/__init__.py` (the
composition root) imports `rlgraph.environments`, so the maker is registered in every process that
imports rlgraph; should it be missing (replaced by a test), `make_environment` raises an error
that says what to do. A factory (`EnvironmentStepper(environment=...)`) needs no lookup at all.
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from rlgraph.utils.rlgraph_errors import RLGraphSpecError

_maker: Optional[Callable[[Any], Any]] = None


def register_environment_maker(maker: Callable[[Any], Any]) -> None:
    """Sets the function that `make_environment` calls (`rlgraph.environments` registers
    `Environment.from_spec` when it is imported; a later call replaces the earlier one).

    Args:
        maker: A function from an environment spec (dict, type name, file) to a new environment.
    """
    global _maker
    _maker = maker


def make_environment(spec: Any, where: str = "make_environment") -> Any:
    """A new environment made from `spec` by the registered maker.

    Args:
        spec: An environment spec, e.g. {"type": "grid-world", "world": "2x2"}.
        where: Who asks (for the error message), e.g. "EnvironmentStepper(environment_spec)".

    Returns:
        The environment.

    Raises:
        RLGraphSpecError: If no maker is registered.
    """
    if _maker is None:
        raise RLGraphSpecError("environment specs are resolved by rlgraph.environments, which is not imported",
                               where=where, received=repr(spec)[:120],
                               hint="`import rlgraph.environments` first (it registers Environment.from_spec), or "
                                    "pass a factory: environment=lambda: GridWorld('2x2').")
    return _maker(spec)
