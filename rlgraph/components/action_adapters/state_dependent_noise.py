"""Generalized state-dependent exploration (gSDE, Raffin et al. 2022, arXiv:2005.05719): the backend
maths of `ActionAdapter(use_sde=True)`.

The exploration noise of a Gaussian policy is a linear function of the policy's latent features
phi(s) (the network's output; a gradient flows back into the network through them only with
`learn_features`, as Stable-Baselines3's SAC has it, not its PPO/A2C): noise = phi(s) @ E, with the
exploration matrix E = sigma * Z, sigma = exp(log_std) a trainable [latent, actions] matrix and Z a
standard normal matrix drawn again only now and then (`resample_unit_noise`). Between two draws the
same state gets the same noise, and nearby states similar noise: smooth exploration instead of new
white noise at every step. Per action element, phi(s) @ E is normal with variance
sum_i phi_i(s)^2 sigma_ij^2, so the policy's distribution is N(mean(s), that variance + SDE_EPSILON)
for log-probabilities, entropies and KL divergences (`state_dependent_log_std`).

With several unit-noise matrices (`sde_matrices` = the number of environments acting in one
batch), row b of a batch of exactly that many rows uses matrix b (each environment explores on
its own); a batch of any other size uses the first matrix for every row.
"""
from __future__ import annotations

from typing import Any

from rlgraph.backend_system import get_backend
from rlgraph.utils import torch_random

SDE_EPSILON = 1e-6  # Added to the variance: keeps the log-std finite where phi(s) is 0.


def _std_matrix(log_std: Any, low: float, high: float) -> Any:
    if get_backend() == "tf":
        import tensorflow as tf
        return tf.exp(tf.clip_by_value(log_std, low, high))
    import torch
    return torch.exp(torch.clamp(log_std, low, high))


def _features(latent: Any, learn_features: bool) -> Any:
    """phi: the features, with the gradient to the network only where `learn_features`."""
    if learn_features:
        return latent
    if get_backend() == "tf":
        import tensorflow as tf
        return tf.stop_gradient(latent)
    return latent.detach()


def state_dependent_log_std(latent: Any, log_std: Any, low: float, high: float, learn_features: bool = False) -> Any:
    """0.5 log(phi^2 @ sigma^2 + SDE_EPSILON): [..., actions] for features `latent` [..., latent]
    (a gradient flows into them only with `learn_features`) and the log-std matrix [latent, actions]
    (clipped to [low, high])."""
    sigma = _std_matrix(log_std, low, high)
    phi = _features(latent, learn_features)
    if get_backend() == "tf":
        import tensorflow as tf
        return 0.5 * tf.math.log(tf.einsum("...i,ij->...j", tf.square(phi), tf.square(sigma)) + SDE_EPSILON)
    import torch
    return 0.5 * torch.log(torch.einsum("...i,ij->...j", phi * phi, sigma * sigma) + SDE_EPSILON)


def exploration_noise(latent: Any, log_std: Any, unit_noise: Any, low: float, high: float,
                      learn_features: bool = False) -> Any:
    """phi(s) @ (sigma * Z): [B, actions] (or [B, T, actions]) for features `latent`, the log-std
    matrix [latent, actions] and the unit-noise matrices Z [M, latent, actions] (see the module
    docstring for which matrix a row uses). Differentiable in sigma; in the features only with
    `learn_features`."""
    sigma = _std_matrix(log_std, low, high)
    matrices = unit_noise.shape[0]
    phi = _features(latent, learn_features)
    if get_backend() == "tf":
        import tensorflow as tf
        scaled = sigma[None] * tf.convert_to_tensor(unit_noise)

        if matrices == 1 or phi.shape.rank != 2:
            return tf.einsum("...i,ij->...j", phi, scaled[0])
        # Matrix b for row b of an M-row batch, else matrix 0 (by index: a tf.cond here would still
        # run its M-row branch on other batch sizes).
        rows = tf.range(tf.shape(phi)[0])
        which = tf.where(tf.equal(tf.shape(phi)[0], matrices), rows, tf.zeros_like(rows))
        return tf.einsum("bi,bij->bj", phi, tf.gather(scaled, which))
    import torch
    scaled = sigma[None] * unit_noise
    if matrices > 1 and phi.dim() == 2 and phi.shape[0] == matrices:
        return torch.einsum("bi,bij->bj", phi, scaled)
    return torch.einsum("...i,ij->...j", phi, scaled[0])


def resample_unit_noise(variable: Any) -> Any:
    """Draws new standard normal unit-noise matrices into `variable` (the agent's seeded random stream).
    TF: returns the assign op; PyTorch: None."""
    if get_backend() == "tf":
        import tensorflow as tf
        return variable.assign(tf.random.normal(tf.shape(variable), dtype=variable.dtype))
    import torch
    with torch.no_grad():
        torch_random.normal_(variable)
    return None
