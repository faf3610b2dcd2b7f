"""RLlib's IMPALA on CartPole-v1: the peer that rlgraph's IMPALA is measured against.

`run_rllib_impala` trains RLlib's IMPALA (Ray's new API stack, PyTorch, CPU only) and measures:

* env frames per second: env steps sampled by the env runners over the wall-clock time of the
  training loop (`algo.train()` calls); building the algorithm is timed separately. The first
  iterations report no samples while the env runners start up (`warmup_s`);
  `steady_frames_per_second` leaves them out;
* time and env steps to a target: the first training iteration whose `episode_return_mean`
  (RLlib's smoothed mean over recent episodes) reaches `target_return`.

Settings: `num_actors` env runners (Ray actors) with one env each and rollout fragments of
`rollout_length` steps; the learner runs in the driver process (`num_learners=0`, synchronous
updates); one train batch is `batch_size` sequences x `rollout_length` steps; the policy and value
heads share the hidden layer(s) of `hidden_units` units; Adam at `learning_rate`, V-trace, entropy
coefficient `entropy_coeff`, RLlib's other IMPALA defaults (gamma 0.99, grad clip 40). One training
iteration lasts at least 1 s (RLlib's IMPALA default is 10 s, too coarse for time-to-target).
Training stops after `num_timesteps` env steps or `time_limit_s` seconds, whichever comes first.

RLlib's code ships inside the ray wheel; its extra dependencies (pandas, pyarrow, pydantic, ...)
come with rlgraph's bench extra: `pip install -c constraints.txt -e ".[bench]"`.
"""
from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
from typing import Any, Callable, Dict, Optional

from rlgraph.utils.rlgraph_errors import RLGraphError

ENV_ID = "CartPole-v1"
CUSTOM_ENV_NAME = "rlgraph_rllib_impala_env"
INSTALL_HINT = 'pip install -c constraints.txt -e ".[bench]"'
RAY_NUM_CPUS = 2
MIN_TIME_S_PER_ITERATION = 1.0


def _import_rllib() -> Dict[str, Any]:
    """Imports Ray and the RLlib pieces used here.

    Returns:
        A dict with the modules/classes `ray`, `IMPALAConfig`, `DefaultModelConfig`, `register_env`.

    Raises:
        RLGraphError: Ray or one of RLlib's dependencies is not installed.
    """
    try:
        import ray
        from ray.rllib.algorithms.impala import IMPALAConfig
        from ray.rllib.core.rl_module.default_model_config import DefaultModelConfig
        from ray.tune.registry import register_env
    except ImportError as error:
        raise RLGraphError(f"RLlib cannot be imported ({error})", where="rlgraph.benchmarks.rllib_impala",
                           hint=f"install Ray and RLlib's dependencies: `{INSTALL_HINT}`") from error
    return {"ray": ray, "IMPALAConfig": IMPALAConfig, "DefaultModelConfig": DefaultModelConfig,
            "register_env": register_env}


def _mean_return(result: dict) -> Optional[float]:
    """The `episode_return_mean` of a training result, None while no episode has finished."""
    value = result.get("env_runners", {}).get("episode_return_mean")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return float(value)


def _env_steps(result: dict) -> int:
    """Env steps sampled so far (lifetime) according to a training result."""
    value = result.get("env_runners", {}).get("num_env_steps_sampled_lifetime")
    if value is None:
        value = result.get("num_env_steps_sampled_lifetime", 0)
    return int(value)


