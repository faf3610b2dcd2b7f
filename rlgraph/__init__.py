"""rlgraph: reinforcement-learning agents built from components, for TensorFlow 2 and PyTorch.

`import rlgraph` imports neither TensorFlow nor PyTorch and writes nothing to the home directory.
"""
from rlgraph.backend_system import (backend_scope, get_backend, get_distributed_backend, set_backend,
                                    set_distributed_backend)

__version__ = "0.1.0"

__all__ = ["__version__", "get_backend", "set_backend", "backend_scope", "get_distributed_backend",
           "set_distributed_backend"]
