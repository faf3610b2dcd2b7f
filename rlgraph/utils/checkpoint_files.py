"""Reading a checkpoint directory: every file once, into memory, verified before anything parses it.

`read_checkpoint` opens the directory once (a descriptor: a directory swapped in or renamed
while the load runs does not change what is read), reads its manifest, checks every name the
manifest lists (relative, normalised, no `..`, no NUL, no duplicates) and reads each listed file
once: a regular file (not a FIFO, device or symbolic link), of the listed size and SHA-256. A
file reached under several names (hard links) is read and hashed once. The loaders then parse
these bytes (`CheckpointFiles.json`, `.npz`, `.read`) and never open the directory again: a file
the manifest does not list cannot be read at all, and a checkpoint rewritten during the load
cannot mix with the one verified.

`newest_checkpoint` picks, in a directory of checkpoints (`store_model(d)` writes `d/step-N`),
the one with the highest step.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import posixpath
import shutil
import stat
import tempfile
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

from rlgraph.utils.checkpoint_dir import (MANIFEST, MANIFEST_FORMAT, MANIFEST_VERSION, MAX_JSON_BYTES, _moved_aside,
                                          check_json_depth)
from rlgraph.utils.checkpoint_values import INT64_MAX
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError
from rlgraph.utils.safe_npz import ArraySpec, read_npz_bytes

# A manifest of more entries is no rlgraph checkpoint (an agent writes about ten files).
MAX_FILES = 100000
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


class CheckpointFiles:
    """The verified files of one checkpoint, held in memory.

    Attributes:
        path: The checkpoint directory.
        manifest: Its manifest ({"format", "version", "kind", "step", "files", ...}).
        where: Who loads (for error messages).
    """

    def __init__(self, path: str, manifest: Dict[str, Any], data: Dict[str, bytes], where: str):
        self.path = path
        self.manifest = manifest
        self._data = data
        self.where = where

    @property
    def step(self) -> int:
        return self.manifest["step"]

    def names(self) -> List[str]:
        return sorted(self._data)

    def has(self, name: str) -> bool:
        return name in self._data

    def read(self, name: str) -> bytes:
        """The verified bytes of file `name`.

        Raises:
            RLGraphCheckpointError: If the manifest does not list `name`.
        """
        if name not in self._data:
            raise RLGraphCheckpointError(f"checkpoint file '{name}' is not listed in the manifest", where=self.where,
                                         received=self.path,
                                         hint="every file a load reads must be listed (with its size and SHA-256) in "
                                              f"{MANIFEST}; a file added or left out after the save is never read.")
        return self._data[name]

    def json(self, name: str, max_bytes: int = MAX_JSON_BYTES) -> Any:
        """File `name` parsed as JSON (at most `max_bytes`, nested at most 32 levels)."""
        return parse_json(self.read(name), name, self.where, max_bytes)

    def npz(self, name: str, expected: Dict[str, ArraySpec], max_bytes: Optional[int] = None) -> Dict[str, np.ndarray]:
        """File `name`'s arrays, each bounded by `expected` before it is decompressed (see `safe_npz`)."""
        return read_npz_bytes(self.read(name), name, self.where, expected, max_bytes)

    def sub(self, prefix: str, kind: Optional[str]) -> "CheckpointFiles":
        """The checkpoint nested in sub-directory `prefix` (e.g. an Ape-X checkpoint's "learner"), from
        the bytes read already: its manifest must list exactly the files under `prefix`, as verified."""
        prefix = prefix.rstrip("/") + "/"
        manifest = check_manifest(self.json(prefix + MANIFEST), kind, self.where)
        entries = check_entries(manifest["files"], self.where)
        outer = check_entries(self.manifest["files"], self.where)
        inside = {name[len(prefix):] for name in self._data if name.startswith(prefix)} - {MANIFEST}
        if set(entries) != inside or any(outer[prefix + n] != entry for n, entry in entries.items()):
            raise RLGraphCheckpointError(f"the manifest of '{prefix[:-1]}' does not match the checkpoint's",
                                         where=self.where, expected=sorted(inside)[:20], received=sorted(entries)[:20])
        return CheckpointFiles(os.path.join(self.path, prefix[:-1]), manifest,
                               {n: self._data[prefix + n] for n in entries}, self.where)

    @contextlib.contextmanager
    def materialized(self, names: List[str]) -> Iterator[str]:
        """A private temporary directory holding the verified bytes of files `names` (for readers
        that take paths, such as TF's), under the same relative names; removed on exit."""
        root = tempfile.mkdtemp(prefix="rlgraph-ckpt-")  # Mode 0700: no other user can change the copies.
        try:
            for name in names:
                target = os.path.join(root, *name.split("/"))
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as handle:
                    handle.write(self.read(name))
            yield root
        finally:
            shutil.rmtree(root, ignore_errors=True)


