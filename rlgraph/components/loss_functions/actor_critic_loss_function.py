"""`ActorCriticLossFunction`: the A2C loss, with bootstrapped discounted returns (or given targets) for the critic."""
from __future__ import annotations

from typing import Optional

from rlgraph.backend_system import get_backend
from rlgraph.components.loss_functions.loss_function import LossFunction
from rlgraph.spaces import BoolBox, FloatBox, IntBox
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError

REWARD_CLIPPINGS = (None, "clamp_one", "soft_asymmetric")
_STEP_ARGS = ("log_probs", "values", "rewards", "terminals", "entropy", "advantages", "value_targets")
_RETURN_KEYS = ("rewards", "terminals", "bootstrapped_value")
_TARGET_KEYS = ("advantages", "value_targets")


def _weight(value, default: float, name: str) -> float:
    if value is None:
        return default
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0 <= value < float("inf"):
        raise RLGraphSpecError(f"{name} must be a finite number >= 0 or None", where=f"ActorCriticLossFunction({name})",
                               received=repr(value))
    return float(value)


class ActorCriticLossFunction(LossFunction):
    """The advantage actor-critic (A2C) loss (Mnih et al. 2016, https://arxiv.org/abs/1602.01783).

    Per step t of a rollout fragment of length T, with (clipped) rewards r_t and terminals d_t:

        R_t = r_t + discount * (1 - d_t) * R_{t+1},   R_T = bootstrapped_value (V(s_T))
        A_t = R_t - v_t                                (a constant in the policy term)
        L_t = weight_pg * (-log_pi(a_t|s_t) * A_t) + weight_baseline * 0.5 * (R_t - v_t)^2 - weight_entropy * H_t

    R_t is a constant target (no gradient into the rewards or the bootstrapped value). A terminal d_t = 1 ends the
    episode after step t, so later rewards and the bootstrap do not leak into R_t.

    Two input layouts:
        - With a time rank ([B, T] batch-major or [T, B] time-major; all of `log_probs`, `values`,
          `rewards`, `terminals`, `entropy` alike): B fragments of T steps each; `bootstrapped_value`
          is [B], the value of the state after each fragment's last step. `loss_per_item` is the mean
          of L_t over each fragment's steps: [B].
        - Without a time rank ([B]): the B rows are one time-ordered fragment (several episodes may
          follow each other, separated by terminals); `bootstrapped_value` is a scalar (no batch
          rank). `loss_per_item` is L_t per step: [B].
    `log_probs` are the summed log-probs of the actions taken, `entropy` the policy entropy H_t.

    The record form (`loss_from_record`) also takes the advantages and targets computed elsewhere
    (GAE over shuffled or concatenated fragments, as `PolicyGradientCore` does) instead of rewards:
    then A_t = `advantages` and R_t = `value_targets` above, and `rewards`, `terminals`,
    `bootstrapped_value` and `reward_clipping` play no part.

    Args:
        discount: gamma.
        reward_clipping: None, "clamp_one" (clip r_t to [-1, 1]) or "soft_asymmetric"
            (5 * tanh(r_t / 5), negative values scaled by 0.3, as IMPALA, https://arxiv.org/abs/1802.01561).
        weight_pg: Weight of the policy-gradient term; None for 1.0.
        weight_baseline: Weight of the value (baseline) term; None for 0.5.
        weight_entropy: Weight of the entropy bonus; None for 0.01 (the paper's beta).
        scope: Default "actor-critic-loss-function".

    Record keys (`loss_from_record`; per-step keys shaped alike: [B], [B, T] or [T, B]):
        log_probs: log pi(a_t|s_t), summed over the action components (computed by the agent's core).
        values: v_t = V(s_t) under the weights being trained (computed by the core).
        entropy: H_t, the policy's entropy at s_t (computed by the core).
        and either (returns computed here, as in `loss`):
            rewards: r_t; terminals: d_t (bool); bootstrapped_value: V(s_T), [B] (a scalar for [B] steps),
        or (advantages given, the keys of a PG batch):
            advantages: A_t; value_targets: R_t, the critic's target.
        weight_entropy (optional): a scalar, this update's entropy weight instead of the constructor's.

    API:
        loss(log_probs, values, rewards, terminals, entropy, bootstrapped_value): (total_loss, loss_per_item).
        loss_per_item(same arguments): [B].
        loss_components_per_item(same arguments[, weight_entropy]): (policy term [B], value term [B]):
            the mean over time of weight_pg * (-log_pi * A_t) - weight_entropy * H_t and of 0.5 * (R_t - v_t)^2;
            loss_per_item = policy + weight_baseline * value.
        loss_components_from_advantages(log_probs, values, entropy, advantages, value_targets[, weight_entropy]):
            the same two terms from given A_t and R_t.
        loss_from_record(record) -> (total_loss, loss_per_item [B], policy term [B], value term [B]): the
            same numbers from one dict (keys above).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import BoolBox, FloatBox
    >>> loss_fn = ActorCriticLossFunction(discount=0.5, reward_clipping=None, weight_baseline=1.0, weight_entropy=0.0)
    >>> f = FloatBox(add_batch_rank=True)
    >>> spaces = dict(log_probs=f, values=f, rewards=f, terminals=BoolBox(add_batch_rank=True), entropy=f,
    ...               bootstrapped_value=float)
    >>> test = ComponentTest(loss_fn, input_spaces=spaces, backend="pytorch")
    >>> # R = [1 + 0.5 * 2, 2] = [2, 2] (bootstrap 4.0 is cut by the terminal); A = R - v = [1, 2].
    >>> out = test.test(("loss_per_item", [np.array([-1.0, -2.0], np.float32), np.array([1.0, 0.0], np.float32),
    ...                  np.array([1.0, 2.0], np.float32), np.array([False, True]), np.zeros(2, np.float32), 4.0]))
    >>> out.tolist()  # -log_pi * A + 0.5 * A^2
    [1.5, 6.0]
    """

    record_keys = ("log_probs", "values", "entropy")
    optional_record_keys = _RETURN_KEYS + _TARGET_KEYS + ("weight_entropy",)
    # Both record forms share these: they fix the layout, so the loss is input-complete with them.
    input_spaces_needed = ("log_probs", "values", "entropy")

    def __init__(self, discount: float = 0.99, reward_clipping: Optional[str] = "clamp_one",
                 weight_pg: Optional[float] = None, weight_baseline: Optional[float] = None,
                 weight_entropy: Optional[float] = None, scope: str = "actor-critic-loss-function", **kwargs):
        super().__init__(discount=discount, scope=scope, **kwargs)
        if reward_clipping not in REWARD_CLIPPINGS:
            raise RLGraphSpecError("unknown reward_clipping", where=f"{type(self).__name__}(reward_clipping)",
                                   expected=" or ".join(repr(c) for c in REWARD_CLIPPINGS),
                                   received=repr(reward_clipping))
        self.reward_clipping = reward_clipping
        self.weight_pg = _weight(weight_pg, 1.0, "weight_pg")
        self.weight_baseline = _weight(weight_baseline, 0.5, "weight_baseline")
        self.weight_entropy = _weight(weight_entropy, 0.01, "weight_entropy")
        self.layout = None  # "flat", "batch_major" or "time_major", read from the input spaces.

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        where = f"{self.global_scope}.loss"
        reference = None
        for name in _STEP_ARGS:
            space = input_spaces.get(name)
            if space is None:
                continue
            types = (FloatBox, BoolBox, IntBox) if name == "terminals" else (FloatBox,)
            if not isinstance(space, types) or space.shape != () or not space.has_batch_rank:
                raise RLGraphSpaceError(space, f"'{name}' must hold one value per step", where=f"{where}({name})",
                                        expected=f"{types[0].__name__}(shape=(), add_batch_rank=True), optionally "
                                                 "with a time rank",
                                        hint="sum log-probs and entropies over the action components first.")
            ranks = (space.has_time_rank, bool(space.time_major and space.has_time_rank))
            if reference is None:
                reference = (name, ranks)
            elif ranks != reference[1]:
                raise RLGraphSpaceError(space, f"'{name}' has other batch/time ranks than '{reference[0]}'",
                                        where=f"{where}({name})", expected=input_spaces[reference[0]],
                                        hint="give all per-step inputs the same layout ([B], [B, T] or [T, B]).")
        weight = input_spaces.get("weight_entropy")
        if weight is not None and (not isinstance(weight, FloatBox) or weight.shape != () or weight.has_batch_rank):
            raise RLGraphSpaceError(weight, "'weight_entropy' must be one float for the whole batch",
                                    where=f"{where}_from_record(weight_entropy)",
                                    expected="FloatBox(shape=()) without batch rank")
        if reference is None:
            return
        has_time, time_major = reference[1]
        self.layout = ("time_major" if time_major else "batch_major") if has_time else "flat"
        bootstrap = input_spaces.get("bootstrapped_value")
        if bootstrap is not None:
            ok = isinstance(bootstrap, FloatBox) and bootstrap.shape == () and not bootstrap.has_time_rank and \
                bootstrap.has_batch_rank == has_time
            if not ok:
                raise RLGraphSpaceError(bootstrap, "'bootstrapped_value' does not fit the per-step inputs",
                                        where=f"{where}(bootstrapped_value)",
                                        expected="FloatBox(add_batch_rank=True) ([B]) with a time rank, a scalar "
                                                 "FloatBox (or float) without one",
                                        hint="pass V(s_T) of the state after each fragment's last step.")

    @rlgraph_api
    def loss(self, log_probs, values, rewards, terminals, entropy, bootstrapped_value):
        loss_per_item = self.loss_per_item(log_probs, values, rewards, terminals, entropy, bootstrapped_value)
        return self.loss_average(loss_per_item), loss_per_item

    @rlgraph_api
    def _graph_fn_loss_per_item(self, log_probs, values, rewards, terminals, entropy, bootstrapped_value):
        return self._combine(*self._terms_from_rewards(log_probs, values, rewards, terminals, entropy,
                                                       bootstrapped_value))

    @rlgraph_api(must_be_complete=False, returns=2)
    def _graph_fn_loss_components_per_item(self, log_probs, values, rewards, terminals, entropy, bootstrapped_value,
                                           weight_entropy=None):
        return self._terms_from_rewards(log_probs, values, rewards, terminals, entropy, bootstrapped_value,
                                        weight_entropy)

    @rlgraph_api(must_be_complete=False, returns=2)
    def _graph_fn_loss_components_from_advantages(self, log_probs, values, entropy, advantages, value_targets,
                                                  weight_entropy=None):
        return self._terms(log_probs, values, entropy, advantages, value_targets, weight_entropy)

    @rlgraph_api(must_be_complete=False)
    def loss_from_record(self, record):
        """The loss from one keyed record (see "Record keys" in the class docstring).

        Returns:
            (total_loss, loss_per_item, policy_loss_per_item, value_loss_per_item): a scalar and three
            [B]; loss_per_item = policy + weight_baseline * value.

        Raises:
            RLGraphError: (while building) for a record that lacks a key, holds an unknown one, or
                holds neither or both of the two sets of targets.
        """
        inputs = self.read_record(record)
        with_rewards = [key in record for key in _RETURN_KEYS]
        with_targets = [key in record for key in _TARGET_KEYS]
        if not ((all(with_rewards) and not any(with_targets)) or (all(with_targets) and not any(with_rewards))):
            raise RLGraphError(f"the record of {type(self).__name__} needs either all of {list(_RETURN_KEYS)} or all "
                               f"of {list(_TARGET_KEYS)}", where=f"{self.global_scope}.loss_from_record(record)",
                               expected=f"{list(self.record_keys)} + {list(_RETURN_KEYS)} or "
                                        f"+ {list(_TARGET_KEYS)}", received=sorted(str(key) for key in record),
                               hint="pass rewards (the returns are computed here) or advantages and targets (GAE).")
        per_step = [inputs["log_probs"], inputs["values"]]
        if all(with_rewards):
            policy, value = self.loss_components_per_item(*per_step, inputs["rewards"], inputs["terminals"],
                                                          inputs["entropy"], inputs["bootstrapped_value"],
                                                          inputs["weight_entropy"])
        else:
            policy, value = self.loss_components_from_advantages(*per_step, inputs["entropy"], inputs["advantages"],
                                                                 inputs["value_targets"], inputs["weight_entropy"])
        loss_per_item = self._graph_fn_combine(policy, value)
        return self.loss_average(loss_per_item), loss_per_item, policy, value

    @graph_fn
    def _graph_fn_combine(self, policy_loss, value_loss):
        return self._combine(policy_loss, value_loss)

    # --- The maths, shared by every API method (helpers of the graph functions) ----------------------------------
    def _combine(self, policy_loss, value_loss):
        return policy_loss + self.weight_baseline * value_loss

    def _terms_from_rewards(self, log_probs, values, rewards, terminals, entropy, bootstrapped_value,
                            weight_entropy=None):
        returns = self._returns(values, rewards, terminals, bootstrapped_value)
        return self._terms(log_probs, values, entropy, returns - values, returns, weight_entropy)

    def _terms(self, log_pi, v_t, entropy, advantages, targets, weight_entropy=None):
        """(policy term, value term), each the mean over a fragment's steps ([B]; per step when flat)."""
        weight_entropy = self.weight_entropy if weight_entropy is None else weight_entropy
        a_t, r_t = self._stop(advantages), self._stop(targets)
        policy = -self.weight_pg * log_pi * a_t - weight_entropy * entropy
        value = 0.5 * (r_t - v_t) * (r_t - v_t)
        if self.layout == "flat":
            return policy, value
        axis = 0 if self.layout == "time_major" else 1
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.reduce_mean(policy, axis=axis), tf.reduce_mean(value, axis=axis)
        return policy.mean(dim=axis), value.mean(dim=axis)

    @staticmethod
    def _stop(x):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.stop_gradient(x)
        return x.detach()

    def _clip_rewards(self, r_t, tanh, minimum, maximum, clip):
        if self.reward_clipping == "clamp_one":
            return clip(r_t, -1.0, 1.0)
        if self.reward_clipping == "soft_asymmetric":
            squashed = tanh(r_t / 5.0)  # 5 * tanh(r / 5), negative values scaled by 0.3.
            return 1.5 * minimum(squashed, 0.0) + 5.0 * maximum(squashed, 0.0)
        return r_t

    def _returns(self, values, rewards, terminals, bootstrapped_value):
        """R_t (a constant), shaped like `values`: computed time-major [T, N], the flat layout as N = 1."""
        if get_backend() == "tf":
            import tensorflow as tf
            to_tm = {"flat": lambda x: x[:, None], "batch_major": tf.transpose, "time_major": lambda x: x}[self.layout]
            r_t = self._clip_rewards(to_tm(tf.cast(rewards, values.dtype)), tf.tanh, tf.minimum, tf.maximum,
                                     tf.clip_by_value)
            not_done = 1.0 - to_tm(tf.cast(terminals, values.dtype))
            v_T = tf.stop_gradient(tf.cast(bootstrapped_value, values.dtype))
            v_T = tf.reshape(v_T, [1]) if self.layout == "flat" else v_T
            returns = tf.scan(lambda g, step: step[0] + self.discount * step[1] * g, (r_t, not_done), initializer=v_T,
                              reverse=True)
            return tf.stop_gradient(returns[:, 0] if self.layout == "flat" else to_tm(returns))
        import torch
        to_tm = {"flat": lambda x: x[:, None], "batch_major": lambda x: x.transpose(0, 1),
                 "time_major": lambda x: x}[self.layout]
        r_t = self._clip_rewards(to_tm(torch.as_tensor(rewards).to(values.dtype)), torch.tanh,
                                 lambda x, c: torch.clamp(x, max=c), lambda x, c: torch.clamp(x, min=c), torch.clamp)
        not_done = 1.0 - to_tm(torch.as_tensor(terminals).to(values.dtype))
        v_T = torch.as_tensor(bootstrapped_value).detach().to(values.dtype).reshape(-1)
        g, returns = v_T, []
        for t in reversed(range(r_t.shape[0])):
            g = r_t[t] + self.discount * not_done[t] * g
            returns.append(g)
        returns = (torch.stack(returns[::-1]) if returns else torch.zeros_like(r_t)).detach()
        return returns[:, 0] if self.layout == "flat" else to_tm(returns)
