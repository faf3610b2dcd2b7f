"""`TextBox`: a box of strings, e.g. an instruction or a chat line."""
from __future__ import annotations

import string
from typing import Any, Union

import numpy as np

from rlgraph.spaces.box_space import BoxSpace
from rlgraph.spaces.space import RankFlag

_ALPHABET = np.array(list(string.ascii_lowercase))


class TextBox(BoxSpace):
    """A box of text chunks; the shape counts chunks per dimension (a scalar TextBox is one string).

    Samples are numpy unicode arrays (`np.str_` scalars for rank 0). Random samples are
    lower-case words of 1 to 8 letters.

    Args:
        shape: The shape (default: one string).
        add_batch_rank: See `Space`.
        add_time_rank: See `Space`.
        time_major: See `Space`.

    >>> TextBox().zeros() == ""
    True
    """

    def __init__(self, shape: Any = (), add_batch_rank: RankFlag = False, add_time_rank: RankFlag = False,
                 time_major: bool = False):
        super().__init__(low="", high="", shape=shape, add_batch_rank=add_batch_rank, add_time_rank=add_time_rank,
                         time_major=time_major, dtype=np.str_)

    def sample(self, size: Union[None, int, tuple] = None, fill_value: Any = None) -> Any:
        if fill_value is not None and not isinstance(fill_value, str):
            fill_value = "" if fill_value == 0 else str(fill_value)
        return super().sample(size=size, fill_value=fill_value)

    def _random(self, shape: tuple) -> np.ndarray:
        count = int(np.prod(shape, dtype=np.int64))
        lengths = self.rng.randint(1, 9, size=count)
        letters = _ALPHABET[self.rng.randint(0, len(_ALPHABET), size=int(lengths.sum()))]
        ends = np.cumsum(lengths)
        words = ["".join(letters[end - length:end]) for end, length in zip(ends, lengths)]
        return np.array(words, dtype=np.str_).reshape(shape)

    def _dtype_ok(self, dtype: np.dtype) -> bool:
        return dtype.kind in "US"

    def _in_bounds(self, array: np.ndarray) -> bool:
        return True

    def force_batch(self, samples: Any) -> np.ndarray:
        array = np.asarray(samples)
        return array if array.ndim > self.rank else array[None]
