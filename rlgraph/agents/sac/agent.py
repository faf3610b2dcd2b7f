"""`SACAgent`: soft actor-critic with twin Q, soft target updates and a learned temperature."""
from __future__ import annotations

import logging
from collections import namedtuple
from typing import Any, Optional

import numpy as np

from rlgraph.agents.agent import Agent
from rlgraph.agents.records import record_space, to_weighted_record
from rlgraph.agents.replay_access import (ReplayAgentMixin, check_memory_spec, make_replay, memory_capacity,
                                          replay_input_spaces)
from rlgraph.agents.sac.core import SACCore
from rlgraph.agents.sac.networks import SACCritic, default_target_entropy, joint_action_count, sac_action_mode
from rlgraph.agents.sde_schedule import SDEScheduleMixin
from rlgraph.agents.specs import check_bool, check_number, check_spec, split_head_spec
from rlgraph.components.component import Component
from rlgraph.components.loss_functions.sac_loss_function import SACLossFunction
from rlgraph.components.policies.policy import Policy
from rlgraph.spaces import FloatBox
from rlgraph.utils.nest import first_row, flatten_op
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

logger = logging.getLogger(__name__)

# What `update()` and `get_losses()` return: loss (the sum of the three losses, what workers log)
# first, then the parts and the temperature alpha, all before the step.
SACLosses = namedtuple("SACLosses", ["loss", "actor_loss", "critic_loss", "alpha_loss", "alpha"])
SYNC_SPEC_KEYS = {"sync_interval": None, "sync_tau": None}
AUTO = "auto"


