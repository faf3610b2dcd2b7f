"""`RunLogs` and the checkpoints of a training run (`rlgraph train`, `train(output_dir=...)`).

config.json, episodes.csv and evaluations.csv, TensorBoard event files (and the hooks' `on_log`),
the checkpoints (step-N, best, final, each with the run's config and loop state) and the
learning-curve PNG. A resumed run's logs continue the files of the run it resumes.

A write that fails (a full disk) raises an `RLGraphError` (`RLGraphCheckpointError` for a
checkpoint) with the `OSError` chained, and leaves every file whole: checkpoints, config.json and
the PNG are written to a temporary file and renamed into place, a CSV row that fails is cut off.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
from typing import Any, Callable, Dict, Iterator, Optional, Sequence

from rlgraph.agents.specs import SAVER_SPEC_DEFAULTS, SUMMARY_SPEC_DEFAULTS
from rlgraph.execution.run_state import (BEST, BEST_FILE, FINAL, TRAIN_STATE_FILE, LoopState, note_checkpoint,
                                         trim_csv)
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphEnvError, RLGraphError, RLGraphInterrupted

logger = logging.getLogger(__name__)


def resume_agent(agent: Any, checkpoint: str) -> None:
    """Loads `checkpoint` for a resumed run. Its envs start fresh episodes, so the transitions the
    agent still buffers end as a truncated episode would: the complete ones go to the memory,
    the rest are dropped."""
    agent.load_model(checkpoint)
    agent.flush_buffers()
    agent.reset_env_buffers()


def interrupted(signals: Any, run: LoopState, spec: dict, logs: "RunLogs", store: Callable[..., str]) -> Exception:
    """The checkpoint, logs and curve of a run stopped by a signal; the error that says so."""
    path = logs.periodic_checkpoint(run.steps, store, run)
    logs.close()
    return RLGraphInterrupted(f"stopped by {signals.name} at step {run.steps} of {spec['num_timesteps']}; "
                              f"checkpoint written to {path}.", signal_number=signals.signal_number, checkpoint=path,
                              run_dir=logs.output_dir, step=run.steps,
                              hint=f"continue the run with `rlgraph train --resume {logs.output_dir}` (python: "
                                   "train(resume=...)).")


def checkpoint_after_env_failure(error: RLGraphEnvError, run: LoopState, worker: Any, logs: "RunLogs",
                                  store: Callable[..., str]) -> None:
    """Logs the episodes that finished before an env failed, writes a checkpoint at the env steps
    taken and names it in `error`'s hint. A failing save (or log) is logged, never raised over `error`."""
    cut = worker.interrupted_stats
    try:
        if cut is not None:
            run.steps += cut["timesteps_executed"]
            run.episodes += cut["episodes_executed"]
            run.last_update_timestep = worker.last_update_timestep
            logs.log_episodes(cut["episode_end_steps"], cut["episode_returns"], cut["episode_lengths"])
        path = logs.periodic_checkpoint(run.steps, store, run)
    except Exception as save_error:  # noqa: BLE001 - the env's error is the one to report.
        logger.warning("no checkpoint after the environment failure: %s", save_error)
        return
    note_checkpoint(error, path, logs.output_dir, run.steps)


