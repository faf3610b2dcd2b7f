"""Numpy reference of `VariationalAutoEncoder`: its hashed N(0, 1) noise and the pieces of its loss.

Shapes: B batch, D data dims (any number), Z latent units.
"""
from __future__ import annotations

import math
from typing import Sequence, Tuple

import numpy as np

from rlgraph.utils.numpy.batches import hash32

__all__ = ["hashed_standard_normal", "gaussian_kl_to_standard_normal", "squared_error_reconstruction_loss",
           "vae_loss"]

TWO_POW_32 = float(2 ** 32)


def hashed_standard_normal(seed: int, num_calls: int, shape: Sequence[int]) -> np.ndarray:
    """The N(0, 1) noise that a `VariationalAutoEncoder` draws on its call number `num_calls`.

    Box-Muller on two hashed uniforms per element (row-major index i):
    stream = hash32(seed ^ hash32(num_calls)), u1 = (hash32(stream + 2i) + 1) / 2**32 in (0, 1],
    u2 = hash32(stream + 2i + 1) / 2**32 in [0, 1), eps_i = sqrt(-2 log u1) cos(2 pi u2), computed in
    float64 and rounded to float32.

    >>> hashed_standard_normal(seed=1, num_calls=0, shape=(2,)).astype(float).round(4).tolist()
    [-1.3748, -0.2152]
    """
    size = int(np.prod(shape, dtype=np.int64))
    stream = hash32(np.int64(seed) ^ hash32(num_calls))
    i = stream + 2 * np.arange(size, dtype=np.int64)
    u1 = (hash32(i).astype(np.float64) + 1.0) / TWO_POW_32
    u2 = hash32(i + 1).astype(np.float64) / TWO_POW_32
    eps = np.sqrt(-2.0 * np.log(u1)) * np.cos(2.0 * math.pi * u2)
    return eps.astype(np.float32).reshape(tuple(shape))


def gaussian_kl_to_standard_normal(mean: np.ndarray, stddev: np.ndarray) -> np.ndarray:
    """KL(N(mean, diag(stddev^2)) || N(0, I)) = sum_z 0.5 (mean^2 + stddev^2 - 1) - log stddev.

    Args:
        mean: [B, Z].
        stddev: [B, Z], > 0.

    Returns:
        [B].
    """
    mean, stddev = np.asarray(mean, np.float64), np.asarray(stddev, np.float64)
    return np.sum(0.5 * (mean ** 2 + stddev ** 2 - 1.0) - np.log(stddev), axis=-1)


def squared_error_reconstruction_loss(x: np.ndarray, reconstruction: np.ndarray) -> np.ndarray:
    """0.5 * sum over the data dims of (x - reconstruction)^2: the negative log-likelihood of x under
    N(reconstruction, I) without its constant. [B, D...] -> [B]."""
    diff = np.asarray(x, np.float64) - np.asarray(reconstruction, np.float64)
    return 0.5 * np.sum(diff.reshape((diff.shape[0], -1)) ** 2, axis=-1)


def vae_loss(x: np.ndarray, reconstruction: np.ndarray, mean: np.ndarray, stddev: np.ndarray,
             kl_weight: float = 1.0) -> Tuple[float, np.ndarray]:
    """The negative ELBO ([Kingma & Welling 2013](https://arxiv.org/abs/1312.6114)) per item,
    reconstruction + kl_weight * KL, and its batch mean.

    Returns:
        (loss, loss_per_item [B]).
    """
    per_item = squared_error_reconstruction_loss(x, reconstruction) + \
        kl_weight * gaussian_kl_to_standard_normal(mean, stddev)
    return float(np.mean(per_item)), per_item
