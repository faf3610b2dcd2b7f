"""A numpy DDPG for the tests: one update of tiny networks, with the gradients written out by hand.

Every network here is one tanh hidden layer ("hidden") and a linear output layer, as the agents of
tests/test_ddpg_agent.py build them. A net is a dict {"w1", "b1", "w2", "b2"} of float64 arrays.
"""
import numpy as np

# Variable names (below "<agent>/<net>/") of each network's layers.
LAYER_NAMES = {"actor": ("neural-network/hidden", "action-layer"), "critic": ("neural-network/hidden", "q-layer")}
NETS = ("actor", "critic", "target-actor", "target-critic")


def base_net(net):
    """"actor" or "critic": the network kind of a name such as "target-critic-2"."""
    return net.replace("target-", "").split("-")[0]


def net_names(net):
    hidden, head = LAYER_NAMES[base_net(net)]
    return {"w1": f"{hidden}/kernel", "b1": f"{hidden}/bias", "w2": f"{head}/kernel", "b2": f"{head}/bias"}


def nets_from_weights(weights, agent_name="agent", nets=NETS):
    """{"actor": net, "critic": net, "target-actor": net, "target-critic": net} (or those of `nets`)
    from `get_weights()`."""
    return {net: {k: weights[f"{agent_name}/{net}/{name}"].astype(np.float64) for k, name in net_names(net).items()}
            for net in nets}


def weights_from_nets(nets, agent_name="agent"):
    """The inverse of `nets_from_weights` (float32), for `set_weights`."""
    return {f"{agent_name}/{net}/{name}": nets[net][k].astype(np.float32)
            for net in nets for k, name in net_names(net).items()}


def random_nets(rng, state_dim, action_dim, actor_units=4, critic_units=5, scale=0.7, nets=NETS):
    shapes = {"actor": (state_dim, actor_units, action_dim), "critic": (state_dim + action_dim, critic_units, 1)}
    out = {}
    for net in nets:
        n_in, n_hidden, n_out = shapes[base_net(net)]
        out[net] = {"w1": rng.normal(scale=scale, size=(n_in, n_hidden)), "b1": rng.normal(scale=0.1, size=n_hidden),
                    "w2": rng.normal(scale=scale, size=(n_hidden, n_out)), "b2": rng.normal(scale=0.1, size=n_out)}
    return out


def forward(net, x):
    """(output [B, out], hidden activations [B, units])."""
    h = np.tanh(x @ net["w1"] + net["b1"])
    return h @ net["w2"] + net["b2"], h


def backward(net, x, h, d_out):
    """(gradients of the net's variables, gradient of its input) for the output gradient d_out [B, out]."""
    d_pre = (d_out @ net["w2"].T) * (1.0 - h ** 2)
    grads = {"w1": x.T @ d_pre, "b1": d_pre.sum(0), "w2": h.T @ d_out, "b2": d_out.sum(0)}
    return grads, d_pre @ net["w1"].T


def actor(net, s, low, high, squash=True):
    """(mu(s) [B, A], z [B, A], hidden)."""
    z, h = forward(net, s)
    a = low + 0.5 * (np.tanh(z) + 1.0) * (high - low) if squash else z
    return a, z, h


def critic(net, s, a):
    """(Q(s, a) [B], the input x [B, S + A], hidden)."""
    x = np.concatenate([s, a], axis=1)
    q, h = forward(net, x)
    return q[:, 0], x, h


def losses(q, qt_sp, r, d, q_mu, gamma, huber_delta=None, weights=None, l2=0.0, regularization=0.0):
    """DDPG's losses from values (`DDPGLossFunction`'s maths): (critic loss, critic loss per item
    [B], td [B], d critic_loss / d q [B], actor loss). `gamma` is the bootstrap discount (gamma**n
    for n-step records), `weights` importance weights (None: 1), `l2` the critic's sum of squares."""
    q, qt_sp, r, d, q_mu = (np.asarray(x, np.float64) for x in (q, qt_sp, r, d, q_mu))
    w = np.ones_like(q) if weights is None else np.asarray(weights, np.float64)
    td = r + gamma * (1.0 - d) * qt_sp - q
    n = len(td)
    if huber_delta is None:
        per_item, d_q = 0.5 * td ** 2, -td / n
    else:
        small = np.abs(td) <= huber_delta
        per_item = np.where(small, 0.5 * td ** 2, huber_delta * (np.abs(td) - 0.5 * huber_delta))
        d_q = -np.clip(td, -huber_delta, huber_delta) / n
    return (w * per_item).mean() + regularization * l2, w * per_item, td, w * d_q, -q_mu.mean()


