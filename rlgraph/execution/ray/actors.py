"""Actors on Ray or inline: one small interface so that an executor's logic never branches on the mode.

`RayActors` creates Ray actors and returns `ObjectRef`s; `InlineActors` keeps plain objects in
this process and runs each call at once, returning a finished `InlineFuture`. Both offer
`create`, `call`, `wait`, `get`, `put`, `kill` and `is_actor_death`.
"""
from __future__ import annotations

import logging
import os
from typing import Any, List, Optional, Sequence, Tuple

from rlgraph.utils.rlgraph_errors import RLGraphError

logger = logging.getLogger(__name__)


class InlineFuture:
    """The finished result (or exception) of an inline call."""

    __slots__ = ("value", "error")

    def __init__(self, value: Any = None, error: Optional[BaseException] = None):
        self.value = value
        self.error = error


class InlineActorDied(RLGraphError):
    """Raised by a call to an inline actor that was killed (as Ray raises `RayActorError`)."""


class _InlineHandle:
    def __init__(self, obj: Any):
        self.obj = obj
        self.dead = False


class InlineActors:
    """Actors as plain objects in this process; calls run at once (in call order)."""

    mode = "inline"

    def create(self, cls: type, args: Sequence = (), kwargs: Optional[dict] = None, num_cpus: float = 1,
               num_gpus: float = 0, name: str = "") -> _InlineHandle:
        return _InlineHandle(cls(*args, **dict(kwargs or {})))

    def call(self, handle: _InlineHandle, method: str, *args, num_returns: int = 1) -> Any:
        if handle.dead:
            error = InlineActorDied("the actor was killed", where=f"{type(handle.obj).__name__}.{method}")
            return tuple(InlineFuture(error=error) for _ in range(num_returns)) if num_returns > 1 else \
                InlineFuture(error=error)
        args = [self.get(a) if isinstance(a, InlineFuture) else a for a in args]
        try:
            value = getattr(handle.obj, method)(*args)
        except Exception as error:  # noqa: BLE001 - handed to whoever reads the future, as Ray does
            futures = [InlineFuture(error=error) for _ in range(num_returns)]
        else:
            futures = [InlineFuture(value)] if num_returns == 1 else [InlineFuture(v) for v in value]
        return futures[0] if num_returns == 1 else tuple(futures)

    def wait(self, futures: List[Any], timeout: Optional[float] = None) -> Tuple[list, list]:
        return list(futures), []

    def get(self, future: Any, timeout: Optional[float] = None) -> Any:
        if isinstance(future, list):
            return [self.get(f) for f in future]
        if future.error is not None:
            raise future.error
        return future.value

    def put(self, value: Any) -> InlineFuture:
        return InlineFuture(value)

    def kill(self, handle: _InlineHandle) -> None:
        handle.dead = True

    def is_actor_death(self, error: BaseException) -> bool:
        return isinstance(error, InlineActorDied)


class RayActors:
    """Ray actors (the driver must have called `ray.init`)."""

    mode = "ray"

    def __init__(self):
        import ray
        self.ray = ray

    def create(self, cls: type, args: Sequence = (), kwargs: Optional[dict] = None, num_cpus: float = 1,
               num_gpus: float = 0, name: str = "") -> Any:
        # Restarts are the executor's (it must resend weights and count them): max_restarts=0.
        remote = self.ray.remote(cls).options(num_cpus=num_cpus, num_gpus=num_gpus, max_restarts=0,
                                              max_task_retries=0)
        return remote.remote(*args, **dict(kwargs or {}))

    def call(self, handle: Any, method: str, *args, num_returns: int = 1) -> Any:
        bound = getattr(handle, method)
        if num_returns != 1:
            bound = bound.options(num_returns=num_returns)
        return bound.remote(*args)

    def wait(self, futures: List[Any], timeout: Optional[float] = None) -> Tuple[list, list]:
        """(all futures that are ready, the others), waiting up to `timeout` s for the first."""
        if not futures:
            return [], []
        ready, rest = self.ray.wait(list(futures), num_returns=1, timeout=timeout, fetch_local=False)
        if ready and rest:
            more, rest = self.ray.wait(rest, num_returns=len(rest), timeout=0, fetch_local=False)
            ready += more
        return ready, rest

    def get(self, future: Any, timeout: Optional[float] = None) -> Any:
        return self.ray.get(future, timeout=timeout)

    def put(self, value: Any) -> Any:
        return self.ray.put(value)

    def kill(self, handle: Any) -> None:
        try:
            self.ray.kill(handle, no_restart=True)
        except Exception as error:  # noqa: BLE001 - an already dead actor
            logger.debug("ray.kill: %s", error)

    def is_actor_death(self, error: BaseException) -> bool:
        from ray.exceptions import RayActorError
        return isinstance(error, RayActorError)


def make_actors(mode: str):
    """`RayActors` for mode "ray", `InlineActors` for "inline"."""
    return RayActors() if mode == "ray" else InlineActors()


def process_id() -> int:
    """The pid of the process this runs in (actors report theirs, e.g. for fault tests)."""
    return os.getpid()
