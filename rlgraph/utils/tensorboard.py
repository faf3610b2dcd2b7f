"""A TensorBoard event-file writer for scalars, in pure Python (no TensorFlow, PyTorch or protobuf).

TensorBoard reads `events.out.tfevents.*` files: a sequence of TFRecords, each holding one
serialized `Event` protocol buffer. Only the few fields a scalar summary needs are encoded here,
by hand, in protobuf wire format:

    Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5;
              SessionLog session_log = 7; }
    Summary { repeated Value value = 1; }
    Value   { string tag = 1; float simple_value = 2; }
    SessionLog { SessionStatus status = 1; }  (START = 1)

A TFRecord is `uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)`,
all little-endian, where CRC32C is the Castagnoli CRC (https://tools.ietf.org/html/rfc3720#appendix-B.4).

>>> import tempfile
>>> with TensorBoardWriter(tempfile.mkdtemp()) as writer:
...     writer.add_scalar("episode_return", 12.5, step=100)
...     writer.add_scalars({"loss": 0.25, "epsilon": 0.1}, step=100)
"""
from __future__ import annotations

import math
import numbers
import os
import socket
import struct
import time
from typing import Dict, List, Mapping, Optional

from rlgraph.utils.rlgraph_errors import RLGraphError

FILE_VERSION = "brain.Event:2"

_CRC32C_POLY = 0x82F63B78  # Castagnoli polynomial 0x1EDC6F41, bit-reversed.
_MASK_DELTA = 0xA282EAD8
_UINT32 = 0xFFFFFFFF
_UINT64 = 0xFFFFFFFFFFFFFFFF


def _crc32c_table() -> List[int]:
    table = []
    for byte in range(256):
        crc = byte
        for _ in range(8):
            crc = (crc >> 1) ^ _CRC32C_POLY if crc & 1 else crc >> 1
        table.append(crc)
    return table


_CRC32C_TABLE = _crc32c_table()


def crc32c(data: bytes, crc: int = 0) -> int:
    """The CRC32C (Castagnoli) checksum of `data`.

    Args:
        data: The bytes to checksum.
        crc: A previous checksum to continue from (for data arriving in pieces).

    Returns:
        The checksum as an unsigned 32-bit int; `crc32c(b"123456789") == 0xE3069283`.
    """
    crc ^= _UINT32
    table = _CRC32C_TABLE
    for byte in data:
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ _UINT32


def masked_crc32c(data: bytes) -> int:
    """The CRC32C of `data`, rotated right by 15 bits plus a constant, as TFRecord stores it.

    Masking keeps a CRC of data that itself contains CRCs from being trivially predictable.
    """
    crc = crc32c(data)
    return ((((crc >> 15) | (crc << 17)) & _UINT32) + _MASK_DELTA) & _UINT32


def tfrecord(data: bytes) -> bytes:
    """Frames `data` as one TFRecord (length, masked CRC of length, data, masked CRC of data)."""
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked_crc32c(length)) + data + struct.pack("<I", masked_crc32c(data))


# --- Protobuf wire format ------------------------------------------------------------------------
_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


def _varint(value: int) -> bytes:
    value &= _UINT64  # Negative int64 values are sent as their 64-bit two's complement.
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _key(field: int, wire_type: int) -> bytes:
    return _varint((field << 3) | wire_type)


def _length_delimited(field: int, payload: bytes) -> bytes:
    return _key(field, _BYTES) + _varint(len(payload)) + payload


def encode_event(wall_time: float, step: int = 0, file_version: Optional[str] = None,
                 scalars: Optional[Mapping[str, float]] = None, session_start: bool = False) -> bytes:
    """Serializes an `Event` proto with an optional file version and scalar summary values.

    Args:
        wall_time: Seconds since the epoch.
        step: The global step (int64).
        file_version: Set only on the first event of a file ("brain.Event:2").
        scalars: Tag -> value; each becomes one `Summary.Value` with a `simple_value` (float32).
        session_start: A `SessionLog` START event (see `TensorBoardWriter.add_session_start`).

    Returns:
        The serialized proto.
    """
    out = _key(1, _FIXED64) + struct.pack("<d", wall_time)
    if step:
        out += _key(2, _VARINT) + _varint(step)
    if file_version is not None:
        out += _length_delimited(3, file_version.encode("utf-8"))
    if scalars:
        summary = b""
        for tag, value in scalars.items():
            entry = _length_delimited(1, tag.encode("utf-8")) + _key(2, _FIXED32) + struct.pack("<f", value)
            summary += _length_delimited(1, entry)
        out += _length_delimited(5, summary)
    if session_start:
        out += _length_delimited(7, _key(1, _VARINT) + _varint(1))
    return out


