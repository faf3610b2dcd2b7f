"""A numpy TD3 for the tests (Fujimoto et al. 2018, https://arxiv.org/abs/1802.09477): twin critics,
target policy smoothing and the delayed update, built from the DDPG reference's tiny networks
(tests/ddpg_reference.py: one tanh hidden layer and a linear output layer each).
"""
import numpy as np

import ddpg_reference as ref

NETS = ("actor", "critic", "critic-2", "target-actor", "target-critic", "target-critic-2")
CRITICS = (("critic", "target-critic"), ("critic-2", "target-critic-2"))


def smoothed_actions(mu, eps, clip, low, high):
    """clip(mu + clip(eps, -clip, clip), low, high): the target actions a' [B, A] for drawn noise eps."""
    return np.clip(mu + np.clip(eps, -clip, clip), low, high)


def twin_losses(q1, q2, qt1_sp, qt2_sp, r, d, gamma, weights=None):
    """(critic loss of both critics, critic loss per item [B], td of critic 1 [B], y [B]) with the
    target y = r + gamma (1 - d) min(qt1, qt2) and 0.5 td^2 per critic."""
    qt_min = np.minimum(qt1_sp, qt2_sp)
    loss1, per_item1, td1, _, _ = ref.losses(q1, qt_min, r, d, q1, gamma, weights=weights)
    loss2, per_item2, _, _, _ = ref.losses(q2, qt_min, r, d, q2, gamma, weights=weights)
    y = np.asarray(q1, np.float64) + td1
    return loss1 + loss2, per_item1 + per_item2, td1, y


def critic_losses_and_gradients(nets, batch, gamma, weights=None):
    """(critic loss, td of critic 1 [B], {critic name: gradients}) without target noise (a' = mu'(s'))."""
    s, a, r, d, s1 = (np.asarray(batch[k], np.float64) for k in ("states", "actions", "rewards", "terminals",
                                                                   "next_states"))
    a1, _, _ = ref.actor(nets["target-actor"], s1, *batch["bounds"], squash=True)
    qt = [ref.critic(nets[target], s1, a1)[0] for _, target in CRITICS]
    forward = [ref.critic(nets[online], s, a) for online, _ in CRITICS]
    loss, _, td1, y = twin_losses(forward[0][0], forward[1][0], qt[0], qt[1], r, d, gamma, weights)
    w = np.ones_like(y) if weights is None else np.asarray(weights, np.float64)
    grads = {}
    for (online, _), (q, x, h) in zip(CRITICS, forward):
        d_q = -w * (y - q) / len(q)  # d mean(w 0.5 (y - q)^2) / dq
        grads[online], _ = ref.backward(nets[online], x, h, d_q[:, None])
    return loss, td1, grads


def sgd_update(nets, batch, gamma, actor_lr, critic_lr, tau, delayed_turn, weights=None):
    """(new nets, critic loss, actor loss) after one TD3 update with plain SGD and no target noise:
    both critics step; on a delayed turn the actor steps on -mean Q_1(s, mu(s)) (critic 1 after its
    step) and all four targets follow softly, else no target moves."""
    critic_loss, _, grads = critic_losses_and_gradients(nets, batch, gamma, weights)
    new = {net: dict(values) for net, values in nets.items()}
    for online, _ in CRITICS:
        new[online] = {k: v - critic_lr * grads[online][k] for k, v in nets[online].items()}
    actor_loss, actor_grads, _ = ref.actor_loss_and_gradients(nets, batch, new["critic"])
    if delayed_turn:
        new["actor"] = {k: v - actor_lr * actor_grads[k] for k, v in nets["actor"].items()}
        for online in ("actor", "critic", "critic-2"):
            new["target-" + online] = {k: tau * new[online][k] + (1.0 - tau) * v
                                       for k, v in nets["target-" + online].items()}
    return new, critic_loss, actor_loss
