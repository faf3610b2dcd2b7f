"""Numpy reference of the losses: Huber, MSE, PPO, actor-critic, SAC, supervised, DQN, DQfD, IMPALA."""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from rlgraph.utils.numpy.maths import _as_float, log_softmax, one_hot
from rlgraph.utils.numpy.returns import discounted_returns, vtrace  # noqa: F401
from rlgraph.utils.rlgraph_errors import RLGraphError


# --- Losses -------------------------------------------------------------------------------------------------------


def huber_loss(x: np.ndarray, delta: float = 1.0) -> np.ndarray:
    """Elementwise 0.5 x^2 for |x| <= delta, else delta * (|x| - 0.5 delta) (Huber 1964).

    Args:
        x: Errors (e.g. TD errors), any shape.
        delta: Where the loss turns from quadratic to linear.

    Returns:
        Same shape as `x`.
    """
    x = _as_float(x)
    abs_x = np.abs(x)
    return np.where(abs_x <= delta, 0.5 * np.square(x), delta * (abs_x - 0.5 * delta)).astype(x.dtype, copy=False)


def mse(predictions: np.ndarray, targets: np.ndarray, axis: Optional[int] = None) -> np.ndarray:
    """Mean squared error, mean((predictions - targets)^2).

    Args:
        predictions: Any shape.
        targets: Broadcastable to `predictions`.
        axis: Axis to average over; None averages everything into a scalar
            (`tf.keras.losses.mean_squared_error` averages over axis -1).

    Returns:
        The mean, with `axis` reduced.
    """
    return np.mean(np.square(_as_float(predictions) - _as_float(targets)), axis=axis)


# --- Policy-gradient (PPO, actor-critic), SAC and supervised losses -------------------------------------------------


