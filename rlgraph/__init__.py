"""rlgraph: reinforcement-learning agents built from components, for TensorFlow 2 and PyTorch.

`import rlgraph` imports neither TensorFlow nor PyTorch and writes nothing to the home directory.
See docs/architecture.md for the packages and their layers.
"""
from rlgraph.backend_system import (backend_scope, get_backend, get_distributed_backend, set_backend,
                                    set_distributed_backend)

__version__ = "0.1.0"

# The package face is the composition root: it may import every layer, and it wires the two that
# must not import each other. `rlgraph.environments` registers how an environment is made from its
# spec (`rlgraph.utils.environment_maker`); the environment stepper (a component) and IMPALA's
# in-process actors (an agent) make environments through that, below the environments layer. Python
# runs this file before any submodule, so the maker is registered wherever rlgraph is used.
import rlgraph.environments  # noqa: E402,F401  (light: no backend, and gymnasium only when used)

__all__ = ["__version__", "get_backend", "set_backend", "backend_scope", "get_distributed_backend",
           "set_distributed_backend"]
