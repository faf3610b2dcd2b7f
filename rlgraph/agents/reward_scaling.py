"""`RewardScaler`: `observe_spec.normalize_rewards`, rewards divided by the running std of the return.

What Stable-Baselines3's `VecNormalize(norm_reward=True)` and gymnasium's `NormalizeReward` do,
done where the agent takes its transitions in (`Agent.observe`), so that the environments (and
every evaluation) keep their own rewards. Per environment (`env_id`) a discounted return runs,

    R_t = gamma * R_{t-1} + r_t     (R = 0 before an episode's first step),

and the mean and variance of all R_t of all environments are kept (Chan et al.'s update, started
at mean 0, variance 1 and a count of 1e-4, as SB3's `RunningMeanStd`). Each reward is stored as

    clip(r_t / sqrt(var + epsilon), -clip, clip)

with the statistics updated by R_t first. An episode's end (terminal or truncated) sets its
R back to 0. `import_observations` stores rewards as given. The statistics and the running
returns are part of the agent's checkpoint (`agent_state.json`).

>>> scaler = RewardScaler(gamma=0.5, clip=10.0)
>>> # R = 1, then 1.5: the first reward is 1 / sqrt(0.0002) = 70.7, clipped; the second 1 / 0.25.
>>> [round(float(r), 4) for r in scaler.scale("env", np.array([1.0, 1.0]), np.array([False, True]))]
[10.0, 3.996]
>>> scaler.returns  # The episode ended: its return starts again from 0.
{'env': 0.0}
"""
from __future__ import annotations

import math
from typing import Any, Dict, Hashable, Optional

import numpy as np

from rlgraph.agents.specs import check_number
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphSpecError

DEFAULTS = {"gamma": 0.99, "clip": 10.0, "epsilon": 1e-8}  # SB3's VecNormalize defaults.
INITIAL_COUNT = 1e-4


class RewardScaler:
    """Scales observed rewards by the running standard deviation of the discounted return.

    Args:
        gamma: The discount of the running return, in [0, 1].
        clip: Scaled rewards are clipped to [-clip, clip] (> 0), or None (no clipping).
        epsilon: Added to the variance under the root (> 0).
    """

    def __init__(self, gamma: float = DEFAULTS["gamma"], clip: Optional[float] = DEFAULTS["clip"],
                 epsilon: float = DEFAULTS["epsilon"]):
        self.gamma, self.clip, self.epsilon = float(gamma), clip if clip is None else float(clip), float(epsilon)
        self.count, self.mean, self.var = INITIAL_COUNT, 0.0, 1.0
        self.returns: Dict[Hashable, float] = {}

    @classmethod
    def from_spec(cls, spec: Any, owner: str) -> Optional["RewardScaler"]:
        """The scaler of `observe_spec.normalize_rewards`: False/None (none), True (SB3's defaults) or
        {"gamma", "clip", "epsilon"} (each optional).

        Raises:
            RLGraphSpecError: Naming the key, for another value or a value out of range.
        """
        where = "observe_spec.normalize_rewards"
        if spec is None or spec is False:
            return None
        if spec is True:
            spec = {}
        if not isinstance(spec, dict) or set(spec) - set(DEFAULTS):
            raise RLGraphSpecError("normalize_rewards must be a bool or a dict of gamma, clip and epsilon",
                                   where=f"{owner}({where})", received=repr(spec)[:100],
                                   expected='true, false or e.g. {"gamma": 0.99, "clip": 10.0}')
        values = dict(DEFAULTS, **spec)
        gamma = check_number(values["gamma"], f"{where}.gamma", owner, 0.0, 1.0)
        clip = check_number(values["clip"], f"{where}.clip", owner, 0.0, low_inclusive=False, allow_none=True)
        epsilon = check_number(values["epsilon"], f"{where}.epsilon", owner, 0.0, low_inclusive=False)
        return cls(gamma, clip, epsilon)

    def scale(self, env_id: Hashable, rewards: np.ndarray, ends: np.ndarray) -> np.ndarray:
        """The scaled `rewards` (a time-ordered 1-D array of one environment; the dtype is kept);
        `ends[t]`: the episode ended after step t."""
        out = np.empty_like(rewards)
        running = self.returns.get(env_id, 0.0)
        for t, reward in enumerate(rewards.tolist()):
            running = self.gamma * running + reward
            self._update(running)
            scaled = reward / math.sqrt(self.var + self.epsilon)
            out[t] = scaled if self.clip is None else min(max(scaled, -self.clip), self.clip)
            if ends[t]:
                running = 0.0
        self.returns[env_id] = running
        return out

    def _update(self, value: float) -> None:
        count = self.count + 1.0
        delta = value - self.mean
        self.mean += delta / count
        # M2 of the pooled data: old var * old count + one new point (Chan et al. with n_b = 1).
        self.var = (self.var * self.count + delta * delta * self.count / count) / count
        self.count = count

    # --- Checkpoints -------------------------------------------------------------------------------
    def state(self, encode_env_id) -> dict:
        """JSON data of the statistics and running returns (`encode_env_id` encodes the env ids)."""
        return {"count": self.count, "mean": self.mean, "var": self.var,
                "returns": [{"env_id": encode_env_id(env_id), "value": value} for env_id, value in self.returns.items()]}

    def checked_state(self, state: Any, decode_env_id, where: str) -> dict:
        """`state` (from `state`) checked, with env ids decoded; raises `RLGraphCheckpointError`."""
        def number(value: Any, name: str, low: float) -> float:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or \
                    value < low:
                raise RLGraphCheckpointError(f"the reward scaler's {name} is damaged", where=where,
                                             expected=f"a finite number >= {low}", received=repr(value)[:100])
            return float(value)

        if not isinstance(state, dict) or sorted(state) != ["count", "mean", "returns", "var"] or \
                not isinstance(state["returns"], list):
            raise RLGraphCheckpointError("the agent state's reward scaler is damaged", where=where,
                                         expected="{count, mean, var, returns}", received=repr(state)[:200])
        returns = {}
        for entry in state["returns"]:
            if not isinstance(entry, dict) or sorted(entry) != ["env_id", "value"]:
                raise RLGraphCheckpointError("a running return of the reward scaler is damaged", where=where,
                                             received=repr(entry)[:100])
            returns[decode_env_id(entry["env_id"], where)] = number(entry["value"], "running return", -math.inf)
        return {"count": number(state["count"], "count", INITIAL_COUNT), "mean": number(state["mean"], "mean", -math.inf),
                "var": number(state["var"], "variance", 0.0), "returns": returns}

    def restore(self, checked: dict) -> None:
        self.count, self.mean, self.var = checked["count"], checked["mean"], checked["var"]
        self.returns = dict(checked["returns"])