def parse_json(data: bytes, name: str, where: str, max_bytes: int = MAX_JSON_BYTES) -> Any:
    """`data` (file `name`) as JSON: at most `max_bytes`, nested at most 32 levels.

    Raises:
        RLGraphCheckpointError: If it is too large, too deep or no valid JSON.
    """
    if len(data) > max_bytes:
        raise RLGraphCheckpointError(f"'{name}' is too large to be an rlgraph checkpoint file", where=where,
                                     expected=f"at most {max_bytes} bytes", received=f"{len(data)} bytes")
    try:
        value = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError) as error:
        raise RLGraphCheckpointError(f"cannot read '{name}' ({type(error).__name__}: {str(error)[:200]})",
                                     where=where) from None
    check_json_depth(value, name, where)
    return value


def check_manifest(manifest: Any, kind: Optional[str], where: str) -> Dict[str, Any]:
    """Checks a parsed manifest's format, version, kind and step; returns it."""
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise RLGraphCheckpointError(f"'{MANIFEST}' is not an rlgraph checkpoint manifest", where=where)
    if manifest.get("version") != MANIFEST_VERSION:
        raise RLGraphCheckpointError("unsupported checkpoint manifest version", where=where,
                                     expected=MANIFEST_VERSION, received=repr(manifest.get("version"))[:100])
    if kind is not None and manifest.get("kind") != kind:
        raise RLGraphCheckpointError("the checkpoint holds something else", where=where, expected=repr(kind),
                                     received=repr(manifest.get("kind"))[:100])
    step = manifest.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or not 0 <= step <= INT64_MAX:
        raise RLGraphCheckpointError("the manifest's step is damaged", where=where,
                                     expected="an integer in [0, 2**63 - 1]", received=repr(step)[:100])
    files = manifest.get("files")
    if not isinstance(files, dict) or not files:
        raise RLGraphCheckpointError("the manifest lists no files", where=where)
    if len(files) > MAX_FILES:
        raise RLGraphCheckpointError("the manifest lists more files than an rlgraph checkpoint holds", where=where,
                                     expected=f"at most {MAX_FILES}", received=len(files))
    return manifest


def check_entries(files: Dict[str, Any], where: str) -> Dict[str, Tuple[int, str]]:
    """name -> (bytes, sha256) of a manifest's "files", each name checked: a relative, normalised
    POSIX path ("model/x.index"), without `..`, `.`, empty parts, NUL or backslashes."""
    entries = {}
    for name, entry in files.items():
        parts = name.split("/") if isinstance(name, str) else []
        if not parts or "\0" in name or "\\" in name or posixpath.normpath(name) != name or \
                any(p in ("", ".", "..") for p in parts) or name == MANIFEST:
            raise RLGraphCheckpointError("the manifest names a file outside the checkpoint or by an improper name",
                                         where=where, expected="a relative, normalised path without '..' or NUL",
                                         received=repr(name)[:200])
        size = entry.get("bytes") if isinstance(entry, dict) else None
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= INT64_MAX or \
                not isinstance(digest, str) or len(digest) != 64 or set(digest) - set("0123456789abcdef"):
            raise RLGraphCheckpointError(f"the manifest's entry of '{name}' is damaged", where=where,
                                         expected='{"bytes": int, "sha256": 64 hex digits}', received=repr(entry)[:200])
        entries[name] = (size, digest)
    return entries


def read_checkpoint(path: str, kind: Optional[str], where: str) -> CheckpointFiles:
    """Reads checkpoint directory `path` once: its manifest and every file it lists, each verified.

    Args:
        path: The checkpoint directory.
        kind: The kind the checkpoint must be (None: any).
        where: Who loads (for error messages).

    Raises:
        RLGraphCheckpointError: No checkpoint at `path`; a manifest of another kind or version, or
            with an improper name; a listed file that is missing, outside the directory, not a
            regular file, or of another size or digest.
    """
    path = os.path.abspath(os.path.expanduser(path))
    try:
        root_fd = os.open(path, _DIR_FLAGS)
    except OSError:
        moved = _moved_aside(path)
        raise RLGraphCheckpointError(f"no checkpoint directory at '{path}'", where=where,
                                     hint=f"an interrupted save left the previous checkpoint in '{moved}'; "
                                          "rename it back." if moved else None) from None
    try:
        try:
            raw = _read_file(root_fd, MANIFEST, MAX_JSON_BYTES, where, exact=False)[0]
        except RLGraphCheckpointError:
            if not os.path.lexists(os.path.join(path, MANIFEST)):
                legacy = os.path.isfile(os.path.join(path, "agent_state.pkl"))
                raise RLGraphCheckpointError(
                    f"'{path}' has no {MANIFEST}", where=where,
                    expected="a checkpoint directory (written by store_model or `rlgraph train`)",
                    hint="it was written by an older rlgraph with a pickled agent state, which is never loaded "
                         "because unpickling a file can run code; store the model again with this version."
                    if legacy else None) from None
            raise
        manifest = check_manifest(parse_json(raw, MANIFEST, where), kind, where)
        entries = check_entries(manifest["files"], where)
        data: Dict[str, bytes] = {}
        by_inode: Dict[Tuple[int, int], Tuple[bytes, str]] = {}
        real_root = os.path.realpath(path)
        for name, (size, digest) in entries.items():
            full = os.path.realpath(os.path.join(real_root, name))
            if os.path.commonpath([real_root, full]) != real_root:
                raise RLGraphCheckpointError("the manifest names a file outside the checkpoint (a symbolic link "
                                             "leads out)", where=where, received=repr(name))
            content, inode = _read_file(root_fd, name, size, where, by_inode)
            if inode in by_inode:  # Another name of a file read already: its bytes, hashed once.
                actual = by_inode[inode][1]
            else:
                actual = hashlib.sha256(content).hexdigest()
                by_inode[inode] = (content, actual)
            if len(content) != size:
                raise RLGraphCheckpointError(f"checkpoint file '{name}' has another size than when it was written",
                                             where=where, expected=f"{size} bytes", received=f"{len(content)} bytes",
                                             hint="the file is truncated, damaged or from another checkpoint.")
            if actual != digest:
                raise RLGraphCheckpointError(f"checkpoint file '{name}' is damaged: its SHA-256 does not match the "
                                             "manifest", where=where,
                                             hint="the file changed after the save (bit rot, an edit, or a file "
                                                  "copied from another checkpoint); restore it from a copy.")
            data[name] = content
        return CheckpointFiles(path, manifest, data, where)
    finally:
        os.close(root_fd)


