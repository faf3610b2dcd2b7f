"""Shared fixtures: the `backend` fixture runs a test body once per backend. And which tests must run
on the same pytest-xdist worker (the root conftest.py makes `--dist loadgroup` the default)."""
import os
from pathlib import Path

import pytest

from rlgraph.backend_system import BACKENDS, is_backend_installed

TESTS = Path(__file__).resolve().parent

# Modules whose tests start Ray (a local `ray.init`, a `ray start --head` cluster, an executor in
# mode "ray" that starts one, in the test's process or in a child it runs); a probe that watched for raylet processes during a whole run found
# no other module that starts one (test_rllib_impala_peer.py checks that RLlib's module imports
# without Ray). They form one xdist group, so that they run one after another
# on one worker: each Ray of 2 CPUs wants the whole 2-core machine, two at once would fight over the
# dashboard agent's fixed port (52365) and the token file ~/.ray/auth_token, and
# test_apex_ray_cluster.py needs a process in which no other Ray is running.
RAY_MODULES = {
    "test_apex_ray.py",
    "test_apex_ray_cluster.py",
    "test_cli_apex.py",
    "test_hostile_distributed_ray.py",
    "test_impala_ray.py",
    "test_ray_learner_group.py",
}


@pytest.fixture(params=BACKENDS)
def backend(request):
    """The backend name ("tf" or "pytorch"); each test using it runs on both backends."""
    if not is_backend_installed(request.param):
        pytest.skip(reason=f"backend {request.param!r} is not installed (install the '.[tf,torch]' extras)")
    return request.param


def visible_gpus(backend: str) -> int:
    """How many GPUs `backend` sees (0 on a CPU-only machine or build)."""
    if backend == "pytorch":
        import torch
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    import tensorflow as tf
    return len(tf.config.list_physical_devices("GPU"))


@pytest.fixture(params=["cpu", "cuda"])
def device(request, backend):
    """An `execution_spec.device` of this machine: "cpu" always, "cuda" where `backend` sees a GPU (the
    case is skipped with that reason elsewhere)."""
    if request.param == "cuda" and not visible_gpus(backend):
        pytest.skip(reason=f"{backend} sees no GPU on this machine (the CPU case runs)")
    return request.param


def _shared_fixture_keys(item) -> list:
    """For each fixture of this directory's test modules and conftests that lives longer than one test
    (scope class, module, package or session) and that `item` uses: the fixture's name, with its
    parameter where it has one (e.g. "exported=tf")."""
    info = getattr(item, "_fixtureinfo", None)
    keys = []
    for name, definitions in (info.name2fixturedefs.items() if info is not None else ()):
        definition = definitions[-1]
        code = getattr(definition.func, "__code__", None)
        if definition.scope == "function" or code is None or TESTS not in Path(code.co_filename).parents:
            continue
        callspec = getattr(item, "callspec", None)
        if callspec is not None and name in callspec.params:
            keys.append(f"{name}={callspec.params[name]}")
        else:
            keys.append(name)
    return sorted(keys)


def xdist_group_of(item):
    """The xdist group of a test, or None (then any worker may run it, in any order):

    - "ray" for the modules of RAY_MODULES;
    - "<module>" or "<module>:<fixture>=<param>,..." for a test that uses a module-scoped (or wider)
      fixture of this directory: all tests sharing that fixture (and its parameter) run on one worker,
      which builds it once (a docs site, the exports of one backend, a training run, an agent).
    """
    module = item.nodeid.split("::", 1)[0]
    if os.path.basename(module) in RAY_MODULES:
        return "ray"
    keys = _shared_fixture_keys(item)
    if not keys:
        return None
    params = [key for key in keys if "=" in key]
    return f"{module}:{','.join(params)}" if params else module


def pytest_collection_modifyitems(config, items):
    """Under `--dist loadgroup` (the default, see the root conftest.py), marks the tests that must share
    a worker with their xdist_group."""
    if getattr(config, "workerinput", {}).get("rlgraph_dist") != "loadgroup":
        return  # Serial, or another --dist mode (and the xdist_group mark is only known with pytest-xdist).
    for item in items:
        group = xdist_group_of(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
