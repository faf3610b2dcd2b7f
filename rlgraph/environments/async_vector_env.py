"""`AsyncVectorEnv`: a vector env whose environments each run in their own subprocess."""
from __future__ import annotations

import atexit
import multiprocessing
import multiprocessing.util  # (Registers its exit handler, which kills daemonic children, before ours.)
import os
import pickle
import signal
import time
import traceback
import weakref
from typing import Any, List, Optional, Sequence, Tuple

import numpy as np

from rlgraph.environments.env_utils import ENV_MODULE_IMPORT_VARIABLE, env_module_import_allowed, resolve_seed
from rlgraph.environments.environment import Environment
from rlgraph.environments.vector_env import VectorEnv, _stack, check_num_environments, split_actions, step_error
from rlgraph.utils.module_imports import trust_modules, trust_spec_modules, trusted_modules
from rlgraph.utils.rlgraph_errors import RLGraphEnvError, RLGraphError

# "fork" copies the parent's TensorFlow/PyTorch thread pools in an undefined state.
START_METHODS = ("spawn", "forkserver")
_JSON_SCALARS = (str, int, float, bool, type(None))


class ChildTraceback(Exception):
    """The traceback text of an exception raised in an environment's subprocess (chained as the
    `__cause__` of the exception that comes back, so that printing it shows where it happened)."""

    def __str__(self) -> str:
        return "\n" + self.args[0].rstrip() if self.args else ""


class EnvProcessError(Exception):
    """Stands for an exception of a subprocess that could not be sent back as itself (it does not
    pickle); its text is "<type name>: <message>"."""


class EnvProcess:
    """The handle of one environment of an `AsyncVectorEnv` (what `get_env(index)` returns): its
    spaces, its description, and reset/step/render/seed calls that run in its subprocess.
    Exceptions come back as the environment raised them (with the subprocess's traceback chained)."""

    def __init__(self, vector_env: "AsyncVectorEnv", index: int, description: str, state_space: Any,
                 action_space: Any):
        self._vector_env = weakref.proxy(vector_env)  # The vector env owns its handles, not the reverse.
        self.index = index
        self.description = description
        self.state_space = state_space
        self.action_space = action_space

    def reset(self) -> Any:
        return self._vector_env._call(self.index, "reset", None)

    def step(self, actions: Any) -> tuple:
        return self._vector_env._call(self.index, "step", actions)

    def render(self) -> Any:
        return self._vector_env._call(self.index, "render", None)

    def seed(self, seed: Optional[int] = None) -> int:
        return self._vector_env._call(self.index, "seed", resolve_seed(seed))

    def __str__(self) -> str:
        return self.description


