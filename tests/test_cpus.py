"""`rlgraph.utils.cpus`: the CPUs a process may use are its affinity, at most its cgroup's CPU quota."""
import os

import pytest

from rlgraph.utils import cpus


def _files(tmp_path, **contents):
    """Paths of cgroup files under tmp_path (None: a file that does not exist)."""
    paths = {}
    for name in ("v2_max", "v1_quota", "v1_period"):
        path = tmp_path / name
        if contents.get(name) is not None:
            path.write_text(contents[name])
        paths[name] = str(path)
    return paths


@pytest.mark.parametrize("contents, expected", [
    ({"v2_max": "200000 100000\n"}, 2.0),                   # docker --cpus 2 on cgroup v2
    ({"v2_max": "150000 100000"}, 1.5),
    ({"v2_max": "max 100000"}, None),                        # No limit.
    ({"v2_max": "garbage"}, None),
    ({"v2_max": "0 100000"}, None),
    ({"v1_quota": "50000", "v1_period": "100000"}, 0.5),    # cgroup v1
    ({"v1_quota": "-1", "v1_period": "100000"}, None),      # v1 without a limit
    ({"v1_quota": "x", "v1_period": "100000"}, None),
    ({"v1_quota": "50000"}, None),                           # No period file.
    ({}, None),                                              # No CPU controller at all.
    # The v2 file decides where it exists (a hybrid host may also show v1 files).
    ({"v2_max": "max 100000", "v1_quota": "50000", "v1_period": "100000"}, None),
])
def test_cgroup_cpu_limit(tmp_path, contents, expected):
    assert cpus.cgroup_cpu_limit(**_files(tmp_path, **contents)) == expected


@pytest.mark.parametrize("limit, affinity, expected", [
    (None, 8, 8),
    (2.0, 64, 2),    # A 2-CPU container on a 64-CPU host.
    (1.5, 64, 2),    # Rounded up.
    (0.2, 4, 1),
    (16.0, 4, 4),    # The affinity is smaller.
])
def test_usable_cpus_is_the_affinity_at_most_the_quota(monkeypatch, limit, affinity, expected):
    monkeypatch.setattr(cpus, "cgroup_cpu_limit", lambda: limit)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(affinity)), raising=False)
    assert cpus.usable_cpus() == expected


def test_this_machine():
    """On the machine running the tests: at least 1, at most the affinity (and os.cpu_count())."""
    count = cpus.usable_cpus()
    assert 1 <= count <= len(os.sched_getaffinity(0)) <= (os.cpu_count() or count)
