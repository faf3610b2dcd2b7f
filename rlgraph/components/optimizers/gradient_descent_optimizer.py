"""`GradientDescentOptimizer`: theta -= lr * g."""
from __future__ import annotations

from typing import Any, Dict, Tuple

from rlgraph.components.optimizers.local_optimizer import LocalOptimizer


class GradientDescentOptimizer(LocalOptimizer):
    """Plain gradient descent: theta -= lr * g (no slots).

    "Stochastic Estimation of the Maximum of a Regression Function", Kiefer and Wolfowitz, 1952.

    Args:
        learning_rate: A number >= 0 or a time-dependent parameter spec.
        scope: Default "gradient-descent-optimizer".
        **kwargs: `LocalOptimizer` arguments, e.g. `clip_grad_norm` (optional global-norm clipping).

    >>> import torch
    >>> from rlgraph.backend_system import backend_scope
    >>> from rlgraph.spaces import Dict, FloatBox
    >>> with backend_scope("pytorch"):
    ...     optimizer = GradientDescentOptimizer(learning_rate=0.1)
    ...     optimizer.when_input_complete(dict(variables=Dict(w=FloatBox(shape=(2,)))))
    ...     w = torch.tensor([1.0, -2.0], requires_grad=True)
    ...     _ = optimizer.step({"w": w}, (w ** 2).sum(), None)  # g = 2 w
    >>> [round(x, 4) for x in w.tolist()]
    [0.8, -1.6]
    """

    def __init__(self, learning_rate: Any, scope: str = "gradient-descent-optimizer", **kwargs):
        super().__init__(learning_rate=learning_rate, scope=scope, **kwargs)

    def _update(self, g: Any, slots: Dict[str, Any], learning_rate: Any, t: Any) -> Tuple[Any, Dict[str, Any]]:
        return learning_rate * g, {}
