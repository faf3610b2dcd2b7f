"""`SACLossFunction`: the soft actor-critic losses of the critic(s), the actor and the temperature."""
from __future__ import annotations

from typing import Optional

from rlgraph.backend_system import get_backend
from rlgraph.components.loss_functions.loss_function import LossFunction
from rlgraph.spaces import BoolBox, FloatBox, IntBox, Tuple
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

_Q_ARGS = ("q_values_next_sampled", "q_values", "q_values_sampled")
_ITEM_ARGS = ("log_probs_next_sampled", "log_probs_sampled", "rewards", "terminals", "importance_weights")


def _is_item_box(space, types=(FloatBox,)) -> bool:
    """One value per batch item: shape () or (1,) plus a batch rank and no time rank."""
    return isinstance(space, types) and space.shape in ((), (1,)) and space.has_batch_rank and \
        not space.has_time_rank


class SACLossFunction(LossFunction):
    """The soft actor-critic losses (Haarnoja et al. 2018, https://arxiv.org/abs/1812.05905), per item:

        y = r + discount * (1 - d) * (min_i Q'_i(s', a~') - alpha * log_pi(a~'|s'))      (a constant)
        critic_loss = w * sum_i 0.5 * (Q_i(s, a) - y)^2          (w: importance weights, default 1)
        actor_loss  = alpha * log_pi(a~|s) - min_i Q_i(s, a~)
        alpha_loss  = -log(alpha) * (log_pi(a~|s) + target_entropy)    (log_pi + target_entropy constant)
        td_error    = mean_i |Q_i(s, a) - y|                     (priorities of a prioritized replay)

    a~ ~ pi(.|s) and a~' ~ pi(.|s') are fresh (reparameterised) samples of the current policy; Q'_i are
    the target critics. Every Q input is either one tensor or a tuple of heads (twin Q: (Q_1, Q_2));
    all of them must use the same form. `alpha` is the temperature value itself (e.g. exp(log_alpha)
    of a variable): a scalar or [B]. It is a constant in the target and the actor loss; the alpha loss
    is written with log(alpha), so an optimizer of log_alpha gets the gradient
    -(log_pi + target_entropy). With `target_entropy` None the temperature is fixed and alpha_loss is 0.

    The importance weights of prioritized replay (Schaul et al. 2015, https://arxiv.org/abs/1511.05952)
    weigh the critic loss only: they correct the distribution of the sampled transitions, which the
    TD regression depends on; the actor and alpha losses are expectations over the policy at the
    sampled states and stay unweighted.

    Item inputs (log-probs, Q values, rewards, terminals, importance weights) are [B] or [B, 1] (a
    trailing 1 is dropped). `loss` sums the three parts; the actor term differentiates into the
    critics through Q_i(s, a~), so train actor, critics and alpha with separate optimizers (each on
    its own variables) from `loss_components` rather than one optimizer on the sum.

    The keyed API `loss_from_record(record)` reads one dict with the positional API's argument names:

    Record keys:
        alpha: The temperature, a scalar (or [B]).
        log_probs_next_sampled: log pi(a~'|s') [B] of a fresh sample a~' at s'.
        q_values_next_sampled: Q'_i(s', a~') of the target critics, [B] or a tuple of heads.
        q_values: Q_i(s, a) of the critics at the record's actions, [B] or a tuple of heads.
        log_probs_sampled: log pi(a~|s) [B] of a fresh sample a~ at s.
        q_values_sampled: Q_i(s, a~) of the critics, [B] or a tuple of heads.
        rewards: r [B] (float).
        terminals: d [B] (bool).
        importance_weights: (optional) w [B] (float) of the critic loss; 1 without it.

    Args:
        target_entropy: The entropy target of the temperature loss (the paper uses -dim(A)); None for
            a fixed alpha.
        discount: gamma.
        scope: Default "sac-loss-function".

    API (the last argument, `importance_weights` [B], is optional everywhere):
        loss(alpha, log_probs_next_sampled, q_values_next_sampled, q_values, log_probs_sampled,
            q_values_sampled, rewards, terminals, importance_weights): (total_loss, loss_per_item):
            scalar and [B].
        loss_per_item(same arguments): [B] actor + critic + alpha loss.
        loss_components(same arguments): (actor_loss, critic_loss, alpha_loss), batch means.
        loss_components_and_td_errors(same arguments): (actor_loss, critic_loss, alpha_loss,
            td_errors [B]), the absolute TD errors without gradient.
        loss_from_record(record): `loss_components_and_td_errors` of the record's values (keys
            above): (actor_loss, critic_loss, alpha_loss, td_errors [B]).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import BoolBox, FloatBox, Tuple
    >>> f = FloatBox(add_batch_rank=True)
    >>> spaces = dict(alpha=float, log_probs_next_sampled=f, q_values_next_sampled=Tuple(f, f), q_values=Tuple(f, f),
    ...               log_probs_sampled=f, q_values_sampled=Tuple(f, f), rewards=f,
    ...               terminals=BoolBox(add_batch_rank=True))
    >>> test = ComponentTest(SACLossFunction(discount=0.5), input_spaces=spaces, backend="pytorch")
    >>> one = lambda x: np.array([x], np.float32)
    >>> # y = 1 + 0.5 * (min(4, 6) - 0.5 * -2) = 3.5; critic = 0.5 * (3 - 3.5)^2 + 0.5 * (5 - 3.5)^2.
    >>> actor, critic, alpha_loss = test.test(("loss_components", [0.5, one(-2.0), (one(4.0), one(6.0)),
    ...     (one(3.0), one(5.0)), one(-1.0), (one(2.0), one(1.0)), one(1.0), np.array([False])]))
    >>> float(actor), float(critic), float(alpha_loss)  # actor = 0.5 * -1 - min(2, 1)
    (-1.5, 1.25, 0.0)
    """

    record_keys = ("alpha", "log_probs_next_sampled", "q_values_next_sampled", "q_values", "log_probs_sampled",
                   "q_values_sampled", "rewards", "terminals")
    optional_record_keys = ("importance_weights",)

    def __init__(self, target_entropy: Optional[float] = None, discount: float = 0.99,
                 scope: str = "sac-loss-function", **kwargs):
        super().__init__(discount=discount, scope=scope, **kwargs)
        if target_entropy is not None and (not isinstance(target_entropy, (int, float)) or
                                           isinstance(target_entropy, bool)):
            raise RLGraphSpecError("target_entropy must be a number or None",
                                   where=f"{type(self).__name__}(target_entropy)", received=repr(target_entropy))
        self.target_entropy = None if target_entropy is None else float(target_entropy)

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        where = f"{self.global_scope}.loss"
        for name in _ITEM_ARGS:
            space = input_spaces.get(name)
            types = (FloatBox, BoolBox, IntBox) if name == "terminals" else (FloatBox,)
            if space is not None and not _is_item_box(space, types):
                raise RLGraphSpaceError(space, f"'{name}' must hold one value per batch item", where=f"{where}({name})",
                                        expected=f"{types[0].__name__} of shape () or (1,) with a batch rank "
                                                 "(no time rank)",
                                        hint="sum log-probs over the action components first.")
        head_counts = {}
        for name in _Q_ARGS:
            space = input_spaces.get(name)
            if space is None:
                continue
            heads = list(space) if isinstance(space, Tuple) else [space]
            if not heads or not all(_is_item_box(h) for h in heads):
                raise RLGraphSpaceError(space, f"'{name}' must be Q values [B] (or [B, 1]) or a tuple of such heads",
                                        where=f"{where}({name})", expected="FloatBox(add_batch_rank=True) or "
                                                                           "Tuple(FloatBox(...), FloatBox(...))")
            head_counts[name] = len(heads) if isinstance(space, Tuple) else 0
        if len(set(head_counts.values())) > 1:
            raise RLGraphSpaceError(input_spaces["q_values"], "the Q inputs differ in their number of heads",
                                    where=f"{where}(q_values)", expected="the same form for all three Q inputs",
                                    received=head_counts,
                                    hint="pass the twin heads as a tuple everywhere (or one tensor everywhere).")
        alpha = input_spaces.get("alpha")
        if alpha is not None and not (isinstance(alpha, FloatBox) and alpha.shape in ((), (1,))
                                      and not alpha.has_time_rank):
            raise RLGraphSpaceError(alpha, "'alpha' must be the temperature: a float scalar (or [B])",
                                    where=f"{where}(alpha)", expected="float or FloatBox()")

    @rlgraph_api
    def loss(self, alpha, log_probs_next_sampled, q_values_next_sampled, q_values, log_probs_sampled,
             q_values_sampled, rewards, terminals, importance_weights=None):
        loss_per_item = self.loss_per_item(alpha, log_probs_next_sampled, q_values_next_sampled, q_values,
                                           log_probs_sampled, q_values_sampled, rewards, terminals,
                                           importance_weights)
        return self.loss_average(loss_per_item), loss_per_item

    @rlgraph_api
    def loss_per_item(self, alpha, log_probs_next_sampled, q_values_next_sampled, q_values, log_probs_sampled,
                      q_values_sampled, rewards, terminals, importance_weights=None):
        actor, critic, alpha_loss = self._graph_fn_losses_per_item(
            alpha, log_probs_next_sampled, q_values_next_sampled, q_values, log_probs_sampled, q_values_sampled,
            rewards, terminals, importance_weights)
        return self._graph_fn_sum(actor, critic, alpha_loss)

    @rlgraph_api(must_be_complete=False)
    def loss_components(self, alpha, log_probs_next_sampled, q_values_next_sampled, q_values, log_probs_sampled,
                        q_values_sampled, rewards, terminals, importance_weights=None):
        actor, critic, alpha_loss = self._graph_fn_losses_per_item(
            alpha, log_probs_next_sampled, q_values_next_sampled, q_values, log_probs_sampled, q_values_sampled,
            rewards, terminals, importance_weights)
        return self.loss_average(actor), self.loss_average(critic), self.loss_average(alpha_loss)

    @rlgraph_api(must_be_complete=False)
    def loss_components_and_td_errors(self, alpha, log_probs_next_sampled, q_values_next_sampled, q_values,
                                      log_probs_sampled, q_values_sampled, rewards, terminals,
                                      importance_weights=None):
        actor, critic, alpha_loss, td_errors = self._graph_fn_losses_and_td_errors_per_item(
            alpha, log_probs_next_sampled, q_values_next_sampled, q_values, log_probs_sampled, q_values_sampled,
            rewards, terminals, importance_weights)
        return self.loss_average(actor), self.loss_average(critic), self.loss_average(alpha_loss), td_errors

    @rlgraph_api(must_be_complete=False)
    def loss_from_record(self, record):
        """(actor_loss, critic_loss, alpha_loss, td_errors [B]) of one keyed record (the class
        docstring's "Record keys"): `loss_components_and_td_errors` of its values, so both APIs
        build the same graph.

        Raises:
            RLGraphError: (while building) for a record that lacks a required key or has a key
                this loss does not read, naming this component and the keys.
        """
        return self.loss_components_and_td_errors(**self.read_record(record))

    @graph_fn(returns=3)
    def _graph_fn_losses_per_item(self, alpha, log_probs_next_sampled, q_values_next_sampled, q_values,
                                  log_probs_sampled, q_values_sampled, rewards, terminals, importance_weights=None):
        losses = _sac_tf if get_backend() == "tf" else _sac_torch
        return losses(self, alpha, log_probs_next_sampled, q_values_next_sampled, q_values, log_probs_sampled,
                      q_values_sampled, rewards, terminals, importance_weights)[:3]

    @graph_fn(returns=4)
    def _graph_fn_losses_and_td_errors_per_item(self, alpha, log_probs_next_sampled, q_values_next_sampled, q_values,
                                                log_probs_sampled, q_values_sampled, rewards, terminals,
                                                importance_weights=None):
        losses = _sac_tf if get_backend() == "tf" else _sac_torch
        return losses(self, alpha, log_probs_next_sampled, q_values_next_sampled, q_values, log_probs_sampled,
                      q_values_sampled, rewards, terminals, importance_weights)

    @graph_fn
    def _graph_fn_sum(self, actor_loss, critic_loss, alpha_loss):
        return actor_loss + critic_loss + alpha_loss