def run_rllib_impala(num_actors: int, rollout_length: int, batch_size: int, hidden_units: Any, num_timesteps: int,
                     seed: int, target_return: float = 450.0, learning_rate: float = 5e-4,
                     entropy_coeff: float = 0.01, time_limit_s: float = 600.0,
                     env_creator: Optional[Callable] = None) -> dict:
    """Trains RLlib's IMPALA and measures frames per second and time to `target_return`.

    Args:
        num_actors: Number of env runners (Ray actors), one env each.
        rollout_length: Rollout fragment length (steps per sequence).
        batch_size: Sequences per train batch (train batch = batch_size * rollout_length steps).
        hidden_units: Units of the hidden layer shared by policy and value function, or a list of
            them, one per layer.
        num_timesteps: Stop once this many env steps have been sampled.
        seed: RLlib's seed (`debugging(seed=)`).
        target_return: The mean episode return that counts as solved.
        learning_rate: Adam's learning rate.
        entropy_coeff: Weight of the entropy bonus.
        time_limit_s: Stop after this many seconds of training.
        env_creator: A zero-argument callable returning a gymnasium env to use instead of CartPole-v1.

    Returns:
        A dict with env_steps, build_time_s, wall_time_s (training only), frames_per_second,
        time_to_target_s and steps_to_target (None if the target was never reached),
        final_mean_return (None if no episode finished) and settings (the settings used). Also
        warmup_s, the training time until the first iteration that reports sampled env steps (the
        env runners' first samples), and steady_frames_per_second, the env steps after that over
        the time after it (None if there was no later iteration).

    Raises:
        RLGraphError: Ray or one of RLlib's dependencies is not installed.
    """
    rllib = _import_rllib()
    ray = rllib["ray"]
    settings: Dict[str, Any] = {
        "env": ENV_ID if env_creator is None else getattr(env_creator, "__name__", repr(env_creator)),
        "framework": "torch", "num_actors": num_actors, "envs_per_actor": 1, "rollout_length": rollout_length,
        "batch_size": batch_size, "train_batch_size_steps": batch_size * rollout_length,
        "hidden_units": hidden_units, "vf_share_layers": True, "num_learners": 0, "num_timesteps": num_timesteps,
        "seed": seed, "target_return": target_return, "learning_rate": learning_rate,
        "entropy_coeff": entropy_coeff, "time_limit_s": time_limit_s,
        "min_time_s_per_iteration": MIN_TIME_S_PER_ITERATION, "ray_version": ray.__version__,
    }
    started_ray, temp_dir, previous_auth = False, None, os.environ.get("RAY_AUTH_MODE")
    algo = None
    try:
        if not ray.is_initialized():
            os.environ["RAY_AUTH_MODE"] = "disabled"  # Ray >= 2.5x would write ~/.ray/auth_token otherwise.
            temp_dir = tempfile.mkdtemp(prefix="rlr", dir="/tmp")  # Short: Ray's socket paths have a length limit.
            ray.init(num_cpus=RAY_NUM_CPUS, include_dashboard=False, _temp_dir=temp_dir)
            started_ray = True
        env_name = ENV_ID
        if env_creator is not None:
            rllib["register_env"](CUSTOM_ENV_NAME, lambda _env_config: env_creator())
            env_name = CUSTOM_ENV_NAME
        # Fractional CPUs so that more actors than cores still get scheduled.
        cpus = float(ray.cluster_resources().get("CPU", RAY_NUM_CPUS))
        cpus_per_actor = min(1.0, cpus / max(num_actors, 1))
        settings["cpus_per_actor"] = cpus_per_actor
        config = (rllib["IMPALAConfig"]()
                  .environment(env_name)
                  .framework("torch")
                  .env_runners(num_env_runners=num_actors, num_envs_per_env_runner=1,
                               rollout_fragment_length=rollout_length, num_cpus_per_env_runner=cpus_per_actor)
                  .learners(num_learners=0, num_gpus_per_learner=0)
                  .training(train_batch_size_per_learner=batch_size * rollout_length, lr=learning_rate,
                            entropy_coeff=entropy_coeff)
                  .rl_module(model_config=rllib["DefaultModelConfig"](fcnet_hiddens=list(hidden_units) if isinstance(hidden_units, (list, tuple))
                                                                     else [hidden_units],
                                                                     vf_share_layers=True))
                  .reporting(min_time_s_per_iteration=MIN_TIME_S_PER_ITERATION)
                  .debugging(seed=seed))
        start = time.perf_counter()
        algo = config.build_algo()
        build_time = time.perf_counter() - start

        env_steps, mean_return, time_to_target, steps_to_target = 0, None, None, None
        warmup_time, warmup_steps = None, 0
        start = time.perf_counter()
        while env_steps < num_timesteps and time.perf_counter() - start < time_limit_s:
            result = algo.train()
            elapsed = time.perf_counter() - start
            env_steps = _env_steps(result)
            mean_return = _mean_return(result)
            if warmup_time is None and env_steps > 0:
                warmup_time, warmup_steps = elapsed, env_steps
            if time_to_target is None and mean_return is not None and mean_return >= target_return:
                time_to_target, steps_to_target = elapsed, env_steps
        wall_time = time.perf_counter() - start
    finally:
        if algo is not None:
            algo.stop()
        if started_ray:
            ray.shutdown()
            if previous_auth is None:
                os.environ.pop("RAY_AUTH_MODE", None)
            else:
                os.environ["RAY_AUTH_MODE"] = previous_auth
        if temp_dir is not None:
            shutil.rmtree(temp_dir, ignore_errors=True)
    steady_fps = None
    if warmup_time is not None and wall_time > warmup_time:
        steady_fps = (env_steps - warmup_steps) / (wall_time - warmup_time)
    return {
        "env_steps": env_steps, "build_time_s": build_time, "wall_time_s": wall_time,
        "frames_per_second": env_steps / wall_time if wall_time > 0 else 0.0,
        "time_to_target_s": time_to_target, "steps_to_target": steps_to_target,
        "final_mean_return": mean_return, "settings": settings,
        "warmup_s": warmup_time, "steady_frames_per_second": steady_fps,
    }