class AsyncVectorEnv(VectorEnv):
    """Steps `num_environments` environments at the same time, each in its own subprocess.

    Same contract as `SequentialVectorEnv`: batched results, no automatic reset (the worker calls
    `reset(i)` for a finished env), environment i seeded with seed + i, so that the same seed and
    actions give the same states, rewards and terminals. An exception of an environment's `step`
    comes back as the `RLGraphEnvError` that `SequentialVectorEnv` raises (naming the env and its
    index), caused by the environment's own exception, whose `__cause__` is a `ChildTraceback`
    with the subprocess's traceback text. A subprocess that dies gives an `RLGraphEnvError`.

    Each subprocess builds its environment from `env_spec`, which therefore must be plain data
    (JSON-like: dicts, lists, strings, numbers); objects and callables are not sent across. The
    subprocesses are started with "spawn" (or "forkserver"), never "fork", which would copy the
    parent's TensorFlow/PyTorch threads in an undefined state; with either, a script that makes
    an `AsyncVectorEnv` needs the `if __name__ == "__main__":` guard. `terminate()` closes the
    subprocesses (it is idempotent and also runs when the object is collected or the interpreter
    exits). Subprocesses ignore SIGINT: Ctrl-C interrupts the parent, which closes them.

    >>> envs = AsyncVectorEnv(2, {"type": "grid-world", "world": "2x2"}, seed=3)
    >>> envs.reset_all().tolist()
    [0, 0]
    >>> states, rewards, terminals, infos = envs.step(np.array([1, 2]))
    >>> states.tolist(), rewards.tolist(), terminals.tolist()
    ([1, 2], [-1.0, 0.0], [True, False])
    >>> envs.terminate()

    Args:
        num_environments: How many environments (and subprocesses).
        env_spec: A spec dict (or type name) for `Environment.from_spec`, plain data only.
        seed: Base seed: environment i is seeded with seed + i. Without it, a "seed" in the spec
            is the base seed; otherwise the environments are left unseeded.
        start_method: "spawn" (default) or "forkserver".

    Raises:
        RLGraphError: For an invalid count, a spec that is not plain data or an unknown start method.
        Exception: What building the environment raised in a subprocess (e.g. `RLGraphSpecError`).
    """

    def __init__(self, num_environments: int, env_spec: Any, seed: Optional[int] = None,
                 start_method: str = "spawn"):
        where = type(self).__name__
        self.num_environments = check_num_environments(num_environments, where)
        _check_plain_data(env_spec, f"{where}(env_spec)", "env_spec")
        if start_method not in START_METHODS:
            raise RLGraphError("unknown start method", where=f"{where}(start_method)", expected=list(START_METHODS),
                               received=repr(start_method),
                               hint="'fork' is not offered: it copies TensorFlow/PyTorch threads unsafely.")
        if isinstance(env_spec, dict):
            if seed is None:
                seed = env_spec.get("seed")
            env_spec = dict(env_spec, seed=None) if "seed" in env_spec else env_spec
        # A dotted type of a module the user's code imported here may be imported by the subprocesses.
        trust_spec_modules(env_spec)
        context = multiprocessing.get_context(start_method)
        self._conns, self._processes = [], []
        self._broken: Optional[str] = None
        self._finalizer = weakref.finalize(self, _shut_down, self._processes, self._conns)
        # At exit the subprocesses are closed before multiprocessing's own handler kills them:
        # atexit runs the handlers registered last first.
        self._finalizer.atexit = False
        atexit.register(self._finalizer)
        self.environments: List[EnvProcess] = []
        try:
            for index in range(self.num_environments):
                conn, child_conn = context.Pipe()
                # The env-id opt-in goes along explicitly: a forkserver's children have its environment.
                process = context.Process(target=_child_main, args=(child_conn, env_spec, env_module_import_allowed(),
                                                                    sorted(trusted_modules())),
                                          daemon=True, name=f"rlgraph-env-{index}")
                self._conns.append(conn)
                process.start()
                self._processes.append(process)
                child_conn.close()  # Only the child holds its end: its death then reads as EOF here.
            described = self._gather(range(self.num_environments), "__init__")
        except BaseException:
            self.terminate()
            raise
        self.environments = [EnvProcess(self, index, *info) for index, info in enumerate(described)]
        Environment.__init__(self, described[0][1], described[0][2])
        if seed is not None:
            self.seed(seed)

    # --- VectorEnv API --------------------------------------------------------------------------
    def seed(self, seed: Optional[int] = None) -> int:
        seed = resolve_seed(seed)
        indices = range(self.num_environments)
        self._send(indices, "seed", [seed + index for index in indices])
        self._gather(indices, "seed")
        return seed

    def reset(self, index: int = 0) -> Any:
        return self._call(index, "reset", None)

    def reset_all(self) -> Any:
        indices = range(self.num_environments)
        self._send(indices, "reset", [None] * self.num_environments)
        return _stack(self._gather(indices, "reset"))

    def step(self, actions: Any) -> tuple:
        per_env = split_actions(actions, self.num_environments, f"{type(self).__name__}.step")
        indices = range(self.num_environments)
        self._send(indices, "step", per_env)
        states, rewards, terminals, infos = zip(*self._gather(indices, "step", per_env))
        return (_stack(list(states)), np.asarray(rewards, dtype=np.float32), np.asarray(terminals, dtype=bool),
                list(infos))

    def render(self, index: int = 0) -> Any:
        return self._call(index, "render", None)

    def terminate(self) -> None:
        """Closes the environments and their subprocesses (again: nothing happens)."""
        self._finalizer()
        atexit.unregister(self._finalizer)

    @property
    def processes(self) -> Tuple[multiprocessing.process.BaseProcess, ...]:
        """The subprocesses, environment i's at index i."""
        return tuple(self._processes)

    # --- Messages -------------------------------------------------------------------------------
    def _call(self, index: int, command: str, data: Any) -> Any:
        self._send([index], command, [data])
        return self._gather([index], command)[0]

    def _send(self, indices: Sequence[int], command: str, payloads: Sequence[Any]) -> None:
        self._check_usable(command)
        for index, payload in zip(indices, payloads):
            try:
                self._conns[index].send((command, payload))
            except (OSError, EOFError):  # A broken pipe: the subprocess is gone.
                self._broken = f"the subprocess of env {index} died"
                raise self._died(index, command)  # (Its cause is the ChildProcessError it names.)

    def _gather(self, indices: Sequence[int], command: str, actions: Optional[Sequence[Any]] = None) -> List[Any]:
        """The replies of `indices` to `command`, all read (so that the pipes stay in step) before
        the first failure is raised: a dead subprocess, else an environment's exception (as the
        `RLGraphEnvError` of `SequentialVectorEnv.step` for a vector step, given its `actions`
        of all envs, else as the environment raised it)."""
        replies, died, failed = [], None, None
        for index in indices:
            try:
                ok, payload = self._conns[index].recv()
            except (OSError, EOFError):
                died = index if died is None else died
                replies.append(None)
                continue
            except BaseException:  # E.g. KeyboardInterrupt: replies are left unread in the pipes.
                self._broken = f"a {command} call was interrupted while env {index} stepped"
                raise
            if not ok and failed is None:
                failed = (index, _rebuild_exception(payload))
            replies.append(payload)
        if died is not None:
            self._broken = f"the subprocess of env {died} died"
            raise self._died(died, command)
        if failed is not None:
            index, error = failed
            if actions is not None:
                raise step_error(error, self._describe(index), index, actions[index]) from error
            raise error  # As the environment raised it (SequentialVectorEnv does not wrap these either).
        return replies

    def _describe(self, index: int) -> str:
        return str(self.environments[index]) if index < len(self.environments) else f"env {index}"

    def _died(self, index: int, command: str) -> RLGraphEnvError:
        process = self._processes[index]
        process.join(timeout=5)
        code = process.exitcode
        cause = ChildProcessError(f"process {process.pid} of env {index} exited with code {code}")
        if command == "__init__":  # It died before it could report its environment.
            where = f"{type(self).__name__}(env {index} of {self.num_environments})"
            hint = ("its output above says why; a spawned process runs the main script again, so a script "
                    "read from stdin cannot start one, and a script needs `if __name__ == \"__main__\":`.")
        else:
            where = f"{self._describe(index)}.{command}"
            hint = ("it was killed or crashed (out of memory, a segfault in native code); this AsyncVectorEnv "
                    "cannot go on: terminate it and make a new one.")
        error = RLGraphEnvError("the environment's subprocess died", where=where, env_index=index,
                                received=f"exit code {code} of process {process.pid}", hint=hint)
        error.__cause__ = cause
        return error

    def _check_usable(self, command: str) -> None:
        if not self._finalizer.alive:
            raise RLGraphError("the environments are terminated", where=f"{type(self).__name__}.{command}",
                               hint="make a new AsyncVectorEnv.")
        if self._broken:
            raise RLGraphEnvError("an environment's subprocess is gone", where=f"{type(self).__name__}.{command}",
                                  received=self._broken, hint="terminate this AsyncVectorEnv and make a new one.")


