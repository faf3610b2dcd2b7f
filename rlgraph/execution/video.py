"""Watching and recording the greedy agent: `rlgraph evaluate --render / --video` and
`training_spec.record_video_every`.

An episode is played with `agent.get_action(state, use_exploration=False)` on an environment made
from the run's environment spec with a gymnasium `render_mode`: "rgb_array" to record frames
(one after the reset and one after each step, so an episode of T steps gives T + 1 frames),
"human" to show it in a window. GIFs are written with Pillow; MP4 files with moviepy, which
gymnasium's `RecordVideo` wrapper uses too (moviepy is not in rlgraph's extras: its current
release needs an older Pillow than the one pinned, so MP4 works where it is installed).

Nothing here imports a backend; Pillow and moviepy are imported only when a file is written.
"""
from __future__ import annotations

import copy
import os
import re
import sys
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from rlgraph.environments.env_utils import RLGraphMissingDependencyError
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphError

VIDEO_SUFFIXES = (".gif", ".mp4")
# Frames per second when the environment does not say (gymnasium's metadata "render_fps").
DEFAULT_FPS = 30
# Colours in a GIF's palette; one palette for the whole episode (from up to PALETTE_FRAMES frames)
# makes writing ~5x faster than a palette per frame and the file smaller.
PALETTE_FRAMES = 16
VIZ_HINT = "install the `viz` extra: pip install -c constraints.txt -e \".[viz]\""


# --- Checkpoints of a run --------------------------------------------------------------------------
def resolve_checkpoint(path: str, best: bool = False, where: str = "rlgraph evaluate") -> str:
    """The checkpoint directory that `path` names.

    `path` may be a checkpoint directory (it holds a manifest.json: returned as it is), a run
    directory of `rlgraph train` or its `checkpoints/` folder. For a run, the newest checkpoint
    by the step in its manifest: "final" and every "step-N" compete, "final" wins a tie (a
    resumed run may hold a "step-N" newer than an earlier "final"). `best` picks
    `checkpoints/best` instead.

    Raises:
        RLGraphCheckpointError: If `path` is neither, the run holds no checkpoint, or `best` is
            asked of a run without one.
    """
    from rlgraph.utils.checkpoint_dir import MANIFEST, is_checkpoint_dir, read_json
    if is_checkpoint_dir(path):
        if best:
            raise RLGraphCheckpointError("--best needs a run directory, not a checkpoint", where=f"{where} --best",
                                         received=path, hint="pass the run directory (the one holding checkpoints/).")
        return path
    folder = os.path.join(path, "checkpoints") if os.path.isdir(os.path.join(path, "checkpoints")) else path
    if not os.path.isdir(folder):
        raise RLGraphCheckpointError("no such checkpoint or run directory", where=where, received=path,
                                     hint="pass a run directory of `rlgraph train` or one of its checkpoints/*.")
    names = sorted(n for n in os.listdir(folder) if is_checkpoint_dir(os.path.join(folder, n)))
    if best:
        if "best" not in names:
            raise RLGraphCheckpointError("the run has no 'best' checkpoint", where=f"{where} --best",
                                         expected="checkpoints/best", received=f"{folder}: {names or 'no checkpoints'}",
                                         hint="leave out --best to take the newest checkpoint.")
        return os.path.join(folder, "best")
    candidates = []
    for name in names:
        match = re.fullmatch(r"step-(\d+)", name)
        if name != "final" and match is None:
            continue
        manifest = read_json(os.path.join(folder, name, MANIFEST), where)
        step = manifest.get("step") if isinstance(manifest, dict) else None
        if not isinstance(step, int):
            step = int(match.group(1)) if match else -1
        candidates.append((step, name == "final", name))
    if not candidates and folder == path:
        raise RLGraphCheckpointError(f"'{path}' has no manifest.json and no checkpoints/", where=where,
                                     expected="a checkpoint directory or a run directory of `rlgraph train`",
                                     received=f"a directory holding {sorted(os.listdir(path))[:8]}")
    if not candidates:
        raise RLGraphCheckpointError("the run directory holds no checkpoint", where=where,
                                     expected="checkpoints/final or checkpoints/step-N", received=folder,
                                     hint="`rlgraph train` writes checkpoints/final at the end of a run and "
                                          "step-N every training_spec.checkpoint_interval env steps.")
    return os.path.join(folder, max(candidates)[2])


