"""`ActorCriticAgent`: synchronous advantage actor-critic (A2C) over a vector of environments."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rlgraph.agents.pg.agent import PGUpdate, PolicyGradientAgent
from rlgraph.agents.specs import check_number


class ActorCriticAgent(PolicyGradientAgent):
    """A2C, the synchronous form of A3C (Mnih et al. 2016, https://arxiv.org/abs/1602.01783).

    The worker's environments act together; every `update_spec.batch_size` env steps (e.g. 5 steps
    of 16 environments: 80) the agent takes one gradient step on the whole rollout with GAE
    advantages (`gae_lambda` 1: n-step returns bootstrapped at each fragment's end):

        L = mean(-weight_pg * log pi(a_t|s_t) * A_t - weight_entropy * H + weight_vf * 0.5 * (V(s_t) - G_t)^2)

    (`PolicyGradientCore`'s "a2c" loss; two optimizers with `value_function_optimizer_spec`.)

    Args:
        weight_pg: Weight of the policy-gradient term (default 1).
        weight_entropy: Weight of the entropy bonus, a number or a schedule (default 0.01).
        gae_lambda: Default 1.0.
        name: The agent's name.
        **kwargs: `PolicyGradientAgent` and `Agent` arguments, e.g. `weight_vf`: weight of the value
            term (default 0.5).
    """

    update_spec_defaults = {"batch_size": 80, "update_interval": 1}
    loss_kind = "a2c"

    def __init__(self, weight_pg: Optional[float] = None, weight_entropy: Any = 0.01, gae_lambda: float = 1.0,
                 name: str = "actor-critic-agent", **kwargs):
        self.weight_pg = check_number(1.0 if weight_pg is None else weight_pg, "weight_pg", type(self).__name__,
                                      low=0)
        super().__init__(weight_entropy=weight_entropy, gae_lambda=gae_lambda, name=name, **kwargs)

    def _learn(self, batch: dict, time_percentage: np.float32) -> PGUpdate:
        loss, loss_per_item, policy_loss, value_loss, entropy = self._step(batch, time_percentage, 0.0)
        return PGUpdate(loss, loss_per_item, policy_loss, value_loss, entropy)
