"""Checkpoint directories: written atomically, described by one manifest, verified before use.

A checkpoint is a directory. `CheckpointWriter` builds it in a temporary sibling directory
(".<name>.tmp-<pid>-<token>"), writes `manifest.json` last (every file with its size and
SHA-256, the checkpoint's kind and step), syncs every file and directory to disk and only then
puts the directory in place: a plain rename for a new checkpoint, an atomic exchange
(`renameat2(RENAME_EXCHANGE)`) for one that replaces an older checkpoint. A process killed at any
moment leaves either the old checkpoint or the new one, never a mixture; the stale temporary
directory is removed by the next save to the same place.

`checkpoint_files.read_checkpoint` reads the manifest and every file it lists once, into memory,
and checks each (a regular file inside the directory, the listed size and digest) before a loader
parses anything, so a damaged file or one taken from another checkpoint is refused before the
agent changes; loaders parse those bytes and read nothing else.

Nothing here unpickles: manifests are JSON, read with a size limit.
"""
from __future__ import annotations

import ctypes
import errno
import hashlib
import json
import os
import secrets
import shutil
from typing import Any, Dict, Optional

from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError

MANIFEST = "manifest.json"
MANIFEST_FORMAT = "rlgraph-checkpoint"
MANIFEST_VERSION = 1
# JSON files of a checkpoint (manifest, agent state) are small; a larger one is not ours.
MAX_JSON_BYTES = 16 * 1024 * 1024
MAX_JSON_DEPTH = 32
_CHUNK = 1 << 20


def file_digest(path: str) -> str:
    """The SHA-256 hex digest of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def read_json(path: str, where: str, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """Reads a JSON file of at most `max_bytes` bytes.

    Raises:
        RLGraphCheckpointError: If it is missing, too large or not valid JSON.
    """
    try:
        size = os.path.getsize(path)
    except OSError as error:
        raise RLGraphCheckpointError(f"cannot read '{path}' ({error.strerror})", where=where) from None
    if size > max_bytes:
        raise RLGraphCheckpointError(f"'{path}' is too large to be an rlgraph checkpoint file", where=where,
                                     expected=f"at most {max_bytes} bytes", received=f"{size} bytes")
    try:
        with open(path, "r", encoding="utf-8") as handle:
            value = json.load(handle)
    except (OSError, ValueError, RecursionError) as error:
        raise RLGraphCheckpointError(f"cannot read '{path}' ({type(error).__name__}: {error})",
                                     where=where) from None
    check_json_depth(value, path, where)
    return value


def check_json_depth(value: Any, name: str, where: str) -> None:
    """Refuses JSON nested deeper than `MAX_JSON_DEPTH` levels (checkpoint JSON is shallow; deep
    nesting would only feed recursion later)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise RLGraphCheckpointError(f"'{name}' nests deeper than an rlgraph checkpoint file", where=where,
                                         expected=f"at most {MAX_JSON_DEPTH} levels")
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children)


def write_json(path: str, value: Any, allow_nan: bool = False) -> None:
    """Writes `value` as JSON to `path` and syncs it (numbers that are not finite are refused
    unless `allow_nan`; values JSON does not know are written as strings)."""
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(value, handle, indent=1, allow_nan=allow_nan, default=str)
        handle.flush()
        os.fsync(handle.fileno())


def is_checkpoint_dir(path: str) -> bool:
    """Whether `path` is a directory with a manifest (an rlgraph checkpoint)."""
    return os.path.isfile(os.path.join(path, MANIFEST))


