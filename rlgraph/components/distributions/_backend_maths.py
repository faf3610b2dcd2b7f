"""The tensor maths that the distributions share, written once per backend.

`backend_maths()` returns `TF_MATHS` or `TORCH_MATHS` for the current backend. Both offer the same
small functions with the same semantics, so each distribution writes its formulas once and gets
identical results on TF and PyTorch. Only graph functions (and the hooks they call) use them.
Axis arguments are always the last axis: distributions put categories/dimensions there.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.utils import torch_random
from rlgraph.utils.rlgraph_errors import RLGraphError

TINY = float(np.finfo(np.float32).tiny)


class _TFMaths:
    """TensorFlow versions (`tf.function`-safe: no python control flow on tensor values)."""

    @staticmethod
    def _tf():
        import tensorflow as tf
        return tf

    def exp(self, x): return self._tf().exp(x)
    def log(self, x): return self._tf().math.log(x)
    def log1p(self, x): return self._tf().math.log1p(x)
    def tanh(self, x): return self._tf().tanh(x)
    def sigmoid(self, x): return self._tf().sigmoid(x)
    def softplus(self, x): return self._tf().nn.softplus(x)
    def lgamma(self, x): return self._tf().math.lgamma(x)
    def digamma(self, x): return self._tf().math.digamma(x)
    def softmax(self, x): return self._tf().nn.softmax(x, axis=-1)
    def log_softmax(self, x): return self._tf().nn.log_softmax(x, axis=-1)
    def sum_last(self, x): return self._tf().reduce_sum(x, axis=-1)
    def where(self, cond, a, b): return self._tf().where(cond, a, b)
    def zeros_like(self, x): return self._tf().zeros_like(x)
    def clip(self, x, low, high): return self._tf().clip_by_value(x, low, high)

    def float_like(self, x, like):
        tf = self._tf()
        x = tf.convert_to_tensor(x)
        return x if x.dtype == like.dtype else tf.cast(x, like.dtype)

    def floats(self, x):
        tf = self._tf()
        x = tf.convert_to_tensor(x)
        return x if x.dtype.is_floating else tf.cast(x, tf.float32)

    def argmax_last(self, x): return self._tf().argmax(x, axis=-1, output_type=self._tf().int32)
    def stack_last(self, xs): return self._tf().stack(list(xs), axis=-1)
    def logsumexp_last(self, x): return self._tf().reduce_logsumexp(x, axis=-1)

    def sum_from(self, x, axis: int):
        """x summed over its axes `axis`, `axis` + 1, ... (unchanged if it has no more axes)."""
        rank = x.shape.rank
        return self._tf().reduce_sum(x, axis=list(range(axis, rank))) if rank > axis else x

    def expand_last(self, x, rank: int):
        """x with trailing unit axes added up to `rank` (to broadcast against a rank-`rank` tensor)."""
        for _ in range(rank - x.shape.rank):
            x = self._tf().expand_dims(x, -1)
        return x

    def rank(self, x) -> int: return x.shape.rank

    def one_hot(self, indices, depth: int, like):
        return self._tf().one_hot(indices, depth, dtype=like.dtype)

    def gather_last(self, x, indices):
        """x[..., indices] per leading position: x [..., n], indices [...] -> [...]."""
        tf = self._tf()
        indices = tf.cast(indices, tf.int32)
        out = tf.gather(x, tf.expand_dims(indices, -1), batch_dims=indices.shape.rank)
        return tf.squeeze(out, -1)

    def normal_like(self, x):
        tf = self._tf()
        return tf.random.normal(tf.shape(x), dtype=x.dtype)

    def uniform_like(self, x):
        """Uniform in [TINY, 1): a valid argument of log."""
        tf = self._tf()
        return tf.random.uniform(tf.shape(x), minval=TINY, maxval=1.0, dtype=x.dtype)

    def standard_gamma(self, alpha):
        """Gamma(alpha, 1) samples shaped like alpha (reparameterised: differentiable in alpha)."""
        return self._tf().random.gamma([], alpha, dtype=alpha.dtype)

    def cond(self, flag, true_fn: Callable, false_fn: Callable, where: str) -> Any:
        if isinstance(flag, (bool, np.bool_)):
            return true_fn() if flag else false_fn()
        tf = self._tf()
        flag = tf.convert_to_tensor(flag)
        if flag.shape.rank not in (None, 0):
            raise RLGraphError("the flag must be a scalar bool", where=where, received=f"shape {flag.shape}")
        return tf.cond(tf.cast(flag, tf.bool), true_fn, false_fn)


class _TorchMaths:
    """PyTorch versions."""

    @staticmethod
    def _torch():
        import torch
        return torch

    def exp(self, x): return self._torch().exp(x)
    def log(self, x): return self._torch().log(x)
    def log1p(self, x): return self._torch().log1p(x)
    def tanh(self, x): return self._torch().tanh(x)
    def sigmoid(self, x): return self._torch().sigmoid(x)
    def softplus(self, x): return self._torch().nn.functional.softplus(x)
    def lgamma(self, x): return self._torch().lgamma(x)
    def digamma(self, x): return self._torch().digamma(x)
    def softmax(self, x): return self._torch().softmax(x, dim=-1)
    def log_softmax(self, x): return self._torch().log_softmax(x, dim=-1)
    def sum_last(self, x): return x.sum(dim=-1)
    def zeros_like(self, x): return self._torch().zeros_like(x)
    def clip(self, x, low, high): return self._torch().clamp(x, low, high)

    def where(self, cond, a, b):
        torch = self._torch()
        return torch.where(cond, a, b if torch.is_tensor(b) else torch.as_tensor(b, dtype=a.dtype))

    def float_like(self, x, like):
        torch = self._torch()
        x = torch.as_tensor(x)
        return x if x.dtype == like.dtype else x.to(like.dtype)

    def floats(self, x):
        torch = self._torch()
        x = torch.as_tensor(x)
        return x if x.is_floating_point() else x.to(torch.float32)

    def argmax_last(self, x): return self._torch().argmax(x, dim=-1).to(self._torch().int32)
    def stack_last(self, xs): return self._torch().stack(list(xs), dim=-1)
    def logsumexp_last(self, x): return self._torch().logsumexp(x, dim=-1)

    def sum_from(self, x, axis: int):
        return x.sum(dim=tuple(range(axis, x.dim()))) if x.dim() > axis else x

    def expand_last(self, x, rank: int):
        return x[(...,) + (None,) * (rank - x.dim())] if rank > x.dim() else x

    def rank(self, x) -> int: return x.dim()

    def one_hot(self, indices, depth: int, like):
        return self._torch().nn.functional.one_hot(indices.long(), depth).to(like.dtype)

    def gather_last(self, x, indices):
        return self._torch().gather(x, -1, indices.long().unsqueeze(-1)).squeeze(-1)

    def normal_like(self, x): return torch_random.randn_like(x)

    def uniform_like(self, x): return torch_random.rand_like(x).clamp_min(TINY)

    def standard_gamma(self, alpha): return torch_random.standard_gamma(alpha)

    def cond(self, flag, true_fn: Callable, false_fn: Callable, where: str) -> Any:
        torch = self._torch()
        if torch.is_tensor(flag) and flag.dim() != 0:
            raise RLGraphError("the flag must be a scalar bool", where=where, received=f"shape {tuple(flag.shape)}")
        return true_fn() if bool(flag) else false_fn()


TF_MATHS = _TFMaths()
TORCH_MATHS = _TorchMaths()


def backend_maths():
    """The maths namespace of the current backend."""
    return TF_MATHS if get_backend() == "tf" else TORCH_MATHS
