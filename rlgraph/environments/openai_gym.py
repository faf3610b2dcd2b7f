"""`OpenAIGymEnv`: the adapter for gymnasium (and legacy gym) environments."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rlgraph.environments.env_utils import (ATARI_INSTALL_HINT, RLGraphMissingDependencyError, check_env_id,
                                            import_gym, legacy_gym_has_new_api, removed_atari_id_replacement,
                                            resolve_seed)
from rlgraph.environments.environment import Environment
from rlgraph.spaces import FloatBox, IntBox, Space, space_from_gym
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError
from rlgraph.utils.util import convert_dtype

FIRE_ACTION = 1


def _check_int(value: Any, name: str, minimum: int, allow_none: bool = True) -> Optional[int]:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise RLGraphError("invalid argument", where=f"OpenAIGymEnv({name})",
                           expected=f"an int >= {minimum}" + (" or None" if allow_none else ""), received=repr(value))
    return int(value)


class OpenAIGymEnv(Environment):
    """Wraps a gymnasium environment (or, without gymnasium, a legacy gym one) behind rlgraph's interface.

    `step` returns `(state, reward, terminal, info)` with terminal = terminated or truncated (or a lost
    life with `episodic_life`); `info` always has the booleans "terminated" and "truncated" so that a
    worker bootstraps from the value of the next state exactly when "terminated" is False; it has
    "lives" where the game reports lives and "life_loss" with `episodic_life`.

    Frame skipping: for an ALE id (``"ALE/Pong-v5"``, ``"PongNoFrameskip-v4"``) an explicit `frameskip`
    is handed to `gymnasium.make`, so the emulator skips (with ALE's own reward summing) and the
    adapter does not repeat actions on top; otherwise the adapter repeats each action `frameskip`
    times, sums the rewards and stops early when the episode ends.

    Continuous actions (a float `Box`) are clipped to the action space's bounds before the gym env
    steps, as Stable-Baselines3 clips them: an unsquashed Gaussian policy samples outside them, and
    an env whose reward reads the action it was given (MountainCarContinuous's energy cost of
    0.1 a^2) would charge for the part beyond the bounds that its physics ignores.

    Args:
        gym_env: A registered id (made with `gymnasium.make(gym_env, **kwargs)`) or a made env object.
            gymnasium's "module:EnvId" form (which imports `module`) is refused unless
            `allow_env_module_import` (`--allow-env-module-import`) is on; import the module
            yourself and pass the env object instead.
        frameskip: How often each action is repeated (None: once).
        max_num_noops: On a true reset, take a random number in [1, max_num_noops] of `noop_action`
            steps (0: none). The number comes from the seeded generator of `seed`.
        noop_action: The action used for no-op starts and to continue after a lost life.
        episodic_life: A lost life ends the episode for the agent (terminal=True, info "life_loss");
            the next `reset` then only continues the game with one no-op step, unless it was over.
        fire_reset: After a true reset, take actions 1 (FIRE) and 2 if the game's action 1 is FIRE
            (games without FIRE are left alone, so this is safe to switch on for every Atari game).
        visualize: Make the env with ``render_mode="rgb_array"`` so that `render` returns images.
        max_episode_steps: This adapter's own time limit (in `step` calls, counted per game):
            reaching it sets "truncated" (any time limit of the gym env applies as well).
        seed: Seed for reproducible episodes (see `seed`).
        render_mode: Passed to `gymnasium.make` (overrides `visualize`).
        **kwargs: Passed to `gymnasium.make`.

    Raises:
        RLGraphError: For invalid arguments or an id that gymnasium cannot make.
        RLGraphSpecError: If the env's constructor rejects `kwargs`, or for an id gymnasium does not
            register (any more); the hint names the replacement (e.g. "Pendulum-v1" for
            "Pendulum-v0", "ALE/Pong-v5" with its frameskip settings for "PongDeterministic-v4");
            for an id that is not "[namespace/]name[-vN]" or that names a module (see above).
        RLGraphMissingDependencyError: If neither gymnasium nor gym is installed, or an ALE id is
            given without ale-py.
    """

    __spec_open_kwargs__ = True  # Unknown spec keys go on to gymnasium.make.
    evaluation_settings = {"episodic_life": False}  # Evaluations score whole games.

    def __init__(self, gym_env: Any, frameskip: Optional[int] = None, max_num_noops: int = 0, noop_action: Any = 0,
                 episodic_life: bool = False, fire_reset: bool = False, visualize: bool = False,
                 max_episode_steps: Optional[int] = None, seed: Optional[int] = None,
                 render_mode: Optional[str] = None, **kwargs):
        self.gym, legacy = import_gym()
        self._new_api = not legacy or legacy_gym_has_new_api(self.gym)
        frameskip = _check_int(frameskip, "frameskip", 1)
        self.max_num_noops = _check_int(max_num_noops, "max_num_noops", 0, allow_none=False)
        self.max_episode_steps = _check_int(max_episode_steps, "max_episode_steps", 1)
        self.noop_action = noop_action
        self.episodic_life = bool(episodic_life)
        self.fire_reset = bool(fire_reset)
        if render_mode is None and visualize:
            render_mode = "rgb_array"
        self.gym_env, self.frameskip = self._make(gym_env, frameskip, render_mode, kwargs)
        self.env_id = gym_env if isinstance(gym_env, str) else getattr(getattr(gym_env, "spec", None), "id", None)
        super().__init__(self.translate_space(self.gym_env.observation_space),
                         self.translate_space(self.gym_env.action_space))
        self._discrete_actions = type(self.gym_env.action_space).__name__ == "Discrete"
        self._action_bounds = _float_box_bounds(self.gym_env.action_space)
        self._has_fire = self._game_supports_fire()
        self._pending_seed: Optional[int] = None
        self._lives: Optional[int] = None
        self._life_lost = False
        self._game_over = True
        self._episode_steps = 0
        if seed is not None:
            self.seed(seed)

    # --- Construction --------------------------------------------------------------------------
    def _make(self, gym_env: Any, frameskip: Optional[int], render_mode: Optional[str], kwargs: dict) -> tuple:
        """Makes (or accepts) the gym env; returns it and the number of repeats this adapter does."""
        if not isinstance(gym_env, str):
            if kwargs:
                raise RLGraphError("keyword arguments for gymnasium.make need an env id, not an env object",
                                   where="OpenAIGymEnv", received=sorted(kwargs),
                                   hint="make the env with those arguments yourself, or pass its id.")
            if not all(hasattr(gym_env, name) for name in ("step", "reset", "observation_space", "action_space")):
                raise RLGraphError("not a gym environment", where="OpenAIGymEnv(gym_env)",
                                   expected="a registered env id or an object with step, reset, observation_space "
                                            "and action_space", received=repr(gym_env))
            return gym_env, frameskip or 1
        # Only an id reaches gym.make: never "module:EnvId", which gymnasium would import
        # (`check_env_id`); nor in the `env_id` that gymnasium's legacy-gym shims make in turn.
        gym_env = check_env_id(gym_env, "OpenAIGymEnv(gym_env)")
        make_kwargs = dict(kwargs)
        if "env_id" in make_kwargs:
            make_kwargs["env_id"] = check_env_id(make_kwargs["env_id"], f"OpenAIGymEnv({gym_env!r}, env_id)")
        is_ale = self._prepare_id(gym_env)
        if render_mode is not None and self._new_api:
            make_kwargs["render_mode"] = render_mode
        own_frameskip = frameskip or 1
        if is_ale and frameskip is not None and "frameskip" not in make_kwargs:
            make_kwargs["frameskip"], own_frameskip = frameskip, 1
        try:
            env = self.gym.make(gym_env, **make_kwargs)
        except self.gym.error.Error as error:
            # An id gym does not know (or knows as deprecated) is a spec error; gymnasium's message
            # names the new version, and for Atari ids it dropped we name the replacement.
            unknown = tuple(getattr(self.gym.error, n) for n in ("UnregisteredEnv", "DeprecatedEnv")
                            if isinstance(getattr(self.gym.error, n, None), type))
            replacement = removed_atari_id_replacement(gym_env, lambda i: self._entry_point(i) is not None)
            raise (RLGraphSpecError if isinstance(error, unknown) else RLGraphError)(
                "gym cannot make this environment", where="OpenAIGymEnv(gym_env)", received=repr(gym_env),
                hint=" ".join(filter(None, (str(error), replacement)))) from None
        except TypeError as error:  # Usually a keyword argument the env's constructor does not take.
            raise RLGraphSpecError("gymnasium.make rejected the arguments", where=f"OpenAIGymEnv({gym_env!r})",
                                   received=f"keys {sorted(make_kwargs)}", hint=str(error)) from None
        return env, own_frameskip

    def _prepare_id(self, env_id: str) -> bool:
        """Registers the ALE games with gym if `env_id` needs them; returns whether it is an ALE game."""
        entry_point = self._entry_point(env_id)
        if entry_point is None:
            try:
                import ale_py
            except ImportError:
                if env_id.startswith("ALE/"):
                    raise RLGraphMissingDependencyError("ale-py", where=f"OpenAIGymEnv({env_id!r})",
                                                        hint=ATARI_INSTALL_HINT) from None
                return False
            if hasattr(self.gym, "register_envs"):
                self.gym.register_envs(ale_py)
            entry_point = self._entry_point(env_id)
        return "ale_py" in str(entry_point)

    def _entry_point(self, env_id: str) -> Any:
        registry = getattr(self.gym, "registry", None) or getattr(getattr(self.gym, "envs", None), "registry", None)
        specs = getattr(registry, "env_specs", registry)  # Old gym kept an EnvRegistry with .env_specs.
        try:
            spec = specs.get(env_id) if specs is not None else None
        except Exception:  # noqa: BLE001 - registries of old gym versions differ; treat as unknown.
            spec = None
        return None if spec is None else spec.entry_point

    def _game_supports_fire(self) -> bool:
        meanings = getattr(self.gym_env.unwrapped, "get_action_meanings", None)
        if meanings is None:
            return False
        names = meanings()
        return len(names) > 2 and names[FIRE_ACTION] == "FIRE"

    @staticmethod
    def translate_space(space: Any, dtype: Any = None) -> Space:
        """Translates a gym space into an rlgraph space (no batch rank), see `space_from_gym`.

        Args:
            space: The gymnasium (or gym) space.
            dtype: Optional dtype for the result (box spaces only): a float dtype gives a FloatBox
                with the same (inclusive) bounds, an int dtype an IntBox.

        Returns:
            The rlgraph space.
        """
        result = space_from_gym(space)
        if dtype is None:
            return result
        np_dtype = convert_dtype(dtype, to="np")
        if isinstance(result, IntBox):
            if np_dtype.kind == "f":
                return FloatBox(result.low, result.high - 1, shape=result.shape, dtype=np_dtype)
            return IntBox(result.low, result.high, dtype=np_dtype) if result._bounded else \
                IntBox(shape=result.shape, dtype=np_dtype)
        if isinstance(result, FloatBox) and np_dtype.kind == "f":
            return FloatBox(result.low, result.high, shape=result.shape, dtype=np_dtype)
        raise RLGraphError("cannot change the dtype of this space", where="OpenAIGymEnv.translate_space(dtype)",
                           expected="an int or float dtype for a box space", received=f"{result} -> {dtype!r}")

    # --- The raw gym API (gymnasium, gym >= 0.26 or older gym) -----------------------------------
    def _env_reset(self) -> tuple:
        seed, self._pending_seed = self._pending_seed, None
        if self._new_api:
            obs, info = self.gym_env.reset() if seed is None else self.gym_env.reset(seed=seed)
            return obs, dict(info)
        if seed is not None and hasattr(self.gym_env, "seed"):
            self.gym_env.seed(seed)
        return self.gym_env.reset(), {}

    def _env_step(self, action: Any) -> tuple:
        result = self.gym_env.step(action)
        if len(result) == 5:
            obs, reward, terminated, truncated, info = result
        else:  # Old gym: (obs, reward, done, info), time limits flagged in info.
            obs, reward, done, info = result
            truncated = bool(info.get("TimeLimit.truncated", False))
            terminated = bool(done) and not truncated
        return obs, reward, bool(terminated), bool(truncated), dict(info)

    def _read_lives(self, info: dict) -> Optional[int]:
        lives = info.get("lives", info.get("ale.lives"))
        if lives is None:
            ale = getattr(self.gym_env.unwrapped, "ale", None)
            lives = ale.lives() if ale is not None and hasattr(ale, "lives") else None
        return None if lives is None else int(lives)

    def _convert_action(self, actions: Any) -> Any:
        if self._discrete_actions:
            return int(np.asarray(actions))
        if self._action_bounds is not None:
            low, high = self._action_bounds
            return np.clip(np.asarray(actions, dtype=low.dtype), low, high)
        return actions

    def _merge_frames(self, previous: Any, last: Any) -> Any:
        """Combines the last two observations of a repeated action (default: the last one)."""
        return last

    # --- Environment API -----------------------------------------------------------------------
    def seed(self, seed: Optional[int] = None) -> int:
        """Seeds the next reset of the gym env, its action space, the no-op generator and the rlgraph spaces.

        Args:
            seed: The seed (None: the current epoch seconds).

        Returns:
            The seed used.
        """
        seed = resolve_seed(seed)
        super().seed(seed)
        self._pending_seed = seed
        for space in (self.gym_env.action_space, self.gym_env.observation_space):
            if hasattr(space, "seed"):
                space.seed(seed)
        return seed

    def reset(self) -> Any:
        """Starts a new episode (or, with `episodic_life` after a lost life, continues the game).

        Returns:
            The first state.
        """
        if self.episodic_life and self._life_lost and not self._game_over:
            self._life_lost = False
            obs, _, terminated, truncated, info = self._env_step(self.noop_action)
            self._lives = self._read_lives(info)
            if not (terminated or truncated):
                return obs
        return self._true_reset()

    def _true_reset(self) -> Any:
        obs, info = self._env_reset()
        if self.max_num_noops > 0:
            for _ in range(int(self.rng.integers(1, self.max_num_noops + 1))):
                obs, _, terminated, truncated, info = self._env_step(self.noop_action)
                if terminated or truncated:
                    obs, info = self._env_reset()
        if self.fire_reset and self._has_fire:
            for action in (FIRE_ACTION, 2):
                obs, _, terminated, truncated, info = self._env_step(action)
                if terminated or truncated:
                    obs, info = self._env_reset()
        self._lives = self._read_lives(info)
        self._life_lost, self._game_over, self._episode_steps = False, False, 0
        return obs

    def step(self, actions: Any) -> tuple:
        """Executes `actions` (repeated `frameskip` times).

        Returns:
            (state, reward, terminal, info): reward summed over the repeats; terminal = terminated
            or truncated or (with `episodic_life`) a lost life.
        """
        action = self._convert_action(actions)
        reward, previous, obs, life_loss = 0.0, None, None, False
        for _ in range(self.frameskip):
            previous = obs
            obs, step_reward, terminated, truncated, info = self._env_step(action)
            reward = reward + step_reward
            lives = self._read_lives(info)
            life_loss = self.episodic_life and lives is not None and self._lives is not None and 0 < lives < self._lives
            self._lives = lives
            if terminated or truncated or life_loss:
                break
        if previous is not None:
            obs = self._merge_frames(previous, obs)
        self._episode_steps += 1
        if self.max_episode_steps is not None and self._episode_steps >= self.max_episode_steps:
            truncated = True
        self._game_over = terminated or truncated
        self._life_lost = life_loss and not self._game_over
        info["terminated"] = terminated or self._life_lost
        info["truncated"] = truncated
        if lives is not None:
            info["lives"] = lives
        if self.episodic_life:
            info["life_loss"] = self._life_lost
        reward = float(reward) if np.ndim(reward) == 0 else np.asarray(reward)
        return obs, reward, terminated or truncated or self._life_lost, info

    def render(self) -> Any:
        """Returns the current frame as an RGB array (None if the env was made without a render mode)."""
        if not self._new_api:
            return self.gym_env.render(mode="rgb_array")
        if getattr(self.gym_env, "render_mode", None) is None:
            return None
        return self.gym_env.render()

    def terminate(self) -> None:
        """Closes the gym env."""
        self.gym_env.close()

    def __str__(self) -> str:
        return f"OpenAIGymEnv({self.env_id or type(self.gym_env.unwrapped).__name__})"


def _float_box_bounds(space: Any) -> Optional[tuple]:
    """(low, high) arrays of a gym float `Box` action space; None for any other space."""
    if type(space).__name__ != "Box" or not np.issubdtype(np.dtype(space.dtype), np.floating):
        return None
    return np.asarray(space.low, dtype=space.dtype), np.asarray(space.high, dtype=space.dtype)