# --- Environments that render ----------------------------------------------------------------------
def has_display() -> bool:
    """Whether a window can be opened: on Linux, an X11 or Wayland display is set."""
    if sys.platform.startswith("linux"):
        return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    return True


def check_display(where: str) -> None:
    """Raises an `RLGraphError` that says what to do instead when no window can be opened."""
    if not has_display():
        raise RLGraphError("no display to show the episodes on", where=where,
                           expected="a DISPLAY (X11) or WAYLAND_DISPLAY", received="neither is set",
                           hint="record a video instead (--video episode.gif), or run under a virtual display "
                                "(xvfb-run rlgraph evaluate ...).")


def make_render_env(env_spec: Any, render_mode: str, where: str, seed: Optional[int] = None) -> Any:
    """An environment of `env_spec` made with `render_mode` ("rgb_array" or "human").

    Raises:
        RLGraphError: For a spec that is not a dict of a gymnasium environment type
            ("openai-gym", "atari" and their aliases).
    """
    from rlgraph.environments import Environment, OpenAIGymEnv
    env_class = None
    if isinstance(env_spec, dict):
        try:
            env_class = Environment.resolve_type(env_spec.get("type"))
        except RLGraphError:
            env_class = None
    if not (isinstance(env_class, type) and issubclass(env_class, OpenAIGymEnv)):
        described = env_spec.get("type") if isinstance(env_spec, dict) else type(env_spec).__name__
        raise RLGraphError("only gymnasium environments can be watched or recorded", where=where,
                           expected='an environment_spec of type "openai-gym" or "atari"', received=repr(described),
                           hint="they take a render_mode; other environments have no frames to show.")
    spec = {k: v for k, v in copy.deepcopy(env_spec).items() if k != "visualize"}
    spec["render_mode"] = render_mode
    if seed is not None:
        spec["seed"] = seed
    return Environment.from_spec(spec)


def _missing_dependency_errors() -> tuple:
    """The exceptions of a renderer whose package is missing (gymnasium raises its own)."""
    try:
        from gymnasium.error import DependencyNotInstalled
    except ImportError:
        return (ImportError,)
    return ImportError, DependencyNotInstalled


def _frame(env: Any, where: str) -> np.ndarray:
    """The current frame of `env` as uint8 [H, W, 3]."""
    try:
        frame = env.render()
    except _missing_dependency_errors() as error:
        # gymnasium's classic-control and Box2D games draw with pygame.
        raise RLGraphMissingDependencyError("pygame", where=where, hint=f"{VIZ_HINT} ({error})") from error
    if frame is None:
        raise RLGraphError("the environment rendered no frame", where=where, expected="an RGB array",
                           received="None", hint="the environment must support render_mode 'rgb_array'.")
    frame = np.asarray(frame)
    if frame.ndim != 3 or frame.shape[-1] not in (3, 4):
        raise RLGraphError("the environment's frame is not an RGB image", where=where,
                           expected="an array [height, width, 3]", received=f"shape {frame.shape}")
    return frame[..., :3].astype(np.uint8, copy=False)


def play_episode(agent: Any, env: Any, max_steps: int = 0, record: bool = False, where: str = "play_episode") -> dict:
    """One greedy episode of `agent` on `env`.

    Args:
        agent: The agent (its stateful preprocessors are reset first, as a worker does).
        env: An rlgraph environment.
        max_steps: Stop after this many steps (0: at the episode's end only).
        record: Collect the frames (`env` made with render_mode "rgb_array").
        where: Names the caller in errors.

    Returns:
        {"return", "length", "frames"}: frames is [T + 1] uint8 arrays (empty without `record`).
    """
    agent.reset()
    state = env.reset()
    frames: List[np.ndarray] = [_frame(env, where)] if record else []
    total, length = 0.0, 0
    while True:
        action = agent.get_action(state, use_exploration=False)
        state, reward, terminal, _ = env.step(action)
        total += float(np.sum(reward))
        length += 1
        if record:
            frames.append(_frame(env, where))
        if terminal or (max_steps and length >= max_steps):
            return {"return": total, "length": length, "frames": frames}


