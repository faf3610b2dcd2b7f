"""`RMSPropOptimizer`: gradients divided by a running RMS of past gradients (Hinton, lecture 6e)."""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from rlgraph.components.optimizers.local_optimizer import LocalOptimizer, check_hyper_parameter, maximum, sqrt
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


class RMSPropOptimizer(LocalOptimizer):
    """RMSProp, optionally centered (Graves 2013, https://arxiv.org/abs/1308.0850) and with momentum.

    Hinton, https://www.cs.toronto.edu/~tijmen/csc321/slides/lecture_slides_lec6.pdf. Slots
    "mean-square" (ms), "moment" (mom, if momentum > 0) and "mean-grad" (mg, if centered):
        ms_t = rho ms + (1 - rho) g^2;  centered: mg_t = rho mg + (1 - rho) g, denominator = ms_t - mg_t^2,
        else denominator = ms_t;  step = lr * g / (sqrt(denominator) + epsilon);
        momentum: mom_t = momentum * mom + step, theta -= mom_t;  else theta -= step.

    Args:
        learning_rate: A number >= 0 or a time-dependent parameter spec.
        decay: The decay rho of the running averages, in [0, 1).
        momentum: In [0, 1).
        epsilon: Added to the root of the denominator (>= 0).
        centered: Divide by the running standard deviation instead of the RMS.
        rho: Alias of `decay` (give one of them).
        scope: Default "rms-prop-optimizer".
        **kwargs: `LocalOptimizer` arguments, e.g. `clip_grad_norm` (optional global-norm clipping).

    Raises:
        RLGraphSpecError: For hyper-parameters outside their ranges, or `decay` and `rho` both given.

    >>> import torch
    >>> from rlgraph.backend_system import backend_scope
    >>> from rlgraph.spaces import Dict, FloatBox
    >>> with backend_scope("pytorch"):
    ...     optimizer = RMSPropOptimizer(learning_rate=0.1, rho=0.75)
    ...     optimizer.when_input_complete(dict(variables=Dict(w=FloatBox(shape=(2,)))))
    ...     w = torch.tensor([1.0, -2.0], requires_grad=True)
    ...     _ = optimizer.step({"w": w}, (w ** 2).sum(), None)
    >>> [round(x, 4) for x in w.tolist()]  # ms_1 = g^2 / 4: the first step is 2 lr sign(g).
    [0.8, -1.8]
    """

    def __init__(self, learning_rate: Any, decay: Optional[float] = None, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, rho: Optional[float] = None,
                 scope: str = "rms-prop-optimizer", **kwargs):
        super().__init__(learning_rate=learning_rate, scope=scope, **kwargs)
        name = type(self).__name__
        if decay is not None and rho is not None:
            raise RLGraphSpecError("decay and its alias rho both given", where=f"{name}(decay)",
                                   received=f"decay={decay!r}, rho={rho!r}", hint="give only one of them.")
        decay = 0.9 if decay is None and rho is None else (rho if decay is None else decay)
        self.decay = check_hyper_parameter(decay, "decay", name, low=0.0, high=1.0, high_open=True)
        self.rho = self.decay
        self.momentum = check_hyper_parameter(momentum, "momentum", name, low=0.0, high=1.0, high_open=True)
        self.epsilon = check_hyper_parameter(epsilon, "epsilon", name, low=0.0)
        if not isinstance(centered, bool):
            raise RLGraphSpecError("centered must be a bool", where=f"{name}(centered)", received=repr(centered))
        self.centered = centered
        self.slot_names = ("mean-square",) + (("moment",) if self.momentum > 0.0 else ()) + \
            (("mean-grad",) if centered else ())

    def _update(self, g: Any, slots: Dict[str, Any], learning_rate: Any, t: Any) -> Tuple[Any, Dict[str, Any]]:
        new = {"mean-square": self.decay * slots["mean-square"] + (1.0 - self.decay) * g * g}
        denominator = new["mean-square"]
        if self.centered:
            new["mean-grad"] = self.decay * slots["mean-grad"] + (1.0 - self.decay) * g
            # Never below 0 mathematically; rounding could make it so.
            denominator = maximum(denominator - new["mean-grad"] * new["mean-grad"], 0.0)
        step = learning_rate * g / (sqrt(denominator) + self.epsilon)
        if self.momentum > 0.0:
            new["moment"] = self.momentum * slots["moment"] + step
            step = new["moment"]
        return step, new