def _sac_tf(loss: SACLossFunction, alpha, log_probs_next_sampled, q_values_next_sampled, q_values, log_probs_sampled,
            q_values_sampled, rewards, terminals, importance_weights):
    """(actor, critic, alpha_loss, td_errors), each [B]: the class docstring's formulas in TF."""
    import tensorflow as tf
    squeeze = lambda x: tf.reshape(x, [-1]) if len(x.shape) == 2 else x  # noqa: E731
    heads = lambda q: [squeeze(h) for h in (q if isinstance(q, (tuple, list)) else (q,))]  # noqa: E731
    min_q = lambda q: tf.reduce_min(tf.stack(heads(q)), axis=0)  # noqa: E731
    log_pi, log_pi_next = squeeze(log_probs_sampled), squeeze(log_probs_next_sampled)
    dtype = log_pi.dtype
    alpha = tf.reshape(tf.cast(alpha, dtype), [-1]) if len(alpha.shape) > 0 else tf.cast(alpha, dtype)
    fixed_alpha = tf.stop_gradient(alpha)
    not_done = 1.0 - tf.cast(squeeze(terminals), dtype)
    y = tf.stop_gradient(tf.cast(squeeze(rewards), dtype) + loss.discount * not_done *
                         (min_q(q_values_next_sampled) - fixed_alpha * log_pi_next))
    q_heads = heads(q_values)
    critic = tf.add_n([0.5 * tf.square(q - y) for q in q_heads])
    if importance_weights is not None:
        critic = tf.cast(squeeze(importance_weights), dtype) * critic
    td_errors = tf.stop_gradient(tf.add_n([tf.abs(q - y) for q in q_heads]) / len(q_heads))
    actor = fixed_alpha * log_pi - min_q(q_values_sampled)
    if loss.target_entropy is None:
        alpha_loss = tf.zeros_like(log_pi)
    else:
        alpha_loss = -tf.math.log(alpha) * tf.stop_gradient(log_pi + loss.target_entropy)
    return actor, critic, alpha_loss, td_errors


