"""One run at a time in a run directory: `lock_run_dir`.

`rlgraph train` (`train(output_dir=...)`, `train(resume=...)`) and `rlgraph train --seeds` hold an
exclusive lock on their run directory from before they look at it (the emptiness check of a new
run, the newest checkpoint of a resumed one) until they end, so a second run on the same directory
is refused at once with `RLGraphRunDirLockedError` instead of interleaving its rows with the first's.

The lock is `flock(LOCK_EX | LOCK_NB)` on RUN/.rlgraph-run.lock, which holds the holder's pid. It
belongs to the open file, not to the file on disk: the operating system drops it when the process
ends however it ends (`kill -9` included), so a lock file left behind never blocks a later run.
A run removes the file when it releases the lock; one that opened the file just before that
finds, once it holds the lock, that the path names another file (or none) and starts over.

On a system without `fcntl` (Windows) no lock is taken.
"""
from __future__ import annotations

import errno
import logging
import os
import time
import weakref
from typing import Optional

from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphRunDirLockedError

try:
    import fcntl
except ImportError:  # Windows.
    fcntl = None

logger = logging.getLogger(__name__)

LOCK_FILE = ".rlgraph-run.lock"
# A lock file holds a pid (a few digits); more is not ours.
_MAX_LOCK_BYTES = 64
# Held locks: a forked child closes its copies of their descriptors (it does not hold the run).
_HELD: "weakref.WeakSet[RunDirLock]" = weakref.WeakSet()


class RunDirLock:
    """The lock on a run directory (see the module docstring); `release()` or leave the `with` block.

    Attributes:
        run_dir: The locked directory.
        path: The lock file.
    """

    def __init__(self, run_dir: str, path: str, fd: Optional[int], created: bool):
        self.run_dir, self.path, self._fd, self._created = run_dir, path, fd, created
        if fd is not None:
            _HELD.add(self)

    def release(self) -> None:
        """Removes the lock file and drops the lock (and the directory, if the lock made it and it is
        still empty); a second call does nothing."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        _HELD.discard(self)
        try:
            os.unlink(self.path)  # Still held here: a run that opened the file meanwhile starts over.
        except OSError:
            pass
        os.close(fd)
        if self._created:
            try:
                os.rmdir(self.run_dir)
            except OSError:  # Not empty: the run wrote into it.
                pass

    def __enter__(self) -> "RunDirLock":
        return self

    def __exit__(self, *exc_info) -> None:
        self.release()


def lock_run_dir(run_dir: str, where: str) -> RunDirLock:
    """Takes the lock of `run_dir` (created if missing) for this run.

    Args:
        run_dir: The run directory.
        where: The argument or option that named it (for error messages).

    Returns:
        The held lock.

    Raises:
        RLGraphRunDirLockedError: Another run holds it (the error names the directory and its pid).
        RLGraphError: The directory or its lock file cannot be created.
    """
    created = not os.path.isdir(run_dir)
    path = os.path.join(run_dir, LOCK_FILE)
    try:
        os.makedirs(run_dir, exist_ok=True)
    except OSError as error:
        raise RLGraphError(f"cannot create the run directory ({error.strerror or error})", where=where,
                           received=run_dir) from error
    if fcntl is None:
        logger.debug("%s: no fcntl on this system: the run directory %s is not locked", where, run_dir)
        return RunDirLock(run_dir, path, None, created)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise RLGraphError(f"cannot create the run directory's lock file ({error.strerror or error})",
                               where=where, received=path) from error
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            pid = _holder(fd)
            os.close(fd)
            if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RLGraphError(f"cannot lock the run directory ({error.strerror or error})", where=where,
                                   received=path) from error
            raise _locked_error(run_dir, path, pid, where) from None
        if _names(path, fd):
            break
        os.close(fd)  # Released and removed by its holder after we opened it: take the new one.
    try:  # For the error of a run refused meanwhile; the lock holds without it (a full disk, say).
        pid = f"{os.getpid()}\n".encode()
        os.pwrite(fd, pid, 0)  # (Over a dead run's pid, then cut: the first line is always a pid.)
        os.ftruncate(fd, len(pid))
    except OSError:
        pass
    return RunDirLock(run_dir, path, fd, created)


def _names(path: str, fd: int) -> bool:
    """Whether `path` still names the open file `fd`."""
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except OSError:
        return False


def _holder(fd: int) -> Optional[int]:
    """The pid in a held lock file (None: not a pid). Its holder writes it right after it takes the
    lock, so an empty file is read again a few times first."""
    for _ in range(20):
        try:
            words = os.pread(fd, _MAX_LOCK_BYTES, 0).decode("ascii", "replace").split()
        except OSError:
            return None
        if words:
            return int(words[0]) if words[0].isdigit() else None
        time.sleep(0.005)
    return None


def _locked_error(run_dir: str, path: str, pid: Optional[int], where: str) -> RLGraphRunDirLockedError:
    holder = f"pid {pid}" if pid is not None else "its pid not known yet"
    stop = f" (or stop it: `kill {pid}`; it saves a checkpoint first)" if pid is not None else ""
    return RLGraphRunDirLockedError(
        f"the run directory is in use by another run ({holder})", where=where, received=run_dir,
        run_dir=run_dir, pid=pid, lock_file=path,
        hint=f"two runs cannot write one directory at once. Wait for that run to end{stop}, then "
             f"`rlgraph train --resume {run_dir}` continues it; or choose another --output-dir. A run that "
             "died holds no lock.")


def _close_in_child() -> None:
    """After a fork: the child gets copies of the lock descriptors, which would keep the locks held
    as long as it lives; it closes them (the parent still holds the locks)."""
    for lock in list(_HELD):
        fd, lock._fd = lock._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
    _HELD.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_close_in_child)
