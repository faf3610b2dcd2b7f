"""Numpy reference of the optimizer update rules (one update of one parameter array).

Every rule takes the parameter `theta`, its gradient `g` and the rule's state (slots) before the
update, and returns the new parameter and the new state. Step counts `t` are 1-based: the count
of the update being made. These follow the formulas in the docstrings of
`rlgraph/components/optimizers/`; the components are tested against them.
"""
from __future__ import annotations

from typing import List, Optional, Sequence, Tuple

import numpy as np


# --- Gradient clipping --------------------------------------------------------------------------------------------


def clip_by_global_norm(gradients: Sequence[np.ndarray], clip_norm: float) -> Tuple[List[np.ndarray], float]:
    """Scales all gradients by clip_norm / max(global_norm, clip_norm).

    global_norm = sqrt(sum_i sum(g_i ** 2)); gradients whose global norm is at most `clip_norm`
    are unchanged.

    Returns:
        (clipped gradients, global norm before clipping).

    >>> clipped, norm = clip_by_global_norm([np.array([3.0]), np.array([4.0])], 1.0)
    >>> norm, [c.round(6).tolist() for c in clipped]
    (5.0, [[0.6], [0.8]])
    """
    norm = float(np.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64))) for g in gradients)))
    scale = clip_norm / max(norm, clip_norm)
    return [np.asarray(g) * scale for g in gradients], norm


# --- Update rules -------------------------------------------------------------------------------------------------


def sgd_update(theta: np.ndarray, g: np.ndarray, learning_rate: float, momentum: float = 0.0,
               nesterov: bool = False, velocity: Optional[np.ndarray] = None) -> Tuple[np.ndarray, np.ndarray]:
    """Stochastic gradient descent with optional (Nesterov) momentum.

    v_t = momentum * v_{t-1} - lr * g;  theta += v_t, or with Nesterov theta += momentum * v_t - lr * g.
    With momentum 0: theta -= lr * g.

    Returns:
        (theta, v_t).

    >>> sgd_update(np.array([1.0]), np.array([2.0]), 0.1, momentum=0.5, velocity=np.array([1.0]))
    (array([1.3]), array([0.3]))
    """
    velocity = np.zeros_like(theta) if velocity is None else velocity
    v_t = momentum * velocity - learning_rate * g
    if nesterov:
        return theta + momentum * v_t - learning_rate * g, v_t
    return theta + v_t, v_t


def adam_update(theta: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, t: int, learning_rate: float,
                beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7) -> Tuple[np.ndarray, ...]:
    """Adam (Kingma & Ba 2014, https://arxiv.org/abs/1412.6980, Algorithm 1).

    m_t = beta_1 m + (1 - beta_1) g;  v_t = beta_2 v + (1 - beta_2) g^2;
    theta -= lr * m_hat / (sqrt(v_hat) + epsilon) with m_hat = m_t / (1 - beta_1^t), v_hat = v_t / (1 - beta_2^t).

    Returns:
        (theta, m_t, v_t).
    """
    m_t = beta_1 * m + (1.0 - beta_1) * g
    v_t = beta_2 * v + (1.0 - beta_2) * g * g
    m_hat = m_t / (1.0 - beta_1 ** t)
    v_hat = v_t / (1.0 - beta_2 ** t)
    return theta - learning_rate * m_hat / (np.sqrt(v_hat) + epsilon), m_t, v_t


