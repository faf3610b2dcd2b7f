"""Backend variables shaped like a space (`Space.get_variable`). Backends are imported lazily."""
from __future__ import annotations

import contextlib
import threading
from typing import Any, Iterator, Optional

import numpy as np

from rlgraph.backend_system import get_backend, normalize_backend
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError
from rlgraph.utils.util import convert_dtype


class _CreationState(threading.local):
    owner = None  # The component whose variables are being created in this thread.


_creation = _CreationState()


@contextlib.contextmanager
def creation_context(owner: Any) -> Iterator[None]:
    """Routes every variable created in this thread to `owner` while active.

    `owner` provides `adjust_trainable(trainable) -> bool`, `device` and
    `on_variable_created(name, variable, initial, trainable, local)` (components do).
    """
    previous = _creation.owner
    _creation.owner = owner
    try:
        yield
    finally:
        _creation.owner = previous


def variable_shape(space, add_batch_rank, add_time_rank, time_major) -> tuple:
    """The shape of a variable of a primitive `space`; None marks a variable-size rank.

    `add_*_rank` None uses the space's own flag; True adds the rank (its fixed size or None);
    an int adds a rank of that size (-1 means None).
    """
    def dim(requested, has_rank, fixed):
        if requested is None:
            requested = has_rank
        if requested is False:
            return ()
        if requested is True:
            return (fixed,)
        return (None if int(requested) == -1 else int(requested),)

    batch = dim(add_batch_rank, space.has_batch_rank, space.batch_size)
    time = dim(add_time_rank, space.has_time_rank, space.time_size)
    time_major = space.time_major if time_major is None else time_major
    return (time + batch if time_major else batch + time) + tuple(space.shape)


def initial_value(initializer: Any, shape: tuple, dtype: np.dtype, name: str) -> np.ndarray:
    """The initial numpy value of a variable: None -> zeros, a number/array -> broadcast, a callable -> called.

    Variable-size (None) ranks get size 0.
    """
    concrete = tuple(0 if d is None else d for d in shape)
    if initializer is None:
        return np.zeros(concrete, dtype=dtype) if dtype.kind not in "US" else np.full(concrete, "", dtype=dtype)
    if callable(initializer):
        value = initializer(concrete, dtype)
    elif isinstance(initializer, (int, float, bool, np.number, np.bool_, np.ndarray, list, tuple, str)):
        value = initializer
    else:
        raise RLGraphSpecError("unsupported initializer", where=f"get_variable({name!r})",
                               expected="None (zeros), a number, an array or fn(shape, dtype) -> array",
                               received=repr(initializer))
    if isinstance(value, (bool, np.bool_)) and dtype.kind != "b":
        raise RLGraphSpecError("a bool is no initial value of a numeric variable", where=f"get_variable({name!r})",
                               expected=f"a number, an array or a named initializer for dtype {dtype}",
                               received=repr(value))
    try:
        array = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError, OverflowError) as error:
        raise RLGraphSpecError("the initializer's value does not fit the variable's dtype",
                               where=f"get_variable({name!r})", expected=f"numbers of dtype {dtype}",
                               received=f"{repr(value)[:60]} ({error})") from None
    try:
        return np.broadcast_to(array, concrete).copy()
    except ValueError:
        raise RLGraphSpaceError(None, "initializer does not fit the variable's shape", where=f"get_variable({name!r})",
                                expected=f"shape {shape}", received=f"shape {np.shape(value)}") from None


def resolve_named_initializer(initializer: Any, dtype: np.dtype, name: str) -> Any:
    """Named specs ("xavier", {"type": "truncated_normal"}) become callables; others pass through."""
    if isinstance(initializer, dict) or (isinstance(initializer, str) and np.dtype(dtype).kind not in "US"):
        from rlgraph.utils.initializers import get_initializer
        return get_initializer(initializer, where=f"get_variable({name!r})")
    return initializer


def create_variable(space, name: Optional[str], is_input_feed: bool = False, add_batch_rank=None, add_time_rank=None,
                    time_major: Optional[bool] = None, is_python: bool = False, local: bool = False,
                    trainable: bool = False, initializer: Any = None, backend: Optional[str] = None) -> Any:
    """See `Space.get_variable`. `local` variables are never trainable."""
    from rlgraph.spaces.containers import ContainerSpace
    name = name or "variable"
    if isinstance(space, ContainerSpace):
        return space._map_with_keys(lambda key, child: create_variable(
            child, f"{name}/{key}", is_input_feed, add_batch_rank, add_time_rank, time_major, is_python, local,
            trainable, initializer, backend))
    shape = variable_shape(space, add_batch_rank, add_time_rank, time_major)
    initializer = resolve_named_initializer(initializer, space.dtype, name)
    owner = None if is_input_feed or is_python else _creation.owner
    if owner is not None:
        trainable = owner.adjust_trainable(trainable)
    trainable = bool(trainable) and not local
    if is_python:
        return [] if None in shape else initial_value(initializer, shape, space.dtype, name)
    backend = normalize_backend(backend) if backend is not None else get_backend()
    # Placement is the executor's: it builds under the scope of `execution_spec.device`. A component's
    # own `device` argument is not a placement (the build warns about one that differs).
    if is_input_feed:
        value = None
    else:
        value = initial_value(initializer, shape, space.dtype, name)
    if backend == "tf":
        variable = _tf_variable(space, name, shape, is_input_feed, trainable, value)
    else:
        variable = _torch_variable(space, name, shape, is_input_feed, trainable, value)
    if owner is not None:
        # Constant initializers are kept as the scalar; others as the array (to restore after a build).
        constant = initializer is None or (not callable(initializer) and np.ndim(initializer) == 0)
        initial = (0 if initializer is None else initializer) if constant else value
        owner.on_variable_created(name, variable, initial, trainable, bool(local))
    return variable


def _tf_variable(space, name, shape, is_input_feed, trainable, value):
    import tensorflow as tf
    dtype = convert_dtype(space.dtype, to="tf")
    if is_input_feed:
        return tf.TensorSpec(shape=shape, dtype=dtype, name=name)
    # init_scope: variables are created eagerly even if requested while a tf.function traces.
    with tf.init_scope():
        return tf.Variable(value, trainable=trainable, name=name, dtype=dtype, shape=tf.TensorShape(shape))


def _torch_variable(space, name, shape, is_input_feed, trainable, value):
    import torch
    dtype = convert_dtype(space.dtype, to="pytorch")
    if is_input_feed:
        return torch.zeros(tuple(1 if d is None else d for d in shape), dtype=dtype)
    value = torch.tensor(value, dtype=dtype)  # A copy: `value` is also kept as the initial value.
    if trainable:
        if not (value.is_floating_point() or value.is_complex()):
            raise RLGraphSpaceError(space, "only float variables can be trainable in PyTorch",
                                    where=f"get_variable({name!r})", hint="pass trainable=False.")
        return torch.nn.Parameter(value, requires_grad=True)
    return value
