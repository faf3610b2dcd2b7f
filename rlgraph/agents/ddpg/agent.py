"""`DDPGAgent`: deep deterministic policy gradients for bounded continuous actions."""
from __future__ import annotations

import json
import os
from typing import Any, NamedTuple, Optional

import numpy as np

from rlgraph.agents.ddpg import specs as ddpg_specs
from rlgraph.agents.agent import Agent
from rlgraph.agents.ddpg.core import DDPGCore, update_apis
from rlgraph.agents.ddpg.networks import DeterministicActor, QCritic
from rlgraph.agents.records import record_space, to_weighted_record
from rlgraph.agents.replay_access import ReplayAgentMixin, check_memory_spec, make_replay, replay_input_spaces
from rlgraph.agents.specs import check_bool, check_number, split_head_spec
from rlgraph.components.component import Component
from rlgraph.components.explorations.exploration import Exploration
from rlgraph.spaces import FloatBox
from rlgraph.spaces.containers import ContainerSpace
from rlgraph.utils.checkpoint_dir import write_json
from rlgraph.utils.checkpoint_values import INT64_MAX
from rlgraph.utils.nest import map_structure
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphSpecError

# The checkpoint file of the agent's own counter (see `memory_interval`).
STATE_FILE = "ddpg_state.json"


class DDPGLosses(NamedTuple):
    """What `DDPGAgent.update` returns; workers log element 0, the critic loss."""
    critic_loss: float
    actor_loss: float


