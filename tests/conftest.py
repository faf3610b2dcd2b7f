"""Shared fixtures: the `backend` fixture runs a test body once per backend."""
import pytest

from rlgraph.backend_system import BACKENDS, is_backend_installed


@pytest.fixture(params=BACKENDS)
def backend(request):
    """The backend name ("tf" or "pytorch"); each test using it runs on both backends."""
    if not is_backend_installed(request.param):
        pytest.skip(reason=f"backend {request.param!r} is not installed (install the '.[tf,torch]' extras)")
    return request.param
