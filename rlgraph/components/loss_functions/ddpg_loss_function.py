"""`DDPGLossFunction`: DDPG's critic (TD) loss and actor (deterministic policy gradient) loss."""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.loss_functions.loss_function import LossFunction
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError

CRITIC_KEYS = ("q_values", "qt_values_sp", "rewards", "terminals")
# The second critic's keys of twin critics (`num_critics=2`, TD3).
TWIN_KEYS = ("q_values_2", "qt_values_sp_2")
ACTOR_KEYS = ("q_values_mu",)
PARTS = ("critic", "actor")


class DDPGLossFunction(LossFunction):
    """The losses of DDPG (Lillicrap et al. 2015, https://arxiv.org/abs/1509.02971), per item b:

        y_b   = r_b + discount * (1 - d_b) * Q'(s'_b, mu'(s'_b))            # a constant (no gradient)
        td_b  = y_b - Q(s_b, a_b)
        critic_loss = mean_b(w_b * (huber(td_b, huber_delta) or 0.5 td_b^2)) + critic_regularization * l2
        actor_loss  = -mean_b Q(s_b, mu(s_b))

    `discount` is the bootstrap discount: gamma ** n for n-step records (whose rewards already hold
    the n discounted rewards). w are the importance weights of a prioritized replay (Schaul et al.
    2015, https://arxiv.org/abs/1511.05952; 1 without), l2 the sum of the squares of the critic's
    trainable variables, computed by whoever owns them (the agent's core) and passed in. The
    Huber loss's gradient in Q is td clipped to [-delta, delta].

    The actor's gradient flows into the actor through Q(s, mu(s)) and mu(s). With `inverter_bounds`
    (Hausknecht & Stone 2016, https://arxiv.org/abs/1511.04143) the action gradient g = dQ/da at
    a = mu(s) is replaced by g (p_max - a) / (p_max - p_min) where g > 0 and g (a - p_min) /
    (p_max - p_min) elsewhere, and the actor steps on the surrogate -mean_b(g_b . a_b) (g a
    constant), whose gradient in mu's variables is the inverted policy gradient; without it the
    surrogate is the actor loss itself.

    Twin critics (`num_critics=2`, TD3's clipped double Q-learning, Fujimoto et al. 2018,
    https://arxiv.org/abs/1802.09477): the target takes the smaller of the two target critics and
    both critics regress to it, their losses summed; td stays critic 1's (the priorities):

        y_b   = r_b + discount * (1 - d_b) * min(Q'_1(s'_b, a'_b), Q'_2(s'_b, a'_b))
        td_b  = y_b - Q_1(s_b, a_b);   td2_b = y_b - Q_2(s_b, a_b)
        critic_loss = mean_b(w_b * (l(td_b) + l(td2_b))) + critic_regularization * l2

    The two parts are evaluated at different parameters in DDPG's update (the actor's Q is the
    critic's after its step), so a loss can be made for one part (`parts`): the agent's core holds
    a "critic-loss" and an "actor-loss" instance, each called once per update with its own record.

    Record keys (all batched [B]; the record of `loss_from_record`):
        Critic part:
            q_values: Q(s_t, a_t) of the critic, [B].
            qt_values_sp: Q'(s_tp1, mu'(s_tp1)) of the target critic and target actor, [B].
            rewards: r_t (the n-step return of n-step records), [B].
            terminals: d_t (bool), [B].
            importance_weights (optional): w [B]; default 1.
            critic_weights_l2: l2 (a scalar) as above; required when critic_regularization > 0,
                else optional and not read.
            q_values_2: Q_2(s_t, a_t) of the second critic, [B] (only with num_critics=2, then required).
            qt_values_sp_2: Q'_2(s_tp1, a'_tp1) of the second target critic, [B] (likewise).
        Actor part:
            q_values_mu: Q(s_t, mu(s_t)) of the critic, [B].
            actions_mu: mu(s_t) [B, ...]: required with `inverter_bounds`, else optional and not read.

    `loss_from_record(record)` returns a dict with, for the critic part, "critic_loss" (scalar,
    including the L2 term), "critic_loss_per_item" ([B], w * TD loss) and "td_errors" (td [B],
    no gradient: |td| are a prioritized replay's new priorities); for the actor part "actor_loss"
    (-mean Q(s, mu(s))), "actor_surrogate" (the scalar the actor's optimizer steps on) and
    "actor_surrogate_per_item" ([B]).

    Args:
        discount: The bootstrap discount (gamma ** n_step).
        huber_delta: delta > 0 of the Huber loss on td; None: 0.5 td^2.
        critic_regularization: The L2 coefficient >= 0.
        inverter_bounds: (p_min, p_max), arrays shaped like one action, or None (no inverting).
        parts: The parts this loss computes from a record: ("critic", "actor") (default), or one.
        num_critics: 1 (default) or 2 (twin critics, above).
        scope: Default "ddpg-loss-function".

    API:
        loss_from_record(record) -> dict (above).
        critic_loss(q_values, qt_values_sp, rewards, terminals, importance_weights=None,
            critic_weights_l2=None, q_values_2=None, qt_values_sp_2=None) -> (critic_loss,
            critic_loss_per_item [B], td_errors [B]) (the last two: twin critics only).
        actor_loss(q_values_mu, actions_mu=None) -> (actor_loss, actor_surrogate, its per-item values [B]).
        loss(q_values, qt_values_sp, rewards, terminals, q_values_mu, importance_weights=None)
            -> (mean of loss_per_item, critic_loss_per_item - q_values_mu [B]): the critic and actor
            losses summed, without the L2 term and the inverting.
        loss_per_item(same arguments) -> [B].

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import BoolBox, Dict, FloatBox
    >>> f = FloatBox(add_batch_rank=True)
    >>> record = Dict(q_values=f, qt_values_sp=f, rewards=f, terminals=BoolBox(add_batch_rank=True),
    ...               q_values_mu=f, add_batch_rank=True)
    >>> test = ComponentTest(DDPGLossFunction(discount=0.5), input_spaces=dict(record=record), backend="pytorch")
    >>> out = test.test(("loss_from_record", dict(q_values=np.array([1.0], np.float32),
    ...     qt_values_sp=np.array([4.0], np.float32), rewards=np.array([2.0], np.float32),
    ...     terminals=np.array([False]), q_values_mu=np.array([3.0], np.float32))))
    >>> float(out["td_errors"][0]), float(out["critic_loss"]), float(out["actor_loss"])  # y = 2 + 0.5 * 4
    (3.0, 4.5, -3.0)
    >>> twin = Dict(q_values=f, q_values_2=f, qt_values_sp=f, qt_values_sp_2=f, rewards=f,
    ...             terminals=BoolBox(add_batch_rank=True), add_batch_rank=True)
    >>> test = ComponentTest(DDPGLossFunction(discount=0.5, num_critics=2, parts=("critic",)),
    ...                      input_spaces=dict(record=twin), backend="pytorch")
    >>> one = lambda x: np.array([x], np.float32)
    >>> out = test.test(("loss_from_record", dict(q_values=one(1.0), q_values_2=one(3.0), qt_values_sp=one(4.0),
    ...     qt_values_sp_2=one(1.0), rewards=one(2.0), terminals=np.array([False]))))
    >>> float(out["td_errors"][0]), float(out["critic_loss"])  # y = 2 + 0.5 * min(4, 1); 0.5 (1.5^2 + 0.5^2)
    (1.5, 1.25)
    """

    record_keys: Tuple[str, ...] = CRITIC_KEYS + ACTOR_KEYS
    optional_record_keys: Tuple[str, ...] = ("importance_weights", "critic_weights_l2", "actions_mu") + TWIN_KEYS

    def __init__(self, discount: float = 0.99, huber_delta: Optional[float] = None, critic_regularization: float = 0.0,
                 inverter_bounds: Optional[Tuple[Any, Any]] = None, parts: Sequence[str] = PARTS,
                 num_critics: int = 1, scope: str = "ddpg-loss-function", **kwargs):
        super().__init__(discount=discount, scope=scope, **kwargs)
        owner = type(self).__name__
        if huber_delta is not None and (not _is_number(huber_delta) or not huber_delta > 0):
            raise RLGraphSpecError("huber_delta must be a number > 0 or None", where=f"{owner}(huber_delta)",
                                   received=repr(huber_delta))
        if not _is_number(critic_regularization) or not critic_regularization >= 0:
            raise RLGraphSpecError("critic_regularization must be a number >= 0",
                                   where=f"{owner}(critic_regularization)", received=repr(critic_regularization))
        if isinstance(parts, str) or not parts or any(p not in PARTS for p in parts) or len(set(parts)) != len(parts):
            raise RLGraphSpecError("parts must name the parts this loss computes", where=f"{owner}(parts)",
                                   expected='("critic", "actor"), ("critic",) or ("actor",)', received=repr(parts))
        if isinstance(num_critics, bool) or num_critics not in (1, 2):
            raise RLGraphSpecError("num_critics must be 1 or 2 (twin critics)", where=f"{owner}(num_critics)",
                                   expected="1 or 2", received=repr(num_critics))
        self.num_critics = int(num_critics)
        self.huber_delta = None if huber_delta is None else float(huber_delta)
        self.critic_regularization = float(critic_regularization)
        self.inverter_bounds = None
        if inverter_bounds is not None:
            p_min, p_max = (np.asarray(b, np.float32) for b in inverter_bounds)
            if p_min.shape != p_max.shape or not np.all(p_max > p_min):
                raise RLGraphSpecError("inverter_bounds must be (p_min, p_max) of one shape with p_max > p_min",
                                       where=f"{owner}(inverter_bounds)", received=f"{p_min} and {p_max}")
            self.inverter_bounds = (p_min, p_max)
        self.parts = tuple(p for p in PARTS if p in parts)
        # This instance's keys (the class attributes list those of both parts).
        required, optional = [], []
        if "critic" in self.parts:
            required += CRITIC_KEYS + (TWIN_KEYS if self.num_critics == 2 else ())
            optional.append("importance_weights")
            (required if self.critic_regularization > 0 else optional).append("critic_weights_l2")
        if "actor" in self.parts:
            required += ACTOR_KEYS
            (required if self.inverter_bounds is not None else optional).append("actions_mu")
        self.record_keys, self.optional_record_keys = tuple(required), tuple(optional)

    # --- The keyed API ---------------------------------------------------------------------------
    # (No API method counts for input-completeness: a core calls only the keyed one, a test only the others.)
    @rlgraph_api(must_be_complete=False)
    def loss_from_record(self, record):
        values = self.read_record(record)
        out: Dict[str, Any] = {}
        if "critic" in self.parts:
            out["critic_loss"], out["critic_loss_per_item"], out["td_errors"] = self._graph_fn_critic(
                values["q_values"], values["qt_values_sp"], values["rewards"], values["terminals"],
                values["importance_weights"], values["critic_weights_l2"], values.get("q_values_2"),
                values.get("qt_values_sp_2"))
        if "actor" in self.parts:
            out["actor_loss"], out["actor_surrogate"], out["actor_surrogate_per_item"] = self._graph_fn_actor(
                values["q_values_mu"], values["actions_mu"])
        return out

    # --- The positional API ----------------------------------------------------------------------
    @rlgraph_api(must_be_complete=False)
    def critic_loss(self, q_values, qt_values_sp, rewards, terminals, importance_weights=None,
                    critic_weights_l2=None, q_values_2=None, qt_values_sp_2=None):
        if self.critic_regularization > 0 and critic_weights_l2 is None:
            raise RLGraphError("critic_regularization > 0 needs the critic weights' l2",
                               where=f"{self.global_scope}.critic_loss(critic_weights_l2)",
                               expected="the sum of the squares of the critic's trainable variables", received=None)
        if self.num_critics == 2 and (q_values_2 is None or qt_values_sp_2 is None):
            raise RLGraphError("twin critics need the second critic's values",
                               where=f"{self.global_scope}.critic_loss(q_values_2)",
                               expected="q_values_2 and qt_values_sp_2 [B]", received=None)
        return self._graph_fn_critic(q_values, qt_values_sp, rewards, terminals, importance_weights,
                                     critic_weights_l2, q_values_2, qt_values_sp_2)

    @rlgraph_api(must_be_complete=False)
    def actor_loss(self, q_values_mu, actions_mu=None):
        return self._graph_fn_actor(q_values_mu, actions_mu)

    @rlgraph_api(must_be_complete=False)
    def loss(self, q_values, qt_values_sp, rewards, terminals, q_values_mu, importance_weights=None):
        loss_per_item = self.loss_per_item(q_values, qt_values_sp, rewards, terminals, q_values_mu,
                                           importance_weights)
        return self.loss_average(loss_per_item), loss_per_item

    @rlgraph_api(must_be_complete=False)
    def loss_per_item(self, q_values, qt_values_sp, rewards, terminals, q_values_mu, importance_weights=None):
        _, critic_per_item, _ = self._graph_fn_critic(q_values, qt_values_sp, rewards, terminals, importance_weights,
                                                      None)
        return self._graph_fn_sum_per_item(critic_per_item, q_values_mu)

    # --- Graph functions ---------------------------------------------------------------------------
    @graph_fn(returns=3)
    def _graph_fn_critic(self, q_values, qt_values_sp, rewards, terminals, importance_weights=None,
                         critic_weights_l2=None, q_values_2=None, qt_values_sp_2=None):
        """(critic loss, critic loss per item [B], td [B]) of the class docstring (the L2 term only
        with `critic_weights_l2`, the twin terms only with the second critic's values)."""
        maths = _critic_tf if get_backend() == "tf" else _critic_torch
        return maths(self, q_values, qt_values_sp, rewards, terminals, importance_weights, critic_weights_l2,
                     q_values_2, qt_values_sp_2)

    @graph_fn(returns=3)
    def _graph_fn_actor(self, q_values_mu, actions_mu=None):
        """(actor loss, surrogate loss, surrogate per item [B]) of the class docstring."""
        if self.inverter_bounds is not None and actions_mu is None:
            raise RLGraphError("gradient inverting needs the actions mu(s)",
                               where=f"{self.global_scope}.actor_loss(actions_mu)",
                               expected="mu(s_t) [B, ...], the input of q_values_mu", received=None)
        maths = _actor_tf if get_backend() == "tf" else _actor_torch
        return maths(self, q_values_mu, actions_mu)

    @graph_fn
    def _graph_fn_sum_per_item(self, critic_per_item, q_values_mu):
        return critic_per_item - q_values_mu

    def inverted_gradients(self, g, a, where):
        """The inverted action gradients g (see the class docstring); `a` carries no gradient."""
        p_min, p_max = self.inverter_bounds
        width = p_max - p_min
        if get_backend() == "pytorch":
            import torch
            p_min, p_max, width = (torch.as_tensor(x, dtype=a.dtype) for x in (p_min, p_max, width))
        return where(g > 0, g * (p_max - a) / width, g * (a - p_min) / width)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.number)) and not isinstance(value, bool)


