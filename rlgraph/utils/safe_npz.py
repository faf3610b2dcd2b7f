""".npz files read from bytes, with every array's size bounded before anything is decompressed.

`np.load` inflates a member before anyone can look at it: a 2 MB file whose member expands to
2 GiB costs 2 GiB of RAM and seconds of CPU before its shape can be refused. `read_npz_bytes`
reads each member's .npy header first (a few hundred bytes of the stream), compares its shape and
dtype with what the caller expects, checks the zip's declared uncompressed size against them and
only then reads exactly that many bytes. Nothing is unpickled: an object dtype is an error.

A caller's expectation maps member names to `ArraySpec`s: a shape whose entries are ints (exact)
or None (any length; then the reader's `max_bytes` bounds the total), optionally ending in
`...` (any trailing dimensions), and the dtype kinds allowed. Members the caller does not expect
are refused.
"""
from __future__ import annotations

import io
import zipfile
from typing import Dict, NamedTuple, Optional, Tuple

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError

# Largest .npy header numpy writes for the arrays of a checkpoint (numpy's own default limit).
MAX_HEADER_BYTES = 10000
# Largest element of a text array ('U'/'S' dtypes have no size of their own).
MAX_TEXT_ITEM_BYTES = 1 << 16


class ArraySpec(NamedTuple):
    """What one npz member may be.

    Attributes:
        shape: Exact dimensions (ints), free ones (None), or a prefix ending in `...`.
        kinds: The allowed numpy dtype kinds, e.g. "f", "iu", "US".
        dtype: An exact dtype the member must have (None: any of `kinds`).
        mismatch: What the error says when the member does not fit (e.g. "made for another action
            space"); None: that the member is missing or damaged.
    """
    shape: Tuple
    kinds: str
    dtype: Optional[np.dtype] = None
    mismatch: Optional[str] = None


def read_npz_bytes(data: bytes, name: str, where: str, expected: Dict[str, ArraySpec],
                   max_bytes: Optional[int] = None, prefixed: Optional[Dict[str, ArraySpec]] = None
                   ) -> Dict[str, np.ndarray]:
    """The arrays of an .npz file held in `data`, each checked against `expected` before it is read.

    Args:
        data: The file's bytes.
        name: The file's name (for error messages).
        where: Who reads (for error messages).
        expected: Member name (without ".npy") -> its `ArraySpec`; other members are refused.
        max_bytes: Bound on the arrays' total bytes (needed where a spec has free dimensions:
            without it, such members must be stored uncompressed, so the file's own size bounds them).
        prefixed: Name prefix -> the `ArraySpec` of members whose names start with it (and that
            `expected` does not name).

    Returns:
        Member name -> array (writable).

    Raises:
        RLGraphCheckpointError: An unreadable file, an unexpected member, a shape or dtype other than
            expected, declared sizes that do not match the header, or more bytes than allowed.
    """
    def fail(message: str, expected_text=None, received=None) -> None:
        raise RLGraphCheckpointError(f"'{name}': {message}", where=where, expected=expected_text, received=received)

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as error:
        fail(f"not a readable .npz file ({type(error).__name__}: {error})")
    names = [info.filename for info in members]
    if len(set(names)) != len(names):
        fail("the archive lists a member twice", received=sorted(n for n in set(names) if names.count(n) > 1)[:5])
    total = 0
    arrays = {}
    for info in members:
        key = info.filename[:-4] if info.filename.endswith(".npy") else None
        spec = expected.get(key) if key is not None else None
        if spec is None and key is not None:
            spec = next((s for prefix, s in (prefixed or {}).items() if key.startswith(prefix)), None)
        if spec is None:
            fail(f"unexpected member '{info.filename[:200]}'", expected_text=sorted(expected)[:20])
        free = any(d is None or d is Ellipsis for d in spec.shape)
        if free and max_bytes is None and info.compress_type != zipfile.ZIP_STORED:
            fail(f"member '{key}' of free shape is compressed", expected_text="an uncompressed member (np.savez)")
        if max_bytes is not None and info.file_size > max_bytes + MAX_HEADER_BYTES:
            fail(f"member '{key}' declares more bytes than allowed", expected_text=f"at most {max_bytes} bytes",
                 received=f"{info.file_size} bytes")
        try:
            with archive.open(info) as stream:
                shape, fortran, dtype, header = _read_header(stream)
                _check_spec(key, shape, dtype, spec, fail)
                nbytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if info.file_size != header + nbytes:
                    fail(f"member '{key}' declares another size than its header", expected_text=f"{header + nbytes} "
                         "bytes", received=f"{info.file_size} bytes")
                total += nbytes
                if max_bytes is not None and total > max_bytes:
                    fail("the arrays hold more bytes than allowed", expected_text=f"at most {max_bytes} bytes",
                         received=f"at least {total} bytes")
                buffer = bytearray(nbytes)
                if stream.readinto(memoryview(buffer)) != nbytes or stream.read(1):
                    fail(f"member '{key}' is truncated or too long")
        except RLGraphCheckpointError:
            raise
        except Exception as error:  # noqa: BLE001 - zlib, zipfile and numpy raise several types for damaged data.
            fail(f"member '{key}' is damaged ({type(error).__name__}: {error})")
        array = np.frombuffer(buffer, dtype=dtype)
        arrays[key] = array.reshape(shape[::-1]).T if fortran else array.reshape(shape)
    return arrays


def _read_header(stream) -> Tuple[Tuple[int, ...], bool, np.dtype, int]:
    """(shape, fortran order, dtype, header length) of the .npy stream at its start."""
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream, max_header_size=MAX_HEADER_BYTES)
    elif version in ((2, 0), (3, 0)):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream, max_header_size=MAX_HEADER_BYTES)
    else:
        raise ValueError(f"unknown .npy version {version}")
    header = stream.tell()
    return tuple(int(d) for d in shape), bool(fortran), np.dtype(dtype), header


def _check_spec(key: str, shape: Tuple[int, ...], dtype: np.dtype, spec: ArraySpec, fail) -> None:
    text = f"{shape} {dtype}"
    misfit = f"{spec.mismatch} (member '{key}'" if spec.mismatch else f"member '{key}' is missing or damaged: it " \
        "does not fit ("
    if dtype.hasobject or dtype.fields is not None or dtype.subdtype is not None:
        fail(f"member '{key}' holds python objects or records, which a checkpoint does not store", received=text)
    if dtype.kind not in spec.kinds or (spec.dtype is not None and dtype != np.dtype(spec.dtype)):
        fail(f"{misfit}another dtype)" if not spec.mismatch else f"{misfit}: another dtype)",
             expected_text=spec.dtype or f"kind in '{spec.kinds}'", received=text)
    if dtype.kind in "US" and dtype.itemsize > MAX_TEXT_ITEM_BYTES:
        fail(f"member '{key}' holds longer texts than allowed", expected_text=f"at most {MAX_TEXT_ITEM_BYTES} bytes "
             "per element", received=text)
    wanted = spec.shape
    if wanted and wanted[-1] is Ellipsis:
        fits = len(shape) >= len(wanted) - 1 and all(w is None or w == d for w, d in zip(wanted[:-1], shape))
    else:
        fits = len(shape) == len(wanted) and all(w is None or w == d for w, d in zip(wanted, shape))
    if not fits:
        fail(f"{misfit}another shape)" if not spec.mismatch else f"{misfit}: another shape)",
             expected_text=str(wanted).replace("Ellipsis", "..."), received=text)
