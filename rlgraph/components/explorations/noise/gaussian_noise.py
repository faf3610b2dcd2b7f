"""`GaussianNoise`: independent normal noise on every action element."""
from __future__ import annotations

from typing import Any, List, Union

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.common.time_dependent_parameters import check_number
from rlgraph.components.explorations.noise.noise import Noise
from rlgraph.utils import torch_random
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpecError
from rlgraph.utils.util import convert_dtype


class GaussianNoise(Noise):
    """Noise n ~ N(mean, stddev**2), drawn independently per action element and call.

    Args:
        mean: The mean.
        stddev: The standard deviation (>= 0), or a list of them, one per action element in
            row-major order (for action elements of different ranges).
        action_space: See `Noise`.
        scope: Default "gaussian-noise".

    Raises:
        RLGraphSpecError: For a non-finite mean, a negative stddev, or a list of stddevs whose
            length is not the action's number of elements.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> noise = GaussianNoise(mean=1.0, stddev=0.0, action_space=FloatBox(shape=(2,)))
    >>> ComponentTest(noise, input_spaces={}, backend="pytorch").test("get_noise").tolist()
    [1.0, 1.0]
    >>> noise = GaussianNoise(mean=1.0, stddev=[0.0, 0.0], action_space=FloatBox(shape=(2,)))
    >>> ComponentTest(noise, input_spaces={}, backend="pytorch").test("get_noise").tolist()
    [1.0, 1.0]
    """

    def __init__(self, mean: float = 0.0, stddev: Union[float, List[float]] = 1.0, action_space: Any = None,
                 scope: str = "gaussian-noise", **kwargs):
        super().__init__(action_space=action_space, scope=scope, **kwargs)
        owner = type(self).__name__
        self.mean = check_number(mean, "mean", owner)
        if isinstance(stddev, (list, tuple, np.ndarray)):
            if len(stddev) == 0:
                raise RLGraphSpecError("stddev must hold one value per action element", where=f"{owner}(stddev)",
                                       received=repr(stddev))
            self.stddev = [check_number(x, "stddev", owner, low=0.0) for x in np.asarray(stddev).ravel().tolist()]
        else:
            self.stddev = check_number(stddev, "stddev", owner, low=0.0)

    @graph_fn
    def _graph_fn_noise(self):
        shape = self.action_space.shape
        stddev = self.stddev
        if isinstance(stddev, list):
            if len(stddev) != int(np.prod(shape)):
                raise RLGraphSpecError("a list stddev needs one value per action element",
                                       where=f"{self.global_scope}(stddev)", expected=f"{int(np.prod(shape))} values",
                                       received=repr(stddev))
            stddev = np.asarray(stddev, self.action_space.dtype).reshape(shape)
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.random.normal(shape, dtype=self.action_space.dtype) * stddev + self.mean
        import torch
        dtype = convert_dtype(self.action_space.dtype, to="pytorch")
        return torch_random.randn(shape, dtype=dtype) * torch.as_tensor(stddev, dtype=dtype) + self.mean
