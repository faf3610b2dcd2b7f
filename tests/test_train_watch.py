"""Seeing what a training run does: `rlgraph evaluate --video/--render` and run directories,
`training_spec.record_video_every`, evaluations in the learning curve, the TensorBoard scalars,
hooks from the command line and from configs (and what is refused), and the W&B/MLflow loggers
(with fake modules: the packages are optional)."""
import json
import os
import re
import struct
import sys
import types

import numpy as np
import pytest

from rlgraph.cli.main import main
from rlgraph.environments.env_utils import RLGraphMissingDependencyError
from rlgraph.execution.hooks import EpisodeReturnsHook, check_hook_spec, load_hook
from rlgraph.execution.loggers import make_logger
from rlgraph.execution.training import TRAINING_SPEC_DEFAULTS, check_training_spec
from rlgraph.execution.video import gif_frame_duration_ms, make_render_env, resolve_checkpoint, write_video
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphError, RLGraphSpecError
from rlgraph.utils.run_logs import plot_learning_curve, read_csv

pytest.importorskip("PIL", reason="GIFs are written with Pillow (the viz and test extras)")
pytest.importorskip("pygame", reason="gymnasium draws CartPole with pygame (the viz and test extras)")
from PIL import Image  # noqa: E402

STEPS, LOG_INTERVAL, VIDEO_EVERY = 400, 100, 200
EPSILON_FROM, EPSILON_TO, EPSILON_STOP = 1.0, 0.1, 0.5
LEARNING_RATE = 0.005
# The module the --hook of the run fixture names; written into a temporary directory on sys.path.
HOOK_MODULE = "rlgraph_test_watch_hooks"
HOOK_SOURCE = '''
from rlgraph.execution.hooks import Hook

INSTANCES = []


class Recorder(Hook):
    def __init__(self):
        self.steps, self.episode_ends, self.logged, self.closed = 0, 0, [], 0
        INSTANCES.append(self)

    def __call__(self, agent, data):
        self.steps, self.agent = self.steps + 1, agent

    def on_episode_end(self, agent, data):
        self.episode_ends += 1

    def on_log(self, step, scalars):
        self.logged.append((step, dict(scalars)))

    def close(self):
        self.closed += 1


class NotAHook:
    pass
'''


# --- Fakes of wandb and mlflow ----------------------------------------------------------------------
class _FakeWandbRun:
    def __init__(self, **kwargs):
        self.init_kwargs, self.logged, self.finished = kwargs, [], 0

    def log(self, data, step):
        self.logged.append((step, dict(data)))

    def finish(self):
        self.finished += 1


def _fake_wandb():
    module = types.ModuleType("wandb")
    module.runs = []

    def init(**kwargs):
        module.runs.append(_FakeWandbRun(**kwargs))
        return module.runs[-1]
    module.init = init
    return module


def _fake_mlflow():
    module = types.ModuleType("mlflow")
    module.calls = []
    for name in ("set_tracking_uri", "set_experiment", "start_run", "log_dict", "end_run"):
        setattr(module, name, lambda *args, _name=name, **kwargs: module.calls.append((_name, args, kwargs)) or _name)
    module.metrics = []
    module.log_metrics = lambda metrics, step: module.metrics.append((step, dict(metrics)))
    return module


