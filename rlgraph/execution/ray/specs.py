"""The `execution_spec.ray_spec` sections of a distributed config: defaults, checks, obsolete keys.

A distributed config is an agent config whose `execution_spec` holds a `ray_spec` with three
sections (the original RLgraph's key names):

- `executor_spec`: where and how many actors run (`EXECUTOR_SPEC_DEFAULTS`);
- `worker_spec`: what each sample worker does (`WORKER_SPEC_DEFAULTS`);
- `apex_replay_spec`: the replay shards (`APEX_REPLAY_SPEC_DEFAULTS`).

Keys that meant something on the Ray of 2018 but not on Ray 2 (`OBSOLETE_KEYS`) are accepted
and ignored with one warning per key and process; any other unknown key is an
`RLGraphSpecError` naming the closest valid key.
"""
from __future__ import annotations

import copy
import logging
from typing import Any, Dict, Tuple

from rlgraph.agents.specs import check_bool, check_directory, check_number, check_positive_int, check_seed, check_spec
from rlgraph.components.memories.frame_replay import FRAME_MEMORY_TYPES, check_store_frames_once
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

logger = logging.getLogger(__name__)

EXECUTOR_SPEC_DEFAULTS: Dict[str, Any] = {
    "redis_address": None,             # an existing cluster's address ("host:port", "auto"); None: start Ray here
    "num_cpus": None,                  # CPUs of a Ray started here (None: all)
    "num_gpus": None,
    "weight_sync_steps": 100,          # a worker gets new weights after this many of its env steps
    "replay_sampling_task_depth": 1,   # sample calls in flight per replay shard
    "env_interaction_task_depth": 1,   # sample tasks in flight per sample worker
    "num_worker_samples": 100,         # env steps per sample task (over all of a worker's envs)
    "learn_queue_size": 4,             # sampled batches waiting for the learner
    "num_sample_workers": 2,
    "num_replay_workers": 1,           # replay shards
    "num_cpus_per_worker": 1,
    "num_gpus_per_worker": 0,
    "num_cpus_per_replay_actor": 1,
    "num_cpus_per_learner": 1,         # each data-parallel learner (execution_spec.num_learners > 1)
    "num_gpus_per_learner": 0,
    "discard_queued_samples": False,   # drop sampled batches while the learn queue is full (else wait)
    "replay_ratio": None,              # Ape-X: records sampled (updates x batch_size) per record inserted (None: off)
    "max_num_worker_restarts": 10,     # restarts of killed actors (workers and shards together)
    "mode": "ray",                     # "ray" or "inline" (plain objects in this process, no Ray)
    "actor_start_timeout": 120.0,      # seconds an actor may take to start before the run fails
}
WORKER_SPEC_DEFAULTS: Dict[str, Any] = {
    "execution_spec": None,            # overrides of the agent's execution_spec on the workers
    "num_worker_environments": 1,      # envs stepped together by each worker
    "num_background_envs": 0,          # (obsolete: envs step in the worker)
    "worker_frame_skip": 1,            # each worker action is repeated this many times
    "env_internal_frame_skip": 1,      # frames per env step inside the env (for frame counts only)
    "n_step_adjustment": None,         # n of the workers' n-step returns (None: the agent's n_step; 0 means 1)
    "worker_executes_postprocessing": True,  # initial priorities |TD| computed on the worker
    "worker_executes_exploration": True,
    "sample_exploration": False,       # each worker draws its start epsilon in [exploration_min_value, from)
    "exploration_min_value": 0.0,
    "ray_constant_exploration": False,  # worker i of N acts with epsilon 0.4 ** (1 + 7 i / (N - 1))
    "seed": None,                      # envs and agents of worker i get seed + i (None: the agent's seed)
}
APEX_REPLAY_SPEC_DEFAULTS: Dict[str, Any] = {
    "memory_spec": None,               # type, capacity (over all shards), alpha, beta, epsilon[, frame_stack]
    "clip_rewards": False,             # workers observe rewards clipped to [-1, 1]
    "min_sample_memory_size": None,    # records (over all shards) before learning starts (None: 1000 or the capacity)
    "n_step_adjustment": None,         # (the workers' n; kept for old configs)
    "snapshot_interval": 0,            # records inserted into a shard between its snapshots (0: none)
    "snapshot_directory": None,        # where shards write snapshots (None: a temporary directory)
}
# A ratio beyond this would sample each record a million times: surely a typo (and keeps the counts exact).
MAX_REPLAY_RATIO = 1e6
MEMORY_SPEC_DEFAULTS: Dict[str, Any] = {"type": "mem-prioritized-replay", "capacity": 100000, "alpha": 0.6,
                                        "beta": 0.4, "epsilon": 1e-6, "frame_stack": None,
                                        "store_frames_once": "auto"}