def _sac_torch(loss: SACLossFunction, alpha, log_probs_next_sampled, q_values_next_sampled, q_values,
               log_probs_sampled, q_values_sampled, rewards, terminals, importance_weights):
    """(actor, critic, alpha_loss, td_errors), each [B]: the class docstring's formulas in PyTorch."""
    import torch
    squeeze = lambda x: x.reshape(-1) if x.dim() == 2 else x  # noqa: E731
    heads = lambda q: [squeeze(h) for h in (q if isinstance(q, (tuple, list)) else (q,))]  # noqa: E731
    min_q = lambda q: torch.stack(heads(q)).min(dim=0).values  # noqa: E731
    log_pi, log_pi_next = squeeze(log_probs_sampled), squeeze(log_probs_next_sampled)
    alpha = torch.as_tensor(alpha).to(log_pi.dtype)
    alpha = alpha.reshape(-1) if alpha.dim() > 0 else alpha
    fixed_alpha = alpha.detach()
    not_done = 1.0 - torch.as_tensor(squeeze(terminals)).to(log_pi.dtype)
    y = (squeeze(rewards).to(log_pi.dtype) + loss.discount * not_done *
         (min_q(q_values_next_sampled) - fixed_alpha * log_pi_next)).detach()
    q_heads = heads(q_values)
    critic = sum(0.5 * torch.square(q - y) for q in q_heads)
    if importance_weights is not None:
        critic = squeeze(torch.as_tensor(importance_weights)).to(log_pi.dtype) * critic
    td_errors = (sum((q - y).abs() for q in q_heads) / len(q_heads)).detach()
    actor = fixed_alpha * log_pi - min_q(q_values_sampled)
    if loss.target_entropy is None:
        alpha_loss = torch.zeros_like(log_pi)
    else:
        alpha_loss = -torch.log(alpha) * (log_pi + loss.target_entropy).detach()
    return actor, critic, alpha_loss, td_errors
