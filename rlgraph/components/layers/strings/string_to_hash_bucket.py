"""`StringToHashBucket`: splits strings into tokens and hashes each token into a bucket id."""
from __future__ import annotations

import functools
from typing import Sequence, Tuple

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.strings.string_layer import StringLayer
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.farmhash import fingerprint64
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

_DTYPES = ("int32", "int64")


class StringToHashBucket(StringLayer):
    """Tokenizes a batch of strings and hashes every token into [0, num_hash_buckets).

    Each string is split on `delimiter` exactly as python's `str.split(delimiter)` and
    `tf.strings.split(sep=delimiter)` do: consecutive delimiters give empty tokens and the empty
    string is one empty token. Every token gets the bucket `Fingerprint64(token) %
    num_hash_buckets` (FarmHash, see `rlgraph.utils.farmhash`), the same on both backends
    (TensorFlow: `tf.strings.to_hash_bucket_fast`; PyTorch: the pure-Python port, so buckets
    are identical). Rows are right-padded with 0 up to the longest row of the batch; note that
    0 is also a valid bucket, so use `lengths` (or a mask from it) to tell padding apart.

    Input: [B] strings. Outputs: `hash_bucket` [B, max_tokens] and `lengths` [B] (tokens per
    row), both of `dtype`.

    Args:
        delimiter: The (non-empty) token separator; default " ".
        dtype: "int64" (default) or "int32".
        num_hash_buckets: The number of buckets (e.g. the vocabulary size of a following
            `EmbeddingLookup`).
        hash_function: "fast" (FarmHash Fingerprint64). "strong" (keyed SipHash) is not
            supported and raises `RLGraphSpecError`.
        scope: Default "str-hash-bucket".

    Raises:
        RLGraphSpecError: For a bad constructor argument.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import TextBox
    >>> layer = StringToHashBucket(num_hash_buckets=10)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=TextBox(add_batch_rank=True)), backend="pytorch")
    >>> buckets, lengths = test.test(("apply", np.array(["go left now", "stop"])))
    >>> buckets.shape, lengths.tolist()
    ((2, 3), [3, 1])
    >>> int(buckets[1, 0]) == fingerprint64("stop") % 10, buckets[1, 1:].tolist()
    (True, [0, 0])
    """

    def __init__(self, delimiter: str = " ", dtype: str = "int64", num_hash_buckets: int = 1000,
                 hash_function: str = "fast", scope: str = "str-hash-bucket", **kwargs):
        super().__init__(scope=scope, **kwargs)
        name = type(self).__name__
        if not isinstance(delimiter, str) or not delimiter:
            raise RLGraphSpecError("delimiter must be a non-empty string", where=f"{name}(delimiter)",
                                   received=repr(delimiter))
        if str(dtype) not in _DTYPES:
            raise RLGraphSpecError("unsupported dtype", where=f"{name}(dtype)", expected=_DTYPES, received=repr(dtype))
        if not isinstance(num_hash_buckets, (int, np.integer)) or isinstance(num_hash_buckets, bool) or \
                num_hash_buckets < 1:
            raise RLGraphSpecError("num_hash_buckets must be a positive int", where=f"{name}(num_hash_buckets)",
                                   received=repr(num_hash_buckets))
        if num_hash_buckets > np.iinfo(str(dtype)).max:
            raise RLGraphSpecError(f"num_hash_buckets does not fit into {dtype}", where=f"{name}(num_hash_buckets)",
                                   received=num_hash_buckets, hint="use dtype='int64'.")
        if hash_function != "fast":
            raise RLGraphSpecError(f"hash_function {hash_function!r} is not supported", where=f"{name}(hash_function)",
                                   expected="'fast'", received=repr(hash_function),
                                   hint="'strong' (keyed SipHash) has no PyTorch implementation; use 'fast'.")
        self.delimiter = delimiter
        self.dtype = str(dtype)
        self.num_hash_buckets = int(num_hash_buckets)
        self.hash_function = hash_function

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        space = self.input_space(input_spaces)
        if space.shape != () or space.has_time_rank:
            raise RLGraphSpaceError(space, "the input must be a batch of single strings",
                                    where=f"{self.global_scope}.apply(inputs)",
                                    expected="TextBox(shape=(), add_batch_rank=True) without a time rank",
                                    hint="reshape the text to [B] first.")

    @graph_fn(returns=2)
    def _graph_fn_apply(self, *inputs):
        text = inputs[0]
        if get_backend() == "tf":
            return self._hash_buckets_tf(text)
        import torch
        hash_bucket, lengths = _hash_buckets_numpy(text, self.delimiter, self.num_hash_buckets, self.dtype)
        # (as_tensor: on the device whose context the graph function runs under, where the lookup is.)
        return torch.as_tensor(hash_bucket), torch.as_tensor(lengths)

    def _hash_buckets_tf(self, text):
        import tensorflow as tf
        tokens = tf.strings.split(text, sep=self.delimiter)  # Ragged [B, None].
        buckets = tf.ragged.map_flat_values(tf.strings.to_hash_bucket_fast, tokens, self.num_hash_buckets)
        hash_bucket = tf.cast(buckets.to_tensor(default_value=0), self.dtype)
        lengths = tf.cast(buckets.row_lengths(), self.dtype)
        return hash_bucket, lengths

    def get_preprocessed_space(self, space: Space) -> Space:
        raise RLGraphSpaceError(space, "the output's token dim depends on the data (the longest row of each batch)",
                                where=f"{self.global_scope}.get_preprocessed_space",
                                hint="outputs are (hash_bucket [B, max_tokens], lengths [B]); there is no fixed "
                                     "space for them.")


@functools.lru_cache(maxsize=1 << 16)
def _bucket(token: bytes, num_buckets: int) -> int:
    return fingerprint64(token) % num_buckets


def _hash_buckets_numpy(text: Sequence, delimiter: str, num_buckets: int,
                       dtype: str = "int64") -> Tuple[np.ndarray, np.ndarray]:
    """(hash_bucket [B, max_tokens], lengths [B]) for a [B] array of str or bytes (see `StringToHashBucket`)."""
    sep = delimiter.encode("utf-8")
    rows = [[_bucket(token, num_buckets) for token in _as_bytes(s).split(sep)] for s in np.asarray(text).reshape(-1)]
    lengths = np.array([len(row) for row in rows], dtype=dtype)
    hash_bucket = np.zeros((len(rows), int(lengths.max()) if len(rows) else 0), dtype=dtype)
    for i, row in enumerate(rows):
        hash_bucket[i, :len(row)] = row
    return hash_bucket, lengths


def _as_bytes(value) -> bytes:
    return value.encode("utf-8") if isinstance(value, str) else bytes(value)
