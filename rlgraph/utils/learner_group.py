"""The data-parallel learner group of this process: who the other learners are and how to talk to them.

A learner group is N processes that train copies of one agent on their own data and keep the copies
identical: every optimizer step averages the gradients over the group (`all_reduce_mean`, called by
`LocalOptimizer` between computing its gradients and clipping them, so clipping sees what one
learner on the whole batch would see), and the trainable weights start from rank 0's (`broadcast`).
The engines are the maintained ones: `torch.distributed` with gloo for PyTorch, TensorFlow's
collective ops (set up by `MultiWorkerMirroredStrategy`, used directly) for TF.

A process joins at most one group (`join`), before it builds an agent; `rlgraph.execution.learners`
starts the processes and calls `join` in each. Outside a group (`current()` is None) nothing here
runs and an optimizer is exactly its single-process self. This module imports no backend at import
time (the layer rule of `rlgraph.utils`).

>>> current() is None
True
"""
from __future__ import annotations

import contextlib
import datetime
import os
import sys
import threading
from typing import Any, Dict, Iterator, List, Optional, Sequence

import numpy as np

from rlgraph.utils.rlgraph_errors import RLGraphDistributedError, RLGraphSpecError

#: The backends a group can run on.
BACKENDS = ("pytorch", "tf")

_group: Optional["LearnerGroup"] = None
_suspended = threading.local()


