"""`EnvPoolVectorEnv`: Atari games stepped in EnvPool's C++ thread pool (`training_spec.vectorization`
"envpool", https://github.com/sail-sg/envpool).

EnvPool runs the emulators, the frame skipping, max-pooling, grey-scaling, resizing (OpenCV's area
interpolation, as `AtariEnv`) and frame stacking in C++ threads, with no Python per frame. This
class gives it the contract of rlgraph's vector envs (`VectorEnv`): batched `step`, no automatic
reset (the worker calls `reset(i)` after a terminal), `reset_all`, environment i seeded with
seed + i, and the spaces and info of `AtariEnv` (uint8 states (84, 84, 4), newest frame last; info
"terminated", "truncated", "lives", "raw_reward" with clipped rewards, "life_loss" with
`episodic_life`). The pool runs asynchronously with a batch of one, so that one environment can be
reset or continued on its own (EnvPool itself resets an environment automatically on the next step
after its end, which this class never lets happen unasked).

Settings are `AtariEnv`'s (its `protocol` presets, `DEFAULTS` and arguments), mapped onto EnvPool's
options. Differences from `AtariEnv` (both deterministic per seed, but not the same frames for the
same seed): the random no-op starts come from EnvPool's generator, and after a lost life
(`episodic_life`) the game continues without the one no-op step `AtariEnv` takes. EnvPool always
max-pools the last two frames of a skip (`max_pool_frames` False is refused) and knows the games by
name only ("Pong", "ALE/Pong-v5"; not "PongNoFrameskip-v4").
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np

from rlgraph.environments.atari import AtariEnv, atari_settings
from rlgraph.environments.env_utils import import_optional, resolve_seed
from rlgraph.environments.environment import Environment
from rlgraph.environments.openai_gym import OpenAIGymEnv
from rlgraph.environments.vector_env import VectorEnv, check_num_environments, split_actions
from rlgraph.spaces import IntBox
from rlgraph.utils.cpus import usable_cpus
from rlgraph.utils.rlgraph_errors import RLGraphEnvError, RLGraphError, RLGraphSpecError

ENVPOOL_INSTALL_HINT = 'install it with `pip install -c constraints.txt -e ".[envpool]"`'
# AtariEnv arguments an EnvPool spec may hold ("type" and "seed" besides).
SPEC_KEYS = ("game", "protocol", "frame_size", "frame_stack", "grayscale", "frameskip", "max_num_noops",
             "episodic_life", "fire_reset", "clip_rewards", "max_pool_frames", "max_episode_steps",
             "repeat_action_probability")
NO_TIME_LIMIT = 2 ** 30  # EnvPool's step counter is an int32; `max_episode_steps` None means "no cap".


class EnvPoolVectorEnv(VectorEnv):
    """`num_environments` Atari games in one EnvPool pool, with the vector-env contract (see the
    module docstring).

    Args:
        num_environments: How many games.
        env_spec: An Atari spec: {"type": "atari", "game": "Pong", ...AtariEnv arguments} (plain
            data; `visualize`, `render_mode` and gymnasium keyword arguments are not taken).
        seed: Base seed: game i is seeded with seed + i (default: the spec's "seed", else the time).
        num_threads: EnvPool's threads (default: min(num_environments, usable cores)).

    Raises:
        RLGraphMissingDependencyError: If envpool is not installed.
        RLGraphSpecError: For a spec that is not an Atari one, unknown keys, settings EnvPool cannot
            run (`max_pool_frames` False, a game id of another form) or an unknown game.
    """

    def __init__(self, num_environments: int, env_spec: Any, seed: Optional[int] = None,
                 num_threads: Optional[int] = None):
        where = type(self).__name__
        self.num_environments = check_num_environments(num_environments, where)
        self._envpool = import_optional("envpool", where=where, hint=ENVPOOL_INSTALL_HINT)
        spec = _atari_spec(env_spec, where)
        given = {k: spec.get(k) for k in SPEC_KEYS if k not in ("game", "protocol")}
        self.settings = atari_settings(spec.get("protocol"), given, where)
        if not self.settings["max_pool_frames"]:
            raise RLGraphSpecError("EnvPool always max-pools the last two frames of a skip", where=f"{where}(env_spec)",
                                   received="max_pool_frames False", hint='use vectorization "sync" or "async".')
        self.game = AtariEnv.game_id(spec["game"])
        self.task = _task_name(self.game, self._envpool, where)
        size = self.settings["frame_size"]
        self.frame_size = (size, size) if np.ndim(size) == 0 else tuple(size)
        self.frame_stack = int(self.settings["frame_stack"])
        self.grayscale = bool(self.settings["grayscale"])
        self.clip_rewards = bool(self.settings["clip_rewards"])
        self.episodic_life = bool(self.settings["episodic_life"])
        self.num_threads = int(num_threads) if num_threads is not None else min(self.num_environments, usable_cpus())
        self._pool = None
        self._states: List[Optional[np.ndarray]] = [None] * self.num_environments
        self._lives = np.zeros(self.num_environments, np.int64)
        self._life_lost = np.zeros(self.num_environments, bool)  # Ended by a lost life: reset continues.
        if seed is None:
            seed = spec.get("seed")
        self.seed(seed)
        channels = (1 if self.grayscale else 3) * self.frame_stack
        self.environments = []  # (No env objects of its own: `get_env` stands for them.)
        Environment.__init__(self, IntBox(0, 256, shape=self.frame_size + (channels,), dtype="uint8"),
                             OpenAIGymEnv.translate_space(self._pool.action_space))

    # --- The pool ----------------------------------------------------------------------------------
    def _make_pool(self, seed: int) -> Any:
        s = self.settings
        try:
            return self._envpool.make(
                self.task, env_type="gymnasium", num_envs=self.num_environments, batch_size=1, seed=int(seed),
                num_threads=self.num_threads, stack_num=self.frame_stack, frame_skip=int(s["frameskip"]),
                noop_max=int(s["max_num_noops"]) or 1, episodic_life=self.episodic_life, reward_clip=False,
                use_fire_reset=bool(s["fire_reset"]), img_height=self.frame_size[0], img_width=self.frame_size[1],
                gray_scale=self.grayscale, repeat_action_probability=float(s["repeat_action_probability"]),
                max_episode_steps=int(s["max_episode_steps"] or NO_TIME_LIMIT))
        except (TypeError, ValueError, RuntimeError) as error:
            raise RLGraphSpecError("EnvPool refused the settings", where=f"{type(self).__name__}(env_spec)",
                                   received=repr(s), hint=str(error)) from None

    def _receive(self, count: int) -> Dict[int, tuple]:
        """`count` results of the pool: env id -> (state, raw reward, terminated, truncated, lives)."""
        results = {}
        for _ in range(count):
            obs, reward, terminated, truncated, info = self._pool.recv()
            index = int(info["env_id"][0])
            results[index] = (np.moveaxis(obs[0], 0, -1), float(reward[0]), bool(terminated[0]),
                              bool(truncated[0]), int(info["lives"][0]))
        return results

    def _send(self, actions: np.ndarray, indices: np.ndarray) -> None:
        try:
            self._pool.send(actions, indices)
        except (RuntimeError, ValueError, TypeError) as error:
            raise RLGraphEnvError(f"EnvPool refused the actions ({error})", where=f"{self}.step(actions)",
                                  received=f"actions {actions!r}") from None

    # --- VectorEnv contract -------------------------------------------------------------------------
    def seed(self, seed: Optional[int] = None) -> int:
        """Remakes the pool with game i seeded with seed + i (EnvPool seeds only at construction);
        every game starts anew at the next reset."""
        seed = resolve_seed(seed)
        if self._pool is not None:
            self._pool.close()
        self._pool = self._make_pool(seed)
        self._states = [None] * self.num_environments
        self._life_lost[:] = False
        return seed

    def reset(self, index: int = 0) -> np.ndarray:
        """Game `index`'s first state: a new game (with no-op starts), or after a lost life with
        `episodic_life`, the game going on (see the module docstring)."""
        index = self._check_index(index)
        if self._life_lost[index]:
            self._life_lost[index] = False
            # EnvPool continues a game whose life was lost at that game's next step (its action unused).
            self._send(np.zeros(1, np.int32), np.array([index], np.int32))
            state, _, terminated, truncated, lives = self._receive(1)[index]
            self._lives[index] = lives
            if not (terminated or truncated):
                self._states[index] = state
                return state
        obs, info = self._pool.reset(np.array([index], np.int32))  # This game only.
        self._keep_reset(index, np.moveaxis(obs[0], 0, -1), int(info["lives"][0]))
        return self._states[index]

    def _keep_reset(self, index: int, state: np.ndarray, lives: int) -> None:
        self._states[index], self._lives[index], self._life_lost[index] = state, lives, False

    def reset_all(self) -> np.ndarray:
        self._pool.async_reset()
        for index, (state, _, _, _, lives) in self._receive(self.num_environments).items():
            self._keep_reset(index, state, lives)
        return np.stack(self._states)

    def step(self, actions: Any) -> tuple:
        per_env = split_actions(actions, self.num_environments, f"{type(self).__name__}.step")
        flat = np.asarray([int(np.asarray(a)) for a in per_env], np.int32)
        self._send(flat, np.arange(self.num_environments, dtype=np.int32))
        results = self._receive(self.num_environments)
        states, rewards, terminals, infos = [], np.zeros(self.num_environments, np.float32), \
            np.zeros(self.num_environments, bool), []
        for index in range(self.num_environments):
            state, raw, terminated, truncated, lives = results[index]
            life_loss = self.episodic_life and terminated and 0 < lives < self._lives[index]
            self._lives[index], self._life_lost[index] = lives, life_loss
            info = {"terminated": terminated, "truncated": truncated and not terminated, "lives": lives}
            if self.episodic_life:
                info["life_loss"] = bool(life_loss)
            if self.clip_rewards:
                info["raw_reward"] = raw
            rewards[index] = np.sign(raw) if self.clip_rewards else raw
            terminals[index] = terminated or truncated
            self._states[index] = state
            states.append(state)
            infos.append(info)
        return np.stack(states), rewards, terminals, infos

    def get_env(self, index: int = 0) -> "EnvPoolVectorEnv":
        """This pool (its games have no objects of their own; for error messages)."""
        self._check_index(index)
        return self

    def render(self, index: int = 0) -> Any:
        raise RLGraphError("EnvPool games do not render", where=f"{self}.render",
                           hint="record videos with an AtariEnv of the same game (rlgraph evaluate --video).")

    def terminate(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def _check_index(self, index: Any) -> int:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or \
                not 0 <= index < self.num_environments:
            raise RLGraphError("no such environment", where=f"{self}.reset(index)",
                               expected=f"an int in [0, {self.num_environments})", received=repr(index))
        return int(index)

    def __str__(self) -> str:
        return f"EnvPoolVectorEnv({self.num_environments} x {self.game})"


def _atari_spec(env_spec: Any, where: str) -> dict:
    if not isinstance(env_spec, dict) or not isinstance(env_spec.get("type"), str) or "game" not in env_spec:
        raise RLGraphSpecError("EnvPool runs Atari games: the env spec must be an Atari spec", where=f"{where}(env_spec)",
                               expected='{"type": "atari", "game": "Pong", ...}', received=repr(env_spec)[:120])
    cls = Environment.resolve_type(env_spec["type"])
    if not (isinstance(cls, type) and issubclass(cls, AtariEnv)):
        raise RLGraphSpecError("EnvPool runs Atari games only", where=f"{where}(env_spec)",
                               expected='{"type": "atari", ...}', received=repr(env_spec["type"]),
                               hint='use vectorization "sync" or "async" for other environments.')
    unknown = sorted(set(env_spec) - set(SPEC_KEYS) - {"type", "seed"})
    if unknown:
        raise RLGraphSpecError(f"EnvPool does not take {unknown}", where=f"{where}(env_spec)",
                               expected=", ".join(SPEC_KEYS), hint='use vectorization "sync" or "async" for them.')
    return env_spec


def _task_name(game_id: str, envpool: Any, where: str) -> str:
    """EnvPool's name of gymnasium Atari id `game_id` ("ALE/Pong-v5" -> "Pong-v5")."""
    name = game_id[len("ALE/"):] if game_id.startswith("ALE/") else game_id
    known = set(envpool.list_all_envs())
    if name not in known:
        raise RLGraphSpecError("EnvPool has no such Atari game", where=f"{where}(env_spec.game)", received=repr(game_id),
                               hint="give the game by name, e.g. 'Pong' or 'SpaceInvaders' (EnvPool's ids are "
                                    "'<Game>-v5').")
    return name
