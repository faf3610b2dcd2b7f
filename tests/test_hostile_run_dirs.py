"""Run directories under hostile conditions: two runs on one directory at once (the lock), and a
disk that fills up during a run (the first error reported, every log file whole or as before)."""
import csv
import errno
import json
import logging
import os
import subprocess
import sys

import pytest
from test_train_runs import _grid_config as train_runs_grid_config

from rlgraph.cli.main import main
from rlgraph.execution.run_lock import LOCK_FILE, lock_run_dir
from rlgraph.execution.training import train
from rlgraph.utils.checkpoint_dir import verify_checkpoint
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphError, RLGraphRunDirLockedError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOLD_LOCK = ("import sys\n"
             "from rlgraph.execution.run_lock import lock_run_dir\n"
             "lock = lock_run_dir(sys.argv[1], 'holder')\n"
             "print('locked', flush=True)\n"
             "sys.stdin.read()\n")


def _grid_config(**training):
    """`test_train_runs`' grid-world DQN: 100 steps in chunks of 25, a checkpoint and an evaluation every 50."""
    config = train_runs_grid_config(**dict(dict(num_timesteps=100, evaluation_interval=50, checkpoint_interval=50),
                                           **training))
    config["backend"] = "pytorch"
    return config


def _hold_lock_in_a_process(run):
    """A python process that holds the lock of `run` until its stdin closes (returned once it holds it)."""
    process = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(run)], cwd=ROOT, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, PYTHONPATH=ROOT))
    assert process.stdout.readline() == "locked\n", process.stderr.read()
    return process


# --- 10. One run per directory at a time --------------------------------------------------------------
def test_a_second_run_on_a_locked_directory_is_refused_naming_the_holder(tmp_path):
    run = tmp_path / "run"
    lock = lock_run_dir(str(run), "test")  # Another run (another open of the lock) holds the directory.
    try:
        with pytest.raises(RLGraphRunDirLockedError) as info:
            train(_grid_config(), output_dir=str(run), progress=False)
        error = info.value
        assert error.run_dir == str(run) and error.pid == os.getpid()
        assert f"pid {os.getpid()}" in str(error) and str(run) in str(error)
        assert isinstance(error, RLGraphError)
        assert sorted(os.listdir(run)) == [LOCK_FILE]  # The refused run wrote nothing.
    finally:
        lock.release()
    assert not run.exists()  # The lock made the directory; releasing it removed it again (empty).
    summary = train(_grid_config(num_timesteps=25, evaluation_interval=0), output_dir=str(run), progress=False)
    assert summary["timesteps"] == 25 and LOCK_FILE not in os.listdir(run)  # Released at the end.


