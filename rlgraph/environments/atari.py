"""`AtariEnv`: Atari 2600 games through ale-py with the usual DQN preprocessing."""
from __future__ import annotations

import re
from collections import deque
from typing import Any, Optional, Union

import numpy as np

from rlgraph.environments.env_utils import ATARI_INSTALL_HINT, check_env_id, import_optional
from rlgraph.environments.openai_gym import OpenAIGymEnv
from rlgraph.spaces import IntBox
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError


# AtariEnv's own defaults: the DQN preprocessing, rewards as the game gives them.
DEFAULTS = {"frame_size": 84, "frame_stack": 4, "grayscale": True, "frameskip": 4, "max_num_noops": 30,
            "episodic_life": True, "fire_reset": True, "clip_rewards": False, "max_pool_frames": True,
            "max_episode_steps": None, "repeat_action_probability": 0.0}
# Evaluation protocols of record (`protocol`); an argument given explicitly overrides its value.
PROTOCOLS = {
    # Mnih et al. 2015 (https://www.nature.com/articles/nature14236): up to 30 no-op starts, a lost
    # life is terminal for learning, max-pool of the last two of 4 repeated frames, 84x84 grey
    # frames, 4 stacked, rewards clipped to their sign, episodes capped at 108,000 frames.
    "dqn-nature": {"frame_size": 84, "frame_stack": 4, "grayscale": True, "frameskip": 4, "max_num_noops": 30,
                   "episodic_life": True, "fire_reset": True, "clip_rewards": True, "max_pool_frames": True,
                   "max_episode_steps": 27000, "repeat_action_probability": 0.0},
    # Machado et al. 2018 (https://arxiv.org/abs/1709.06009): sticky actions (each emulator frame
    # repeats the previous action with probability 0.25) instead of no-op starts, no life-loss
    # signal (full episodes), otherwise the same frame processing and cap.
    "machado2018": {"frame_size": 84, "frame_stack": 4, "grayscale": True, "frameskip": 4, "max_num_noops": 0,
                    "episodic_life": False, "fire_reset": False, "clip_rewards": True, "max_pool_frames": True,
                    "max_episode_steps": 27000, "repeat_action_probability": 0.25},
}


def atari_settings(protocol: Optional[str], given: dict, where: str = "AtariEnv") -> dict:
    """The settings an Atari env runs with: `DEFAULTS`, then the `protocol`'s, then the arguments
    `given` that are not None (names of `DEFAULTS`)."""
    if protocol is not None and protocol not in PROTOCOLS:
        raise RLGraphSpecError("unknown Atari protocol", where=f"{where}(protocol)", expected=sorted(PROTOCOLS),
                               received=repr(protocol))
    return {**DEFAULTS, **PROTOCOLS.get(protocol, {}), **{k: v for k, v in given.items() if v is not None}}


