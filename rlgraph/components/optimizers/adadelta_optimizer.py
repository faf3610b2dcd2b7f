"""`AdadeltaOptimizer`: steps scaled by running RMS of past updates over past gradients (Zeiler 2012)."""
from __future__ import annotations

from typing import Any, Dict, Tuple

from rlgraph.components.optimizers.local_optimizer import LocalOptimizer, check_hyper_parameter, sqrt


class AdadeltaOptimizer(LocalOptimizer):
    """Adadelta, Zeiler 2012, https://arxiv.org/abs/1212.5701 (Algorithm 1), times a learning rate.

    Slots "accum-grad" (E[g^2]) and "accum-update" (E[dx^2]) per variable:
        E[g^2]_t = rho E[g^2] + (1 - rho) g^2;  dx = sqrt(E[dx^2] + eps) / sqrt(E[g^2]_t + eps) * g;
        E[dx^2]_t = rho E[dx^2] + (1 - rho) dx^2;  theta -= lr * dx.
    The paper's rule is learning_rate = 1.

    Args:
        learning_rate: A number >= 0 or a time-dependent parameter spec.
        rho: Decay of the running averages, in [0, 1).
        epsilon: Inside both square roots (> 0: it sets the size of the first steps).
        scope: Default "adadelta-optimizer".
        **kwargs: `LocalOptimizer` arguments, e.g. `clip_grad_norm` (optional global-norm clipping).

    Raises:
        RLGraphSpecError: For hyper-parameters outside their ranges.

    >>> import torch
    >>> from rlgraph.backend_system import backend_scope
    >>> from rlgraph.spaces import Dict, FloatBox
    >>> with backend_scope("pytorch"):
    ...     optimizer = AdadeltaOptimizer(learning_rate=1.0, rho=0.75, epsilon=0.01)
    ...     optimizer.when_input_complete(dict(variables=Dict(w=FloatBox(shape=(1,)))))
    ...     w = torch.tensor([1.5], requires_grad=True)
    ...     _ = optimizer.step({"w": w}, (w ** 2).sum(), None)  # g = 3, E[g^2]_1 = 2.25
    >>> [round(x, 4) for x in w.tolist()]  # dx = sqrt(0.01) / sqrt(2.26) * 3
    [1.3004]
    """

    slot_names = ("accum-grad", "accum-update")

    def __init__(self, learning_rate: Any, rho: float = 0.95, epsilon: float = 1e-7,
                 scope: str = "adadelta-optimizer", **kwargs):
        super().__init__(learning_rate=learning_rate, scope=scope, **kwargs)
        name = type(self).__name__
        self.rho = check_hyper_parameter(rho, "rho", name, low=0.0, high=1.0, high_open=True)
        self.epsilon = check_hyper_parameter(epsilon, "epsilon", name, low=0.0, low_open=True)

    def _update(self, g: Any, slots: Dict[str, Any], learning_rate: Any, t: Any) -> Tuple[Any, Dict[str, Any]]:
        accum_grad_t = self.rho * slots["accum-grad"] + (1.0 - self.rho) * g * g
        dx = sqrt(slots["accum-update"] + self.epsilon) / sqrt(accum_grad_t + self.epsilon) * g
        accum_update_t = self.rho * slots["accum-update"] + (1.0 - self.rho) * dx * dx
        return learning_rate * dx, {"accum-grad": accum_grad_t, "accum-update": accum_update_t}