def _read_file(root_fd: int, name: str, size: int, where: str, known: Optional[dict] = None,
               exact: bool = True) -> Tuple[bytes, Tuple[int, int]]:
    """(bytes, (device, inode)) of regular file `name` below directory `root_fd`, opened without
    following symbolic links and without blocking (a FIFO is refused, never waited on); at most
    `size` bytes are read (a file of another size, with `exact` false a larger one, is refused by
    its size first). A file in `known` (by inode) is not read again."""
    parts = name.split("/")
    fds = [root_fd]
    try:
        for part in parts[:-1]:
            fds.append(os.open(part, _DIR_FLAGS | getattr(os, "O_NOFOLLOW", 0), dir_fd=fds[-1]))
        fd = os.open(parts[-1], _OPEN_FLAGS, dir_fd=fds[-1])
    except OSError as error:
        missing = error.errno in (errno.ENOENT, errno.ENOTDIR)
        raise RLGraphCheckpointError(f"checkpoint file '{name}' is missing" if missing else
                                     f"checkpoint file '{name}' cannot be opened as a regular file "
                                     f"({error.strerror}; a symbolic link is refused)", where=where) from None
    finally:
        for opened in fds[1:]:
            os.close(opened)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise RLGraphCheckpointError(f"checkpoint file '{name}' is not a regular file", where=where,
                                         received=stat.filemode(info.st_mode))
        inode = (info.st_dev, info.st_ino)
        if known is not None and inode in known:
            return known[inode][0], inode
        if not exact and info.st_size > size:
            raise RLGraphCheckpointError(f"'{name}' is too large to be an rlgraph checkpoint file", where=where,
                                         expected=f"at most {size} bytes", received=f"{info.st_size} bytes")
        if exact and info.st_size != size:
            raise RLGraphCheckpointError(f"checkpoint file '{name}' has another size than when it was written",
                                         where=where, expected=f"{size} bytes", received=f"{info.st_size} bytes",
                                         hint="the file is truncated, damaged or from another checkpoint.")
        # One byte more than expected: a file that grew since the fstat is caught by its size.
        chunks, left = [], (size if exact else info.st_size) + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 24))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks), inode
    finally:
        os.close(fd)



def newest_checkpoint(path: str, kind: Optional[str], where: str) -> str:
    """`path` itself if it is a checkpoint directory (or no directory: `read_checkpoint` explains);
    else the sub-directory of `path` holding a checkpoint of `kind` with the highest step in its
    manifest (ties: the last name), as `store_model(path)` writes `path/step-<N>`.

    Raises:
        RLGraphCheckpointError: If `path` is a directory without a manifest and without any checkpoint
            of `kind` in it.
    """
    path = os.path.abspath(os.path.expanduser(path))
    if not os.path.isdir(path) or os.path.lexists(os.path.join(path, MANIFEST)) or \
            os.path.lexists(os.path.join(path, "agent_state.pkl")):
        return path
    candidates = []
    for name in sorted(os.listdir(path)):
        sub = os.path.join(path, name)
        if name.startswith(".") or os.path.islink(sub) or not os.path.isdir(sub):
            continue  # (".<name>.tmp-*": a save in progress or killed.)
        try:
            fd = os.open(sub, _DIR_FLAGS)
        except OSError:
            continue
        try:
            manifest = check_manifest(parse_json(_read_file(fd, MANIFEST, MAX_JSON_BYTES, where, exact=False)[0],
                                                 MANIFEST, where), kind, where)
        except RLGraphCheckpointError:
            continue
        finally:
            os.close(fd)
        candidates.append((manifest["step"], name))
    if not candidates:
        raise RLGraphCheckpointError(f"no checkpoint in '{path}'", where=where,
                                     expected=f"a checkpoint directory (with {MANIFEST}), or a directory holding "
                                              "checkpoints (store_model(path) writes path/step-<N>)",
                                     hint="pass the directory store_model returned, or the one it was given.")
    return os.path.join(path, max(candidates)[1])