class RunLogs:
    """The files of a run: config.json, CSVs, TensorBoard events, checkpoints, the PNG curve."""

    def __init__(self, output_dir: str, config: dict, resume: Any = None, hooks: Sequence[Any] = ()):
        """`resume`: the `run_state.ResumePoint` of a resumed run, whose logs continue: rows after
        its step are dropped first, episode numbers and the curve go on, its step-N checkpoints
        count towards `saver_spec.max_checkpoints`. `hooks`: their `Hook.on_log` gets every
        TensorBoard point (loggers send them on)."""
        from rlgraph.utils.run_logs import CSVLogger, write_atomically
        from rlgraph.utils.tensorboard import TensorBoardWriter
        self.output_dir = output_dir
        self.config = config
        with self._writing("config.json and the log files"):
            os.makedirs(output_dir, exist_ok=True)
            if resume is not None:
                for name in ("episodes.csv", "evaluations.csv"):
                    trim_csv(os.path.join(output_dir, name), resume.state.steps)
            write_atomically(os.path.join(output_dir, "config.json"),
                             lambda handle: json.dump(config, handle, indent=2, default=str))
            self.episodes = CSVLogger(os.path.join(output_dir, "episodes.csv"),
                                      ["step", "episode", "return", "length"])
            self.evaluations = CSVLogger(os.path.join(output_dir, "evaluations.csv"),
                                         ["step", "mean_return", "min_return", "max_return"])
            # summary_spec/saver_spec as `resolve_config` checked them (defaults where a config has none).
            summary = dict(SUMMARY_SPEC_DEFAULTS, **(config.get("summary_spec") or {}))
            self.tensorboard = TensorBoardWriter(summary["directory"] or os.path.join(output_dir, "tensorboard"))
        self.summary_interval, self.last_scalar_step = summary["summary_interval"], None
        self.max_checkpoints = dict(SAVER_SPEC_DEFAULTS, **(config.get("saver_spec") or {}))["max_checkpoints"]
        self.periodic_checkpoints = []  # Paths of this run's step-N checkpoints, oldest first.
        self.curve_steps, self.curve_returns, self.episode_count = [], [], 0
        self.closed, self.curve = False, None
        from rlgraph.execution.hooks import Hook
        self.hooks = [hook for hook in hooks if isinstance(hook, Hook)]
        if resume is not None:
            self._continue(resume)

    @contextlib.contextmanager
    def _writing(self, what: str, error_class: type = RLGraphError) -> Iterator[None]:
        """Turns an `OSError` raised while writing `what` (a path in the run directory) into an
        `RLGraphError` (`error_class`) that says how to go on."""
        from rlgraph.utils.run_logs import write_error
        try:
            yield
        except OSError as error:
            raise write_error(error, what, f"run directory {self.output_dir}", self._write_hint(error),
                              error_class) from error

    def _write_hint(self, error: OSError) -> str:
        from rlgraph.utils.run_logs import DISK_FULL
        directory = os.path.join(self.output_dir, "checkpoints")
        resumable = os.path.isdir(directory) and any(not n.startswith(".") for n in os.listdir(directory))
        then = (f"`rlgraph train --resume {self.output_dir}` continues the run from its newest checkpoint"
                if resumable else "start the run again in a new --output-dir (it has no checkpoint yet)")
        fix = "free space on its disk" if error.errno in DISK_FULL else "fix the cause"
        return f"{fix}, then {then}; the files written before are intact."

    def _continue(self, resume: Any) -> None:
        from rlgraph.utils.run_logs import read_csv
        self.episode_count = resume.state.episode_count
        rows = read_csv(self.episodes.path) if os.path.isfile(self.episodes.path) else {}
        self.curve_steps, self.curve_returns = list(rows.get("step", [])), list(rows.get("return", []))
        directory = os.path.join(self.output_dir, "checkpoints")
        steps = [int(n[5:]) for n in os.listdir(directory) if n.startswith("step-") and n[5:].isdigit()]
        self.periodic_checkpoints = [os.path.join(directory, f"step-{n}") for n in sorted(steps)]
        # TensorBoard drops the points the interrupted process wrote after the checkpoint.
        with self._writing("the TensorBoard events"):
            self.tensorboard.add_session_start(resume.state.steps + 1)

    def log_chunk(self, stats: dict, agent: Any) -> None:
        """A `SingleThreadedWorker` chunk: its episodes and scalars (the chunk's mean loss and
        throughput, `agent.training_scalars()`), the scalars only when a point is due."""
        self.log_episodes(stats["episode_end_steps"], stats["episode_returns"], stats["episode_lengths"])
        step = stats["total_timesteps"]
        if not self.scalars_due(step):
            with self._writing("the TensorBoard events"):
                self.tensorboard.flush()
            return
        scalars = {"train/loss": stats["mean_loss"]} if stats["num_updates"] else {}
        runtime = stats["runtime"]
        scalars.update({"train/env_frames_per_second": stats["env_frames_per_second"],
                        "train/updates_per_second": stats["num_updates"] / runtime if runtime > 0 else 0.0})
        scalars.update(agent.training_scalars())
        self.log_scalars(step, scalars)

    def log_episodes(self, steps: Sequence[int], returns: Sequence[float], lengths: Sequence[Any]) -> None:
        """One episodes.csv row and TensorBoard point per episode (a length may be None: unknown)."""
        for step, ret, length in zip(steps, returns, lengths):
            with self._writing("episodes.csv"):
                self.episodes.log({"step": step, "episode": self.episode_count + 1, "return": ret,
                                   "length": length})
            self.episode_count += 1
            self._write(step, {"train/episode_return": ret})
            self.curve_steps.append(step)
            self.curve_returns.append(ret)

    def log_scalars(self, step: int, scalars: Dict[str, float]) -> None:
        """TensorBoard points of the training scalars, at most one per `summary_spec.summary_interval`
        env steps (the first chunk's always); then flushes the event file."""
        if self.scalars_due(step):
            self.last_scalar_step = step
            self._write(step, scalars)
        with self._writing("the TensorBoard events"):
            self.tensorboard.flush()

    def scalars_due(self, step: int) -> bool:
        """Whether `log_scalars(step, ...)` would write (see `summary_spec.summary_interval`)."""
        return self.last_scalar_step is None or step - self.last_scalar_step >= self.summary_interval

    def _write(self, step: int, scalars: Dict[str, float]) -> None:
        """TensorBoard points (one event per tag) and the hooks' `on_log`."""
        with self._writing("the TensorBoard events"):
            for name, value in scalars.items():
                self.tensorboard.add_scalar(name, value, step)
        for hook in self.hooks:
            hook.on_log(step, scalars)

    def log_evaluation(self, step: int, result: dict) -> None:
        with self._writing("evaluations.csv"):
            self.evaluations.log({"step": step, "mean_return": result["mean_episode_return"],
                                  "min_return": result["min_episode_return"],
                                  "max_return": result["max_episode_return"]})
        self._write(step, {"eval/mean_return": result["mean_episode_return"]})

    def checkpoint(self, name: str, store: Callable[..., str], state: Optional[LoopState] = None,
                   extra: Optional[Dict[str, Any]] = None) -> str:
        """checkpoints/`name`: what `store(path, extra_files=...)` writes there, with the run's
        config.json (and the loop's `state` as train_state.json, which `--resume` reads) inside
        the checkpoint, so its manifest covers them too.

        Raises:
            RLGraphCheckpointError: When it cannot be written (the `OSError` chained); the
                checkpoint that was at its place, if any, is intact.
        """
        files = {"config.json": self.config, **(extra or {})}
        if state is not None:
            state.episode_count = self.episode_count  # (The logs number the episodes.)
            files[TRAIN_STATE_FILE] = state.to_json()
        with self._writing(f"checkpoints/{name}", RLGraphCheckpointError):
            return store(os.path.join(self.output_dir, "checkpoints", name), extra_files=files)

    def periodic_checkpoint(self, step: int, store: Callable[..., str], state: Optional[LoopState] = None) -> str:
        """checkpoints/step-`step` (see `checkpoint`); beyond `saver_spec.max_checkpoints` the
        oldest step-N checkpoints of the run (a resumed run's earlier ones too) are deleted (the
        final and best ones are always kept). One written at `step` already is not written again."""
        path = os.path.join(self.output_dir, "checkpoints", f"step-{step}")
        if path in self.periodic_checkpoints[-1:] and os.path.isdir(path):
            return path  # (A stop right after the periodic checkpoint of the same step.)
        path = self.checkpoint(f"step-{step}", store, state)
        if path in self.periodic_checkpoints:
            self.periodic_checkpoints.remove(path)
        self.periodic_checkpoints.append(path)
        while self.max_checkpoints is not None and len(self.periodic_checkpoints) > self.max_checkpoints:
            old = self.periodic_checkpoints.pop(0)
            try:
                shutil.rmtree(old)
            except OSError as error:
                logger.warning("could not delete the old checkpoint %s (saver_spec.max_checkpoints): %s", old, error)
        return path

    def best_checkpoint(self, step: int, mean_return: float, store: Callable[..., str]) -> str:
        """checkpoints/best: the agent of the best evaluation so far, with best.json {step, mean_return}."""
        return self.checkpoint(BEST, store, extra={BEST_FILE: {"step": int(step), "mean_return": float(mean_return)}})

    def finish(self, store: Callable[..., str], state: Optional[LoopState] = None) -> Dict[str, str]:
        checkpoint = self.checkpoint(FINAL, store, state)
        return {"output_dir": self.output_dir, "checkpoint": checkpoint, "learning_curve": self.close()}

    def close(self) -> str:
        """Closes the logs (all rows are on disk then) and plots learning_curve.png from the
        episodes logged so far; returns the plot's path. A failed run ends here too; a second
        call does nothing.

        Raises:
            RLGraphError: When a part cannot be written (the first such error; every part is
                closed all the same, and learning_curve.png is the previous one or the new one).
        """
        if self.closed:
            return self.curve
        self.closed = True
        errors = []
        for what, step in (("the TensorBoard events", self.tensorboard.close), ("episodes.csv", self.episodes.close),
                           ("evaluations.csv", self.evaluations.close),
                           ("learning_curve.png", self._plot)):
            try:
                with self._writing(what):
                    step()
            except Exception as error:  # noqa: BLE001 - the other parts are closed all the same.
                errors.append(error)
        for error in errors[1:]:
            logger.warning("%s: closing the logs: %s", self.output_dir, error)
        if errors:
            raise errors[0]
        return self.curve

    def _plot(self) -> None:
        from rlgraph.utils.run_logs import plot_learning_curve, read_csv
        curve = os.path.join(self.output_dir, "learning_curve.png")
        env = self.config["environment_spec"]
        env_name = env.get("gym_env", env.get("game", env.get("type"))) if isinstance(env, dict) else env
        title = f"{self.config.get('type', 'agent')} on {env_name}"
        # Evaluations from the file: a resumed run's earlier ones are there too.
        evaluations = read_csv(self.evaluations.path) if os.path.isfile(self.evaluations.path) else None
        plot_learning_curve(self.curve_steps, self.curve_returns, curve, title=title, evaluations=evaluations)
        self.curve = curve

    def close_after_failure(self, cause: BaseException) -> None:
        """`close()` after `cause` ended the run: what fails while closing (the same full disk,
        say) is logged and noted on `cause`, never raised over it."""
        try:
            self.close()
        except Exception as error:  # noqa: BLE001 - `cause` is the error to report.
            logger.warning("%s: closing the logs after the run failed: %s", self.output_dir, error)
            if hasattr(cause, "add_note"):  # (Python 3.11+.)
                cause.add_note(f"Then closing the logs failed too: {error}")