def frames_per_second(env: Any) -> float:
    """The environment's own frame rate (gymnasium's metadata "render_fps"), else `DEFAULT_FPS`."""
    metadata = getattr(getattr(env, "gym_env", None), "metadata", None) or {}
    fps = metadata.get("render_fps")
    return float(fps) if isinstance(fps, (int, float)) and fps > 0 else float(DEFAULT_FPS)


# --- Files --------------------------------------------------------------------------------------------
def check_video_path(path: str, where: str) -> str:
    """The lower-case suffix of `path` (".gif" or ".mp4").

    Raises:
        RLGraphError: For another suffix.
    """
    suffix = os.path.splitext(path)[1].lower()
    if suffix not in VIDEO_SUFFIXES:
        raise RLGraphError("unsupported video format", where=where,
                           expected=f"a file name ending in {' or '.join(VIDEO_SUFFIXES)}", received=path)
    return suffix


def write_video(frames: Sequence[np.ndarray], path: str, fps: float, where: str = "write_video") -> str:
    """Writes `frames` to a GIF (Pillow) or MP4 (moviepy) file, by the suffix of `path`.

    The file is written next to `path` and then renamed into place. A GIF stores its frame
    delays in 10 ms steps (`fps` is rounded to that), and Pillow merges identical consecutive
    frames into one that is shown for their summed delay: the playing time stays
    len(frames) * delay, the frame count may be smaller.

    Raises:
        RLGraphError: For another suffix or no frames; RLGraphMissingDependencyError if Pillow
            (GIF) or moviepy (MP4) is missing.
    """
    suffix = check_video_path(path, where)
    if not frames:
        raise RLGraphError("no frames to write", where=where, received=path)
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)
    temporary = os.path.join(parent, f".{os.path.basename(path)}.tmp-{os.getpid()}{suffix}")
    try:
        if suffix == ".gif":
            _write_gif(frames, temporary, fps, where)
        else:
            _write_mp4(frames, temporary, fps, where)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.remove(temporary)
    return path


def gif_frame_duration_ms(fps: float) -> int:
    """The delay of one GIF frame: 1000 / fps ms in GIF's 10 ms steps, at least 20 ms (viewers
    play shorter delays slowly)."""
    return max(20, int(round(100.0 / fps)) * 10)


