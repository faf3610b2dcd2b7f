"""Data-parallel training: N learner processes, one agent copy each, gradients averaged every update.

`rlgraph train CONFIG --learners N` (or `execution_spec.num_learners: N`) runs `train_learners`: it
resolves the config here (so that a bad config fails before any process starts), picks free local
ports and starts N learner processes (`python -m rlgraph.execution.learner_process SPEC`). Each
joins the learner group (`rlgraph.utils.learner_group`: gloo on `torch.distributed` for PyTorch,
TF's collective ops for TF) and trains with `training.train`, which knows its rank: every rank steps
its own environments (seeded apart: seed + 1000 * rank), acts and observes on its own data, and its
optimizers average their gradients over the group (the DD-PPO pattern, Wijmans et al. 2019); the
weights start from rank 0's. Rank 0 alone evaluates, logs, checkpoints and writes the run folder,
which looks like a single-process run's; its config records `execution_spec.num_learners`, so
`--resume` continues with the same group size.

Faults: this process watches the learners; when one exits with an error (or is killed) the others
are stopped and `RLGraphDistributedError` names the rank, its error and the run folder to resume
from. Ctrl-C stops every learner.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from typing import Any, Dict, Iterable, Iterator, List, Optional

from rlgraph.utils import learner_group
from rlgraph.utils.module_imports import trust_spec_modules
from rlgraph.utils.rlgraph_errors import RLGraphDistributedError, RLGraphSpecError

logger = logging.getLogger(__name__)

#: Seconds the learners get to exit after SIGTERM before they are killed.
STOP_GRACE_S = 10.0
#: Seconds the learners get to start and form their group.
JOIN_TIMEOUT_S = 300.0


def num_learners_of(config: dict) -> int:
    """The learner count of a resolved config (`execution_spec.num_learners`, default 1)."""
    execution = config.get("execution_spec") or {}
    value = execution.get("num_learners", 1)
    if value is None:
        return 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RLGraphSpecError("execution_spec.num_learners must be an integer >= 1",
                               where="train(execution_spec.num_learners, --learners)", received=repr(value))
    return value


def train_learners(config: dict, output_dir: Optional[str] = None, resume: Optional[str] = None,
                   progress: bool = True, hooks: Iterable[Any] = (), loggers: Iterable[dict] = (),
                   timeout: Optional[float] = None) -> Dict[str, Any]:
    """Trains a resolved `config` with `execution_spec.num_learners` processes; returns rank 0's
    summary (see `training.train`) plus "num_learners".

    Args:
        config: The resolved config (`run_config.resolve_config`, or a resumed run's).
        output_dir: Rank 0's run folder (None: nothing is written).
        resume: The run folder to continue (its newest checkpoint; every rank loads it).
        progress: Rank 0 shows a progress bar.
        hooks: Rank 0's extra hooks, as "package.module:Class" names (objects cannot be sent).
        loggers: Rank 0's extra `training_spec.loggers` entries.
        timeout: Seconds the whole run may take (None: no limit); past it the learners are stopped
            and `RLGraphDistributedError` is raised.

    Raises:
        RLGraphSpecError: For a distributed (Ray) config: its executor starts its learners on Ray
            (`execution/ray/learner_group.py`).
        RLGraphDistributedError: When a learner fails, is killed, or the run times out.
    """
    from rlgraph.execution.run_config import is_distributed
    size = num_learners_of(config)
    if is_distributed(config):
        raise RLGraphSpecError("--learners is for agents that train in one process", where="train(--learners)",
                               received=f"agent type {config.get('type')!r} with execution_spec.ray_spec",
                               hint="an Ape-X or IMPALA executor starts its num_learners learners as Ray actors itself: "
                                    "use train(config) (docs/distributed.md).")
    hooks = list(hooks or ())
    if any(not isinstance(hook, str) for hook in hooks):
        raise RLGraphSpecError("hooks of a multi-learner run must be names", where="train(hooks, --learners)",
                               expected='"package.module:Class" strings (rank 0 imports them)',
                               received=", ".join(type(h).__name__ for h in hooks if not isinstance(h, str)))
    backend = _backend_of(config)
    trust_spec_modules(config)  # (The learners may import the modules of its types that are imported here.)
    scratch = tempfile.mkdtemp(prefix="rlgraph-learners-")
    processes: List[subprocess.Popen] = []
    try:
        addresses = learner_group.free_local_addresses(size)
        for rank in range(size):
            spec = {"rank": rank, "size": size, "backend": backend, "addresses": addresses, "config": config,
                    "output_dir": output_dir if rank == 0 else None, "resume": resume,
                    "progress": bool(progress and rank == 0), "scratch": scratch,
                    "hooks": hooks if rank == 0 else [], "loggers": list(loggers or ()) if rank == 0 else []}
            path = os.path.join(scratch, f"spec-{rank}.json")
            with open(path, "w") as f:
                json.dump(spec, f)
            processes.append(subprocess.Popen([sys.executable, "-m", "rlgraph.execution.learner_process", path],
                                              stdin=subprocess.DEVNULL, preexec_fn=_end_with_parent))
        with _sigterm_raises():
            _wait(processes, scratch, output_dir or resume, timeout)
        with open(os.path.join(scratch, "summary-0.json")) as f:
            summary = json.load(f)
        summary["num_learners"] = size
        summary["total_timesteps"] = summary["timesteps"] * size  # Each learner stepped its own envs.
        return summary
    except BaseException:
        _stop(processes)  # (Those started before a failure to start the next.)
        raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _wait(processes: List[subprocess.Popen], scratch: str, run_dir: Optional[str], timeout: Optional[float]) -> None:
    """Returns when every learner has exited cleanly; else stops them all and raises."""
    deadline = None if timeout is None else time.monotonic() + timeout
    join_deadline = time.monotonic() + JOIN_TIMEOUT_S
    try:
        while True:
            codes = [p.poll() for p in processes]
            failed = [rank for rank, code in enumerate(codes) if code not in (None, 0)]
            if failed:
                # The first to fail is the cause; the others may fail after it (their peer is gone).
                rank = min(failed, key=lambda r: _exit_time(scratch, r))
                _stop(processes)
                raise _failure(rank, codes[rank], scratch, run_dir)
            if all(code == 0 for code in codes):
                return
            if join_deadline is not None and time.monotonic() > join_deadline:
                missing = [r for r in range(len(processes)) if not os.path.exists(os.path.join(scratch, f"joined-{r}"))]
                if missing:
                    _stop(processes)
                    raise RLGraphDistributedError(f"the learner group did not form within {JOIN_TIMEOUT_S:.0f} s: "
                                                  f"rank(s) {missing} did not join", where="train(--learners)",
                                                  hint="the learners talk over 127.0.0.1 on free ports; a firewall "
                                                       "or a machine without free ports stops them.")
                join_deadline = None
            if deadline is not None and time.monotonic() > deadline:
                _stop(processes)
                raise RLGraphDistributedError(f"the learner group did not finish within {timeout} s",
                                              where="train(--learners)", hint=_resume_hint(run_dir))
            time.sleep(0.1)
    except BaseException:
        _stop(processes)
        raise


def _end_with_parent() -> None:
    """(In the child, before exec.) Linux: SIGTERM to the learner when the launcher's thread dies,
    e.g. killed, so that no learner is left behind waiting for its peers."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@contextlib.contextmanager
def _sigterm_raises() -> Iterator[None]:
    """In the main thread: SIGTERM to the launcher raises (KeyboardInterrupt), so the learners are
    stopped on the way out instead of being left running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _stop(processes: List[subprocess.Popen]) -> None:
    for p in processes:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    end = time.monotonic() + STOP_GRACE_S
    for p in processes:
        try:
            p.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _exit_time(scratch: str, rank: int) -> float:
    """When rank `rank` reported its error (learners that were killed report none: they come first)."""
    path = os.path.join(scratch, f"error-{rank}.json")
    return os.path.getmtime(path) if os.path.exists(path) else 0.0


def _failure(rank: int, code: int, scratch: str, run_dir: Optional[str]) -> RLGraphDistributedError:
    how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    path = os.path.join(scratch, f"error-{rank}.json")
    cause = None
    if os.path.exists(path):
        with open(path) as f:
            cause = json.load(f)
    message = f"learner rank {rank} {how}"
    if cause:
        message += f": {cause['type']}: {cause['message']}"
        logger.info("learner rank %d failed:\n%s", rank, cause.get("traceback", ""))
    return RLGraphDistributedError(message, where="train(--learners)", hint=_resume_hint(run_dir))


def _resume_hint(run_dir: Optional[str]) -> str:
    if run_dir:
        return (f"the other learners were stopped; continue from the last checkpoint with "
                f"`rlgraph train --resume {run_dir}`.")
    return "the other learners were stopped; give --output-dir to keep checkpoints that a run can resume from."


def _backend_of(config: dict) -> str:
    from rlgraph.backend_system import get_backend
    backend = config.get("backend") or get_backend()
    return "pytorch" if backend == "torch" else backend
