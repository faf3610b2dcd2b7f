"""`NadamOptimizer`: Adam with Nesterov momentum (Dozat 2016)."""
from __future__ import annotations

from typing import Any, Dict, Tuple

from rlgraph.components.optimizers.adam_optimizer import AdamOptimizer
from rlgraph.components.optimizers.local_optimizer import sqrt


class NadamOptimizer(AdamOptimizer):
    """Nadam: Adam whose first moment looks one step ahead, as Nesterov momentum does.

    Dozat 2016, "Incorporating Nesterov Momentum into Adam",
    http://cs229.stanford.edu/proj2015/054_report.pdf, with a constant beta_1 (no momentum
    schedule). Slots and m_t, v_t, v_hat as in `AdamOptimizer`; the step uses
        m_bar = (beta_1 m_t + (1 - beta_1) g) / (1 - beta_1^t);  theta -= lr * m_bar / (sqrt(v_hat) + epsilon).

    Args:
        learning_rate: A number >= 0 or a time-dependent parameter spec.
        beta_1: Decay of the first moment, in [0, 1).
        beta_2: Decay of the second moment, in [0, 1).
        epsilon: Added to sqrt(v_hat) (>= 0).
        scope: Default "nadam-optimizer".
        **kwargs: `LocalOptimizer` arguments, e.g. `clip_grad_norm` (optional global-norm clipping).

    >>> import torch
    >>> from rlgraph.backend_system import backend_scope
    >>> from rlgraph.spaces import Dict, FloatBox
    >>> with backend_scope("pytorch"):
    ...     optimizer = NadamOptimizer(learning_rate=0.1)
    ...     optimizer.when_input_complete(dict(variables=Dict(w=FloatBox(shape=(2,)))))
    ...     w = torch.tensor([1.0, -2.0], requires_grad=True)
    ...     _ = optimizer.step({"w": w}, (w ** 2).sum(), None)
    >>> [round(x, 4) for x in w.tolist()]  # m_bar = 1.9 g, sqrt(v_hat) = |g| at t = 1.
    [0.81, -1.81]
    """

    def __init__(self, learning_rate: Any, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,
                 scope: str = "nadam-optimizer", **kwargs):
        super().__init__(learning_rate=learning_rate, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon, scope=scope,
                         **kwargs)

    def _update(self, g: Any, slots: Dict[str, Any], learning_rate: Any, t: Any) -> Tuple[Any, Dict[str, Any]]:
        m_t, v_t = self._moments(g, slots)
        m_bar = (self.beta_1 * m_t + (1.0 - self.beta_1) * g) / (1.0 - self.beta_1 ** t)
        v_hat = v_t / (1.0 - self.beta_2 ** t)
        return learning_rate * m_bar / (sqrt(v_hat) + self.epsilon), {"m": m_t, "v": v_t}
