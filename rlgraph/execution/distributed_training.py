"""`train_distributed`: `rlgraph train` for configs with an `execution_spec.ray_spec` (Ape-X).

`rlgraph.execution.training.train` hands such a config here. The run writes the files of a
single-process run (see `training.py`):

- episodes.csv: the workers' episodes as the executor reports them, in that order. `step` is
  the number of env steps collected when the episode was reported (workers report once per
  sample task of `num_worker_samples` steps).
- evaluations.csv, TensorBoard scalars (also updates/s and policy lag), learning_curve.png.
- checkpoints/<name>/: `ApexExecutor.store_checkpoint` (the learner's agent in `learner/`,
  the replay shards, the executor's counters) plus the run's config.json and the loop's state
  (train_state.json). `rlgraph evaluate` loads `learner/` into the agent `learner_config` describes.

`rlgraph train --resume RUN_DIR` continues such a run from its newest checkpoint: the executor
loads it (learner or learner group, replay shards, counters; the workers and actors get its
weights) and the loop goes on from the checkpoint's state, appending to the run's logs. The
workers start fresh episodes (seeded with `seed + N` at step N); an IMPALA run's queued rollouts
were not kept (the actors refill the queue).

The executor runs in chunks of at most `log_interval` env steps (`execute_workload`). Between
chunks the driver logs, evaluates greedily on the learner's agent (holding the learner's lock,
so the learner thread waits) and writes checkpoints. The workers' tasks already in flight
finish meanwhile; their steps count towards the next chunk.
"""
from __future__ import annotations

import math
import time
from typing import Any, Dict, Optional

from rlgraph.agents.agent import RUN_SECTIONS
from rlgraph.utils.rlgraph_errors import RLGraphSpecError



def executor_class(config: dict) -> type:
    """The distributed executor that runs `config["type"]`.

    Raises:
        RLGraphSpecError: For an agent type without a distributed executor.
    """
    from rlgraph.agents import Agent, ApexAgent, IMPALAAgent
    from rlgraph.execution.ray import ApexExecutor, IMPALAExecutor
    executors = {ApexAgent: ApexExecutor, IMPALAAgent: IMPALAExecutor}
    agent_class = Agent.resolve_type(config.get("type"))
    for cls, executor in executors.items():
        if isinstance(agent_class, type) and issubclass(agent_class, cls):
            return executor
    raise RLGraphSpecError("this agent type has no distributed executor", where="train(execution_spec.ray_spec)",
                           expected='"type": "apex" (ApexExecutor) or "impala" / "single-impala" (IMPALAExecutor)',
                           received=repr(config.get("type")),
                           hint="remove execution_spec.ray_spec to train in one process.")


def learner_config(config: dict) -> dict:
    """The agent config of a distributed run's learner, built in one process: without
    `execution_spec.ray_spec` and with the learner's memory (e.g. to load `<checkpoint>/learner`).

    Raises:
        RLGraphSpecError: For a malformed ray_spec.
    """
    return executor_class(config).learner_config(config)


