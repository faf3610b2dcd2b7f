"""`SACCore`: the root component of `SACAgent` (acting, memory, critics, losses, three optimizers)."""
from __future__ import annotations

import math
from typing import List, Optional

from rlgraph.agents.agent_core import AgentCore
from rlgraph.agents.records import check_record_keys
from rlgraph.agents.sac.networks import discrete_leaf_sizes, joint_action_index
from rlgraph.backend_system import get_backend
from rlgraph.components.common.synchronizable import Synchronizable
from rlgraph.components.component import Component
from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.components.loss_functions.sac_loss_function import SACLossFunction
from rlgraph.components.memories.prioritized_replay import PrioritizedReplay
from rlgraph.components.neural_networks.preprocessor_stack import PreprocessorStack
from rlgraph.components.policies.policy import Policy, leaf_of
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.nest import flatten_op


class SACCore(AgentCore):
    """Preprocessor, stochastic policy, twin critics and their targets, log-alpha, memory, losses, optimizers.

    One update (`update_from_memory`, `update_from_external_batch`) on a record (`RECORD_KEYS` of
    `rlgraph/agents/records.py`: s, a, r, d, s') with importance weights w (1 unless the memory
    is prioritized), with Q_i the critics, Q'_i the target critics, alpha = exp(log_alpha) and every
    gradient taken at the parameters before the update:

        a', logp' = pi(s');  a~, logp = pi(s)           # fresh samples (reparameterised)
        actor_loss, critic_loss, alpha_loss, td = loss_function.loss_from_record(dict(   # one keyed dict
            alpha=alpha, log_probs_next_sampled=logp', q_values_next_sampled=(Q'_i(s', a'))_i,
            q_values=(Q_i(s, a))_i, log_probs_sampled=logp, q_values_sampled=(Q_i(s, a~))_i,
            rewards=r, terminals=d, importance_weights=w))
          # y   = r + gamma (1 - d) (min_i Q'_i(s', a') - alpha logp')      # constant
          # critic_loss = mean(w sum_i 0.5 (Q_i(s, a) - y)^2);  td = mean_i |Q_i(s, a) - y|
          # actor_loss  = mean(alpha logp - min_i Q_i(s, a~))
          # alpha_loss  = mean(-log_alpha (logp + target_entropy))          # logp constant
        [prioritized memory]: priorities of the sampled records <- td
        critic, actor, alpha optimizers: one step each on their own variables
        [sync]: Q'_i <- tau Q_i + (1 - tau) Q'_i                         # the "_and_sync" APIs

    `SACLossFunction` computes the three losses. Continuous actions: logp sums the squashed
    Gaussians' log-probs over the action's elements and leaves (a Dict/Tuple of FloatBoxes). Discrete
    actions (Christodoulou 2019, https://arxiv.org/abs/1910.07207) take exact expectations over
    pi(.|s) instead of samples: logp' = sum_a pi(a|s') log pi(a|s'), min_i Q'_i(s', a') becomes
    sum_a pi(a|s') min_i Q'_i(s', a), and likewise for the actor's terms at s; the critics output
    one value per action and Q_i(s, a) picks the taken one. A Dict/Tuple of IntBoxes has one
    categorical per leaf, pi(a|s) = prod_k pi_k(a_k|s): the critics output one value per joint
    action (N = prod_k n_k, `joint_action_index` order), the expectations run over the joint
    pi(a|s) (the outer product of the leaves' probabilities), and sum_a pi(a|s) log pi(a|s) is the
    sum over the leaves of sum_{a_k} pi_k(a_k|s) log pi_k(a_k|s).

    Args:
        policy: The `Policy` (sampling; squashed Gaussians or one categorical).
        critics: One `SACCritic` per Q-function (two for twin Q), scoped "critic-0", "critic-1".
        preprocessing_spec: The preprocessor layer specs.
        memory: The in-graph replay memory ("replay-memory" or "prioritized-replay"), or None when
            the agent keeps a numpy memory next to the graph (then only the external-batch APIs learn).
        actor_optimizer: The actor's optimizer component.
        critic_optimizer: The critics' optimizer component.
        alpha_optimizer: The optimizer of log_alpha (None: alpha stays fixed).
        loss_function: The `SACLossFunction`.
        discrete: Whether the action space is discrete (one IntBox, or a Dict/Tuple of IntBoxes).
        initial_alpha: alpha at the start (> 0).
        sync_tau: tau of the soft target updates.
        scope: Default "sac-core".

    Sub-components: "preprocessor-stack", "policy", "critics" (holding "critic-i" and a
    "synchronizable"), "target-critics" (a frozen copy, plus "hard-sync" with tau 1), the memory,
    the loss function and the optimizers. Variable "<scope>/log-alpha" (trainable iff learned).

    API (batched):
        get_actions(states, time_percentage, use_exploration) -> (preprocessed_states, actions):
            samples (exploration) or the policy's mode
        get_actions_from_preprocessed_states(preprocessed_states, time_percentage, use_exploration)
        get_greedy_actions(states), get_greedy_actions_from_preprocessed_states(preprocessed_states)
        get_preprocessed_states(states), reset_preprocessor()
        get_q_values(preprocessed_states[, actions]) -> a tuple with one entry per critic: Q(s, a) [B]
            (continuous) or Q(s, .) [B, N] (discrete, no actions argument)
        get_alpha() -> alpha
        insert_records(records), get_memory_size(): with an in-graph memory
        update_from_memory(batch_size, time_percentage), with an in-graph memory, also as
            "..._and_sync": (actor_loss, critic_loss, alpha_loss, alpha), the losses and alpha
            before the step; a prioritized memory's priorities are updated in the same call
        update_priorities(indices, priorities): with an in-graph prioritized memory
        update_from_external_batch(records, importance_weights, time_percentage), also as
            "..._and_sync": (actor_loss, critic_loss, alpha_loss, alpha, td_errors [B])
        get_losses(records, importance_weights) -> the same without updating
        sync_targets(): the soft update; reset_targets(): a hard copy
        reset_exploration_noise(): new gSDE noise (a policy with `use_sde` adapters only)
    """

    def __init__(self, policy: Policy, critics: List[Component], preprocessing_spec: list, memory: Optional[Component],
                 actor_optimizer: Component, critic_optimizer: Component, alpha_optimizer: Optional[Component],
                 loss_function: SACLossFunction, discrete: bool, initial_alpha: float, sync_tau: float,
                 scope: str = "sac-core"):
        super().__init__(scope=scope)
        self.preprocessor = PreprocessorStack(*preprocessing_spec, scope="preprocessor-stack")
        self.policy = policy
        self.critic_list = list(critics)
        self.critics = Component(*self.critic_list, scope="critics")
        self.critics.add_components(Synchronizable(scope="synchronizable"))
        self.target_critics = self.critics.copy(scope="target-critics", trainable=False)
        self.target_critics.sub_components["synchronizable"].sync_tau = float(sync_tau)
        self.target_critics.add_components(Synchronizable(scope="hard-sync"))
        self.target_critic_list = [self.target_critics.sub_components[c.scope] for c in self.critic_list]
        self.memory = memory  # None: the agent keeps a numpy memory.
        self.prioritized = isinstance(memory, PrioritizedReplay)
        self.actor_optimizer = actor_optimizer
        self.critic_optimizer = critic_optimizer
        self.alpha_optimizer = alpha_optimizer
        self.loss_function = loss_function
        self.discrete = bool(discrete)
        self.leaf_sizes = discrete_leaf_sizes(policy.action_space) if self.discrete else None
        self.initial_alpha = float(initial_alpha)
        self.log_alpha = None
        optimizers = [actor_optimizer, critic_optimizer] + ([alpha_optimizer] if alpha_optimizer else [])
        self.add_components(self.preprocessor, self.policy, self.critics, self.target_critics,
                            *([memory] if memory is not None else []), self.loss_function, *optimizers)
        # The Q-value API takes the actions only for continuous actions (the discrete critics give Q(s, .)).
        q_api = SACCore._discrete_q_values if self.discrete else SACCore._continuous_q_values
        rlgraph_api(component=self, name="get_q_values", no_grad=True)(q_api)
        if memory is not None:
            rlgraph_api(component=self, name="insert_records")(SACCore._insert_records)
            rlgraph_api(component=self, name="get_memory_size", no_grad=True)(SACCore._get_memory_size)
            for name, sync in (("update_from_memory", False), ("update_from_memory_and_sync", True)):
                rlgraph_api(component=self, name=name)(_memory_update(sync))
        if self.prioritized:
            rlgraph_api(component=self, name="update_priorities")(SACCore._update_priorities)
        for name, sync in (("update_from_external_batch", False), ("update_from_external_batch_and_sync", True)):
            rlgraph_api(component=self, name=name)(_external_update(sync))
        if not policy.sde_keys:
            self.switch_off_apis(["reset_exploration_noise"])

    def create_variables(self, input_spaces, action_space=None):
        self.log_alpha = self.get_variable("log-alpha", initializer=math.log(self.initial_alpha),
                                           trainable=self.alpha_optimizer is not None)

    # --- Acting (the API: `AgentCore`) ------------------------------------------------------------
    def _act(self, preprocessed_states, time_percentage, use_exploration):
        if self.policy.sde_keys:  # gSDE: the samples of those leaves are mean + the policy's noise.
            parameters, noise = self.policy.get_adapter_outputs_and_noise(preprocessed_states)
            return self._graph_fn_draw_with_noise(parameters, noise, use_exploration)
        return self._graph_fn_draw(self.policy.get_adapter_outputs(preprocessed_states), use_exploration)

    def _greedy(self, preprocessed_states):
        return self.policy.get_deterministic_action(preprocessed_states)

    def _continuous_q_values(self, preprocessed_states, actions):
        return tuple(c.get_q_values(preprocessed_states, actions) for c in self.critic_list)

    def _discrete_q_values(self, preprocessed_states):
        return tuple(c.get_q_values(preprocessed_states) for c in self.critic_list)

    @rlgraph_api(no_grad=True)
    def get_alpha(self):
        return self._graph_fn_alpha()

    # --- Memory, targets ------------------------------------------------------------------------
    @rlgraph_api(no_grad=True)
    def sync_targets(self):
        values = self.critics.sub_components["synchronizable"].get_sync_values()
        return self.target_critics.sub_components["synchronizable"].sync(values)

    @rlgraph_api
    def reset_exploration_noise(self):
        """gSDE: new exploration noise for the policy (only with a gSDE policy, else switched off)."""
        return self.policy.reset_noise()

    @rlgraph_api(no_grad=True)
    def reset_targets(self):
        values = self.critics.sub_components["synchronizable"].get_sync_values()
        return self.target_critics.sub_components["hard-sync"].sync(values)

    # --- Learning -------------------------------------------------------------------------------
    @rlgraph_api(no_grad=True)
    def get_losses(self, records, importance_weights):
        check_record_keys(records, f"{self.global_scope}.get_losses(records)")
        alpha = self._graph_fn_alpha()
        actor_loss, critic_loss, alpha_loss, td_errors = self._losses(records, importance_weights, alpha)
        return actor_loss, critic_loss, alpha_loss, alpha, td_errors

    def _update_from_memory(self, batch_size, time_percentage, sync):
        if self.prioritized:
            records, indices, weights = self.memory.get_records(batch_size)
        else:
            records = self.memory.get_records(batch_size)
            weights = self._graph_fn_ones_like(records["rewards"])
        actor_loss, critic_loss, alpha_loss, alpha, td_errors = self._update(records, weights, time_percentage, sync)
        if self.prioritized:
            self.memory.update_records(indices, td_errors)
        return actor_loss, critic_loss, alpha_loss, alpha

    def _update(self, records, importance_weights, time_percentage, sync):
        alpha = self._graph_fn_alpha()
        actor_loss, critic_loss, alpha_loss, td_errors = self._losses(records, importance_weights, alpha)
        # All gradients first, at the same parameters: an applied step would change (in place) the
        # critic weights that the actor loss differentiates through.
        steps = [(self.critic_optimizer, self._graph_fn_critic_variables(), critic_loss),
                 (self.actor_optimizer, self._graph_fn_actor_variables(), actor_loss)]
        if self.alpha_optimizer is not None:
            steps.append((self.alpha_optimizer, self._graph_fn_alpha_variables(), alpha_loss))
        gradients = [optimizer.calculate_gradients(variables, loss) for optimizer, variables, loss in steps]
        for (optimizer, variables, _), grads in zip(steps, gradients):
            optimizer.apply_gradients(variables, grads, time_percentage)
        if sync:
            self.sync_targets()
        return actor_loss, critic_loss, alpha_loss, alpha, td_errors

    def _losses(self, records, importance_weights, alpha):
        """(actor_loss, critic_loss, alpha_loss, td_errors [B]): batch means and the absolute TD
        errors (see the class docstring)."""
        s, s_next = records["states"], records["next_states"]
        if self.discrete:
            _, probs_next, log_probs_next = self.policy.get_logits_probabilities_log_probs(s_next)
            qt_next = tuple(t.get_q_values(s_next) for t in self.target_critic_list)
            logp_next, v_next = self._graph_fn_expectations(probs_next, log_probs_next, qt_next)
            q_s = [c.get_q_values(s) for c in self.critic_list]
            q = tuple(self._graph_fn_taken(q_i, records["actions"]) for q_i in q_s)
            _, probs, log_probs = self.policy.get_logits_probabilities_log_probs(s)
            logp, v = self._graph_fn_expectations(probs, log_probs, tuple(q_s))
            # The loss takes min over the heads of these: the expectations already hold the min.
            q_next_sampled, q_sampled = (v_next,) * len(q), (v,) * len(q)
        else:
            a_next, log_probs_next = self.policy.get_action_and_log_prob(s_next)
            logp_next = self._graph_fn_joint_log_prob(log_probs_next)
            q_next_sampled = tuple(t.get_q_values(s_next, a_next) for t in self.target_critic_list)
            q = tuple(c.get_q_values(s, records["actions"]) for c in self.critic_list)
            a_new, log_probs = self.policy.get_action_and_log_prob(s)
            logp = self._graph_fn_joint_log_prob(log_probs)
            q_sampled = tuple(c.get_q_values(s, a_new) for c in self.critic_list)
        if len(q) == 1:
            q, q_next_sampled, q_sampled = q[0], q_next_sampled[0], q_sampled[0]
        return self.loss_function.loss_from_record(dict(
            alpha=alpha, log_probs_next_sampled=logp_next, q_values_next_sampled=q_next_sampled, q_values=q,
            log_probs_sampled=logp, q_values_sampled=q_sampled, rewards=records["rewards"],
            terminals=records["terminals"], importance_weights=importance_weights))

    # --- Graph functions ------------------------------------------------------------------------
    @graph_fn
    def _graph_fn_draw(self, parameters, use_exploration):
        """Actions nested like the action space: samples if `use_exploration`, else the modes."""
        return self._draw(parameters, use_exploration, {})

    @graph_fn
    def _graph_fn_draw_with_noise(self, parameters, noise, use_exploration):
        """As `_graph_fn_draw`; the samples of the gSDE leaves (keys of `noise`) are mean + noise."""
        return self._draw(parameters, use_exploration, noise)

    def _draw(self, parameters, use_exploration, noise: dict):
        def draw(deterministic):
            flat = {}
            for key, distribution in self.policy.distributions.items():
                leaf = leaf_of(parameters, key)
                if key in noise and not deterministic:
                    flat[key] = distribution._with_noise(leaf, noise[key])[0]
                else:
                    flat[key] = distribution.get_distribution(leaf).sample(deterministic)
            return flat[""] if list(flat) == [""] else self.policy.action_space.unflatten(flat)
        return backend_maths().cond(use_exploration, lambda: draw(False), lambda: draw(True),
                                    where=f"{self.global_scope}.get_actions(use_exploration)")

    @graph_fn
    def _graph_fn_alpha(self):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.exp(self.log_alpha)
        import torch
        return torch.exp(self.log_alpha)

    @graph_fn
    def _graph_fn_joint_log_prob(self, log_probs):
        """log pi(a|s) [B]: the per-element log-probs summed over each leaf's elements and over the leaves."""
        leaves = list(flatten_op(log_probs).values())
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.add_n([tf.reduce_sum(tf.reshape(x, [tf.shape(x)[0], -1]), axis=-1) for x in leaves])
        return sum(x.reshape(x.shape[0], -1).sum(dim=-1) for x in leaves)

    @graph_fn(returns=2)
    def _graph_fn_expectations(self, probs, log_probs, q_heads):
        """(sum_a pi(a) log pi(a), sum_a pi(a) min_i Q_i(a)), each [B]. `probs` and `log_probs` are
        [B, n], or nested per IntBox leaf [B, n_k]: then pi is the joint (outer product, in
        `joint_action_index` order) over the [B, N] Q-values and the expected log-prob is the sum
        of the leaves' expected log-probs (the joint's, as the leaves are independent)."""
        probs, log_probs = list(flatten_op(probs).values()), list(flatten_op(log_probs).values())
        if get_backend() == "tf":
            import tensorflow as tf
            min_q = tf.reduce_min(tf.stack(list(q_heads)), axis=0)
            joint = probs[0]
            for p in probs[1:]:
                joint = tf.reshape(joint[:, :, None] * p[:, None, :], [tf.shape(joint)[0], -1])
            expected_log_pi = tf.add_n([tf.reduce_sum(p * lp, axis=-1) for p, lp in zip(probs, log_probs)])
            return expected_log_pi, tf.reduce_sum(joint * min_q, axis=-1)
        import torch
        min_q = torch.stack(list(q_heads)).min(dim=0).values
        joint = probs[0]
        for p in probs[1:]:
            joint = (joint[:, :, None] * p[:, None, :]).reshape(joint.shape[0], -1)
        expected_log_pi = sum((p * lp).sum(dim=-1) for p, lp in zip(probs, log_probs))
        return expected_log_pi, (joint * min_q).sum(dim=-1)

    @graph_fn
    def _graph_fn_taken(self, q, actions):
        """Q(s, a) [B] of the taken actions a (one IntBox [B], or nested per leaf) from Q(s, .) [B, N]."""
        if get_backend() == "tf":
            import tensorflow as tf
            index = joint_action_index(tf.nest.map_structure(lambda a: tf.cast(a, tf.int32), actions),
                                       self.leaf_sizes)
            return tf.gather(q, index, batch_dims=1)
        index = joint_action_index(actions, self.leaf_sizes)
        return q.gather(-1, index.long().unsqueeze(-1)).squeeze(-1)

    @graph_fn
    def _graph_fn_actor_variables(self):
        return self.policy.get_variables(custom_scope_separator="-", trainable_only=True)

    @graph_fn
    def _graph_fn_critic_variables(self):
        return self.critics.get_variables(custom_scope_separator="-", trainable_only=True)

    @graph_fn
    def _graph_fn_alpha_variables(self):
        return {"log-alpha": self.log_alpha}


def _memory_update(sync: bool):
    def update_from_memory(self, batch_size, time_percentage):
        return self._update_from_memory(batch_size, time_percentage, sync)
    return update_from_memory


def _external_update(sync: bool):
    def update_from_external_batch(self, records, importance_weights, time_percentage):
        check_record_keys(records, f"{self.global_scope}.update_from_external_batch(records)")
        return self._update(records, importance_weights, time_percentage, sync)
    return update_from_external_batch
