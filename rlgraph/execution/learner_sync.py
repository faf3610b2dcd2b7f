"""What the learners of a group agree on while they train: seeds, weights, checks.

Used by the single-process launcher's learners (`learners.py`, `training.py`) and by the Ray
learner actors of Ape-X and IMPALA (`ray/learner_group.py`); it imports nothing of either.
"""
from __future__ import annotations

import json
from typing import Any, List

from rlgraph.utils.rlgraph_errors import RLGraphDistributedError

#: Env and agent seeds of rank r are the run's seed + SEED_STRIDE * r (rank 0 is a single run's).
SEED_STRIDE = 1000


def learner_config(config: dict, rank: int) -> dict:
    """Rank `rank`'s copy of a resolved config: seeds moved apart (rank 0 keeps the run's)."""
    config = json.loads(json.dumps(config))
    execution = config.setdefault("execution_spec", {})
    if rank and execution.get("seed") is not None:
        execution["seed"] = int(execution["seed"]) + SEED_STRIDE * rank
    return config


def shared_weight_names(agent: Any) -> List[str]:
    """The variables every rank holds alike: all but the memories' contents (each rank's own data)."""
    from rlgraph.components.memories.memory import Memory
    executor = agent.graph_executor
    own = set()
    for component in [executor.root_component] + executor.root_component.get_all_sub_components():
        if isinstance(component, Memory):
            own.update(component.variable_registry)
    return sorted(name for name in executor.get_weights() if name not in own)


def broadcast_weights(agent: Any, group: Any) -> None:
    """Writes rank 0's values of `shared_weight_names` into every rank's agent."""
    executor = agent.graph_executor
    weights = executor.get_weights(shared_weight_names(agent))
    executor.set_weights(group.broadcast(weights))


def agree(flag: bool, group: Any) -> bool:
    """Rank 0's `flag` on every rank (e.g. whether its evaluation solved the task)."""
    import numpy as np
    return bool(group.broadcast({"flag": np.array([float(flag)])})["flag"][0])


class WeightCheck:
    """Every `interval` updates, compares a checksum of each rank's trainable weights (all ranks
    apply the same averaged steps, so they are bitwise equal) and raises on a difference.

    Raises:
        RLGraphDistributedError: Naming the ranks whose weights differ from rank 0's.
    """

    def __init__(self, group: Any, interval: int):
        self.group, self.interval = group, int(interval)
        self.next_check = self.interval

    def maybe_check(self, agent: Any) -> None:
        if not self.interval or agent.num_updates < self.next_check:
            return
        while self.next_check <= agent.num_updates:
            self.next_check += self.interval
        sums = self.group.gather_scalars(weights_checksum(agent))
        differ = [rank for rank, value in enumerate(sums) if value != sums[0]]
        if differ:
            raise RLGraphDistributedError(f"the weights of learner rank(s) {differ} differ from rank 0's after "
                                          f"{agent.num_updates} updates", where=self.group.where,
                                          expected=f"checksum {sums[0]!r} on every rank", received=list(sums),
                                          hint="an update ran on some ranks only, or an optimizer outside the "
                                               "group changed the weights; the run cannot continue.")


def weights_checksum(agent: Any) -> float:
    """A float64 checksum of the agent's trainable weights (sum of values and of their squares)."""
    import numpy as np
    total = 0.0
    for value in agent.graph_executor.get_weights(trainable_only=True).values():
        value = np.asarray(value, dtype=np.float64)
        total += float(value.sum()) + float(np.square(value).sum())
    return total
