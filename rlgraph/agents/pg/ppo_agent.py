"""`PPOAgent`: proximal policy optimization with the clipped surrogate, GAE and minibatch epochs."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rlgraph.agents.pg.agent import PGUpdate, PolicyGradientAgent, row_subset
from rlgraph.agents.specs import check_number
from rlgraph.components.common.time_dependent_parameters import TimeDependentParameter
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class PPOAgent(PolicyGradientAgent):
    """PPO (Schulman et al. 2017, https://arxiv.org/abs/1707.06347).

    After each rollout of `update_spec.batch_size` env steps (over all environments) the agent
    computes GAE advantages once, then takes gradient steps on minibatches of about
    `update_spec.sample_size` rows (the shuffled rollout split into round(N / sample_size) equal
    parts): `num_epochs` passes over the rollout, or, if
    `update_spec.num_iterations` is given (the original RLgraph's key), that many minibatch steps
    (consecutive passes over fresh shuffles). The loss is `PolicyGradientCore`'s "ppo" loss
    (clipped ratio against the acting weights' log-probs, optional value clipping, entropy bonus);
    `clip_ratio` and `weight_entropy` may be schedules over the training time.

    Args:
        clip_ratio: epsilon of the clipped ratio: a number > 0 or a schedule (["linear", 0.2, 0.0]).
        value_function_clipping: Clip the value change around the acting weights' values to
            +-this (None: no clipping).
        **kwargs: `PolicyGradientAgent` and `Agent` arguments (`gae_lambda`, `weight_entropy`,
            `value_function_spec`, ...).

    update_spec keys besides the common ones: "sample_size" (minibatch rows, default 64; see above),
    "num_epochs" (default 10), "num_iterations" (minibatch steps per update; None: epochs decide).
    """

    update_spec_defaults = {"batch_size": 2048, "update_interval": 1, "sample_size": 64, "num_epochs": 10,
                            "num_iterations": None}
    loss_kind = "ppo"

    def __init__(self, clip_ratio: Any = 0.2, value_function_clipping: Optional[float] = None,
                 name: str = "ppo-agent", **kwargs):
        owner = type(self).__name__
        self.clip_ratio = TimeDependentParameter.from_spec(clip_ratio, scope="clip-ratio")
        if not (self.clip_ratio.value_at(0.0) > 0 and self.clip_ratio.value_at(1.0) >= 0):
            raise RLGraphSpecError("clip_ratio must start > 0 and stay >= 0", where=f"{owner}(clip_ratio)",
                                   received=repr(clip_ratio), hint="e.g. 0.2 or [\"linear\", 0.2, 0.0].")
        self.value_function_clipping = check_number(value_function_clipping, "value_function_clipping", owner,
                                                    low=0, low_inclusive=False, allow_none=True)
        super().__init__(name=name, **kwargs)
        spec = self.update_spec
        spec["sample_size"] = check_number(spec["sample_size"], "update_spec.sample_size", owner, low=1, integer=True)
        spec["num_epochs"] = check_number(spec["num_epochs"], "update_spec.num_epochs", owner, low=1, integer=True)
        spec["num_iterations"] = check_number(spec["num_iterations"], "update_spec.num_iterations", owner, low=1,
                                              integer=True, allow_none=True)

    def _value_function_clipping(self) -> Optional[float]:
        return self.value_function_clipping

    def get_batch_losses(self, batch: dict, clip_ratio: Optional[float] = None,
                         time_percentage: Optional[float] = None) -> PGUpdate:
        """As `PolicyGradientAgent.get_batch_losses`; clip_ratio None: the agent's `clip_ratio` at
        `time_percentage` (as an update at that time uses)."""
        time_percentage = self._time_percentage_arg(time_percentage, "get_batch_losses")
        if clip_ratio is None:
            clip_ratio = self.clip_ratio.value_at(time_percentage)
        return super().get_batch_losses(batch, clip_ratio, time_percentage)

    def _learn(self, batch: dict, time_percentage: np.float32) -> PGUpdate:
        count = len(batch["advantages"])
        # Minibatches of equal size (+-1 row), as close to sample_size as the rollout allows: a
        # rollout a few rows longer than a multiple of sample_size (the worker observes episode ends
        # at once) gives no tiny minibatch with its own advantage statistics.
        per_epoch = max(1, int(count / self.update_spec["sample_size"] + 0.5))
        steps = self.update_spec["num_iterations"] or per_epoch * self.update_spec["num_epochs"]
        clip_ratio = self.clip_ratio.value_at(time_percentage)
        loss_per_item = np.full(count, np.nan, np.float32)
        totals = np.zeros(4)
        order = None
        for step in range(steps):
            if step % per_epoch == 0:
                order = np.array_split(self.rng.permutation(count), per_epoch)
            indices = order[step % per_epoch]
            loss, per_item, policy_loss, value_loss, entropy = self._step(row_subset(batch, indices), time_percentage,
                                                                          clip_ratio)
            if step < per_epoch:
                loss_per_item[indices] = per_item
            totals += (loss, policy_loss, value_loss, entropy)
            self._check_loss(loss, "update")
        loss, policy_loss, value_loss, entropy = totals / steps
        return PGUpdate(np.float32(loss), loss_per_item, np.float32(policy_loss), np.float32(value_loss),
                        np.float32(entropy))
