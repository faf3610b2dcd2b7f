"""`train`: the training run behind `rlgraph train` (and the learning tests).

A config file holds the agent spec plus two run sections that `Agent.from_spec` ignores:

- "environment_spec": the environment (e.g. {"type": "openai-gym", "gym_env": "CartPole-v1"});
- "training_spec": see `TRAINING_SPEC_DEFAULTS`.

Loading and checking a config (`resolve_config`, the overrides, `make_agent_and_env`) is in
`run_config.py`; this module runs it.

A run writes into `output_dir`: config.json (the resolved config), episodes.csv (every training
episode), evaluations.csv, TensorBoard event files, checkpoints/ (every `checkpoint_interval`
steps, on SIGINT/SIGTERM or an env failure, "best" and "final"), and learning_curve.png.
`train(resume=RUN_DIR)` continues a run from its newest checkpoint (`run_state.py`). A run holds
the lock of its directory from start to end (`run_lock.py`): a second run on it is refused.

A config whose `execution_spec` holds a `ray_spec` is a distributed (Ape-X) run: `train` hands
it to `rlgraph.execution.distributed_training`, which writes the same files (docs/distributed.md).
"""
from __future__ import annotations

import contextlib
import logging
import math
import os
import time
from functools import partial
from typing import Any, Dict, Iterable, Optional, Sequence

from rlgraph.execution.learner_sync import WeightCheck, agree, broadcast_weights
from rlgraph.execution.learners import num_learners_of, train_learners
from rlgraph.execution.run_config import (TRAINING_SPEC_DEFAULTS, VECTORIZATIONS, apply_overrides, check_training_spec,
                                          is_distributed, make_agent_and_env, resolve_config, with_device)
from rlgraph.execution.run_files import RunLogs, checkpoint_after_env_failure, interrupted, resume_agent
from rlgraph.execution.run_lock import lock_run_dir
from rlgraph.execution.run_loop import evaluate_greedily, progress_bar
from rlgraph.execution.run_state import (LoopState, StopOnSignals, check_new_output_dir, check_resume_arguments,
                                         check_run_dir, resume_point)
from rlgraph.utils import learner_group
from rlgraph.utils.checkpoint_dir import read_json
from rlgraph.utils.rlgraph_errors import RLGraphEnvError, RLGraphError, RLGraphSpecError

# The run config's names, importable from here as before (they live in run_config.py).
__all__ = ["TRAINING_SPEC_DEFAULTS", "VECTORIZATIONS", "apply_overrides", "resolve_config", "check_training_spec",
           "is_distributed", "make_agent_and_env", "training_envs", "train", "evaluate_greedily", "progress_bar",
           "resumed_config"]

logger = logging.getLogger(__name__)
NEW_RUN, RESUMED_RUN = "train(output_dir, --output-dir)", "train(resume, --resume)"


def training_envs(env_spec: Any, training_spec: Dict[str, Any], seed: Optional[int]) -> Any:
    """What the training worker steps: an `EnvPoolVectorEnv` for `vectorization` "envpool", an
    `AsyncVectorEnv` for "async" with several environments, else `env_spec` itself (the worker
    makes a `SequentialVectorEnv`)."""
    if training_spec["vectorization"] == "envpool":
        from rlgraph.environments.envpool_env import EnvPoolVectorEnv
        return EnvPoolVectorEnv(training_spec["num_environments"], env_spec, seed=seed)
    if training_spec["vectorization"] != "async" or training_spec["num_environments"] == 1:
        return env_spec
    from rlgraph.environments.async_vector_env import AsyncVectorEnv
    return AsyncVectorEnv(training_spec["num_environments"], env_spec, seed=seed)