def _td_loss(td, delta: Optional[float], abs_fn, min_fn):
    """0.5 td^2, or the Huber loss of td with `delta`."""
    if delta is None:
        return 0.5 * td * td
    abs_td = abs_fn(td)
    quadratic = min_fn(abs_td, delta)
    return 0.5 * quadratic * quadratic + delta * (abs_td - quadratic)


def _critic_tf(loss: DDPGLossFunction, q_t, qt_tp1, r_t, d_t, w, l2, q2_t=None, qt2_tp1=None):
    import tensorflow as tf
    if qt2_tp1 is not None:
        qt_tp1 = tf.minimum(qt_tp1, qt2_tp1)
    y = tf.stop_gradient(r_t + loss.discount * (1.0 - tf.cast(d_t, q_t.dtype)) * qt_tp1)
    td = y - q_t
    per_item = _td_loss(td, loss.huber_delta, tf.abs, tf.minimum)
    if q2_t is not None:
        per_item += _td_loss(y - q2_t, loss.huber_delta, tf.abs, tf.minimum)
    if w is not None:
        per_item = tf.cast(w, per_item.dtype) * per_item
    critic_loss = tf.reduce_mean(per_item)
    if loss.critic_regularization > 0 and l2 is not None:
        critic_loss += loss.critic_regularization * l2
    return critic_loss, per_item, tf.stop_gradient(td)


