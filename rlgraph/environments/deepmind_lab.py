"""`DeepmindLabEnv`: the adapter for DeepMind Lab's Python module `deepmind_lab`."""
from __future__ import annotations

from typing import Any, Dict as DictT, Mapping, Optional, Sequence, Union

import numpy as np

from rlgraph.environments.env_utils import RLGraphMissingDependencyError, import_optional
from rlgraph.environments.environment import Environment
from rlgraph.spaces import Dict, FloatBox, IntBox, Space, TextBox
from rlgraph.utils.rlgraph_errors import RLGraphError

DMLAB_INSTALL_HINT = ("DeepMind Lab is not on PyPI: build its Python package from source with Bazel "
                      "(https://github.com/google-deepmind/lab, docs/users/build.md) and pip-install the built "
                      "`deepmind_lab` wheel into this environment (Linux and macOS only).")

# The order of DM Lab's action vector (`Lab.action_spec()`); used when building vectors without a Lab.
DEFAULT_ACTION_SPEC = ("LOOK_LEFT_RIGHT_PIXELS_PER_FRAME", "LOOK_DOWN_UP_PIXELS_PER_FRAME", "STRAFE_LEFT_RIGHT",
                       "MOVE_BACK_FORWARD", "FIRE", "JUMP", "CROUCH")

# The nine discrete actions of IMPALA (Espeholt et al. 2018, https://arxiv.org/abs/1802.01561):
# name -> the non-zero entries of the action vector.
DEFAULT_ACTION_SET = {
    "forward": {"MOVE_BACK_FORWARD": 1},
    "backward": {"MOVE_BACK_FORWARD": -1},
    "strafe_left": {"STRAFE_LEFT_RIGHT": -1},
    "strafe_right": {"STRAFE_LEFT_RIGHT": 1},
    "look_left": {"LOOK_LEFT_RIGHT_PIXELS_PER_FRAME": -20},
    "look_right": {"LOOK_LEFT_RIGHT_PIXELS_PER_FRAME": 20},
    "forward_look_left": {"MOVE_BACK_FORWARD": 1, "LOOK_LEFT_RIGHT_PIXELS_PER_FRAME": -20},
    "forward_look_right": {"MOVE_BACK_FORWARD": 1, "LOOK_LEFT_RIGHT_PIXELS_PER_FRAME": 20},
    "fire": {"FIRE": 1},
}


class RLGraphDeepmindLabMissingError(RLGraphMissingDependencyError):
    """The `deepmind_lab` package is not installed (it has to be built from source)."""

    def __init__(self, package: str = "deepmind_lab", where: Optional[str] = "DeepmindLabEnv",
                 hint: Optional[str] = DMLAB_INSTALL_HINT):
        super().__init__(package, where=where, hint=hint)


def build_action_vectors(action_set: Mapping[str, Mapping[str, int]],
                         action_names: Sequence[str] = DEFAULT_ACTION_SPEC) -> np.ndarray:
    """Turns a discrete action set into DM Lab action vectors.

    Args:
        action_set: Action name -> {DM Lab action name: value} (missing entries are 0).
        action_names: The names of the action vector's entries, in order (`Lab.action_spec()`).

    Returns:
        int32 array [num_actions, len(action_names)]; row i is discrete action i.

    Raises:
        RLGraphError: If the set is empty or uses a name that is not in `action_names`.

    >>> build_action_vectors({"forward": {"MOVE_BACK_FORWARD": 1}, "fire": {"FIRE": 1}}).tolist()
    [[0, 0, 0, 1, 0, 0, 0], [0, 0, 0, 0, 1, 0, 0]]
    """
    if not action_set:
        raise RLGraphError("empty action set", where="DeepmindLabEnv(action_set)",
                           expected="a mapping action name -> {DM Lab action: value}", received=repr(action_set))
    index = {name: i for i, name in enumerate(action_names)}
    vectors = np.zeros((len(action_set), len(index)), dtype=np.int32)
    for row, (action, entries) in enumerate(action_set.items()):
        for name, value in entries.items():
            if name not in index:
                raise RLGraphError(f"unknown DM Lab action in '{action}'", where="DeepmindLabEnv(action_set)",
                                   expected="one of " + ", ".join(index), received=repr(name))
            vectors[row, index[name]] = int(value)
    return vectors


def _space_from_observation_spec(spec: Mapping[str, Any]) -> Space:
    np_dtype, shape = np.dtype(spec.get("dtype")), tuple(spec.get("shape", ()))
    if np_dtype.kind in "USO":  # DM Lab gives text items (e.g. "INSTR") the dtype `str`.
        return TextBox()
    if np_dtype == np.uint8:
        return IntBox(0, 256, shape=shape, dtype="uint8")
    if np_dtype.kind in "iu":
        return IntBox(shape=shape, dtype=np_dtype)
    return FloatBox(shape=shape, dtype=np_dtype)


