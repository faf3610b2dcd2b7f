"""Backend selection: defaults, aliases, environment variable, scopes, distributed backend."""
import threading

import pytest
from backend_marks import needs_tf

import rlgraph
from rlgraph import backend_system
from rlgraph.utils import RLGraphBackendUnavailableError, RLGraphError


@pytest.fixture(autouse=True)
def clean_backend_state(monkeypatch):
    monkeypatch.delenv("RLGRAPH_BACKEND", raising=False)
    monkeypatch.delenv("RLGRAPH_DISTRIBUTED_BACKEND", raising=False)
    monkeypatch.setattr(backend_system, "_default_backend", None)
    monkeypatch.setattr(backend_system, "_default_distributed_backend", None)


def test_default_is_pytorch_when_installed():
    assert rlgraph.get_backend() == "pytorch"


def test_default_falls_back_to_tf_without_torch(monkeypatch):
    monkeypatch.setattr(backend_system, "is_backend_installed", lambda name: name == "tf")
    assert rlgraph.get_backend() == "tf"


def test_no_backend_installed_raises_clear_error(monkeypatch):
    monkeypatch.setattr(backend_system, "is_backend_installed", lambda name: False)
    with pytest.raises(RLGraphBackendUnavailableError) as info:
        rlgraph.get_backend()
    assert "neither PyTorch nor TensorFlow" in str(info.value)
    assert "pip install" in str(info.value)
    assert isinstance(info.value, ImportError)


@pytest.mark.parametrize("name, expected", [pytest.param("tf", "tf", marks=needs_tf), ("pytorch", "pytorch"),
                                            ("torch", "pytorch"), pytest.param("TF", "tf", marks=needs_tf),
                                            pytest.param("tensorflow", "tf", marks=needs_tf)])
def test_set_backend_and_aliases(name, expected):
    rlgraph.set_backend(name)
    assert rlgraph.get_backend() == expected
    rlgraph.set_backend(None)
    assert rlgraph.get_backend() == "pytorch"


def test_unknown_backend_names_the_argument_and_choices():
    with pytest.raises(RLGraphError) as info:
        rlgraph.set_backend("jax")
    message = str(info.value)
    assert "set_backend" in message and "'jax'" in message and "'tf'" in message and "'pytorch'" in message


def test_set_backend_of_missing_package(monkeypatch):
    monkeypatch.setattr(backend_system, "is_backend_installed", lambda name: name == "pytorch")
    with pytest.raises(RLGraphBackendUnavailableError) as info:
        rlgraph.set_backend("tf")
    assert info.value.backend == "tf" and ".[tf]" in str(info.value)


@needs_tf
def test_environment_variable(monkeypatch):
    monkeypatch.setenv("RLGRAPH_BACKEND", "tf")
    assert rlgraph.get_backend() == "tf"
    rlgraph.set_backend("torch")  # an explicit call wins over the environment
    assert rlgraph.get_backend() == "pytorch"


def test_bad_environment_variable_names_the_variable(monkeypatch):
    monkeypatch.setenv("RLGRAPH_BACKEND", "theano")
    with pytest.raises(RLGraphError, match="RLGRAPH_BACKEND"):
        rlgraph.get_backend()


@needs_tf
def test_backend_scope_nests_and_restores():
    rlgraph.set_backend("pytorch")
    with rlgraph.backend_scope("tf"):
        assert rlgraph.get_backend() == "tf"
        with rlgraph.backend_scope("torch"):
            assert rlgraph.get_backend() == "pytorch"
        assert rlgraph.get_backend() == "tf"
    assert rlgraph.get_backend() == "pytorch"


@needs_tf
def test_backend_scope_restores_after_exception():
    with pytest.raises(ValueError):
        with rlgraph.backend_scope("tf"):
            raise ValueError("boom")
    assert rlgraph.get_backend() == "pytorch"


@needs_tf
def test_backend_scope_is_per_thread():
    seen = {}
    inside = threading.Event()
    release = threading.Event()

    def worker():
        with rlgraph.backend_scope("tf"):
            seen["worker"] = rlgraph.get_backend()
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=worker)
    thread.start()
    inside.wait(5)
    seen["main"] = rlgraph.get_backend()
    release.set()
    thread.join()
    assert seen == {"worker": "tf", "main": "pytorch"}


def test_distributed_backend(monkeypatch):
    assert rlgraph.get_distributed_backend() is None
    monkeypatch.setenv("RLGRAPH_DISTRIBUTED_BACKEND", "ray")
    assert rlgraph.get_distributed_backend() == "ray"
    monkeypatch.setenv("RLGRAPH_DISTRIBUTED_BACKEND", "none")
    assert rlgraph.get_distributed_backend() is None
    monkeypatch.setenv("RLGRAPH_DISTRIBUTED_BACKEND", "mpi")
    with pytest.raises(RLGraphError, match="RLGRAPH_DISTRIBUTED_BACKEND"):
        rlgraph.get_distributed_backend()
    with pytest.raises(RLGraphError, match="'ray' or None"):
        rlgraph.set_distributed_backend("horovod")


def test_set_distributed_backend(monkeypatch):
    monkeypatch.setattr(backend_system, "is_backend_installed", lambda name: True)
    rlgraph.set_distributed_backend("ray")
    assert rlgraph.get_distributed_backend() == "ray"
    rlgraph.set_distributed_backend(None)
    assert rlgraph.get_distributed_backend() is None
