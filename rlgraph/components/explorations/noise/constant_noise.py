"""`ConstantNoise`: the same offset on every action element."""
from __future__ import annotations

from typing import Any

from rlgraph.backend_system import get_backend
from rlgraph.components.common.time_dependent_parameters import check_number
from rlgraph.components.explorations.noise.noise import Noise
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.util import convert_dtype


class ConstantNoise(Noise):
    """Noise that is always `value` (a fixed action offset; handy in tests).

    Args:
        value: The noise value.
        action_space: See `Noise`.
        scope: Default "constant-noise".

    Raises:
        RLGraphSpecError: For a non-finite value.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> noise = ConstantNoise(value=0.25, action_space=FloatBox(shape=(3,)))
    >>> ComponentTest(noise, input_spaces={}, backend="pytorch").test("get_noise").tolist()
    [0.25, 0.25, 0.25]
    """

    def __init__(self, value: float = 0.0, action_space: Any = None, scope: str = "constant-noise", **kwargs):
        super().__init__(action_space=action_space, scope=scope, **kwargs)
        self.value = check_number(value, "value", type(self).__name__)

    @graph_fn
    def _graph_fn_noise(self):
        shape = self.action_space.shape
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.fill(shape, tf.constant(self.value, dtype=self.action_space.dtype))
        import torch
        return torch.full(shape, self.value, dtype=convert_dtype(self.action_space.dtype, to="pytorch"))
