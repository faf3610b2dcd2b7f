"""`DQNLossFunction`: the (double, n-step, Huber, prioritized) DQN temporal-difference loss."""
from __future__ import annotations

from rlgraph.backend_system import get_backend
from rlgraph.components.loss_functions.loss_function import LossFunction
from rlgraph.spaces import BoolBox, FloatBox, IntBox
from rlgraph.spaces.containers import ContainerSpace
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

_Q_ARGS = ("q_values_s", "qt_values_sp", "q_values_sp")


def _check_bool(value, name: str, owner: str) -> bool:
    if not isinstance(value, bool):
        raise RLGraphSpecError(f"{name} must be a bool", where=f"{owner}({name})", expected="True or False",
                               received=repr(value))
    return value


class DQNLossFunction(LossFunction):
    """The DQN loss (Mnih et al. 2015, https://doi.org/10.1038/nature14236) with its common extensions.

    With Q the online network, Qt the target network, r_t the (n-step discounted) reward sum and
    d_t the terminal flag of the transition (s_t, a_t, r_t, d_t, s'):

        a* = argmax_a Q(s', a)    if double_q (van Hasselt et al. 2015, https://arxiv.org/abs/1509.06461)
        target_t = r_t + discount**n_step * (1 - d_t) * Qt(s', a*)     (a* = argmax_a Qt(s', a) else)
        td_t = target_t - Q(s_t, a_t)
        loss_t = huber(td_t, huber_delta) if huber_loss else 0.5 * td_t**2
        loss_t = w_t * loss_t                                      if importance_weights

    The target is a constant: no gradient flows into `qt_values_sp` or `q_values_sp` (TF
    `stop_gradient`, PyTorch `detach`). With `n_step` > 1 the rewards must already be the
    discounted n-step sums r_t + gamma r_{t+1} + ... + gamma^(n-1) r_{t+n-1} and s' the state n
    steps later. The numpy reference is `rlgraph.utils.numpy.dqn_loss_per_item`.

    Shapes: q_values_s, qt_values_sp, q_values_sp [B, num_actions]; actions [B] (int);
    rewards [B] (float); terminals [B] (bool); importance_weights [B] (float). Only a single
    discrete action (an `IntBox` without shape) is supported, no container action spaces.

    The positional API takes its arguments in this order; to pass `importance_weights` without
    double Q, pass any [B, num_actions] array as `q_values_sp` (it is not read then). The keyed
    API `loss_from_record` takes them as one dict instead (what `DQNCore` calls), under the names
    of the transition record and of the positional API:

    Record keys:
        q_values_s: Q(s_t, .) of the online network [B, num_actions].
        actions: a_t [B] (int).
        rewards: r_t [B] (float; the n-step discounted sums with n_step > 1).
        terminals: d_t [B] (bool).
        qt_values_sp: Qt(s', .) of the target network [B, num_actions].
        q_values_sp: (optional; required with double_q) Q(s', .) of the online network
            [B, num_actions]; not read without double_q.
        importance_weights: (optional; required with importance_weights=True, refused without)
            w_t [B] (float).

    Args:
        discount: gamma.
        double_q: Pick a* with the online network's `q_values_sp` (required then).
        huber_loss: Huber loss of the TD error instead of 0.5 * td**2.
        huber_delta: Where the Huber loss turns linear.
        importance_weights: Multiply each item's loss by `importance_weights` (required then),
            e.g. prioritized replay (Schaul et al. 2015, https://arxiv.org/abs/1511.05952).
        n_step: n of the n-step returns; the bootstrap is discounted by discount**n_step.
        scope: Default "dqn-loss-function".

    Raises:
        RLGraphSpecError: For a bad constructor argument.
        RLGraphSpaceError: (at build time) for container or non-int actions, q values that are
            not [B, num_actions], or a missing `q_values_sp` / `importance_weights` space.

    API:
        loss(q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp=None,
            importance_weights=None) -> (total_loss, loss_per_item): the batch mean and [B].
        loss_per_item(same arguments) -> [B].
        loss_and_td_error(same arguments) -> (total_loss, loss_per_item, td_t): one TD computation.
        get_td_error(q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp=None)
            -> td_t [B] (e.g. abs(td_t) as replay priorities).
        loss_from_record(record) -> (total_loss, loss_per_item, td_t): `loss_and_td_error` of
            the record's values (its keys: "Record keys" above).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, IntBox, BoolBox
    >>> q = FloatBox(shape=(2,), add_batch_rank=True)
    >>> loss_fn = DQNLossFunction(discount=0.5)
    >>> test = ComponentTest(loss_fn, input_spaces=dict(
    ...     q_values_s=q, actions=IntBox(2, add_batch_rank=True), rewards=FloatBox(add_batch_rank=True),
    ...     terminals=BoolBox(add_batch_rank=True), qt_values_sp=q), backend="pytorch")
    >>> args = [np.array([[1.0, 2.0]], np.float32), np.array([1]), np.array([1.0], np.float32),
    ...         np.array([False]), np.array([[4.0, 0.0]], np.float32)]
    >>> test.test(("get_td_error", args)).tolist()  # 1 + 0.5 * 4 - 2
    [1.0]
    >>> total, per_item = test.test(("loss", args))
    >>> float(total), per_item.tolist()
    (0.5, [0.5])

    The same batch as one keyed record:

    >>> spaces = dict(q_values_s=q, actions=IntBox(2, add_batch_rank=True), rewards=FloatBox(add_batch_rank=True),
    ...               terminals=BoolBox(add_batch_rank=True), qt_values_sp=q)
    >>> from rlgraph.spaces import Dict
    >>> test = ComponentTest(DQNLossFunction(discount=0.5), input_spaces=dict(spaces, record=Dict(spaces)),
    ...                      backend="pytorch")
    >>> total, per_item, td = test.test(("loss_from_record", [dict(zip(spaces, args))]))
    >>> float(total), td.tolist()
    (0.5, [1.0])
    """

    record_keys = ("q_values_s", "actions", "rewards", "terminals", "qt_values_sp")
    optional_record_keys = ("q_values_sp", "importance_weights")

    def __init__(self, discount: float = 0.98, double_q: bool = False, huber_loss: bool = False,
                 huber_delta: float = 1.0, importance_weights: bool = False, n_step: int = 1,
                 scope: str = "dqn-loss-function", **kwargs):
        super().__init__(discount=discount, scope=scope, **kwargs)
        owner = type(self).__name__
        self.double_q = _check_bool(double_q, "double_q", owner)
        self.huber_loss = _check_bool(huber_loss, "huber_loss", owner)
        self.importance_weights = _check_bool(importance_weights, "importance_weights", owner)
        if isinstance(huber_delta, bool) or not isinstance(huber_delta, (int, float)) or not huber_delta > 0:
            raise RLGraphSpecError("huber_delta must be a positive number", where=f"{owner}(huber_delta)",
                                   expected="a float > 0", received=repr(huber_delta))
        self.huber_delta = float(huber_delta)
        if isinstance(n_step, bool) or not isinstance(n_step, int) or n_step < 1:
            raise RLGraphSpecError("n_step must be a positive int", where=f"{owner}(n_step)", expected="1, 2, ...",
                                   received=repr(n_step))
        self.n_step = n_step
        # The discount of the bootstrapped value Qt(s', a*), n steps ahead.
        self.bootstrap_discount = self.discount ** self.n_step
        # The keys this configuration must read are required in its records.
        needed = tuple(key for key, flag in (("q_values_sp", double_q), ("importance_weights", importance_weights))
                       if flag)
        self.record_keys = type(self).record_keys + needed
        self.optional_record_keys = tuple(key for key in type(self).optional_record_keys if key not in needed)

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        where = f"{self.global_scope}.loss"
        actions = input_spaces.get("actions")
        if actions is not None:
            if isinstance(actions, ContainerSpace):
                raise RLGraphSpaceError(actions, "container action spaces are not supported by the DQN loss",
                                        where=f"{where}(actions)", expected="IntBox(num_actions) with a batch rank",
                                        hint="use one discrete action (flatten combined actions into one IntBox).")
            if not isinstance(actions, IntBox) or actions.shape != ():
                raise RLGraphSpaceError(actions, "the DQN loss needs one discrete action per item",
                                        where=f"{where}(actions)", expected="IntBox(num_actions) with a batch rank",
                                        hint="continuous actions need another loss (e.g. SAC or DDPG).")
        num_actions = actions.num_categories if actions is not None else 0
        for name in _Q_ARGS:
            space = input_spaces.get(name)
            if space is None:
                continue
            if not isinstance(space, FloatBox) or len(space.shape) != 1 or not space.has_batch_rank:
                raise RLGraphSpaceError(space, f"`{name}` must hold one Q-value per action",
                                        where=f"{where}({name})", expected="FloatBox(shape=(num_actions,)) [B, A]",
                                        hint="pass the Q-network's output for each action.")
            if num_actions and space.shape[0] != num_actions:
                raise RLGraphSpaceError(space, f"`{name}` has {space.shape[0]} Q-values, the actions {num_actions}",
                                        where=f"{where}({name})", expected=f"shape ({num_actions},)")
        for name, space_type in (("rewards", FloatBox), ("terminals", BoolBox), ("importance_weights", FloatBox)):
            space = input_spaces.get(name)
            if space is not None and (not isinstance(space, space_type) or space.shape != ()):
                raise RLGraphSpaceError(space, f"`{name}` must hold one value per item", where=f"{where}({name})",
                                        expected=f"{space_type.__name__}() with a batch rank ([B])")
        self._check_optional(input_spaces, "q_values_sp", self.double_q, "double_q")
        self._check_optional(input_spaces, "importance_weights", self.importance_weights, "importance_weights")

    def _check_optional(self, input_spaces, name: str, needed: bool, flag: str) -> None:
        given = input_spaces.get(name) is not None
        if needed and not given:
            raise RLGraphSpaceError(None, f"`{name}` is required with {flag}=True but has no space",
                                    where=f"{self.global_scope}.loss({name})", expected=f"a space for `{name}`",
                                    received="none", hint=f"pass `{name}` to loss/loss_per_item, or set {flag}=False.")
        if name == "importance_weights" and given and not needed:
            raise RLGraphSpaceError(input_spaces[name], "`importance_weights` given but importance_weights=False",
                                    where=f"{self.global_scope}.loss(importance_weights)",
                                    hint="construct DQNLossFunction(importance_weights=True) to use them.")

    @rlgraph_api
    def loss(self, q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp=None, importance_weights=None):
        """Total loss (batch mean) and loss per item; see the class docstring.

        Returns:
            (total_loss, loss_per_item): a scalar and [B].
        """
        loss_per_item = self.loss_per_item(q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp,
                                           importance_weights)
        return self.loss_average(loss_per_item), loss_per_item

    @rlgraph_api
    def loss_per_item(self, q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp=None,
                      importance_weights=None):
        """The loss of each item, [B] (Huber or 0.5 td**2, times the importance weights)."""
        td_error = self._graph_fn_td_error(q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp)
        return self._graph_fn_td_loss(td_error, importance_weights)

    @rlgraph_api
    def loss_and_td_error(self, q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp=None,
                          importance_weights=None):
        """(total_loss, loss_per_item, td_error) with the TD errors computed once (training paths
        that also need them, e.g. for priorities)."""
        td_error = self._graph_fn_td_error(q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp)
        loss_per_item = self._graph_fn_td_loss(td_error, importance_weights)
        return self.loss_average(loss_per_item), loss_per_item, td_error

    @rlgraph_api(must_be_complete=False)
    def loss_from_record(self, record):
        """(total_loss, loss_per_item, td_error) of one keyed record (the class docstring's "Record
        keys"): `loss_and_td_error` of its values, so both APIs build the same graph.

        Raises:
            RLGraphError: (while building) for a record that lacks a required key or has a key
                this loss does not read, naming this component and the keys.
        """
        return self.loss_and_td_error(**self.read_record(record))

    @rlgraph_api
    def get_td_error(self, q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp=None):
        """The TD errors td_t = target_t - Q(s_t, a_t), [B]."""
        return self._graph_fn_td_error(q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp)

    @graph_fn
    def _graph_fn_td_error(self, q_values_s, actions, rewards, terminals, qt_values_sp, q_values_sp=None):
        if self.double_q and q_values_sp is None:
            raise RLGraphSpecError("double_q=True needs `q_values_sp`", where=f"{self.global_scope}.loss(q_values_sp)",
                                   hint="pass the online network's Q-values of s'.")
        q_sp = q_values_sp if self.double_q else None
        if get_backend() == "tf":
            return self._td_error_tf(q_values_s, actions, rewards, terminals, qt_values_sp, q_sp)
        return self._td_error_torch(q_values_s, actions, rewards, terminals, qt_values_sp, q_sp)

    def _td_error_tf(self, q_tm1, a_tm1, r_t, d_t, qt_t, q_t):
        import tensorflow as tf
        a_tm1 = tf.cast(a_tm1, tf.int64)
        rows = tf.range(tf.shape(a_tm1, out_type=tf.int64)[0])
        # gather_nd on (row, action) pairs: the same values and gradients as gather(batch_dims=1), whose
        # gradient graph takes ~3x longer to trace (~50 ms of each update function's trace).
        q_tm1_a = tf.gather_nd(q_tm1, tf.stack([rows, a_tm1], axis=1))
        if q_t is None:
            qt_t_best = tf.reduce_max(qt_t, axis=-1)
        else:
            qt_t_best = tf.gather_nd(qt_t, tf.stack([rows, tf.argmax(q_t, axis=-1)], axis=1))
        not_done = 1.0 - tf.cast(d_t, q_tm1.dtype)
        target = tf.cast(r_t, q_tm1.dtype) + self.bootstrap_discount * not_done * tf.cast(qt_t_best, q_tm1.dtype)
        return tf.stop_gradient(target) - q_tm1_a

    def _td_error_torch(self, q_tm1, a_tm1, r_t, d_t, qt_t, q_t):
        q_tm1_a = q_tm1.gather(1, a_tm1.long().unsqueeze(1)).squeeze(1)
        if q_t is None:
            qt_t_best = qt_t.max(dim=-1).values
        else:
            qt_t_best = qt_t.gather(1, q_t.argmax(dim=-1, keepdim=True)).squeeze(1)
        not_done = 1.0 - d_t.to(q_tm1.dtype)
        target = r_t.to(q_tm1.dtype) + self.bootstrap_discount * not_done * qt_t_best.to(q_tm1.dtype)
        return target.detach() - q_tm1_a

    @graph_fn
    def _graph_fn_td_loss(self, td_error, importance_weights=None):
        if self.importance_weights and importance_weights is None:
            raise RLGraphSpecError("importance_weights=True needs `importance_weights`",
                                   where=f"{self.global_scope}.loss(importance_weights)",
                                   hint="pass one weight per item, or set importance_weights=False.")
        delta = self.huber_delta
        if get_backend() == "tf":
            import tensorflow as tf
            abs_td = tf.abs(td_error)
            if self.huber_loss:
                loss = tf.where(abs_td <= delta, 0.5 * tf.square(td_error), delta * (abs_td - 0.5 * delta))
            else:
                loss = 0.5 * tf.square(td_error)
            if self.importance_weights:
                loss = tf.cast(importance_weights, loss.dtype) * loss
            return loss
        import torch
        if self.huber_loss:
            # One fused op (and backward node) instead of the where/abs/square composition above.
            loss = torch.nn.functional.huber_loss(td_error, torch.zeros_like(td_error), reduction="none",
                                                  delta=delta)
        else:
            loss = 0.5 * td_error ** 2
        if self.importance_weights:
            loss = importance_weights.to(loss.dtype) * loss
        return loss