class LearnerGroup:
    """This process's membership of a learner group (made by `join`).

    Args:
        rank: This learner's index in [0, size).
        size: The number of learners.
        backend: "pytorch" (gloo on `torch.distributed`) or "tf" (TF collective ops).
        addresses: One "127.0.0.1:port" (or "host:port") per rank: for PyTorch only the first is
            used (rank 0's rendezvous store), for TF each rank's gRPC server listens on its own.
        timeout: Seconds a collective may wait for the other learners before it fails (so a lost
            peer is an error, not a hang; gloo's and TF's own timeouts).
    """

    def __init__(self, rank: int, size: int, backend: str, addresses: Sequence[str], timeout: float = 300.0):
        self.rank, self.size, self.backend = int(rank), int(size), backend
        self.addresses, self.timeout = list(addresses), float(timeout)
        self._instance_key = 0  # TF: the next collective instance key (every rank counts alike).
        self._strategy = None

    @property
    def where(self) -> str:
        return f"learner group (rank {self.rank} of {self.size}, {self.backend})"

    # --- Set-up -------------------------------------------------------------------------------------------
    def _start(self) -> None:
        if self.backend == "pytorch":
            import torch.distributed as dist
            host, port = self.addresses[0].rsplit(":", 1)
            dist.init_process_group("gloo", init_method=f"tcp://{host}:{port}", rank=self.rank,
                                    world_size=self.size, timeout=datetime.timedelta(seconds=self.timeout))
            return
        import tensorflow as tf
        cluster = tf.train.ClusterSpec({"worker": self.addresses})
        resolver = tf.distribute.cluster_resolver.SimpleClusterResolver(
            cluster, task_type="worker", task_id=self.rank, rpc_layer="grpc")
        # The strategy enables TF's collective ops for this cluster (and starts this rank's gRPC
        # server); rlgraph then issues the collectives itself, inside its own tf.functions. (Its
        # native code prints a peer's device name and log lines while it connects: kept off the
        # terminal; a failure still raises with its message.)
        with _output_to_devnull():
            self._strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)

    def _stop(self) -> None:
        if self.backend == "pytorch":
            import torch.distributed as dist
            if dist.is_initialized():
                dist.destroy_process_group()

    # --- Collectives --------------------------------------------------------------------------------------
    def all_reduce_mean(self, tensors: List[Any]) -> List[Any]:
        """The element-wise mean over the group of each tensor of `tensors` (backend tensors of one
        dtype, inside a graph function); one collective for the whole list."""
        if not tensors:
            return tensors
        if self.backend == "pytorch":
            import torch
            import torch.distributed as dist
            flat = torch.cat([t.reshape(-1) for t in tensors])
            dist.all_reduce(flat, op=dist.ReduceOp.SUM)
            flat = flat / self.size
            out, start = [], 0
            for t in tensors:
                out.append(flat[start:start + t.numel()].view_as(t))
                start += t.numel()
            return out
        import tensorflow as tf
        from tensorflow.python.ops import collective_ops
        shapes = [tf.shape(t) for t in tensors]
        sizes = [tf.size(t) for t in tensors]
        flat = tf.concat([tf.reshape(t, [-1]) for t in tensors], axis=0)
        flat = collective_ops.all_reduce_v2(flat, group_size=self.size, group_key=1,
                                            instance_key=self._next_instance_key(), merge_op="Add", final_op="Div",
                                            timeout=self.timeout)
        return [tf.reshape(part, shape) for part, shape in zip(tf.split(flat, sizes), shapes)]

    def all_reduce_sum_numpy(self, array: np.ndarray) -> np.ndarray:
        """The element-wise sum over the group of a float64 numpy array (outside graphs)."""
        array = np.ascontiguousarray(array, dtype=np.float64)
        if self.backend == "pytorch":
            import torch
            import torch.distributed as dist
            tensor = torch.from_numpy(array.copy())
            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
            return tensor.numpy()
        import tensorflow as tf
        from tensorflow.python.ops import collective_ops
        with tf.device(f"/job:worker/replica:0/task:{self.rank}/device:CPU:0"):
            out = collective_ops.all_reduce_v2(tf.constant(array), group_size=self.size, group_key=1,
                                               instance_key=self._next_instance_key(), merge_op="Add", final_op="Id",
                                               timeout=self.timeout)
        return out.numpy()

    def broadcast(self, arrays: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        """Rank 0's `arrays` on every rank (same names, shapes and dtypes on all ranks; numbers of any
        numeric dtype, sent as float64, so integers are exact up to 2**53)."""
        names = sorted(arrays)
        values = [np.asarray(arrays[n]) for n in names]
        flat = np.concatenate([v.reshape(-1).astype(np.float64) for v in values]) if values else np.zeros(0)
        summed = self.all_reduce_sum_numpy(flat if self.rank == 0 else np.zeros_like(flat))
        out, start = {}, 0
        for name, value in zip(names, values):
            out[name] = summed[start:start + value.size].reshape(value.shape).astype(value.dtype)
            start += value.size
        return out

    def gather_scalars(self, value: float) -> np.ndarray:
        """[size] float64: every rank's `value`, by rank."""
        slots = np.zeros(self.size)
        slots[self.rank] = value
        return self.all_reduce_sum_numpy(slots)

    def _next_instance_key(self) -> int:
        self._instance_key += 1
        return self._instance_key


def free_local_addresses(n: int, host: str = "127.0.0.1") -> List[str]:
    """`n` "HOST:PORT" addresses of this machine (`host`: one of its addresses) on ports that were
    free a moment ago (bound at once, then released for the learners to take)."""
    import socket
    sockets = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((host, 0))
            sockets.append(s)
        return [f"{host}:{s.getsockname()[1]}" for s in sockets]
    finally:
        for s in sockets:
            s.close()


@contextlib.contextmanager
def _output_to_devnull() -> Iterator[None]:
    """File descriptors 1 and 2 (native code's stdout and stderr too) go to /dev/null in the block."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        yield
    finally:
        for fd, copy in zip((1, 2), saved):
            os.dup2(copy, fd)
            os.close(copy)
        os.close(devnull)


def join(rank: int, size: int, backend: str, addresses: Sequence[str], timeout: float = 300.0) -> LearnerGroup:
    """Makes this process rank `rank` of a group of `size` learners (blocks until all have joined).

    Raises:
        RLGraphSpecError: For a bad rank/size/backend or a second group in one process.
        RLGraphDistributedError: When the group cannot be formed (e.g. a rank never comes).
    """
    global _group
    if backend == "torch":
        backend = "pytorch"
    if backend not in BACKENDS:
        raise RLGraphSpecError("unknown learner-group backend", where="learner_group.join(backend)",
                               expected=list(BACKENDS), received=repr(backend))
    if not (isinstance(size, int) and size >= 1 and isinstance(rank, int) and 0 <= rank < size):
        raise RLGraphSpecError("rank must be in [0, size) and size >= 1", where="learner_group.join(rank, size)",
                               received=f"rank={rank!r}, size={size!r}")
    if _group is not None:
        raise RLGraphSpecError("this process is in a learner group already", where="learner_group.join",
                               received=_group.where, hint="one process is one learner of one group.")
    group = LearnerGroup(rank, size, backend, addresses, timeout)
    try:
        group._start()
    except Exception as error:  # noqa: BLE001 - the engines raise many kinds for an unreachable peer.
        raise RLGraphDistributedError(f"cannot form the learner group ({type(error).__name__}: {error})",
                                      where=group.where) from error
    _group = group
    return group


def leave() -> None:
    """Leaves the group of this process (if any)."""
    global _group
    if _group is not None:
        group, _group = _group, None
        group._stop()


def current() -> Optional[LearnerGroup]:
    """The group of this process, None outside a group or inside `suspended()`."""
    if getattr(_suspended, "depth", 0):
        return None
    return _group


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Within it (this thread), `current()` is None: what is built and traced here is a single
    learner's (e.g. a reference model in a test, or an evaluation copy)."""
    _suspended.depth = getattr(_suspended, "depth", 0) + 1
    try:
        yield
    finally:
        _suspended.depth -= 1
