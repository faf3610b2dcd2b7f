"""The `RLGraphError` family: every error that rlgraph raises to a user is one of these.

Each error can carry structured context (where it happened, what was expected, what was
received, a hint) so that messages read the same everywhere:

    FloatBox: unknown key 'hihg' in spec. Expected one of: high, low, shape, ...; received: 'hihg'.
    Hint: did you mean 'high'?
"""
from __future__ import annotations

from typing import Any, Optional


class RLGraphError(Exception):
    """Base class of all rlgraph errors.

    Args:
        message: What went wrong.
        where: The component (global scope), API method, argument or class concerned.
        expected: What was expected (a space, a value, a list of valid keys).
        received: What came in instead.
        hint: What the user can do about it.
    """

    def __init__(self, message: str = "", *, where: Optional[str] = None, expected: Any = None,
                 received: Any = None, hint: Optional[str] = None):
        self.message = message
        self.where = where
        self.expected = expected
        self.received = received
        self.hint = hint
        super().__init__(self._compose())

    def _compose(self) -> str:
        text = f"{self.where}: {self.message}" if self.where else self.message
        details = []
        if self.expected is not None:
            details.append(f"expected {self.expected}")
        if self.received is not None:
            details.append(f"received {self.received}")
        if details:
            joined = "; ".join(details)
            text = text.rstrip(".") + ". " + joined[0].upper() + joined[1:] + "."
        if self.hint:
            if not text.endswith((".", "!", "?", ":")):
                text += "."  # The hint is a sentence of its own.
            text += f" Hint: {self.hint}"
        return text

    def __reduce__(self):
        # Keyword-only context must survive pickling (errors cross process boundaries on Ray).
        return _rebuild_error, (type(self), self.__dict__.copy())


def _rebuild_error(cls, state):
    error = cls.__new__(cls)
    error.__dict__.update(state)
    Exception.__init__(error, error._compose())
    return error


class RLGraphSpaceError(RLGraphError):
    """A Space (or a value checked against one) does not meet a requirement.

    Args:
        space: The offending Space.
        message: What is wrong with it.
    """

    def __init__(self, space: Any = None, message: str = "", **fields):
        self.space = space
        if fields.get("received") is None and space is not None:
            fields["received"] = space
        super().__init__(message, **fields)


class RLGraphSpecError(RLGraphError, ValueError):
    """A spec (dict, JSON/YAML file, type name) cannot be turned into an object."""


class RLGraphInputIncompleteError(RLGraphError):
    """The build could not make a component input-complete (some argument spaces never arrived)."""

    def __init__(self, component: Any = None, message: str = "", **fields):
        self.component = component
        if fields.get("where") is None and component is not None:
            fields["where"] = getattr(component, "global_scope", None) or str(component)
        super().__init__(message, **fields)


class RLGraphBuildError(RLGraphError):
    """An API method does what the build cannot turn into a graph: a python decision on, or
    arithmetic with, a traced value (`if x:`, `int(x)`, `len(x)`, `x + 1`), which would be taken
    once on trace data and then hold for every call. Such work belongs in a graph function."""


class RLGraphObsoletedError(RLGraphError):
    """An API, argument or spec key was renamed or removed.

    Args:
        type_: The kind of thing ("API method", "spec key", ...).
        old_value: The obsolete name that was used.
        new_value: The name to use instead.
    """

    def __init__(self, type_: str, old_value: str, new_value: str):
        self.type_ = type_
        self.old_value = old_value
        self.new_value = new_value
        super().__init__(f"the {type_} '{old_value}' is obsolete", expected=f"'{new_value}'",
                         received=f"'{old_value}'", hint=f"use '{new_value}' instead.")

    def __reduce__(self):
        return type(self), (self.type_, self.old_value, self.new_value)


class RLGraphBackendUnavailableError(RLGraphError, ImportError):
    """A backend (TensorFlow, PyTorch, Ray) was asked for but is not installed or not known.

    Args:
        backend: The backend name that was requested.
        message: Optional override of the default message.
    """

    _EXTRAS = {"tf": "tf", "pytorch": "torch", "ray": "ray"}

    def __init__(self, backend: str, message: Optional[str] = None, **fields):
        self.backend = backend
        extra = self._EXTRAS.get(backend)
        if message is None:
            message = f"backend '{backend}' is not available in this Python environment"
        if "hint" not in fields and extra is not None:
            fields["hint"] = f"install it with `pip install -c constraints.txt -e \".[{extra}]\"`."
        super().__init__(message, **fields)


