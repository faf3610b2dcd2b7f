"""`PPOLossFunction`: the clipped surrogate objective of PPO with an (optionally clipped) value loss."""
from __future__ import annotations

from typing import Optional

from rlgraph.backend_system import get_backend
from rlgraph.components.loss_functions.loss_function import LossFunction
from rlgraph.spaces import FloatBox
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

_ARGS = ("log_probs", "prev_log_probs", "advantages", "entropy", "values", "prev_values", "value_targets")


def _positive_number(value, name: str, owner: str, allow_none: bool = False) -> Optional[float]:
    if value is None and allow_none:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value > 0:
        raise RLGraphSpecError(f"{name} must be a positive number" + (" or None" if allow_none else ""),
                               where=f"{owner}({name})", received=repr(value))
    return float(value)


def _non_negative_number(value, name: str, owner: str) -> float:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
        raise RLGraphSpecError(f"{name} must be a number >= 0", where=f"{owner}({name})", received=repr(value))
    return float(value)


class PPOLossFunction(LossFunction):
    """The PPO loss (Schulman et al. 2017, https://arxiv.org/abs/1707.06347), per batch item:

        rho_t = exp(log_pi(a_t|s_t) - log_pi_old(a_t|s_t))
        L_pi = -min(rho_t * A_t, clip(rho_t, 1 - clip_ratio, 1 + clip_ratio) * A_t) - weight_entropy * H_t
        L_v = 0.5 * (v_t - v_target_t)^2, or with `value_function_clipping` c:
              0.5 * max((v_t - v_target_t)^2, (v_old_t + clip(v_t - v_old_t, -c, c) - v_target_t)^2)
        loss_per_item = L_pi + weight_vf * L_v

    The old log-probs, the advantages, the old values and the value targets are constants (no gradient
    flows into them). All inputs are floats of shape [B] (one value per item: the log-prob of the whole
    action taken, summed over action components; the policy's entropy at s_t). With a time rank ([B, T]
    or [T, B]) the per-step losses are averaged over time, so `loss_per_item` is always [B] and `loss`
    returns the batch mean of it.

    Args:
        clip_ratio: epsilon of the clipped ratio, > 0 (paper: 0.2).
        value_function_clipping: c, the clipping range of the value change around `prev_values`; None
            (default) for the plain squared error.
        weight_entropy: Weight of the entropy bonus (c_2 in the paper); None for the paper's 0.01.
        weight_vf: Weight of the value loss in `loss`; default 0.5 (with the 0.5 inside L_v this is the
            0.25 * squared error of OpenAI baselines' ppo2).
        discount: gamma; not used by the loss itself (advantages come computed, e.g. by GAE), kept for
            the agent that computes them.
        scope: Default "ppo-loss-function".

    Record keys (`loss_from_record`; the names of the positional arguments, all floats [B], or all
    [B, T] / [T, B] alike):
        log_probs: log pi(a_t|s_t) under the weights being trained (computed by the agent's core).
        prev_log_probs: log pi_old(a_t|s_t) of the acting weights (a PG batch's `log_probs`).
        advantages: A_t (a PG batch's `advantages`, e.g. GAE).
        entropy: H_t, the policy's entropy at s_t (computed by the core).
        values: v_t = V(s_t) under the weights being trained (computed by the core).
        prev_values: v_old_t of the acting weights (a PG batch's `values`); always given, used only
            with `value_function_clipping`.
        value_targets: v_target_t (a PG batch's `value_targets`).
        clip_ratio (optional): a scalar, this update's epsilon instead of the constructor's (schedules).
        weight_entropy (optional): a scalar, this update's entropy weight instead of the constructor's.

    API:
        loss(log_probs, prev_log_probs, advantages, entropy, values, prev_values, value_targets):
            (total_loss, loss_per_item): scalar and [B].
        loss_per_item(same arguments): [B].
        loss_components(same arguments): (policy_loss, value_function_loss), the batch means of L_pi
            (with the entropy term) and of the unweighted L_v; loss = policy + weight_vf * value.
        loss_components_per_item(same arguments[, clip_ratio, weight_entropy]): (L_pi [B], L_v [B]).
        policy_loss_per_item(log_probs, prev_log_probs, advantages, entropy[, clip_ratio, weight_entropy]):
            [B] L_pi.
        value_function_loss_per_item(values, prev_values, value_targets): [B] L_v (unweighted).
        `prev_values` is ignored unless `value_function_clipping` is set.
        loss_from_record(record) -> (total_loss, loss_per_item [B], L_pi [B], L_v [B]): the same
            numbers from one dict (keys above; the per-item parts for agents with two optimizers).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import Dict, FloatBox
    >>> loss_fn = PPOLossFunction(clip_ratio=0.2, weight_entropy=0.0, weight_vf=1.0)
    >>> spaces = {name: FloatBox(add_batch_rank=True) for name in loss_fn.api_methods["loss"].arg_names}
    >>> # The record's space as well (a root needs the positional spaces too: they share the graph).
    >>> test = ComponentTest(loss_fn, input_spaces=dict(spaces, record=Dict(spaces)), backend="pytorch")
    >>> # rho = [1.5, 0.5]: the first is clipped to 1.2, the second stays (A > 0 takes the min).
    >>> lp, adv = np.log([1.5, 0.5], dtype=np.float32), np.array([1.0, 1.0], np.float32)
    >>> zeros = np.zeros(2, np.float32)
    >>> test.test(("loss_per_item", [lp, zeros, adv, zeros, zeros, zeros, zeros])).astype(float).round(4).tolist()
    [-1.2, -0.5]
    >>> record = dict(log_probs=lp, prev_log_probs=zeros, advantages=adv, entropy=zeros, values=zeros,
    ...               prev_values=zeros, value_targets=zeros)
    >>> test.test(("loss_from_record", record))[1].astype(float).round(4).tolist()
    [-1.2, -0.5]
    """

    record_keys = _ARGS
    optional_record_keys = ("clip_ratio", "weight_entropy")

    def __init__(self, clip_ratio: float = 0.2, value_function_clipping: Optional[float] = None,
                 weight_entropy: Optional[float] = None, weight_vf: float = 0.5, discount: float = 0.99,
                 scope: str = "ppo-loss-function", **kwargs):
        super().__init__(discount=discount, scope=scope, **kwargs)
        owner = type(self).__name__
        self.clip_ratio = _positive_number(clip_ratio, "clip_ratio", owner)
        self.value_function_clipping = _positive_number(value_function_clipping, "value_function_clipping", owner,
                                                        allow_none=True)
        self.weight_entropy = 0.01 if weight_entropy is None else _non_negative_number(weight_entropy,
                                                                                        "weight_entropy", owner)
        self.weight_vf = _non_negative_number(weight_vf, "weight_vf", owner)
        self.time_axis = None  # Set from the input spaces: where the time rank lies, if any.

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        layout_of = None
        for name in _ARGS:
            space = input_spaces.get(name)
            if space is None:
                continue
            if not isinstance(space, FloatBox) or space.shape != () or not space.has_batch_rank:
                raise RLGraphSpaceError(space, f"'{name}' must hold one float per batch item",
                                        where=f"{self.global_scope}.loss({name})",
                                        expected="FloatBox(shape=(), add_batch_rank=True) (optionally a time rank)",
                                        hint="sum log-probs and entropies over the action components first.")
            time_axis = (0 if space.time_major else 1) if space.has_time_rank else None
            if layout_of is not None and time_axis != self.time_axis:
                raise RLGraphSpaceError(space, f"'{name}' has other batch/time ranks than '{layout_of}'",
                                        where=f"{self.global_scope}.loss({name})", expected=input_spaces[layout_of],
                                        hint="give all inputs the same layout ([B], [B, T] or [T, B]).")
            layout_of, self.time_axis = layout_of or name, time_axis
        for name in self.optional_record_keys:
            space = input_spaces.get(name)
            if space is not None and (not isinstance(space, FloatBox) or space.shape != () or
                                      space.has_batch_rank):
                raise RLGraphSpaceError(space, f"'{name}' must be one float for the whole batch",
                                        where=f"{self.global_scope}.loss_from_record({name})",
                                        expected="FloatBox(shape=()) without batch rank")

    @rlgraph_api
    def loss(self, log_probs, prev_log_probs, advantages, entropy, values, prev_values, value_targets):
        loss_per_item = self.loss_per_item(log_probs, prev_log_probs, advantages, entropy, values, prev_values,
                                           value_targets)
        return self.loss_average(loss_per_item), loss_per_item

    @rlgraph_api
    def loss_per_item(self, log_probs, prev_log_probs, advantages, entropy, values, prev_values, value_targets):
        policy, value = self.loss_components_per_item(log_probs, prev_log_probs, advantages, entropy, values,
                                                      prev_values, value_targets)
        return self._graph_fn_combine(policy, value)

    @rlgraph_api(must_be_complete=False)
    def loss_components(self, log_probs, prev_log_probs, advantages, entropy, values, prev_values, value_targets):
        policy, value = self.loss_components_per_item(log_probs, prev_log_probs, advantages, entropy, values,
                                                      prev_values, value_targets)
        return self.loss_average(policy), self.loss_average(value)

    @rlgraph_api(must_be_complete=False)
    def loss_components_per_item(self, log_probs, prev_log_probs, advantages, entropy, values, prev_values,
                                 value_targets, clip_ratio=None, weight_entropy=None):
        """(L_pi [B], L_v [B]): the one computation behind every other API method."""
        policy = self._graph_fn_policy_loss_per_item(log_probs, prev_log_probs, advantages, entropy, clip_ratio,
                                                     weight_entropy)
        return policy, self._graph_fn_value_function_loss_per_item(values, prev_values, value_targets)

    @rlgraph_api(must_be_complete=False)
    def loss_from_record(self, record):
        """The loss from one keyed record (see "Record keys" in the class docstring).

        Returns:
            (total_loss, loss_per_item, policy_loss_per_item, value_function_loss_per_item): a scalar
            and three [B]; loss_per_item = L_pi + weight_vf * L_v.

        Raises:
            RLGraphError: (while building) for a record that lacks a key or holds an unknown one.
        """
        inputs = self.read_record(record)
        policy, value = self.loss_components_per_item(*(inputs[key] for key in self.record_keys),
                                                      inputs["clip_ratio"], inputs["weight_entropy"])
        loss_per_item = self._graph_fn_combine(policy, value)
        return self.loss_average(loss_per_item), loss_per_item, policy, value

    @rlgraph_api(must_be_complete=False)
    def _graph_fn_policy_loss_per_item(self, log_probs, prev_log_probs, advantages, entropy, clip_ratio=None,
                                       weight_entropy=None):
        eps = self.clip_ratio if clip_ratio is None else clip_ratio
        weight_entropy = self.weight_entropy if weight_entropy is None else weight_entropy
        if get_backend() == "tf":
            import tensorflow as tf
            log_pi_old, a_t = tf.stop_gradient(prev_log_probs), tf.stop_gradient(advantages)
            rho_t = tf.exp(log_probs - log_pi_old)
            surrogate = tf.minimum(rho_t * a_t, tf.clip_by_value(rho_t, 1.0 - eps, 1.0 + eps) * a_t)
        else:
            import torch
            log_pi_old, a_t = prev_log_probs.detach(), advantages.detach()
            rho_t = torch.exp(log_probs - log_pi_old)
            surrogate = torch.minimum(rho_t * a_t, torch.clamp(rho_t, 1.0 - eps, 1.0 + eps) * a_t)
        return self._mean_over_time(-surrogate - weight_entropy * entropy)

    @rlgraph_api(must_be_complete=False)
    def _graph_fn_value_function_loss_per_item(self, values, prev_values, value_targets):
        c = self.value_function_clipping
        if get_backend() == "tf":
            import tensorflow as tf
            v_target = tf.stop_gradient(value_targets)
            squared = tf.square(values - v_target)
            if c is not None:
                v_old = tf.stop_gradient(prev_values)
                v_clipped = v_old + tf.clip_by_value(values - v_old, -c, c)
                squared = tf.maximum(squared, tf.square(v_clipped - v_target))
        else:
            import torch
            v_target = value_targets.detach()
            squared = torch.square(values - v_target)
            if c is not None:
                v_old = prev_values.detach()
                v_clipped = v_old + torch.clamp(values - v_old, -c, c)
                squared = torch.maximum(squared, torch.square(v_clipped - v_target))
        return self._mean_over_time(0.5 * squared)

    @graph_fn
    def _graph_fn_combine(self, policy_loss, value_loss):
        return policy_loss + self.weight_vf * value_loss

    def _mean_over_time(self, x):
        if self.time_axis is None:
            return x
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.reduce_mean(x, axis=self.time_axis)
        return x.mean(dim=self.time_axis)
