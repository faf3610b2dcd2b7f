"""`ApexAgent`: the agent of Ape-X's learner and sample workers (a DQN with external priorities)."""
from __future__ import annotations

from typing import Optional

import numpy as np

from rlgraph.agents.dqn.agent import DQNAgent

# The memory of the learner's agent under `ApexExecutor`: a placeholder, never sampled (the replay
# shards hold the transitions).
LEARNER_MEMORY_SPEC = {"type": "mem-prioritized-replay", "capacity": 1}


class ApexAgent(DQNAgent):
    """Ape-X (Horgan et al. 2018, https://arxiv.org/abs/1803.00933): DQN whose replay memory and
    acting are spread over actors, as `rlgraph.execution.ray.ApexExecutor` runs it.

    The agent itself is a `DQNAgent` with dueling heads and double Q on by default and two
    methods for the distributed data path, which carries transition records
    (`rlgraph/agents/records.py`):

    - `get_priorities(records)`: |TD error| of each record under the current weights; sample
      workers compute the initial priorities of what they collected.
    - `learn_from_batch(records_with_weights)`: one learner step on a batch sampled from a
      replay shard; returns the new priorities for that shard.

    On one machine without an executor it trains as a DQN with prioritized replay
    (`update()` samples its own memory), so a config runs unchanged in `SingleThreadedWorker`.
    The agent never imports Ray.

    Args:
        memory_spec: The agent's own memory (default: prioritized replay, capacity 1000). Under
            `ApexExecutor` the replay shards of `apex_replay_spec` are used instead.
        **kwargs: `DQNAgent` arguments (`double_q`, `dueling_q` default True).
    """

    def __init__(self, memory_spec: Optional[dict] = None, **kwargs):
        kwargs.setdefault("double_q", True)
        kwargs.setdefault("dueling_q", True)
        super().__init__(memory_spec=memory_spec or {"type": "prioritized-replay", "capacity": 1000}, **kwargs)

    def _check_batch_fits_memory(self) -> None:
        if self.memory_spec != LEARNER_MEMORY_SPEC:  # (An executor's learner never samples its placeholder.)
            super()._check_batch_fits_memory()

    def get_priorities(self, records: dict) -> np.ndarray:
        """|TD error| [B] float32 of a record (states preprocessed), without updating anything."""
        _, _, td_errors = self.get_td_loss(records)
        return np.abs(np.asarray(td_errors, dtype=np.float32))

    def get_acting_weights(self) -> dict:
        """What a sample worker needs (global variable name -> numpy array): the policy's weights
        and the target network's (its initial priorities |TD error| read both)."""
        weights = self.get_weights()
        prefix = self.root_component.target_policy.global_scope + "/"
        weights.update({k: v for k, v in self._executor().get_weights().items() if k.startswith(prefix)})
        return weights

    def learn_from_batch(self, batch: dict, time_percentage: Optional[float] = None) -> tuple:
        """One update from a sampled batch; syncs the target network as `update` does.

        Args:
            batch: A record plus "importance_weights" [B] (as a replay shard samples it).
            time_percentage: Overrides `time_percentage()`.

        Returns:
            (loss, loss_per_item [B], new priorities |TD error| [B] float32).

        Raises:
            RLGraphNonFiniteError: If the loss is NaN or inf (with `execution_spec.nan_check` "raise").
        """
        tp = self._time_percentage_arg(time_percentage, "learn_from_batch")
        records, weights = self._record_and_weights(batch, "learn_from_batch(batch)")  # (Before any change.)
        self._sync_target_if_due()
        loss, loss_per_item, td_errors = self._executor().execute(("update_from_external_batch",
                                                                   [records, weights, tp]))
        self.num_updates += 1
        self._check_loss(loss, "learn_from_batch")
        return loss, loss_per_item, np.abs(np.asarray(td_errors, dtype=np.float32))
