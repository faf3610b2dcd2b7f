"""`TD3Agent`: twin delayed deep deterministic policy gradients, `DDPGAgent` with TD3's settings."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rlgraph.agents.ddpg import specs as ddpg_specs
from rlgraph.agents.ddpg.agent import DDPGAgent
from rlgraph.agents.td3.core import TD3Core
from rlgraph.spaces import FloatBox, Space
from rlgraph.utils.rlgraph_errors import RLGraphError

# The paper's settings (Fujimoto et al. 2018, https://arxiv.org/abs/1802.09477, section 6.1 and
# appendix): Adam at 1e-3 for actor and critics; noise in units of the half-range (high - low) / 2,
# which is the paper's action unit for its MuJoCo tasks (bounds [-1, 1]) and Stable-Baselines3's
# (it adds both noises to actions scaled to [-1, 1]).
DEFAULT_LEARNING_RATE = 1e-3
EXPLORATION_STDDEV = 0.1
TARGET_POLICY_NOISE = 0.2
TARGET_NOISE_CLIP = 0.5
POLICY_DELAY = 2


class TD3Agent(DDPGAgent):
    """TD3 (Fujimoto et al. 2018, https://arxiv.org/abs/1802.09477) for one bounded FloatBox action.

    DDPG (`DDPGAgent`, whose arguments and methods it shares) with the paper's three changes:

    1. twin critics: the target y = r + gamma^n (1 - d) min(Q'_1, Q'_2)(s', a') and both critics
       regress to it (their losses summed, one optimizer); the actor's loss, `get_q_values` and
       the priorities of a prioritized memory (|td|) use critic 1;
    2. target policy smoothing: a' = clip(mu'(s') + clip(eps, -c, c), low, high) with
       eps ~ N(0, sigma^2) per item and element;
    3. delayed updates: the actor and all four targets update on every `policy_delay`-th update
       only (`num_updates`, which checkpoints keep, counts them).

    Acting adds Gaussian noise (stddev 0.1 of the half-range per element) unless `noise_spec` says
    otherwise. The root component is `TD3Core`; the losses are `DDPGLossFunction`s (the critics'
    with `num_critics=2`), read by key.

    Args:
        num_critics: Default 2 (1 gives DDPG's single critic with TD3's other changes).
        policy_delay: d >= 1 (default 2).
        target_policy_noise: sigma >= 0 in units of the half-range (default 0.2; 0: no smoothing).
        target_noise_clip: c > 0 in units of the half-range (default 0.5); None: unclipped.
        **kwargs: `DDPGAgent` arguments. Defaults that differ from DDPG's: the actor's learning
            rate (1e-3, as the critics') and the noise (Gaussian, above).

    Raises:
        RLGraphSpecError: For an action space that is not one bounded FloatBox, and for invalid
            arguments (each error names its argument).
    """

    algorithm = "TD3"
    core_class = TD3Core
    default_actor_learning_rate = DEFAULT_LEARNING_RATE

    def __init__(self, num_critics: int = 2, policy_delay: int = POLICY_DELAY,
                 target_policy_noise: float = TARGET_POLICY_NOISE,
                 target_noise_clip: Optional[float] = TARGET_NOISE_CLIP, **kwargs: Any):
        super().__init__(num_critics=num_critics, policy_delay=policy_delay, target_policy_noise=target_policy_noise,
                         target_noise_clip=target_noise_clip, **kwargs)

    def _default_noise_spec(self, action_space: Any) -> dict:
        """Gaussian noise of stddev 0.1 of the half-range: one number where all elements share a
        range, else one per element (an action space that is not a bounded FloatBox gets 0.1; the
        build then reports the space)."""
        try:
            space = Space.from_spec(action_space) if action_space is not None else None
        except RLGraphError:
            space = None
        stddev: Any = EXPLORATION_STDDEV
        if isinstance(space, FloatBox):
            half = ddpg_specs.half_range(space, np.float64)
            if np.all(np.isfinite(half)) and np.all(half > 0):
                scaled = EXPLORATION_STDDEV * half
                stddev = float(scaled.flat[0]) if np.all(scaled == scaled.flat[0]) else scaled.ravel().tolist()
        return {"type": "gaussian", "stddev": stddev}
