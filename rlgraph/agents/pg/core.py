"""`PolicyGradientCore`: the root component of the on-policy agents (PPO, actor-critic)."""
from __future__ import annotations

from typing import Optional

from rlgraph.agents.agent_core import AgentCore
from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.components.loss_functions.actor_critic_loss_function import ActorCriticLossFunction
from rlgraph.components.loss_functions.ppo_loss_function import PPOLossFunction
from rlgraph.components.neural_networks.preprocessor_stack import PreprocessorStack
from rlgraph.spaces import Dict, FloatBox, Space
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.nest import flatten_op

# The keys of the batch an update learns from (all [B, ...], states preprocessed).
PG_BATCH_KEYS = ("states", "actions", "log_probs", "values", "advantages", "value_targets")


def pg_batch_space(state_space: Space, action_space: Space) -> Dict:
    """The space of a policy-gradient update batch (`PG_BATCH_KEYS`) for spaces without batch rank."""
    return Dict(states=state_space.strip_ranks(), actions=action_space.strip_ranks(), log_probs=FloatBox(),
                values=FloatBox(), advantages=FloatBox(), value_targets=FloatBox(), add_batch_rank=True)


class PolicyGradientCore(AgentCore):
    """Preprocessor, stochastic policy, state-value baseline, loss and optimizer(s).

    The baseline is a `ValueFunction` of its own (the config's `value_function_spec`) or a value
    head on the policy's network (a `SharedValueFunctionPolicy`). One update reads one batch
    (`PG_BATCH_KEYS`): states s_t, actions a_t, the behaviour log-probs log mu(a_t|s_t) and values
    v_old(s_t) of the acting weights, the advantages A_t and the value targets G_t = A_t + v_old(s_t)
    (GAE, computed by the agent). log pi sums over the action leaves (and the elements of a
    FloatBox), and so does the entropy H. The update on one screen:

        log_pi, H = policy.get_log_prob_and_entropy(s_t, a_t)     # summed over the action leaves
        record = {"log_probs": log_pi, "entropy": H, "values": V(s_t),          # computed here
                  "advantages": A_t, "value_targets": G_t, "weight_entropy": w_H,  # the batch's, the schedule's
                  # PPO also: the batch's behaviour log-probs and values, and this update's epsilon
                  "prev_log_probs": log_mu, "prev_values": v_old, "clip_ratio": eps}
        loss, loss_per_item, L_pi, L_v = loss_function.loss_from_record(record)
        one optimizer:   step(policy + value variables, loss)
        two optimizers:  step(policy variables, mean(L_pi)); step(value variables, mean(L_v))

    The loss function (a sub-component) is `PPOLossFunction` for "ppo" (numpy reference
    `rlgraph.utils.numpy.ppo_loss`) and `ActorCriticLossFunction` (given advantages) for "a2c":

        PPO:  L_pi = -min(rho * A_t, clip(rho, 1 - eps, 1 + eps) * A_t) - w_H * H,  rho = exp(log_pi - log_mu)
        A2C:  L_pi = -weight_pg * log_pi * A_t - w_H * H
        both: L_v = 0.5 * (V(s_t) - G_t)^2  (PPO: the max with the clipped error when value_function_clipping);
              loss_per_item = L_pi + weight_vf * L_v

    `clip_ratio` and `weight_entropy` are inputs of `update_from_batch`, so schedules of them are
    evaluated by the agent per update.

    API (all batched; the acting API of `AgentCore`: samples of the policy, or its most likely actions):
        get_state_values(preprocessed_states) -> V(s) [B]
        evaluate_transitions(preprocessed_states, actions, next_states) -> (log pi(a|s) [B], V(s) [B], V(s') [B])
        update_from_batch(batch, time_percentage, clip_ratio, weight_entropy)
            -> (loss, loss_per_item [B], policy_loss, value_loss, entropy): one optimizer step
        get_batch_losses(batch, clip_ratio, weight_entropy): the same numbers without a step
        reset_exploration_noise(): new gSDE noise (a policy with `use_sde` adapters only)
    """

    def __init__(self, policy: Component, value_function: Optional[Component], preprocessing_spec: list,
                 optimizer: Component, value_function_optimizer: Optional[Component], loss: str = "ppo",
                 value_function_clipping: Optional[float] = None, weight_vf: float = 0.5, weight_pg: float = 1.0,
                 scope: str = "policy-gradient-core"):
        super().__init__(scope=scope)
        self.preprocessor = PreprocessorStack(*preprocessing_spec, scope="preprocessor-stack")
        self.policy = policy
        self.value_function = value_function  # None: the policy's own value head.
        self.optimizer = optimizer
        self.value_function_optimizer = value_function_optimizer
        self.loss_kind = loss
        self.weight_vf = float(weight_vf)
        self.weight_pg = float(weight_pg)  # "a2c" only.
        self.value_function_clipping = value_function_clipping
        if loss == "ppo":
            self.loss_function = PPOLossFunction(value_function_clipping=value_function_clipping, weight_vf=weight_vf)
        else:
            # Advantages come computed (GAE): the record has no rewards, so no reward clipping either.
            self.loss_function = ActorCriticLossFunction(reward_clipping=None, weight_pg=weight_pg,
                                                         weight_baseline=weight_vf)
        components = [self.preprocessor, self.policy, self.loss_function, self.optimizer]
        components += [c for c in (value_function, value_function_optimizer) if c is not None]
        self.add_components(*components)
        if not getattr(policy, "sde_keys", None):
            self.switch_off_apis(["reset_exploration_noise"])

    # --- Acting (the API: `AgentCore`) ------------------------------------------------------------
    def _act(self, preprocessed_states, time_percentage, use_exploration):
        return self.policy.get_stochastic_action(preprocessed_states)

    def _greedy(self, preprocessed_states):
        return self.policy.get_deterministic_action(preprocessed_states)

    @rlgraph_api
    def reset_exploration_noise(self):
        """gSDE: new exploration noise for the policy (only with a gSDE policy, else switched off)."""
        return self.policy.reset_noise()

    # --- Values and log-probs -------------------------------------------------------------------
    def _values(self, preprocessed_states):
        if self.value_function is None:
            return self._graph_fn_squeeze(self.policy.get_state_values(preprocessed_states))
        return self._graph_fn_squeeze(self.value_function.value_output(preprocessed_states))

    @rlgraph_api(no_grad=True)
    def get_state_values(self, preprocessed_states):
        return self._values(preprocessed_states)

    def _values_log_probs_entropies(self, states, actions):
        """(V(s) [B], log pi(a|s) nested, entropies nested); with a value head on the policy's network
        (no value function of its own), from one pass of that network."""
        if self.value_function is None:
            values, log_probs, entropies = self.policy.get_state_values_log_prob_and_entropy(states, actions)
            return self._graph_fn_squeeze(values), log_probs, entropies
        log_probs, entropies = self.policy.get_log_prob_and_entropy(states, actions)
        return self._values(states), log_probs, entropies

    @rlgraph_api(no_grad=True)
    def evaluate_transitions(self, preprocessed_states, actions, next_states):
        values, log_probs, _ = self._values_log_probs_entropies(preprocessed_states, actions)
        return self._graph_fn_sum_leaves(log_probs), values, self._values(next_states)

    # --- Learning -------------------------------------------------------------------------------
    def _losses(self, batch, clip_ratio, weight_entropy):
        """(loss, loss per item [B], policy loss per item [B], value loss per item [B], entropy [B]) of a batch."""
        values, log_probs, entropies = self._values_log_probs_entropies(batch["states"], batch["actions"])
        entropy = self._graph_fn_sum_leaves(entropies)
        # One keyed record for the loss: what is computed here and the batch's fields it reads.
        record = {"log_probs": self._graph_fn_sum_leaves(log_probs), "entropy": entropy,
                  "values": values, "advantages": batch["advantages"],
                  "value_targets": batch["value_targets"], "weight_entropy": weight_entropy}
        if self.loss_kind == "ppo":
            # The batch's `log_probs` and `values` are the acting weights' (PPO's old policy and values).
            record.update(prev_log_probs=batch["log_probs"], prev_values=batch["values"], clip_ratio=clip_ratio)
        loss, loss_per_item, policy_loss, value_loss = self.loss_function.loss_from_record(record)
        return loss, loss_per_item, policy_loss, value_loss, entropy

    @rlgraph_api
    def update_from_batch(self, batch, time_percentage, clip_ratio, weight_entropy):
        loss, loss_per_item, policy_loss, value_loss, entropy = self._losses(batch, clip_ratio, weight_entropy)
        pi_mean, v_mean, entropy_mean = self._graph_fn_means(policy_loss, value_loss, entropy)
        if self.value_function_optimizer is None:
            self.optimizer.step(self._graph_fn_variables(True), loss, loss_per_item, time_percentage)
        else:
            self.optimizer.step(self._graph_fn_variables(False), pi_mean, policy_loss, time_percentage)
            self.value_function_optimizer.step(self._graph_fn_value_variables(), v_mean, value_loss, time_percentage)
        return loss, loss_per_item, pi_mean, v_mean, entropy_mean

    @rlgraph_api(no_grad=True)
    def get_batch_losses(self, batch, clip_ratio, weight_entropy):
        loss, loss_per_item, policy_loss, value_loss, entropy = self._losses(batch, clip_ratio, weight_entropy)
        return (loss, loss_per_item) + self._graph_fn_means(policy_loss, value_loss, entropy)

    # --- Graph functions ------------------------------------------------------------------------
    @graph_fn
    def _graph_fn_squeeze(self, values):
        """[B, 1] -> [B]."""
        return values[:, 0]

    @graph_fn
    def _graph_fn_sum_leaves(self, nested):
        """Sums a nested per-leaf quantity (log-probs, entropies) over the leaves and their elements: [B]."""
        total = None
        for leaf in flatten_op(nested).values():
            if get_backend() == "tf":
                import tensorflow as tf
                leaf = tf.reduce_sum(tf.reshape(leaf, [tf.shape(leaf)[0], -1]), axis=1)
            else:
                leaf = leaf.reshape(leaf.shape[0], -1).sum(dim=1)
            total = leaf if total is None else total + leaf
        return total

    @graph_fn(returns=3)
    def _graph_fn_means(self, policy_loss, value_loss, entropy):
        per_items = (policy_loss, value_loss, entropy)
        if get_backend() == "tf":
            import tensorflow as tf
            return tuple(tf.reduce_mean(x) for x in per_items)
        return tuple(x.mean() for x in per_items)

    @graph_fn
    def _graph_fn_variables(self, with_value_function: bool):
        # Keyed by global names: relative ones collide (the policy's and the value function's
        # networks both hold "neural-network-dense-kernel"), and the merge would drop the policy's.
        variables = dict(self.policy.get_variables(custom_scope_separator="-", trainable_only=True,
                                                   global_scope=True))
        if with_value_function and self.value_function is not None:
            variables.update(self.value_function.get_variables(custom_scope_separator="-", trainable_only=True,
                                                               global_scope=True))
        return variables

    @graph_fn
    def _graph_fn_value_variables(self):
        return self.value_function.get_variables(custom_scope_separator="-", trainable_only=True)
