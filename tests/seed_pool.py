"""The worker processes that run the seeds of the learning tests, shared by every learning test of
one pytest process.

A learning test trains each seed in a separate process (one per core, one backend thread each).
Spawning a new process per seed made each seed import torch (about 1.5 s of CPU), TensorFlow
(about 4.5 s) and rlgraph again: over the suite's ~40 seeds that was about a tenth of its CPU
time. Here the processes are spawned once (no forked TF/torch state) and reused, so each imports
them once. A run in a reused process gives exactly what it gives in a fresh one: every run seeds
numpy, the backend and the environment, and builds its own agent (pinned by
`test_seed_runs_in_a_reused_worker_equal_a_fresh_process` in tests/test_learning.py).

A worker that dies breaks the pool (`BrokenProcessPool`, which fails the test that saw it); the
next test gets a new pool.
"""
import atexit
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from rlgraph.utils.cpus import usable_cpus

_pool = None


def seed_pool() -> ProcessPoolExecutor:
    """This process's pool of spawned seed workers (one per core), created at the first call."""
    global _pool
    if _pool is None:
        _pool = ProcessPoolExecutor(max_workers=pool_size(), mp_context=multiprocessing.get_context("spawn"))
    return _pool


def pool_size() -> int:
    return usable_cpus()


def discard_if_broken(error: BaseException) -> None:
    """Forgets the pool after a worker died (`error` is what the test saw), so that later tests
    start a new one."""
    global _pool
    if isinstance(error, BrokenProcessPool) and _pool is not None:
        _pool.shutdown(wait=False, cancel_futures=True)
        _pool = None


def map_seeds(fn, *args_per_seed) -> list:
    """`fn(*args)` for each seed's arguments, in the pool; results in order."""
    try:
        return list(seed_pool().map(fn, *args_per_seed))
    except BaseException as error:
        discard_if_broken(error)
        raise


@atexit.register
def _shutdown() -> None:
    if _pool is not None:
        _pool.shutdown(wait=True, cancel_futures=True)
