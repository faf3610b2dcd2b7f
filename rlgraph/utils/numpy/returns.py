"""Numpy reference of discounted returns, GAE and V-trace."""
from __future__ import annotations

from typing import Optional, Tuple, Union

import numpy as np

from rlgraph.utils.numpy.maths import _as_float, _float_dtype


# --- Returns and advantages ---------------------------------------------------------------------------------------


def discounted_returns(rewards: np.ndarray, terminals: np.ndarray, discount: float,
                       bootstrap_value: Union[float, np.ndarray] = 0.0) -> np.ndarray:
    """Discounted returns G_t = r_t + discount * (1 - d_t) * G_{t+1}, with G_T = bootstrap_value.

    A terminal d_t = 1 ends the episode after step t, so G_t = r_t and nothing later leaks into it.

    Args:
        rewards: [B, T] (any leading dims; time is the last axis).
        terminals: [B, T] bools (or 0/1).
        discount: gamma.
        bootstrap_value: [B] or scalar: the value of the state after the last step.

    Returns:
        [B, T] returns.

    >>> discounted_returns(np.array([1.0, 2.0, 3.0]), np.array([0, 1, 0]), 0.9, bootstrap_value=10.0)
    array([ 2.8,  2. , 12. ])
    """
    r_t = _as_float(rewards)
    not_done = 1.0 - np.asarray(terminals, dtype=r_t.dtype)
    returns = np.empty_like(r_t)
    g = np.broadcast_to(np.asarray(bootstrap_value, dtype=r_t.dtype), r_t.shape[:-1])
    for t in reversed(range(r_t.shape[-1])):
        g = r_t[..., t] + discount * not_done[..., t] * g
        returns[..., t] = g
    return returns


def gae(rewards: np.ndarray, values: np.ndarray, bootstrap_value: Union[float, np.ndarray], terminals: np.ndarray,
        discount: float, gae_lambda: float) -> np.ndarray:
    """Generalized advantage estimation (Schulman et al. 2015, https://arxiv.org/abs/1506.02438).

    delta_t = r_t + discount * (1 - d_t) * v_{t+1} - v_t with v_T = bootstrap_value, and
    A_t = delta_t + discount * gae_lambda * (1 - d_t) * A_{t+1}. gae_lambda = 0 gives the one-step TD
    error, gae_lambda = 1 gives discounted_returns - values.

    Args:
        rewards: [B, T] (time is the last axis).
        values: [B, T] value estimates v_t of the states the rewards were collected in.
        bootstrap_value: [B] or scalar: v_T, the value of the state after the last step.
        terminals: [B, T] bools (or 0/1); d_t = 1 cuts both the bootstrap and the advantage trace.
        discount: gamma.
        gae_lambda: lambda.

    Returns:
        [B, T] advantages.
    """
    dtype = _float_dtype(rewards, values)
    r_t, v_t = np.asarray(rewards, dtype=dtype), np.asarray(values, dtype=dtype)
    not_done = 1.0 - np.asarray(terminals, dtype=dtype)
    v_tp1 = np.concatenate([v_t[..., 1:], np.broadcast_to(np.asarray(bootstrap_value, dtype=dtype),
                                                         v_t.shape[:-1])[..., None]], axis=-1)
    delta_t = r_t + discount * not_done * v_tp1 - v_t
    advantages = np.empty_like(delta_t)
    a = np.zeros(delta_t.shape[:-1], dtype=dtype)
    for t in reversed(range(delta_t.shape[-1])):
        a = delta_t[..., t] + discount * gae_lambda * not_done[..., t] * a
        advantages[..., t] = a
    return advantages


def vtrace(log_rhos: np.ndarray, discounts: np.ndarray, rewards: np.ndarray, values: np.ndarray,
           bootstrap_value: np.ndarray, clip_rho_threshold: Optional[float] = 1.0,
           clip_pg_rho_threshold: Optional[float] = 1.0,
           clip_c_threshold: Optional[float] = 1.0) -> Tuple[np.ndarray, np.ndarray]:
    """V-trace targets and policy-gradient advantages (Espeholt et al. 2018, https://arxiv.org/abs/1802.01561).

    With rho_t = min(clip_rho_threshold, pi/mu), c_t = min(clip_c_threshold, pi/mu) (the paper's c-bar; lambda = 1)
    and V_T = bootstrap_value, the backward (recursive) form of the paper's eq. (1):

        delta_t = rho_t * (r_t + gamma_t * V_{t+1} - V_t)
        v_t - V_t = delta_t + gamma_t * c_t * (v_{t+1} - V_{t+1}),   v_T = V_T
        pg_advantage_t = min(clip_pg_rho_threshold, pi/mu) * (r_t + gamma_t * v_{t+1} - V_t)

    Args:
        log_rhos: [T, B] log importance ratios log(pi(a_t|x_t) / mu(a_t|x_t)).
        discounts: [T, B] gamma_t, already zero where the episode ended at step t.
        rewards: [T, B] r_t.
        values: [T, B] V_t = V(x_t) from the learner's value function.
        bootstrap_value: [B] V(x_T).
        clip_rho_threshold: rho-bar; None disables clipping of rho_t.
        clip_pg_rho_threshold: Clip of the ratio in the advantages; None disables it.
        clip_c_threshold: c-bar, the clip of the trace coefficients c_t; default 1 as in the paper's
            experiments; None disables it.

    Returns:
        (vs, pg_advantages), each [T, B]; vs are the value targets v_t.
    """
    dtype = _float_dtype(log_rhos, rewards, values)
    rhos = np.exp(np.asarray(log_rhos, dtype=dtype))
    gamma_t = np.asarray(discounts, dtype=dtype)
    r_t, v_t = np.asarray(rewards, dtype=dtype), np.asarray(values, dtype=dtype)
    v_T = np.asarray(bootstrap_value, dtype=dtype)
    rho_t = rhos if clip_rho_threshold is None else np.minimum(clip_rho_threshold, rhos)
    c_t = rhos if clip_c_threshold is None else np.minimum(clip_c_threshold, rhos)
    v_tp1 = np.concatenate([v_t[1:], v_T[None]], axis=0)
    delta_t = rho_t * (r_t + gamma_t * v_tp1 - v_t)

    vs_minus_v = np.empty_like(v_t)
    acc = np.zeros_like(v_T)
    for t in reversed(range(v_t.shape[0])):
        acc = delta_t[t] + gamma_t[t] * c_t[t] * acc
        vs_minus_v[t] = acc
    vs = v_t + vs_minus_v

    vs_tp1 = np.concatenate([vs[1:], v_T[None]], axis=0)
    pg_rho_t = rhos if clip_pg_rho_threshold is None else np.minimum(clip_pg_rho_threshold, rhos)
    return vs, pg_rho_t * (r_t + gamma_t * vs_tp1 - v_t)
