"""`train`: the training run behind `rlgraph train` (and the learning tests).

A config file holds the agent spec plus two run sections that `Agent.from_spec` ignores:

- "environment_spec": the environment (e.g. {"type": "openai-gym", "gym_env": "CartPole-v1"});
- "training_spec": see `TRAINING_SPEC_DEFAULTS`.

A run writes into `output_dir`: config.json (the resolved config), episodes.csv (every training
episode), evaluations.csv, TensorBoard event files, checkpoints/ (every `checkpoint_interval`
steps and "final"), and learning_curve.png.

A config whose `execution_spec` holds a `ray_spec` is a distributed (Ape-X) run: `train` hands
it to `rlgraph.execution.distributed_training`, which writes the same files (docs/distributed.md).
"""
from __future__ import annotations

import copy
import json
import logging
import math
import os
import shutil
import time
from functools import partial
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence

from rlgraph.agents.specs import (SAVER_SPEC_DEFAULTS, SUMMARY_SPEC_DEFAULTS, check_number, check_saver_spec,
                                  check_seed, check_spec, check_summary_spec)
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError
from rlgraph.utils.specifiable import load_json_text, load_spec_file

logger = logging.getLogger(__name__)

# The valid values are checked by `check_training_spec` (and listed in docs/agents.md).
TRAINING_SPEC_DEFAULTS: Dict[str, Any] = {
    "num_timesteps": 50000,          # env steps to train (>= 1)
    "num_environments": 1,           # envs stepped together by the worker (>= 1)
    "max_timesteps_per_episode": 0,  # 0: the env's own limit
    "evaluation_interval": 5000,     # env steps between greedy evaluations (0: none)
    "evaluation_episodes": 5,        # (>= 1)
    "stop_at_return": None,          # stop once an evaluation's mean return reaches this (a number or None)
    "checkpoint_interval": 0,        # env steps between checkpoints (0: only the final one)
    "log_interval": 1000,            # env steps per progress/log chunk (>= 1)
}


def apply_overrides(config: dict, overrides: Iterable[str]) -> dict:
    """`config` with "key.path=value" overrides applied (values parsed as JSON where possible).

    Raises:
        RLGraphSpecError: For an override without "=" or a path through a non-dict.
    """
    config = copy.deepcopy(config)
    for item in overrides or ():
        if "=" not in item:
            raise RLGraphSpecError("an override must look like key.path=value", where="--set", received=item)
        path, text = item.split("=", 1)
        try:
            value = load_json_text(text, repr(item), where="--set")  # Bounded in size and depth.
        except json.JSONDecodeError:
            value = text
        node = config
        keys = path.strip().split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                raise RLGraphSpecError(f"cannot set '{path}': '{key}' is not a dict", where="--set", received=item)
        node[keys[-1]] = value
    return config


def resolve_config(config: Any, env: Any = None, backend: Optional[str] = None, num_timesteps: Optional[int] = None,
                   seed: Optional[int] = None, overrides: Iterable[str] = ()) -> dict:
    """The run's full config: file or dict, then the overrides, then the explicit arguments.

    Raises:
        RLGraphSpecError: For a config that is not a mapping, or invalid overrides/sections.
    """
    source = config if isinstance(config, str) else "config"
    config = load_spec_file(config) if isinstance(config, str) else config
    if not isinstance(config, Mapping):
        raise RLGraphSpecError("a config must be a mapping", where=f"train({source!r})",
                               expected='a dict (JSON object, YAML mapping) such as {"type": "dqn", ...}',
                               received=repr(config)[:80])
    config = copy.deepcopy(dict(config))
    config = apply_overrides(config, overrides)
    if env is not None:
        config["environment_spec"] = {"type": "openai-gym", "gym_env": env} if isinstance(env, str) else env
    if "environment_spec" not in config:
        raise RLGraphSpecError("no environment", where="train", hint="give --env ID or an environment_spec section.")
    training = check_spec(config.get("training_spec"), TRAINING_SPEC_DEFAULTS, "training_spec", "train")
    if num_timesteps is not None:
        training["num_timesteps"] = num_timesteps
    config["training_spec"] = check_training_spec(training)
    _check_run_specs(config)
    if backend is not None:
        config["backend"] = backend
    execution = config.setdefault("execution_spec", {})
    if not isinstance(execution, dict):
        raise RLGraphSpecError("execution_spec must be a dict", where="train(execution_spec)", received=repr(execution))
    if seed is not None:
        execution["seed"] = check_seed(seed, "--seed", "train", allow_none=False)
    execution.setdefault("max_timesteps", config["training_spec"]["num_timesteps"])
    return config