def ppo_loss(log_probs, prev_log_probs, advantages, entropy, values, prev_values, value_targets,
             clip_ratio: float = 0.2, value_function_clipping: Optional[float] = None, weight_entropy: float = 0.0,
             weight_vf: float = 0.5) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PPO's clipped surrogate and value losses (Schulman et al. 2017, https://arxiv.org/abs/1707.06347).

    All inputs elementwise ([B]). Returns (policy_loss, value_loss, loss_per_item), with
    policy_loss = -min(rho A, clip(rho, 1 - eps, 1 + eps) A) - weight_entropy H, rho = exp(log_probs - prev_log_probs),
    value_loss = 0.5 (v - target)^2 (the max with the clipped-around-prev_values error when clipping) and
    loss_per_item = policy_loss + weight_vf * value_loss.
    """
    rho = np.exp(_as_float(log_probs) - _as_float(prev_log_probs))
    a_t = _as_float(advantages)
    policy = -np.minimum(rho * a_t, np.clip(rho, 1.0 - clip_ratio, 1.0 + clip_ratio) * a_t)
    policy = policy - weight_entropy * _as_float(entropy)
    v_t, target = _as_float(values), _as_float(value_targets)
    squared = np.square(v_t - target)
    if value_function_clipping is not None:
        v_old = _as_float(prev_values)
        v_clipped = v_old + np.clip(v_t - v_old, -value_function_clipping, value_function_clipping)
        squared = np.maximum(squared, np.square(v_clipped - target))
    value = 0.5 * squared
    return policy, value, policy + weight_vf * value


def actor_critic_loss(log_probs, values, rewards, terminals, entropy, bootstrapped_value, discount: float,
                      reward_clipping: Optional[str] = "clamp_one", weight_pg: float = 1.0,
                      weight_baseline: float = 0.5, weight_entropy: float = 0.01) -> np.ndarray:
    """The A2C loss per step (Mnih et al. 2016, https://arxiv.org/abs/1602.01783).

    Inputs [B, T] (time last) and bootstrapped_value [B]. R_t = discounted_returns(clipped r_t, d_t) bootstrapped
    with V(s_T) (rewards clipped by `clip_rewards` below, shared with IMPALA); per step:
    -weight_pg * log_pi * (R_t - v_t) + weight_baseline * 0.5 (R_t - v_t)^2 - weight_entropy * H_t. Returns [B, T].
    """
    returns = discounted_returns(clip_rewards(rewards, reward_clipping), terminals, discount, bootstrapped_value)
    policy, value = actor_critic_terms(log_probs, values, entropy, returns - _as_float(values), returns, weight_pg,
                                       weight_entropy)
    return policy + weight_baseline * value


def actor_critic_terms(log_probs, values, entropy, advantages, value_targets, weight_pg: float = 1.0,
                       weight_entropy: float = 0.01) -> Tuple[np.ndarray, np.ndarray]:
    """The two A2C terms per step from given advantages A_t and targets R_t (all elementwise):
    (-weight_pg * log_pi * A_t - weight_entropy * H_t, 0.5 * (R_t - v_t)^2)."""
    policy = -weight_pg * _as_float(log_probs) * _as_float(advantages) - weight_entropy * _as_float(entropy)
    return policy, 0.5 * np.square(_as_float(value_targets) - _as_float(values))


def _min_q(q_values) -> np.ndarray:
    if isinstance(q_values, (tuple, list)):
        return np.min(np.stack([_as_float(q) for q in q_values]), axis=0)
    return _as_float(q_values)


def _sac_target(alpha, log_probs_next_sampled, q_values_next_sampled, rewards, terminals,
                discount: float) -> np.ndarray:
    """y = r + discount (1 - d) (min Q'(s', a~') - alpha log_pi(a~'|s')), [B]."""
    d_t = np.asarray(terminals, dtype=np.float64)
    return _as_float(rewards) + discount * (1.0 - d_t) * (_min_q(q_values_next_sampled) -
                                                          alpha * _as_float(log_probs_next_sampled))


def sac_losses(alpha, log_probs_next_sampled, q_values_next_sampled, q_values, log_probs_sampled, q_values_sampled,
               rewards, terminals, discount: float, target_entropy: Optional[float] = None,
               importance_weights=None) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SAC losses per item (Haarnoja et al. 2018, https://arxiv.org/abs/1812.05905), all [B].

    Q inputs are one array or a tuple of heads (min over heads in targets and actor loss). Returns
    (actor_loss, critic_loss, alpha_loss): alpha log_pi(a~|s) - min Q(s, a~); w times the sum over
    heads of 0.5 (Q_i(s, a) - y)^2 with y = r + discount (1 - d) (min Q'(s', a~') - alpha
    log_pi(a~'|s')) and w the `importance_weights` (1 if None); -log(alpha) (log_pi(a~|s) +
    target_entropy) (zeros without a target entropy).
    """
    y = _sac_target(alpha, log_probs_next_sampled, q_values_next_sampled, rewards, terminals, discount)
    logp = _as_float(log_probs_sampled)
    heads = q_values if isinstance(q_values, (tuple, list)) else (q_values,)
    critic = sum(0.5 * np.square(_as_float(q) - y) for q in heads)
    if importance_weights is not None:
        critic = _as_float(importance_weights) * critic
    actor = alpha * logp - _min_q(q_values_sampled)
    if target_entropy is None:
        alpha_loss = np.zeros_like(actor)
    else:
        alpha_loss = -np.log(alpha) * (logp + target_entropy) * np.ones_like(actor)
    return actor, critic, alpha_loss


def sac_td_errors(alpha, log_probs_next_sampled, q_values_next_sampled, q_values, rewards, terminals,
                  discount: float) -> np.ndarray:
    """SAC's priorities for prioritized replay: mean over the critics of |Q_i(s, a) - y| [B] (y as in
    `sac_losses`)."""
    y = _sac_target(alpha, log_probs_next_sampled, q_values_next_sampled, rewards, terminals, discount)
    heads = q_values if isinstance(q_values, (tuple, list)) else (q_values,)
    return sum(np.abs(_as_float(q) - y) for q in heads) / len(heads)


def discrete_sac_losses(alpha, log_pi_next, qt_next, q, actions, log_pi, rewards, terminals, discount: float,
                        target_entropy: Optional[float] = None,
                        importance_weights=None) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Discrete SAC per item (Christodoulou 2019, https://arxiv.org/abs/1910.07207): exact expectations
    over pi(.|s) instead of sampled actions.

    Args:
        alpha: The temperature.
        log_pi_next: log pi(.|s'), [B, N] over the N (joint) actions.
        qt_next: Target critics' Q'_i(s', .), one [B, N] array or a tuple of heads.
        q: Critics' Q_i(s, .), like `qt_next`.
        actions: The taken (joint) action indices [B].
        log_pi: log pi(.|s), [B, N].
        rewards: [B].
        terminals: [B].
        discount: gamma.
        target_entropy: The temperature's entropy target (None: alpha_loss is 0).
        importance_weights: [B] weights of the critic loss (None: 1).

    Returns:
        (actor_loss, critic_loss, alpha_loss, td_errors), each [B]: `sac_losses` and `sac_td_errors`
        with log_pi(a~'|s') -> sum_a pi(a|s') log pi(a|s'), min_i Q'_i(s', a~') -> sum_a pi(a|s')
        min_i Q'_i(s', a), and likewise at s for the actor and alpha losses.
    """
    heads = lambda x: tuple(_as_float(h) for h in (x if isinstance(x, (tuple, list)) else (x,)))  # noqa: E731
    log_pi_next, log_pi = _as_float(log_pi_next), _as_float(log_pi)
    pi_next, pi = np.exp(log_pi_next), np.exp(log_pi)
    rows, actions = np.arange(log_pi.shape[0]), np.asarray(actions)
    q_taken = tuple(h[rows, actions] for h in heads(q))
    logp_next, v_next = np.sum(pi_next * log_pi_next, -1), np.sum(pi_next * _min_q(heads(qt_next)), -1)
    logp, v = np.sum(pi * log_pi, -1), np.sum(pi * _min_q(heads(q)), -1)
    actor, critic, alpha_loss = sac_losses(alpha, logp_next, v_next, q_taken, logp, v, rewards, terminals, discount,
                                           target_entropy, importance_weights)
    return actor, critic, alpha_loss, sac_td_errors(alpha, logp_next, v_next, q_taken, rewards, terminals, discount)


def euclidean_distance(predictions, labels) -> np.ndarray:
    """Per item ([B, ...] -> [B]) the L2 distance sqrt(sum over non-batch axes of (predictions - labels)^2)."""
    diff = _as_float(predictions) - _as_float(labels)
    return np.sqrt(np.sum(np.square(diff).reshape(diff.shape[0], -1), axis=-1))


def categorical_cross_entropy(logits, labels) -> np.ndarray:
    """Per item -sum(labels * log_softmax(logits)) over the last axis; int labels are class indices (one-hot)."""
    logits = _as_float(logits)
    labels = np.asarray(labels)
    if labels.dtype.kind in "iub":
        labels = one_hot(labels, logits.shape[-1])
    return -np.sum(_as_float(labels) * log_softmax(logits), axis=-1)


# --- Value-based and off-policy actor-critic losses (DQN, IMPALA) -----------------------------------------------------


def dqn_loss_per_item(q_tm1, a_tm1, r_t, d_t, qt_t, discount: float, q_t=None, n_step: int = 1,
                      huber_delta: Optional[float] = None, weights=None) -> Tuple[np.ndarray, np.ndarray]:
    """DQN loss per item and TD errors (Mnih et al. 2015; double Q: https://arxiv.org/abs/1509.06461).

    target = r_t + discount**n_step * (1 - d_t) * qt_t[a*], with a* = argmax q_t (double Q, when `q_t`
    is given) else argmax qt_t; td = target - q_tm1[a_tm1]; loss = huber(td, huber_delta) (or 0.5 td^2
    when `huber_delta` is None), times `weights` if given. Q inputs [B, A]; the others [B].

    Returns:
        (loss, td), each [B].
    """
    q_tm1, qt_t = _as_float(q_tm1), _as_float(qt_t)
    rows = np.arange(q_tm1.shape[0])
    best = np.argmax(qt_t if q_t is None else np.asarray(q_t), axis=-1)
    not_done = 1.0 - np.asarray(d_t, dtype=q_tm1.dtype)
    target = _as_float(r_t) + discount ** n_step * not_done * qt_t[rows, best]
    td = target - q_tm1[rows, np.asarray(a_tm1)]
    loss = 0.5 * np.square(td) if huber_delta is None else huber_loss(td, huber_delta)
    return (loss if weights is None else _as_float(weights) * loss), td


def large_margin_loss(q_tm1, a_e, expert_margin: float) -> np.ndarray:
    """DQfD's supervised large-margin loss J_E (Hester et al. 2017, https://arxiv.org/abs/1704.03732, eq. 2).

    J_E = max_a [q_tm1[a] + l(a_e, a)] - q_tm1[a_e], with l(a_e, a) = `expert_margin` for a != a_e
    and 0 for a = a_e. It is 0 once the expert's action a_e is at least `expert_margin` above every
    other action. Q input [B, A]; a_e [B].

    Returns:
        [B].
    """
    q_tm1 = _as_float(q_tm1)
    rows, a_e = np.arange(q_tm1.shape[0]), np.asarray(a_e)
    margins = np.full_like(q_tm1, expert_margin)
    margins[rows, a_e] = 0.0
    return np.max(q_tm1 + margins, axis=-1) - q_tm1[rows, a_e]


def dqfd_loss_per_item(q_tm1, a_tm1, r_t, d_t, qt_t, discount: float, expert_mask, expert_margin: float,
                       supervised_weight: float, q_t=None, n_step: int = 1, huber_delta: Optional[float] = None,
                       weights=None) -> Tuple[np.ndarray, np.ndarray]:
    """DQfD loss per item and TD errors: the DQN loss of every item plus the weighted large-margin
    loss of the expert items (Hester et al. 2017, https://arxiv.org/abs/1704.03732).

    loss = w * (dqn_loss + supervised_weight * expert_mask * J_E), with `dqn_loss_per_item` (unweighted)
    and `large_margin_loss` (a_tm1 are the expert's actions on expert items); `weights` w scale the
    whole item. Q inputs [B, A]; the others [B] (`expert_mask` bool).

    Returns:
        (loss, td), each [B].
    """
    td_loss, td = dqn_loss_per_item(q_tm1, a_tm1, r_t, d_t, qt_t, discount, q_t=q_t, n_step=n_step,
                                    huber_delta=huber_delta)
    margin = large_margin_loss(q_tm1, a_tm1, expert_margin)
    loss = td_loss + supervised_weight * np.asarray(expert_mask, dtype=td_loss.dtype) * margin
    return (loss if weights is None else _as_float(weights) * loss), td


def clip_rewards(rewards, mode: Optional[str]) -> np.ndarray:
    """IMPALA's reward clipping: "clamp_one" to [-1, 1]; "soft_asymmetric" squashes r into (-1.5, 5)
    as 5 * tanh(r / 5), with negative values scaled by 0.3 (https://arxiv.org/abs/1802.01561, DMLab:
    r = 2 gives 1.90, r = -2 gives -0.57); None: as is."""
    r = _as_float(rewards)
    if mode is None:
        return r
    if mode == "clamp_one":
        return np.clip(r, -1.0, 1.0)
    if mode == "soft_asymmetric":
        squashed = np.tanh(r / 5.0)  # Has the sign of r.
        return 1.5 * np.minimum(squashed, 0.0) + 5.0 * np.maximum(squashed, 0.0)
    raise RLGraphError(f"unknown reward clipping {mode!r}", where="numpy.clip_rewards",
                       expected="'clamp_one', 'soft_asymmetric' or None")


def impala_loss_per_item(logits_pi, probs_mu, values, actions, rewards, terminals, bootstrap_value,
                         discount: float, reward_clipping: Optional[str] = "clamp_one", weight_pg: float = 1.0,
                         weight_baseline: float = 0.5, weight_entropy: float = 0.00025) -> np.ndarray:
    """IMPALA loss per batch row (Espeholt et al. 2018, https://arxiv.org/abs/1802.01561), batch-major.

    Inputs: logits_pi, probs_mu [B, T, A]; values, actions, rewards, terminals [B, T]; bootstrap_value
    [B]. With (vs, pg_adv) from `vtrace` (default clipping) on log rho_t = log pi(a_t) - log mu(a_t),
    gamma_t = discount * (1 - d_t) and the clipped rewards, each row's loss sums over time:
    -weight_pg * log pi(a_t) * pg_adv + weight_baseline * 0.5 * (vs - V)^2 - weight_entropy * H(pi).

    Returns:
        [B].
    """
    log_pi = log_softmax(logits_pi)
    a = np.asarray(actions)[..., None]
    log_pi_a = np.take_along_axis(log_pi, a, axis=-1)[..., 0]
    log_mu_a = np.log(np.take_along_axis(_as_float(probs_mu), a, axis=-1)[..., 0])
    gamma_t = discount * (1.0 - np.asarray(terminals, dtype=log_pi.dtype))
    v_t = _as_float(values)
    vs, pg_adv = vtrace((log_pi_a - log_mu_a).T, gamma_t.T, clip_rewards(rewards, reward_clipping).T, v_t.T,
                        np.asarray(bootstrap_value))
    entropy = -np.sum(np.exp(log_pi) * log_pi, axis=-1)
    per_step = (-weight_pg * log_pi_a * pg_adv.T + weight_baseline * 0.5 * np.square(vs.T - v_t)
                - weight_entropy * entropy)
    return np.sum(per_step, axis=-1)
