"""`TD3Core`: the root component of `TD3Agent`, `DDPGCore` with twin critics and a policy delay."""
from __future__ import annotations

from typing import Any

from rlgraph.agents.ddpg.core import DDPGCore


class TD3Core(DDPGCore):
    """`DDPGCore` with TD3's defaults (Fujimoto et al. 2018, https://arxiv.org/abs/1802.09477): twin
    critics Q_1, Q_2 (scopes "critic", "critic-2") and a policy delay of 2. One update, in one
    executor call (`DDPGCore` writes out each step):

        a'  = clip(mu'(s') + clip(eps, -c, c), low, high),  eps ~ N(0, sigma^2)   # target smoothing
        y   = r + gamma^n (1 - d) min(Q'_1(s', a'), Q'_2(s', a'))                 # no gradient
        critic_loss = mean(w l(y - Q_1(s, a))) + mean(w l(y - Q_2(s, a)))        # one optimizer, both critics
        every policy_delay-th update: actor step on -mean Q_1(s, mu(s)), then all four targets
            follow softly (tau); the updates between move no target.

    sigma and c arrive in action units (`TD3Agent` scales its half-range units). The priorities of
    a prioritized memory are |y - Q_1(s, a)|.

    Args:
        num_critics: Default 2.
        policy_delay: Default 2.
        scope: Default "td3-core".
        **kwargs: The other `DDPGCore` arguments.
    """

    def __init__(self, num_critics: int = 2, policy_delay: int = 2, scope: str = "td3-core", **kwargs: Any):
        super().__init__(num_critics=num_critics, policy_delay=policy_delay, scope=scope, **kwargs)
