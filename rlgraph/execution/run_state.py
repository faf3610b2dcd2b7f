"""What lets a `rlgraph train` run stop and resume without losing anything.

- `LoopState`: the training loop's own counters (env steps, episodes, evaluations, the next
  evaluation and checkpoint steps, the best evaluation). Every checkpoint of a run holds them as
  `train_state.json` (next to the agent's weights, optimizer slots, memory, counters and RNG
  states), so `--resume` continues the loop where the checkpoint was written.
- `resume_point`: the newest checkpoint of a run directory and its config.
- `trim_csv`: drops the log rows that an interrupted process wrote after that checkpoint.
- `StopOnSignals`: SIGINT/SIGTERM ask the run to stop after the current env step.
- `check_new_output_dir`: a new run never writes into another run's directory.
"""
from __future__ import annotations

import csv
import logging
import math
import os
import signal
import sys
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from rlgraph.execution.run_lock import LOCK_FILE
from rlgraph.utils.checkpoint_dir import is_checkpoint_dir, read_json, verify_checkpoint
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphError, RLGraphSpecError

logger = logging.getLogger(__name__)

TRAIN_STATE_FILE = "train_state.json"  # LoopState in every checkpoint of a run.
BEST_FILE = "best.json"                # {"step", "mean_return"} in checkpoints/best.
TRAIN_STATE_VERSION = 1
# The checkpoints a run writes besides step-N: "final" (the end), "best" (the best evaluation).
FINAL, BEST = "final", "best"


@dataclass
class LoopState:
    """The counters of a training loop (`training.train`).

    Attributes:
        steps: Env steps taken (over all environments).
        episodes: Training episodes finished.
        episode_count: Rows of episodes.csv (its "episode" numbering).
        evaluations: [(step, mean return)] of the greedy evaluations so far.
        next_eval: The env step of the next evaluation (inf: none).
        next_checkpoint: The env step of the next periodic checkpoint (inf: none).
        best_return: The best evaluation's mean return so far (None: no evaluation yet).
        solved_at: The step whose evaluation reached `stop_at_return` (None: not reached).
        last_update_timestep: The worker's update bookkeeping (agent timestep of the last update round).
    """

    steps: int = 0
    episodes: int = 0
    episode_count: int = 0
    evaluations: List[Tuple[int, float]] = field(default_factory=list)
    next_eval: float = math.inf
    next_checkpoint: float = math.inf
    best_return: Optional[float] = None
    solved_at: Optional[int] = None
    last_update_timestep: Optional[int] = None

    def note_evaluation(self, solved: bool) -> bool:
        """After an evaluation was appended to `evaluations` at step `steps`: records the step at which
        one first reached `stop_at_return` (`solved`), and whether its mean return is the best so far
        (then `best_return` becomes it and True is returned)."""
        if solved and self.solved_at is None:
            self.solved_at = self.steps
        mean_return = self.evaluations[-1][1] if self.evaluations else math.nan
        if math.isnan(mean_return) or (self.best_return is not None and mean_return <= self.best_return):
            return False
        self.best_return = mean_return
        return True

    def to_json(self) -> Dict[str, Any]:
        value = asdict(self)
        value["evaluations"] = [[int(s), float(r)] for s, r in self.evaluations]
        for key in ("next_eval", "next_checkpoint"):
            value[key] = None if math.isinf(value[key]) else int(value[key])
        return {"version": TRAIN_STATE_VERSION, **value}

    @classmethod
    def from_json(cls, value: Any, where: str) -> "LoopState":
        """The state `to_json` wrote.

        Raises:
            RLGraphCheckpointError: For a file of another version or with a value out of range.
        """
        def bad(key, expected):
            return RLGraphCheckpointError(f"'{TRAIN_STATE_FILE}' is damaged: '{key}'", where=where,
                                          expected=expected, received=repr(value.get(key))[:100])

        if not isinstance(value, dict) or value.get("version") != TRAIN_STATE_VERSION:
            raise RLGraphCheckpointError(f"'{TRAIN_STATE_FILE}' is not a training-loop state of this version",
                                         where=where, expected=f"version {TRAIN_STATE_VERSION}")
        state = cls()
        for key in ("steps", "episodes", "episode_count"):
            if not _is_count(value.get(key)):
                raise bad(key, "an integer >= 0")
            setattr(state, key, value[key])
        for key in ("next_eval", "next_checkpoint", "solved_at", "last_update_timestep"):
            if value.get(key) is not None and not _is_count(value[key]):
                raise bad(key, "null or an integer >= 0")
        state.next_eval = math.inf if value.get("next_eval") is None else value["next_eval"]
        state.next_checkpoint = math.inf if value.get("next_checkpoint") is None else value["next_checkpoint"]
        state.solved_at, state.last_update_timestep = value.get("solved_at"), value.get("last_update_timestep")
        evaluations = value.get("evaluations")
        if not isinstance(evaluations, list) or not all(
                isinstance(e, list) and len(e) == 2 and _is_count(e[0]) and _is_number(e[1]) for e in evaluations):
            raise bad("evaluations", "a list of [step, mean return]")
        state.evaluations = [(int(s), float(r)) for s, r in evaluations]
        if value.get("best_return") is not None and not _is_number(value["best_return"]):
            raise bad("best_return", "null or a number")
        state.best_return = value.get("best_return")
        return state


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# --- Output directories ---------------------------------------------------------------------------
def is_empty_run_dir(path: str) -> bool:
    """Whether directory `path` is missing or holds nothing but a run's lock file (`run_lock.py`)."""
    return not os.path.isdir(path) or not [name for name in os.listdir(path) if name != LOCK_FILE]


