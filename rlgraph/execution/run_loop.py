"""What the training loops (`train`, `train_distributed`) share: the greedy evaluation and the progress bar."""
from __future__ import annotations

from typing import Any


def evaluate_greedily(evaluator: Any, spec: dict, steps: int, logs: Any, evaluations: list) -> bool:
    """The greedy evaluation of `training_spec` at env step `steps`: appends (steps, mean return)
    to `evaluations`, logs it (if `logs`), and returns whether it reached `stop_at_return`."""
    result = evaluator.evaluate(spec["evaluation_episodes"], spec["max_timesteps_per_episode"])
    evaluations.append((steps, result["mean_episode_return"]))
    if logs:
        logs.log_evaluation(steps, result)
    target = spec["stop_at_return"]
    return target is not None and result["mean_episode_return"] >= target


def progress_bar(total: int, enabled: bool, initial: int = 0):
    """A tqdm progress bar over `total` env steps starting at `initial`, or None if not `enabled`."""
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, unit="step", dynamic_ncols=True)
