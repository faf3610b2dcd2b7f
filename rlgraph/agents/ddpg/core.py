"""`DDPGCore`: the root component of `DDPGAgent` (acting, memory, critic and actor steps, target syncs)."""
from __future__ import annotations

from typing import Optional, Tuple

import numpy as np

from rlgraph.agents.records import check_record_keys
from rlgraph.agents.agent_core import AgentCore
from rlgraph.backend_system import get_backend
from rlgraph.components.common.synchronizable import Synchronizable
from rlgraph.components.component import Component
from rlgraph.components.explorations.exploration import Exploration
from rlgraph.components.explorations.noise.ornstein_uhlenbeck_noise import OrnsteinUhlenbeckNoise
from rlgraph.components.loss_functions.ddpg_loss_function import DDPGLossFunction
from rlgraph.components.memories.prioritized_replay import PrioritizedReplay
from rlgraph.components.neural_networks.preprocessor_stack import PreprocessorStack
from rlgraph.utils import torch_random
from rlgraph.utils.decorators import graph_fn, rlgraph_api

# (critic step, actor step, sync the stepped parts' targets) -> (root API from the memory, root API
# from an external record). The targets of the parts stepped follow them, except in the updates
# between two delayed ones (policy_delay > 1, TD3): there the critics step and no target moves.
UPDATE_APIS = {
    (True, True, True): ("update_from_memory", "update_from_external_batch"),
    (True, False, True): ("update_critic_from_memory", "update_critic_from_external_batch"),
    (False, True, True): ("update_actor_from_memory", "update_actor_from_external_batch"),
    (False, False, True): ("get_losses_from_memory", "get_losses"),
}
DELAYED_UPDATE_APIS = {
    (True, False, False): ("update_critic_unsynced_from_memory", "update_critic_unsynced_from_external_batch"),
}


def update_apis(critic_step: bool, actor_step: bool, sync_targets: bool) -> Tuple[str, str]:
    """(root API from the memory, from an external record) of an update that steps the critic(s)
    and/or the actor, and moves the targets of the parts stepped or not (`sync_targets`; without
    a critic step only the actor's target can move, and it moves with every actor step)."""
    if not critic_step:
        return UPDATE_APIS[(False, actor_step, True)]
    return (UPDATE_APIS if sync_targets else DELAYED_UPDATE_APIS)[(True, actor_step, sync_targets)]


