"""`DQFDLossFunction`: the DQN loss plus DQfD's large-margin loss on expert (demonstration) items."""
from __future__ import annotations

import math

from rlgraph.backend_system import get_backend
from rlgraph.components.loss_functions.dqn_loss_function import DQNLossFunction
from rlgraph.spaces import BoolBox
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


def _check_non_negative(value, name: str, owner: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise RLGraphSpecError(f"{name} must be a finite number >= 0", where=f"{owner}({name})",
                               expected="e.g. 0.8", received=repr(value))
    return float(value)


class DQFDLossFunction(DQNLossFunction):
    """Deep Q-learning from demonstrations (Hester et al. 2017, https://arxiv.org/abs/1704.03732).

    The DQN loss of every item (`DQNLossFunction`: double Q, n-step, Huber as configured) plus,
    on the items that come from an expert, the supervised large-margin loss (the paper's eq. 2)

        J_E_t = max_a [Q(s_t, a) + l(a_t, a)] - Q(s_t, a_t),   l(a_t, a) = expert_margin if a != a_t else 0

        loss_t = w_t * (dqn_loss_t + supervised_weight * expert_mask_t * J_E_t)

    J_E pushes the expert's action a_t at least `expert_margin` above every other action; without
    it the Q-values of actions the expert never took are unconstrained and the greedy policy may
    pick them. It is 0 on items whose `expert_mask` is False (the agent's own experience). The
    importance weights w_t scale the whole item. The numpy reference is
    `rlgraph.utils.numpy.dqfd_loss_per_item` (and `large_margin_loss`).

    Shapes: as `DQNLossFunction`; expert_mask [B] (bool). Without `expert_mask` (None) the loss is
    the plain DQN loss.

    Record keys:
        q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp, importance_weights:
            as `DQNLossFunction` (q_values_sp and importance_weights as configured there).
        expert_mask: (optional) [B] (bool), True for the items from demonstrations; without it
            no item gets the large-margin loss.

    Args:
        expert_margin: The margin l of non-expert actions (>= 0; the paper uses 0.8).
        supervised_weight: The weight of J_E against the TD loss (lambda_2 in the paper, >= 0).
        scope: Default "dqfd-loss-function".
        **kwargs: `DQNLossFunction` arguments (discount, double_q, huber_loss, n_step, ...).

    Raises:
        RLGraphSpecError: For a bad constructor argument.
        RLGraphSpaceError: (at build time) as `DQNLossFunction`, and for an `expert_mask` that is
            not BoolBox [B].

    API:
        loss(q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp=None,
            importance_weights=None, expert_mask=None) -> (total_loss, loss_per_item).
        loss_per_item(same arguments) -> [B].
        loss_and_td_error(same arguments) -> (total_loss, loss_per_item, td_t).
        large_margin_loss(q_values_s, actions) -> J_E [B] (every item, no mask or weight).
        loss_from_record(record) -> (total_loss, loss_per_item, td_t): `loss_and_td_error` of the
            record's values (keys above).
        get_td_error(...): as `DQNLossFunction`.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import BoolBox, FloatBox, IntBox
    >>> q = FloatBox(shape=(3,), add_batch_rank=True)
    >>> b_float, b_bool = FloatBox(add_batch_rank=True), BoolBox(add_batch_rank=True)
    >>> loss_fn = DQFDLossFunction(expert_margin=0.5, double_q=True, importance_weights=True)
    >>> test = ComponentTest(loss_fn, input_spaces=dict(
    ...     q_values_s=q, actions=IntBox(3, add_batch_rank=True), rewards=b_float, terminals=b_bool,
    ...     qt_values_sp=q, q_values_sp=q, importance_weights=b_float, expert_mask=b_bool), backend="pytorch")
    >>> q_s = np.array([[1.0, 2.0, 0.0], [3.0, 1.0, 0.0]], np.float32)
    >>> a_e = np.array([0, 0])
    >>> test.test(("large_margin_loss", [q_s, a_e])).tolist()  # [max(1, 2.5, 0.5) - 1, max(3, 1.5, 0.5) - 3]
    [1.5, 0.0]
    >>> # Terminal transitions with reward 0: td = -Q(s, a) = [-1, -3], 0.5 * td**2 = [0.5, 4.5]; J_E on item 0.
    >>> args = [q_s, a_e, np.zeros(2, np.float32), np.array([True, True]), q_s, q_s, np.ones(2, np.float32)]
    >>> test.test(("loss_per_item", args + [np.array([True, False])])).tolist()
    [2.0, 4.5]
    """

    optional_record_keys = DQNLossFunction.optional_record_keys + ("expert_mask",)

    def __init__(self, expert_margin: float = 0.5, supervised_weight: float = 1.0,
                 scope: str = "dqfd-loss-function", **kwargs):
        super().__init__(scope=scope, **kwargs)
        owner = type(self).__name__
        self.expert_margin = _check_non_negative(expert_margin, "expert_margin", owner)
        self.supervised_weight = _check_non_negative(supervised_weight, "supervised_weight", owner)

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        space = input_spaces.get("expert_mask")
        if space is not None and (not isinstance(space, BoolBox) or space.shape != () or not space.has_batch_rank):
            raise RLGraphSpaceError(space, "`expert_mask` must hold one bool per item",
                                    where=f"{self.global_scope}.loss(expert_mask)", expected="BoolBox() [B]",
                                    hint="True for items from demonstrations, False for the agent's own experience.")

    @rlgraph_api
    def loss(self, q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp=None, importance_weights=None,
             expert_mask=None):
        """Total loss (batch mean) and loss per item; see the class docstring."""
        loss_per_item = self.loss_per_item(q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp,
                                           importance_weights, expert_mask)
        return self.loss_average(loss_per_item), loss_per_item

    @rlgraph_api
    def loss_per_item(self, q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp=None,
                      importance_weights=None, expert_mask=None):
        """The loss of each item, [B]."""
        td_error = self._graph_fn_td_error(q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp)
        return self._dqfd_loss_per_item(td_error, q_values_s, actions, importance_weights, expert_mask)

    @rlgraph_api
    def loss_and_td_error(self, q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp=None,
                          importance_weights=None, expert_mask=None):
        """(total_loss, loss_per_item, td_error), the TD errors computed once (e.g. for priorities)."""
        td_error = self._graph_fn_td_error(q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp)
        loss_per_item = self._dqfd_loss_per_item(td_error, q_values_s, actions, importance_weights, expert_mask)
        return self.loss_average(loss_per_item), loss_per_item, td_error

    @rlgraph_api
    def large_margin_loss(self, q_values_s, actions):
        """J_E [B] of every item (as if each were an expert's), without mask or weights."""
        return self._graph_fn_large_margin(q_values_s, actions)

    def _dqfd_loss_per_item(self, td_error, q_values_s, actions, importance_weights, expert_mask):
        td_loss = self._graph_fn_td_loss(td_error, importance_weights)
        if expert_mask is None:
            return td_loss
        margin_loss = self._graph_fn_large_margin(q_values_s, actions)
        return self._graph_fn_add_margin_loss(td_loss, margin_loss, expert_mask, importance_weights)

    @graph_fn
    def _graph_fn_large_margin(self, q_values_s, actions):
        if get_backend() == "tf":
            import tensorflow as tf
            a_e = tf.cast(actions, tf.int32)
            is_expert = tf.one_hot(a_e, depth=tf.shape(q_values_s)[-1], dtype=q_values_s.dtype)
            margins = self.expert_margin * (1.0 - is_expert)
            return tf.reduce_max(q_values_s + margins, axis=-1) - tf.reduce_sum(q_values_s * is_expert, axis=-1)
        a_e = actions.long().unsqueeze(1)
        margins = q_values_s.new_full(q_values_s.shape, self.expert_margin).scatter(1, a_e, 0.0)
        return (q_values_s + margins).max(dim=-1).values - q_values_s.gather(1, a_e).squeeze(1)

    @graph_fn
    def _graph_fn_add_margin_loss(self, td_loss, margin_loss, expert_mask, importance_weights=None):
        """td_loss (already weighted) + w * supervised_weight * expert_mask * J_E."""
        if get_backend() == "tf":
            import tensorflow as tf
            scale = self.supervised_weight * tf.cast(expert_mask, td_loss.dtype)
            if self.importance_weights:
                scale = scale * tf.cast(importance_weights, td_loss.dtype)
            return td_loss + scale * margin_loss
        scale = self.supervised_weight * expert_mask.to(td_loss.dtype)
        if self.importance_weights:
            scale = scale * importance_weights.to(td_loss.dtype)
        return td_loss + scale * margin_loss
