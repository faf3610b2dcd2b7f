"""Environment ids in run configs: what `--env ID` changes.

`rlgraph train/evaluate/visualize --env ID` and `train(config, env="ID")` change only the id of
the config's environment, under the key its type reads the id from (`ENV_ID_KEYS`: `gym_env`
of "openai-gym", `game` of "atari", `level_id` of "deepmind-lab"; wrappers such as
"action-repeat" pass it on to their `env_spec`). Frame preprocessing, frame skip, time limits
and the section's other keys stay. A type without an id (a grid world, a random env) is refused.

The old `training_spec.stop_at_return` belongs to the old environment, so a new id brings its
own: the `reward_threshold` of the gymnasium registry (None, train all steps, where it has none).

An id is an id: gymnasium's "module:EnvId" form, which imports `module`, is refused in every id of
a config (`check_env_ids`), of `--env` and of `train(env=...)`, unless the command says
`--allow-env-module-import` (`rlgraph.environments.env_utils.check_env_id`).

>>> with_env_id({"type": "atari", "game": "Pong", "frame_stack": 4}, "ALE/Breakout-v5")
{'type': 'atari', 'game': 'ALE/Breakout-v5', 'frame_stack': 4}
>>> env_id({"type": "action-repeat", "repeat": 2, "env_spec": {"type": "gym", "gym_env": "CartPole-v1"}})
'CartPole-v1'
>>> reward_threshold("CartPole-v0"), reward_threshold("Pendulum-v1")
(195.0, None)
"""
from __future__ import annotations

import copy
from typing import Any, List, Mapping, Optional

from rlgraph.environments import (ActionRepeatEnv, AtariEnv, DeepmindLabEnv, Environment, OpenAIGymEnv,
                                  VectorEnv)
from rlgraph.environments.env_utils import check_env_id
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError

# Environment class -> the constructor argument that holds its id. Subclasses come first (an
# AtariEnv is an OpenAIGymEnv), so a class of a dotted-path "type" finds its closest base.
ENV_ID_KEYS = ((AtariEnv, "game"), (OpenAIGymEnv, "gym_env"), (DeepmindLabEnv, "level_id"))
# The ids that go to gymnasium (a DeepMind Lab level is no gymnasium id).
GYM_ID_KEYS = ENV_ID_KEYS[:2]
# Wrappers -> the argument that holds the wrapped environment's spec.
WRAPPED_SPEC_KEYS = ((ActionRepeatEnv, "env_spec"), (VectorEnv, "env_spec"))
# gymnasium ids of Atari games start with this namespace (ale-py registers it).
ATARI_NAMESPACE = "ALE/"


def default_env_spec(env_id: str) -> dict:
    """The environment spec of a bare id: AtariEnv's preprocessing (frame skip, 84x84 grey frames,
    4 stacked) for an "ALE/..." game, else the plain gymnasium env."""
    if env_id.startswith(ATARI_NAMESPACE):
        return {"type": "atari", "game": env_id}
    return {"type": "openai-gym", "gym_env": env_id}


def env_id(spec: Any) -> Optional[str]:
    """The gymnasium id of an environment spec (an Atari game as "ALE/Pong-v5"); None where the
    spec has none (a grid world, an env object)."""
    try:
        path = _id_path(spec, "env_id")
    except RLGraphError:
        return None
    node = spec
    for key in path:
        node = node.get(key)
    if not isinstance(node, str):
        return None
    return AtariEnv.game_id(node) if path[-1] == "game" else node


def with_env_id(spec: Mapping, new_id: str, where: str = "train(env)") -> dict:
    """A copy of environment spec `spec` with its id replaced by `new_id`, all else kept.

    Raises:
        RLGraphSpecError: If `spec` is not a dict, or its type has no id (`ENV_ID_KEYS`).
    """
    path = _id_path(spec, where)
    spec = copy.deepcopy(dict(spec))
    node = spec
    for key in path[:-1]:
        node[key] = node = dict(node[key])
    node[path[-1]] = new_id
    return spec


def reward_threshold(new_id: Optional[str], where: str = "reward_threshold") -> Optional[float]:
    """`reward_threshold` of `new_id` in the gymnasium registry; None if it has none or is unknown
    there (an unregistered id fails later, when the environment is made, with gymnasium's message).

    Raises:
        RLGraphSpecError: For an id that names a module (gymnasium's `spec` would import it) or is
            no id at all (`check_env_id`).
    """
    if not new_id:
        return None
    new_id = check_env_id(new_id, where)
    import gymnasium
    if new_id.startswith(ATARI_NAMESPACE):
        try:
            import ale_py
            gymnasium.register_envs(ale_py)
        except ImportError:
            return None
    try:
        threshold = gymnasium.spec(new_id).reward_threshold
    except gymnasium.error.Error:
        return None
    return None if threshold is None else float(threshold)


