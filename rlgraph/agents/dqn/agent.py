"""`DQNAgent`: DQN with double Q, dueling heads, Huber loss, n-step returns and prioritized replay."""
from __future__ import annotations

import logging
from typing import Any, Dict, Optional

import numpy as np

from rlgraph.agents.agent import Agent
from rlgraph.agents.dqn.core import DQNCore, action_leaf_keys
from rlgraph.agents.records import record_space, to_weighted_record
from rlgraph.agents.specs import check_bool, check_number
from rlgraph.agents.replay_access import (ReplayAgentMixin, check_memory_spec, make_replay, memory_capacity,
                                          replay_input_spaces)
from rlgraph.components.component import Component
from rlgraph.components.policies.policy import Policy
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.utils.nest import leaves, map_structure
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

logger = logging.getLogger(__name__)


class DQNAgent(ReplayAgentMixin, Agent):
    """Deep Q-learning (Mnih et al. 2015, https://doi.org/10.1038/nature14236) with the usual extensions:
    double Q (van Hasselt et al. 2015, https://arxiv.org/abs/1509.06461), dueling heads (Wang et al.
    2016, https://arxiv.org/abs/1511.06581), Huber loss, n-step returns and prioritized replay
    (Schaul et al. 2015, https://arxiv.org/abs/1511.05952).

    The memory lives in the graph ("replay-memory", "prioritized-replay": sampling, the loss, the
    optimizer step and the priority update are one executor call) or, for "mem-prioritized-replay",
    in numpy next to the graph (as Ape-X workers use it); `self.replay` (a `ReplayAccess`,
    rlgraph/agents/replay_access.py) hides which. Transitions travel as one record
    (rlgraph/agents/records.py); the update is written out in `DQNCore`'s docstring. The target
    network is a frozen copy of the policy, synced every `update_spec.sync_interval` env steps
    (hard, or soft with `update_spec.sync_tau` < 1).

    Args:
        double_q: Double Q-learning targets.
        dueling_q: Dueling Q-heads (a `DuelingPolicy`; `policy_spec` may set its stream sizes).
        huber_loss: Huber instead of squared TD loss.
        n_step: n-step returns (folded in by the observe buffers).
        memory_spec: The memory spec (default {"type": "replay-memory", "capacity": 1000}).
        store_last_memory_batch: Keep the last update's sampled batch in `last_memory_batch`
            (needs the python-side memory: an in-graph sample never leaves the graph).
        store_last_q_table: Keep the last `get_action` call's states and Q-values in `last_q_table`.
        **kwargs: `Agent` arguments.
    """

    greedy_apis = ("get_greedy_actions_from_preprocessed_states", "get_greedy_actions")

    def __init__(self, double_q: bool = True, dueling_q: bool = True, huber_loss: bool = False, n_step: int = 1,
                 memory_spec: Optional[dict] = None, store_last_memory_batch: bool = False,
                 store_last_q_table: bool = False, **kwargs):
        owner = type(self).__name__
        self.double_q = check_bool(double_q, "double_q", owner)
        self.dueling_q = check_bool(dueling_q, "dueling_q", owner)
        self.huber_loss = check_bool(huber_loss, "huber_loss", owner)
        self.n_step = check_number(n_step, "n_step", owner, low=1, integer=True)
        self.memory_spec = check_memory_spec(memory_spec, {"type": "replay-memory", "capacity": 1000}, owner)
        self.store_last_memory_batch = check_bool(store_last_memory_batch, "store_last_memory_batch", owner)
        self.store_last_q_table = check_bool(store_last_q_table, "store_last_q_table", owner)
        self.last_memory_batch = None
        self.last_q_table = None
        super().__init__(**kwargs)
        self._check_batch_fits_memory()

    def _check_batch_fits_memory(self) -> None:
        """Warns when update_spec.batch_size exceeds the memory's capacity (sampling is with
        replacement, so updates run; but every batch then repeats records)."""
        capacity = memory_capacity(self.root_component.memory, self.replay)
        if self.update_spec["batch_size"] > capacity:
            logger.warning("%s: update_spec.batch_size %d exceeds the memory's capacity %d: every sampled batch "
                           "repeats records. Lower the batch size or raise memory_spec.capacity.",
                           type(self).__name__, self.update_spec["batch_size"], capacity)

    def _n_step(self) -> int:
        return self.n_step

    # --- Construction ---------------------------------------------------------------------------
    def _create_root(self) -> None:
        for key, leaf in self.action_space.flatten().items():
            if not isinstance(leaf, IntBox):
                raise RLGraphSpecError("DQN needs discrete actions", where=f"{self.name}(action_space{key})",
                                       expected="IntBox leaves", received=str(leaf))
        policy = self._make_policy()
        memory, self.replay = make_replay(self.memory_spec, self.execution_spec["seed"], self._executor, self.name,
                                          "DQN", self.preprocessing_spec)
        if memory is not None and self.store_last_memory_batch:
            raise RLGraphSpecError("store_last_memory_batch needs a python-side memory",
                                   where=f"{self.name}(store_last_memory_batch)", received=self.memory_spec.get("type"),
                                   hint='use memory_spec type "mem-prioritized-replay".')
        optimizer = Component.from_spec(self.optimizer_spec)
        self.root_component = self._make_core(
            policy=policy, preprocessing_spec=self.preprocessing_spec, exploration_spec=self.exploration_spec,
            memory=memory, optimizer=optimizer, discount=self.discount, double_q=self.double_q,
            huber_loss=self.huber_loss, n_step=self.n_step, sync_tau=self.update_spec["sync_tau"],
            action_keys=action_leaf_keys(self.action_space), scope=self.name)
        self.preprocessed_state_space = self.root_component.preprocessor.get_preprocessed_space(
            self.state_space.with_batch_rank()).strip_ranks()
        batch = dict(add_batch_rank=True)
        self.input_spaces = dict(
            states=self.state_space.with_batch_rank(),
            preprocessed_states=self.preprocessed_state_space.with_batch_rank(),
            records=record_space(self.preprocessed_state_space, self.action_space),
            importance_weights=FloatBox(**batch), time_percentage=float, use_exploration=bool)
        # (The memory's size is checked here, not only at build: a memory too large for the RAM
        # fails at construction, also with auto_build=False.)
        self.input_spaces.update(replay_input_spaces(memory, self.input_spaces["records"], self.replay))

    def _make_core(self, **core_args) -> DQNCore:
        """The root component from `DQNCore`'s arguments (a subclass may add its own, e.g. DQfD)."""
        return DQNCore(**core_args)

    def _make_policy(self) -> Policy:
        spec = dict(self.policy_spec)
        if self.network_spec is None and "network_spec" not in spec:
            raise RLGraphSpecError("no network_spec", where=f"{self.name}(network_spec)",
                                   hint='give e.g. [{"type": "dense", "units": 64, "activation": "relu"}].')
        spec.setdefault("network_spec", self.network_spec)
        spec.setdefault("action_space", self.action_space)
        if self.action_adapter_spec is not None:
            spec.setdefault("action_adapter_spec", self.action_adapter_spec)
        spec.setdefault("max_likelihood", True)
        policy_type = spec.pop("type", "dueling-policy" if self.dueling_q else "policy")
        spec.setdefault("scope", "policy")
        return Policy.from_spec(dict(spec, type=policy_type))

    def build(self, build_options: Optional[dict] = None) -> Any:
        stats = super().build(build_options)
        # The target starts as an exact copy of the policy (`sync_target_qnet` would only blend it
        # in with sync_tau < 1).
        source, target = (c.global_scope + "/" for c in (self.root_component.policy,
                                                         self.root_component.target_policy))
        names = [n for n in self.root_component.variable_registry if n.startswith(source)]
        weights = self.graph_executor.get_weights(names)
        self.graph_executor.set_weights({target + n[len(source):]: v for n, v in weights.items()
                                         if target + n[len(source):] in self.root_component.variable_registry})
        return stats

    # --- Observing ------------------------------------------------------------------------------
    def _observe_graph(self, records: dict) -> None:
        self.replay.insert(records)
        self._last_observed_states = records["states"]  # (A reference, for `training_scalars`.)

    # --- Acting ---------------------------------------------------------------------------------
    def get_action(self, states: Any, internals: Any = None, use_exploration: bool = True,
                   apply_preprocessing: bool = True, extra_returns: Any = None,
                   time_percentage: Optional[float] = None) -> Any:
        out = super().get_action(states, internals, use_exploration, apply_preprocessing, extra_returns,
                                 time_percentage)
        if self.store_last_q_table:
            preprocessed = self.preprocess_states(states) if apply_preprocessing else states
            batch, _ = self._batch(preprocessed, self.preprocessed_state_space)
            self.last_q_table = {"states": batch, "q_values": self.get_q_values(batch, apply_preprocessing=False)}
        return out

    def get_q_values(self, states: Any, apply_preprocessing: bool = True) -> Any:
        """Q(s, .) for one state or a batch [B, num_actions] (nested for container actions)."""
        if apply_preprocessing:
            states = self.preprocess_states(states)
        batch, single = self._batch(states, self.preprocessed_state_space)
        q = self._executor().execute(("get_q_values", [batch]))
        return map_structure(lambda x: x[0], q) if single else q

    def training_scalars(self) -> Dict[str, float]:
        """`Agent.training_scalars` plus "train/mean_max_q": the mean over the states of the last
        observe flush (at most `observe_spec.buffer_size`) of max_a Q(s, a), averaged over the
        action leaves. One `get_q_values` call, made here (once per logged point), not on the hot path."""
        scalars = super().training_scalars()
        states = getattr(self, "_last_observed_states", None)
        if states is not None:
            q = self.get_q_values(states, apply_preprocessing=False)
            scalars["train/mean_max_q"] = float(np.mean([np.max(leaf, axis=-1).mean() for leaf in leaves(q)]))
        return scalars

    # --- Updating -------------------------------------------------------------------------------
    def ready_to_update(self) -> bool:
        """Whether the memory holds `update_spec.batch_size` transitions (or is full, for a batch
        larger than the memory): sampling from a memory with fewer records would fail or repeat them.
        One executor call per check until it first holds enough."""
        return self._memory_holds_batch()

    def update(self, batch: Optional[dict] = None, time_percentage: Optional[float] = None) -> Any:
        """One gradient step; syncs the target network when `sync_interval` env steps have passed.

        Args:
            batch: None (sample from the memory) or a dict with "states" (preprocessed),
                "actions", "rewards", "terminals", "next_states" and optionally
                "importance_weights" (batched).
            time_percentage: Overrides `time_percentage()` (learning-rate schedules).

        Returns:
            (loss, loss_per_item) as numpy.

        Raises:
            RLGraphError: If `batch` lacks one of those keys or has another; `RLGraphSpaceError`
                or `RLGraphNonFiniteError` for values that do not fit the spaces or are not
                finite in float32; `RLGraphSpecError` for a `time_percentage` that is not a
                finite number. These are raised before anything changes (target sync, step,
                counters).
            RLGraphNonFiniteError: If the loss is NaN or inf (with `execution_spec.nan_check`
                "raise"); the optimizer step has been taken then.
        """
        # Every argument is checked before anything changes (the target sync, the step, the counters).
        tp = self._time_percentage_arg(time_percentage, "update")
        executor = self._executor()
        checked = None if batch is None else self._record_and_weights(batch, "update(batch)")
        self._sync_target_if_due()
        if batch is None:
            loss, loss_per_item, sampled = self.replay.update_from_memory(self.update_spec["batch_size"], tp)
            if self.store_last_memory_batch:
                self.last_memory_batch = sampled
        else:
            loss, loss_per_item, _ = executor.execute(("update_from_external_batch", [*checked, tp]))
        self.num_updates += 1
        self._check_loss(loss, "update")
        return loss, loss_per_item

    def _sync_target_if_due(self) -> None:
        """Copies the policy into the target network once `sync_interval` env steps have passed."""
        if self.timesteps - self.last_sync_timestep >= self.update_spec["sync_interval"]:
            self._executor().execute("sync_target_qnet")
            self.last_sync_timestep = self.timesteps

    def _record_and_weights(self, batch: dict, method: str) -> tuple:
        """(the record, importance weights [B] float32: ones when `batch` has none), checked as
        `observe` checks its inputs (shapes, action ranges, NaN/inf)."""
        return to_weighted_record(batch, f"{self.name}.{method}", self._data_checks)

    def get_td_loss(self, batch: dict) -> tuple:
        """(loss, loss_per_item, td_errors) of a batch (as for `update`) without updating."""
        return self._executor().execute(("get_td_loss", list(self._record_and_weights(batch, "get_td_loss(batch)"))))

    def reset(self) -> None:
        if self.root_component.preprocessor.is_stateful:
            self._executor().execute("reset_preprocessor")
