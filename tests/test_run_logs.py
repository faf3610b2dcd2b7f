"""Run logs: the pure-python TensorBoard writer (CRC32C, TFRecord framing, Event protos read back by
TensorFlow), the CSV logger and reader, and the learning-curve PNG."""
import math
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rlgraph.utils.rlgraph_errors import RLGraphError
from rlgraph.utils.run_logs import CSVLogger, moving_average, plot_learning_curve, read_csv
from rlgraph.utils.tensorboard import FILE_VERSION, TensorBoardWriter, crc32c, encode_event, masked_crc32c


# --- CRC32C and framing ----------------------------------------------------------------------------
@pytest.mark.parametrize("data, expected", [
    (b"", 0x00000000),
    (b"123456789", 0xE3069283),           # The standard check value of CRC-32C.
    (bytes(32), 0x8A9136AA),              # RFC 3720, B.4: 32 bytes of zeros.
    (b"\xff" * 32, 0x62A8AB43),           # ... 32 bytes of 0xFF.
    (bytes(range(32)), 0x46DD794E),       # ... 32 incrementing bytes.
    (bytes(range(31, -1, -1)), 0x113FDB5C),  # ... 32 decrementing bytes.
], ids=["empty", "check", "zeros", "ones", "incrementing", "decrementing"])
def test_crc32c_known_vectors(data, expected):
    assert crc32c(data) == expected


def test_crc32c_continues_and_masks():
    assert crc32c(b"6789", crc32c(b"12345")) == 0xE3069283
    crc = 0xE3069283
    assert masked_crc32c(b"123456789") == ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def test_event_encoding_by_hand():
    # wall_time 1.0 (field 1, fixed64), step 300 = varint ac 02 (field 2), summary (field 5) holding
    # value (field 1) = {tag "a" (field 1), simple_value 0.5 (field 2, fixed32)}.
    event = encode_event(1.0, step=300, scalars={"a": 0.5})
    assert event == (b"\x09" + struct.pack("<d", 1.0) + b"\x10\xac\x02"
                     + b"\x2a\x0a" + b"\x0a\x08" + b"\x0a\x01a" + b"\x15" + struct.pack("<f", 0.5))
    assert encode_event(2.0, file_version=FILE_VERSION)[9:] == b"\x1a\x0d" + FILE_VERSION.encode()
    # A negative int64 is ten varint bytes of its two's complement.
    assert encode_event(0.0, step=-1)[9:] == b"\x10" + b"\xff" * 9 + b"\x01"


def _records(path):
    """Splits an event file into record payloads, checking both masked CRCs of each."""
    data, records, offset = Path(path).read_bytes(), [], 0
    while offset < len(data):
        header = data[offset:offset + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[offset + 8:offset + 12])[0] == masked_crc32c(header)
        payload = data[offset + 12:offset + 12 + length]
        assert struct.unpack("<I", data[offset + 12 + length:offset + 16 + length])[0] == masked_crc32c(payload)
        records.append(payload)
        offset += 16 + length
    return records


def _write_run(logdir):
    with TensorBoardWriter(str(logdir)) as writer:
        writer.add_scalar("train/return", 1.5, step=0, wall_time=100.0)
        writer.add_scalar("train/return", -2.25, step=10)
        writer.add_scalars({"loss": 0.125, "epsilon": np.float32(0.5), "episodes": np.int64(3)}, step=2 ** 40)
        writer.flush()
    return writer.path


def test_writer_file_name_and_framing(tmp_path):
    path = _write_run(tmp_path / "tb")
    name = os.path.basename(path)
    assert name.startswith("events.out.tfevents.") and os.path.dirname(path) == str(tmp_path / "tb")
    records = _records(path)
    assert len(records) == 4 and records[0][9:] == b"\x1a\x0d" + FILE_VERSION.encode()
    assert records[1] == encode_event(100.0, step=0, scalars={"train/return": 1.5})
    # A second writer in the same second gets its own file.
    second = TensorBoardWriter(str(tmp_path / "tb"))
    second.close()
    assert second.path != path and len(os.listdir(tmp_path / "tb")) == 2


def test_tensorflow_reads_the_events(tmp_path):
    tf = pytest.importorskip("tensorflow", reason="TensorFlow parses the event file as TensorBoard would")
    path = _write_run(tmp_path)
    events = list(tf.compat.v1.train.summary_iterator(path))
    assert events[0].file_version == "brain.Event:2"
    scalars = [(event.step, value.tag, value.simple_value) for event in events[1:] for value in event.summary.value]
    assert scalars == [(0, "train/return", 1.5), (10, "train/return", -2.25), (2 ** 40, "loss", 0.125),
                       (2 ** 40, "epsilon", 0.5), (2 ** 40, "episodes", 3.0)]
    assert events[1].wall_time == 100.0 and events[2].wall_time > 1e9


