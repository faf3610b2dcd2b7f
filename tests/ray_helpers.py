"""The local Ray of the Ray test modules (tests/conftest.py's RAY_MODULES run them one after another)."""
import contextlib
import shutil
import tempfile

import pytest


@contextlib.contextmanager
def local_ray_session(ray):
    """A Ray of 2 CPUs in this process, always shut down afterwards (its temp dir removed)."""
    if ray.is_initialized():
        pytest.fail("Ray is already initialized in this process; the Ray tests start their own")
    temp_dir = tempfile.mkdtemp(prefix="r", dir="/tmp")  # Short: Ray's socket paths have a length limit.
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir)
        yield
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
