"""Space helpers shared by the components that cut, fold or sample along the leading ranks of
their inputs (`Slice`, `BatchApply`, `BatchSplitter`, `Sampler`): walking the leaves of a
container space, finding a leaf's batch axis, and checking that every leaf has the ranks needed."""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

from rlgraph.spaces import ContainerSpace, Dict, Space
from rlgraph.spaces import Tuple as TupleSpace
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError


def leaf_spaces(space: Space) -> List[Tuple[str, Space]]:
    """(auto-key, primitive space) pairs of `space` ("" for a primitive space itself)."""
    return list(space.flatten().items())


def map_leaf_spaces(space: Space, fn: Callable[[Space], Any]) -> Any:
    """`fn(leaf)` for every primitive space of `space`, nested like it in plain dicts/tuples.

    That nesting is what `@graph_fn(output_space=...)` takes for a container result.
    """
    if isinstance(space, Dict):
        return {key: map_leaf_spaces(child, fn) for key, child in space.items()}
    if isinstance(space, TupleSpace):
        return tuple(map_leaf_spaces(child, fn) for child in space)
    return fn(space)


def batch_axis(space: Space) -> int:
    """The axis of the batch rank in data of `space` (1 for time-major data with a time rank)."""
    return 1 if space.has_time_rank and space.time_major else 0


def require_ranks(space: Space, where: str, batch: bool = True, time: bool = False) -> None:
    """Raises `RLGraphSpaceError` naming the leaf unless every leaf of `space` has the ranks asked for.

    Args:
        space: The argument's space (primitive or container).
        where: "<component>.<api>(<argument>)" for the message.
        batch: Every leaf needs a batch rank.
        time: Every leaf needs a time rank.
    """
    wanted = " and ".join(name for name, on in (("a batch rank", batch), ("a time rank", time)) if on)
    flags = ", ".join(f"{flag}=True" for flag, on in (("add_batch_rank", batch), ("add_time_rank", time)) if on)
    for key, leaf in leaf_spaces(space):
        if (batch and not leaf.has_batch_rank) or (time and not leaf.has_time_rank):
            part = f" (leaf '{key}')" if isinstance(space, ContainerSpace) else ""
            raise RLGraphSpaceError(leaf, f"the input{part} needs {wanted}", where=where,
                                    expected=f"a space with {flags}")
