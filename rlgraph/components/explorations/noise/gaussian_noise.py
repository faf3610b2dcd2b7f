"""`GaussianNoise`: independent normal noise on every action element."""
from __future__ import annotations

from typing import Any

from rlgraph.backend_system import get_backend
from rlgraph.components.common.time_dependent_parameters import check_number
from rlgraph.components.explorations.noise.noise import Noise
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.util import convert_dtype


class GaussianNoise(Noise):
    """Noise n ~ N(mean, stddev**2), drawn independently per action element and call.

    Args:
        mean: The mean.
        stddev: The standard deviation (>= 0).
        action_space: See `Noise`.
        scope: Default "gaussian-noise".

    Raises:
        RLGraphSpecError: For a non-finite mean or a negative stddev.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> noise = GaussianNoise(mean=1.0, stddev=0.0, action_space=FloatBox(shape=(2,)))
    >>> ComponentTest(noise, input_spaces={}, backend="pytorch").test("get_noise").tolist()
    [1.0, 1.0]
    """

    def __init__(self, mean: float = 0.0, stddev: float = 1.0, action_space: Any = None,
                 scope: str = "gaussian-noise", **kwargs):
        super().__init__(action_space=action_space, scope=scope, **kwargs)
        self.mean = check_number(mean, "mean", type(self).__name__)
        self.stddev = check_number(stddev, "stddev", type(self).__name__, low=0.0)

    @graph_fn
    def _graph_fn_noise(self):
        shape = self.action_space.shape
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.random.normal(shape, mean=self.mean, stddev=self.stddev, dtype=self.action_space.dtype)
        import torch
        dtype = convert_dtype(self.action_space.dtype, to="pytorch")
        return torch.randn(shape, dtype=dtype) * self.stddev + self.mean
