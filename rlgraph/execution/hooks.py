"""Step hooks: callables that a worker runs after every environment step (as vinci's hooks).

A hook is any callable `hook(agent, data)`; `data` is a `StepData`. Hooks export what they
need themselves (print, write files, collect lists) and return nothing. A `Hook` subclass can
also react to episode ends (`on_episode_end`), to the scalars a training run logs (`on_log`) and
to the end of the run (`close`).

`rlgraph train --hook package.module:Class` and `training_spec.hooks` name hooks; `load_hook`
makes them. A hook named in a config file is never imported from a file that came with the
config nor from an arbitrary installed package: its module must be imported already, be
rlgraph's, be named by an `rlgraph.hooks` entry point, or belong to an installed distribution
that requires rlgraph (see `load_hook`). No hook comes from a `__main__` module, and its class
must subclass `Hook`.

>>> from rlgraph.execution.hooks import Hook, StepData
>>> class CountRewards(Hook):
...     def __init__(self):
...         self.total = 0.0
...     def __call__(self, agent, data):
...         self.total += data.reward
>>> hook = CountRewards()
>>> hook(None, StepData(step=1, episode=1, episode_step=1, env_id=0, observation=0, action=1, reward=2.0,
...                     observation_1=1, done=False, episode_reward=2.0, training=True))
>>> hook.total
2.0
"""
from __future__ import annotations

import importlib
import importlib.metadata
import inspect
import re
import sys
from typing import Any, Dict, Hashable, List, Mapping, NamedTuple, Tuple

from rlgraph.utils.module_imports import CONFIG_IMPORT_RULE, made_for_rlgraph, names_main_module
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

# "package.module:Class": python identifiers, no file paths.
HOOK_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*")


class StepData(NamedTuple):
    """What happened in one environment step.

    Attributes:
        step: The worker's env-step count (1-based, over all envs).
        episode: The episode number of this env step (1-based, over all envs of the worker).
        episode_step: The step within the episode (1-based).
        env_id: The environment (index in the vector env).
        observation: The state before the step (as the env returned it).
        action: The action taken.
        reward: The reward received.
        observation_1: The state after the step.
        done: Whether the episode ended with this step (terminal or truncated).
        episode_reward: The return of the episode so far (including `reward`).
        training: Whether the worker explores and learns (False in evaluation).
    """
    step: int
    episode: int
    episode_step: int
    env_id: Hashable
    observation: Any
    action: Any
    reward: float
    observation_1: Any
    done: bool
    episode_reward: float
    training: bool


class Hook:
    """Base of stateful hooks: `__call__` after each step, `on_episode_end` after each episode."""

    def __call__(self, agent: Any, data: StepData) -> None:
        """Called after every env step."""

    def on_episode_end(self, agent: Any, data: StepData) -> None:
        """Called after the last step of each episode (after `__call__`)."""

    def on_log(self, step: int, scalars: Mapping[str, float]) -> None:
        """Called by `rlgraph train` (with an output directory) with the scalars it writes to
        TensorBoard at env step `step`, e.g. {"train/loss": 0.3, "explore/epsilon": 0.5}."""

    def close(self) -> None:
        """Called once when the training run ends (also a failed one)."""

    def runs_per_step(self) -> bool:
        """Whether the hook overrides `__call__` or `on_episode_end` (a worker builds a `StepData`
        per env step only for such hooks; a logger that only has `on_log` costs nothing per step)."""
        kind = type(self)
        return kind.__call__ is not Hook.__call__ or kind.on_episode_end is not Hook.on_episode_end


class EpisodeReturnsHook(Hook):
    """Collects (worker step, episode return, episode length) at every episode end."""

    def __init__(self):
        self.records: List[tuple] = []

    def on_episode_end(self, agent: Any, data: StepData) -> None:
        self.records.append((data.step, data.episode_reward, data.episode_step))


def step_hooks(hooks: Any) -> List[Any]:
    """The hooks a worker must run after every env step: callables, and `Hook`s that override
    `__call__` or `on_episode_end` (`Hook.runs_per_step`)."""
    return [hook for hook in hooks if not isinstance(hook, Hook) or hook.runs_per_step()]


