"""Helpers shared by the environment adapters: lazy imports of optional packages, gym API shims, seeds.

Nothing here imports an optional package at module import time; `import rlgraph.environments`
stays free of gymnasium, ale-py, OpenCV, DeepMind Lab, TensorFlow and PyTorch.
"""
from __future__ import annotations

import importlib
import re
import time
from typing import Any, Callable, Optional, Tuple

from rlgraph.utils.rlgraph_errors import RLGraphError

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