def check_training_spec(spec: Dict[str, Any]) -> Dict[str, Any]:
    """Checks (and normalizes, e.g. 1e5 -> 100000) the values of a full `training_spec` in place.

    Raises:
        RLGraphSpecError: Naming the key (e.g. "training_spec.log_interval"), its range and the value.
    """
    for key, low in (("num_timesteps", 1), ("num_environments", 1), ("max_timesteps_per_episode", 0),
                     ("evaluation_interval", 0), ("evaluation_episodes", 1), ("checkpoint_interval", 0),
                     ("log_interval", 1)):
        spec[key] = check_number(spec[key], f"training_spec.{key}", "train", low=low, integer=True,
                                 hint="0 switches it off." if low == 0 and "interval" in key else None)
    spec["stop_at_return"] = check_number(spec["stop_at_return"], "training_spec.stop_at_return", "train",
                                          allow_none=True, hint="null trains for all num_timesteps.")
    return spec


def _check_run_specs(config: dict) -> None:
    """Checks the `saver_spec` and `summary_spec` that `RunLogs` reads; `saver_spec.checkpoint_frequency`
    (the original RLgraph's key) sets `training_spec.checkpoint_interval`."""
    if config.get("summary_spec") is not None:
        config["summary_spec"] = check_summary_spec(
            check_spec(config["summary_spec"], SUMMARY_SPEC_DEFAULTS, "summary_spec", "train"), "train")
    if config.get("saver_spec") is None:
        return
    saver = config["saver_spec"] = check_saver_spec(
        check_spec(config["saver_spec"], SAVER_SPEC_DEFAULTS, "saver_spec", "train"), "train")
    frequency, training = saver["checkpoint_frequency"], config["training_spec"]
    if frequency is not None:
        if training["checkpoint_interval"] not in (0, frequency):
            raise RLGraphSpecError("saver_spec.checkpoint_frequency and training_spec.checkpoint_interval differ",
                                   where="train(saver_spec.checkpoint_frequency)",
                                   expected=f"training_spec.checkpoint_interval {training['checkpoint_interval']}",
                                   received=frequency, hint="both are env steps between checkpoints: set one.")
        training["checkpoint_interval"] = frequency


def is_distributed(config: dict) -> bool:
    """Whether a config runs on a distributed executor: its execution_spec holds a ray_spec, or it
    is an IMPALA config (its actors run inline then, see `distributed_training.train_distributed`)."""
    if "ray_spec" in (config.get("execution_spec") or {}):
        return True
    from rlgraph.agents import Agent, IMPALAAgent
    try:
        agent_class = Agent.resolve_type(config.get("type"))
    except RLGraphError:
        return False
    return isinstance(agent_class, type) and issubclass(agent_class, IMPALAAgent)


def make_agent_and_env(config: dict):
    """(agent, environment spec) for a resolved config.

    For a distributed config the agent is the one its learner runs (see
    `distributed_training.learner_config`), e.g. to load an Ape-X checkpoint's `learner/`.
    """
    from rlgraph.agents import Agent
    from rlgraph.environments import Environment
    if is_distributed(config):
        from rlgraph.execution.distributed_training import learner_config
        config = learner_config(config)
    env_spec = config["environment_spec"]
    probe = Environment.from_spec(env_spec)
    state_space, action_space = probe.state_space, probe.action_space
    probe.terminate()
    agent_spec = {k: v for k, v in config.items() if k not in ("environment_spec", "training_spec")}
    agent = Agent.from_spec(agent_spec, state_space=state_space, action_space=action_space)
    return agent, env_spec


