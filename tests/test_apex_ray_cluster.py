"""Ape-X on a Ray cluster started with `ray start --head` (executor_spec.redis_address).

The head node runs as `ray start --block` in a session of its own; the fixture stops it with
SIGTERM (on which it shuts down the processes it started) and then SIGKILLs whatever it started
that is still alive, by pid. It never runs `ray stop`, which would stop every Ray on the machine.
This module must not share its process's Ray with tests/test_apex_ray.py (Ray is initialized
once per process): that module's fixture shuts its Ray down when its last test is done.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from rlgraph.backend_system import is_backend_installed
from rlgraph.execution.ray import ApexExecutor

ray = pytest.importorskip("ray", reason="Ray is not installed (install the '.[test]' extra)")

pytestmark = pytest.mark.slow


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _descendants(root):
    """Pids of all processes below `root` (from /proc)."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as handle:
                    parents[int(name)] = int(handle.read().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = [], [root]
    while frontier:
        current = frontier.pop()
        children = [pid for pid, parent in parents.items() if parent == current]
        found += children
        frontier += children
    return found


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture
def head_node():
    """A one-node cluster of 2 CPUs on a free port; yields its address "127.0.0.1:<port>"."""
    if ray.is_initialized():
        pytest.fail("Ray is already initialized in this process; the executor must connect to the cluster")
    temp_dir = tempfile.mkdtemp(prefix="rc", dir="/tmp")  # Short: Ray's socket paths have a length limit.
    port = _free_port()
    log_path = os.path.join(temp_dir, "ray-start.log")
    command = [os.path.join(os.path.dirname(sys.executable), "ray"), "start", "--head", "--block",
               "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
               f"--temp-dir={temp_dir}", "--disable-usage-stats"]
    # The cluster authenticates as this process does: a driver connecting to an explicit address
    # sends a token only if its RAY_AUTH_MODE says so (a local `ray.init` earlier in the process sets
    # it to "token"; the token is the user's ~/.ray/auth_token).
    env = dict(os.environ)
    env.setdefault("RAY_AUTH_MODE", "disabled")
    with open(log_path, "w") as log:
        head = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    started = []
    try:
        deadline = time.monotonic() + 90.0
        while True:
            with open(log_path) as log:
                text = log.read()
            if "Ray runtime started" in text:
                break
            if head.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"`ray start --head` did not come up (exit code {head.poll()}):\n{text[-3000:]}")
            time.sleep(0.2)
        started = _descendants(head.pid)
        yield f"127.0.0.1:{port}"
    finally:
        if ray.is_initialized():
            ray.shutdown()
        started = set(started) | set(_descendants(head.pid)) if head.poll() is None else set(started)
        if head.poll() is None:
            head.terminate()  # `ray start --block` shuts its processes down on SIGTERM.
            try:
                head.wait(timeout=40)
            except subprocess.TimeoutExpired:
                head.kill()
                head.wait(timeout=10)
        for pid in started:
            if _alive(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        shutil.rmtree(temp_dir, ignore_errors=True)


def test_workload_on_a_ray_start_cluster(head_node):
    backend = "pytorch" if is_backend_installed("pytorch") else "tf"
    config = {"type": "apex", "backend": backend, "n_step": 3,
              "network_spec": [{"type": "dense", "units": 16, "activation": "relu"}],
              "update_spec": {"batch_size": 32},
              "execution_spec": {"seed": 1, "ray_spec": {
                  "executor_spec": {"redis_address": head_node, "num_sample_workers": 2, "num_worker_samples": 50,
                                    "num_cpus_per_worker": 0.5, "num_cpus_per_replay_actor": 0.5},
                  "apex_replay_spec": {"memory_spec": {"capacity": 2000}, "min_sample_memory_size": 200}}}}
    executor = ApexExecutor({"type": "openai-gym", "gym_env": "CartPole-v1"}, config)
    try:
        assert ray.is_initialized() and ray.cluster_resources()["CPU"] == 2.0
        result = executor.execute_workload({"num_timesteps": 1000, "report_interval": 500,
                                            "report_interval_min_seconds": 0})
        assert result["timesteps_executed"] >= 1000 and result["updates"] > 0
        pids = result["worker_pids"] + result["shard_pids"]
        assert os.getpid() not in pids and len(set(pids)) == 3
        assert executor.replay_statistics()[0]["size"] > 0
    finally:
        executor.terminate()
    assert not ray.is_initialized()  # The executor connected to the cluster, so it disconnects.
