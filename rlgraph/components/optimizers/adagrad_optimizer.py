"""`AdagradOptimizer`: per-entry learning rates from accumulated squared gradients (Duchi et al. 2011)."""
from __future__ import annotations

from typing import Any, Dict, Tuple

from rlgraph.components.optimizers.local_optimizer import LocalOptimizer, check_hyper_parameter, sqrt


class AdagradOptimizer(LocalOptimizer):
    """Adagrad: small steps for often-seen features, large ones for rare features.

    Duchi, Hazan and Singer 2011, http://www.jmlr.org/papers/volume12/duchi11a/duchi11a.pdf.
    Slot "accumulator" a per variable, starting at `initial_accumulator_value`:
        a_t = a + g^2;  theta -= lr * g / (sqrt(a_t) + epsilon).

    Args:
        learning_rate: A number >= 0 or a time-dependent parameter spec.
        initial_accumulator_value: Start value of the accumulator (>= 0).
        epsilon: Added to sqrt(a_t) (>= 0; keep > 0 if the accumulator may start at 0).
        scope: Default "adagrad-optimizer".
        **kwargs: `LocalOptimizer` arguments, e.g. `clip_grad_norm` (optional global-norm clipping).

    Raises:
        RLGraphSpecError: For hyper-parameters outside their ranges.

    >>> import torch
    >>> from rlgraph.backend_system import backend_scope
    >>> from rlgraph.spaces import Dict, FloatBox
    >>> with backend_scope("pytorch"):
    ...     optimizer = AdagradOptimizer(learning_rate=0.5, initial_accumulator_value=0.0)
    ...     optimizer.when_input_complete(dict(variables=Dict(w=FloatBox(shape=(2,)))))
    ...     w = torch.tensor([1.0, -2.0], requires_grad=True)
    ...     _ = optimizer.step({"w": w}, (w ** 2).sum(), None)
    >>> [round(x, 4) for x in w.tolist()]  # a_1 = g^2: the first step is lr * sign(g).
    [0.5, -1.5]
    """

    slot_names = ("accumulator",)

    def __init__(self, learning_rate: Any, initial_accumulator_value: float = 0.1, epsilon: float = 1e-7,
                 scope: str = "adagrad-optimizer", **kwargs):
        super().__init__(learning_rate=learning_rate, scope=scope, **kwargs)
        name = type(self).__name__
        self.initial_accumulator_value = check_hyper_parameter(initial_accumulator_value,
                                                               "initial_accumulator_value", name, low=0.0)
        self.epsilon = check_hyper_parameter(epsilon, "epsilon", name, low=0.0)

    def _slot_initializer(self, slot: str) -> float:
        return self.initial_accumulator_value

    def _update(self, g: Any, slots: Dict[str, Any], learning_rate: Any, t: Any) -> Tuple[Any, Dict[str, Any]]:
        a_t = slots["accumulator"] + g * g
        return learning_rate * g / (sqrt(a_t) + self.epsilon), {"accumulator": a_t}