def _write_gif(frames: Sequence[np.ndarray], path: str, fps: float, where: str) -> None:
    try:
        from PIL import Image
    except ImportError as error:
        raise RLGraphMissingDependencyError("pillow", where=where, hint=VIZ_HINT) from error
    images = [Image.fromarray(np.asarray(frame, dtype=np.uint8)) for frame in frames]
    samples = images[::max(1, len(images) // PALETTE_FRAMES)][:PALETTE_FRAMES]
    strip = Image.new("RGB", (max(i.width for i in samples), sum(i.height for i in samples)))
    top = 0
    for sample in samples:
        strip.paste(sample, (0, top))
        top += sample.height
    palette = strip.quantize(colors=256, method=Image.Quantize.MEDIANCUT)
    indexed = [image.quantize(palette=palette, dither=Image.Dither.NONE) for image in images]
    indexed[0].save(path, format="GIF", save_all=True, append_images=indexed[1:], duration=gif_frame_duration_ms(fps),
                    loop=0)


def _write_mp4(frames: Sequence[np.ndarray], path: str, fps: float, where: str) -> None:
    try:
        from moviepy.video.io.ImageSequenceClip import ImageSequenceClip  # (moviepy 1 and 2)
    except ImportError as error:
        raise RLGraphMissingDependencyError(
            "moviepy", where=where,
            hint="MP4 needs moviepy (pip install moviepy; not in rlgraph's extras, its release needs an older "
                 "Pillow than the pinned one). A GIF needs only the `viz` extra: --video out.gif.") from error
    clip = ImageSequenceClip([np.asarray(frame, dtype=np.uint8) for frame in frames], fps=fps)
    try:
        clip.write_videofile(path, codec="libx264", audio=False, logger=None)
    finally:
        clip.close()


# --- What the command line and the training run call ------------------------------------------------
def record_greedy_episode(agent: Any, env_spec: Any, path: str, max_steps: int = 0, seed: Optional[int] = None,
                          where: str = "record_greedy_episode", episodes: int = 1) -> Dict[str, Any]:
    """Plays `episodes` greedy episodes on a fresh "rgb_array" environment (seeded once, as
    `rlgraph evaluate` is) and writes them back to back to `path`.

    Returns:
        {"path", "return", "length", "frames", "returns", "lengths"}: "return" and "length" of the
        first episode, "returns"/"lengths" of each, "frames" how many were recorded (the sum of
        length + 1 over the episodes).
    """
    check_video_path(path, where)
    env = make_render_env(env_spec, "rgb_array", where, seed=seed)
    played = []
    try:
        for _ in range(int(episodes)):
            played.append(play_episode(agent, env, max_steps, record=True, where=where))
        fps = frames_per_second(env)
    finally:
        env.terminate()
    frames = [frame for episode in played for frame in episode["frames"]]
    write_video(frames, path, fps, where)
    return {"path": path, "return": played[0]["return"], "length": played[0]["length"], "frames": len(frames),
            "returns": [episode["return"] for episode in played], "lengths": [episode["length"] for episode in played]}


def watch(agent: Any, env_spec: Any, episodes: int, max_steps: int = 0, seed: Optional[int] = None,
          where: str = "rlgraph evaluate --render") -> List[float]:
    """Shows `episodes` greedy episodes in a window (render_mode "human"); returns their returns.

    Raises:
        RLGraphError: Without a display (Linux without DISPLAY or WAYLAND_DISPLAY).
    """
    check_display(where)
    env = make_render_env(env_spec, "human", where, seed=seed)
    try:
        return [play_episode(agent, env, max_steps, where=where)["return"] for _ in range(episodes)]
    finally:
        env.terminate()


class TrainingVideos:
    """`training_spec.record_video_every`: one greedy episode as RUN/videos/step-N.gif at the end
    of the first log chunk at or after every multiple of `every` env steps.

    Args:
        agent: The agent being trained.
        env_spec: The run's environment spec.
        every: Env steps between videos (>= 1).
        directory: Where the GIFs go.
        max_steps: Episode length limit (training_spec.max_timesteps_per_episode; 0: the env's).
        seed: Seed of the recording environment (each video starts from the same seed).
    """

    def __init__(self, agent: Any, env_spec: Any, every: int, directory: str, max_steps: int = 0,
                 seed: Optional[int] = None):
        self.agent, self.env_spec, self.every = agent, env_spec, int(every)
        self.directory, self.max_steps, self.seed = directory, max_steps, seed
        self.next_step = self.every
        self.videos: List[str] = []
        # An environment without frames (or without pygame) fails before the run starts, not after N steps.
        probe = make_render_env(env_spec, "rgb_array", "training_spec.record_video_every", seed=seed)
        try:
            probe.reset()
            _frame(probe, "training_spec.record_video_every")
        finally:
            probe.terminate()

    def maybe_record(self, step: int) -> Optional[str]:
        """Records a video if `step` has reached the next multiple of `every`; returns its path."""
        if step < self.next_step:
            return None
        self.next_step = (step // self.every + 1) * self.every
        path = os.path.join(self.directory, f"step-{step}.gif")
        record_greedy_episode(self.agent, self.env_spec, path, self.max_steps, self.seed,
                              where="training_spec.record_video_every")
        self.videos.append(path)
        return path


def training_videos(agent: Any, env_spec: Any, training_spec: Dict[str, Any], output_dir: Optional[str],
                    seed: Optional[int]) -> Optional[TrainingVideos]:
    """The `TrainingVideos` of a run (into output_dir/videos), or None: `record_video_every` 0 or no
    output directory."""
    every = training_spec.get("record_video_every", 0)
    if not every or not output_dir:
        return None
    return TrainingVideos(agent, env_spec, every, os.path.join(output_dir, "videos"),
                          training_spec["max_timesteps_per_episode"], None if seed is None else seed + 20_000)