def check_new_output_dir(output_dir: str, where: str) -> None:
    """Refuses a directory that holds anything (another run's logs and checkpoints) but a lock file.

    Raises:
        RLGraphError: Naming the directory, with `--resume` and another directory as hints.
    """
    if not is_empty_run_dir(output_dir):
        raise RLGraphError("the output directory is not empty (it holds another run)", where=where,
                           expected="a new or empty directory", received=output_dir,
                           hint=f"continue that run with `rlgraph train --resume {output_dir}` (python: "
                                f"train(resume=...)), or choose another --output-dir.")


# --- Resuming -------------------------------------------------------------------------------------
@dataclass
class ResumePoint:
    """Where a resumed run starts: `checkpoint` (a directory) holding `state` and `config`."""

    run_dir: str
    checkpoint: str
    state: LoopState
    config: dict


def check_run_dir(run_dir: str, where: str) -> None:
    """Refuses a `run_dir` to resume that no run wrote (it has no config.json).

    Raises:
        RLGraphError: Naming the directory.
    """
    if not os.path.isdir(run_dir) or not os.path.isfile(os.path.join(run_dir, "config.json")):
        raise RLGraphError("no run directory to resume", where=where, received=run_dir,
                           expected="a directory written by `rlgraph train --output-dir` (with config.json)")


def resume_point(run_dir: str, where: str = "train(resume, --resume)") -> ResumePoint:
    """The newest checkpoint of `run_dir` by env step ("final" included, "best" not), verified
    against its manifest; a damaged one is skipped with a warning for the next newest.

    Raises:
        RLGraphError: No run directory, or no checkpoint of it with a training-loop state.
    """
    check_run_dir(run_dir, where)
    directory = os.path.join(run_dir, "checkpoints")
    candidates = []
    for name in sorted(os.listdir(directory)) if os.path.isdir(directory) else ():
        path = os.path.join(directory, name)
        if name == BEST or name.startswith(".") or not is_checkpoint_dir(path):
            continue
        try:
            state = LoopState.from_json(read_json(os.path.join(path, TRAIN_STATE_FILE), where), where)
        except RLGraphCheckpointError as error:
            logger.warning("%s: skipping checkpoint %s: %s", where, path, error)
            continue
        candidates.append((state.steps, name == FINAL, path, state))
    for _, _, path, state in sorted(candidates, key=lambda c: c[:2], reverse=True):
        try:
            manifest = verify_checkpoint(path, None, where)
        except RLGraphCheckpointError as error:
            logger.warning("%s: skipping damaged checkpoint %s: %s", where, path, error)
            continue
        if TRAIN_STATE_FILE not in manifest["files"] or "config.json" not in manifest["files"]:
            logger.warning("%s: skipping checkpoint %s: its manifest lacks %s or config.json", where, path,
                           TRAIN_STATE_FILE)
            continue
        config = read_json(os.path.join(path, "config.json"), where)
        if not isinstance(config, dict):
            continue
        _raise_best_return(state, os.path.join(directory, BEST, BEST_FILE), where)
        return ResumePoint(run_dir=run_dir, checkpoint=path, state=state, config=config)
    raise RLGraphError("the run has no checkpoint to resume from", where=where, received=run_dir,
                       expected=f"checkpoints/step-N or checkpoints/final with {TRAIN_STATE_FILE} (written by "
                                "this version of `rlgraph train`)",
                       hint="checkpoints are written every training_spec.checkpoint_interval steps, at the end, "
                            "on Ctrl-C/SIGTERM and when an environment fails.")


