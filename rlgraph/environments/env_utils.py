"""Helpers shared by the environment adapters: lazy imports of optional packages, gym API shims, seeds.

Nothing here imports an optional package at module import time; `import rlgraph.environments`
stays free of gymnasium, ale-py, OpenCV, DeepMind Lab, TensorFlow and PyTorch.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import re
import time
from typing import Any, Callable, Iterator, Optional, Tuple

from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError

ATARI_INSTALL_HINT = "install it with `pip install -c constraints.txt -e \".[atari]\"`."


class RLGraphMissingDependencyError(RLGraphError, ImportError):
    """An environment needs a Python package that is not installed.

    Args:
        package: The missing package (the name to install, e.g. "ale-py").
        where: The environment class (and argument) that needs it.
        hint: How to install it.
    """

    def __init__(self, package: str, where: Optional[str] = None, hint: Optional[str] = None):
        self.package = package
        super().__init__(f"the package '{package}' is needed but not installed", where=where, hint=hint)

    def __reduce__(self):
        return type(self), (self.package, self.where, self.hint)


def import_optional(module: str, package: Optional[str] = None, where: Optional[str] = None,
                    hint: Optional[str] = None) -> Any:
    """Imports `module`, turning a missing package into an `RLGraphMissingDependencyError`.

    Args:
        module: The module to import ("ale_py", "cv2").
        package: The name to install (default: `module`).
        where: The class that needs it (for the message).
        hint: How to install it (default: `pip install <package>`).

    Returns:
        The imported module.

    Raises:
        RLGraphMissingDependencyError: If `module` cannot be imported.
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        package = package or module
        raise RLGraphMissingDependencyError(package, where=where,
                                            hint=hint or f"install it with `pip install {package}`.") from None


def import_gym(where: str = "OpenAIGymEnv") -> Tuple[Any, bool]:
    """Imports gymnasium, or else the legacy `gym` package.

    Returns:
        (module, legacy): `legacy` is True for the old `gym` package.

    Raises:
        RLGraphMissingDependencyError: If neither is installed.
    """
    try:
        return importlib.import_module("gymnasium"), False
    except ImportError:
        pass
    try:
        return importlib.import_module("gym"), True
    except ImportError:
        raise RLGraphMissingDependencyError(
            "gymnasium", where=where, hint="install it with `pip install -c constraints.txt gymnasium`.") from None


