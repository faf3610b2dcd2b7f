"""How many CPUs this process may really use: the default of every "one per core" choice (seed
processes of `rlgraph train --seeds`, benchmark `--jobs`, EnvPool threads, the test suite's workers).

`os.cpu_count()` counts the machine's CPUs. A process may be allowed fewer: its CPU affinity (taskset,
cpusets) and, in a container, a CFS quota of its cgroup (`docker run --cpus 2`, Kubernetes CPU
limits), which lets a 64-CPU host give it the time of 2 CPUs. Sizing a pool by `os.cpu_count()`
there starts 64 processes that share 2 CPUs: each pays its start-up and imports, and the kernel
throttles them all.
"""
from __future__ import annotations

import math
import os
from typing import Optional

# cgroup v2 (the unified hierarchy) and v1's CPU controller, where a container usually finds its own cgroup.
CGROUP_V2_MAX = "/sys/fs/cgroup/cpu.max"
CGROUP_V1_QUOTA = "/sys/fs/cgroup/cpu/cpu.cfs_quota_us"
CGROUP_V1_PERIOD = "/sys/fs/cgroup/cpu/cpu.cfs_period_us"


def _read(path: str) -> Optional[str]:
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (OSError, UnicodeDecodeError):
        return None


def cgroup_cpu_limit(v2_max: str = CGROUP_V2_MAX, v1_quota: str = CGROUP_V1_QUOTA,
                     v1_period: str = CGROUP_V1_PERIOD) -> Optional[float]:
    """The CPUs' worth of time this process's cgroup may use (quota / period), or None without a limit
    (no cgroup CPU controller, "max", a quota of -1, or a file that cannot be read or parsed)."""
    text = _read(v2_max)
    if text is not None:
        parts = text.split()
        if len(parts) == 2 and parts[0] != "max":
            try:
                quota, period = int(parts[0]), int(parts[1])
            except ValueError:
                return None
            return quota / period if quota > 0 and period > 0 else None
        return None
    quota, period = _read(v1_quota), _read(v1_period)
    if quota is None or period is None:
        return None
    try:
        quota_us, period_us = int(quota), int(period)
    except ValueError:
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def usable_cpus() -> int:
    """The CPUs this process may use: those of its affinity mask, at most its cgroup's CPU quota
    rounded up (a quota of 1.5 CPUs gives 2); at least 1."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # Not Linux.
        cpus = os.cpu_count() or 1
    limit = cgroup_cpu_limit()
    if limit is not None:
        cpus = min(cpus, math.ceil(limit))
    return max(1, cpus)