def _raise_best_return(state: LoopState, best_file: str, where: str) -> None:
    """checkpoints/best may come from an evaluation after the checkpoint a run resumes from (the
    interrupted process got there): its return stays the one to beat, so it is not replaced by a
    worse agent."""
    try:
        best = read_json(best_file, where) if os.path.isfile(best_file) else None
    except RLGraphCheckpointError:
        return
    value = best.get("mean_return") if isinstance(best, dict) else None
    if _is_number(value) and not math.isnan(value) and (state.best_return is None or value > state.best_return):
        state.best_return = float(value)


def trim_csv(path: str, last_step: int) -> int:
    """Drops the rows of a run's CSV whose "step" lies after `last_step` (the rows an interrupted
    process wrote after the checkpoint a run resumes from); the file is replaced atomically.

    Returns:
        The number of rows dropped.
    """
    if not os.path.isfile(path):
        return 0
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    if not rows or "step" not in rows[0]:
        return 0
    column = rows[0].index("step")

    def keep(row):
        try:
            return int(row[column]) <= last_step
        except (IndexError, ValueError):
            return True
    kept = [rows[0]] + [row for row in rows[1:] if keep(row)]
    dropped = len(rows) - len(kept)
    if dropped:
        from rlgraph.utils.run_logs import write_atomically
        write_atomically(path, lambda handle: csv.writer(handle).writerows(kept), newline="")
    return dropped


# --- Signals --------------------------------------------------------------------------------------
SIGNAL_NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}


class StopOnSignals:
    """Within the block, the first SIGINT or SIGTERM calls `request_stop()` (the run then ends
    after the current env step and saves); a second one raises `KeyboardInterrupt` at once
    (checkpoints are written atomically, so a save it cuts short leaves the previous ones intact).

    Handlers are installed only in the main thread (Python delivers signals there) and the
    previous ones are restored on exit.

    Args:
        request_stop: Called (from the handler) with nothing; must only set flags.
    """

    def __init__(self, request_stop: Callable[[], None]):
        self.request_stop = request_stop
        self.signal_number: Optional[int] = None
        self._previous: Dict[int, Any] = {}

    @property
    def name(self) -> str:
        return SIGNAL_NAMES.get(self.signal_number, str(self.signal_number))

    def __enter__(self) -> "StopOnSignals":
        if threading.current_thread() is threading.main_thread():
            for number in SIGNAL_NAMES:
                self._previous[number] = signal.signal(number, self._handle)
        return self

    def __exit__(self, *exc_info) -> None:
        for number, handler in self._previous.items():
            signal.signal(number, handler)
        self._previous.clear()

    def _handle(self, number: int, frame: Any) -> None:
        if self.signal_number is not None:
            raise KeyboardInterrupt(f"{SIGNAL_NAMES.get(number, number)} while stopping")
        self.signal_number = number
        print(f"\nrlgraph train: {self.name} received: finishing the current env step, then saving a checkpoint "
              "(a second signal quits at once).", file=sys.stderr, flush=True)
        self.request_stop()


def note_checkpoint(error: RLGraphError, checkpoint: str, run_dir: str, step: int) -> RLGraphError:
    """`error` with a hint naming the checkpoint written after it and how to resume."""
    note = f"a checkpoint at step {step} is in {checkpoint}: fix the cause, then `rlgraph train --resume {run_dir}`."
    error.hint = f"{error.hint} Then: {note}" if error.hint else note[0].upper() + note[1:]
    error.args = (error._compose(),)
    return error


def check_resume_arguments(where: str, **given: Any) -> None:
    """Refuses arguments that would change a resumed run's config (it keeps its own)."""
    changed = [name for name, value in given.items() if value not in (None, (), [], "")]
    if changed:
        raise RLGraphSpecError("a resumed run keeps the config it started with", where=where,
                               received=", ".join(changed),
                               hint="only --steps (num_timesteps), --learners and --device may change on --resume; "
                                    "start a new run (another --output-dir) to change anything else.")