# --- The event file, decoded by hand (protobuf wire format) -----------------------------------------
def _varint(data, i):
    value = shift = 0
    while True:
        byte = data[i]
        value |= (byte & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if not byte & 0x80:
            return value, i


def _fields(data):
    """(field number, value) of a protobuf message: ints, bytes, or raw 4/8-byte strings."""
    i, out = 0, []
    while i < len(data):
        key, i = _varint(data, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        elif wire == 2:
            length, i = _varint(data, i)
            value, i = data[i:i + length], i + length
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        else:
            raise AssertionError(f"wire type {wire}")
        out.append((field, value))
    return out


def read_scalars(logdir):
    """tag -> [(step, value)] of every event file in `logdir` (TFRecord framing as TensorBoard reads it)."""
    scalars = {}
    for name in sorted(os.listdir(logdir)):
        data, offset = open(os.path.join(logdir, name), "rb").read(), 0
        while offset < len(data):
            (length,) = struct.unpack("<Q", data[offset:offset + 8])
            event = dict.fromkeys((2,), 0)
            event.update((f, v) for f, v in _fields(data[offset + 12:offset + 12 + length]) if f in (2, 5))
            offset += 16 + length
            if 5 not in event:
                continue
            for field, value in _fields(event[5]):
                entry = dict(_fields(value))
                if field == 1 and 2 in entry:
                    scalars.setdefault(entry[1].decode(), []).append((event[2], struct.unpack("<f", entry[2])[0]))
    return scalars


# --- One small run, through the command line, shared by the tests below ----------------------------
def _tiny_config(tmp_path, **training):
    config = json.loads(open("configs/dqn_cartpole.json").read())
    config["network_spec"] = [{"type": "dense", "units": 16, "activation": "relu"}]
    config["memory_spec"]["capacity"] = 500
    config["update_spec"].update(update_interval=4, steps_before_update=64, batch_size=16, update_steps=1)
    config["optimizer_spec"]["learning_rate"] = LEARNING_RATE
    config["exploration_spec"]["epsilon_spec"]["decay_spec"] = {
        "type": "linear-decay", "from": EPSILON_FROM, "to": EPSILON_TO, "start_percentage": 0.0,
        "stop_percentage": EPSILON_STOP}
    config["execution_spec"]["max_timesteps"] = STEPS
    config["training_spec"].update(num_timesteps=STEPS, evaluation_interval=200, evaluation_episodes=2,
                                   log_interval=LOG_INTERVAL, stop_at_return=None, max_timesteps_per_episode=60,
                                   **training)
    config["summary_spec"] = {"summary_interval": 0}
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(config))
    return path


@pytest.fixture(scope="module", params=["pytorch", "tf"])
def run(request, tmp_path_factory):
    """A 400-step DQN run on CartPole with a GIF every 200 steps, a --hook and both loggers (fakes)."""
    from rlgraph.backend_system import is_backend_installed
    if not is_backend_installed(request.param):
        pytest.skip(reason=f"backend {request.param!r} is not installed")
    tmp_path = tmp_path_factory.mktemp(f"run-{request.param}")
    (tmp_path / f"{HOOK_MODULE}.py").write_text(HOOK_SOURCE)
    out = tmp_path / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(tmp_path))
        patch.setitem(sys.modules, "wandb", _fake_wandb())
        patch.setitem(sys.modules, "mlflow", _fake_mlflow())
        code = main(["train", str(_tiny_config(tmp_path, record_video_every=VIDEO_EVERY)), "--backend",
                     request.param, "--seed", "1", "--output-dir", str(out), "--no-progress",
                     "--hook", f"{HOOK_MODULE}:Recorder", "--wandb", "proj", "--mlflow", "exp"])
        assert code == 0
        hooks = sys.modules.pop(HOOK_MODULE)
        fakes = sys.modules["wandb"], sys.modules["mlflow"]
    return {"dir": out, "hook": hooks.INSTANCES[-1], "wandb": fakes[0], "mlflow": fakes[1],
            "config": json.loads((out / "config.json").read_text()), "backend": request.param}


def _gif(path):
    """(frame count, summed delay in ms, size) of a GIF."""
    image = Image.open(path)
    total = 0
    for index in range(image.n_frames):
        image.seek(index)
        total += image.info["duration"]
    return image.n_frames, total, image.size


# --- Videos --------------------------------------------------------------------------------------------
def test_record_video_every_writes_gifs(run):
    videos = sorted(os.listdir(run["dir"] / "videos"))
    assert videos == ["step-200.gif", "step-400.gif"]
    for name in videos:
        frames, total, size = _gif(run["dir"] / "videos" / name)
        # CartPole renders at 50 fps: 20 ms a frame; at most max_timesteps_per_episode 60 steps + 1 frames.
        assert size == (600, 400) and 2 <= frames <= 61 and total % 20 == 0 and total <= 61 * 20