def critic_loss_and_gradients(nets, batch, gamma, huber_delta=None, regularization=0.0, weights=None):
    """(critic loss, td [B], gradients of the critic's variables); `weights`: importance weights."""
    s, a, r, d, s1 = (np.asarray(batch[k], np.float64) for k in ("states", "actions", "rewards", "terminals",
                                                                   "next_states"))
    a1, _, _ = actor(nets["target-actor"], s1, *batch["bounds"], squash=batch["squash"])
    q1, _, _ = critic(nets["target-critic"], s1, a1)
    q, x, h = critic(nets["critic"], s, a)
    l2 = sum(np.sum(w ** 2) for w in nets["critic"].values())
    loss, _, td, d_q, _ = losses(q, q1, r, d, q, gamma, huber_delta, weights, l2, regularization)
    grads, _ = backward(nets["critic"], x, h, d_q[:, None])
    grads = {k: g + 2.0 * regularization * nets["critic"][k] for k, g in grads.items()}
    return loss, td, grads


def invert(g, a, p_min, p_max):
    """Hausknecht & Stone's inverted gradients (https://arxiv.org/abs/1511.04143)."""
    width = p_max - p_min
    return np.where(g > 0, g * (p_max - a) / width, g * (a - p_min) / width)


def actor_loss_and_gradients(nets, batch, critic_net, inverter=None):
    """(actor loss -mean Q(s, mu(s)), gradients of the actor's variables, mu(s)); Q of `critic_net`."""
    s = np.asarray(batch["states"], np.float64)
    low, high = batch["bounds"]
    mu, z, h = actor(nets["actor"], s, low, high, squash=batch["squash"])
    q, x, h_c = critic(critic_net, s, mu)
    _, d_x = backward(critic_net, x, h_c, np.ones((len(q), 1)))
    g = d_x[:, s.shape[1]:]  # dQ/da
    if inverter is not None:
        g = invert(g, mu, *inverter)
    d_mu = -g / len(q)
    d_z = d_mu * 0.5 * (1.0 - np.tanh(z) ** 2) * (high - low) if batch["squash"] else d_mu
    grads, _ = backward(nets["actor"], s, h, d_z)
    return -q.mean(), grads, mu


def sgd_update(nets, batch, gamma, actor_lr, critic_lr, actor_tau, critic_tau, huber_delta=None,
               regularization=0.0, inverter=None, critic_step=True, actor_step=True, weights=None):
    """(new nets, critic loss, actor loss) after one DDPG update with plain SGD (see `DDPGCore`);
    `weights`: the importance weights of the critic loss, `gamma`: its bootstrap discount."""
    critic_loss, _, critic_grads = critic_loss_and_gradients(nets, batch, gamma, huber_delta, regularization,
                                                             weights)
    new = {net: dict(values) for net, values in nets.items()}
    if critic_step:
        new["critic"] = {k: v - critic_lr * critic_grads[k] for k, v in nets["critic"].items()}
    actor_loss, actor_grads, _ = actor_loss_and_gradients(nets, batch, new["critic"], inverter)
    if actor_step:
        new["actor"] = {k: v - actor_lr * actor_grads[k] for k, v in nets["actor"].items()}
    for net, tau, stepped in (("critic", critic_tau, critic_step), ("actor", actor_tau, actor_step)):
        if stepped:
            new["target-" + net] = {k: tau * new[net][k] + (1.0 - tau) * v for k, v in nets["target-" + net].items()}
    return new, critic_loss, actor_loss