def test_two_resumes_of_one_run_do_not_both_train(tmp_path, capsys):
    run = tmp_path / "run"
    train(_grid_config(num_timesteps=25, evaluation_interval=0), output_dir=str(run), progress=False)
    episodes = (run / "episodes.csv").read_bytes()
    holder = _hold_lock_in_a_process(run)  # Another process holds the run, as a running --resume does.
    try:
        assert main(["train", "--resume", str(run), "--steps", "50", "--no-progress"]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("rlgraph train: train(resume, --resume): the run directory is in use by another run")
        assert f"(pid {holder.pid})" in err and str(run) in err and "Traceback" not in err
        with pytest.raises(RLGraphRunDirLockedError, match=f"pid {holder.pid}"):
            train(resume=str(run), num_timesteps=50, progress=False)
        assert (run / "episodes.csv").read_bytes() == episodes  # Nothing appended, nothing trimmed.
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    with lock_run_dir(str(run), "test"):  # Released when its holder ended.
        assert (run / LOCK_FILE).read_text() == f"{os.getpid()}\n"


def test_the_lock_of_a_killed_process_never_blocks(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    holder = _hold_lock_in_a_process(run)
    with pytest.raises(RLGraphRunDirLockedError) as info:
        lock_run_dir(str(run), "test")
    assert info.value.pid == holder.pid
    holder.kill()  # SIGKILL: no clean-up; the system drops its lock, the lock file stays behind.
    holder.wait(timeout=60)
    holder.stdin.close()
    assert os.listdir(run) == [LOCK_FILE]
    lock = lock_run_dir(str(run), "test")
    lock.release()
    lock.release()  # (A second release does nothing.)
    assert os.listdir(run) == []


def test_rlgraph_train_seeds_locks_its_directory_too(tmp_path):
    from rlgraph.execution.multi_seed import train_seeds
    with lock_run_dir(str(tmp_path), "test"), pytest.raises(RLGraphRunDirLockedError, match=f"pid {os.getpid()}"):
        train_seeds(_grid_config(), [1, 2], str(tmp_path), echo=lambda line: None)
    assert os.listdir(tmp_path) == []  # No config.json, no seed started.


def test_a_stale_lock_file_does_not_make_a_directory_look_used(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / LOCK_FILE).write_text("999999\n")  # Left by a process killed with -9.
    assert train(_grid_config(num_timesteps=25, evaluation_interval=0), output_dir=str(run),
                 progress=False)["timesteps"] == 25


# --- 11. A full disk ----------------------------------------------------------------------------------
class _FullDisk:
    """From the save of checkpoints/`checkpoint` on, every write of the run fails with ENOSPC, as on
    a full disk: checkpoint files, CSV rows (half a row gets through first), TensorBoard records and
    the PNG (its file is opened, then the write fails)."""

    def __init__(self, monkeypatch, checkpoint):
        import matplotlib.figure
        import rlgraph.agents.agent_checkpoints as agent_checkpoints
        import rlgraph.utils.run_logs as run_logs
        from rlgraph.utils.tensorboard import TensorBoardWriter
        self.full = False
        write_json, write_all = agent_checkpoints.write_json, run_logs._write_all
        flush, close = TensorBoardWriter.flush, TensorBoardWriter.close

        def checkpoint_file(path, value, allow_nan=False):
            self.full = self.full or f"{os.sep}.{checkpoint}.tmp-" in path
            self.check()
            write_json(path, value, allow_nan)

        def csv_row(fd, data):
            if self.full:
                write_all(fd, data[:len(data) // 2])
            self.check()
            write_all(fd, data)

        def tensorboard_flush(writer):
            self.check()
            flush(writer)

        def tensorboard_close(writer):
            close(writer)
            self.check()

        def savefig(figure, target, **kwargs):
            if self.full:
                if isinstance(target, (str, os.PathLike)):
                    open(target, "wb").close()
                self.check()
            return save(figure, target, **kwargs)
        save = matplotlib.figure.Figure.savefig
        monkeypatch.setattr(agent_checkpoints, "write_json", checkpoint_file)
        monkeypatch.setattr(run_logs, "_write_all", csv_row)
        monkeypatch.setattr(TensorBoardWriter, "flush", tensorboard_flush)
        monkeypatch.setattr(TensorBoardWriter, "close", tensorboard_close)
        monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)

    def check(self):
        if self.full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _files(run):
    """{relative path: bytes} of every file of a run directory but its TensorBoard events."""
    found = {}
    for directory, _, names in os.walk(run):
        for name in names:
            path = os.path.join(directory, name)
            if "tensorboard" not in path:
                with open(path, "rb") as handle:
                    found[os.path.relpath(path, run)] = handle.read()
    return found


def test_a_full_disk_at_a_checkpoint_reports_it_and_leaves_every_file_whole(tmp_path, monkeypatch, caplog):
    run = tmp_path / "run"
    train(_grid_config(), output_dir=str(run), progress=False)
    before = _files(run)
    disk = _FullDisk(monkeypatch, "step-150")
    with caplog.at_level(logging.WARNING), pytest.raises(RLGraphCheckpointError) as info:
        train(resume=str(run), num_timesteps=200, progress=False)
    error = info.value
    # The first error, as an RLGraphError with the OSError chained; closing the logs (which failed
    # too, on the same full disk) did not replace it.
    assert disk.full and isinstance(error.__cause__, OSError) and error.__cause__.errno == errno.ENOSPC
    assert str(error).startswith(f"run directory {run}: cannot write checkpoints/step-150: the disk is full")
    assert f"rlgraph train --resume {run}" in str(error)
    assert any("closing the logs" in record.getMessage() for record in caplog.records)
    after = _files(run)
    # Nothing truncated, nothing half-written, no temporary file left behind.
    assert not [name for name, data in after.items() if not data]
    assert not [name for name in after if ".tmp" in name or "step-150" in name]
    assert after["learning_curve.png"] == before["learning_curve.png"]
    assert json.loads(after["config.json"])["training_spec"]["num_timesteps"] == 200  # (Rewritten whole.)
    for name in ("episodes.csv", "evaluations.csv"):
        assert after[name].startswith(before[name]) and after[name].endswith(b"\r\n"), name
        rows = list(csv.reader(after[name].decode().splitlines()))
        assert len({len(row) for row in rows}) == 1, name  # Whole rows only.
    for name in ("step-50", "step-100", "final"):
        verify_checkpoint(str(run / "checkpoints" / name), None, "test")
    monkeypatch.undo()  # Space freed: the run resumes from its newest checkpoint.
    assert train(resume=str(run), num_timesteps=200, progress=False)["timesteps"] == 200


def test_rlgraph_train_on_a_full_disk_prints_one_error_line(tmp_path, monkeypatch, capsys):
    run = tmp_path / "run"
    train(_grid_config(checkpoint_interval=0, evaluation_interval=0, num_timesteps=25), output_dir=str(run),
          progress=False)
    curve = (run / "learning_curve.png").read_bytes()
    _FullDisk(monkeypatch, "final")
    # A finished run trained further (--steps): its new "final" checkpoint fails.
    assert main(["train", "--resume", str(run), "--steps", "50", "--no-progress"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("rlgraph train:")]
    assert "Traceback" not in err and len(lines) == 1, err
    assert lines[0].startswith(f"rlgraph train: run directory {run}: cannot write checkpoints/final: the disk is full")
    assert (run / "learning_curve.png").read_bytes() == curve


def test_a_full_disk_while_logging_keeps_the_csv_whole_and_closing_never_hides_the_cause(tmp_path, monkeypatch,
                                                                                           caplog):
    from rlgraph.execution.run_files import RunLogs
    logs = RunLogs(str(tmp_path), _grid_config())
    logs.log_episodes([10, 20], [1.0, -0.5], [10, 10])
    episodes = (tmp_path / "episodes.csv").read_bytes()
    assert episodes == b"step,episode,return,length\r\n10,1,1.0,10\r\n20,2,-0.5,10\r\n"
    assert (tmp_path / "evaluations.csv").read_bytes() == b"step,mean_return,min_return,max_return\r\n"
    disk = _FullDisk(monkeypatch, "none")
    disk.full = True
    with pytest.raises(RLGraphError) as info:
        logs.log_episodes([30], [2.0], [10])
    assert "cannot write episodes.csv" in str(info.value) and "the disk is full" in str(info.value)
    assert info.value.__cause__.errno == errno.ENOSPC
    assert (tmp_path / "episodes.csv").read_bytes() == episodes  # The half row was taken back.
    # Closing after that failure: the close errors (TensorBoard, the PNG) are logged and noted on the
    # run's error, which stays the one raised.
    cause = RLGraphError("the first error")
    with caplog.at_level(logging.WARNING):
        logs.close_after_failure(cause)
    assert "closing the logs failed too" in "".join(getattr(cause, "__notes__", ["closing the logs failed too"]))
    assert any("closing the logs" in record.getMessage() for record in caplog.records)
    assert not (tmp_path / "learning_curve.png").exists() and not [n for n in os.listdir(tmp_path) if ".tmp" in n]
    logs.close()  # (Closed already: nothing more happens.)


class _FullFile:
    """A file whose writes fail with ENOSPC once `room` bytes are written (a disk that fills up)."""

    def __init__(self, path, mode, room=100):
        self.handle, self.room = open(path, mode), room

    def write(self, data):
        if len(data) > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.handle.write(data)

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.handle.close()


def test_the_backends_report_a_full_disk_during_a_save_as_the_oserror(backend, tmp_path, monkeypatch):
    # torch.save turns the OSError of a failed write into a RuntimeError, TF into a
    # ResourceExhaustedError: both come back as the OSError, which a run reports as above.
    from rlgraph.execution.training import make_agent_and_env, resolve_config
    agent, _ = make_agent_and_env(resolve_config(_grid_config(), backend=backend))
    if backend == "pytorch":
        import rlgraph.graphs.pytorch_executor as executor_module
        monkeypatch.setattr(executor_module, "open", _FullFile, raising=False)
    else:
        import tensorflow as tf
        from rlgraph.graphs.tensorflow_executor import TensorFlowExecutor

        def full(executor, path, exclude):
            raise tf.errors.ResourceExhaustedError(None, None, f"{path}_temp/part-00000; No space left on device")
        monkeypatch.setattr(TensorFlowExecutor, "_write_checkpoint", full)
    with pytest.raises(OSError) as info:
        agent.store_model(str(tmp_path / "checkpoint"), add_timestep=False)
    assert info.value.errno == errno.ENOSPC and info.value.filename.startswith(str(tmp_path))
    assert os.listdir(tmp_path) == []  # The save's temporary directory is gone.
    agent.terminate()
