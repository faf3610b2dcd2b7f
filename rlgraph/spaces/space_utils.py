"""Utilities on spaces: equivalence, inference from data, sanity checks, list registries."""
from __future__ import annotations

from collections import OrderedDict
from typing import Any, Optional, Sequence, Tuple as TupleT, Union

import numpy as np

from rlgraph.spaces.bool_box import BoolBox
from rlgraph.spaces.containers import ContainerSpace, Dict, Tuple
from rlgraph.spaces.float_box import FloatBox
from rlgraph.spaces.gym_spaces import space_from_gym, space_to_gym  # noqa: F401 (re-exported)
from rlgraph.spaces.int_box import IntBox
from rlgraph.spaces.space import Space
from rlgraph.spaces.text_box import TextBox
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError
from rlgraph.utils.util import convert_dtype


# --- Equivalence ---------------------------------------------------------------------------------
def check_space_equivalence(space1: Space, space2: Space) -> Union[Space, bool]:
    """Whether two spaces describe the same data, and if so the more generic of the two.

    The more generic space is the one with batch/time-rank flags where the other has hard
    dims: FloatBox(shape=(64,)) and FloatBox(add_batch_rank=True) are equivalent and the latter
    is returned. Class and dtype must match, IntBoxes must have the same categories (other
    bounds are ignored), and dims must match: FloatBox((2,)) and FloatBox((3,)) are not
    equivalent. Containers are compared child by child.

    Returns:
        The more generic space, or False.
    """
    kind = type(space1)
    if kind is type(space2) and kind in _BOX_TYPES and space1._shape == space2._shape and \
            space1._dtype == space2._dtype and space1._batch_rank == space2._batch_rank and \
            space1._time_rank == space2._time_rank and space1.time_major == space2.time_major:
        # The same space again (the common case of a repeated call): only categories can differ.
        if kind is IntBox and space1.num_categories != space2.num_categories:
            return False
        return space1
    if isinstance(space1, ContainerSpace) or isinstance(space2, ContainerSpace):
        return _container_equivalence(space1, space2)
    if type(space1) is not type(space2) or space1.dtype != space2.dtype:
        return False
    if isinstance(space1, IntBox) and space1.num_categories != space2.num_categories:
        return False
    full1 = space1.get_shape(with_batch_rank=True, with_time_rank=True)
    full2 = space2.get_shape(with_batch_rank=True, with_time_rank=True)
    if len(full1) != len(full2) or any(a is not None and b is not None and a != b for a, b in zip(full1, full2)):
        return False
    return space2 if full2.count(None) > full1.count(None) else space1


# The box classes whose equivalence check may take the shortcut above (subclasses take the full path).
_BOX_TYPES = frozenset({FloatBox, IntBox, BoolBox, TextBox})


def _container_equivalence(space1: Any, space2: Any) -> Union[Space, bool]:
    if type(space1) is not type(space2):
        return False
    keys1 = [k for k, _ in space1._children()]
    if keys1 != [k for k, _ in space2._children()]:
        return False
    results = []
    for (_, child1), (_, child2) in zip(space1._children(), space2._children()):
        result = check_space_equivalence(child1, child2)
        if result is False:
            return False
        results.append(result)
    children1 = [c for _, c in space1._children()]
    if all(r is c for r, c in zip(results, children1)):
        return space1
    if all(r is c for r, (_, c) in zip(results, space2._children())):
        return space2
    generic = type(space1)._from_children(space1._rebuild(results))
    generic.__dict__.update(space1.__dict__)
    return generic


# --- Inference from data -------------------------------------------------------------------------
def get_space_from_op(op: Any, add_batch_rank: bool = False, add_time_rank: bool = False,
                      time_major: bool = False) -> Space:
    """Infers a space from data: numpy arrays, python scalars/strings, tensors, nested dicts/tuples.

    Args:
        op: The data. Tensors and tensor specs (anything with `.shape` and `.dtype`, e.g. from
            TensorFlow or PyTorch) are read without importing their backend; their leading
            None dims become the batch rank (and then the time rank).
        add_batch_rank: Whether the leading dim of arrays is a batch rank (removed from the shape).
        add_time_rank: Whether the next dim is a time rank (removed from the shape).
        time_major: Whether the time dim comes before the batch dim.

    Returns:
        The inferred space: FloatBox, IntBox (unbounded), BoolBox or TextBox, or a Dict/Tuple.
    """
    if isinstance(op, dict):
        return Dict({k: get_space_from_op(v, add_batch_rank, add_time_rank, time_major) for k, v in op.items()},
                    add_batch_rank=add_batch_rank, add_time_rank=add_time_rank, time_major=time_major)
    if isinstance(op, tuple):
        return Tuple(*[get_space_from_op(v, add_batch_rank, add_time_rank, time_major) for v in op],
                     add_batch_rank=add_batch_rank, add_time_rank=add_time_rank, time_major=time_major)
    shape, dtype = shape_and_dtype(op)
    return space_from_shape(shape, dtype, add_batch_rank, add_time_rank, time_major, what=type(op).__name__)