def _critic_torch(loss: DDPGLossFunction, q_t, qt_tp1, r_t, d_t, w, l2, q2_t=None, qt2_tp1=None):
    import torch
    if qt2_tp1 is not None:
        qt_tp1 = torch.minimum(qt_tp1, qt2_tp1)
    y = (r_t + loss.discount * (1.0 - d_t.to(q_t.dtype)) * qt_tp1).detach()
    td = y - q_t
    clamp = lambda x, c: torch.clamp(x, max=c)  # noqa: E731
    per_item = _td_loss(td, loss.huber_delta, torch.abs, clamp)
    if q2_t is not None:
        per_item = per_item + _td_loss(y - q2_t, loss.huber_delta, torch.abs, clamp)
    if w is not None:
        per_item = w.to(per_item.dtype) * per_item
    critic_loss = per_item.mean()
    if loss.critic_regularization > 0 and l2 is not None:
        critic_loss = critic_loss + loss.critic_regularization * l2
    return critic_loss, per_item, td.detach()


def _actor_tf(loss: DDPGLossFunction, q_mu, mu):
    import tensorflow as tf
    actor_loss = -tf.reduce_mean(q_mu)
    if loss.inverter_bounds is None:
        return actor_loss, actor_loss, -q_mu
    if tf.executing_eagerly():
        g = tf.zeros_like(mu)  # The build's eager trace run has no graph to differentiate.
    else:
        g = tf.gradients(q_mu, mu)[0]
        if g is None:
            raise RLGraphError("Q(s, mu(s)) does not depend on the actions mu(s)",
                               where=f"{loss.global_scope}.loss_from_record(actions_mu)",
                               hint="pass the actor's actions that the critic's q_values_mu were computed from.")
    g = tf.stop_gradient(loss.inverted_gradients(g, tf.stop_gradient(mu), tf.where))
    axes = list(range(1, len(mu.shape)))
    per_item = -tf.reduce_sum(g * mu, axis=axes) if axes else -g * mu
    return actor_loss, tf.reduce_mean(per_item), per_item


def _actor_torch(loss: DDPGLossFunction, q_mu, mu):
    import torch
    actor_loss = -q_mu.mean()
    if loss.inverter_bounds is None:
        return actor_loss, actor_loss, -q_mu
    if q_mu.requires_grad and mu.requires_grad:
        g, = torch.autograd.grad(q_mu.sum(), mu, retain_graph=True)
    else:
        g = torch.zeros_like(mu)  # (Without autograd, e.g. a no-step update: no gradient to invert.)
    g = loss.inverted_gradients(g, mu.detach(), torch.where).detach()
    axes = list(range(1, mu.dim()))
    per_item = -(g * mu).sum(dim=axes) if axes else -g * mu
    return actor_loss, per_item.mean(), per_item
