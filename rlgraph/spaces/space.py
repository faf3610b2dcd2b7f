"""`Space`: the type and shape of a piece of data, with optional batch and time ranks."""
from __future__ import annotations

import abc
import copy
import inspect
from collections import OrderedDict
from typing import Any, Callable, Optional, Union

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError
from rlgraph.utils.specifiable import Specifiable

RankFlag = Union[bool, int]


def _check_rank_flag(value: Any, name: str) -> RankFlag:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value > 0:
        return int(value)
    raise RLGraphSpaceError(None, "invalid rank flag", where=name, expected="True, False or a positive int size",
                            received=repr(value))


class Space(Specifiable, abc.ABC):
    """Base class of all spaces.

    A space describes data: its dtype, its shape (without batch/time ranks) and whether
    the data carries a batch rank and/or a time rank in front of that shape. Batch and time
    ranks are flags, never guessed from shapes.

    Args:
        add_batch_rank: Whether the data has a batch rank; an int fixes its size.
        add_time_rank: Whether the data has a time rank; an int fixes its size.
        time_major: Whether the time rank comes before the batch rank.
    """

    def __init__(self, add_batch_rank: RankFlag = False, add_time_rank: RankFlag = False, time_major: bool = False):
        self._batch_rank = _check_rank_flag(add_batch_rank, f"{type(self).__name__}(add_batch_rank)")
        self._time_rank = _check_rank_flag(add_time_rank, f"{type(self).__name__}(add_time_rank)")
        self.time_major = bool(time_major)
        self._rng: Optional[np.random.RandomState] = None

    # --- Ranks -----------------------------------------------------------------------------
    @property
    def has_batch_rank(self) -> bool:
        return self._batch_rank is not False

    @property
    def has_time_rank(self) -> bool:
        return self._time_rank is not False

    @property
    def batch_size(self) -> Optional[int]:
        """The fixed batch-rank size, or None if the batch rank is variable or absent."""
        return None if isinstance(self._batch_rank, bool) else self._batch_rank

    @property
    def time_size(self) -> Optional[int]:
        """The fixed time-rank size, or None if the time rank is variable or absent."""
        return None if isinstance(self._time_rank, bool) else self._time_rank

    def _extra_dims(self, with_batch_rank: RankFlag, with_time_rank: RankFlag, time_major: Optional[bool]) -> tuple:
        """The leading (batch/time) dims that `get_shape` puts in front of the shape."""
        batch = _rank_dim(self._batch_rank, with_batch_rank)
        time = _rank_dim(self._time_rank, with_time_rank)
        time_major = self.time_major if time_major is None else time_major
        ordered = (time, batch) if time_major else (batch, time)
        return tuple(d for d in ordered if d is not _ABSENT)

    def with_batch_rank(self, add_batch_rank: RankFlag = True) -> "Space":
        """A deep copy of this space with the batch-rank flag (or fixed size) set to `add_batch_rank`."""
        return self.with_extra_ranks(add_batch_rank=add_batch_rank, add_time_rank=None, time_major=None)

    def with_time_rank(self, add_time_rank: RankFlag = True) -> "Space":
        """A deep copy of this space with the time-rank flag (or fixed size) set to `add_time_rank`."""
        return self.with_extra_ranks(add_batch_rank=None, add_time_rank=add_time_rank, time_major=None)

    def with_extra_ranks(self, add_batch_rank: Optional[RankFlag] = True, add_time_rank: Optional[RankFlag] = True,
                         time_major: Optional[bool] = False) -> "Space":
        """A deep copy with batch/time flags and time-majorness set; None leaves a property as is."""
        clone = self.__deepcopy__({})  # = copy.deepcopy(self), without its dispatch.
        clone._set_ranks(add_batch_rank, add_time_rank, time_major)
        return clone

    def _set_ranks(self, add_batch_rank: Optional[RankFlag], add_time_rank: Optional[RankFlag],
                   time_major: Optional[bool]) -> None:
        if add_batch_rank is not None:
            self._batch_rank = _check_rank_flag(add_batch_rank, "add_batch_rank")
        if add_time_rank is not None:
            self._time_rank = _check_rank_flag(add_time_rank, "add_time_rank")
        if time_major is not None:
            self.time_major = bool(time_major)

    def strip_ranks(self) -> "Space":
        """A deep copy of this space without batch and time ranks."""
        return self.with_extra_ranks(False, False, False)

    # --- Interface of concrete spaces -----------------------------------------------------------
    @property
    def shape(self) -> tuple:
        """The shape without batch or time ranks (containers: nested tuple)."""
        return self.get_shape()

    @property
    @abc.abstractmethod
    def rank(self) -> Union[int, tuple]:
        """The rank without batch or time ranks, e.g. 3 for shape (10, 7, 5)."""

    @property
    @abc.abstractmethod
    def dtype(self) -> Any:
        """The numpy dtype (containers: nested tuple of dtypes)."""

    @property
    @abc.abstractmethod
    def flat_dim(self) -> int:
        """The length of a flat vector holding one sample (no batch or time ranks)."""

    @abc.abstractmethod
    def get_shape(self, with_batch_rank: RankFlag = False, with_time_rank: RankFlag = False,
                  time_major: Optional[bool] = None, **kwargs) -> tuple:
        """The shape with the requested batch/time ranks in front.

        Args:
            with_batch_rank: Include the batch rank if this space has one: as None (or its fixed
                size), or as the given int when an int (e.g. -1) is passed.
            with_time_rank: Same for the time rank.
            time_major: Overrides `self.time_major` (time rank before batch rank).

        Returns:
            The shape tuple.
        """

    @abc.abstractmethod
    def sample(self, size: Union[None, int, tuple] = None, fill_value: Any = None) -> Any:
        """Draws uniformly at random (or fills with `fill_value`).

        Args:
            size: None: one sample without batch rank. 1: a batch of one if this space has a
                batch rank, else one sample. n > 1: a batch of n at axis 0 (even without a batch
                rank). A tuple, e.g. (batch, time), prepends those dims.
            fill_value: If given, every element is this value instead of random.
        """

    @abc.abstractmethod
    def contains(self, sample: Any) -> bool:
        """Whether `sample` is a member of this space (optionally with this space's batch/time dims)."""

    @abc.abstractmethod
    def force_batch(self, samples: Any) -> Any:
        """Returns `samples` with a batch rank (a batch of one if they had none)."""

    def zeros(self, size: Union[None, int, tuple] = None) -> Any:
        """Like `sample(size)`, but all elements are zero (False, "" for bool and text)."""
        return self.sample(size=size, fill_value=0)

    def seed(self, seed: Optional[int]) -> None:
        """Gives this space its own random generator; None returns to numpy's global one."""
        self._rng = None if seed is None else np.random.RandomState(seed)

    def sample_with(self, rng: np.random.RandomState, size: Union[None, int, tuple] = None) -> Any:
        """`sample(size)` drawn from `rng` instead of the space's own generator (for a container,
        every child's), which stays as it was.

        >>> from rlgraph.spaces import IntBox
        >>> space = IntBox(10)
        >>> int(space.sample_with(np.random.RandomState(0))) == int(np.random.RandomState(0).randint(0, 10))
        True
        """
        spaces = self._spaces_that_draw()
        saved = [space._rng for space in spaces]
        for space in spaces:
            space._rng = rng
        try:
            return self.sample(size=size)
        finally:
            for space, own in zip(spaces, saved):
                space._rng = own

    def _spaces_that_draw(self) -> list:
        """This space and, for a container, every space inside it."""
        return [self]

    @property
    def rng(self) -> Any:
        """What `sample` draws from: the space's own RandomState after `seed`, else the `np.random`
        module (numpy's global generator, which has the same methods)."""
        return self._rng if self._rng is not None else np.random

    # --- Flattening -----------------------------------------------------------------------------
    def flatten(self, mapping: Optional[Callable[[str, "Space"], Any]] = None, custom_scope_separator: str = "/",
                scope_separator_at_start: bool = True, scope_: Optional[str] = None,
                list_: Optional[list] = None) -> "OrderedDict[str, Any]":
        """Maps every primitive (non-container) space to an auto-key ("/a/_T0_/b").

        Args:
            mapping: fn(key, primitive_space) -> value; default: the primitive space itself.
            custom_scope_separator: The separator between key segments.
            scope_separator_at_start: Whether keys start with the separator.
            scope_: For recursive calls only: the key so far.
            list_: For recursive calls only: the (key, value) pairs collected so far.

        Returns:
            OrderedDict auto-key -> primitive space (or what `mapping` made of it).
        """
        top = list_ is None
        pairs = [] if top else list_
        self._flatten(mapping, custom_scope_separator, scope_ or "", pairs)
        if not top:
            return pairs
        if not scope_separator_at_start:
            cut = len(custom_scope_separator)
            pairs = [(k[cut:] if k.startswith(custom_scope_separator) else k, v) for k, v in pairs]
        return OrderedDict(pairs)

    def _flatten(self, mapping, separator: str, scope: str, pairs: list) -> None:
        pairs.append((scope, mapping(scope, self) if mapping is not None else self))

    def unflatten(self, flat: Any, custom_scope_separator: str = "/") -> Any:
        """Rebuilds the nested structure of this space from an auto-key -> value mapping.

        The structure comes from the space itself, not from the keys, so it round-trips exactly:
        empty Dicts and Tuples (which have no leaves, hence no keys) come back too.

        Args:
            flat: Auto-key -> value for every leaf, as `flatten` gives them (keys with or without
                the leading separator).
            custom_scope_separator: The separator used in the keys.

        Raises:
            RLGraphSpaceError: If a leaf has no value in `flat` or `flat` has keys of no leaf.
        """
        used: list = []
        out = self._unflatten(flat, custom_scope_separator, "", used)
        if len(used) != len(flat):
            raise RLGraphSpaceError(self, "keys that name no leaf of the space",
                                    where=f"{type(self).__name__}.unflatten(flat)",
                                    expected=list(self.flatten(custom_scope_separator=custom_scope_separator)),
                                    received=sorted(set(map(str, flat)) - set(used)))
        return out

    def _unflatten(self, flat: Any, separator: str, scope: str, used: list) -> Any:
        key = scope if scope in flat else scope[len(separator):]
        if key not in flat:
            raise RLGraphSpaceError(self, f"no value for the leaf {scope!r}",
                                    where=f"{type(self).__name__}.unflatten(flat)", expected=f"a key {scope!r}",
                                    received=f"keys {list(flat)}")
        used.append(key)
        return flat[key]

    # --- Variables ------------------------------------------------------------------------------
    def get_variable(self, name: Optional[str] = None, is_input_feed: bool = False, add_batch_rank: Optional[RankFlag] = None,
                     add_time_rank: Optional[RankFlag] = None, time_major: Optional[bool] = None,
                     is_python: bool = False, local: bool = False, **kwargs) -> Any:
        """A backend variable (or input signature) shaped like this space.

        Args:
            name: The variable's name (default "variable").
            is_input_feed: TF: a `tf.TensorSpec` (batch/time dims None) for `tf.function` input
                signatures. PyTorch has no placeholders: a zero tensor with each variable rank of
                size 1, usable as an example input for tracing.
            add_batch_rank: Add a batch rank (True: None / the fixed size; int: that size, -1 means
                None); None: use this space's flag.
            add_time_rank: Same for the time rank.
            time_major: Time rank before batch rank; None: this space's flag.
            is_python: Return a python list of `zeros()` samples instead of a backend object.
            local: Whether the variable must not be shared across workers (TF: not in the
                checkpointed collection; PyTorch: registered as a non-persistent buffer).
            **kwargs: Passed to the backend: `trainable` (default False), `initializer` (None =
                zeros, a number, an array, or fn(shape, np_dtype) -> array), `backend`.

        Returns:
            `tf.Variable` / `tf.TensorSpec` / `torch.Tensor` (a `torch.nn.Parameter` if trainable),
            or a nested dict/tuple of them for container spaces.
        """
        from rlgraph.spaces.variables import create_variable
        return create_variable(self, name, is_input_feed=is_input_feed, add_batch_rank=add_batch_rank,
                               add_time_rank=add_time_rank, time_major=time_major, is_python=is_python,
                               local=local, **kwargs)

    # --- Specs ---------------------------------------------------------------------------------
    @classmethod
    def from_spec(cls, spec: Any = None, **kwargs) -> "Space":
        """Creates a space from a spec; a list spec is a Tuple, a dict spec without "type" a Dict.

        Raises:
            RLGraphSpecError: For no spec at all (None without keyword arguments, on an abstract
                class such as `Space`), an unknown type or a type that is not a `Space` class.
        """
        if not kwargs and isinstance(spec, cls):
            return spec
        if spec is None and not kwargs and inspect.isabstract(cls):
            raise RLGraphSpecError("no space given", where=f"{cls.__name__}.from_spec", expected="a space or a space spec",
                                   received="None", hint='e.g. {"type": "float-box", "shape": [4]} or IntBox(2).')
        from rlgraph.spaces.containers import Dict, Tuple
        if isinstance(spec, (list, tuple)) and not isinstance(spec, Space):
            return Tuple(list(spec), **kwargs)
        if isinstance(spec, dict) and not isinstance(spec, Space) and "type" not in spec and cls in (Space, Dict):
            return Dict(spec, **kwargs)
        if type(spec) is type and not kwargs:
            return cls._from_python_type(spec)
        return super().from_spec(spec, **kwargs)

    @classmethod
    def _from_python_type(cls, spec: type) -> "Space":
        # `float`, `int`, `bool`, `str` (e.g. an agent's time_percentage argument): the generic spec
        # path inspects constructor signatures on every call, so the box is made once per class.
        key = (cls, spec)
        ctor = cls.__lookup_classes__.get(spec)
        cached = _PYTHON_TYPE_SPACES.get(key)
        if cached is None or cached[0] is not ctor:
            space = super().from_spec(spec)
            if not hasattr(space, "_fresh_copy"):
                return space
            cached = _PYTHON_TYPE_SPACES[key] = (ctor, space)
        return cached[1]._fresh_copy()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._repr_body()}{self._repr_flags()})"

    def _repr_body(self) -> str:
        return ""

    def _repr_flags(self) -> str:
        flags = []
        if self.has_batch_rank:
            flags.append("+batch" if self.batch_size is None else f"+batch={self.batch_size}")
        if self.has_time_rank:
            flags.append("+time" if self.time_size is None else f"+time={self.time_size}")
        if self.time_major and self.has_time_rank:
            flags.append("time-major")
        return (", " + ", ".join(flags)) if flags else ""

    def _ranks_equal(self, other: "Space") -> bool:
        return (self._batch_rank == other._batch_rank and self._time_rank == other._time_rank
                and (self.time_major == other.time_major or not (self.has_batch_rank and self.has_time_rank)))

    def __deepcopy__(self, memo):
        # A seeded generator is copied too, so copies sample reproducibly but independently.
        clone = type(self).__new__(type(self))
        memo[id(self)] = clone
        state = self.__dict__.copy()
        for key, value in state.items():
            if type(value) not in _SHAREABLE:
                state[key] = copy_attribute(value, memo)
        clone.__dict__ = state
        return clone