def train_distributed(config: dict, output_dir: Optional[str] = None, progress: bool = True,
                      ray_address: Optional[str] = None, point: Any = None) -> Dict[str, Any]:
    """Trains a resolved distributed config (see `training.resolve_config`); see the module docstring.

    Args:
        config: The resolved config (agent spec with ray_spec + environment_spec + training_spec).
        output_dir: Where to write logs and checkpoints (None: nothing is written).
        progress: Show a tqdm progress bar.
        ray_address: Overrides `ray_spec.executor_spec.redis_address`.
        point: The `run_state.ResumePoint` of a resumed run (its checkpoint is loaded first), or None.

    Returns:
        The summary of `training.train`, plus num_updates (learner updates), updates_per_second,
        num_learners (`execution_spec.num_learners`: learner actors on Ray when > 1), mean_policy_lag,
        restarts, records_lost and executor_statistics (the last workload's).
    """
    from rlgraph.execution.env_ids import evaluation_env_spec
    from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
    from rlgraph.execution.run_files import RunLogs
    from rlgraph.execution.run_loop import evaluate_greedily, progress_bar
    from rlgraph.execution.run_state import LoopState
    spec = config["training_spec"]
    seed = config["execution_spec"].get("seed")
    env_spec = config["environment_spec"]
    agent_config = {k: v for k, v in config.items() if k not in RUN_SECTIONS}
    if point is not None and seed is not None:
        # A resumed run's workers start fresh episodes, not the run's first ones again (as in `train`);
        # the learner's initial weights, which this seed also draws, are replaced by the checkpoint's.
        seed += point.state.steps
        agent_config["execution_spec"] = dict(agent_config["execution_spec"], seed=seed)
    if "ray_spec" not in agent_config["execution_spec"]:  # An IMPALA config without ray_spec: actors inline.
        agent_config = dict(agent_config, execution_spec=dict(agent_config["execution_spec"], ray_spec={
            "executor_spec": {"mode": "inline", "num_sample_workers": agent_config.get("num_workers", 1)},
            "worker_spec": {"num_worker_environments": agent_config.get("num_worker_environments", 1)}}))
    start = time.perf_counter()
    executor = executor_class(config)(env_spec, agent_config, ray_address=ray_address)
    evaluator = bar = logs = None
    try:
        agent = executor.local_agent
        if spec["evaluation_interval"]:
            evaluator = SingleThreadedWorker(agent, evaluation_env_spec(env_spec),
                                             num_environments=spec["evaluation_episodes"],
                                             seed=None if seed is None else seed + 10_000)
        run = LoopState(next_eval=spec["evaluation_interval"] or math.inf,
                        next_checkpoint=spec["checkpoint_interval"] or math.inf)
        if point is not None:
            executor.load_checkpoint(point.checkpoint)  # (Verified before anything changes.)
            run = point.state
        logs = RunLogs(output_dir, config, resume=point) if output_dir else None
        bar = progress_bar(spec["num_timesteps"], progress, initial=run.steps)
        first_step, solved, result, last_return = run.steps, False, {}, float("nan")
        while run.steps < spec["num_timesteps"] and not solved:
            chunk = min(spec["log_interval"], spec["num_timesteps"] - run.steps, max(1, run.next_eval - run.steps),
                        max(1, run.next_checkpoint - run.steps))
            result = executor.execute_workload({"num_timesteps": chunk, "report_interval": chunk})
            run.steps += result["timesteps_executed"]
            returns = result["episode_returns"]
            run.episodes += len(returns)
            last_return = returns[-1] if returns else last_return
            if logs:
                _log_workload(logs, result, run.steps, agent)
            if run.steps >= run.next_eval:
                run.next_eval = (run.steps // spec["evaluation_interval"] + 1) * spec["evaluation_interval"]
                with executor.learner.lock:  # The learner thread updates this agent.
                    executor.sync_local_agent()  # (Learners on Ray: rank 0's weights into this agent.)
                    solved = evaluate_greedily(evaluator, spec, run.steps, logs, run.evaluations)
                run.note_evaluation(solved)
            if logs and run.steps >= run.next_checkpoint:
                run.next_checkpoint = (run.steps // spec["checkpoint_interval"] + 1) * spec["checkpoint_interval"]
                logs.periodic_checkpoint(run.steps, executor.store_checkpoint, run)
            if bar is not None:
                bar.update(result["timesteps_executed"])
                bar.set_postfix(episodes=run.episodes, last_return=f"{last_return:.1f}",
                                updates=executor.learner.version,
                                eval=f"{run.evaluations[-1][1]:.1f}" if run.evaluations else "-")
        wall_time = time.perf_counter() - start
        summary = {
            "solved": run.solved_at is not None, "solved_at_step": run.solved_at, "evaluations": run.evaluations,
            "best_evaluation": max((e[1] for e in run.evaluations), default=float("nan")), "timesteps": run.steps,
            "episodes": run.episodes, "wall_time": wall_time,
            "env_frames_per_second": (run.steps - first_step) / wall_time,
            "backend": agent.backend, "agent_timesteps": agent.timesteps, "num_updates": executor.learner.version,
            "updates_per_second": executor.learner.version / wall_time,
            "num_learners": executor.learner_group.size if executor.learner_group else 1,
            "mean_policy_lag": result.get("mean_policy_lag", float("nan")), "restarts": executor.num_restarts,
            "records_lost": executor.records_lost,
            "executor_statistics": {k: v for k, v in result.items() if k != "episode_returns"},
        }
        if logs:
            summary.update(logs.finish(executor.store_checkpoint, run))
        return summary
    except BaseException as error:
        # As a single-process run: every logged episode on disk and the curve drawn (what fails while
        # closing is noted on `error`, not raised over it).
        if logs:
            logs.close_after_failure(error)
        raise
    finally:
        if bar is not None:
            bar.close()
        if evaluator is not None:
            evaluator.terminate()
        executor.terminate()


def _log_workload(logs: Any, result: dict, steps: int, agent: Any) -> None:
    """One chunk's episodes and scalars (episodes carry the chunk's final step; see the module docstring)."""
    returns = result["episode_returns"]
    logs.log_episodes([steps] * len(returns), returns, result["episode_lengths"])
    scalars = {"train/loss": result["mean_loss"]} if result["updates"] else {}
    scalars.update({"train/env_frames_per_second": result["env_frames_per_second"],
                    "train/updates_per_second": result["updates_per_second"],
                    "train/time_percentage": agent.time_percentage()})
    if not math.isnan(result["mean_policy_lag"]):
        scalars["train/mean_policy_lag"] = result["mean_policy_lag"]
    if not math.isnan(result.get("replay_ratio", float("nan"))):  # (Ape-X, once learning started.)
        scalars["train/replay_ratio"] = result["replay_ratio"]
    logs.log_scalars(steps, scalars)