# The further keys of a "frame-replay" memory (`FrameReplay`; frame_capacity, like capacity, over all shards).
FRAME_SPEC_DEFAULTS: Dict[str, Any] = {"frame_stack": None, "frame_capacity": None, "compress": False}
# Keys accepted for old configs but without effect on Ray 2 -> why.
OBSOLETE_KEYS = {
    "worker_spec.num_background_envs": "the worker steps its envs itself (Ray 2 has no background env threads)",
    "apex_replay_spec.n_step_adjustment": "the workers fold n-step returns in (worker_spec.n_step_adjustment)",
    "worker_spec.execution_spec.gpu_spec": "TF1 device placement; set executor_spec.num_gpus_per_worker",
    "worker_spec.execution_spec.session_config": "TF1 sessions do not exist in TF2",
    "worker_spec.execution_spec.disable_monitoring": "TF1 monitoring does not exist in TF2",
}
_warned = set()


def warn_obsolete(key: str) -> None:
    """Logs (once per process) that config key `key` is accepted but has no effect."""
    if key not in _warned:
        _warned.add(key)
        logger.warning("config key '%s' is accepted for old configs and ignored: %s.", key, OBSOLETE_KEYS[key])


def split_ray_spec(agent_config: dict) -> Tuple[dict, dict]:
    """(the agent config without `execution_spec.ray_spec`, the checked ray spec sections).

    The input is not changed. The ray spec comes back as {"executor_spec", "worker_spec",
    "apex_replay_spec"} with defaults filled in.

    Raises:
        RLGraphSpecError: For a missing or malformed ray_spec, unknown keys (closest match named)
            or bad values.
    """
    if not isinstance(agent_config, dict):
        raise RLGraphSpecError("an agent config must be a dict", where="agent_config", received=type(agent_config))
    config = copy.deepcopy(agent_config)
    execution = dict(config.get("execution_spec") or {})
    ray_spec = execution.pop("ray_spec", None)
    config["execution_spec"] = execution
    if ray_spec is None:
        ray_spec = {}
    sections = {"executor_spec": EXECUTOR_SPEC_DEFAULTS, "worker_spec": WORKER_SPEC_DEFAULTS,
                "apex_replay_spec": APEX_REPLAY_SPEC_DEFAULTS}
    checked = check_spec(ray_spec, {k: None for k in sections}, "ray_spec", "execution_spec")
    out = {name: check_spec(checked[name], defaults, name, "ray_spec") for name, defaults in sections.items()}
    _check_values(out)
    worker = out["worker_spec"]
    if worker["num_background_envs"]:
        warn_obsolete("worker_spec.num_background_envs")
    if out["apex_replay_spec"]["n_step_adjustment"] is not None:
        warn_obsolete("apex_replay_spec.n_step_adjustment")
    overrides = dict(worker["execution_spec"] or {})
    for key in ("gpu_spec", "session_config", "disable_monitoring"):
        if key in overrides:
            overrides.pop(key)
            warn_obsolete(f"worker_spec.execution_spec.{key}")
    worker["execution_spec"] = overrides
    n_step = check_positive_int(config.get("n_step", 1), "n_step", "ApexAgent")
    if worker["n_step_adjustment"] is None:
        worker["n_step_adjustment"] = n_step
    worker["n_step_adjustment"] = max(1, worker["n_step_adjustment"])
    if worker["n_step_adjustment"] != n_step:
        raise RLGraphSpecError("the workers' n-step returns and the learner's n_step differ",
                               where="ray_spec.worker_spec(n_step_adjustment)", expected=f"n_step = {n_step}",
                               received=worker["n_step_adjustment"],
                               hint="the learner discounts the bootstrap by gamma ** n_step: set both to the same n.")
    return config, out