class RLGraphCheckpointError(RLGraphError):
    """A checkpoint or exported model cannot be written, read, or does not fit the graph."""


class RLGraphCheckpointWriteError(RLGraphCheckpointError, OSError):
    """The file system refused a checkpoint's files (a full disk, a quota, a read-only directory).

    It is also the `OSError` it reports (the same `errno`, `strerror` and `filename`), so code
    that handles file-system errors (e.g. the run directory's "free space, then --resume" report)
    still sees one."""

    def __str__(self) -> str:
        return self._compose()  # (OSError's own text would replace the message.)

    def __reduce__(self):
        return _rebuild_os_error, (type(self), self.__dict__.copy(), self.errno, self.strerror, self.filename)


def _rebuild_os_error(cls, state, errno_, strerror, filename):
    error = _rebuild_error(cls, state)
    error.errno, error.strerror, error.filename = errno_, strerror, filename
    return error


class RLGraphExportError(RLGraphError):
    """A policy cannot be exported (an unknown format, a policy the format cannot express, a
    missing exporter package), or the exported file does not reproduce the agent's actions."""


class RLGraphDistributedError(RLGraphError):
    """A distributed run cannot go on: Ray is missing or unreachable, an actor cannot start, the
    actors ask for more resources than the cluster has, or actors died more often than
    `max_num_worker_restarts` allows; a learner of a data-parallel group failed or its weights
    diverged from rank 0's."""


class RLGraphEnvError(RLGraphError):
    """An environment raised in `step` or `reset` while a worker ran it. The message names the
    environment, its index among the worker's environments and the worker's env step; the
    environment's own exception is chained (`__cause__`).

    Args:
        message: What went wrong.
        env_index: The index of the environment in its vector env (None: not known).
        step: The worker's env step (1-based, counted over all its environments) that failed.
    """

    def __init__(self, message: str = "", *, env_index: Optional[int] = None, step: Optional[int] = None,
                 **fields):
        self.env_index = env_index
        self.step = step
        super().__init__(message, **fields)


class RLGraphInterrupted(RLGraphError):
    """A training run stopped on SIGINT (Ctrl-C) or SIGTERM after writing a checkpoint, its logs
    and its learning curve; `rlgraph train --resume RUN_DIR` continues it.

    Args:
        message: What happened.
        signal_number: The signal that stopped the run (`signal.SIGINT`, `signal.SIGTERM`).
        checkpoint: The checkpoint directory written at the stop.
        run_dir: The run's output directory (what `--resume` takes).
        step: The env step the run stopped at.
    """

    def __init__(self, message: str = "", *, signal_number: Optional[int] = None, checkpoint: Optional[str] = None,
                 run_dir: Optional[str] = None, step: Optional[int] = None, **fields):
        self.signal_number = signal_number
        self.checkpoint = checkpoint
        self.run_dir = run_dir
        self.step = step
        super().__init__(message, **fields)


class RLGraphRunDirLockedError(RLGraphError):
    """Another run holds the run directory (`rlgraph train --output-dir`, `--resume`): one run at a
    time writes a directory. The lock is the operating system's, so a run that died holds none.

    Args:
        message: What happened.
        run_dir: The run directory.
        pid: The process that holds it (None: not known).
        lock_file: The lock file inside `run_dir`.
    """

    def __init__(self, message: str = "", *, run_dir: Optional[str] = None, pid: Optional[int] = None,
                 lock_file: Optional[str] = None, **fields):
        self.run_dir = run_dir
        self.pid = pid
        self.lock_file = lock_file
        super().__init__(message, **fields)


class RLGraphNonFiniteError(RLGraphError):
    """A NaN or an infinity where a run cannot go on with one: in an observed state or reward, an
    imported record, a loss, or weights handed to `set_weights`. The message names the field (or
    variable), the index of the first non-finite element and the timestep or update number.
    `execution_spec.nan_check` ("raise", "warn", "off") decides what the agent's checks do."""