def _check_plain_data(value: Any, where: str, path: str) -> None:
    """Raises unless `value` is JSON-like data (what a subprocess can rebuild an env from)."""
    if isinstance(value, _JSON_SCALARS):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                break
            _check_plain_data(item, where, f"{path}.{key}")
        else:
            return
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_plain_data(item, where, f"{path}[{i}]")
        return
    raise RLGraphError("the env spec must be plain data: each subprocess builds its environment from it", where=where,
                       expected="dicts with string keys, lists, strings, numbers, booleans and null",
                       received=f"{type(value).__name__} at {path}",
                       hint="use SequentialVectorEnv (training_spec.vectorization 'sync') for environment objects "
                            "and callables.")


def _rebuild_exception(payload: Tuple[str, str, Optional[bytes], str]) -> BaseException:
    """The exception a subprocess reported, with its traceback text chained as a `ChildTraceback`."""
    type_name, message, pickled, text = payload
    error = None
    if pickled is not None:
        try:
            error = pickle.loads(pickled)  # noqa: S301 - from our own subprocess
        except Exception:  # The class cannot be rebuilt here: stand in for it.
            error = None
    if not isinstance(error, BaseException):
        error = EnvProcessError(f"{type_name}: {message}")
    error.__cause__ = ChildTraceback(text)
    return error


def _exception_payload(error: BaseException) -> Tuple[str, str, Optional[bytes], str]:
    try:
        pickled = pickle.dumps(error)
    except Exception:
        pickled = None
    return type(error).__name__, str(error), pickled, "".join(traceback.format_exception(error))


def _child_main(conn: Any, env_spec: Any, allow_env_module_import: bool = False, trusted: tuple = ()) -> None:
    """A subprocess: builds its environment, reports (description, spaces), then serves commands
    until "close" or until the parent goes away. `allow_env_module_import`: the parent's
    `env_module_import_allowed()`; `trusted`: the parent's `trusted_modules()`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle.
    os.environ[ENV_MODULE_IMPORT_VARIABLE] = "1" if allow_env_module_import else "0"
    trust_modules(trusted)
    try:
        env = Environment.from_spec(env_spec)
        conn.send((True, (str(env), env.state_space, env.action_space)))
    except BaseException as error:
        conn.send((False, _exception_payload(error)))
        conn.close()
        return
    commands = {"step": env.step, "reset": lambda _: env.reset(), "render": lambda _: env.render(),
                "seed": env.seed}
    try:
        while True:
            try:
                command, data = conn.recv()
            except (EOFError, OSError):
                break  # The parent has gone.
            if command == "close":
                break
            try:
                reply = (True, commands[command](data))
            except Exception as error:
                reply = (False, _exception_payload(error))
            conn.send(reply)
    finally:
        try:
            env.terminate()
        finally:
            conn.close()


def _shut_down(processes: List[Any], conns: List[Any], timeout: float = 5.0) -> None:
    """Asks every subprocess to close, then terminates (and at last kills) those still running,
    and joins them all, so that none is left behind."""
    for conn in conns:
        try:
            conn.send(("close", None))
        except (OSError, EOFError):
            pass
    deadline = time.monotonic() + timeout
    for process, conn in zip(processes, conns):
        # A reply left unread (an interrupted or broken call) could block the subprocess in its send.
        while process.is_alive() and time.monotonic() < deadline:
            try:
                if conn.poll(0.05):
                    conn.recv()
            except (OSError, EOFError):
                process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.terminate()
            process.join(1.0)
        if process.is_alive():
            process.kill()
            process.join()
    for conn in conns:
        conn.close()
