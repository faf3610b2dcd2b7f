"""Container spaces: `Dict` (keyed) and `Tuple` (ordered), nestable to any depth."""
from __future__ import annotations

import abc
from typing import Any, Iterator, Mapping, Optional, Union

import numpy as np

from rlgraph.spaces.space import RankFlag, Space, copy_attribute
from rlgraph.utils.nest import DICT_KEY_RULE, is_valid_dict_key, tuple_key
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError

_RANK_KEYS = ("add_batch_rank", "add_time_rank", "time_major")


class ContainerSpace(Space):
    """A space made of other spaces. Shape, rank and dtype are nested tuples of the children's.

    Batch/time-rank flags given to a container are applied to all its children.
    """

    @abc.abstractmethod
    def _children(self) -> Iterator[tuple]:
        """(auto-key segment, child space) pairs in order (sorted keys for Dict)."""

    @abc.abstractmethod
    def _rebuild(self, values: list) -> Any:
        """A structure like this container's (dict or tuple) holding `values` in child order."""

    def _map(self, fn) -> Any:
        return self._rebuild([fn(child) for _, child in self._children()])

    def _map_with_keys(self, fn) -> Any:
        return self._rebuild([fn(key, child) for key, child in self._children()])

    def _set_ranks(self, add_batch_rank, add_time_rank, time_major) -> None:
        super()._set_ranks(add_batch_rank, add_time_rank, time_major)
        for _, child in self._children():
            child._set_ranks(add_batch_rank, add_time_rank, time_major)

    @property
    def shape(self) -> tuple:
        return self.get_shape()

    @property
    def rank(self) -> tuple:
        return tuple(child.rank for _, child in self._children())

    @property
    def dtype(self) -> tuple:
        return tuple(child.dtype for _, child in self._children())

    @property
    def flat_dim(self) -> int:
        return int(sum(child.flat_dim for _, child in self._children()))

    def get_shape(self, with_batch_rank: RankFlag = False, with_time_rank: RankFlag = False,
                  time_major: Optional[bool] = None, **kwargs) -> tuple:
        return tuple(child.get_shape(with_batch_rank=with_batch_rank, with_time_rank=with_time_rank,
                                     time_major=time_major, **kwargs) for _, child in self._children())

    def sample(self, size: Union[None, int, tuple] = None, fill_value: Any = None, horizontal: bool = False) -> Any:
        """Samples every child.

        Args:
            size: See `Space.sample`.
            fill_value: See `Space.sample`.
            horizontal: False: each child is sampled `size` times (batches inside the
                structure). True: `size` whole containers in an object array of length `size`.
        """
        if horizontal:
            count = 1 if size is None else int(np.prod(size))
            out = np.empty(count, dtype=object)
            for i in range(count):
                out[i] = self.sample(fill_value=fill_value)
            return out
        return self._map(lambda child: child.sample(size=size, fill_value=fill_value))

    def zeros(self, size: Union[None, int, tuple] = None) -> Any:
        return self._map(lambda child: child.zeros(size=size))

    def force_batch(self, samples: Any) -> Any:
        return self._rebuild([child.force_batch(samples[key]) for key, child in self._sample_items()])

    def _spaces_that_draw(self) -> list:
        return [self] + [space for _, child in self._children() for space in child._spaces_that_draw()]

    def seed(self, seed: Optional[int]) -> None:
        """Seeds this container; each child gets its own seed derived from `seed`."""
        super().seed(seed)
        children = list(self._children())
        child_seeds = [None] * len(children) if seed is None else \
            np.random.SeedSequence(seed).generate_state(len(children)).tolist()
        for (_, child), child_seed in zip(children, child_seeds):
            child.seed(child_seed)

    def _flatten(self, mapping, separator: str, scope: str, pairs: list) -> None:
        for key, child in self._children():
            child._flatten(mapping, separator, f"{scope}{separator}{key}", pairs)

    def _unflatten(self, flat: Any, separator: str, scope: str, used: list) -> Any:
        return self._rebuild([child._unflatten(flat, separator, f"{scope}{separator}{key}", used)
                              for key, child in self._children()])

    def contains(self, sample: Any) -> bool:
        try:
            return all(child.contains(sample[key]) for key, child in self._sample_items(sample))
        except (KeyError, IndexError, TypeError):
            return False

    def __deepcopy__(self, memo):
        clone = self._rebuild([_copy_child(child, memo) for _, child in self._children()])
        clone = type(self)._from_children(clone)
        memo[id(self)] = clone
        for key, value in self.__dict__.items():
            setattr(clone, key, copy_attribute(value, memo))
        return clone

    def _repr_body(self) -> str:
        return ", ".join(f"{k}={v!r}" for k, v in self._children())

    def _ranks_and_type_equal(self, other: Any) -> bool:
        return type(self) is type(other) and self._ranks_equal(other)


def _copy_child(child: Space, memo: dict) -> Space:
    """`copy.deepcopy(child, memo)` for a child space (skips the copy module's dispatch)."""
    copied = memo.get(id(child))
    return child.__deepcopy__(memo) if copied is None else copied


