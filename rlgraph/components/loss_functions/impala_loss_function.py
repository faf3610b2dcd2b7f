"""`IMPALALossFunction`: the V-trace actor-critic loss of IMPALA."""
from __future__ import annotations

import math
from typing import Optional

from rlgraph.backend_system import get_backend
from rlgraph.components.helpers.v_trace_function import VTraceFunction
from rlgraph.components.loss_functions.loss_function import LossFunction
from rlgraph.spaces import BoolBox, FloatBox, IntBox
from rlgraph.spaces.containers import ContainerSpace
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.nest import flatten_op
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

REWARD_CLIPPINGS = ("clamp_one", "soft_asymmetric", None)
_SEQUENCES = {"logits_actions_pi": (FloatBox, 1), "action_probs_mu": (FloatBox, 1), "values": (FloatBox, None),
              "actions": (IntBox, 0), "rewards": (FloatBox, 0), "terminals": (BoolBox, 0)}


def _weight(value, default: float, name: str, owner: str) -> float:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < math.inf:
        raise RLGraphSpecError(f"{name} must be a finite number >= 0 (or None for the default {default})",
                               where=f"{owner}({name})", received=repr(value))
    return float(value)


class IMPALALossFunction(LossFunction):
    """The IMPALA loss (Espeholt et al. 2018, https://arxiv.org/abs/1802.01561) with V-trace targets.

    Per step t of a batch row, with pi the learner policy (softmax of `logits_actions_pi`), mu the
    behaviour policy, V the learner's values and (v_s, pg_adv_t) from `VTraceFunction` on
    log rho_t = log pi(a_t|x_t) - log mu(a_t|x_t), gamma_t = discount * (1 - d_t) and the clipped r_t:

        L_pg = -weight_pg * log pi(a_t|x_t) * pg_adv_t
        L_v = weight_baseline * 0.5 * (v_s - V(x_t))**2
        L_H = -weight_entropy * H(pi(.|x_t)),      H = -sum_a pi(a) log pi(a)

    `loss_per_item` is the sum over time of L_pg + L_v + L_H ([B], one value per batch row); the
    total loss is its mean over the rows. v_s and pg_adv_t are constants (no gradient flows
    through them, nor through rho_t); gradients reach the logits through log pi and H, and the
    values through L_v. The defaults weight_pg 1.0, weight_baseline 0.5 and weight_entropy
    0.00025 are those of the paper's DMLab experiments (the entropy cost was tuned per task there).
    The numpy reference is `rlgraph.utils.numpy.impala_loss_per_item`.

    Reward clipping: "clamp_one" clips r_t to [-1, 1]; "soft_asymmetric" is the paper's DMLab
    squashing 5 * tanh(r_t / 5), with negative values scaled by 0.3 (r_t = 2 gives 1.90, r_t = -2
    gives -0.57); None leaves r_t unchanged.

    Shapes (batch-major, B rows of T steps): logits_actions_pi, action_probs_mu [B, T, A];
    values [B, T] (or [B, T, 1]); actions [B, T] (int); rewards [B, T] (float); terminals [B, T]
    (bool); bootstrapped_values [B] (or [B, 1]): V(x_T), the value of the state after each row's
    last step. Time-major data is not supported.

    Container actions (a Dict/Tuple of IntBox leaves) pass `logits_actions_pi`, `action_probs_mu`
    and `actions` nested like the action space; the leaves are independent categorical
    distributions, so log pi(a_t|x_t), log mu(a_t|x_t) and H are the sums over the leaves.

    Args:
        discount: gamma.
        reward_clipping: "clamp_one", "soft_asymmetric" or None.
        weight_pg: Weight of the policy-gradient term (None: 1.0).
        weight_baseline: Weight of the value term (None: 0.5).
        weight_entropy: Weight of the entropy bonus (None: 0.00025).
        scope: Default "impala-loss-function".

    Raises:
        RLGraphSpecError: For an unknown `reward_clipping` or a negative weight.
        RLGraphSpaceError: (at build time) for inputs that are not batch-major [B, T, ...] sequences
            of the shapes above.

    Record keys (`loss_from_record`; the rollout's own names where it has the value, the positional
    arguments' names for what the learner computes; shapes as above):
        logits_actions_pi: the learner's logits of pi over s_0 .. s_{T-1} (computed by the core).
        action_probs: mu(.|x_t), the behaviour policy (the rollout's `action_probs`; `action_probs_mu` of `loss`).
        values: V(x_t) of the learner (computed by the core).
        actions: a_t (the rollout's).
        rewards: r_t (the rollout's).
        terminals: d_t (the rollout's).
        bootstrapped_values: V(x_T) of the learner (computed by the core from the rollout's `bootstrap_states`).

    API:
        loss(logits_actions_pi, action_probs_mu, values, actions, rewards, terminals, bootstrapped_values)
            -> (total_loss, loss_per_item): a scalar and [B].
        loss_per_item(same arguments) -> [B].
        loss_from_record(record) -> (total_loss, loss_per_item): the same from one dict (keys above).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, IntBox, BoolBox
    >>> seq = dict(add_batch_rank=True, add_time_rank=True)
    >>> loss_fn = IMPALALossFunction(discount=0.5, weight_entropy=0.0)
    >>> test = ComponentTest(loss_fn, input_spaces=dict(
    ...     logits_actions_pi=FloatBox(shape=(2,), **seq), action_probs_mu=FloatBox(shape=(2,), **seq),
    ...     values=FloatBox(**seq), actions=IntBox(2, **seq), rewards=FloatBox(**seq),
    ...     terminals=BoolBox(**seq), bootstrapped_values=FloatBox(add_batch_rank=True)), backend="pytorch")
    >>> # One step, pi = mu = uniform: pg_adv = v_s - V = 1 + 0.5 * 2 - 0 = 2.
    >>> total, per_item = test.test(("loss", [np.zeros((1, 1, 2), np.float32), np.full((1, 1, 2), 0.5, np.float32),
    ...     np.zeros((1, 1), np.float32), np.array([[0]]), np.array([[1.0]], np.float32), np.array([[False]]),
    ...     np.array([2.0], np.float32)]))
    >>> round(float(total), 4)  # -log(0.5) * 2 + 0.5 * 0.5 * 2**2
    2.3863
    """

    record_keys = ("logits_actions_pi", "action_probs", "values", "actions", "rewards", "terminals",
                   "bootstrapped_values")

    def __init__(self, discount: float = 0.99, reward_clipping: Optional[str] = "clamp_one",
                 weight_pg: Optional[float] = None, weight_baseline: Optional[float] = None,
                 weight_entropy: Optional[float] = None, scope: str = "impala-loss-function", **kwargs):
        super().__init__(discount=discount, scope=scope, **kwargs)
        owner = type(self).__name__
        if reward_clipping not in REWARD_CLIPPINGS:
            raise RLGraphSpecError(f"unknown reward_clipping {reward_clipping!r}", where=f"{owner}(reward_clipping)",
                                   expected="'clamp_one', 'soft_asymmetric' or None", received=repr(reward_clipping),
                                   hint="'clamp_one' clips to [-1, 1] (the paper's Atari setup).")
        self.reward_clipping = reward_clipping
        self.weight_pg = _weight(weight_pg, 1.0, "weight_pg", owner)
        self.weight_baseline = _weight(weight_baseline, 0.5, "weight_baseline", owner)
        self.weight_entropy = _weight(weight_entropy, 0.00025, "weight_entropy", owner)
        self.v_trace_function = VTraceFunction()
        self.add_components(self.v_trace_function)

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        where = f"{self.global_scope}.loss"
        actions = input_spaces.get("actions")
        if isinstance(actions, ContainerSpace):
            flat_actions = actions.flatten()
            for key, leaf in flat_actions.items():
                if not isinstance(leaf, IntBox):
                    raise RLGraphSpaceError(actions, "the IMPALA loss needs discrete action leaves",
                                            where=f"{where}(actions{key})", expected="IntBox leaves",
                                            received=repr(leaf))
            for name in ("logits_actions_pi", "action_probs_mu"):
                space = input_spaces.get(name)
                if space is None:
                    continue
                flat = space.flatten() if isinstance(space, ContainerSpace) else {"": space}
                if list(flat) != list(flat_actions):
                    raise RLGraphSpaceError(space, f"`{name}` must be nested like the actions", where=f"{where}({name})",
                                            expected=f"leaves {list(flat_actions)}", received=f"leaves {list(flat)}")
                for key, leaf in flat.items():
                    self._check_sequence(name + key, leaf, FloatBox, 1, where, flat_actions[key].num_categories)
            others = ("values", "rewards", "terminals")
        else:
            others = tuple(_SEQUENCES)
            num_actions = actions.num_categories if isinstance(actions, IntBox) and actions.shape == () else 0
        for name in others:
            space = input_spaces.get(name)
            if space is None:
                continue
            space_type, rank = _SEQUENCES[name]
            self._check_sequence(name, space, space_type, rank, where,
                                 num_actions if name in ("logits_actions_pi", "action_probs_mu") else 0)

    @staticmethod
    def _check_sequence(name, space, space_type, rank, where, num_actions):
        shape_ok = len(space.shape) == rank if rank is not None else space.shape in ((), (1,))
        if not (isinstance(space, space_type) and shape_ok and space.has_batch_rank and space.has_time_rank
                and not space.time_major):
            raise RLGraphSpaceError(space, f"`{name}` must be a batch-major sequence of the right kind",
                                    where=f"{where}({name})",
                                    expected=f"{space_type.__name__} [B, T{', A' if rank else ''}] "
                                             "(add_batch_rank=True, add_time_rank=True, time_major=False)")
        if num_actions and space.shape[0] != num_actions:
            raise RLGraphSpaceError(space, f"`{name}` has {space.shape[0]} entries per step, the actions "
                                    f"{num_actions} categories", where=f"{where}({name})",
                                    expected=f"shape ({num_actions},)")

    @rlgraph_api
    def loss(self, logits_actions_pi, action_probs_mu, values, actions, rewards, terminals, bootstrapped_values):
        """Total loss (mean over rows) and loss per row; see the class docstring.

        Returns:
            (total_loss, loss_per_item): a scalar and [B].
        """
        loss_per_item = self.loss_per_item(logits_actions_pi, action_probs_mu, values, actions, rewards, terminals,
                                           bootstrapped_values)
        return self.loss_average(loss_per_item), loss_per_item

    @rlgraph_api(must_be_complete=False)
    def loss_from_record(self, record):
        """The loss from one keyed record (see "Record keys" in the class docstring).

        Returns:
            (total_loss, loss_per_item): a scalar and [B].

        Raises:
            RLGraphError: (while building) for a record that lacks a key or holds an unknown one.
        """
        inputs = self.read_record(record)
        return self.loss(inputs["logits_actions_pi"], inputs["action_probs"], inputs["values"], inputs["actions"],
                         inputs["rewards"], inputs["terminals"], inputs["bootstrapped_values"])

    @rlgraph_api
    def loss_per_item(self, logits_actions_pi, action_probs_mu, values, actions, rewards, terminals,
                      bootstrapped_values):
        """The loss of each batch row (summed over time), [B]."""
        log_rhos, discounts, clipped_rewards = self._graph_fn_v_trace_inputs(
            logits_actions_pi, action_probs_mu, actions, rewards, terminals)
        vs, pg_advantages = self.v_trace_function.calc_v_trace_values(log_rhos, discounts, clipped_rewards, values,
                                                                      bootstrapped_values)
        return self._graph_fn_loss_terms(logits_actions_pi, actions, values, vs, pg_advantages)

    @graph_fn(returns=3)
    def _graph_fn_v_trace_inputs(self, logits_actions_pi, action_probs_mu, actions, rewards, terminals):
        logits, mu, a = flatten_op(logits_actions_pi), flatten_op(action_probs_mu), flatten_op(actions)
        if get_backend() == "tf":
            import tensorflow as tf
            dtype = logits[next(iter(logits))].dtype
            log_rho_t = tf.add_n([
                _log_prob_tf(tf.stop_gradient(logits[k]), a[k]) -
                tf.math.log(tf.gather(tf.cast(mu[k], dtype), tf.cast(a[k], tf.int64), axis=2, batch_dims=2))
                for k in a])
            gamma_t = self.discount * (1.0 - tf.cast(terminals, dtype))
            return log_rho_t, gamma_t, self._clip_rewards(tf.cast(rewards, dtype))
        import torch
        dtype = logits[next(iter(logits))].dtype
        log_rho_t = 0
        for k in a:
            index = a[k].long().unsqueeze(-1)
            log_pi_a = torch.log_softmax(logits[k].detach(), dim=-1).gather(-1, index).squeeze(-1)
            log_rho_t = log_rho_t + log_pi_a - torch.log(mu[k].detach().to(dtype).gather(-1, index).squeeze(-1))
        gamma_t = self.discount * (1.0 - terminals.to(dtype))
        return log_rho_t, gamma_t, self._clip_rewards(rewards.to(dtype))

    def _clip_rewards(self, r_t):
        """r_t clipped as `reward_clipping` says (a helper of `_graph_fn_v_trace_inputs`)."""
        if self.reward_clipping is None:
            return r_t
        if get_backend() == "tf":
            import tensorflow as tf
            if self.reward_clipping == "clamp_one":
                return tf.clip_by_value(r_t, -1.0, 1.0)
            squashed = tf.tanh(r_t / 5.0)  # Has the sign of r_t.
            return 1.5 * tf.minimum(squashed, 0.0) + 5.0 * tf.maximum(squashed, 0.0)
        if self.reward_clipping == "clamp_one":
            return r_t.clamp(-1.0, 1.0)
        squashed = (r_t / 5.0).tanh()
        return 1.5 * squashed.clamp(max=0.0) + 5.0 * squashed.clamp(min=0.0)

    @graph_fn
    def _graph_fn_loss_terms(self, logits_actions_pi, actions, values, vs, pg_advantages):
        logits, a = flatten_op(logits_actions_pi), flatten_op(actions)
        if get_backend() == "tf":
            import tensorflow as tf
            log_pis = {k: tf.nn.log_softmax(logits[k], axis=-1) for k in a}
            log_pi_a = tf.add_n([tf.gather(log_pis[k], tf.cast(a[k], tf.int64), axis=2, batch_dims=2) for k in a])
            entropy = tf.add_n([-tf.reduce_sum(tf.exp(lp) * lp, axis=-1) for lp in log_pis.values()])
            v_t = tf.cast(values, log_pi_a.dtype)
            v_t = tf.squeeze(v_t, -1) if len(v_t.shape) == 3 else v_t
            vs = tf.stop_gradient(tf.reshape(tf.cast(vs, v_t.dtype), tf.shape(v_t)))
            pg_advantages = tf.stop_gradient(tf.reshape(tf.cast(pg_advantages, v_t.dtype), tf.shape(v_t)))
            per_step = (-self.weight_pg * log_pi_a * pg_advantages
                        + self.weight_baseline * 0.5 * tf.square(vs - v_t) - self.weight_entropy * entropy)
            return tf.reduce_sum(per_step, axis=1)
        log_pi_a, entropy = 0, 0
        for k in a:
            log_pi = torch_log_softmax(logits[k])
            log_pi_a = log_pi_a + log_pi.gather(-1, a[k].long().unsqueeze(-1)).squeeze(-1)
            entropy = entropy - (log_pi.exp() * log_pi).sum(-1)
        v_t = values.to(log_pi_a.dtype)
        v_t = v_t.squeeze(-1) if v_t.dim() == 3 else v_t
        vs = vs.detach().to(v_t.dtype).reshape(v_t.shape)
        pg_advantages = pg_advantages.detach().to(v_t.dtype).reshape(v_t.shape)
        per_step = (-self.weight_pg * log_pi_a * pg_advantages
                    + self.weight_baseline * 0.5 * (vs - v_t) ** 2 - self.weight_entropy * entropy)
        return per_step.sum(1)


def torch_log_softmax(logits):
    """log_softmax over the last axis (PyTorch)."""
    import torch
    return torch.log_softmax(logits, dim=-1)


def _log_prob_tf(logits, actions):
    """log pi(a_t|x_t) from [B, T, A] logits and [B, T] actions."""
    import tensorflow as tf
    log_pi = tf.nn.log_softmax(logits, axis=-1)
    return tf.gather(log_pi, tf.cast(actions, tf.int64), axis=2, batch_dims=2)
