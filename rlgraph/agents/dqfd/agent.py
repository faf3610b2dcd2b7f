"""`DQFDAgent`: deep Q-learning from demonstrations (a DQN with an expert memory and a large-margin loss)."""
from __future__ import annotations

import logging
import math
from typing import Any, Optional

import numpy as np

from rlgraph.agents.data_checks import OBSERVE_ARGS
from rlgraph.agents.dqfd.core import DQFDCore
from rlgraph.agents.dqn.agent import DQNAgent
from rlgraph.agents.observe_buffers import ObserveBuffers, Transition, stack_transitions
from rlgraph.agents.records import to_record
from rlgraph.agents.specs import check_number
from rlgraph.components.component import Component
from rlgraph.components.memories.memory_size import check_memory_size
from rlgraph.components.memories.prioritized_replay import PrioritizedReplay
from rlgraph.components.memories.replay_memory import ReplayMemory
from rlgraph.spaces import BoolBox, IntBox
from rlgraph.utils.nest import add_batch_rank, batch_row
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError

logger = logging.getLogger(__name__)


class DQFDAgent(DQNAgent):
    """Deep Q-learning from demonstrations (Hester et al. 2017, https://arxiv.org/abs/1704.03732).

    A `DQNAgent` (double Q, dueling heads, Huber loss, n-step returns and prioritized replay as
    configured) with a second, expert memory for demonstrations and DQfD's supervised large-margin
    loss on them (`DQFDLossFunction`; the update is written out in `DQFDCore`'s docstring):

    - `observe_demos(...)` / `import_demonstrations(records)` fill the expert memory; the agent's
      own experience never overwrites it.
    - `update_from_demos(batch_size, time_percentage, num_updates)` pre-trains on demonstrations
      alone: every item gets the TD loss plus `supervised_weight` * J_E.
    - `update()` draws `demo_batch_size` = round(demo_sample_ratio * batch_size) items of each batch
      from the expert memory and the rest from the own memory; only the expert items get J_E.

    Args:
        expert_margin: The margin by which the expert's action must beat every other action's
            Q-value (>= 0; the paper uses 0.8).
        supervised_weight: The weight of the large-margin loss (lambda_2 in the paper, >= 0).
        demo_memory_spec: The expert memory (default {"type": "replay-memory", "capacity": 10000});
            a uniform "replay-memory". Its scope is "demo-memory".
        demo_sample_ratio: The fraction of each sampled batch that comes from the expert memory,
            in [0, 1]. For 0 < ratio < 1 and batch_size >= 2 at least one item comes from each
            memory. While the expert memory is empty, the whole batch comes from the own memory.
        **kwargs: `DQNAgent` arguments. The own memory must live in the graph ("replay-memory" or
            "prioritized-replay").

    Raises:
        RLGraphSpecError: For a bad value of these arguments or a memory type that cannot serve.
    """

    def __init__(self, expert_margin: float = 0.5, supervised_weight: float = 1.0,
                 demo_memory_spec: Optional[dict] = None, demo_sample_ratio: float = 0.2, **kwargs):
        owner = type(self).__name__
        self.expert_margin = check_number(expert_margin, "expert_margin", owner, low=0)
        self.supervised_weight = check_number(supervised_weight, "supervised_weight", owner, low=0)
        self.demo_sample_ratio = check_number(demo_sample_ratio, "demo_sample_ratio", owner, low=0, high=1)
        if demo_memory_spec is not None and not isinstance(demo_memory_spec, dict):
            raise RLGraphSpecError("demo_memory_spec must be a dict", where=f"{owner}(demo_memory_spec)",
                                   expected='e.g. {"type": "replay-memory", "capacity": 10000}',
                                   received=repr(demo_memory_spec)[:80])
        self.demo_memory_spec = dict(demo_memory_spec or {"type": "replay-memory", "capacity": 10000})
        if "capacity" in self.demo_memory_spec:
            self.demo_memory_spec["capacity"] = check_number(self.demo_memory_spec["capacity"],
                                                             "demo_memory_spec.capacity", owner, low=1, integer=True)
        self.demo_memory_spec.setdefault("type", "replay-memory")
        self.demo_memory_spec.setdefault("scope", "demo-memory")
        self._num_demos = 0        # Stored demonstrations (mirrors the expert memory's size).
        self._demos_inserted = 0   # Inserted since construction (to warn once when old ones are overwritten).
        super().__init__(**kwargs)
        self.demo_batch_size = _demo_batch_size(self.demo_sample_ratio, self.update_spec["batch_size"])

    # --- Construction ---------------------------------------------------------------------------
    def _make_core(self, **core_args) -> DQFDCore:
        if core_args["memory"] is None:
            raise RLGraphSpecError("DQfD mixes its two memories inside the graph; the own memory must live there",
                                   where=f"{self.name}(memory_spec.type)",
                                   expected='"replay-memory" or "prioritized-replay"',
                                   received=repr(self.memory_spec.get("type")))
        demo_memory = Component.from_spec(self.demo_memory_spec)
        if not isinstance(demo_memory, ReplayMemory) or isinstance(demo_memory, PrioritizedReplay):
            raise RLGraphSpecError("the expert memory must be a uniform replay memory",
                                   where=f"{self.name}(demo_memory_spec.type)", expected='"replay-memory"',
                                   received=repr(self.demo_memory_spec.get("type")),
                                   hint="demonstrations are sampled uniformly; prioritize the own memory instead.")
        if demo_memory.scope == core_args["memory"].scope:
            raise RLGraphSpecError("the two memories need different scopes",
                                   where=f"{self.name}(demo_memory_spec.scope)", received=repr(demo_memory.scope),
                                   hint='leave out the scope ("demo-memory").')
        return DQFDCore(demo_memory=demo_memory, expert_margin=self.expert_margin,
                        supervised_weight=self.supervised_weight, **core_args)

    def _create_root(self) -> None:
        super()._create_root()
        demo_memory = self.root_component.demo_memory
        check_memory_size(demo_memory.capacity, demo_memory.storage_bytes(self.input_spaces["records"]),
                          demo_memory.global_scope)
        self.input_spaces.update(demo_batch_size=IntBox(1, 2 ** 31 - 1, dtype="int64"),
                                 expert_mask=BoolBox(add_batch_rank=True))

    # --- Demonstrations -------------------------------------------------------------------------
    def observe_demos(self, preprocessed_states: Any, actions: Any, rewards: Any, next_states: Any,
                      terminals: Any) -> None:
        """Stores expert transitions (one, or a time-ordered batch) in the expert memory.

        Checked as `observe` checks its arguments (errors name `observe_demos(...)`). With
        `n_step` > 1 the transitions of a call are folded into n-step returns as `observe` folds
        an episode; a call should then hold whole episodes: where the batch ends without a
        terminal, the last n - 1 transitions are dropped (their bootstrap would need a shorter
        discount).

        Args:
            preprocessed_states: s_t (preprocessed), single or batched.
            actions: The expert's actions a_t.
            rewards: r_t.
            next_states: s_{t+1} (preprocessed).
            terminals: Whether s_{t+1} is terminal.

        Raises:
            RLGraphSpaceError, RLGraphNonFiniteError: As `observe`; nothing is stored then.
        """
        states, single = self._batch(preprocessed_states, self.preprocessed_state_space,
                                     "observe_demos(preprocessed_states)")
        if single:
            actions, next_states = add_batch_rank(actions), add_batch_rank(next_states)
        where = {field: (f"{self.name}.observe_demos({arg}", ")") for field, arg in OBSERVE_ARGS.items()}
        record = self._data_checks.batch({"states": states, "actions": actions, "rewards": rewards,
                                          "terminals": terminals, "next_states": next_states}, where=where)
        if self.n_step > 1:
            record = self._fold_n_step(record)
            if record is None:
                return
        self._insert_demos(record)

    def import_demonstrations(self, demonstrations: Any) -> None:
        """Writes demonstration records straight into the expert memory (as `import_observations`
        writes into the own memory; n-step returns must already be folded in).

        Args:
            demonstrations: A record (a dict with "states" (preprocessed), "actions", "rewards",
                "terminals", "next_states", batched) or a list of records.

        Raises:
            RLGraphError, RLGraphSpaceError, RLGraphNonFiniteError: As `import_observations`;
                all records are checked before any is written.
        """
        where = f"{self.name}.import_demonstrations(demonstrations)"
        batches = demonstrations if isinstance(demonstrations, list) else [demonstrations]
        records = [to_record(batch, where, checks=self._data_checks) for batch in batches]
        for record in records:
            self._insert_demos(record)

    def demo_memory_size(self) -> int:
        """The number of demonstrations in the expert memory."""
        return int(self._executor().execute("get_demo_memory_size"))

    def _insert_demos(self, record: dict) -> None:
        self._executor().execute(("insert_demos", [record]))
        count, capacity = len(record["rewards"]), self.root_component.demo_memory.capacity
        if self._demos_inserted <= capacity < self._demos_inserted + count:
            logger.warning("%s: more demonstrations than the expert memory holds (capacity %d): the oldest are "
                           "overwritten. Raise demo_memory_spec.capacity to keep them all.", self.name, capacity)
        self._demos_inserted += count
        self._num_demos = min(capacity, self._num_demos + count)

    def _fold_n_step(self, record: dict) -> Optional[dict]:
        """The record's transitions as n-step transitions (episodes split at terminals)."""
        buffers = ObserveBuffers(len(record["rewards"]), n_step=self.n_step, discount=self.discount)
        rows = [Transition(batch_row(record["states"], i), batch_row(record["actions"], i), float(record["rewards"][i]),
                           bool(record["terminals"][i]), batch_row(record["next_states"], i))
                for i in range(len(record["rewards"]))]
        ready, start = [], 0
        for i, row in enumerate(rows):
            if row.terminal or i == len(rows) - 1:
                ready += buffers.add("demos", rows[start:i + 1], episode_end=True)
                start = i + 1
        if len(ready) < len(rows):
            logger.warning("%s.observe_demos: %d of %d transitions dropped: with n_step %d, an episode that ends "
                           "without a terminal loses its last n - 1 transitions.", self.name, len(rows) - len(ready),
                           len(rows), self.n_step)
        return stack_transitions(ready) if ready else None

    # --- Updating -------------------------------------------------------------------------------
    def update(self, batch: Optional[dict] = None, time_percentage: Optional[float] = None,
               update_from_demos: bool = True, expert_margins: Any = None,
               apply_demo_loss_to_batch: Any = False) -> Any:
        """One gradient step; syncs the target network when `sync_interval` env steps have passed.

        Args:
            batch: None: sample the memories; or a record dict (as `DQNAgent.update`), used as it is.
            time_percentage: Overrides `time_percentage()`.
            update_from_demos: Mix `demo_batch_size` demonstrations into a batch sampled from the
                memories (False: the own memory only). An external `batch` is used as it is.
            expert_margins: Must be None: the original RLgraph's per-item margins are not supported
                (every expert item has the margin `expert_margin`).
            apply_demo_loss_to_batch: Which items of an external `batch` are expert items (get the
                large-margin loss): a bool for all of them, or one bool per item.

        Returns:
            (loss, loss_per_item) as numpy.

        Raises:
            RLGraphError, RLGraphSpaceError: For a bad batch or expert flags.
            RLGraphNonFiniteError: If the loss is NaN or inf (with `execution_spec.nan_check` "raise").
        """
        if expert_margins is not None:
            raise RLGraphSpecError("per-item expert margins are not supported",
                                   where=f"{self.name}.update(expert_margins)", expected="None",
                                   received=repr(expert_margins)[:80],
                                   hint="every expert item has the margin expert_margin (a constructor argument).")
        tp = self._time_percentage_arg(time_percentage, "update")
        executor = self._executor()
        if batch is not None:  # (Checked before anything changes: the target sync, the step, the counters.)
            records, weights = self._record_and_weights(batch, "update(batch)")
            mask = self._expert_mask(apply_demo_loss_to_batch, len(records["rewards"]), "update")
        self._sync_target_if_due()
        if batch is None:
            batch_size = self.update_spec["batch_size"]
            num_demos = self.demo_batch_size if update_from_demos and self._num_demos > 0 else 0
            if num_demos == 0:
                loss, loss_per_item, _ = self.replay.update_from_memory(batch_size, tp)
            elif num_demos == batch_size:
                loss, loss_per_item = executor.execute(("update_from_demos", [np.int64(batch_size), tp]))
            else:
                loss, loss_per_item = executor.execute(("update_from_memory_and_demos", [
                    np.int64(batch_size - num_demos), np.int64(num_demos), tp]))
        else:
            loss, loss_per_item, _ = executor.execute(("update_from_external_batch", [records, weights, mask, tp]))
        self.num_updates += 1
        self._check_loss(loss, "update")
        return loss, loss_per_item

    def update_from_demos(self, batch_size: Optional[int] = None, time_percentage: Optional[float] = None,
                          num_updates: int = 1) -> Any:
        """Pre-training: `num_updates` gradient steps on batches of demonstrations alone.

        In pre-training an update counts as a step for the target network: it is synced before
        every update whose number (`num_updates` so far) is a multiple of `update_spec.sync_interval`
        (every update for 0).

        Args:
            batch_size: Demonstrations per update (default `update_spec.batch_size`).
            time_percentage: Overrides `time_percentage()`.
            num_updates: How many updates.

        Returns:
            (loss, loss_per_item) of the last update.

        Raises:
            RLGraphSpecError: For a bad `batch_size` or `num_updates`.
            RLGraphError: If the expert memory is empty.
            RLGraphNonFiniteError: If a loss is NaN or inf (with `execution_spec.nan_check` "raise").
        """
        owner = f"{self.name}.update_from_demos"
        batch_size = self.update_spec["batch_size"] if batch_size is None else \
            check_number(batch_size, "batch_size", owner, low=1, integer=True)
        num_updates = check_number(num_updates, "num_updates", owner, low=1, integer=True)
        if self._num_demos == 0:
            raise RLGraphError("the expert memory is empty", where=f"{owner}()",
                               hint="store demonstrations first (observe_demos or import_demonstrations).")
        tp = self._time_percentage_arg(time_percentage, "update_from_demos")
        executor, sync_interval = self._executor(), self.update_spec["sync_interval"]
        for _ in range(num_updates):
            if sync_interval == 0 or self.num_updates % sync_interval == 0:
                executor.execute("sync_target_qnet")
            loss, loss_per_item = executor.execute(("update_from_demos", [np.int64(batch_size), tp]))
            self.num_updates += 1
            self._check_loss(loss, "update_from_demos")
        return loss, loss_per_item

    def get_td_loss(self, batch: dict, apply_demo_loss_to_batch: Any = False) -> tuple:
        """(loss, loss_per_item, td_errors) of a batch (as for `update`) without updating."""
        records, weights = self._record_and_weights(batch, "get_td_loss(batch)")
        mask = self._expert_mask(apply_demo_loss_to_batch, len(records["rewards"]), "get_td_loss")
        return self._executor().execute(("get_td_loss", [records, weights, mask]))

    def _expert_mask(self, flags: Any, count: int, method: str) -> np.ndarray:
        """[count] bool from a bool or one bool per item."""
        if isinstance(flags, (bool, np.bool_)):
            return np.full(count, bool(flags))
        mask = np.asarray(flags)
        if mask.dtype != bool or mask.shape != (count,):
            raise RLGraphSpaceError(BoolBox(), "expert flags must be one bool, or one bool per item",
                                    where=f"{self.name}.{method}(apply_demo_loss_to_batch)",
                                    expected=f"True/False or a bool array of shape ({count},)",
                                    received=f"dtype {mask.dtype}, shape {mask.shape}")
        return mask

    # --- Checkpoints (the expert memory is a graph component: its records are in the model) ------
    def _replay_memories(self) -> list:
        """The own memory only: saver_spec.save_replay false keeps the demonstrations (training
        does not refill them)."""
        return [m for m in super()._replay_memories() if m is not self.root_component.demo_memory]

    def _load_files(self, checked: Any) -> None:
        super()._load_files(checked)
        self._num_demos = self.demo_memory_size()
        self._demos_inserted = self._num_demos


def _demo_batch_size(ratio: float, batch_size: int) -> int:
    """round(ratio * batch_size), kept in [1, batch_size - 1] for 0 < ratio < 1 and batch_size >= 2."""
    count = int(math.floor(ratio * batch_size + 0.5))
    if 0 < ratio < 1 and batch_size >= 2:
        count = min(max(count, 1), batch_size - 1)
    return count
