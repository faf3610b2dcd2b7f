"""A training run's config: the file, its `--set` overrides, the `training_spec` checks, the agent and env it makes.

A config holds the agent spec plus the run sections "environment_spec" and "training_spec"
(see `TRAINING_SPEC_DEFAULTS`); `resolve_config` gives the full, checked config that `train`
(`rlgraph.execution.training`) and the other tools run.
"""
from __future__ import annotations

import copy
import json
from typing import Any, Dict, Iterable, Mapping, Optional

from rlgraph.agents.agent import RUN_SECTIONS
from rlgraph.agents.specs import (SAVER_SPEC_DEFAULTS, SUMMARY_SPEC_DEFAULTS, check_choice, check_number,
                                  check_saver_spec, check_seed, check_spec, check_summary_spec)
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError
from rlgraph.utils.specifiable import load_json_text, load_spec_file

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
    "record_video_every": 0,         # env steps between greedy-episode GIFs in videos/ (0: none)
    "hooks": [],                     # "package.module:Class" or {"type": ..., **arguments} (hooks.load_hook)
    "loggers": [],                   # {"type": "wandb", "project": ...}, {"type": "mlflow", "experiment": ...}
    "vectorization": "sync",         # "sync": envs stepped in turn here; "async": each in a subprocess;
                                     # "envpool": Atari games in EnvPool's C++ thread pool
}
VECTORIZATIONS = ("sync", "async", "envpool")


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
        # Only the id changes (see env_ids); a stop_at_return set with --set is the user's, not the old env's.
        from rlgraph.execution.env_ids import apply_env
        explicit = apply_overrides({}, overrides).get("training_spec")
        apply_env(config, env, keep_stop_at_return=isinstance(explicit, dict) and "stop_at_return" in explicit,
                  where="train(env, --env)")
    if "environment_spec" not in config:
        raise RLGraphSpecError("no environment", where="train", hint="give --env ID or an environment_spec section.")
    # Before anything is built: an id never names a module to import (env_ids.check_env_ids).
    from rlgraph.execution.env_ids import check_env_ids
    check_env_ids(config["environment_spec"])
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
                     ("log_interval", 1), ("record_video_every", 0)):
        spec[key] = check_number(spec[key], f"training_spec.{key}", "train", low=low, integer=True,
                                 hint="0 switches it off." if low == 0 and "interval" in key else None)
    spec["vectorization"] = check_choice(spec["vectorization"], VECTORIZATIONS, "training_spec.vectorization", "train",
                                         hint='"async" steps each training env in its own subprocess, "envpool" '
                                              'Atari games in EnvPool\'s thread pool.')
    spec["stop_at_return"] = check_number(spec["stop_at_return"], "training_spec.stop_at_return", "train",
                                          allow_none=True, hint="null trains for all num_timesteps.")
    from rlgraph.execution.hooks import check_hook_spec
    from rlgraph.execution.loggers import check_logger_spec
    for key, check in (("hooks", check_hook_spec), ("loggers", check_logger_spec)):  # (Nothing is imported.)
        if not isinstance(spec[key], (list, tuple)):
            raise RLGraphSpecError(f"training_spec.{key} must be a list", where=f"train(training_spec.{key})",
                                   received=repr(spec[key])[:120])
        for i, item in enumerate(spec[key]):
            check(item, f"training_spec.{key}[{i}]")
        spec[key] = list(spec[key])
    return spec


def _check_run_specs(config: dict) -> None:
    """Checks the `saver_spec` and `summary_spec` that `RunLogs` reads (`saver_spec.checkpoint_frequency`,
    the original RLgraph's key, sets `training_spec.checkpoint_interval`) and that "about" is a mapping."""
    if not isinstance(config.get("about", {}), Mapping):
        raise RLGraphSpecError("the config's 'about' section must be a mapping", where="train(about)",
                               expected='a JSON object, e.g. {"source": "..."}', received=repr(config["about"])[:80])
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


def with_device(config: dict, device: Optional[str]) -> dict:
    """`config` with `execution_spec.device` set to `device` (`--device`; checked when the agent is
    made); as it is without one."""
    if device is not None:
        config["execution_spec"] = dict(config.get("execution_spec") or {}, device=device)
    return config


def make_agent_and_env(config: dict):
    """(agent, environment spec) for a resolved config.

    For a distributed config the agent is the one its learner runs (see
    `distributed_training.learner_config`), e.g. to load an Ape-X checkpoint's `learner/`.
    """
    from rlgraph.agents import Agent
    from rlgraph.agents.replay_access import with_env_frame_stack
    from rlgraph.environments import Environment
    if is_distributed(config):
        from rlgraph.execution.distributed_training import learner_config
        config = learner_config(config)
    env_spec = config["environment_spec"]
    probe = Environment.from_spec(env_spec)
    state_space, action_space = probe.state_space, probe.action_space
    env_frame_stack = getattr(probe, "frame_stack", None)  # (AtariEnv and EnvPool stack frames themselves.)
    probe.terminate()
    agent_spec = with_env_frame_stack({k: v for k, v in config.items() if k not in RUN_SECTIONS}, env_frame_stack)
    agent = Agent.from_spec(agent_spec, state_space=state_space, action_space=action_space)
    return agent, env_spec