def copy_attribute(value: Any, memo: dict) -> Any:
    """`copy.deepcopy(value, memo)` for a space's attribute, sharing immutable values (numbers,
    strings, dtypes, shapes) and copying numeric arrays directly."""
    kind = type(value)
    if kind in _SHAREABLE:
        return value
    if kind is tuple:
        for item in value:
            if type(item) is not int:
                return copy.deepcopy(value, memo)
        return value
    if kind is np.ndarray and value.dtype.kind in "biufUS":
        copied = memo.get(id(value))
        if copied is None:
            copied = memo[id(value)] = value.copy(order="K")
        return copied
    if isinstance(value, (np.dtype, np.generic)):
        _SHAREABLE.add(kind)  # numpy's dtype and scalar classes
        return value
    return copy.deepcopy(value, memo)


# Classes of immutable attribute values (numpy's dtype and scalar classes join on first sight).
_SHAREABLE = {bool, int, float, str, type(None)}


# (class, python type) -> (the class it resolved to, an unseeded box never handed out).
_PYTHON_TYPE_SPACES: dict = {}


class _Absent:
    def __repr__(self):
        return "<absent>"


_ABSENT = _Absent()


def _rank_dim(flag: RankFlag, requested: RankFlag):
    """The dim a batch/time rank contributes to a shape, or _ABSENT if it is not included."""
    if flag is False or requested is False or requested is None:
        return _ABSENT
    if not isinstance(requested, bool) and isinstance(requested, (int, np.integer)):
        return int(requested)
    return None if flag is True else flag