def train(config: Any = None, env: Any = None, backend: Optional[str] = None, num_timesteps: Optional[int] = None,
          seed: Optional[int] = None, overrides: Iterable[str] = (), output_dir: Optional[str] = None,
          progress: bool = True, ray_address: Optional[str] = None, resume: Optional[str] = None,
          hooks: Sequence[Any] = (), loggers: Sequence[dict] = (), learners: Optional[int] = None,
          device: Optional[str] = None) -> Dict[str, Any]:
    """Trains an agent as its config says; see the module docstring for what is written.

    A config with `execution_spec.ray_spec` runs on its distributed executor
    (`distributed_training.train_distributed`); one with `execution_spec.num_learners` > 1 (or
    `learners`) on that many data-parallel learner processes (`learners.train_learners`); any other
    in one `SingleThreadedWorker`.

    Args:
        config: A config file path or dict (agent spec + environment_spec + training_spec).
        env: An environment id, which replaces only the id in the config's environment_spec (and
            stop_at_return, see `env_ids.apply_env`), or a spec dict replacing the whole section.
        backend: "tf" or "pytorch" (default: the config's, else rlgraph's default).
        num_timesteps: Replaces training_spec.num_timesteps.
        seed: Seeds the agent (execution_spec.seed) and the environments.
        overrides: "key.path=value" strings applied to the config first.
        output_dir: Where to write logs and checkpoints (None: nothing is written).
        progress: Show a tqdm progress bar.
        ray_address: The Ray cluster of a distributed run ("host:port"; overrides
            `ray_spec.executor_spec.redis_address`).
        resume: A run directory to continue (`rlgraph train --resume`): its newest checkpoint and
            its config; only `num_timesteps` may be given too (to train further).
        hooks: Run after each training env step and given the logged scalars (see
            `rlgraph.execution.hooks`): `Hook` objects, callables, or "package.module:Class" names
            (imported: `rlgraph train --hook`), before those of `training_spec.hooks` and
            `training_spec.loggers`.
        loggers: More `training_spec.loggers` entries (`--wandb`, `--mlflow`), e.g.
            [{"type": "wandb", "project": "cartpole"}]; not stored in the run's config.
        learners: Sets `execution_spec.num_learners` (`--learners N`; with `resume` too, where it
            replaces the run's): N processes train, averaging their gradients (docs/distributed.md).
        device: Sets `execution_spec.device` (`--device`; with `resume` too, where it replaces the
            run's: a run may continue on another machine's device).

    Returns:
        A summary: solved, solved_at_step, evaluations [(step, mean return)], best_evaluation,
        timesteps, episodes, wall_time, env_frames_per_second, output files (steps, episodes and
        evaluations of a resumed run count from its start).

    Raises:
        RLGraphSpecError: For an invalid config, or a `ray_address` with a config that is not
            distributed.
        RLGraphError: For an `output_dir` that holds files (another run) without `resume`; for a
            file of the run that cannot be written (a full disk: `RLGraphCheckpointError` for a
            checkpoint), with the `OSError` chained, after the logs are closed.
        RLGraphRunDirLockedError: While another run (process) writes `output_dir` or `resume`.
        RLGraphInterrupted: On SIGINT/SIGTERM (with an `output_dir`), after the checkpoint and logs
            are written.
        RLGraphEnvError: When an environment raises; with an `output_dir` a checkpoint is written
            first (the error's hint names it).
    """
    point = lock = None
    if resume is not None:
        check_resume_arguments(RESUMED_RUN, config=config, env=env, backend=backend, seed=seed,
                               overrides=list(overrides or ()), ray_address=ray_address,
                               output_dir=None if output_dir in (None, resume) else output_dir)
        check_run_dir(resume, RESUMED_RUN)
        output_dir = resume
    else:
        config = with_device(resolve_config(config, env, backend, num_timesteps, seed, overrides), device)
    if learner_group.current() is None:
        if resume is None and learners is not None:
            config["execution_spec"]["num_learners"] = learners
        wanted = _wanted_learners(config, resume, learners)
        if wanted > 1:
            if ray_address is not None:
                raise RLGraphSpecError("--learners and --ray-address do not go together", where="train(--learners)",
                                       received=f"learners={wanted}, ray_address={ray_address!r}")
            if resume is None:
                if output_dir:
                    check_new_output_dir(output_dir, NEW_RUN)
            else:
                config = with_device(resumed_config(resume_point(resume, RESUMED_RUN), num_timesteps), device)
                config["execution_spec"]["num_learners"] = wanted
            return train_learners(config, output_dir=output_dir, resume=resume, progress=progress, hooks=hooks,
                                  loggers=loggers)
    # Taken before the directory is looked at, held until the run ends: one run per directory.
    lock = lock_run_dir(output_dir, RESUMED_RUN if resume is not None else NEW_RUN) if output_dir else None
    try:
        if resume is not None:
            point = resume_point(resume, RESUMED_RUN)
            config = with_device(resumed_config(point, num_timesteps), device)
            if learners is not None:
                config["execution_spec"]["num_learners"] = learners
        elif output_dir:
            check_new_output_dir(output_dir, NEW_RUN)
        return _train(config, point, output_dir, progress, ray_address, hooks, loggers)
    finally:
        if lock is not None:
            lock.release()


def _wanted_learners(config: Optional[dict], resume: Optional[str], learners: Optional[int]) -> int:
    """How many learner processes this launcher starts: `learners` if given, else the config's (a
    resumed run's: the one in its run directory); 1 for a distributed (Ray) config, whose executor
    starts its learners as Ray actors itself (`execution/ray/learner_group.py`)."""
    if resume is not None:
        config = read_json(os.path.join(resume, "config.json"), RESUMED_RUN)
        if not isinstance(config, dict) or not isinstance(config.get("execution_spec"), dict):
            return 1  # (The resume itself reports a damaged config.)
    if is_distributed(config):
        return 1
    if learners is not None:
        return num_learners_of({"execution_spec": {"num_learners": learners}})
    return num_learners_of(config)


