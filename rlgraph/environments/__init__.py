"""Environment adapters. Imports neither TensorFlow nor PyTorch."""
from rlgraph.environments.environment import Environment

Environment.__lookup_classes__ = {}

__all__ = ["Environment"]