def space_from_shape(shape: tuple, dtype: np.dtype, add_batch_rank: bool = False, add_time_rank: bool = False,
                     time_major: bool = False, what: str = "data") -> Space:
    """The primitive space of data with full `shape` (batch/time dims included) and numpy `dtype`.

    Like `get_space_from_op` for one array or tensor whose shape and dtype are known already
    (`shape_and_dtype`); leading None dims become the batch (then time) rank.
    """
    if None in shape:
        leading = next((i for i, d in enumerate(shape) if d is not None), len(shape))
        batch, time = add_batch_rank or leading >= 1, add_time_rank or leading >= 2
    else:
        batch, time = add_batch_rank, add_time_rank
    key = (shape, dtype, bool(batch), bool(time), bool(time_major))
    template = _DATA_SPACES.get(key)
    if template is None:
        template = _new_data_space(shape, dtype, *key[2:], what=what)
        if len(_DATA_SPACES) >= _MAX_DATA_SPACES:
            _DATA_SPACES.clear()
        _DATA_SPACES[key] = template
    return template._fresh_copy()


# Inferred spaces, validated once per (full shape, dtype, ranks) and handed out as fresh copies:
# a build infers a space for every graph-function output, mostly the same few.
_DATA_SPACES: dict = {}
_MAX_DATA_SPACES = 1024


def _new_data_space(shape: tuple, dtype: np.dtype, batch: bool, time: bool, time_major: bool, what: str) -> Space:
    strip = int(batch) + int(time)
    if len(shape) < strip:
        raise RLGraphSpaceError(None, "data has fewer dims than the requested batch/time ranks",
                                where="get_space_from_op", expected=f"at least {strip} dims", received=shape)
    full_shape, shape = shape, tuple(shape[strip:])
    if None in shape:
        raise RLGraphSpaceError(None, "only the leading (batch/time) dims may be unknown", where="get_space_from_op",
                                received=full_shape)
    ranks = dict(add_batch_rank=batch, add_time_rank=time, time_major=time_major)
    kind = dtype.kind
    if kind == "f":
        return FloatBox(shape=shape, dtype=dtype, **ranks)
    if kind in "iu":
        return IntBox(shape=shape, dtype=dtype, **ranks)
    if kind == "b":
        return BoolBox(shape=shape, **ranks)
    if kind in "USO":
        return TextBox(shape=shape, **ranks)
    raise RLGraphSpaceError(None, "cannot infer a space from this data", where="get_space_from_op",
                            expected="numeric, bool or string data", received=f"{what} of dtype {dtype}")


# Backend dtype objects (torch.float32, tf.int64, ...) -> numpy dtype.
_TENSOR_DTYPES: dict = {}
# Classes whose objects were read through `.shape`/`.dtype` (backend tensors and tensor specs).
_TENSOR_TYPES: set = set()


def shape_and_dtype(op: Any) -> TupleT[tuple, np.dtype]:
    """(shape with None for unknown dims, numpy dtype) of an array, tensor, tensor spec or python value."""
    if type(op) not in _TENSOR_TYPES:
        if isinstance(op, (bool, np.bool_)):
            return (), np.dtype(np.bool_)
        if isinstance(op, (int, float, str, bytes, list, np.ndarray, np.generic)):
            array = np.asarray(op)
            if isinstance(op, int):
                array = array.astype(np.int32)
            elif isinstance(op, float):
                array = array.astype(np.float32)
            return array.shape, array.dtype
        if not (hasattr(op, "shape") and hasattr(op, "dtype")):
            raise RLGraphSpaceError(None, "cannot infer a space from this object", where="get_space_from_op",
                                    expected="an array, a tensor, a python scalar/string or a dict/tuple of those",
                                    received=type(op).__name__)
        _TENSOR_TYPES.add(type(op))
    shape = op.shape
    if hasattr(shape, "as_list"):
        shape = shape.as_list()
    dtype = _TENSOR_DTYPES.get(op.dtype)
    if dtype is None:
        dtype = _TENSOR_DTYPES[op.dtype] = convert_dtype(op.dtype, to="np")
    if None in shape:
        return tuple(None if d is None else int(d) for d in shape), dtype
    return tuple(map(int, shape)), dtype