def train_as_learner(config: dict, output_dir: Optional[str], resume: Optional[str], progress: bool,
                     hooks: Sequence[Any] = (), loggers: Sequence[dict] = ()) -> Dict[str, Any]:
    """This rank's part of a data-parallel run (the process is in its learner group already, see
    `learner_process`): rank 0 trains as `train` does (run folder, lock, evaluations, checkpoints);
    the other ranks write nothing and load the resumed run's checkpoint without taking its lock."""
    if learner_group.current().rank == 0:
        if resume is not None:
            return train(resume=resume, num_timesteps=config["training_spec"]["num_timesteps"], progress=progress,
                         hooks=hooks, loggers=loggers, learners=learner_group.current().size)
        return train(config=config, output_dir=output_dir, progress=progress, hooks=hooks, loggers=loggers)
    point = resume_point(resume, RESUMED_RUN) if resume is not None else None
    return _train(config, point, None, False, None, (), ())


def _train(config: dict, point: Any, output_dir: Optional[str], progress: bool, ray_address: Optional[str],
           hooks: Sequence[Any], loggers: Sequence[dict]) -> Dict[str, Any]:
    """`train` of a resolved `config` (resumed from `point`, a `run_state.ResumePoint`, if not None).
    In a learner group (`rlgraph.utils.learner_group`), all ranks run this loop in step: rank 0's
    weights are broadcast first, rank 0 alone evaluates (its verdict is shared), and the weights are
    compared every `execution_spec.learner_check_interval` updates."""
    from rlgraph.execution.hooks import step_hooks
    from rlgraph.execution.loggers import close_hooks, run_hooks
    from rlgraph.execution.env_ids import evaluation_env_spec
    from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
    from rlgraph.execution.video import training_videos
    if is_distributed(config):
        vectorization = config["training_spec"]["vectorization"]
        if vectorization != "sync":
            raise RLGraphSpecError(f"vectorization {vectorization!r} is for runs in one worker",
                                   where="train(training_spec.vectorization)",
                                   expected='"sync" for a distributed (Ape-X, IMPALA) config',
                                   received=repr(vectorization), hint="a distributed run's workers step their own "
                                   "envs; ray_spec.worker_spec.num_worker_environments sets how many.")
        from rlgraph.execution.distributed_training import train_distributed
        return train_distributed(config, output_dir=output_dir, progress=progress, ray_address=ray_address,
                                 point=point)
    if ray_address is not None:
        raise RLGraphSpecError("a Ray address needs a distributed config", where="train(ray_address, --ray-address)",
                               expected="a config with execution_spec.ray_spec (e.g. configs/apex_cartpole.json)",
                               received=f"{ray_address!r} with agent type {config.get('type')!r} and no ray_spec",
                               hint="drop --ray-address to train in this process, or train an Ape-X config.")
    spec = config["training_spec"]
    seed = config["execution_spec"].get("seed")
    if point is not None and seed is not None:
        seed += point.state.steps  # A resumed run's envs start fresh episodes, not the run's first ones again.
    start = time.perf_counter()
    agent, env_spec = make_agent_and_env(config)
    run = LoopState(next_eval=spec["evaluation_interval"] or math.inf,
                    next_checkpoint=spec["checkpoint_interval"] or math.inf)
    if point is not None:
        run = point.state
        resume_agent(agent, point.checkpoint)
    group = learner_group.current()
    check = None
    if group is not None:
        broadcast_weights(agent, group)
        check = WeightCheck(group, config["execution_spec"].get("learner_check_interval", 100))
    first_step = run.steps
    hooks = run_hooks(spec, config, hooks, loggers)
    envs = training_envs(env_spec, spec, seed)
    if spec["vectorization"] == "envpool" and (envs.state_space != agent.state_space or
                                               envs.action_space != agent.action_space):
        envs.terminate()
        raise RLGraphSpecError("EnvPool's game has other spaces than the environment spec's", where="train(training_spec."
                               "vectorization)", expected=f"{agent.state_space}, {agent.action_space}",
                               received=f"{envs.state_space}, {envs.action_space}")
    worker = SingleThreadedWorker(agent, envs, num_environments=spec["num_environments"], seed=seed,
                                  hooks=step_hooks(hooks))
    worker.total_steps, worker.total_episodes = run.steps, run.episodes  # (CSV steps continue on resume.)
    worker.last_update_timestep = run.last_update_timestep
    evaluator = None
    if spec["evaluation_interval"] and (group is None or group.rank == 0):
        evaluator = SingleThreadedWorker(agent, evaluation_env_spec(env_spec),
                                         num_environments=spec["evaluation_episodes"],
                                         seed=None if seed is None else seed + 10_000)
    logs = RunLogs(output_dir, config, resume=point, hooks=hooks) if output_dir else None
    videos = training_videos(agent, env_spec, spec, output_dir, seed)
    store = partial(agent.store_model, add_timestep=False)
    bar = progress_bar(spec["num_timesteps"], progress, initial=run.steps)
    # With an output dir, SIGINT/SIGTERM end the chunk after the current env step; the run then saves.
    signals = StopOnSignals(worker.request_stop)
    last_return, solved, first_chunk = float("nan"), False, True
    try:
        with signals if logs else contextlib.nullcontext():
            while run.steps < spec["num_timesteps"] and not worker.stop_requested:
                chunk = min(spec["log_interval"], spec["num_timesteps"] - run.steps,
                            max(1, run.next_eval - run.steps), max(1, run.next_checkpoint - run.steps))
                stats = worker.execute_timesteps(chunk, spec["max_timesteps_per_episode"], reset=first_chunk)
                first_chunk = False
                run.steps += stats["timesteps_executed"]
                run.episodes += stats["episodes_executed"]
                run.last_update_timestep = worker.last_update_timestep
                if stats["episode_returns"]:
                    last_return = stats["episode_returns"][-1]
                if logs:
                    logs.log_chunk(stats, agent)
                if check is not None:
                    check.maybe_check(agent)
                if run.steps >= run.next_eval:
                    run.next_eval += spec["evaluation_interval"]
                    solved = evaluate_greedily(evaluator, spec, run.steps, logs, run.evaluations) if evaluator \
                        else False
                    if group is not None:
                        solved = agree(solved, group)
                    if run.note_evaluation(solved) and logs:
                        logs.best_checkpoint(run.steps, run.best_return, store)
                if videos is not None:
                    videos.maybe_record(run.steps)
                if run.steps >= run.next_checkpoint:
                    # (Advanced without logs too: the chunks, and so the learners' steps, stay alike.)
                    run.next_checkpoint += spec["checkpoint_interval"]
                    if logs:
                        logs.periodic_checkpoint(run.steps, store, run)
                if bar is not None:
                    bar.update(stats["timesteps_executed"])
                    bar.set_postfix(episodes=run.episodes, last_return=f"{last_return:.1f}",
                                    eval=f"{run.evaluations[-1][1]:.1f}" if run.evaluations else "-")
                if solved:
                    break
            if signals.signal_number is not None and run.steps < spec["num_timesteps"] and not solved:
                raise interrupted(signals, run, spec, logs, store)
            summary = {
                "solved": run.solved_at is not None, "solved_at_step": run.solved_at, "evaluations": run.evaluations,
                "best_evaluation": max((e[1] for e in run.evaluations), default=float("nan")),
                "timesteps": run.steps, "episodes": run.episodes, "wall_time": time.perf_counter() - start,
                "backend": agent.backend, "agent_timesteps": agent.timesteps, "num_updates": agent.num_updates,
            }
            summary["env_frames_per_second"] = (run.steps - first_step) / summary["wall_time"]
            if logs:
                summary.update(logs.finish(store, run))
            summary["videos"] = videos.videos if videos is not None else []
    except BaseException as error:
        # A failed run still leaves consistent files: every finished episode (those of a chunk an env
        # failure cut short too) in episodes.csv and the curve, the logs flushed and closed. An env
        # failure leaves the agent consistent (the env broke, not the agent): it is checkpointed first.
        if logs:
            if isinstance(error, RLGraphEnvError):
                checkpoint_after_env_failure(error, run, worker, logs, store)
            logs.close_after_failure(error)
        close_hooks(hooks)
        worker.terminate()
        if evaluator is not None:
            evaluator.terminate()
        raise
    finally:
        if bar is not None:
            bar.close()
    close_hooks(hooks)
    worker.terminate()
    if evaluator is not None:
        evaluator.terminate()
    agent.terminate()
    return summary


def resumed_config(point: Any, num_timesteps: Optional[int]) -> dict:
    """The config of a resumed run (`run_state.ResumePoint`): the run's own, with `num_timesteps`
    if given (`execution_spec.max_timesteps` stays, so schedules keep the horizon they had).

    Raises:
        RLGraphError: For a run that already trained all its steps.
    """
    where = RESUMED_RUN
    config = resolve_config(point.config, num_timesteps=num_timesteps)
    total, state = config["training_spec"]["num_timesteps"], point.state
    if state.steps >= total or (state.solved_at is not None and num_timesteps is None):
        done = f"it reached stop_at_return at step {state.solved_at}" if state.steps < total else \
            f"it trained {state.steps} of {total} steps"
        raise RLGraphError(f"the run is complete: {done}", where=where, received=point.checkpoint,
                           hint=f"pass --steps N (python: num_timesteps=N) with N > {state.steps} to train further.")
    return config