def train(config: Any, env: Any = None, backend: Optional[str] = None, num_timesteps: Optional[int] = None,
          seed: Optional[int] = None, overrides: Iterable[str] = (), output_dir: Optional[str] = None,
          progress: bool = True, ray_address: Optional[str] = None) -> Dict[str, Any]:
    """Trains an agent as its config says; see the module docstring for what is written.

    A config with `execution_spec.ray_spec` runs on its distributed executor
    (`distributed_training.train_distributed`); any other in one `SingleThreadedWorker`.

    Args:
        config: A config file path or dict (agent spec + environment_spec + training_spec).
        env: An environment id or spec replacing the config's environment_spec.
        backend: "tf" or "pytorch" (default: the config's, else rlgraph's default).
        num_timesteps: Replaces training_spec.num_timesteps.
        seed: Seeds the agent (execution_spec.seed) and the environments.
        overrides: "key.path=value" strings applied to the config first.
        output_dir: Where to write logs and checkpoints (None: nothing is written).
        progress: Show a tqdm progress bar.
        ray_address: The Ray cluster of a distributed run ("host:port"; overrides
            `ray_spec.executor_spec.redis_address`).

    Returns:
        A summary: solved, solved_at_step, evaluations [(step, mean return)], best_evaluation,
        timesteps, episodes, wall_time, env_frames_per_second, output files.

    Raises:
        RLGraphSpecError: For an invalid config, or a `ray_address` with a config that is not
            distributed.
    """
    from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
    config = resolve_config(config, env, backend, num_timesteps, seed, overrides)
    if is_distributed(config):
        from rlgraph.execution.distributed_training import train_distributed
        return train_distributed(config, output_dir=output_dir, progress=progress, ray_address=ray_address)
    if ray_address is not None:
        raise RLGraphSpecError("a Ray address needs a distributed config", where="train(ray_address, --ray-address)",
                               expected="a config with execution_spec.ray_spec (e.g. configs/apex_cartpole.json)",
                               received=f"{ray_address!r} with agent type {config.get('type')!r} and no ray_spec",
                               hint="drop --ray-address to train in this process, or train an Ape-X config.")
    spec = config["training_spec"]
    seed = config["execution_spec"].get("seed")
    start = time.perf_counter()
    agent, env_spec = make_agent_and_env(config)
    worker = SingleThreadedWorker(agent, env_spec, num_environments=spec["num_environments"], seed=seed)
    evaluator = None
    if spec["evaluation_interval"]:
        evaluator = SingleThreadedWorker(agent, env_spec, num_environments=spec["evaluation_episodes"],
                                         seed=None if seed is None else seed + 10_000)
    logs = RunLogs(output_dir, config) if output_dir else None
    bar = progress_bar(spec["num_timesteps"], progress)
    evaluations, steps, episodes, solved_at = [], 0, 0, None
    next_eval = spec["evaluation_interval"] or math.inf
    next_checkpoint = spec["checkpoint_interval"] or math.inf
    last_return = float("nan")
    try:
        while steps < spec["num_timesteps"]:
            chunk = min(spec["log_interval"], spec["num_timesteps"] - steps, max(1, next_eval - steps),
                        max(1, next_checkpoint - steps))
            stats = worker.execute_timesteps(chunk, spec["max_timesteps_per_episode"], reset=steps == 0)
            steps += stats["timesteps_executed"]
            episodes += stats["episodes_executed"]
            if stats["episode_returns"]:
                last_return = stats["episode_returns"][-1]
            if logs:
                logs.log_chunk(stats, agent)
            if steps >= next_eval:
                next_eval += spec["evaluation_interval"]
                if evaluate_greedily(evaluator, spec, steps, logs, evaluations):
                    solved_at = steps
            if logs and steps >= next_checkpoint:
                next_checkpoint += spec["checkpoint_interval"]
                logs.periodic_checkpoint(steps, partial(agent.store_model, add_timestep=False))
            if bar is not None:
                bar.update(stats["timesteps_executed"])
                bar.set_postfix(episodes=episodes, last_return=f"{last_return:.1f}",
                                eval=f"{evaluations[-1][1]:.1f}" if evaluations else "-")
            if solved_at is not None:
                break
    except BaseException:
        # A failed (or interrupted) run still leaves consistent files: every finished episode (those
        # of a chunk an env failure cut short too) in episodes.csv and the curve, the logs flushed and
        # closed. There is no final checkpoint: the agent may be in a broken state.
        if logs:
            cut = worker.interrupted_stats
            if cut is not None:
                logs.log_episodes(cut["episode_end_steps"], cut["episode_returns"], cut["episode_lengths"])
            logs.close()
        worker.terminate()
        if evaluator is not None:
            evaluator.terminate()
        raise
    finally:
        if bar is not None:
            bar.close()
    summary = {
        "solved": solved_at is not None, "solved_at_step": solved_at, "evaluations": evaluations,
        "best_evaluation": max((e[1] for e in evaluations), default=float("nan")), "timesteps": steps,
        "episodes": episodes, "wall_time": time.perf_counter() - start, "backend": agent.backend,
        "agent_timesteps": agent.timesteps, "num_updates": agent.num_updates,
    }
    summary["env_frames_per_second"] = steps / summary["wall_time"]
    if logs:
        summary.update(logs.finish(partial(agent.store_model, add_timestep=False)))
    worker.terminate()
    if evaluator is not None:
        evaluator.terminate()
    agent.terminate()
    return summary