# --- Sanity checks -------------------------------------------------------------------------------
def sanity_check_space(space: Space, allowed_types: Optional[Sequence[type]] = None,
                       non_allowed_types: Optional[Sequence[type]] = None,
                       must_have_batch_rank: Optional[bool] = None, must_have_time_rank: Optional[bool] = None,
                       must_have_batch_or_time_rank: bool = False, must_have_categories: Optional[bool] = None,
                       num_categories: Union[None, int, tuple] = None, rank: Union[None, int, tuple] = None) -> None:
    """Raises an `RLGraphSpaceError` if `space` fails any of the given criteria.

    Type criteria apply to `space` itself; rank and category criteria to each primitive leaf.

    Args:
        space: The space to check.
        allowed_types: `space` must be an instance of one of these.
        non_allowed_types: `space` must not be an instance of any of these.
        must_have_batch_rank: True/False: the batch rank must be present/absent.
        must_have_time_rank: True/False: the time rank must be present/absent.
        must_have_batch_or_time_rank: If True, at least one of the two must be present.
        must_have_categories: True/False: IntBoxes must/must not have global bounds (num_categories > 0).
        num_categories: An int, or an inclusive (min, max) range (None = open end), for IntBoxes.
        rank: An int, or an inclusive (min, max) range (None = open end).

    Raises:
        RLGraphSpaceError: Naming the criterion, what was expected and the space received.
    """
    if allowed_types is not None and not isinstance(space, tuple(allowed_types)):
        raise RLGraphSpaceError(space, "space type not allowed", where="sanity_check_space",
                                expected="one of " + ", ".join(t.__name__ for t in allowed_types))
    if non_allowed_types is not None and isinstance(space, tuple(non_allowed_types)):
        raise RLGraphSpaceError(space, "space type not allowed", where="sanity_check_space",
                                expected="none of " + ", ".join(t.__name__ for t in non_allowed_types))
    for key, leaf in space.flatten().items():
        _check_leaf(leaf, key, must_have_batch_rank, must_have_time_rank, must_have_batch_or_time_rank,
                    must_have_categories, num_categories, rank)


def _check_leaf(leaf: Space, key: str, must_have_batch_rank, must_have_time_rank, must_have_batch_or_time_rank,
                must_have_categories, num_categories, rank) -> None:
    where = "sanity_check_space" + (f" (leaf {key!r})" if key else "")

    def fail(message, expected):
        raise RLGraphSpaceError(leaf, message, where=where, expected=expected)

    if must_have_batch_rank is not None and leaf.has_batch_rank != must_have_batch_rank:
        fail("batch rank mismatch", "a batch rank" if must_have_batch_rank else "no batch rank")
    if must_have_time_rank is not None and leaf.has_time_rank != must_have_time_rank:
        fail("time rank mismatch", "a time rank" if must_have_time_rank else "no time rank")
    if must_have_batch_or_time_rank and not (leaf.has_batch_rank or leaf.has_time_rank):
        fail("neither batch nor time rank", "a batch rank or a time rank")
    if must_have_categories is not None or num_categories is not None:
        if not isinstance(leaf, IntBox):
            fail("categories need an IntBox", "an IntBox")
        categories = leaf.num_categories
        if must_have_categories is not None and bool(categories) != must_have_categories:
            fail("category mismatch", "global bounds (num_categories > 0)" if must_have_categories
                 else "no global bounds (num_categories == 0)")
        if num_categories is not None and not _in_range(categories, num_categories):
            fail(f"num_categories {categories} out of range", f"num_categories in {_range_text(num_categories)}")
    if rank is not None and not _in_range(leaf.rank, rank):
        fail(f"rank {leaf.rank} out of range", f"rank in {_range_text(rank)}")


def _in_range(value: int, criterion: Union[int, tuple]) -> bool:
    if isinstance(criterion, (tuple, list)):
        low, high = criterion
        return (low is None or value >= low) and (high is None or value <= high)
    return value == criterion


def _range_text(criterion: Union[int, tuple]) -> str:
    if isinstance(criterion, (tuple, list)):
        return f"[{'-inf' if criterion[0] is None else criterion[0]}, {'inf' if criterion[1] is None else criterion[1]}]"
    return f"{{{criterion}}}"


# --- Registries ----------------------------------------------------------------------------------
def get_list_registry(from_space: Space, capacity: Optional[int] = None, initializer: Any = 0,
                      flatten: bool = True, add_batch_rank: Union[bool, int] = False) -> Any:
    """Python-list storage for data of `from_space`, one list per primitive leaf.

    Args:
        from_space: The space whose leaves get a list each.
        capacity: If given, each list starts with `capacity` copies of the initial item.
        initializer: The initial item. The string "zeros" means a zero sample of the leaf space
            (with a batch rank of 1 if `add_batch_rank`).
        flatten: True: OrderedDict auto-key -> list. False: nested dict/tuple of lists.
        add_batch_rank: See `initializer`.

    Returns:
        The registry.
    """
    def make_list(key: str, leaf: Space) -> list:
        if capacity is None:
            return []
        if isinstance(initializer, str) and initializer == "zeros":
            item = leaf.zeros(size=1) if add_batch_rank else leaf.zeros()
            if add_batch_rank and np.ndim(item) == leaf.rank:
                item = np.asarray(item)[None]
            return [np.copy(item) for _ in range(capacity)]
        return [initializer] * capacity

    flat = from_space.flatten(mapping=make_list)
    return flat if flatten else from_space.unflatten(flat)
