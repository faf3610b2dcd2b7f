"""`EmbeddingLookup`: maps integer ids to rows of a learned embedding matrix."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.layer import Layer
from rlgraph.spaces import FloatBox, IntBox, Space
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.initializers import check_initializer_spec
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class EmbeddingLookup(Layer):
    """Looks up the embedding row of every integer id: out[..., :] = embeddings[ids[...]].

    The variable "<scope>/embeddings" is [vocab_size, embed_dim] on both backends. Ids of any
    shape [...] give [..., embed_dim] float outputs. With `max_norm`, every looked-up row whose
    L2 norm exceeds `max_norm` is scaled down to that norm (as `tf.nn.embedding_lookup(max_norm=)`;
    unlike `torch.nn.functional.embedding(max_norm=)`, the variable itself is never changed).
    Ids must lie in [0, vocab_size); e.g. the buckets of a `StringToHashBucket` with
    `num_hash_buckets=vocab_size`.

    Args:
        embed_dim: The size of each embedding vector.
        vocab_size: The number of rows (ids).
        initializer_spec: Initializer of the embeddings (see `get_initializer`); default
            "truncated_normal" (stddev 0.05).
        partition_strategy: "mod" or "div": how ids map to shards of a sharded embedding. The
            embeddings here are one unsharded variable, so both give the same result; kept for
            spec compatibility.
        max_norm: If given, the largest L2 norm of a returned embedding row.
        scope: Default "embedding-lookup".

    Raises:
        RLGraphSpecError: For a bad constructor argument.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import IntBox
    >>> layer = EmbeddingLookup(embed_dim=2, vocab_size=3, initializer_spec=np.array([[0., 0.], [1., 2.], [3., 4.]]),
    ...                         max_norm=2.5)
    >>> test = ComponentTest(layer, input_spaces=dict(inputs=IntBox(3, add_batch_rank=True)), backend="pytorch")
    >>> test.test(("apply", np.array([2, 1]))).round(4).tolist()
    [[1.5, 2.0], [1.0, 2.0]]
    """

    def __init__(self, embed_dim: int, vocab_size: int, initializer_spec: Any = "truncated_normal",
                 partition_strategy: str = "mod", max_norm: Optional[float] = None, scope: str = "embedding-lookup",
                 **kwargs):
        super().__init__(scope=scope, **kwargs)
        name = type(self).__name__
        for arg, value in (("embed_dim", embed_dim), ("vocab_size", vocab_size)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 1:
                raise RLGraphSpecError(f"{arg} must be a positive int", where=f"{name}({arg})", received=repr(value))
        if partition_strategy not in ("mod", "div"):
            raise RLGraphSpecError("unknown partition_strategy", where=f"{name}(partition_strategy)",
                                   expected="'mod' or 'div'", received=repr(partition_strategy))
        if max_norm is not None and (isinstance(max_norm, bool) or not isinstance(max_norm, (int, float, np.number))
                                     or not max_norm > 0):
            raise RLGraphSpecError("max_norm must be a positive number or None", where=f"{name}(max_norm)",
                                   received=repr(max_norm))
        self.embed_dim = int(embed_dim)
        self.vocab_size = int(vocab_size)
        self.initializer_spec = check_initializer_spec(initializer_spec, f"{name}(initializer_spec)")
        self.partition_strategy = partition_strategy
        self.max_norm = None if max_norm is None else float(max_norm)
        self.embeddings = None

    def check_input_spaces(self, input_spaces, action_space=None):
        """The ids must be an IntBox; bounded ones must lie in [0, vocab_size)."""
        space = self.input_space(input_spaces)
        where = f"{self.global_scope}.apply(inputs)"
        if not isinstance(space, IntBox):
            raise RLGraphSpaceError(space, "embedding lookups need integer ids", where=where,
                                    expected="an IntBox of ids in [0, vocab_size)",
                                    hint="map text to ids first, e.g. with StringToHashBucket.")
        if space.num_categories and (np.min(space.low) < 0 or np.max(space.high) > self.vocab_size):
            raise RLGraphSpaceError(space, "the ids' bounds exceed the vocabulary", where=where,
                                    expected=f"ids in [0, {self.vocab_size})",
                                    received=f"[{np.min(space.low)}, {np.max(space.high)})",
                                    hint="raise vocab_size or the ids' bounds.")

    def create_variables(self, input_spaces, action_space=None):
        self.embeddings = self.get_variable("embeddings", shape=(self.vocab_size, self.embed_dim), dtype="float",
                                            initializer=self.initializer_spec, trainable=True)

    @graph_fn
    def _graph_fn_apply(self, *inputs):
        ids = inputs[0]
        if get_backend() == "tf":
            import tensorflow as tf
            if ids.dtype not in (tf.int32, tf.int64):
                ids = tf.cast(ids, tf.int64)
            return tf.nn.embedding_lookup(self.embeddings, ids, max_norm=self.max_norm)
        import torch
        # Not F.embedding(max_norm=...): that would renormalise the variable in place.
        out = torch.nn.functional.embedding(ids.long(), self.embeddings)
        if self.max_norm is not None:
            norms = torch.linalg.vector_norm(out, dim=-1, keepdim=True)
            out = out * (self.max_norm / torch.clamp(norms, min=self.max_norm))
        return out

    def get_preprocessed_space(self, space: Space) -> Space:
        return FloatBox(shape=tuple(space.shape) + (self.embed_dim,), add_batch_rank=space.has_batch_rank,
                        add_time_rank=space.has_time_rank, time_major=space.time_major)