class CheckpointWriter:
    """Builds a checkpoint directory in a temporary sibling and puts it in place on `commit`.

    Use as a context manager: files go under `writer.root` (`writer.path(name)`); `commit` writes
    the manifest, syncs and renames. Leaving the block without `commit` (an exception) removes the
    temporary directory and leaves any previous checkpoint untouched.

    Args:
        target: The checkpoint directory to create or replace. An existing target must be an
            rlgraph checkpoint (it has a manifest) or an empty directory: a save never replaces
            anything else.
        kind: What the checkpoint holds (e.g. "agent", "apex-executor"); loaders check it.
        where: Who saves (for error messages).
    """

    def __init__(self, target: str, kind: str, where: str):
        self.target = os.path.abspath(os.path.expanduser(target))
        self.kind = kind
        self.where = where
        self.root: Optional[str] = None
        if os.path.lexists(self.target):
            if not os.path.isdir(self.target) or os.path.islink(self.target):
                raise RLGraphCheckpointError("the checkpoint path exists and is not a directory", where=where,
                                             expected="a new path or an rlgraph checkpoint directory",
                                             received=self.target, hint="choose another path.")
            if not is_checkpoint_dir(self.target) and os.listdir(self.target):
                raise RLGraphCheckpointError(
                    "the checkpoint path is a directory that holds other files: a save would replace them",
                    where=where, expected="a new path, an empty directory or an rlgraph checkpoint",
                    received=self.target, hint="choose another path (store_model(path) writes path/step-<N> "
                                               "with add_timestep=True).")

    def __enter__(self) -> "CheckpointWriter":
        parent, name = os.path.split(self.target)
        os.makedirs(parent, exist_ok=True)
        _remove_stale_temporaries(parent, name)
        self.root = os.path.join(parent, f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
        os.mkdir(self.root)
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self.root is not None and os.path.isdir(self.root):
            shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    def path(self, name: str) -> str:
        """Where file (or sub-directory) `name` of the checkpoint is written now."""
        if self.root is None:
            raise RLGraphCheckpointError("the writer is not open", where=self.where)
        return os.path.join(self.root, name)

    def commit(self, step: int, extra: Optional[Dict[str, Any]] = None) -> str:
        """Writes the manifest (every file's size and SHA-256), syncs, and puts the directory in place.

        Returns:
            The checkpoint directory.
        """
        files = {}
        for directory, subdirs, names in os.walk(self.root):
            subdirs.sort()
            for name in sorted(names):
                full = os.path.join(directory, name)
                relative = os.path.relpath(full, self.root).replace(os.sep, "/")
                if os.path.islink(full) or not os.path.isfile(full):
                    raise RLGraphCheckpointError(f"'{relative}' is not a regular file", where=self.where)
                _fsync_file(full)
                files[relative] = {"bytes": os.path.getsize(full), "sha256": file_digest(full)}
        manifest = {"format": MANIFEST_FORMAT, "version": MANIFEST_VERSION, "kind": self.kind, "step": int(step),
                    "files": files}
        if extra:
            manifest.update(extra)
        write_json(os.path.join(self.root, MANIFEST), manifest)
        for directory, _, _ in os.walk(self.root):
            _fsync_dir(directory)
        parent = os.path.dirname(self.target)
        if os.path.isdir(self.target):
            _exchange(self.root, self.target)  # self.root now holds the old checkpoint: __exit__ removes it.
        else:
            os.rename(self.root, self.target)
            self.root = None
        _fsync_dir(parent)
        return self.target


def verify_checkpoint(path: str, kind: Optional[str], where: str) -> Dict[str, Any]:
    """Reads `path`'s manifest and checks every file it lists (`checkpoint_files.read_checkpoint`),
    without parsing any of them.

    Args:
        path: The checkpoint directory.
        kind: The kind the checkpoint must be (None: any).
        where: Who loads (for error messages).

    Returns:
        The manifest ({"format", "version", "kind", "step", "files", ...}).

    Raises:
        RLGraphCheckpointError: As `read_checkpoint`.
    """
    from rlgraph.utils.checkpoint_files import read_checkpoint
    return read_checkpoint(path, kind, where).manifest


def fsync_tree(path: str, files: bool = True) -> None:
    """Syncs a file, or a directory with (if `files`) every file and directory below it, to disk."""
    if not os.path.isdir(path):
        _fsync_file(path)
        return
    for directory, _, names in os.walk(path):
        if files:
            for name in names:
                full = os.path.join(directory, name)
                if os.path.isfile(full) and not os.path.islink(full):
                    _fsync_file(full)
        _fsync_dir(directory)
        if not files:
            break


def replace_directory(new: str, old: str) -> None:
    """Puts directory `new` in place of directory `old` in one atomic step where the system can
    (Linux `renameat2` exchange); `new` then holds the old contents, which the caller removes."""
    _exchange(new, old)


def _fsync_file(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(path: str) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:  # Some file systems cannot sync directories; the rename is still atomic.
        pass
    finally:
        os.close(fd)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(new: str, old: str) -> None:
    """Atomically swaps directories `new` and `old` (Linux `renameat2`); elsewhere, or on a file
    system without it, moves `old` aside first (a crash between the two renames leaves it as
    ".<name>.old-<pid>", which `verify_checkpoint` points to)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        renameat2 = None
    if renameat2 is not None:
        renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
        if renameat2(_AT_FDCWD, os.fsencode(new), _AT_FDCWD, os.fsencode(old), _RENAME_EXCHANGE) == 0:
            return
        if ctypes.get_errno() not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            error = ctypes.get_errno()
            raise OSError(error, os.strerror(error), old)
    parent, name = os.path.split(old)
    aside = os.path.join(parent, f".{name}.old-{os.getpid()}")
    os.rename(old, aside)
    os.rename(new, old)
    os.rename(aside, new)


def _moved_aside(path: str) -> Optional[str]:
    parent, name = os.path.split(path)
    try:
        candidates = sorted(n for n in os.listdir(parent) if n.startswith(f".{name}.old-"))
    except OSError:
        return None
    return os.path.join(parent, candidates[-1]) if candidates else None


def _remove_stale_temporaries(parent: str, name: str) -> None:
    """Removes ".<name>.tmp-<pid>-*" directories of saves whose process is gone (killed mid-save)."""
    prefix = f".{name}.tmp-"
    for entry in os.listdir(parent):
        if not entry.startswith(prefix):
            continue
        pid = entry[len(prefix):].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