class DDPGCore(AgentCore):
    """Preprocessor, actor mu and critic Q (or twin critics Q_1, Q_2) with their targets, noise, memory,
    losses, two optimizers.

    One update reads one record (`rlgraph/agents/records.py`: states preprocessed; n-step records
    hold the n discounted rewards) with importance weights w (1 unless the memory is prioritized)
    and runs, in one executor call (numpy reference: `tests/ddpg_reference.py`):

        a'_tp1 = mu'(s_tp1)     [target_noise > 0: clip(mu'(s_tp1) + clip(eps, -c, c), low, high),
                                 eps ~ N(0, target_noise^2) per item and element]      # TD3's smoothing
        y = r_t + gamma**n * (1 - d_t) * Q'(s_tp1, a'_tp1)     [twin: min(Q'_1, Q'_2)]  # no gradient
        td = y - Q(s_t, a_t)                                  [twin: td of Q_1; Q_2 regresses to y too]
        critic_loss = mean(w * (huber(td, critic_gradient_clip) or 0.5 td^2)) + c_reg * sum_w sum(w^2)
        critic_optimizer.step(Q's variables, critic_loss)            # if past warmup_critic_steps
        [prioritized memory]: priorities of the sampled records <- |td|
        a = mu(s_t);  g = dQ(s_t, a)/da (with the critic just updated; twin: Q_1)
        g = invert(g, a) if invert_gradients                          # Hausknecht & Stone 2016
        actor_loss = -mean(Q(s_t, a)); the actor's gradient is -mean_b(g_b . da_b/dtheta)
        actor_optimizer.step(mu's variables)                          # if past warmup_actor_steps
        Q' <- tau_c Q + (1 - tau_c) Q';  mu' <- tau_a mu + (1 - tau_a) mu'   # of the parts stepped

    with invert(g, a) = g * (p_max - a) / (p_max - p_min) where g > 0, else g * (a - p_min) /
    (p_max - p_min). The losses are two `DDPGLossFunction`s read by key ("critic-loss": its critic
    part, "actor-loss": its actor part; the actor's record is made after the critic's step): the
    core builds each record, and owns the critic's variables, so it passes their sum of squares
    as "critic_weights_l2". Which parts step is fixed per root API method (`UPDATE_APIS`); every
    variant returns (critic_loss, actor_loss, td [B]) computed before its own steps (the actor
    loss with the critic after its step). The agent picks the variant per update (`update_apis`):
    with a policy delay d > 1 (TD3) the actor steps and all targets move only on every d-th update;
    the updates between step the critics alone (`DELAYED_UPDATE_APIS`).

    Acting: mu(s) (+ the exploration noise) clipped to the action bounds.

    Args:
        actor: A `DeterministicActor` (scope "actor").
        critic: A `QCritic` (scope "critic"); with `num_critics` 2 a copy of it is the second
            critic (scope "critic-2", its target "target-critic-2").
        preprocessing_spec: Preprocessor specs of the `PreprocessorStack`.
        exploration: The `Exploration` with a noise (one FloatBox action).
        memory: An in-graph "replay-memory" or "prioritized-replay", or None when the agent keeps a
            numpy memory (then only the external-batch APIs learn).
        actor_optimizer: The actor's optimizer (its scope distinct from the critic's).
        critic_optimizer: The critic's optimizer.
        discount: gamma.
        n_step: n of the records' n-step returns (the bootstrap discount is gamma ** n).
        actor_tau: The actor's soft target update rate in (0, 1].
        critic_tau: The critic's soft target update rate in (0, 1].
        critic_regularization: c_reg >= 0 (L2 on all trainable critic variables).
        huber_delta: The Huber delta on td (None: 0.5 td^2).
        inverter_bounds: (p_min, p_max) arrays shaped like the action for gradient inverting, or
            None for none.
        action_low: The action's lower bound (an array shaped like the action).
        action_high: The action's upper bound (an array shaped like the action).
        num_critics: 1, or 2 for twin critics (TD3's clipped double Q-learning).
        policy_delay: d >= 1: d > 1 adds the API variants of `DELAYED_UPDATE_APIS`.
        target_noise: The stddev of the target policy smoothing noise per action element (an array
            shaped like the action, in action units), or None for no smoothing.
        target_noise_clip: c, the bound of that noise per element (an array), or None (unclipped).
        scope: The root's scope (the agent's name).

    API (all batched):
        get_actions(states, time_percentage, use_exploration) -> (preprocessed_states, actions)
        get_actions_from_preprocessed_states(preprocessed_states, time_percentage, use_exploration)
        get_greedy_actions(states) -> (preprocessed_states, mu(s) clipped)
        get_greedy_actions_from_preprocessed_states(preprocessed_states)
        get_preprocessed_states(states)
        get_q_values(preprocessed_states, actions) -> Q [B] (critic 1)
        get_target_actions(preprocessed_states) -> the target actions a' of the critics' target
        insert_records(records); get_memory_size(): with an in-graph memory
        update_from_memory(batch_size, time_percentage) and the variants of `UPDATE_APIS`, with an
            in-graph memory -> (critic_loss, actor_loss, td [B]); a prioritized memory's
            priorities are updated in the same call
        update_priorities(indices, priorities): with an in-graph prioritized memory
        update_from_external_batch(records, importance_weights, time_percentage) and its
            variants; get_losses(records, importance_weights, time_percentage)
        reset_noise() (Ornstein-Uhlenbeck noise only); reset_preprocessor()

    Raises:
        RLGraphError: When a record argument is not a dict with the `RECORD_KEYS`.
    """

    def __init__(self, actor: Component, critic: Component, preprocessing_spec: list, exploration: Exploration,
                 memory: Optional[Component], actor_optimizer: Component, critic_optimizer: Component,
                 discount: float, n_step: int, actor_tau: float, critic_tau: float, critic_regularization: float,
                 huber_delta: Optional[float], inverter_bounds: Optional[Tuple[np.ndarray, np.ndarray]],
                 action_low: np.ndarray, action_high: np.ndarray, num_critics: int = 1, policy_delay: int = 1,
                 target_noise: Optional[np.ndarray] = None, target_noise_clip: Optional[np.ndarray] = None,
                 scope: str = "ddpg-core"):
        super().__init__(scope=scope)
        self.preprocessor = PreprocessorStack(*preprocessing_spec, scope="preprocessor-stack")
        self.actor = actor
        # (Copied before `_target_of` adds its synchronizer to the first.)
        self.critics = [critic] + [critic.copy(scope=f"critic-{i + 1}") for i in range(1, num_critics)]
        self.target_actor = self._target_of(actor, "target-actor", actor_tau)
        self.target_critics = [self._target_of(c, "target-" + c.scope, critic_tau) for c in self.critics]
        self.critic, self.target_critic = self.critics[0], self.target_critics[0]
        self.target_noise = None if target_noise is None else np.asarray(target_noise, np.float32)
        self.target_noise_clip = None if target_noise_clip is None else np.asarray(target_noise_clip, np.float32)
        self.exploration = exploration
        self.memory = memory  # None: the agent keeps a numpy memory.
        self.prioritized = isinstance(memory, PrioritizedReplay)
        self.actor_optimizer, self.critic_optimizer = actor_optimizer, critic_optimizer
        self.critic_regularization = float(critic_regularization)
        self.inverter_bounds = inverter_bounds
        loss_args = dict(discount=float(discount) ** int(n_step), huber_delta=huber_delta,
                         critic_regularization=critic_regularization, inverter_bounds=inverter_bounds)
        self.critic_loss = DDPGLossFunction(parts=("critic",), num_critics=num_critics, scope="critic-loss",
                                            **loss_args)
        self.actor_loss = DDPGLossFunction(parts=("actor",), scope="actor-loss", **loss_args)
        self.action_low = np.asarray(action_low, np.float32)
        self.action_high = np.asarray(action_high, np.float32)
        self.add_components(self.preprocessor, actor, *self.critics, self.target_actor, *self.target_critics,
                            exploration, actor_optimizer, critic_optimizer, self.critic_loss, self.actor_loss,
                            *([memory] if memory is not None else []))
        apis = {**UPDATE_APIS, **(DELAYED_UPDATE_APIS if policy_delay > 1 else {})}
        for (critic_step, actor_step, sync), (from_memory, external) in apis.items():
            no_grad = not (critic_step or actor_step)
            if memory is not None:
                rlgraph_api(component=self, name=from_memory, no_grad=no_grad)(
                    _MemoryUpdate(from_memory, critic_step, actor_step, sync))
            rlgraph_api(component=self, name=external, no_grad=no_grad)(
                _ExternalUpdate(external, critic_step, actor_step, sync))
        if memory is not None:
            rlgraph_api(component=self, name="insert_records")(DDPGCore._insert_records)
            rlgraph_api(component=self, name="get_memory_size", no_grad=True)(DDPGCore._get_memory_size)
        if self.prioritized:
            rlgraph_api(component=self, name="update_priorities")(DDPGCore._update_priorities)
        if isinstance(exploration.noise, OrnsteinUhlenbeckNoise):
            rlgraph_api(component=self, name="reset_noise", no_grad=True)(DDPGCore._reset_noise)

    @staticmethod
    def _target_of(online: Component, scope: str, tau: float) -> Component:
        online.add_components(Synchronizable(scope="synchronizable"))
        target = online.copy(scope=scope, trainable=False)
        target.sub_components["synchronizable"].sync_tau = float(tau)
        return target

    # --- Acting (the API: `AgentCore`) ------------------------------------------------------------
    def _greedy(self, preprocessed_states):
        return self._graph_fn_clip_to_bounds(self.actor.get_action(preprocessed_states))

    def _act(self, preprocessed, time_percentage, use_exploration):
        mu = self.actor.get_action(preprocessed)
        return self._graph_fn_clip_to_bounds(self.exploration.get_action(mu, time_percentage, use_exploration))

    @rlgraph_api(no_grad=True)
    def get_q_values(self, preprocessed_states, actions):
        return self.critic.get_q_values(preprocessed_states, actions)

    @rlgraph_api(no_grad=True)
    def get_target_actions(self, preprocessed_states):
        return self._target_actions(preprocessed_states)

    def _target_actions(self, preprocessed_states):
        """a' = mu'(s'), with the target policy smoothing if `target_noise` is set."""
        actions = self.target_actor.get_action(preprocessed_states)
        if self.target_noise is None:
            return actions
        return self._graph_fn_clip_to_bounds(self._graph_fn_add_target_noise(actions))

    def _reset_noise(self):
        return self.exploration.noise.reset()

    # --- Memory and learning --------------------------------------------------------------------
    def _update_from_memory(self, batch_size, time_percentage, critic_step: bool, actor_step: bool, sync: bool):
        if self.prioritized:
            records, indices, weights = self.memory.get_records(batch_size)
        else:
            records = self.memory.get_records(batch_size)
            weights = self._graph_fn_ones_like(records["rewards"])
        critic_loss, actor_loss, td = self._update(records, weights, time_percentage, critic_step, actor_step,
                                                   sync)
        if self.prioritized:
            self.memory.update_records(indices, td)
        return critic_loss, actor_loss, td

    def _update(self, records, importance_weights, time_percentage, critic_step: bool, actor_step: bool,
                sync: bool = True):
        """The update of the class docstring; the flags say which optimizers step and whether the
        critics' targets follow a critic step (the actor's follows every actor step)."""
        states, next_states = records["states"], records["next_states"]
        next_actions = self._target_actions(next_states)
        critic_record = {"rewards": records["rewards"], "terminals": records["terminals"],
                         "importance_weights": importance_weights}
        for i, (online, target) in enumerate(zip(self.critics, self.target_critics)):
            suffix = "" if i == 0 else f"_{i + 1}"
            critic_record["q_values" + suffix] = online.get_q_values(states, records["actions"])
            critic_record["qt_values_sp" + suffix] = target.get_q_values(next_states, next_actions)
        if self.critic_regularization > 0:
            critic_record["critic_weights_l2"] = self._graph_fn_critic_l2()
        critic = self.critic_loss.loss_from_record(critic_record)
        critic_loss = critic["critic_loss"]
        if critic_step:
            critic_loss, _ = self.critic_optimizer.step(self._graph_fn_critic_variables(), critic_loss,
                                                        critic["critic_loss_per_item"], time_percentage)
        mu = self.actor.get_action(states)
        actor_record = {"q_values_mu": self.critic.get_q_values(states, mu)}  # (The critic after its step.)
        if self.inverter_bounds is not None:
            actor_record["actions_mu"] = mu
        actor = self.actor_loss.loss_from_record(actor_record)
        if actor_step:
            self.actor_optimizer.step(self._graph_fn_actor_variables(), actor["actor_surrogate"],
                                      actor["actor_surrogate_per_item"], time_percentage)
        if critic_step and sync:
            for online, target in zip(self.critics, self.target_critics):
                target.sub_components["synchronizable"].sync(online.sub_components["synchronizable"].get_sync_values())
        if actor_step:
            self.target_actor.sub_components["synchronizable"].sync(
                self.actor.sub_components["synchronizable"].get_sync_values())
        return critic_loss, actor["actor_loss"], critic["td_errors"]

    # --- Graph functions ------------------------------------------------------------------------
    @graph_fn
    def _graph_fn_clip_to_bounds(self, actions):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.clip_by_value(actions, self.action_low, self.action_high)
        return _clip_torch(actions, self.action_low, self.action_high)

    @graph_fn
    def _graph_fn_add_target_noise(self, actions):
        """a + clip(eps, -c, c), eps ~ N(0, sigma^2) drawn per item and element [B, *action_shape]
        (TD3's target policy smoothing, before the clip to the bounds)."""
        sigma, bound = self.target_noise, self.target_noise_clip
        if get_backend() == "tf":
            import tensorflow as tf
            eps = tf.random.normal(tf.shape(actions), dtype=actions.dtype) * sigma
            return actions + (eps if bound is None else tf.clip_by_value(eps, -bound, bound))
        import torch
        eps = torch_random.randn_like(actions) * torch.as_tensor(sigma, dtype=actions.dtype)
        return actions + (eps if bound is None else _clip_torch(eps, -bound, bound))

    @graph_fn
    def _graph_fn_critic_l2(self):
        """sum_w sum(w^2) over the critics' trainable variables (a scalar, differentiable in them)."""
        weights = [w for critic in self.critics for w in critic.get_variables(trainable_only=True).values()]
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.add_n([tf.reduce_sum(tf.square(w)) for w in weights])
        return sum((w * w).sum() for w in weights)

    @graph_fn
    def _graph_fn_critic_variables(self):
        # The first critic's names as DDPG's (its optimizer slots keep their names); a twin's prefixed.
        variables = {}
        for i, critic in enumerate(self.critics):
            prefix = "" if i == 0 else critic.scope + "-"
            variables.update({prefix + name: v for name, v in
                              critic.get_variables(custom_scope_separator="-", trainable_only=True).items()})
        return variables

    @graph_fn
    def _graph_fn_actor_variables(self):
        return self.actor.get_variables(custom_scope_separator="-", trainable_only=True)


class _MemoryUpdate:
    """The body of an update API from the in-graph memory (a picklable object, for PyTorch's export)."""

    def __init__(self, name: str, critic_step: bool, actor_step: bool, sync: bool = True):
        self.__name__ = self.__qualname__ = name
        self.critic_step, self.actor_step, self.sync = critic_step, actor_step, sync

    def __call__(self, core, batch_size, time_percentage):
        return core._update_from_memory(batch_size, time_percentage, self.critic_step, self.actor_step, self.sync)


class _ExternalUpdate(_MemoryUpdate):
    """The body of an update API from a record (and its importance weights) passed in."""

    def __call__(self, core, records, importance_weights, time_percentage):
        check_record_keys(records, f"{core.global_scope}.{self.__name__}(records)")
        return core._update(records, importance_weights, time_percentage, self.critic_step, self.actor_step,
                            self.sync)


def _clip_torch(values, low, high):
    """`values` clipped elementwise to the numpy bounds `low`, `high` (broadcast)."""
    import torch
    low, high = (torch.as_tensor(b, dtype=values.dtype) for b in (low, high))
    return torch.minimum(torch.maximum(values, low), high)
