"""When an agent draws new gSDE exploration noise (`ActionAdapter(use_sde=True)`; a mixin of the
agents that support it: PPO, actor-critic, SAC).

As Stable-Baselines3 does: every `sde_sample_freq` exploring `get_action` calls (one call acts for
all environments of a batch) and at the start of each rollout, i.e. after each update round; SAC
also before each gradient step (its actor loss samples with the noise). `sde_sample_freq` -1: after
updates only.
"""
from __future__ import annotations

from rlgraph.utils.rlgraph_errors import RLGraphError


class SDEScheduleMixin:
    """Needs `self.root_component.policy` (a `Policy`), the executor and a root API
    `reset_exploration_noise` (present when the policy has gSDE leaves)."""

    supports_sde = True

    def _init_sde_schedule(self) -> None:
        # Acting steps between noise draws (None: no gSDE), and exploring calls since the last draw.
        self.sde_sample_freq = self.root_component.policy.sde_sample_freq
        self._sde_steps = 0

    def _count_sde_step(self) -> None:
        """Before an exploring action of the policy: a new draw every `sde_sample_freq` calls."""
        if self.sde_sample_freq is None:
            return
        if self.sde_sample_freq > 0 and self._sde_steps and self._sde_steps % self.sde_sample_freq == 0:
            self.reset_exploration_noise()
        self._sde_steps += 1

    def _new_sde_rollout(self) -> None:
        """After an update round: the next rollout starts with new noise."""
        if self.sde_sample_freq is not None:
            self.reset_exploration_noise()

    def reset_exploration_noise(self) -> None:
        """gSDE: draws new exploration noise now (the agent does it on the schedule above).

        Raises:
            RLGraphError: If the policy explores without gSDE (no `use_sde` in `action_adapter_spec`).
        """
        if self.sde_sample_freq is None:
            raise RLGraphError("the policy has no gSDE exploration noise", where=f"{self.name}.reset_exploration_noise",
                               hint='set "use_sde": true in action_adapter_spec (continuous actions).')
        self._executor().execute("reset_exploration_noise")
        self._sde_steps = 0
