"""`ActorCriticLossFunction`: the A2C loss with bootstrapped discounted returns as the critic's target."""
from __future__ import annotations

from typing import Optional

from rlgraph.backend_system import get_backend
from rlgraph.components.loss_functions.loss_function import LossFunction
from rlgraph.spaces import BoolBox, FloatBox, IntBox
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

REWARD_CLIPPINGS = (None, "clamp_one", "soft_asymmetric")
_STEP_ARGS = ("log_probs", "values", "rewards", "terminals", "entropy")


def _weight(value, default: float, name: str) -> float:
    if value is None:
        return default
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
        raise RLGraphSpecError(f"{name} must be a number >= 0 or None", where=f"ActorCriticLossFunction({name})",
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

    Args:
        discount: gamma.
        reward_clipping: None, "clamp_one" (clip r_t to [-1, 1]) or "soft_asymmetric"
            (0.3 * min(tanh(r_t), 0) + 5 * max(tanh(r_t), 0), as IMPALA, https://arxiv.org/abs/1802.01561).
        weight_pg: Weight of the policy-gradient term; None for 1.0.
        weight_baseline: Weight of the value (baseline) term; None for 0.5.
        weight_entropy: Weight of the entropy bonus; None for 0.01 (the paper's beta).
        scope: Default "actor-critic-loss-function".

    API:
        loss(log_probs, values, rewards, terminals, entropy, bootstrapped_value): (total_loss, loss_per_item).
        loss_per_item(same arguments): [B].

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
        if get_backend() == "tf":
            return self._loss_per_item_tf(log_probs, values, rewards, terminals, entropy, bootstrapped_value)
        return self._loss_per_item_torch(log_probs, values, rewards, terminals, entropy, bootstrapped_value)

    def _weighted_sum(self, log_pi, v_t, returns, entropy, square):
        advantages = returns - v_t
        return (-self.weight_pg * log_pi * self._stop(advantages) + self.weight_baseline * 0.5 * square(advantages)
                - self.weight_entropy * entropy)

    @staticmethod
    def _stop(x):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.stop_gradient(x)
        return x.detach()

    def _loss_per_item_tf(self, log_probs, values, rewards, terminals, entropy, bootstrapped_value):
        import tensorflow as tf
        # Everything goes time-major [T, N]; the flat layout is one fragment of N = 1.
        to_tm = {"flat": lambda x: x[:, None], "batch_major": tf.transpose, "time_major": lambda x: x}[self.layout]
        r_t = to_tm(tf.cast(rewards, values.dtype))
        if self.reward_clipping == "clamp_one":
            r_t = tf.clip_by_value(r_t, -1.0, 1.0)
        elif self.reward_clipping == "soft_asymmetric":
            squashed = tf.tanh(r_t)
            r_t = 0.3 * tf.minimum(squashed, 0.0) + 5.0 * tf.maximum(squashed, 0.0)
        not_done = 1.0 - to_tm(tf.cast(terminals, values.dtype))
        v_T = tf.stop_gradient(tf.cast(bootstrapped_value, values.dtype))
        v_T = tf.reshape(v_T, [1]) if self.layout == "flat" else v_T
        returns = tf.stop_gradient(tf.scan(lambda g, step: step[0] + self.discount * step[1] * g, (r_t, not_done),
                                           initializer=v_T, reverse=True))
        per_step = self._weighted_sum(to_tm(log_probs), to_tm(values), returns, to_tm(entropy), tf.square)
        return per_step[:, 0] if self.layout == "flat" else tf.reduce_mean(per_step, axis=0)

    def _loss_per_item_torch(self, log_probs, values, rewards, terminals, entropy, bootstrapped_value):
        import torch
        to_tm = {"flat": lambda x: x[:, None], "batch_major": lambda x: x.transpose(0, 1),
                 "time_major": lambda x: x}[self.layout]
        r_t = to_tm(torch.as_tensor(rewards).to(values.dtype))
        if self.reward_clipping == "clamp_one":
            r_t = torch.clamp(r_t, -1.0, 1.0)
        elif self.reward_clipping == "soft_asymmetric":
            squashed = torch.tanh(r_t)
            r_t = 0.3 * torch.clamp(squashed, max=0.0) + 5.0 * torch.clamp(squashed, min=0.0)
        not_done = 1.0 - to_tm(torch.as_tensor(terminals).to(values.dtype))
        v_T = torch.as_tensor(bootstrapped_value).detach().to(values.dtype).reshape(-1)
        g, returns = v_T, []
        for t in reversed(range(r_t.shape[0])):
            g = r_t[t] + self.discount * not_done[t] * g
            returns.append(g)
        returns = (torch.stack(returns[::-1]) if returns else torch.zeros_like(r_t)).detach()
        per_step = self._weighted_sum(to_tm(log_probs), to_tm(values), returns, to_tm(entropy), torch.square)
        return per_step[:, 0] if self.layout == "flat" else per_step.mean(dim=0)