def _check_values(spec: Dict[str, dict]) -> None:
    executor, worker, replay = spec["executor_spec"], spec["worker_spec"], spec["apex_replay_spec"]
    where = "ray_spec.executor_spec"
    for key in ("weight_sync_steps", "replay_sampling_task_depth", "env_interaction_task_depth",
                "num_worker_samples", "learn_queue_size", "num_sample_workers", "num_replay_workers"):
        executor[key] = check_positive_int(executor[key], key, where)
    executor["max_num_worker_restarts"] = check_positive_int(executor["max_num_worker_restarts"],
                                                             "max_num_worker_restarts", where, minimum=0)
    for key in ("num_cpus_per_worker", "num_gpus_per_worker", "num_cpus_per_replay_actor", "num_cpus_per_learner",
                "num_gpus_per_learner"):
        executor[key] = check_number(executor[key], key, where, low=0)
    executor["num_cpus"] = check_number(executor["num_cpus"], "num_cpus", where, low=0, low_inclusive=False,
                                        allow_none=True)
    executor["num_gpus"] = check_number(executor["num_gpus"], "num_gpus", where, low=0, allow_none=True)
    executor["actor_start_timeout"] = check_number(executor["actor_start_timeout"], "actor_start_timeout", where,
                                                   low=0, low_inclusive=False)
    executor["replay_ratio"] = check_number(
        executor["replay_ratio"], "replay_ratio", where, low=0, high=MAX_REPLAY_RATIO, low_inclusive=False,
        allow_none=True, hint="records the learner samples (updates x batch_size) per record inserted into the replay, "
                              "e.g. 8 for DQN's batch of 32 every 4 env steps; null: the update_spec cadence.")
    if executor["replay_ratio"] is not None:
        executor["replay_ratio"] = float(executor["replay_ratio"])
    executor["discard_queued_samples"] = check_bool(executor["discard_queued_samples"], "discard_queued_samples",
                                                    where)
    if executor["redis_address"] is not None and not isinstance(executor["redis_address"], str):
        raise RLGraphSpecError("redis_address must be a string or null", where=f"{where}(redis_address)",
                               expected='"host:port" or "auto"', received=repr(executor["redis_address"]))
    if executor["mode"] not in ("ray", "inline"):
        raise RLGraphSpecError("unknown mode", where=f"{where}(mode)", expected=["ray", "inline"],
                               received=repr(executor["mode"]),
                               hint='"inline" runs the actors as plain objects in this process (debugging, tests).')
    where = "ray_spec.worker_spec"
    for key in ("num_worker_environments", "worker_frame_skip", "env_internal_frame_skip"):
        worker[key] = check_positive_int(worker[key], key, where)
    if worker["n_step_adjustment"] is not None:
        worker["n_step_adjustment"] = check_positive_int(worker["n_step_adjustment"], "n_step_adjustment", where,
                                                         minimum=0)
    for key in ("worker_executes_postprocessing", "worker_executes_exploration", "sample_exploration",
                "ray_constant_exploration"):
        worker[key] = check_bool(worker[key], key, where)
    worker["exploration_min_value"] = check_number(worker["exploration_min_value"], "exploration_min_value", where,
                                                   0, 1)
    worker["seed"] = check_seed(worker["seed"], "seed", where)
    if worker["sample_exploration"] and worker["ray_constant_exploration"]:
        raise RLGraphSpecError("sample_exploration and ray_constant_exploration exclude each other",
                               where=where, received="both true")
    if worker["execution_spec"] is not None and not isinstance(worker["execution_spec"], dict):
        raise RLGraphSpecError("execution_spec must be a dict", where=f"{where}(execution_spec)",
                               received=repr(worker["execution_spec"]))
    where = "ray_spec.apex_replay_spec"
    replay["snapshot_interval"] = check_positive_int(replay["snapshot_interval"], "snapshot_interval", where,
                                                     minimum=0)
    replay["clip_rewards"] = check_bool(replay["clip_rewards"], "clip_rewards", where)
    replay["snapshot_directory"] = check_directory(replay["snapshot_directory"], "snapshot_directory", where)
    raw = replay["memory_spec"]
    frames = isinstance(raw, dict) and str(raw.get("type", "")).replace("_", "-").lower() in FRAME_MEMORY_TYPES
    memory = check_spec(raw, dict(MEMORY_SPEC_DEFAULTS, **FRAME_SPEC_DEFAULTS) if frames else MEMORY_SPEC_DEFAULTS,
                        "memory_spec", where)
    memory_type = memory.pop("type")
    plain_types = ("mem-prioritized-replay", "prioritized-replay")
    if not frames and str(memory_type).replace("_", "-").lower() not in plain_types:
        raise RLGraphSpecError("Ape-X replay shards are prioritized memories", where=f"{where}(memory_spec.type)",
                               expected='"mem-prioritized-replay", or "frame-replay" for stacked frames stored once',
                               received=repr(memory_type))
    store_once = check_store_frames_once(memory.pop("store_frames_once"), f"{where}(memory_spec)")
    if store_once is False and frames:
        raise RLGraphSpecError("a frame replay stores each frame once", where=f"{where}(memory_spec.store_frames_once)",
                               received="false", hint='use type "mem-prioritized-replay" to keep whole states.')
    if not frames:  # (Made a "frame-replay" by the executor where its states are stacked frames.)
        memory["store_frames_once"] = store_once
        if memory["frame_stack"] is not None:
            memory["frame_stack"] = check_positive_int(memory["frame_stack"], "memory_spec.frame_stack", where)
    if frames:
        memory["type"] = "frame-replay"
        for key in ("frame_stack", "frame_capacity"):
            if memory[key] is not None:
                memory[key] = check_positive_int(memory[key], f"memory_spec.{key}", where)
        memory["compress"] = check_bool(memory["compress"], "memory_spec.compress", where)
    memory["capacity"] = check_positive_int(memory["capacity"], "memory_spec.capacity", where)
    for key in ("alpha", "beta"):  # Exponents in [0, 1] (see `PrioritizedReplay`).
        memory[key] = check_number(memory[key], f"memory_spec.{key}", where, 0, 1)
    memory["epsilon"] = check_number(memory["epsilon"], "memory_spec.epsilon", where, low=0, low_inclusive=False,
                                     hint="a priority of 0 would give its record an infinite importance weight.")
    if replay["min_sample_memory_size"] is None:
        replay["min_sample_memory_size"] = min(1000, memory["capacity"])
    replay["min_sample_memory_size"] = check_positive_int(replay["min_sample_memory_size"],
                                                          "min_sample_memory_size", where, minimum=0)
    if replay["min_sample_memory_size"] > memory["capacity"]:
        raise RLGraphSpecError("min_sample_memory_size exceeds the replay capacity: learning would never start",
                               where=f"{where}(min_sample_memory_size)", expected=f"<= {memory['capacity']}",
                               received=replay["min_sample_memory_size"],
                               hint="to run without learning, set update_spec.do_updates to false.")
    replay["memory_spec"] = memory
