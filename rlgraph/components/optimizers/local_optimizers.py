"""The local optimizers under the module path of the reference API
(`rlgraph.components.optimizers.local_optimizers.AdamOptimizer`); each class has its own module."""
from rlgraph.components.optimizers.adadelta_optimizer import AdadeltaOptimizer  # noqa: F401
from rlgraph.components.optimizers.adagrad_optimizer import AdagradOptimizer  # noqa: F401
from rlgraph.components.optimizers.adam_optimizer import AdamOptimizer  # noqa: F401
from rlgraph.components.optimizers.gradient_descent_optimizer import GradientDescentOptimizer  # noqa: F401
from rlgraph.components.optimizers.local_optimizer import LocalOptimizer  # noqa: F401
from rlgraph.components.optimizers.nadam_optimizer import NadamOptimizer  # noqa: F401
from rlgraph.components.optimizers.rmsprop_optimizer import RMSPropOptimizer  # noqa: F401
from rlgraph.components.optimizers.sgd_optimizer import SGDOptimizer  # noqa: F401

__all__ = ["AdadeltaOptimizer", "AdagradOptimizer", "AdamOptimizer", "GradientDescentOptimizer", "LocalOptimizer",
           "NadamOptimizer", "RMSPropOptimizer", "SGDOptimizer"]