def apply_env(config: dict, env: Any, keep_stop_at_return: bool = False, where: str = "train(env)") -> dict:
    """`config` (changed in place) with environment `env`: an id changes only the id of its
    environment_spec (or, without one, makes `default_env_spec(env)`); a dict replaces the section.
    When the id changes, `training_spec.stop_at_return` becomes the new id's `reward_threshold`,
    unless `keep_stop_at_return` (the user set it).

    Raises:
        RLGraphSpecError: For an id with an environment_spec whose type has no id.
    """
    old = config.get("environment_spec")
    if isinstance(env, str):
        check_env_id(env, where)
        config["environment_spec"] = default_env_spec(env) if old is None else with_env_id(old, env, where)
    else:
        config["environment_spec"] = env
    new_id = env_id(config["environment_spec"])
    if not keep_stop_at_return and new_id != env_id(old):
        training = config.setdefault("training_spec", {})
        if training is None:
            training = config["training_spec"] = {}
        if isinstance(training, dict):  # (Anything else is refused by resolve_config's check.)
            training["stop_at_return"] = reward_threshold(new_id, where)
    return config


def evaluation_env_spec(spec: Any) -> Any:
    """The environment spec of greedy evaluations for training spec `spec`: a copy with the
    `evaluation_settings` of its environment class (and of wrapped specs), so that an evaluation
    scores the task itself, e.g. an Atari game's full score (no life loss, raw rewards) when
    training ends episodes at a lost life and clips rewards. Env objects and specs of classes
    without such settings stay as they are.

    >>> evaluation_env_spec({"type": "atari", "game": "Breakout", "protocol": "dqn-nature"})
    {'type': 'atari', 'game': 'Breakout', 'protocol': 'dqn-nature', 'episodic_life': False, 'clip_rewards': False}
    >>> evaluation_env_spec({"type": "openai-gym", "gym_env": "CartPole-v1"})["episodic_life"]
    False
    """
    if not isinstance(spec, Mapping) or "type" not in spec:
        return spec
    try:
        cls = Environment.resolve_type(spec["type"])
    except RLGraphError:
        return spec
    spec = copy.deepcopy(dict(spec))
    spec.update(getattr(cls, "evaluation_settings", {}))
    for wrapper, key in WRAPPED_SPEC_KEYS:
        if isinstance(cls, type) and issubclass(cls, wrapper) and key in spec:
            spec[key] = evaluation_env_spec(spec[key])
    return spec


def check_env_ids(spec: Any, where: str = "environment_spec") -> None:
    """Checks every env id in environment spec `spec` (of wrapped specs too) with `check_env_id`,
    naming its key path, e.g. "environment_spec.env_spec.gym_env". Objects, factories and types
    without ids pass: their constructors check what they get.

    >>> spec = {"type": "action-repeat", "repeat": 2, "env_spec": {"type": "gym", "gym_env": "os:CartPole-v1"}}
    >>> try:
    ...     check_env_ids(spec)
    ... except RLGraphSpecError as error:
    ...     print(error.where)
    environment_spec.env_spec.gym_env

    Raises:
        RLGraphSpecError: For an id that names a module (unless allowed) or is no id.
    """
    if not isinstance(spec, Mapping):
        return
    try:
        env_class = Environment.resolve_type(spec.get("type"))
    except RLGraphError:
        return  # An unknown type: Environment.from_spec says so.
    if not isinstance(env_class, type):
        return
    for cls, key in GYM_ID_KEYS:
        if issubclass(env_class, cls):
            value = spec.get(key)
            if isinstance(value, str):
                check_env_id(AtariEnv.game_id(value) if key == "game" and value.strip() else value, f"{where}.{key}")
            break
    if isinstance(spec.get("env_id"), str):  # gymnasium's legacy-gym shims make this id too.
        check_env_id(spec["env_id"], f"{where}.env_id")
    for cls, key in WRAPPED_SPEC_KEYS:
        if issubclass(env_class, cls):
            check_env_ids(spec.get(key), f"{where}.{key}")


def _id_path(spec: Any, where: str) -> List[str]:
    """The keys that lead to the id inside `spec`, e.g. ["gym_env"] or ["env_spec", "game"]."""
    if not isinstance(spec, Mapping):
        raise RLGraphSpecError("the environment_spec is not a dict, so it has no id to change", where=where,
                               expected='a dict such as {"type": "openai-gym", "gym_env": "CartPole-v1"}',
                               received=repr(spec)[:80])
    env_class = Environment.resolve_type(spec.get("type"))
    if isinstance(env_class, type):
        for cls, key in ENV_ID_KEYS:
            if issubclass(env_class, cls):
                return [key]
        for cls, key in WRAPPED_SPEC_KEYS:
            if issubclass(env_class, cls) and isinstance(spec.get(key), Mapping):
                return [key] + _id_path(spec[key], where)
    kinds = ", ".join(f"{cls.__name__} ({key})" for cls, key in ENV_ID_KEYS)
    raise RLGraphSpecError(f"the environment type {spec.get('type')!r} has no environment id to change", where=where,
                           expected=f"an environment_spec of a type with an id: {kinds}",
                           received=repr(dict(spec))[:120],
                           hint="change that environment's own keys with --set environment_spec.KEY=VALUE (e.g. "
                                "environment_spec.world=8x8 for a grid world), or use a config of a gymnasium env.")