def nadam_update(theta: np.ndarray, g: np.ndarray, m: np.ndarray, v: np.ndarray, t: int, learning_rate: float,
                 beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7) -> Tuple[np.ndarray, ...]:
    """Nadam: Adam with a Nesterov look-ahead of the first moment (Dozat 2016), constant beta_1.

    m_t, v_t and v_hat as in Adam; m_bar = (beta_1 m_t + (1 - beta_1) g) / (1 - beta_1^t);
    theta -= lr * m_bar / (sqrt(v_hat) + epsilon).

    Returns:
        (theta, m_t, v_t).
    """
    m_t = beta_1 * m + (1.0 - beta_1) * g
    v_t = beta_2 * v + (1.0 - beta_2) * g * g
    m_bar = (beta_1 * m_t + (1.0 - beta_1) * g) / (1.0 - beta_1 ** t)
    v_hat = v_t / (1.0 - beta_2 ** t)
    return theta - learning_rate * m_bar / (np.sqrt(v_hat) + epsilon), m_t, v_t


def adagrad_update(theta: np.ndarray, g: np.ndarray, accumulator: np.ndarray, learning_rate: float,
                   epsilon: float = 1e-7) -> Tuple[np.ndarray, np.ndarray]:
    """Adagrad (Duchi et al. 2011): a_t = a + g^2;  theta -= lr * g / (sqrt(a_t) + epsilon).

    Returns:
        (theta, a_t).

    >>> adagrad_update(np.array([1.0]), np.array([2.0]), np.array([5.0]), 0.3, epsilon=0.0)
    (array([0.8]), array([9.]))
    """
    a_t = accumulator + g * g
    return theta - learning_rate * g / (np.sqrt(a_t) + epsilon), a_t


def adadelta_update(theta: np.ndarray, g: np.ndarray, accum_grad: np.ndarray, accum_update: np.ndarray,
                    learning_rate: float, rho: float = 0.95, epsilon: float = 1e-7) -> Tuple[np.ndarray, ...]:
    """Adadelta (Zeiler 2012, https://arxiv.org/abs/1212.5701, Algorithm 1), scaled by lr.

    E[g^2]_t = rho E[g^2] + (1 - rho) g^2;  dx = sqrt(E[dx^2] + eps) / sqrt(E[g^2]_t + eps) * g;
    E[dx^2]_t = rho E[dx^2] + (1 - rho) dx^2;  theta -= lr * dx.

    Returns:
        (theta, E[g^2]_t, E[dx^2]_t).
    """
    accum_grad_t = rho * accum_grad + (1.0 - rho) * g * g
    dx = np.sqrt(accum_update + epsilon) / np.sqrt(accum_grad_t + epsilon) * g
    accum_update_t = rho * accum_update + (1.0 - rho) * dx * dx
    return theta - learning_rate * dx, accum_grad_t, accum_update_t


def rmsprop_update(theta: np.ndarray, g: np.ndarray, mean_square: np.ndarray, learning_rate: float,
                   rho: float = 0.9, momentum: float = 0.0, epsilon: float = 1e-7, centered: bool = False,
                   moment: Optional[np.ndarray] = None, mean_grad: Optional[np.ndarray] = None
                   ) -> Tuple[np.ndarray, ...]:
    """RMSProp (Hinton, lecture 6e), optionally centered and with momentum.

    ms_t = rho ms + (1 - rho) g^2; centered: mg_t = rho mg + (1 - rho) g and
    denominator = ms_t - mg_t^2, else ms_t; step = lr * g / (sqrt(denominator) + epsilon);
    with momentum: mom_t = momentum * mom + step and theta -= mom_t, else theta -= step.

    Returns:
        (theta, ms_t, mom_t, mg_t); mom_t / mg_t are None when momentum is 0 / not centered.
    """
    ms_t = rho * mean_square + (1.0 - rho) * g * g
    mg_t = None
    denominator = ms_t
    if centered:
        mg_t = rho * (np.zeros_like(theta) if mean_grad is None else mean_grad) + (1.0 - rho) * g
        denominator = np.maximum(ms_t - mg_t * mg_t, 0.0)
    step = learning_rate * g / (np.sqrt(denominator) + epsilon)
    mom_t = None
    if momentum > 0.0:
        mom_t = momentum * (np.zeros_like(theta) if moment is None else moment) + step
        step = mom_t
    return theta - step, ms_t, mom_t, mg_t