class DDPGAgent(ReplayAgentMixin, Agent):
    """DDPG (Lillicrap et al. 2015, https://arxiv.org/abs/1509.02971) for one bounded FloatBox action.

    A deterministic actor mu(s) (tanh-scaled onto the action bounds) and a critic Q(s, a), each
    with a target copy that follows it softly (tau) after each of its updates. Acting adds noise
    (Ornstein-Uhlenbeck by default, reset by `reset()` at every episode start; or Gaussian) and
    clips to the bounds. An update is one executor call: sample the replay memory, step the
    critic, step the actor, sync the targets (`DDPGCore`'s docstring writes it out). The memory
    is reached through `self.replay` (a `ReplayAccess`, rlgraph/agents/replay_access.py, as for
    DQN and SAC): in the graph ("replay-memory", "prioritized-replay") or the numpy
    "mem-prioritized-replay" next to it; a prioritized memory's importance weights weigh the
    critic's TD loss per item and the sampled records get |td| as their new priorities. The
    arguments with the names of vinci's `DDPGAgent` mean what they mean there, except where said
    (the defaults differ: they follow the DDPG paper and TD3/Stable-Baselines3 here).

    The action space is one FloatBox of any shape with finite bounds (per element). A Dict or
    Tuple of FloatBoxes is not supported (one noise process draws for one FloatBox): concatenate
    such actions. States are one Box (the critic flattens them); Dict states are not supported.
    The noise has the shape of one action: a batch of states (vectorized envs) gets the same
    draw in every row.

    Args:
        critic_network_spec: The critic's hidden layers (default: `network_spec`, the actor's), or
            {"network_spec": layers, "weights_spec": ..., "biases_spec": ...} to set the initializers
            of its Q unit too (default uniform in [-3e-3, 3e-3], as the DDPG paper's).
        memory_spec: The replay memory (default {"type": "replay-memory", "capacity": 100000});
            "prioritized-replay" and "mem-prioritized-replay" take "alpha", "beta", "epsilon".
        n_step: n-step returns (folded in by the observe buffers; the critic's bootstrap is
            discounted by gamma ** n).
        noise_spec: The exploration noise, e.g. {"type": "gaussian", "stddev": 0.1} (default
            {"type": "ornstein-uhlenbeck", "theta": 0.15, "sigma": 0.2}); or give it as
            `exploration_spec` {"noise_spec": ...} or vinci's `random_process` (one of the three).
        random_process: vinci's name of `noise_spec`.
        critic_optimizer_spec: The critic's optimizer (default Adam, learning rate 1e-3);
            `value_function_optimizer_spec` is an alias. `optimizer_spec` is the actor's (default
            Adam, 1e-4).
        value_function_optimizer_spec: Alias of `critic_optimizer_spec`.
        actor_learning_rate: vinci's learning rate of the actor (of its optimizer spec, or of Adam
            without one).
        critic_learning_rate: vinci's learning rate of the critic, likewise.
        critic_regularization: c >= 0: the critic loss adds c * sum of the squares of all
            trainable critic variables (kernels and biases). vinci's default is 0.01; here 0.
        critic_gradient_clip: delta > 0 (vinci's default: 100) of a Huber loss on the TD error
            td = y - Q(s, a): the per-item loss is 0.5 td^2 for |td| <= delta, else
            delta (|td| - delta / 2), so each item's gradient in Q is td clipped to
            [-delta, delta] (what vinci describes). The gradient norm is not clipped (for that,
            give the optimizer spec "clip_grad_norm").
            None (default): 0.5 td^2.
        target_actor_update: tau in (0, 1] of the actor's soft target updates (default:
            update_spec.sync_tau if given, else 0.005).
        target_critic_update: The same for the critic.
        warmup_actor_steps: The actor is not updated before the agent has observed this many env
            steps (`timesteps`); default 0 (vinci: 200).
        warmup_critic_steps: The same for the critic.
        invert_gradients: Invert the action gradient near the bounds (Hausknecht & Stone 2016,
            https://arxiv.org/abs/1511.04143; see `DDPGCore`).
        gradient_inverter_min: The bound p_min of the inverting (default: the action space's low).
        gradient_inverter_max: The bound p_max of the inverting (default: the action space's high).
        squash_actions: tanh-scale the actor's output onto the bounds (True); False: the actor
            is linear and its actions are clipped for acting (the paper of `invert_gradients`
            uses that).
        random_steps: Act uniformly at random in the bounds for this many first env steps
            (with exploration; like Stable-Baselines3's learning_starts). Default 0.
        batch_size: vinci's name of update_spec.batch_size.
        train_interval: vinci's name of update_spec.update_interval.
        memory_interval: Write only every n-th transition into the memory (observed or imported;
            the count survives checkpoints).
        num_critics: 1, or 2 for TD3's twin critics (the target takes the smaller target critic,
            both critics regress to it; the actor and `get_q_values` use critic 1).
        policy_delay: d >= 1: the actor steps and all targets move only on every d-th update (TD3:
            2); the updates between step the critics alone. The count is `num_updates` (the
            updates past a warm-up), which checkpoints keep.
        target_policy_noise: sigma >= 0 of TD3's target policy smoothing, in units of the action's
            half-range (high - low) / 2 per element; 0 (default): none.
        target_noise_clip: c > 0 bounding that noise to [-c, c] (units as above); None: unclipped.
        **kwargs: `Agent` arguments. update_spec has no sync_interval here (an error).
            `action_adapter_spec` may hold the actor head's `pre_network_spec` (layers between the
            actor network and its action layer), `weights_spec` and `biases_spec`.

    Raises:
        RLGraphSpecError: For an action space that is not one bounded FloatBox (DDPG needs
            continuous actions), and for invalid arguments (each error names its argument).
    """

    greedy_apis = ("get_greedy_actions_from_preprocessed_states", "get_greedy_actions")
    algorithm = "DDPG"  # How errors name the algorithm.
    core_class = DDPGCore
    default_actor_learning_rate = ddpg_specs.DEFAULT_ACTOR_LEARNING_RATE
    loss_scalar_tags = {"critic_loss": "loss/critic", "actor_loss": "loss/actor"}

    def __init__(self, critic_network_spec: Any = None, memory_spec: Optional[dict] = None, noise_spec: Any = None,
                 random_process: Any = None, critic_optimizer_spec: Optional[dict] = None,
                 value_function_optimizer_spec: Optional[dict] = None, actor_learning_rate: Optional[float] = None,
                 critic_learning_rate: Optional[float] = None, critic_regularization: float = 0.0,
                 critic_gradient_clip: Optional[float] = None, target_actor_update: Optional[float] = None,
                 target_critic_update: Optional[float] = None, warmup_actor_steps: int = 0,
                 warmup_critic_steps: int = 0, invert_gradients: bool = False,
                 gradient_inverter_min: Optional[float] = None, gradient_inverter_max: Optional[float] = None,
                 squash_actions: bool = True, random_steps: int = 0, batch_size: Optional[int] = None,
                 train_interval: Optional[int] = None, memory_interval: int = 1, n_step: int = 1,
                 num_critics: int = 1, policy_delay: int = 1, target_policy_noise: float = 0.0,
                 target_noise_clip: Optional[float] = None, **kwargs):
        owner = type(self).__name__
        self.num_critics = check_number(num_critics, "num_critics", owner, low=1, high=2, integer=True)
        self.policy_delay = check_number(policy_delay, "policy_delay", owner, low=1, integer=True)
        self.target_policy_noise = check_number(target_policy_noise, "target_policy_noise", owner, low=0.0)
        self.target_noise_clip = check_number(target_noise_clip, "target_noise_clip", owner, low=0.0,
                                              low_inclusive=False, allow_none=True)
        self.critic_network_spec = critic_network_spec
        self.memory_spec = check_memory_spec(memory_spec, {"type": "replay-memory", "capacity": 100000}, owner)
        self.n_step = check_number(n_step, "n_step", owner, low=1, integer=True)
        exploration = ddpg_specs.exploration_spec(kwargs.pop("exploration_spec", None), noise_spec, random_process,
                                                  owner, self._default_noise_spec(kwargs.get("action_space")))
        self.actor_optimizer_spec = ddpg_specs.optimizer_spec(
            kwargs.pop("optimizer_spec", None), actor_learning_rate, self.default_actor_learning_rate,
            "actor-optimizer", ("optimizer_spec", "actor_learning_rate"), owner)
        critic_spec = ddpg_specs.one_of({"critic_optimizer_spec": critic_optimizer_spec,
                                         "value_function_optimizer_spec": value_function_optimizer_spec}, owner)
        self.critic_optimizer_spec = ddpg_specs.optimizer_spec(
            critic_spec[1] if critic_spec else None, critic_learning_rate, ddpg_specs.DEFAULT_CRITIC_LEARNING_RATE,
            "critic-optimizer", (critic_spec[0] if critic_spec else "critic_optimizer_spec",
                                 "critic_learning_rate"), owner)
        kwargs["update_spec"] = ddpg_specs.update_spec(kwargs.get("update_spec"), batch_size, train_interval, owner)
        self.actor_tau, self.critic_tau = ddpg_specs.target_rates(target_actor_update, target_critic_update,
                                                                  kwargs["update_spec"], owner)
        self.critic_regularization = check_number(critic_regularization, "critic_regularization", owner, low=0.0)
        self.critic_gradient_clip = check_number(critic_gradient_clip, "critic_gradient_clip", owner, low=0.0,
                                                 low_inclusive=False, allow_none=True)
        self.warmup_actor_steps = check_number(warmup_actor_steps, "warmup_actor_steps", owner, low=0, integer=True)
        self.warmup_critic_steps = check_number(warmup_critic_steps, "warmup_critic_steps", owner, low=0,
                                                integer=True)
        self.invert_gradients = check_bool(invert_gradients, "invert_gradients", owner)
        self.gradient_inverter_min = check_number(gradient_inverter_min, "gradient_inverter_min", owner,
                                                  allow_none=True)
        self.gradient_inverter_max = check_number(gradient_inverter_max, "gradient_inverter_max", owner,
                                                  allow_none=True)
        self.squash_actions = check_bool(squash_actions, "squash_actions", owner)
        self.random_steps = check_number(random_steps, "random_steps", owner, low=0, integer=True)
        self.memory_interval = check_number(memory_interval, "memory_interval", owner, low=1, integer=True)
        self.memory_counter = 0  # Transitions handed to `_observe_graph` (for memory_interval).
        self.actor_head_spec = ddpg_specs.actor_head_spec(kwargs.get("action_adapter_spec"), owner)
        super().__init__(optimizer_spec=self.actor_optimizer_spec, exploration_spec=exploration, **kwargs)

    def _default_noise_spec(self, action_space: Any) -> dict:
        """The noise without `noise_spec` (DDPG: the paper's Ornstein-Uhlenbeck noise)."""
        return dict(ddpg_specs.DEFAULT_NOISE_SPEC)

    def _n_step(self) -> int:
        return self.n_step

    # --- Construction ---------------------------------------------------------------------------
    def _create_root(self) -> None:
        owner = type(self).__name__
        action = ddpg_specs.check_action_space(self.action_space, self.algorithm, owner)
        if self.network_spec is None:
            raise RLGraphSpecError("no network_spec (the actor's hidden layers)", where=f"{owner}(network_spec)",
                                   hint='give e.g. [{"type": "dense", "units": 64, "activation": "relu"}].')
        memory, self.replay = make_replay(self.memory_spec, self.execution_spec["seed"], self._executor, owner,
                                          self.algorithm)
        actor = DeterministicActor(self.network_spec, action, squash=self.squash_actions, scope="actor",
                                   **self.actor_head_spec)
        critic_layers, critic_head = split_head_spec(
            self.critic_network_spec if self.critic_network_spec is not None else self.network_spec,
            "critic_network_spec", owner)
        critic = QCritic(critic_layers, scope="critic", **critic_head)
        exploration = Exploration.from_spec(self.exploration_spec)
        inverter = None
        if self.invert_gradients:
            inverter = ddpg_specs.inverter_bounds(action, self.gradient_inverter_min, self.gradient_inverter_max, owner)
        self.root_component = self.core_class(
            actor=actor, critic=critic, preprocessing_spec=self.preprocessing_spec, exploration=exploration,
            memory=memory, actor_optimizer=Component.from_spec(self.actor_optimizer_spec),
            critic_optimizer=Component.from_spec(self.critic_optimizer_spec), discount=self.discount,
            n_step=self.n_step, actor_tau=self.actor_tau, critic_tau=self.critic_tau,
            critic_regularization=self.critic_regularization, huber_delta=self.critic_gradient_clip,
            inverter_bounds=inverter, action_low=action.low, action_high=action.high, num_critics=self.num_critics,
            policy_delay=self.policy_delay,
            **ddpg_specs.target_smoothing(action, self.target_policy_noise, self.target_noise_clip),
            scope=self.name)
        self.preprocessed_state_space = self.root_component.preprocessor.get_preprocessed_space(
            self.state_space.with_batch_rank()).strip_ranks()
        if isinstance(self.preprocessed_state_space, ContainerSpace):
            raise RLGraphSpecError(f"{self.algorithm}'s critic takes one Box state", where=f"{owner}(state_space)",
                                   received=str(self.preprocessed_state_space),
                                   hint="flatten a Dict/Tuple state into one vector (a preprocessor or env wrapper).")
        self.input_spaces = dict(
            states=self.state_space.with_batch_rank(),
            preprocessed_states=self.preprocessed_state_space.with_batch_rank(),
            actions=self.action_space.with_batch_rank(),
            records=record_space(self.preprocessed_state_space, self.action_space),
            importance_weights=FloatBox(add_batch_rank=True), time_percentage=float, use_exploration=bool)
        self.input_spaces.update(replay_input_spaces(memory, self.input_spaces["records"], self.replay))

    def build(self, build_options: Optional[dict] = None) -> Any:
        stats = super().build(build_options)
        self.sync_targets()  # The targets start as copies.
        return stats

    def sync_targets(self) -> None:
        """Copies the actor and the critic(s) into their targets (a hard update)."""
        weights = self._executor().get_weights()
        core = self.root_component
        copies = {}
        for online, target in ((core.actor, core.target_actor), *zip(core.critics, core.target_critics)):
            prefix, target_prefix = online.global_scope + "/", target.global_scope + "/"
            copies.update({target_prefix + name[len(prefix):]: value for name, value in weights.items()
                           if name.startswith(prefix)})
        self._executor().set_weights(copies)

    def policy_scope(self) -> str:
        """The actor's global scope (`get_weights()` returns its weights)."""
        return self.root_component.actor.global_scope

    # --- Acting ---------------------------------------------------------------------------------
    def get_action(self, states: Any, internals: Any = None, use_exploration: bool = True,
                   apply_preprocessing: bool = True, extra_returns: Any = None,
                   time_percentage: Optional[float] = None) -> Any:
        if not use_exploration or self.timesteps >= self.random_steps:
            return super().get_action(states, internals, use_exploration, apply_preprocessing, extra_returns,
                                      time_percentage)
        # The first `random_steps` env steps: uniform actions in the bounds (the executor's numpy stream).
        extras = self._check_extra_returns(extra_returns)
        space = self.state_space if apply_preprocessing else self.preprocessed_state_space
        batch, single = self._batch(states, space, "get_action(states)")
        preprocessed = self.preprocess_states(batch) if apply_preprocessing and extras else batch
        shape = (len(batch),) + tuple(self.action_space.shape)  # (States are one Box: see `_create_root`.)
        rng = self._executor().numpy_rng
        actions = rng.uniform(self.action_space.low, self.action_space.high, size=shape).astype(np.float32)
        if single:
            actions, preprocessed = actions[0], preprocessed[0]
        return (actions, preprocessed) if extras else actions

    def get_q_values(self, states: Any, actions: Any, apply_preprocessing: bool = True) -> np.ndarray:
        """Q(s, a) of the critic (critic 1) for a batch of states and actions [B] (one value for one pair)."""
        if apply_preprocessing:
            states = self.preprocess_states(states)
        batch, single = self._batch(states, self.preprocessed_state_space, "get_q_values(states)")
        actions = np.asarray(actions, np.float32)
        q = self._executor().execute(("get_q_values", [batch, actions[None] if single else actions]))
        return q[0] if single else q

    def reset(self) -> None:
        """Episode start: resets the Ornstein-Uhlenbeck noise to its mean, and stateful preprocessors."""
        if "reset_noise" in self.root_component.api_methods:
            self._executor().execute("reset_noise")
        if self.root_component.preprocessor.is_stateful:
            self._executor().execute("reset_preprocessor")

    # --- Observing and updating -----------------------------------------------------------------
    def _observe_graph(self, records: dict) -> None:
        count = len(records["rewards"])
        start, self.memory_counter = self.memory_counter, self.memory_counter + count
        if self.memory_interval > 1:
            rows = np.nonzero((start + np.arange(count)) % self.memory_interval == 0)[0]
            if len(rows) == 0:
                return
            records = map_structure(lambda x: np.asarray(x)[rows], records)
        self.replay.insert(records)

    def ready_to_update(self) -> bool:
        """Whether an update can step something: the memory holds update_spec.batch_size
        transitions (or is full) and the critic's or the actor's warm-up is over."""
        if self.timesteps < min(self.warmup_actor_steps, self.warmup_critic_steps):
            return False
        return self._memory_holds_batch()

    def update(self, batch: Optional[dict] = None, time_percentage: Optional[float] = None) -> DDPGLosses:
        """One update (see `DDPGCore`): the critic steps from `warmup_critic_steps` env steps on,
        the actor from `warmup_actor_steps` on; the targets of the stepped parts follow softly.
        Before both warm-ups the losses are computed without any step. With `policy_delay` d the
        actor steps and the targets follow only in the k-th update that steps something for k a
        multiple of d (k = `num_updates` after it).

        Args:
            batch: None (sample update_spec.batch_size transitions from the memory; a prioritized
                one gets new priorities) or a record with "states" (preprocessed), "actions",
                "rewards", "terminals", "next_states" and optionally "importance_weights".
            time_percentage: Overrides `time_percentage()` (learning-rate schedules).

        Returns:
            DDPGLosses(critic_loss, actor_loss) as floats, computed before this update's steps
            (the actor loss after the critic's).

        Raises:
            RLGraphError: If `batch` lacks one of those keys or has another; `RLGraphSpaceError`
                for values that do not fit the spaces; `RLGraphNonFiniteError` for NaN or inf
                in the batch or the losses (with execution_spec.nan_check "raise").
        """
        tp = self._time_percentage_arg(time_percentage, "update")
        steps = (self.timesteps >= self.warmup_critic_steps, self.timesteps >= self.warmup_actor_steps)
        delayed_turn = (self.num_updates + 1) % self.policy_delay == 0  # (k = num_updates + 1 if it steps.)
        from_memory, external = update_apis(steps[0], steps[1] and delayed_turn, delayed_turn)
        if batch is not None:
            records, weights = to_weighted_record(batch, f"{self.name}.update(batch)", self._data_checks)
            critic_loss, actor_loss, _ = self._executor().execute((external, [records, weights, tp]))
        elif self.replay.in_graph:
            critic_loss, actor_loss, _ = self._executor().execute(
                (from_memory, [np.int64(self.update_spec["batch_size"]), tp]))
        else:
            records, indices, weights = self.replay.sample(self.update_spec["batch_size"])
            critic_loss, actor_loss, td = self._executor().execute((external, [records, weights, tp]))
            self.replay.update_priorities(indices, td)
        if any(steps):
            self.num_updates += 1
            self.last_sync_timestep = self.timesteps
        losses = DDPGLosses(float(critic_loss), float(actor_loss))
        self._check_loss(np.asarray(losses), "update")
        self.last_losses = losses
        return losses

    def get_losses(self, batch: dict) -> DDPGLosses:
        """The critic and actor losses of a record (as for `update`, "importance_weights" optional),
        without any update."""
        record, weights = to_weighted_record(batch, f"{self.name}.get_losses(batch)", self._data_checks)
        critic_loss, actor_loss, _ = self._executor().execute(("get_losses", [record, weights, np.float32(0.0)]))
        return DDPGLosses(float(critic_loss), float(actor_loss))

    # --- Checkpoints (the replay's part: `ReplayAgentMixin`) ------------------------------------
    def _save_files(self, directory: str, save_replay: bool = True) -> None:
        write_json(os.path.join(directory, STATE_FILE), {"memory_counter": int(self.memory_counter)})
        super()._save_files(directory, save_replay)

    def _check_files(self, files: Any) -> Any:
        where = f"{type(self).__name__}.load_model"
        state = files.json(STATE_FILE)
        counter = state.get("memory_counter") if isinstance(state, dict) else None
        if isinstance(counter, bool) or not isinstance(counter, int) or not 0 <= counter <= INT64_MAX:
            raise RLGraphCheckpointError(f"'{STATE_FILE}' is damaged", where=where,
                                         expected='{"memory_counter": an integer in [0, 2**63 - 1]}',
                                         received=json.dumps(state)[:100])
        return counter, super()._check_files(files)

    def _load_files(self, checked: Any) -> None:
        self.memory_counter, replay_checked = checked
        super()._load_files(replay_checked)
