"""Plain-numpy reference maths. Component tests compare TF and PyTorch results against these.

Only numpy (and rlgraph's error classes) is imported. Shapes use B for batch, T for time, plus the names in each docstring.
Floating inputs keep their dtype (float32 stays float32); the activations, losses and returns
compute integer and bool inputs in float64.

>>> from rlgraph.utils import numpy as rnp
>>> rnp.softmax(np.array([1.0, 2.0, 3.0])).round(4)
array([0.09  , 0.2447, 0.6652])
"""
from rlgraph.utils.numpy.batches import *  # noqa: F401,F403
from rlgraph.utils.numpy.distributions import *  # noqa: F401,F403
from rlgraph.utils.numpy.images import *  # noqa: F401,F403
from rlgraph.utils.numpy.layers import *  # noqa: F401,F403
from rlgraph.utils.numpy.layers import _window_geometry  # noqa: F401
from rlgraph.utils.numpy.losses import *  # noqa: F401,F403
from rlgraph.utils.numpy.maths import *  # noqa: F401,F403
from rlgraph.utils.numpy.maths import SELU_ALPHA, SELU_SCALE, _as_float, _float_dtype  # noqa: F401
from rlgraph.utils.numpy.optimizers import *  # noqa: F401,F403
from rlgraph.utils.numpy.returns import *  # noqa: F401,F403
from rlgraph.utils.numpy.vae import *  # noqa: F401,F403