def test_tensorboard_drops_the_points_after_a_resumed_runs_restart_marker(tmp_path):
    accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator",
                                      reason="TensorBoard (in the test extra) loads the files")
    # The interrupted process wrote points up to step 90; the run resumed from its checkpoint at step 50.
    with TensorBoardWriter(str(tmp_path)) as writer:
        for step in range(0, 100, 10):
            writer.add_scalar("x", float(step), step, wall_time=100.0 + step)
    with TensorBoardWriter(str(tmp_path), filename_suffix=".resumed") as writer:
        writer.add_session_start(51, wall_time=500.0)
        for step in (51, 61):
            writer.add_scalar("x", 1000.0 + step, step, wall_time=500.0 + step)
    loaded = accumulator.EventAccumulator(str(tmp_path), purge_orphaned_data=True)
    loaded.Reload()
    assert [(e.step, e.value) for e in loaded.Scalars("x")] == [
        (0, 0.0), (10, 10.0), (20, 20.0), (30, 30.0), (40, 40.0), (50, 50.0), (51, 1051.0), (61, 1061.0)]


def test_writer_errors(tmp_path):
    with TensorBoardWriter(str(tmp_path)) as writer:
        with pytest.raises(RLGraphError, match="step must be an integer"):
            writer.add_scalar("a", 1.0, step=1.5)
        with pytest.raises(RLGraphError, match="'a' is not a scalar number"):
            writer.add_scalar("a", [1.0, 2.0], step=1)
        with pytest.raises(RLGraphError, match="non-empty string"):
            writer.add_scalar("", 1.0, step=1)
        writer.add_scalar("big", 1e300, step=1)  # Beyond float32: stored as +inf, not an error.
    assert math.isinf(struct.unpack("<f", _records(writer.path)[-1][-4:])[0])
    with pytest.raises(RLGraphError, match="closed"):
        writer.add_scalar("a", 1.0, step=2)


def test_tensorboard_module_imports_no_backend():
    code = ("import sys, rlgraph.utils.run_logs, rlgraph.utils.tensorboard\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('tensorflow', 'torch', 'google', 'matplotlib')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


# --- CSV -------------------------------------------------------------------------------------------
def test_csv_logger_header_once_and_new_columns(tmp_path):
    path = tmp_path / "logs" / "progress.csv"
    with CSVLogger(str(path)) as log:
        log.log({"step": 10, "return": 1.5})
        assert path.read_text() == "step,return\n10,1.5\n"  # Flushed at once.
        log.log({"step": 20, "return": np.float64(2.0), "loss": 0.25})   # A new column widens the file.
        log.log({"step": 30})                                             # Missing keys stay empty.
    assert path.read_text() == "step,return,loss\n10,1.5,\n20,2.0,0.25\n30,,\n"
    assert read_csv(str(path)) == {"step": [10, 20, 30], "return": [1.5, 2.0, None], "loss": [None, 0.25, None]}


def test_csv_logger_resumes_and_keeps_fieldnames(tmp_path):
    path = str(tmp_path / "p.csv")
    with CSVLogger(path, fieldnames=["step", "return"]) as log:
        log.log({"return": 3, "step": 1})
    with CSVLogger(path, fieldnames=["step", "note"]) as log:  # Reopened: header kept, 'note' appended.
        log.log({"step": 2, "note": "a,b"})
    assert read_csv(path) == {"step": [1, 2], "return": [3, None], "note": [None, "a,b"]}
    with CSVLogger(path) as log, pytest.raises(RLGraphError, match="mapping"):
        log.log([1, 2])
    with pytest.raises(RLGraphError, match="duplicate"):
        CSVLogger(path, fieldnames=["a", "a"])
    with pytest.raises(RLGraphError, match="no such CSV file"):
        read_csv(str(tmp_path / "missing.csv"))


# --- Learning curve --------------------------------------------------------------------------------
def test_moving_average_by_hand():
    np.testing.assert_allclose(moving_average([1.0, 2.0, 3.0, 4.0, 5.0], 3), [1.0, 1.5, 2.0, 3.0, 4.0])
    assert moving_average([], 3).shape == (0,)


def _png_size(path):
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_plot_learning_curve_writes_png(tmp_path):
    pytest.importorskip("matplotlib", reason="plotting needs matplotlib")
    rng = np.random.RandomState(0)
    steps = np.cumsum(rng.randint(10, 30, size=40))
    path = plot_learning_curve(steps, rng.randn(40).cumsum(), str(tmp_path / "plots" / "curve.png"),
                               title="CartPole <DQN>", smoothing_window=5)
    assert _png_size(path) == (800, 450)  # figsize 8 x 4.5 inches at 100 dpi.
    empty = plot_learning_curve([], [], str(tmp_path / "empty.png"))  # No episodes yet: empty axes.
    assert _png_size(empty) == (800, 450)


def test_plot_learning_curve_errors(tmp_path, monkeypatch):
    with pytest.raises(RLGraphError, match="same length"):
        plot_learning_curve([1, 2], [1.0], str(tmp_path / "x.png"))
    with pytest.raises(RLGraphError, match="positive int"):
        plot_learning_curve([1], [1.0], str(tmp_path / "x.png"), smoothing_window=0)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # Makes `import matplotlib...` fail.
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends", None)
    monkeypatch.setitem(sys.modules, "matplotlib.backends.backend_agg", None)
    with pytest.raises(RLGraphError, match="pip install matplotlib"):
        plot_learning_curve([1], [1.0], str(tmp_path / "x.png"))
