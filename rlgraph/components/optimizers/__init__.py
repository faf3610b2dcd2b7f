"""Optimizers: components that update other components' variables from a loss (gradient-based update rules)."""
from rlgraph.components.optimizers.local_optimizers import *  # noqa: F401,F403
from rlgraph.components.optimizers.local_optimizers import __all__ as _local_all
from rlgraph.components.optimizers.horovod_optimizer import HorovodOptimizer
from rlgraph.components.optimizers.optimizer import Optimizer

__all__ = ["HorovodOptimizer", "Optimizer"] + _local_all