def _child_space(spec: Any, where: str) -> Space:
    if isinstance(spec, Space):
        return spec
    if isinstance(spec, Mapping) and "type" not in spec:
        return Dict(spec)
    if isinstance(spec, (list, tuple)):
        return Tuple(list(spec))
    try:
        return Space.from_spec(spec)
    except RLGraphSpaceError:
        raise
    except Exception as error:
        raise RLGraphSpaceError(None, "cannot make a space of this child spec", where=where,
                                expected="a Space or a space spec", received=repr(spec), hint=str(error)) from None


class Dict(ContainerSpace, dict):
    """A keyed combination of spaces (a python dict of spaces). Keys are kept sorted.

    Args:
        spec: A dict key -> Space or space spec (python types, dicts, lists allowed).
        **kwargs: More key=space entries, and `add_batch_rank`, `add_time_rank`, `time_major`,
            which are applied to every child.

    >>> d = Dict(image=IntBox(256, shape=(80, 80, 3), dtype="uint8"), text=TextBox())
    >>> d.shape
    ((80, 80, 3), ())
    """

    __spec_open_kwargs__ = True

    def __init__(self, spec: Optional[Mapping] = None, **kwargs):
        ranks = {k: kwargs.pop(k) for k in _RANK_KEYS if k in kwargs}
        ContainerSpace.__init__(self, **ranks)
        entries = dict(spec or {})
        overlap = set(entries) & set(kwargs)
        if overlap:
            raise RLGraphSpaceError(None, "key given twice", where="Dict", received=sorted(overlap))
        entries.update(kwargs)
        for key in entries:
            if not is_valid_dict_key(key):
                # Keys become auto-key segments ("/key"): "", "a/b" or "_T0_" would not read back.
                raise RLGraphSpaceError(None, "invalid Dict key", where=f"Dict[{key!r}]", expected=DICT_KEY_RULE,
                                        received=repr(key))
        dict.__init__(self, ((k, _child_space(entries[k], f"Dict[{k!r}]")) for k in sorted(entries)))
        if ranks:
            self._set_ranks(ranks.get("add_batch_rank"), ranks.get("add_time_rank"), ranks.get("time_major"))

    @classmethod
    def _from_children(cls, children: dict) -> "Dict":
        out = dict.__new__(cls)
        dict.__init__(out, children)
        return out

    def _children(self):
        return iter(dict.items(self))

    def _rebuild(self, values: list) -> dict:
        return dict(zip(dict.keys(self), values))

    def _sample_items(self, sample: Any = None):
        if sample is not None and (not isinstance(sample, Mapping) or set(sample) != set(dict.keys(self))):
            raise KeyError("keys differ")
        return dict.items(self)

    def __eq__(self, other: Any) -> bool:
        return self._ranks_and_type_equal(other) and dict.__eq__(self, other)

    def __ne__(self, other: Any) -> bool:
        return not self == other

    __hash__ = None

    def __reduce__(self):
        return _rebuild_container, (Dict, dict(dict.items(self)), self.__dict__.copy())


class Tuple(ContainerSpace, tuple):
    """An ordered sequence of spaces (a python tuple of spaces).

    Args:
        *components: Spaces or space specs; a single list/tuple argument is unpacked.
        **kwargs: `add_batch_rank`, `add_time_rank`, `time_major`, applied to every child.

    >>> Tuple(FloatBox(shape=(2,)), IntBox(3)).flat_dim
    3
    """

    def __new__(cls, *components, **kwargs):
        if len(components) == 1 and isinstance(components[0], (list, tuple)) and \
                not isinstance(components[0], Space):
            components = components[0]
        children = [_child_space(c, f"Tuple[{i}]") for i, c in enumerate(components)]
        return tuple.__new__(cls, children)

    def __init__(self, *components, **kwargs):
        ranks = {k: kwargs.pop(k) for k in _RANK_KEYS if k in kwargs}
        if kwargs:
            raise RLGraphSpaceError(None, "unknown keyword argument", where="Tuple", expected=", ".join(_RANK_KEYS),
                                    received=", ".join(sorted(kwargs)))
        ContainerSpace.__init__(self, **ranks)
        if ranks:
            self._set_ranks(ranks.get("add_batch_rank"), ranks.get("add_time_rank"), ranks.get("time_major"))

    @classmethod
    def _from_children(cls, children: tuple) -> "Tuple":
        return tuple.__new__(cls, children)

    def _children(self):
        return ((tuple_key(i), child) for i, child in enumerate(tuple.__iter__(self)))

    def _rebuild(self, values: list) -> tuple:
        return tuple(values)

    def _sample_items(self, sample: Any = None):
        if sample is not None and (not isinstance(sample, (tuple, list)) or len(sample) != len(self)):
            raise IndexError("length differs")
        return enumerate(tuple.__iter__(self))

    def __eq__(self, other: Any) -> bool:
        return self._ranks_and_type_equal(other) and tuple.__eq__(self, other)

    def __ne__(self, other: Any) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return hash((Tuple, tuple(hash(c) for c in tuple.__iter__(self)), self._batch_rank, self._time_rank))

    def _repr_body(self) -> str:
        return ", ".join(repr(child) for child in tuple.__iter__(self))

    def __reduce__(self):
        return _rebuild_container, (Tuple, tuple(tuple.__iter__(self)), self.__dict__.copy())


def _rebuild_container(cls, children, state):
    out = cls._from_children(children)
    out.__dict__.update(state)
    return out