class DeepmindLabEnv(Environment):
    """A DeepMind Lab level with a discrete action set.

    The state is the one observation item asked for, or a Dict keyed by the item names when
    several are asked for ("RGB_INTERLEAVED" -> uint8 IntBox (height, width, 3), "INSTR" ->
    TextBox, float items -> FloatBox). Discrete action i is mapped to row i of the action
    vectors (`build_action_vectors`), by default IMPALA's nine actions. DM Lab ends episodes by
    its own time limit; they are reported as terminated (info["truncated"] is False).

    Args:
        level_id: The level, e.g. "seekavoid_arena_01".
        observations: Observation item names (a name or a sequence).
        frameskip: How many frames each action is repeated (DM Lab sums the rewards).
        config: Level settings (values are turned into strings); default {"width": 96, "height": 72}.
        renderer: "software" or "hardware".
        seed: Seed for the levels' random seeds drawn at each reset.
        level_cache: Optional DM Lab level cache object.
        action_set: Action name -> {DM Lab action: value}; default `DEFAULT_ACTION_SET`.

    Raises:
        RLGraphDeepmindLabMissingError: If the `deepmind_lab` package is not installed.
    """

    def __init__(self, level_id: str, observations: Union[str, Sequence[str]] = ("RGB_INTERLEAVED",),
                 frameskip: int = 4, config: Optional[Mapping[str, Any]] = None, renderer: str = "software",
                 seed: Optional[int] = None, level_cache: Any = None,
                 action_set: Optional[Mapping[str, Mapping[str, int]]] = None):
        try:
            lab_module = import_optional("deepmind_lab")
        except RLGraphMissingDependencyError:
            raise RLGraphDeepmindLabMissingError() from None
        if isinstance(frameskip, bool) or not isinstance(frameskip, (int, np.integer)) or frameskip < 1:
            raise RLGraphError("invalid frameskip", where="DeepmindLabEnv(frameskip)", expected="an int >= 1",
                               received=repr(frameskip))
        self.level_id = level_id
        self.observations = [observations] if isinstance(observations, str) else list(observations)
        self.frameskip = int(frameskip)
        config = {"width": 96, "height": 72} if config is None else config
        self.lab = lab_module.Lab(level_id, self.observations, config={k: str(v) for k, v in config.items()},
                                  renderer=renderer, level_cache=level_cache)
        action_names = [spec["name"] for spec in self.lab.action_spec()]
        self.action_vectors = build_action_vectors(action_set or DEFAULT_ACTION_SET, action_names)
        self.action_names = list((action_set or DEFAULT_ACTION_SET).keys())
        self._last_state: Any = None
        super().__init__(self._state_space(), IntBox(len(self.action_vectors)), seed=seed)

    def _state_space(self) -> Space:
        specs = {spec["name"]: spec for spec in self.lab.observation_spec()}
        missing = [name for name in self.observations if name not in specs]
        if missing:
            raise RLGraphError("unknown observation items", where="DeepmindLabEnv(observations)",
                               expected="names from: " + ", ".join(sorted(specs)), received=repr(missing))
        spaces = {name: _space_from_observation_spec(specs[name]) for name in self.observations}
        return spaces[self.observations[0]] if len(spaces) == 1 else Dict(spaces)

    def _observe(self) -> Any:
        raw = self.lab.observations()
        items: DictT[str, Any] = {}
        for name in self.observations:
            value = raw[name]
            items[name] = np.str_(value.decode() if isinstance(value, bytes) else value) \
                if isinstance(self._item_space(name), TextBox) else np.asarray(value)
        return items[self.observations[0]] if len(items) == 1 else items

    def _item_space(self, name: str) -> Space:
        return self.state_space[name] if isinstance(self.state_space, Dict) else self.state_space

    def reset(self) -> Any:
        """Starts a new episode with a level seed from the seeded generator.

        Returns:
            The first state.
        """
        self.lab.reset(seed=int(self.rng.integers(2 ** 31 - 1)))
        self._last_state = self._observe()
        return self._last_state

    def step(self, actions: Any) -> tuple:
        """Executes discrete action `actions` for `frameskip` frames.

        Returns:
            (state, reward, terminal, info); after the last frame DM Lab has no observation, so the
            previous state is returned with terminal=True.
        """
        action = np.asarray(actions)
        if action.shape != () or action.dtype.kind not in "iu" or not 0 <= int(action) < len(self.action_vectors):
            raise RLGraphError("invalid action", where="DeepmindLabEnv.step(actions)",
                               expected=f"an int in [0, {len(self.action_vectors)})", received=repr(actions))
        reward = float(self.lab.step(self.action_vectors[int(action)], num_steps=self.frameskip))
        terminal = not self.lab.is_running()
        if not terminal:
            self._last_state = self._observe()
        return self._last_state, reward, terminal, {"terminated": terminal, "truncated": False}

    def render(self) -> Any:
        """The current RGB image (if "RGB_INTERLEAVED" is observed), else None."""
        if "RGB_INTERLEAVED" not in self.observations or self._last_state is None:
            return None
        return self._last_state["RGB_INTERLEAVED"] if isinstance(self._last_state, dict) else self._last_state

    def terminate(self) -> None:
        """Closes the Lab."""
        self.lab.close()