# --- The writer ----------------------------------------------------------------------------------
def _check_step(step, where: str) -> int:
    if isinstance(step, bool) or not isinstance(step, numbers.Integral):
        raise RLGraphError("the step must be an integer", where=where, expected="int",
                           received=f"{step!r} ({type(step).__name__})")
    return int(step)


def _check_scalar(tag, value, where: str) -> float:
    if not isinstance(tag, str) or not tag:
        raise RLGraphError("a summary tag must be a non-empty string", where=where, expected="str",
                           received=repr(tag))
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = None
    if number is None or isinstance(value, (str, bytes)):
        raise RLGraphError(f"the value of tag '{tag}' is not a scalar number", where=where,
                           expected="a float, int or numpy scalar", received=f"{value!r}"[:80],
                           hint="log arrays as several tags or reduce them (mean, max) first.")
    if math.isfinite(number) and abs(number) > 3.4028234663852886e38:
        number = math.copysign(math.inf, number)  # Beyond float32; struct.pack would refuse it.
    return number


class TensorBoardWriter:
    """Writes scalar summaries to a TensorBoard event file in `logdir`.

    The file is `events.out.tfevents.<unix time>.<host>` (with `.1`, `.2`, ... appended if that
    name is taken). Records are buffered; call `flush()` to make them visible to TensorBoard, or
    use the writer as a context manager, which closes (and so flushes) it.

    Args:
        logdir: The directory for the event file; created if missing.
        filename_suffix: Appended to the file name (e.g. ".train").
    """

    def __init__(self, logdir: str, filename_suffix: str = ""):
        self.logdir = os.fspath(logdir)
        try:
            os.makedirs(self.logdir, exist_ok=True)
        except OSError as error:
            raise RLGraphError(f"cannot create the log directory: {error}", where="TensorBoardWriter(logdir)",
                               received=repr(self.logdir)) from error
        base = os.path.join(self.logdir, f"events.out.tfevents.{int(time.time())}.{socket.gethostname()}")
        self.path, self._file, counter = None, None, 0
        while self._file is None:
            path = base + (f".{counter}" if counter else "") + filename_suffix
            try:
                self._file = open(path, "xb")
                self.path = path
            except FileExistsError:
                counter += 1
        self._write(encode_event(time.time(), file_version=FILE_VERSION))

    @property
    def closed(self) -> bool:
        """Whether `close()` was called."""
        return self._file is None or self._file.closed

    def _write(self, event: bytes):
        if self.closed:
            raise RLGraphError("the writer is closed", where=f"TensorBoardWriter({self.logdir!r})",
                               hint="create a new TensorBoardWriter to log more.")
        self._file.write(tfrecord(event))

    def add_scalar(self, tag: str, value: float, step: int, wall_time: Optional[float] = None):
        """Logs one scalar.

        Args:
            tag: The series name (e.g. "train/episode_return"); "/" groups series in TensorBoard.
            value: A number (stored as float32, as TensorBoard does).
            step: The x-axis position (e.g. environment steps).
            wall_time: Seconds since the epoch (default: now).

        Raises:
            RLGraphError: If `tag`, `value` or `step` has the wrong type.
        """
        self.add_scalars({tag: value}, step, wall_time=wall_time)

    def add_scalars(self, scalars: Mapping[str, float], step: int, wall_time: Optional[float] = None):
        """Logs several scalars at the same step, as one event.

        Args:
            scalars: Tag -> number.
            step: The x-axis position.
            wall_time: Seconds since the epoch (default: now).

        Raises:
            RLGraphError: If `scalars` is not a mapping or a tag, value or `step` has the wrong type.
        """
        where = "TensorBoardWriter.add_scalars"
        if not isinstance(scalars, Mapping):
            raise RLGraphError("scalars must be a mapping from tag to number", where=where, expected="dict",
                               received=type(scalars).__name__)
        step = _check_step(step, where)
        values: Dict[str, float] = {tag: _check_scalar(tag, value, where) for tag, value in scalars.items()}
        if values:
            self._write(encode_event(time.time() if wall_time is None else float(wall_time), step=step,
                                     scalars=values))

    def add_session_start(self, step: int, wall_time: Optional[float] = None):
        """Marks a restart at `step` (a resumed run): TensorBoard's event loader then drops the
        points of earlier files at `step` and later, which the interrupted process wrote after
        the checkpoint the run resumed from."""
        step = _check_step(step, "TensorBoardWriter.add_session_start")
        self._write(encode_event(time.time() if wall_time is None else float(wall_time), step=step,
                                 session_start=True))

    def flush(self):
        """Writes buffered records to disk."""
        if not self.closed:
            self._file.flush()

    def close(self):
        """Flushes and closes the file; further calls do nothing."""
        if not self.closed:
            self._file.close()

    def __enter__(self) -> "TensorBoardWriter":
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # Interpreter shutdown: nothing sensible left to do.
            pass
