"""`SGDOptimizer`: gradient descent with optional (Nesterov) momentum."""
from __future__ import annotations

from typing import Any, Dict, Tuple

from rlgraph.components.optimizers.local_optimizer import LocalOptimizer, check_hyper_parameter
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class SGDOptimizer(LocalOptimizer):
    """Stochastic gradient descent with momentum and Nesterov momentum.

    With velocity v (slot "velocity", only when momentum > 0):
        v_t = momentum * v - lr * g;  theta += v_t  (Nesterov: theta += momentum * v_t - lr * g).
    With momentum 0 this is `GradientDescentOptimizer`. Nesterov momentum as reformulated by
    Sutskever et al. 2013 ("On the importance of initialization and momentum in deep learning").

    Args:
        learning_rate: A number >= 0 or a time-dependent parameter spec.
        momentum: In [0, 1).
        nesterov: Use Nesterov momentum (needs momentum > 0).
        scope: Default "sgd-optimizer".
        **kwargs: `LocalOptimizer` arguments, e.g. `clip_grad_norm` (optional global-norm clipping).

    Raises:
        RLGraphSpecError: For a momentum outside [0, 1) or nesterov without momentum.

    >>> import torch
    >>> from rlgraph.backend_system import backend_scope
    >>> from rlgraph.spaces import Dict, FloatBox
    >>> with backend_scope("pytorch"):
    ...     optimizer = SGDOptimizer(learning_rate=0.1, momentum=0.5)
    ...     optimizer.when_input_complete(dict(variables=Dict(w=FloatBox(shape=(2,)))))
    ...     w = torch.tensor([1.0, -2.0], requires_grad=True)
    ...     for _ in range(2):
    ...         _ = optimizer.step({"w": w}, (w ** 2).sum(), None)  # g = 2 w
    >>> [round(x, 4) for x in w.tolist()]  # v_1 = -0.2 w_0, w_1 = 0.8 w_0; v_2 = -0.1 w_0 - 0.16 w_0
    [0.54, -1.08]
    """

    def __init__(self, learning_rate: Any, momentum: float = 0.0, nesterov: bool = False,
                 scope: str = "sgd-optimizer", **kwargs):
        super().__init__(learning_rate=learning_rate, scope=scope, **kwargs)
        name = type(self).__name__
        self.momentum = check_hyper_parameter(momentum, "momentum", name, low=0.0, high=1.0, high_open=True)
        if not isinstance(nesterov, bool):
            raise RLGraphSpecError("nesterov must be a bool", where=f"{name}(nesterov)", received=repr(nesterov))
        if nesterov and self.momentum == 0.0:
            raise RLGraphSpecError("Nesterov momentum needs a momentum > 0", where=f"{name}(nesterov)",
                                   received="momentum=0.0", hint="pass momentum=0.9, or nesterov=False.")
        self.nesterov = nesterov
        self.slot_names = ("velocity",) if self.momentum > 0.0 else ()

    def _update(self, g: Any, slots: Dict[str, Any], learning_rate: Any, t: Any) -> Tuple[Any, Dict[str, Any]]:
        if self.momentum == 0.0:
            return learning_rate * g, {}
        v_t = self.momentum * slots["velocity"] - learning_rate * g
        if self.nesterov:
            return learning_rate * g - self.momentum * v_t, {"velocity": v_t}
        return -v_t, {"velocity": v_t}