def evaluate_greedily(evaluator: Any, spec: dict, steps: int, logs: Any, evaluations: list) -> bool:
    """The greedy evaluation of `training_spec` at env step `steps`: appends (steps, mean return)
    to `evaluations`, logs it (if `logs`), and returns whether it reached `stop_at_return`."""
    result = evaluator.evaluate(spec["evaluation_episodes"], spec["max_timesteps_per_episode"])
    evaluations.append((steps, result["mean_episode_return"]))
    if logs:
        logs.log_evaluation(steps, result)
    target = spec["stop_at_return"]
    return target is not None and result["mean_episode_return"] >= target


def progress_bar(total: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm
    return tqdm(total=total, unit="step", dynamic_ncols=True)


class RunLogs:
    """The files of a run: config.json, CSVs, TensorBoard events, checkpoints, the PNG curve."""

    def __init__(self, output_dir: str, config: dict):
        from rlgraph.utils.run_logs import CSVLogger
        from rlgraph.utils.tensorboard import TensorBoardWriter
        self.output_dir = output_dir
        os.makedirs(output_dir, exist_ok=True)
        self.config = config
        with open(os.path.join(output_dir, "config.json"), "w") as handle:
            json.dump(config, handle, indent=2, default=str)
        self.episodes = CSVLogger(os.path.join(output_dir, "episodes.csv"), ["step", "episode", "return", "length"])
        self.evaluations = CSVLogger(os.path.join(output_dir, "evaluations.csv"),
                                     ["step", "mean_return", "min_return", "max_return"])
        # summary_spec/saver_spec as `resolve_config` checked them (defaults where a config has none).
        summary = dict(SUMMARY_SPEC_DEFAULTS, **(config.get("summary_spec") or {}))
        self.tensorboard = TensorBoardWriter(summary["directory"] or os.path.join(output_dir, "tensorboard"))
        self.summary_interval, self.last_scalar_step = summary["summary_interval"], None
        self.max_checkpoints = dict(SAVER_SPEC_DEFAULTS, **(config.get("saver_spec") or {}))["max_checkpoints"]
        self.periodic_checkpoints = []  # Paths of this run's step-N checkpoints, oldest first.
        self.curve_steps, self.curve_returns, self.episode_count = [], [], 0

    def log_chunk(self, stats: dict, agent: Any) -> None:
        """A `SingleThreadedWorker` chunk: its episodes and scalars."""
        self.log_episodes(stats["episode_end_steps"], stats["episode_returns"], stats["episode_lengths"])
        scalars = {"train/loss": stats["mean_loss"]} if stats["num_updates"] else {}
        scalars.update({"train/env_frames_per_second": stats["env_frames_per_second"],
                        "train/time_percentage": agent.time_percentage()})
        self.log_scalars(stats["total_timesteps"], scalars)

    def log_episodes(self, steps: Sequence[int], returns: Sequence[float], lengths: Sequence[Any]) -> None:
        """One episodes.csv row and TensorBoard point per episode (a length may be None: unknown)."""
        for step, ret, length in zip(steps, returns, lengths):
            self.episode_count += 1
            self.episodes.log({"step": step, "episode": self.episode_count, "return": ret, "length": length})
            self.tensorboard.add_scalar("train/episode_return", ret, step)
            self.curve_steps.append(step)
            self.curve_returns.append(ret)

    def log_scalars(self, step: int, scalars: Dict[str, float]) -> None:
        """TensorBoard points of the training scalars, at most one per `summary_spec.summary_interval`
        env steps (the first chunk's always); then flushes the event file."""
        if self.last_scalar_step is None or step - self.last_scalar_step >= self.summary_interval:
            self.last_scalar_step = step
            for name, value in scalars.items():
                self.tensorboard.add_scalar(name, value, step)
        self.tensorboard.flush()

    def log_evaluation(self, step: int, result: dict) -> None:
        self.evaluations.log({"step": step, "mean_return": result["mean_episode_return"],
                              "min_return": result["min_episode_return"], "max_return": result["max_episode_return"]})
        self.tensorboard.add_scalar("eval/mean_return", result["mean_episode_return"], step)

    def checkpoint(self, name: str, store: Callable[..., str]) -> str:
        """checkpoints/`name`: what `store(path, extra_files=...)` writes there, with the run's
        config.json inside the checkpoint (so its manifest covers the config too)."""
        return store(os.path.join(self.output_dir, "checkpoints", name), extra_files={"config.json": self.config})

    def periodic_checkpoint(self, step: int, store: Callable[..., str]) -> str:
        """checkpoints/step-`step` (see `checkpoint`); beyond `saver_spec.max_checkpoints` the
        oldest step-N checkpoints of this run are deleted (the final one is always kept)."""
        path = self.checkpoint(f"step-{step}", store)
        self.periodic_checkpoints.append(path)
        while self.max_checkpoints is not None and len(self.periodic_checkpoints) > self.max_checkpoints:
            old = self.periodic_checkpoints.pop(0)
            try:
                shutil.rmtree(old)
            except OSError as error:
                logger.warning("could not delete the old checkpoint %s (saver_spec.max_checkpoints): %s", old, error)
        return path

    def finish(self, store: Callable[[str], str]) -> Dict[str, str]:
        checkpoint = self.checkpoint("final", store)
        return {"output_dir": self.output_dir, "checkpoint": checkpoint, "learning_curve": self.close()}

    def close(self) -> str:
        """Closes the logs (all rows are on disk then) and plots learning_curve.png from the
        episodes logged so far; returns the plot's path. A failed run ends here too."""
        from rlgraph.utils.run_logs import plot_learning_curve
        self.tensorboard.close()
        self.episodes.close()
        self.evaluations.close()
        curve = os.path.join(self.output_dir, "learning_curve.png")
        env = self.config["environment_spec"]
        env_name = env.get("gym_env", env.get("game", env.get("type"))) if isinstance(env, dict) else env
        title = f"{self.config.get('type', 'agent')} on {env_name}"
        plot_learning_curve(self.curve_steps, self.curve_returns, curve, title=title)
        return curve