def test_evaluate_a_run_directory_into_a_gif(run, tmp_path, capsys):
    gif = tmp_path / "sub" / "episode.gif"
    assert main(["evaluate", str(run["dir"]), "--video", str(gif), "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert f"checkpoint {run['dir'] / 'checkpoints' / 'final'}" in printed
    steps, frames = map(int, re.search(r"(\d+) steps \((\d+) frames\)", printed).groups())
    assert frames == steps + 1
    gif_frames, total, size = _gif(gif)
    # Pillow merges identical consecutive frames, keeping the playing time: (steps + 1) frames of 20 ms.
    assert size == (600, 400) and gif_frames <= frames and total == frames * gif_frame_duration_ms(50) == frames * 20
    assert not [n for n in os.listdir(gif.parent) if n != "episode.gif"]  # No temporary file left.


def test_evaluate_records_several_episodes_back_to_back(run, tmp_path, capsys):
    gif = tmp_path / "two.gif"
    assert main(["evaluate", str(run["dir"]), "--video", str(gif), "--episodes", "2", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert "2 greedy episode(s)" in printed
    steps, frames = map(int, re.search(r"(\d+) steps \((\d+) frames\)", printed).groups())
    assert frames == steps + 2  # Each episode: its reset frame plus one per step.
    assert _gif(gif)[1] == frames * 20


def test_evaluate_refusals(run, tmp_path, capsys, monkeypatch):
    assert main(["evaluate", str(run["dir"]), "--video", str(tmp_path / "x.avi")]) == 2
    assert "unsupported video format" in capsys.readouterr().err
    if sys.platform.startswith("linux"):
        monkeypatch.delenv("DISPLAY", raising=False)
        monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
        assert main(["evaluate", str(run["dir"]), "--render"]) == 2
        err = capsys.readouterr().err
        assert "no display" in err and "--video" in err
    assert main(["evaluate", str(run["dir"]), "--best", "--video", str(tmp_path / "b.gif")]) == 0
    assert "checkpoints/best" in capsys.readouterr().out.replace(os.sep, "/")
    with pytest.raises(RLGraphError, match="only gymnasium environments"):
        make_render_env({"type": "grid-world", "world": "4x4"}, "rgb_array", "test")


def _checkpoint(folder, name, step):
    os.makedirs(folder / name)
    (folder / name / "manifest.json").write_text(json.dumps({"format": "rlgraph-checkpoint", "step": step}))


def test_a_run_directory_resolves_to_its_newest_checkpoint(tmp_path):
    folder = tmp_path / "checkpoints"
    with pytest.raises(RLGraphCheckpointError, match="no such checkpoint or run directory"):
        resolve_checkpoint(str(tmp_path / "missing"))
    with pytest.raises(RLGraphCheckpointError, match="has no manifest.json and no checkpoints/"):
        resolve_checkpoint(str(tmp_path))
    os.makedirs(folder)
    with pytest.raises(RLGraphCheckpointError, match="holds no checkpoint"):
        resolve_checkpoint(str(tmp_path))
    _checkpoint(folder, "step-200", 200)
    _checkpoint(folder, "step-1000", 1000)
    assert resolve_checkpoint(str(tmp_path)) == str(folder / "step-1000")  # By step, not by name.
    _checkpoint(folder, "final", 1000)
    assert resolve_checkpoint(str(tmp_path)) == str(folder / "final")      # "final" wins a tie.
    _checkpoint(folder, "step-1500", 1500)                                 # A resumed run, stopped later.
    assert resolve_checkpoint(str(tmp_path)) == str(folder / "step-1500")
    assert resolve_checkpoint(str(folder)) == str(folder / "step-1500")    # checkpoints/ itself.
    _checkpoint(folder, "best", 700)
    assert resolve_checkpoint(str(tmp_path)) == str(folder / "step-1500")  # "best" only when asked.
    assert resolve_checkpoint(str(tmp_path), best=True) == str(folder / "best")
    assert resolve_checkpoint(str(folder / "step-200")) == str(folder / "step-200")
    with pytest.raises(RLGraphCheckpointError, match="needs a run directory"):
        resolve_checkpoint(str(folder / "step-200"), best=True)
    os.remove(folder / "best" / "manifest.json")
    with pytest.raises(RLGraphCheckpointError, match="no 'best' checkpoint"):
        resolve_checkpoint(str(tmp_path), best=True)


def test_mp4_needs_moviepy(tmp_path, monkeypatch):
    frames = [np.full((4, 6, 3), value, np.uint8) for value in (0, 80, 160)]
    monkeypatch.setitem(sys.modules, "moviepy", None)
    with pytest.raises(RLGraphMissingDependencyError, match="moviepy"):
        write_video(frames, str(tmp_path / "a.mp4"), 25)
    calls = []

    class Clip:
        def __init__(self, clip_frames, fps):
            calls.append(("clip", len(clip_frames), fps))

        def write_videofile(self, path, **kwargs):
            calls.append(("write", os.path.splitext(path)[1], kwargs.get("codec")))
            open(path, "wb").write(b"mp4")

        def close(self):
            calls.append(("close",))
    names = ("moviepy", "moviepy.video", "moviepy.video.io", "moviepy.video.io.ImageSequenceClip")
    for name in names:
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    sys.modules[names[-1]].ImageSequenceClip = Clip
    assert write_video(frames, str(tmp_path / "a.mp4"), 25) == str(tmp_path / "a.mp4")
    assert calls == [("clip", 3, 25), ("write", ".mp4", "libx264"), ("close",)]
    assert (tmp_path / "a.mp4").read_bytes() == b"mp4"


# --- The learning curve ---------------------------------------------------------------------------------
def test_learning_curve_shows_the_evaluations(run, tmp_path):
    evaluations = read_csv(str(run["dir"] / "evaluations.csv"))
    assert evaluations["step"] == [200, 400]
    assert all(lo <= mean <= hi for lo, mean, hi in zip(evaluations["min_return"], evaluations["mean_return"],
                                                         evaluations["max_return"]))
    episodes = read_csv(str(run["dir"] / "episodes.csv"))
    plain = plot_learning_curve(episodes["step"], episodes["return"], str(tmp_path / "plain.png"))
    with_evaluations = plot_learning_curve(episodes["step"], episodes["return"], str(tmp_path / "eval.png"),
                                           evaluations=evaluations)
    run_curve = str(run["dir"] / "learning_curve.png")  # RunLogs.close() plots evaluations.csv.
    pixels = [np.asarray(Image.open(p).convert("RGB"), dtype=np.int64) for p in (plain, with_evaluations, run_curve)]
    orange = [int(np.sum((abs(p[..., 0] - 255) < 20) & (abs(p[..., 1] - 127) < 30) & (p[..., 2] < 60))) for p in pixels]
    assert orange[0] == 0 and orange[1] > 100 and orange[2] > 100  # The evaluations' line (tab:orange).
    with pytest.raises(RLGraphError, match="a mean_return per step"):
        plot_learning_curve([], [], str(tmp_path / "x.png"), evaluations={"step": [1, 2], "mean_return": [1.0]})
    # Rows without a mean are left out; without min/max there is no band.
    plot_learning_curve([], [], str(tmp_path / "y.png"), evaluations={"step": [1, 2], "mean_return": [None, 2.0]})


# --- TensorBoard scalars --------------------------------------------------------------------------------
def test_tensorboard_scalars_read_back(run):
    scalars = read_scalars(run["dir"] / "tensorboard")
    assert {"train/episode_return", "eval/mean_return", "train/loss", "train/env_frames_per_second",
            "train/updates_per_second", "train/num_updates", "train/time_percentage", "explore/epsilon",
            "train/learning_rate", "train/mean_max_q"} <= set(scalars)
    chunk_steps = list(range(LOG_INTERVAL, STEPS + 1, LOG_INTERVAL))
    assert [step for step, _ in scalars["explore/epsilon"]] == chunk_steps  # summary_interval 0: every chunk.
    time_percentage = dict(scalars["train/time_percentage"])
    for step, epsilon in scalars["explore/epsilon"]:
        # The agent has observed all steps but the last one's (it waits for the next state's preprocessing).
        observed = round(time_percentage[step] * STEPS)
        assert observed in (step - 1, step)
        progress = min(1.0, observed / STEPS / EPSILON_STOP)
        assert epsilon == pytest.approx(EPSILON_FROM + (EPSILON_TO - EPSILON_FROM) * progress, abs=1e-6)
    assert [value for _, value in scalars["train/learning_rate"]] == pytest.approx([LEARNING_RATE] * 4)
    updates = [value for _, value in scalars["train/num_updates"]]
    # Updates start once 64 steps are observed; about one per update_interval of 4 steps after that.
    assert 0 < updates[0] <= (LOG_INTERVAL - 64) // 4 + 1 and updates == sorted(updates)
    assert updates[-1] == run["hook"].agent.num_updates  # The agent's count at the end of the run.
    assert all(np.isfinite(v) for _, v in scalars["train/mean_max_q"])
    evaluations = read_csv(str(run["dir"] / "evaluations.csv"))
    assert scalars["eval/mean_return"] == [(s, pytest.approx(m)) for s, m in
                                           zip(evaluations["step"], evaluations["mean_return"])]
    episodes = read_csv(str(run["dir"] / "episodes.csv"))
    assert [s for s, _ in scalars["train/episode_return"]] == episodes["step"]


def test_training_scalars_of_an_agent(backend):
    from rlgraph.agents import Agent
    from rlgraph.spaces import FloatBox, IntBox
    spec = json.loads(open("configs/ppo_cartpole.json").read())
    spec.update(network_spec=[{"type": "dense", "units": 8, "activation": "tanh"}], execution_spec={"seed": 2},
                value_function_spec=[{"type": "dense", "units": 8, "activation": "tanh"}],
                optimizer_spec={"type": "adam", "learning_rate": ["linear", 0.01, 0.001]},
                update_spec={"batch_size": 16, "sample_size": 16, "num_epochs": 1})
    agent = Agent.from_spec(spec, state_space=FloatBox(shape=(4,)), action_space=IntBox(2), backend=backend)
    try:
        agent.max_timesteps = 40
        scalars = agent.training_scalars()
        assert scalars["train/num_updates"] == 0 and "loss/policy" not in scalars
        states = np.random.RandomState(0).uniform(-0.1, 0.1, size=(17, 4)).astype(np.float32)
        for t in range(16):
            agent.observe(states[t], t % 2, None, 1.0, states[t + 1], t == 15)
        out = agent.update()
        scalars = agent.training_scalars()
        assert scalars["train/num_updates"] == agent.num_updates == 1
        assert scalars["train/time_percentage"] == pytest.approx(16 / 40)
        assert scalars["train/learning_rate"] == pytest.approx(0.01 + (0.001 - 0.01) * 16 / 40)
        assert (scalars["loss/policy"], scalars["loss/value"], scalars["train/entropy"]) == pytest.approx(
            (float(out.policy_loss), float(out.value_loss), float(out.entropy)))
    finally:
        agent.terminate()


# --- Hooks ------------------------------------------------------------------------------------------------
def test_a_hook_from_the_command_line_runs(run):
    hook, episodes = run["hook"], read_csv(str(run["dir"] / "episodes.csv"))
    assert hook.steps == STEPS and hook.episode_ends == len(episodes["step"]) and hook.closed == 1
    assert hook.logged == run["wandb"].runs[0].logged  # Every TensorBoard point, in the same order.


def test_hook_names_that_are_refused(tmp_path, monkeypatch):
    with pytest.raises(RLGraphSpecError, match="package.module:Class"):
        check_hook_spec("hooks/mine.py:Recorder", "test")
    with pytest.raises(RLGraphSpecError, match="package.module:Class"):
        check_hook_spec({"type": "rlgraph.execution.hooks.EpisodeReturnsHook"}, "test")
    with pytest.raises(RLGraphSpecError, match="cannot import the hook's module"):
        load_hook("rlgraph_no_such_module_xyz:Hook", "--hook", from_config=False)
    with pytest.raises(RLGraphSpecError, match="not a Hook"):
        load_hook("collections:OrderedDict", "--hook", from_config=False)
    with pytest.raises(RLGraphSpecError, match=r"the hook is not a class"):
        load_hook("os:system", "training_spec.hooks[0]", from_config=True)
    with pytest.raises(RLGraphSpecError, match="no such attribute"):
        load_hook("rlgraph.execution.hooks:Missing", "--hook", from_config=False)
    with pytest.raises(RLGraphSpecError, match="refused the arguments"):
        load_hook({"type": "rlgraph.execution.hooks:EpisodeReturnsHook", "x": 1}, "--hook", from_config=False)
    assert isinstance(load_hook("rlgraph.execution.hooks:EpisodeReturnsHook", "c", from_config=True),
                      EpisodeReturnsHook)
    # A module file next to a config (here on sys.path, not installed, not imported) is never imported for it.
    name = "rlgraph_test_sent_hooks"
    (tmp_path / f"{name}.py").write_text(HOOK_SOURCE + "\nIMPORTED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RLGraphSpecError, match="must come from an installed package"):
        load_hook(f"{name}:Recorder", "training_spec.hooks[0]", from_config=True)
    assert name not in sys.modules
    with pytest.raises(RLGraphSpecError, match="not a Hook"):
        load_hook(f"{name}:NotAHook", "--hook", from_config=False)  # The command line may import it.
    monkeypatch.delitem(sys.modules, name)


def test_config_hooks_and_loggers_are_checked(tmp_path, capsys, monkeypatch):
    def spec(**values):
        return check_training_spec(dict(TRAINING_SPEC_DEFAULTS, **values))
    assert spec(hooks=[{"type": "a.b:C", "n": 1}])["hooks"] == [{"type": "a.b:C", "n": 1}]
    with pytest.raises(RLGraphSpecError, match="training_spec.hooks must be a list"):
        spec(hooks="a.b:C")
    with pytest.raises(RLGraphSpecError, match=r"training_spec.hooks\[1\]"):
        spec(hooks=["a.b:C", "a/b.py:C"])
    with pytest.raises(RLGraphSpecError, match="unknown logger"):
        spec(loggers=[{"type": "tensorboard"}])
    with pytest.raises(RLGraphSpecError, match="needs 'project'"):
        spec(loggers=[{"type": "wandb"}])
    with pytest.raises(RLGraphSpecError, match="training_spec.record_video_every"):
        spec(record_video_every=-5)
    name = "rlgraph_test_config_hooks"
    (tmp_path / f"{name}.py").write_text(HOOK_SOURCE)
    monkeypatch.syspath_prepend(str(tmp_path))
    config = _tiny_config(tmp_path, hooks=[f"{name}:Recorder"])
    assert main(["train", str(config), "--backend", "pytorch", "--steps", "5", "--no-progress",
                 "--output-dir", str(tmp_path / "run")]) == 2
    assert "must come from an installed package" in capsys.readouterr().err and name not in sys.modules


# --- Loggers ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind, argument", [("wandb", "project"), ("mlflow", "experiment")])
def test_a_logger_without_its_package_names_the_extra(kind, argument, monkeypatch):
    monkeypatch.setitem(sys.modules, kind, None)  # Makes `import wandb` fail.
    with pytest.raises(RLGraphMissingDependencyError, match=re.escape(f'.[{kind}]')) as error:
        make_logger({"type": kind, argument: "x"})
    assert error.value.package == kind


def test_loggers_log_the_tensorboard_scalars(run):
    tensorboard = read_scalars(run["dir"] / "tensorboard")
    wandb_run = run["wandb"].runs[0]
    assert wandb_run.init_kwargs["project"] == "proj" and wandb_run.init_kwargs["config"] == run["config"]
    assert wandb_run.finished == 1
    for logged in (wandb_run.logged, run["mlflow"].metrics):
        by_tag = {}
        for step, scalars in logged:
            for tag, value in scalars.items():
                by_tag.setdefault(tag, []).append((step, pytest.approx(value, rel=1e-6, abs=1e-6)))
        assert by_tag == tensorboard
    calls = [name for name, _, _ in run["mlflow"].calls]
    assert calls == ["set_experiment", "start_run", "log_dict", "end_run"]
    assert run["mlflow"].calls[0][1] == ("exp",)