def legacy_gym_has_new_api(gym: Any) -> bool:
    """Whether a legacy `gym` module uses the 5-tuple step / (obs, info) reset API (gym >= 0.26)."""
    parts = []
    for part in str(getattr(gym, "__version__", "0")).split(".")[:2]:
        digits = "".join(ch for ch in part if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    major, minor = (parts + [0, 0])[:2]
    return (major, minor) >= (0, 26)


def resolve_seed(seed: Optional[int]) -> int:
    """`seed` as an int in [0, 2**31), or the current epoch seconds if None (as `Environment.seed`)."""
    seed = int(time.time()) if seed is None else int(seed)
    if seed < 0:
        raise RLGraphError("seeds must be non-negative", where="Environment.seed", expected="an int >= 0",
                           received=seed)
    return seed % (2 ** 31)


# Atari ids of old gym that gymnasium/ale-py no longer register: <Game>[-ram][Deterministic]-v0/v4.
_REMOVED_ATARI_ID = re.compile(r"^(?P<game>[A-Za-z]+?)(?P<ram>-ram)?(?P<variant>Deterministic|NoFrameskip)?"
                               r"-v(?P<v>[04])$")


def removed_atari_id_replacement(env_id: str, is_registered: Callable[[str], bool]) -> Optional[str]:
    """The env spec that replaces an Atari id of old gym that is not registered any more, as text
    for an error hint (None if `env_id` is no such id or no replacement is registered).

    "PongDeterministic-v4" -> "ALE/Pong-v5" with frameskip 4 (3 for SpaceInvaders) and
    repeat_action_probability 0.0 (v0: 0.25); "-ram" ids -> the id without "-ram" and
    obs_type "ram" (which ale-py still registers for v0/v4).

    Args:
        env_id: The id given.
        is_registered: Whether gym(nasium) registers an id (e.g. after registering ale-py's games).
    """
    match = _REMOVED_ATARI_ID.match(env_id)
    if match is None or (not match["ram"] and match["variant"] != "Deterministic"):
        return None
    game, version = match["game"], match["v"]
    ram = ', "obs_type": "ram"' if match["ram"] else ""
    if match["variant"] == "Deterministic":
        target = f"ALE/{game}-v5"
        skip = 3 if game == "SpaceInvaders" else 4
        settings = f'"frameskip": {skip}, "repeat_action_probability": {0.25 if version == "0" else 0.0}{ram}'
    else:
        target = f"{game}{match['variant'] or ''}-v{version}"
        settings = ram.lstrip(", ")
    if not is_registered(target):
        return None
    return (f'{env_id} was removed from gym; the same environment is {{"gym_env": "{target}", {settings}}} '
            f"(keys of the environment spec, passed on to gymnasium.make).")


# --- Environment ids -------------------------------------------------------------------------------
# A gymnasium id without a module part: [namespace/]name[-vN] of letters, digits, "_", "-" and ".".
ENV_ID = re.compile(r"(?:[\w-]+/)?[\w.-]+", re.ASCII)
# The module part of gymnasium's "module:EnvId" form, when imports are allowed: a dotted module name.
_ENV_MODULE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", re.ASCII)
# Set ("1") while env ids may import their module part (`rlgraph ... --allow-env-module-import`,
# `allow_env_module_import()`); an environment variable, so that the subprocesses of an
# AsyncVectorEnv, of `--seeds` and of a local Ray see it as well.
ENV_MODULE_IMPORT_VARIABLE = "RLGRAPH_ALLOW_ENV_MODULE_IMPORT"
ENV_ID_FORM = 'a registered gymnasium id such as "CartPole-v1" or "ALE/Pong-v5"'


def env_module_import_allowed() -> bool:
    """Whether env ids may name a module to import ("module:EnvId"); see `allow_env_module_import`."""
    return os.environ.get(ENV_MODULE_IMPORT_VARIABLE) == "1"


@contextlib.contextmanager
def allow_env_module_import(allowed: bool = True) -> Iterator[None]:
    """Within the block, an env id "module:EnvId" imports `module` (which registers EnvId with
    gymnasium) before the env is made, as `gymnasium.make` would; outside it such an id is an
    `RLGraphSpecError`. What `rlgraph train/evaluate/export/visualize --allow-env-module-import`
    does for its run. Only for modules you trust: importing a module runs its code.

    >>> with allow_env_module_import():
    ...     env_module_import_allowed()
    True
    >>> env_module_import_allowed()
    False
    """
    before = os.environ.get(ENV_MODULE_IMPORT_VARIABLE)
    os.environ[ENV_MODULE_IMPORT_VARIABLE] = "1" if allowed else "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(ENV_MODULE_IMPORT_VARIABLE, None)
        else:
            os.environ[ENV_MODULE_IMPORT_VARIABLE] = before


def check_env_id(env_id: Any, where: str) -> str:
    """The id to hand to gymnasium for env id `env_id`, which comes from a spec, a file or the
    command line: "[namespace/]name[-vN]", nothing that gymnasium would import.

    gymnasium imports the module part of "module:EnvId" before it looks the id up, so that form
    is refused, unless `env_module_import_allowed()`: then the module is imported here and the id
    without it is returned. Either way no ":" reaches gymnasium.

    >>> check_env_id("ALE/Pong-v5", "test")
    'ALE/Pong-v5'

    Raises:
        RLGraphSpecError: For an id of another form, a module part (unless allowed), or a module
            that cannot be imported.
    """
    if isinstance(env_id, str) and ":" in env_id:
        module, _, name = env_id.rpartition(":")
        if not env_module_import_allowed():
            raise RLGraphSpecError(
                "an environment id may not name a module to import", where=where, expected=ENV_ID_FORM,
                received=repr(env_id)[:120],
                hint=f"gymnasium's 'module:EnvId' form imports '{module}', which runs its code. Import the module "
                     "that registers the env in your own code and pass the made env object (OpenAIGymEnv(gym_env="
                     "gymnasium.make(...))), or, for a module you trust, run the command with "
                     "--allow-env-module-import.")
        if not _ENV_MODULE.fullmatch(module) or "__main__" in module.split("."):
            raise RLGraphSpecError("the module part of the environment id is not a module name", where=where,
                                   expected="'package.module:EnvId' (no __main__)", received=repr(env_id)[:120])
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise RLGraphSpecError("cannot import the module of the environment id", where=where,
                                   received=repr(env_id)[:120],
                                   hint=f"{error}; the module must be importable (installed, or on PYTHONPATH) "
                                        "and register the env with gymnasium.") from None
        env_id = name
    if not isinstance(env_id, str) or not ENV_ID.fullmatch(env_id):
        raise RLGraphSpecError("not an environment id", where=where, expected=ENV_ID_FORM,
                               received=repr(env_id)[:120],
                               hint="an id is [namespace/]name[-vN] of letters, digits, '_', '-' and '.'.")
    return env_id
