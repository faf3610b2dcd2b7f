"""`DDPGCore`: the root component of `DDPGAgent` (acting, memory, critic and actor steps, target syncs)."""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import numpy as np

from rlgraph.agents.records import check_record_keys
from rlgraph.agents.agent_core import AgentCore
from rlgraph.backend_system import get_backend
from rlgraph.components.common.synchronizable import Synchronizable
from rlgraph.components.component import Component
from rlgraph.components.explorations.exploration import Exploration
from rlgraph.components.explorations.noise.ornstein_uhlenbeck_noise import OrnsteinUhlenbeckNoise
from rlgraph.components.neural_networks.preprocessor_stack import PreprocessorStack
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError

# (critic step, actor step) -> (root API from the memory, root API from an external record).
UPDATE_APIS = {
    (True, True): ("update_from_memory", "update_from_external_batch"),
    (True, False): ("update_critic_from_memory", "update_critic_from_external_batch"),
    (False, True): ("update_actor_from_memory", "update_actor_from_external_batch"),
    (False, False): ("get_losses_from_memory", "get_losses"),
}


class DDPGCore(AgentCore):
    """Preprocessor, actor mu and critic Q with their targets mu' and Q', noise, memory, two optimizers.

    One update reads one record (`rlgraph/agents/records.py`: states preprocessed) and runs, in
    one executor call (numpy reference: `tests/ddpg_reference.py`):

        y = r_t + gamma * (1 - d_t) * Q'(s_tp1, mu'(s_tp1))           # a constant (no gradient)
        td = y - Q(s_t, a_t)
        critic_loss = mean(huber(td, critic_gradient_clip) or 0.5 td^2) + c_reg * sum_w sum(w^2)
        critic_optimizer.step(Q's variables, critic_loss)            # if past warmup_critic_steps
        a = mu(s_t);  g = dQ(s_t, a)/da (with the critic just updated)
        g = invert(g, a) if invert_gradients                          # Hausknecht & Stone 2016
        actor_loss = -mean(Q(s_t, a)); the actor's gradient is -mean_b(g_b . da_b/dtheta)
        actor_optimizer.step(mu's variables)                          # if past warmup_actor_steps
        Q' <- tau_c Q + (1 - tau_c) Q';  mu' <- tau_a mu + (1 - tau_a) mu'   # of the parts stepped

    with invert(g, a) = g * (p_max - a) / (p_max - p_min) where g > 0, else g * (a - p_min) /
    (p_max - p_min): a gradient that pushes an action towards a bound shrinks as the action
    nears it, and reverses once it is past it. Which parts step is fixed per root API method
    (`UPDATE_APIS`); every variant returns (critic_loss, actor_loss, td [B]) computed before its
    own steps (the actor loss with the critic after its step).

    Acting: mu(s) (+ the exploration noise) clipped to the action bounds.

    Args:
        actor: A `DeterministicActor` (scope "actor").
        critic: A `QCritic` (scope "critic").
        preprocessing_spec: Preprocessor specs of the `PreprocessorStack`.
        exploration: The `Exploration` with a noise (one FloatBox action).
        memory: An in-graph `ReplayMemory`.
        actor_optimizer: The actor's optimizer (its scope distinct from the critic's).
        critic_optimizer: The critic's optimizer.
        discount: gamma.
        actor_tau: The actor's soft target update rate in (0, 1].
        critic_tau: The critic's soft target update rate in (0, 1].
        critic_regularization: c_reg >= 0 (L2 on all trainable critic variables).
        huber_delta: The Huber delta on td (None: 0.5 td^2).
        inverter_bounds: (p_min, p_max) arrays shaped like the action for gradient inverting, or
            None for none.
        action_low: The action's lower bound (an array shaped like the action).
        action_high: The action's upper bound (an array shaped like the action).
        scope: The root's scope (the agent's name).

    API (all batched):
        get_actions(states, time_percentage, use_exploration) -> (preprocessed_states, actions)
        get_actions_from_preprocessed_states(preprocessed_states, time_percentage, use_exploration)
        get_greedy_actions(states) -> (preprocessed_states, mu(s) clipped)
        get_greedy_actions_from_preprocessed_states(preprocessed_states)
        get_preprocessed_states(states)
        get_q_values(preprocessed_states, actions) -> Q [B]
        insert_records(records); get_memory_size()
        update_from_memory(batch_size, time_percentage) and the variants of `UPDATE_APIS`
            -> (critic_loss, actor_loss, td [B])
        update_from_external_batch(records, time_percentage) and its variants; get_losses(records)
        reset_noise() (Ornstein-Uhlenbeck noise only); reset_preprocessor()

    Raises:
        RLGraphError: When a record argument is not a dict with the `RECORD_KEYS`.
    """

    def __init__(self, actor: Component, critic: Component, preprocessing_spec: list, exploration: Exploration,
                 memory: Component, actor_optimizer: Component, critic_optimizer: Component, discount: float,
                 actor_tau: float, critic_tau: float, critic_regularization: float, huber_delta: Optional[float],
                 inverter_bounds: Optional[Tuple[np.ndarray, np.ndarray]], action_low: np.ndarray,
                 action_high: np.ndarray, scope: str = "ddpg-core"):
        super().__init__(scope=scope)
        self.preprocessor = PreprocessorStack(*preprocessing_spec, scope="preprocessor-stack")
        self.actor, self.critic = actor, critic
        self.target_actor = self._target_of(actor, "target-actor", actor_tau)
        self.target_critic = self._target_of(critic, "target-critic", critic_tau)
        self.exploration = exploration
        self.memory = memory
        self.actor_optimizer, self.critic_optimizer = actor_optimizer, critic_optimizer
        self.discount = float(discount)
        self.critic_regularization = float(critic_regularization)
        self.huber_delta = huber_delta
        self.inverter_bounds = inverter_bounds
        self.action_low = np.asarray(action_low, np.float32)
        self.action_high = np.asarray(action_high, np.float32)
        self.add_components(self.preprocessor, actor, critic, self.target_actor, self.target_critic, exploration,
                            memory, actor_optimizer, critic_optimizer)
        for (critic_step, actor_step), (from_memory, external) in UPDATE_APIS.items():
            no_grad = not (critic_step or actor_step)
            rlgraph_api(component=self, name=from_memory, no_grad=no_grad)(
                _MemoryUpdate(from_memory, critic_step, actor_step))
            rlgraph_api(component=self, name=external, no_grad=no_grad)(
                _ExternalUpdate(external, critic_step, actor_step))
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

    def _reset_noise(self):
        return self.exploration.noise.reset()

    # --- Memory and learning --------------------------------------------------------------------
    @rlgraph_api
    def insert_records(self, records):
        check_record_keys(records, f"{self.global_scope}.insert_records(records)")
        return self.memory.insert_records(records)

    @rlgraph_api(no_grad=True)
    def get_memory_size(self):
        return self.memory.get_size()

    def _update(self, records, time_percentage, critic_step: bool, actor_step: bool):
        """The update of the class docstring; the flags say which optimizers step."""
        states = records["states"]
        mu_tp1 = self.target_actor.get_action(records["next_states"])
        q_tp1 = self.target_critic.get_q_values(records["next_states"], mu_tp1)
        q_t = self.critic.get_q_values(states, records["actions"])
        critic_loss, critic_per_item, td = self._graph_fn_critic_loss(q_t, q_tp1, records["rewards"],
                                                                      records["terminals"])
        if critic_step:
            critic_loss, critic_per_item = self.critic_optimizer.step(
                self._graph_fn_critic_variables(), critic_loss, critic_per_item, time_percentage)
        a = self.actor.get_action(states)
        q_a = self.critic.get_q_values(states, a)
        surrogate, surrogate_per_item, actor_loss = self._graph_fn_actor_loss(q_a, a)
        if actor_step:
            self.actor_optimizer.step(self._graph_fn_actor_variables(), surrogate, surrogate_per_item,
                                      time_percentage)
        if critic_step:
            self.target_critic.sub_components["synchronizable"].sync(
                self.critic.sub_components["synchronizable"].get_sync_values())
        if actor_step:
            self.target_actor.sub_components["synchronizable"].sync(
                self.actor.sub_components["synchronizable"].get_sync_values())
        return critic_loss, actor_loss, td

    # --- Graph functions ------------------------------------------------------------------------
    @graph_fn
    def _graph_fn_clip_to_bounds(self, actions):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.clip_by_value(actions, self.action_low, self.action_high)
        import torch
        low, high = (torch.as_tensor(b, dtype=actions.dtype) for b in (self.action_low, self.action_high))
        return torch.minimum(torch.maximum(actions, low), high)

    @graph_fn(returns=3)
    def _graph_fn_critic_loss(self, q_t, q_tp1, rewards, terminals):
        """(critic loss, per-item TD loss [B], td [B]); the L2 term is in the loss only."""
        reg = self.critic_regularization
        weights = list(self.critic.get_variables(trainable_only=True).values()) if reg > 0.0 else []
        if get_backend() == "tf":
            import tensorflow as tf
            not_done = 1.0 - tf.cast(terminals, tf.float32)
            y = tf.stop_gradient(rewards + self.discount * not_done * q_tp1)
            td = y - q_t
            per_item = _td_loss(td, self.huber_delta, tf.abs, tf.minimum)
            loss = tf.reduce_mean(per_item)
            if weights:
                loss += reg * tf.add_n([tf.reduce_sum(tf.square(w)) for w in weights])
            return loss, per_item, td
        import torch
        y = (rewards + self.discount * (1.0 - terminals.to(torch.float32)) * q_tp1).detach()
        td = y - q_t
        per_item = _td_loss(td, self.huber_delta, torch.abs, lambda x, c: torch.clamp(x, max=c))
        loss = per_item.mean()
        if weights:
            loss = loss + reg * sum((w * w).sum() for w in weights)
        return loss, per_item, td

    @graph_fn(returns=3)
    def _graph_fn_actor_loss(self, q_a, a):
        """(surrogate loss whose gradient is the actor's, its per-item values [B], -mean Q(s, mu(s)))."""
        axes = list(range(1, len(a.shape)))
        if get_backend() == "tf":
            import tensorflow as tf
            actor_loss = -tf.reduce_mean(q_a)
            if self.inverter_bounds is None:
                return actor_loss, -q_a, actor_loss
            if tf.executing_eagerly():
                g = tf.zeros_like(a)  # The build's eager trace run has no graph to differentiate.
            else:
                g = tf.gradients(q_a, a)[0]
                if g is None:
                    raise RLGraphError("the critic's Q-values do not depend on the actor's actions",
                                       where=f"{self.global_scope}.update (gradient inverting)")
            g = tf.stop_gradient(self._invert(g, tf.stop_gradient(a), tf.where))
            per_item = -tf.reduce_sum(g * a, axis=axes) if axes else -g * a
            return tf.reduce_mean(per_item), per_item, actor_loss
        import torch
        actor_loss = -q_a.mean()
        if self.inverter_bounds is None:
            return actor_loss, -q_a, actor_loss
        if q_a.requires_grad:
            g, = torch.autograd.grad(q_a.sum(), a, retain_graph=True)
        else:
            g = torch.zeros_like(a)  # (No-step variants run without autograd.)
        g = self._invert(g, a.detach(), torch.where).detach()
        per_item = -(g * a).sum(dim=axes) if axes else -g * a
        return per_item.mean(), per_item, actor_loss

    def _invert(self, g, a, where: Callable):
        """The inverted action gradients (see the class docstring); `a` carries no gradient."""
        p_min, p_max = self.inverter_bounds
        width = p_max - p_min
        if get_backend() == "pytorch":
            import torch
            p_min, p_max, width = (torch.as_tensor(x, dtype=a.dtype) for x in (p_min, p_max, width))
        return where(g > 0, g * (p_max - a) / width, g * (a - p_min) / width)

    @graph_fn
    def _graph_fn_critic_variables(self):
        return self.critic.get_variables(custom_scope_separator="-", trainable_only=True)

    @graph_fn
    def _graph_fn_actor_variables(self):
        return self.actor.get_variables(custom_scope_separator="-", trainable_only=True)


def _td_loss(td, delta: Optional[float], abs_fn: Callable, min_fn: Callable):
    """0.5 td^2, or the Huber loss of td with `delta` (its gradient in Q is td clipped to
    [-delta, delta])."""
    if delta is None:
        return 0.5 * td * td
    abs_td = abs_fn(td)
    quadratic = min_fn(abs_td, delta)
    return 0.5 * quadratic * quadratic + delta * (abs_td - quadratic)


class _MemoryUpdate:
    """The body of an update API from the memory (a picklable object, for PyTorch's export)."""

    def __init__(self, name: str, critic_step: bool, actor_step: bool):
        self.__name__ = self.__qualname__ = name
        self.critic_step, self.actor_step = critic_step, actor_step

    def __call__(self, core, batch_size, time_percentage):
        return core._update(core.memory.get_records(batch_size), time_percentage, self.critic_step, self.actor_step)


class _ExternalUpdate(_MemoryUpdate):
    """The body of an update API from a record passed in."""

    def __call__(self, core, records, time_percentage):
        check_record_keys(records, f"{core.global_scope}.{self.__name__}(records)")
        return core._update(records, time_percentage, self.critic_step, self.actor_step)