class AtariEnv(OpenAIGymEnv):
    """An ALE game with frame skipping, max-pooling, down-scaling and frame stacking.

    The game is made with ``gymnasium.make("ALE/<Game>-v5", frameskip=1, repeat_action_probability=0)``
    so that this adapter does the skipping itself: each action is repeated `frameskip` times, the
    rewards are summed and the last two frames are max-pooled (Atari sprites flicker between
    frames). Each frame is converted to grayscale (by ALE itself), resized to `frame_size` with
    OpenCV's area interpolation, and the last `frame_stack` frames are stacked along the last
    axis, newest last. States are uint8 arrays of shape (84, 84, 4) with the defaults (with
    ``grayscale=False``: (84, 84, 3 * frame_stack), RGB triples per frame).

    Defaults follow Mnih et al. 2015 (https://www.nature.com/articles/nature14236): up to 30 no-op
    starts, a lost life ends the agent's episode, FIRE after reset in games that need it.

    `protocol` names a published setting (`PROTOCOLS`): "dqn-nature" (the defaults plus clipped
    rewards and the 108,000-frame cap) or "machado2018" (sticky actions 0.25, no no-op starts,
    no life loss); arguments given explicitly override the protocol's values. Evaluations use the
    full game score whatever the training setting (`evaluation_settings`: no life loss, raw rewards).

    Args:
        game: A game name ("Pong", "space_invaders" -> "ALE/SpaceInvaders-v5") or a full id
            ("ALE/Pong-v5", "PongNoFrameskip-v4").
        protocol: None, "dqn-nature" or "machado2018" (see above). The arguments below left None
            take the protocol's value, else `DEFAULTS`.
        frame_size: Output height and width: an int (square) or (height, width).
        frame_stack: How many of the latest frames form a state.
        grayscale: Whether frames are grayscale (one channel) or RGB (three).
        frameskip: How often each action is repeated.
        max_num_noops: Maximum number of no-op steps after a true reset (see `OpenAIGymEnv`).
        episodic_life: Whether a lost life is terminal for the agent (see `OpenAIGymEnv`).
        fire_reset: Whether to press FIRE after a reset in games that have it.
        clip_rewards: Whether rewards are clipped to their sign (-1, 0, 1); the raw sum is in
            info["raw_reward"].
        max_pool_frames: Whether the last two frames of a repeated action are max-pooled.
        seed: Seed for reproducible episodes.
        visualize: Make the game with ``render_mode="rgb_array"`` so that `render` returns frames.
        max_episode_steps: Optional own time limit in steps (see `OpenAIGymEnv`).
        repeat_action_probability: ALE's sticky actions: the probability that an emulator frame
            repeats the previous action instead of the agent's.
        render_mode: Passed to `gymnasium.make` (overrides `visualize`).
        **kwargs: Passed to `gymnasium.make` (e.g. ``difficulty``, ``mode``, ``full_action_space``).

    Raises:
        RLGraphMissingDependencyError: If ale-py or OpenCV is not installed.
    """

    # What evaluations change in a training spec (`rlgraph.execution.env_ids.evaluation_env_spec`).
    evaluation_settings = {"episodic_life": False, "clip_rewards": False}

    def __init__(self, game: str, protocol: Optional[str] = None, frame_size: Union[int, tuple, None] = None,
                 frame_stack: Optional[int] = None, grayscale: Optional[bool] = None, frameskip: Optional[int] = None,
                 max_num_noops: Optional[int] = None, episodic_life: Optional[bool] = None,
                 fire_reset: Optional[bool] = None, clip_rewards: Optional[bool] = None,
                 max_pool_frames: Optional[bool] = None, seed: Optional[int] = None, visualize: bool = False,
                 max_episode_steps: Optional[int] = None, render_mode: Optional[str] = None,
                 repeat_action_probability: Optional[float] = None, **kwargs):
        gym = import_optional("gymnasium", where="AtariEnv", hint=ATARI_INSTALL_HINT)
        ale_py = import_optional("ale_py", "ale-py", where="AtariEnv", hint=ATARI_INSTALL_HINT)
        self._cv2 = import_optional("cv2", "opencv-python-headless", where="AtariEnv", hint=ATARI_INSTALL_HINT)
        gym.register_envs(ale_py)
        given = dict(frame_size=frame_size, frame_stack=frame_stack, grayscale=grayscale, frameskip=frameskip,
                     max_num_noops=max_num_noops, episodic_life=episodic_life, fire_reset=fire_reset,
                     clip_rewards=clip_rewards, max_pool_frames=max_pool_frames, max_episode_steps=max_episode_steps,
                     repeat_action_probability=repeat_action_probability)
        settings = atari_settings(protocol, given)
        self.protocol = protocol
        self.settings = settings  # What this env runs with (after the protocol and the explicit arguments).
        frame_size, frame_stack, frameskip = settings["frame_size"], settings["frame_stack"], settings["frameskip"]
        self.frame_size = (frame_size, frame_size) if np.ndim(frame_size) == 0 else tuple(frame_size)
        if len(self.frame_size) != 2 or min(self.frame_size) < 1:
            raise RLGraphError("invalid frame size", where="AtariEnv(frame_size)",
                               expected="an int or (height, width) > 0", received=repr(frame_size))
        if isinstance(frame_stack, bool) or not isinstance(frame_stack, (int, np.integer)) or frame_stack < 1:
            raise RLGraphError("invalid frame stack", where="AtariEnv(frame_stack)", expected="an int >= 1",
                               received=repr(frame_stack))
        self.game = self.game_id(game)
        game_id = check_env_id(self.game, "AtariEnv(game)")  # Never "module:Game" (gymnasium imports module).
        self.frame_stack = int(frame_stack)
        self.grayscale = bool(settings["grayscale"])
        self.clip_rewards = bool(settings["clip_rewards"])
        self.max_pool_frames = bool(settings["max_pool_frames"])
        sticky = settings["repeat_action_probability"]
        if isinstance(sticky, bool) or not isinstance(sticky, (int, float)) or not 0.0 <= sticky < 1.0:
            raise RLGraphSpecError("invalid sticky-action probability", where="AtariEnv(repeat_action_probability)",
                                   expected="a number in [0, 1)", received=repr(sticky))
        make_kwargs = {"frameskip": 1, "repeat_action_probability": float(sticky),
                       "obs_type": "grayscale" if self.grayscale else "rgb"}
        make_kwargs.update(kwargs)
        if render_mode is None and visualize:
            render_mode = "rgb_array"
        if render_mode is not None:
            make_kwargs["render_mode"] = render_mode
        try:
            env = gym.make(game_id, **make_kwargs)
        except gym.error.Error as error:
            raise RLGraphError("ale-py has no such game", where="AtariEnv(game)", received=repr(game),
                               hint=f"{error}; game names are CamelCase ids such as 'Pong' or 'SpaceInvaders'.") \
                from None
        except TypeError as error:  # A keyword argument that ale-py's AtariEnv does not take.
            raise RLGraphSpecError("gymnasium.make rejected the arguments", where=f"AtariEnv({game!r})",
                                   received=f"keys {sorted(make_kwargs)}", hint=str(error)) from None
        super().__init__(env, frameskip=frameskip, max_num_noops=settings["max_num_noops"], noop_action=0,
                         episodic_life=settings["episodic_life"], fire_reset=settings["fire_reset"],
                         max_episode_steps=settings["max_episode_steps"])
        self.env_id = self.game
        channels = (1 if self.grayscale else 3) * self.frame_stack
        self.state_space = IntBox(0, 256, shape=self.frame_size + (channels,), dtype="uint8")
        self._frames: deque = deque(maxlen=self.frame_stack)
        if seed is not None:
            self.seed(seed)

    @staticmethod
    def game_id(game: str) -> str:
        """The gymnasium id of `game`: "pong" -> "ALE/Pong-v5"; ids with "/" or "-v" stay as they are."""
        if not isinstance(game, str) or not game.strip():
            raise RLGraphError("invalid game", where="AtariEnv(game)", expected="a game name such as 'Pong'",
                               received=repr(game))
        if "/" in game or "-v" in game:
            return game
        parts = [p for p in re.split(r"[_\-\s]+", game.strip()) if p]
        return "ALE/" + "".join(p[:1].upper() + p[1:] for p in parts) + "-v5"

    def _merge_frames(self, previous: Any, last: Any) -> Any:
        return np.maximum(previous, last) if self.max_pool_frames else last

    def _process_frame(self, frame: np.ndarray) -> np.ndarray:
        """One raw ALE frame -> uint8 (height, width, 1 or 3)."""
        frame = np.asarray(frame, dtype=np.uint8)
        if self.grayscale and frame.ndim == 3:
            frame = self._cv2.cvtColor(frame, self._cv2.COLOR_RGB2GRAY)
        height, width = self.frame_size
        frame = self._cv2.resize(frame, (width, height), interpolation=self._cv2.INTER_AREA)
        return frame[..., None] if frame.ndim == 2 else frame

    def _stacked_state(self) -> np.ndarray:
        return np.concatenate(list(self._frames), axis=-1)

    def reset(self) -> np.ndarray:
        """Resets (see `OpenAIGymEnv.reset`); the frame stack is filled with copies of the first frame.

        Returns:
            uint8 array (height, width, channels * frame_stack).
        """
        frame = self._process_frame(super().reset())
        self._frames.clear()
        self._frames.extend([frame] * self.frame_stack)
        return self._stacked_state()

    def step(self, actions: Any) -> tuple:
        """Executes `actions` `frameskip` times (see `OpenAIGymEnv.step`) and pushes the new frame.

        Returns:
            (state, reward, terminal, info) with the stacked state.
        """
        obs, reward, terminal, info = super().step(actions)
        if self.clip_rewards:
            info["raw_reward"] = reward
            reward = float(np.sign(reward))
        self._frames.append(self._process_frame(obs))
        return self._stacked_state(), reward, terminal, info