# --- Hooks by name ---------------------------------------------------------------------------------
def check_hook_spec(spec: Any, where: str) -> Tuple[str, Dict[str, Any]]:
    """("package.module:Class", constructor arguments) of a hook spec, checked without importing.

    A spec is "package.module:Class" or {"type": "package.module:Class", **arguments}.

    Raises:
        RLGraphSpecError: For another form, or a name that is not "package.module:Class".
    """
    if isinstance(spec, Mapping):
        arguments = {k: v for k, v in spec.items() if k != "type"}
        name = spec.get("type")
    else:
        arguments, name = {}, spec
    if not isinstance(name, str) or not HOOK_NAME.fullmatch(name):
        raise RLGraphSpecError("a hook must be named as 'package.module:Class'", where=where,
                               expected='"package.module:Class" or {"type": "package.module:Class", ...arguments}',
                               received=repr(spec)[:120],
                               hint="python identifiers only: file paths are not accepted.")
    return name, arguments


# The entry-point group in which a package declares its hooks, e.g. in its pyproject.toml:
# [project.entry-points."rlgraph.hooks"] alarm = "mypackage.hooks:Alarm".
ENTRY_POINT_GROUP = "rlgraph.hooks"
CONFIG_HOOK_RULE = f"{CONFIG_IMPORT_RULE}, or one that an '{ENTRY_POINT_GROUP}' entry point of an installed distribution names"


def _declared(module_name: str, class_name: str) -> bool:
    """Whether an installed distribution declares "module_name:class_name" in the `rlgraph.hooks`
    entry-point group (read from the metadata; nothing is imported)."""
    return any(point.module == module_name and point.attr == class_name
               for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP))


def _config_may_import(module_name: str, class_name: str) -> bool:
    """The rule for a hook named in a config file (see `load_hook`), from metadata only: the rule of
    `rlgraph.utils.module_imports` plus the hooks declared as entry points."""
    return made_for_rlgraph(module_name) or _declared(module_name, class_name)


def load_hook(spec: Any, where: str, from_config: bool) -> "Hook":
    """Makes the `Hook` a spec names (see `check_hook_spec`).

    The rule that keeps a config file from running code that came with it or that lies around: a
    hook named in a config file (`from_config`) must come from a module that is imported already
    (nothing runs), that belongs to rlgraph, that an `rlgraph.hooks` entry point of an installed
    distribution names with this class, or whose top-level package belongs to installed
    distributions that require rlgraph (pip's metadata: `pip install` or `pip install -e` put it
    there). So a module file lying next to the config or in the working directory, and the
    modules of every other installed package, are never imported for it. A hook given on the
    command line (`--hook`) or to `train(hooks=...)` may come from any importable module: the user
    named it. No source may name a `__main__` module (importing one runs a program's command
    line). Either way the class must subclass `Hook`, and nothing else is called.

    Raises:
        RLGraphSpecError: For a malformed name, a module that may not or cannot be imported, a
            missing class, a class that is not a `Hook` subclass, or arguments its constructor
            refuses.
    """
    name, arguments = check_hook_spec(spec, where)
    module_name, class_name = name.split(":")
    if names_main_module(module_name):
        raise RLGraphSpecError("a hook may not come from a __main__ module", where=where,
                               expected="package.module:Class of a library module", received=repr(name),
                               hint="importing a package's __main__ runs its command line; put the hook in a "
                                    "module of its own.")
    module = sys.modules.get(module_name)
    if module is None:
        if from_config and not _config_may_import(module_name, class_name):
            raise RLGraphSpecError(
                "a hook named in a config file must come from an installed package made for rlgraph", where=where,
                expected=CONFIG_HOOK_RULE, received=repr(name),
                hint=f"declare the hook in your package's '{ENTRY_POINT_GROUP}' entry points (or list rlgraph in its "
                     "dependencies) and install it (pip install -e .), or name the hook on the command line "
                     "(rlgraph train ... --hook package.module:Class), which imports it.")
        try:
            module = importlib.import_module(module_name)
        except ImportError as error:
            raise RLGraphSpecError("cannot import the hook's module", where=where, received=repr(name),
                                   hint=f"{error}; the module must be importable (installed, or on PYTHONPATH).") \
                from None
    found = getattr(module, class_name, None)
    if not (inspect.isclass(found) and issubclass(found, Hook)):
        what = "no such attribute" if found is None else (
            "a class that is not a Hook" if inspect.isclass(found) else f"not a class ({type(found).__name__})")
        raise RLGraphSpecError(f"the hook is {what}", where=where,
                               expected="a subclass of rlgraph.execution.hooks.Hook", received=repr(name),
                               hint="hooks subclass Hook and override __call__, on_episode_end, on_log or close.")
    try:
        return found(**arguments)
    except TypeError as error:
        raise RLGraphSpecError("the hook's constructor refused the arguments", where=where,
                               received=f"{name} with {sorted(arguments)}", hint=str(error)) from None