class SACAgent(SDEScheduleMixin, ReplayAgentMixin, Agent):
    """Soft actor-critic (Haarnoja et al. 2018, https://arxiv.org/abs/1812.05905): a stochastic actor
    trained to maximise Q - alpha log pi, twin Q critics with soft-updated target critics, and a
    temperature alpha tuned so that the policy's entropy stays near `target_entropy`. Bounded
    continuous actions (a FloatBox or a Dict/Tuple of FloatBoxes) use tanh-squashed Gaussians;
    discrete actions (one IntBox, or a Dict/Tuple of IntBoxes with one categorical per leaf) use
    the discrete form of Christodoulou 2019 (https://arxiv.org/abs/1910.07207) over the joint
    actions. The update is written out in `SACCore`'s docstring.

    `update()` runs `update_spec.num_iterations` gradient steps, each one executor call: sample
    the memory, step the critic, actor and alpha optimizers, and (when due) the soft target
    update. The target sync is due at a gradient step when `update_spec.sync_interval` env steps
    have passed since the last one (0: at every gradient step). A prioritized memory
    ("prioritized-replay" in the graph, "mem-prioritized-replay" in numpy; Schaul et al. 2015,
    https://arxiv.org/abs/1511.05952) samples by priority, its importance weights weigh the critic
    loss per item, and the sampled records get mean_i |Q_i(s, a) - y| as their new priorities.
    `self.replay` (a `ReplayAccess`, rlgraph/agents/replay_access.py, as for DQN) hides where the
    memory lives.

    Args:
        discount: gamma.
        initial_alpha: The temperature at the start (> 0); with `target_entropy` None it stays fixed.
        target_entropy: "auto" (default): -dim(A) for continuous actions, 0.98 * log(n) for n
            discrete actions; a number; or None for a fixed alpha (then pick `initial_alpha` on
            the scale of the rewards: the entropy bonus is alpha * H per step; the first SAC
            paper's reward scale 5 on MuJoCo is alpha 0.2; smaller for small or sparse rewards).
        double_q: Twin critics (min over both in the targets and the actor loss); False: one.
        gumbel_softmax_temperature: Accepted for configs of the original RLgraph (> 0). It has no
            effect: discrete actions use exact expectations over the categorical, not relaxed
            Gumbel-softmax samples.
        memory_spec: The replay memory spec (default {"type": "replay-memory", "capacity": 10000});
            "prioritized-replay" and "mem-prioritized-replay" take "alpha", "beta", "epsilon".
        value_function_spec: The critic layers (a list of layer specs; default: `network_spec`'s), or
            {"network_spec": layers, "weights_spec": ..., "biases_spec": ...} to set the initializers
            of the critics' Q head too (default Glorot uniform and 0).
        value_function_optimizer_spec: The critics' optimizer (default: `optimizer_spec`).
        alpha_optimizer_spec: The optimizer of log(alpha) (default: `optimizer_spec`).
        value_function_sync_spec: {"sync_interval", "sync_tau"} (the original's key): the same as
            those keys of `update_spec`, which they set.
        warmup_random_steps: Act uniformly at random (with `use_exploration`) for the first that many
            env steps (`agent.timesteps`), as Stable-Baselines3's learning_starts does; combine with
            `update_spec.steps_before_update` to also hold back the updates.
        optimizer_spec: The actor's optimizer (default {"type": "adam", "learning_rate": 3e-4}).
        update_spec: As for all agents, with the SAC defaults update_interval 1, sync_interval 1,
            sync_tau 0.005 and batch_size 256, plus "num_iterations" (default 1): gradient steps
            per `update()` call.
        **kwargs: `Agent` arguments: `network_spec` (the actor's layers; required),
            `preprocessing_spec`, `observe_spec`, `execution_spec`, `saver_spec`, ...

    Raises:
        RLGraphSpecError: For an unsupported action space (IntBox and FloatBox leaves mixed in a
            container, multi-discrete, BoolBox or unbounded FloatBox actions, more than 4096 joint
            discrete actions), a memory that is not a replay memory, or bad argument values (each
            error names the argument).
    """

    greedy_apis = ("get_greedy_actions_from_preprocessed_states", "get_greedy_actions")
    loss_scalar_tags = {"actor_loss": "loss/actor", "critic_loss": "loss/critic", "alpha_loss": "loss/alpha",
                        "alpha": "train/alpha"}
    update_spec_defaults = {"update_interval": 1, "sync_interval": 1, "sync_tau": 0.005, "batch_size": 256,
                            "num_iterations": 1}

    def __init__(self, discount: float = 0.99, initial_alpha: float = 1.0, target_entropy: Any = AUTO,
                 double_q: bool = True, gumbel_softmax_temperature: float = 1.0, memory_spec: Optional[dict] = None,
                 value_function_spec: Any = None, value_function_optimizer_spec: Optional[dict] = None,
                 alpha_optimizer_spec: Optional[dict] = None, value_function_sync_spec: Optional[dict] = None,
                 warmup_random_steps: int = 0, optimizer_spec: Optional[dict] = None,
                 update_spec: Optional[dict] = None, **kwargs):
        owner = type(self).__name__
        self.initial_alpha = check_number(initial_alpha, "initial_alpha", owner, 0, low_inclusive=False)
        if target_entropy != AUTO:
            target_entropy = check_number(target_entropy, "target_entropy", owner, allow_none=True,
                                          hint='"auto", a number, or null for a fixed alpha.')
        self.target_entropy = target_entropy
        self.double_q = check_bool(double_q, "double_q", owner)
        self.gumbel_softmax_temperature = check_number(gumbel_softmax_temperature, "gumbel_softmax_temperature",
                                                       owner, 0, low_inclusive=False)
        self.warmup_random_steps = check_number(warmup_random_steps, "warmup_random_steps", owner, low=0,
                                                integer=True)
        for name, spec in (("memory_spec", memory_spec), ("value_function_optimizer_spec", value_function_optimizer_spec),
                           ("alpha_optimizer_spec", alpha_optimizer_spec), ("optimizer_spec", optimizer_spec)):
            if spec is not None and not isinstance(spec, dict):
                raise RLGraphSpecError(f"{name} must be a dict", where=f"{owner}({name})", received=repr(spec))
        self.memory_spec = check_memory_spec(memory_spec, {"type": "replay-memory", "capacity": 10000}, owner)
        optimizer_spec = optimizer_spec or {"type": "adam", "learning_rate": 3e-4}
        self.value_function_spec = value_function_spec
        self.value_function_optimizer_spec = dict(value_function_optimizer_spec or optimizer_spec)
        self.alpha_optimizer_spec = dict(alpha_optimizer_spec or optimizer_spec)
        update_spec = _merge_sync_spec(update_spec, value_function_sync_spec, owner)
        super().__init__(discount=discount, optimizer_spec=optimizer_spec, update_spec=update_spec, **kwargs)
        self._init_sde_schedule()  # gSDE (`action_adapter_spec.use_sde`), see `sde_schedule.py`.
        if self.update_spec["batch_size"] > self._memory_capacity():
            logger.warning("%s: update_spec.batch_size %d exceeds the memory's capacity %d: every sampled batch "
                           "repeats records.", owner, self.update_spec["batch_size"], self._memory_capacity())

    # --- Construction ---------------------------------------------------------------------------
    def _create_root(self) -> None:
        owner = type(self).__name__
        # (Here, before the build: the base checked the other update_spec keys.)
        self.update_spec["num_iterations"] = check_number(self.update_spec["num_iterations"],
                                                          "update_spec.num_iterations", owner, low=1, integer=True)
        self.action_mode = sac_action_mode(self.action_space, owner)
        discrete = self.action_mode == "discrete"
        if self.target_entropy == AUTO:
            self.target_entropy = default_target_entropy(self.action_space, self.action_mode)
        if self.exploration_spec:
            logger.warning("%s: exploration_spec is not used: SAC explores by sampling from its policy "
                           "(see warmup_random_steps for random actions at the start).", owner)
        if self.internal_states_space is not None:
            raise RLGraphSpecError("SAC's networks are feed-forward", where=f"{owner}(internal_states_space)",
                                   received=str(self.internal_states_space), hint="leave internal_states_space out.")
        if self.network_spec is None:
            raise RLGraphSpecError("no network_spec (the actor's layers)", where=f"{owner}(network_spec)",
                                   hint='give e.g. [{"type": "dense", "units": 256, "activation": "relu"}].')
        critic_spec, head = split_head_spec(
            self.value_function_spec if self.value_function_spec is not None else self.network_spec,
            "value_function_spec", owner)
        if isinstance(critic_spec, Component):
            layers = [critic_spec] + ([critic_spec.copy()] if self.double_q else [])
        elif isinstance(critic_spec, (list, tuple, dict)) and critic_spec:
            layers = [critic_spec] * (2 if self.double_q else 1)  # (Each critic builds its own network.)
        else:
            raise RLGraphSpecError("value_function_spec must be a non-empty list of layer specs (or a network)",
                                   where=f"{owner}(value_function_spec)", received=repr(critic_spec)[:80],
                                   expected='[{"type": "dense", "units": 256, "activation": "relu"}, ...]')
        num_actions = joint_action_count(self.action_space) if discrete else None
        critics = [SACCritic(spec, num_actions=num_actions, scope=f"critic-{i}", **head) for i, spec in enumerate(layers)]
        memory, self.replay = make_replay(self.memory_spec, self.execution_spec["seed"], self._executor, owner, "SAC")
        learn_alpha = self.target_entropy is not None
        self.root_component = SACCore(
            policy=self._make_policy(), critics=critics, preprocessing_spec=self.preprocessing_spec, memory=memory,
            actor_optimizer=self._optimizer(self.optimizer_spec, "actor-optimizer"),
            critic_optimizer=self._optimizer(self.value_function_optimizer_spec, "critic-optimizer"),
            alpha_optimizer=self._optimizer(self.alpha_optimizer_spec, "alpha-optimizer") if learn_alpha else None,
            loss_function=SACLossFunction(target_entropy=self.target_entropy, discount=self.discount),
            discrete=discrete, initial_alpha=self.initial_alpha, sync_tau=self.update_spec["sync_tau"],
            scope=self.name)
        self.preprocessed_state_space = self.root_component.preprocessor.get_preprocessed_space(
            self.state_space.with_batch_rank()).strip_ranks()
        self.input_spaces = dict(
            states=self.state_space.with_batch_rank(),
            preprocessed_states=self.preprocessed_state_space.with_batch_rank(),
            records=record_space(self.preprocessed_state_space, self.action_space),
            importance_weights=FloatBox(add_batch_rank=True), time_percentage=float, use_exploration=bool)
        if not discrete:
            self.input_spaces["actions"] = self.action_space.with_batch_rank()
        self.input_spaces.update(replay_input_spaces(memory, self.input_spaces["records"], self.replay))

    def _memory_capacity(self) -> int:
        return memory_capacity(self.root_component.memory, self.replay)

    def _make_policy(self) -> Policy:
        spec = dict(self.policy_spec)
        spec.setdefault("network_spec", self.network_spec)
        spec.setdefault("action_space", self.action_space)
        if self.action_adapter_spec is not None:
            adapter = self.action_adapter_spec
            if adapter.get("use_sde") is True and "sde_learn_features" not in adapter:
                # As Stable-Baselines3's SAC (learn_features=True): the actor loss also trains the
                # features the noise is made of. Measured on the zoo's MountainCarContinuous config
                # (docs/performance.md): return 90 at step 15,000 for seed 1 with it, 32,500-45,000
                # for seeds 1-3 without; SB3 12,500-15,000.
                adapter = dict(adapter, sde_learn_features=True)
            spec.setdefault("action_adapter_spec", adapter)
        spec["max_likelihood"] = False  # get_action_and_log_prob samples (the update needs fresh samples).
        spec.setdefault("scope", "policy")
        return Policy.from_spec(dict(spec, type=spec.pop("type", "policy")))

    @staticmethod
    def _optimizer(spec: dict, scope: str) -> Component:
        return Component.from_spec(dict(spec, scope=scope))

    def build(self, build_options: Optional[dict] = None) -> Any:
        stats = super().build(build_options)
        self.graph_executor.execute("reset_targets")  # The target critics start as copies.
        return stats

    # --- Observing and acting -------------------------------------------------------------------
    def _observe_graph(self, records: dict) -> None:
        self.replay.insert(records)

    def get_action(self, states: Any, internals: Any = None, use_exploration: bool = True,
                   apply_preprocessing: bool = True, extra_returns: Any = None,
                   time_percentage: Optional[float] = None) -> Any:
        """As `Agent.get_action`; during the first `warmup_random_steps` env steps, with
        `use_exploration`, the actions are drawn uniformly from the action space (the executor's numpy
        stream, which `execution_spec.seed` seeds and checkpoints keep)."""
        if not (use_exploration and self.timesteps < self.warmup_random_steps):
            if use_exploration:
                self._count_sde_step()
            return super().get_action(states, internals, use_exploration, apply_preprocessing, extra_returns,
                                      time_percentage)
        extras = self._check_extra_returns(extra_returns)
        space = self.state_space if apply_preprocessing else self.preprocessed_state_space
        batch, single = self._batch(states, space, "get_action(states)")
        rows = len(next(iter(flatten_op(batch).values())))
        actions = self.action_space.sample_with(self._executor().numpy_rng, size=(rows,))
        # (Preprocessing also checks the states, as the policy's API call would.)
        preprocessed = self.preprocess_states(batch) if apply_preprocessing else batch
        if not extras:
            return first_row(actions) if single else actions
        return (first_row(actions), first_row(preprocessed)) if single else (actions, preprocessed)

    def get_q_values(self, states: Any, actions: Any = None, apply_preprocessing: bool = True) -> tuple:
        """One array per critic: Q(s, a) [B] for continuous actions (give `actions`), Q(s, .) [B, N]
        for discrete ones (no `actions`; for a Dict/Tuple of IntBoxes over the N joint actions in
        the order of `networks.joint_action_index`); `states` batched."""
        discrete = self.action_mode == "discrete"
        if (actions is None) != discrete:
            raise RLGraphSpecError("continuous actions need `actions`, discrete ones take none",
                                   where=f"{self.name}.get_q_values(actions)",
                                   expected="None" if discrete else f"a batch of {self.action_space}",
                                   received=type(actions).__name__)
        if apply_preprocessing:
            states = self.preprocess_states(states)
        inputs = [states] if discrete else [states, actions]
        return self._executor().execute(("get_q_values", inputs))

    def get_alpha(self) -> float:
        """The temperature alpha = exp(log_alpha) now."""
        return float(self._executor().execute("get_alpha"))

    # --- Updating -------------------------------------------------------------------------------
    def ready_to_update(self) -> bool:
        """Whether the memory holds `update_spec.batch_size` transitions (or is full); one executor
        call per check until it first does."""
        return self._memory_holds_batch()

    def update(self, batch: Optional[dict] = None, time_percentage: Optional[float] = None) -> SACLosses:
        """`update_spec.num_iterations` gradient steps (critics, actor, alpha), each one executor call.

        Args:
            batch: None (sample `update_spec.batch_size` transitions from the memory at every
                step; a prioritized memory gets new priorities after each) or a dict with
                "states" (preprocessed), "actions", "rewards", "terminals", "next_states" and
                optionally "importance_weights" (batched; used for every step).
            time_percentage: Overrides `time_percentage()` (learning-rate schedules).

        Returns:
            `SACLosses` (loss, actor_loss, critic_loss, alpha_loss, alpha) of the last step, as
            numbers computed before that step.

        Raises:
            RLGraphError: If `batch` lacks one of those keys or has another; `RLGraphSpaceError`
                or `RLGraphNonFiniteError` if a value does not fit its space or is NaN/inf.
            RLGraphNonFiniteError: If a loss is NaN or inf (`execution_spec.nan_check` "raise").
        """
        tp = self._time_percentage_arg(time_percentage, "update")
        executor = self._executor()
        if batch is not None:
            external = list(self._record_and_weights(batch, "update(batch)"))
        losses = None
        for _ in range(self.update_spec["num_iterations"]):
            if self.sde_sample_freq is not None:  # gSDE: the actor loss samples with new noise each step.
                self.reset_exploration_noise()
            sync = self.timesteps - self.last_sync_timestep >= self.update_spec["sync_interval"]
            suffix = "_and_sync" if sync else ""
            if batch is not None:
                out = executor.execute(("update_from_external_batch" + suffix, external + [tp]))
            elif self.replay.in_graph:
                out = executor.execute(("update_from_memory" + suffix,
                                        [np.int64(self.update_spec["batch_size"]), tp]))
            else:
                records, indices, weights = self.replay.sample(self.update_spec["batch_size"])
                out = executor.execute(("update_from_external_batch" + suffix, [records, weights, tp]))
                self.replay.update_priorities(indices, out[4])
            losses = self._losses(out)
            if sync:
                self.last_sync_timestep = self.timesteps
            self.num_updates += 1
            self._check_loss(losses.loss, "update")
        self._new_sde_rollout()
        self.last_losses = losses
        return losses

    def get_losses(self, batch: dict) -> SACLosses:
        """The losses of a batch (as for `update`, "importance_weights" optional) without updating."""
        inputs = list(self._record_and_weights(batch, "get_losses(batch)"))
        return self._losses(self._executor().execute(("get_losses", inputs)))

    @staticmethod
    def _losses(out: tuple) -> SACLosses:
        actor, critic, alpha_loss, alpha = (float(x) for x in out[:4])
        return SACLosses(actor + critic + alpha_loss, actor, critic, alpha_loss, alpha)

    def _record_and_weights(self, batch: dict, method: str) -> tuple:
        """(the record, importance weights [B] float32: ones when `batch` has none), checked as
        `observe` checks its inputs (shapes, action ranges, NaN/inf)."""
        return to_weighted_record(batch, f"{self.name}.{method}", self._data_checks)

    def reset(self) -> None:
        if self.root_component.preprocessor.is_stateful:
            self._executor().execute("reset_preprocessor")


def _merge_sync_spec(update_spec: Optional[dict], sync_spec: Optional[dict], owner: str) -> Optional[dict]:
    """`update_spec` with the keys of the original's `value_function_sync_spec` set in it.

    Raises:
        RLGraphSpecError: For unknown keys, or a key that `update_spec` sets to another value.
    """
    if sync_spec is None:
        return update_spec
    sync_spec = check_spec(sync_spec, SYNC_SPEC_KEYS, "value_function_sync_spec", owner)
    merged = dict(update_spec or {})
    for key, value in sync_spec.items():
        if value is None:
            continue
        if key in merged and merged[key] != value:
            raise RLGraphSpecError(f"value_function_sync_spec.{key} and update_spec.{key} differ",
                                   where=f"{owner}(value_function_sync_spec.{key})",
                                   expected=f"update_spec.{key} = {merged[key]!r}", received=repr(value),
                                   hint="both set the target critics' sync: give it once.")
        merged[key] = value
    return merged
