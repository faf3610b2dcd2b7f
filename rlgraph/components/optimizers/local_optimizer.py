"""`LocalOptimizer`: gradients, global-norm clipping and slot variables for single-process update rules."""
from __future__ import annotations

import numbers
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.optimizers.optimizer import Optimizer
from rlgraph.utils import learner_group
from rlgraph.utils.decorators import graph_fn, tracing
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError


class LocalOptimizer(Optimizer):
    """An optimizer that updates variables in this process (no communication with other workers).

    Subclasses define an update rule: the names of their per-variable slots (`slot_names`), the
    slots' initial values, and `_update(g, slots, learning_rate, t)`, which returns the step
    subtracted from the variable and the new slot values. The rule is written once with tensor
    arithmetic (plus `sqrt`/`maximum` below), so it is the same maths on TF and PyTorch.

    Slots are component variables named "<variable key>-<slot>" (plus "step-count", the number of
    updates made, for rules with bias correction) and are returned by `get_optimizer_variables`.

    Data-parallel learners: in a learner group (`rlgraph.utils.learner_group`, started by
    `rlgraph train --learners N`) the gradients are averaged over the group before clipping and
    the update, so every learner applies the same step (the reference's `HorovodOptimizer`).

    Gradients: TF uses `tf.gradients` inside the executor's `tf.function`. The build's trace run
    is eager, where `tf.gradients` is not available: there `calculate_gradients` returns zeros and
    `step` returns the loss without updating (trace-only path; the build restores all variables
    afterwards anyway). `apply_gradients` also updates eagerly. PyTorch uses
    `torch.autograd.grad` (the calling root API method must not be `no_grad`); gradients of
    variables the loss does not use are zeros, on both backends. Non-trainable variables (or
    data that is not a variable) are an error on both backends.

    Args:
        learning_rate: A number >= 0 or a time-dependent parameter spec (see `Optimizer`).
        clip_grad_norm: If given (> 0), gradients are scaled by clip / max(global_norm, clip), with
            global_norm = sqrt(sum of all squared gradient entries) (as `tf.clip_by_global_norm`).
        scope: Default "optimizer".

    Raises:
        RLGraphSpecError: For a missing/bad learning rate or a bad `clip_grad_norm`.

    >>> import torch
    >>> from rlgraph.backend_system import backend_scope
    >>> from rlgraph.spaces import Dict, FloatBox
    >>> from rlgraph.components.optimizers.gradient_descent_optimizer import GradientDescentOptimizer
    >>> with backend_scope("pytorch"):
    ...     optimizer = GradientDescentOptimizer(learning_rate=0.1, clip_grad_norm=1.0)
    ...     optimizer.when_input_complete(dict(variables=Dict(w=FloatBox(shape=(2,)))))
    ...     w = torch.tensor([1.5, 2.0], requires_grad=True)
    ...     gradients = optimizer.calculate_gradients({"w": w}, (w ** 2).sum())  # g = [3, 4], norm 5
    >>> [round(x, 4) for x in gradients["w"].tolist()]
    [0.6, 0.8]
    """

    slot_names: Tuple[str, ...] = ()
    uses_step_count: bool = False

    def __init__(self, learning_rate: Any, clip_grad_norm: Optional[float] = None, scope: str = "optimizer",
                 **kwargs):
        if learning_rate is None:
            raise RLGraphSpecError("a learning rate is required", where=f"{type(self).__name__}(learning_rate)",
                                   expected='a number >= 0 or a schedule spec such as ["linear", 1e-3, 1e-4]')
        super().__init__(learning_rate=learning_rate, scope=scope, **kwargs)
        if clip_grad_norm is not None:
            clip_grad_norm = check_hyper_parameter(clip_grad_norm, "clip_grad_norm", type(self).__name__, low=0.0,
                                                   low_open=True)
        self.clip_grad_norm = clip_grad_norm
        self.slots: Dict[str, Dict[str, Any]] = {}  # variable key -> slot name -> slot variable
        self.step_count = None

    def create_variables(self, input_spaces, action_space=None):
        for key, space in input_spaces["variables"]._children():
            self.slots[key] = {slot: self.get_variable(f"{key}-{slot}", shape=space.shape, dtype=space.dtype,
                                                       initializer=self._slot_initializer(slot), trainable=False)
                               for slot in self.slot_names}
        if self.uses_step_count:
            self.step_count = self.get_variable("step-count", dtype="int", initializer=0, trainable=False)

    def _slot_initializer(self, slot: str) -> float:
        """The initial value of every entry of slot `slot` (default 0)."""
        return 0.0

    def _update(self, g: Any, slots: Dict[str, Any], learning_rate: Any, t: Any) -> Tuple[Any, Dict[str, Any]]:
        """One update of one variable: returns (step, new slot values); the variable becomes
        variable - step. `slots` are the slot variables, `t` the 1-based update count (float
        tensor) or None for rules without `uses_step_count`."""
        raise RLGraphError(f"{type(self).__name__} defines no update rule", where=self.global_scope,
                           hint="use one of the optimizers (AdamOptimizer, SGDOptimizer, ...) or implement `_update`.")

    # --- Graph functions ----------------------------------------------------------------------------------
    @graph_fn(returns=2)
    def _graph_fn_step(self, variables, loss, loss_per_item, learning_rate):
        if get_backend() == "tf":
            import tensorflow as tf
            if tf.executing_eagerly():
                return loss, loss_per_item  # Trace-only path (see the class docstring).
            ops = self._apply(variables, self._gradients(variables, loss), learning_rate)
            with tf.control_dependencies(ops):
                loss = tf.identity(loss)
                loss_per_item = None if loss_per_item is None else tf.identity(loss_per_item)
            return loss, loss_per_item
        gradients = self._gradients(variables, loss)
        if tracing.tracer is not None:
            # The build runs graph functions twice on trace data; an in-place update by the first run
            # would invalidate the autograd graph of the second run's loss (and be undone anyway).
            self._check_keys(variables, gradients)
            return loss, loss_per_item
        self._apply(variables, gradients, learning_rate)
        return loss, loss_per_item

    @graph_fn
    def _graph_fn_calculate_gradients(self, variables, loss):
        return self._gradients(variables, loss)

    @graph_fn
    def _graph_fn_apply_gradients(self, variables, gradients, learning_rate):
        self._apply(variables, gradients, learning_rate)
        return None

    # --- Helpers of the graph functions -------------------------------------------------------------------
    def _gradients(self, variables: Dict[str, Any], loss: Any) -> Dict[str, Any]:
        keys = sorted(variables)
        targets = [variables[k] for k in keys]
        frozen = [k for k, v in zip(keys, targets) if not _is_trainable_variable(v)]
        if frozen:
            raise RLGraphError(f"cannot optimize {frozen}: not trainable variables", where=f"{self.global_scope}."
                               "calculate_gradients(variables)", expected="trainable backend variables",
                               received=", ".join(type(variables[k]).__name__ for k in frozen),
                               hint="pass a component's variables, e.g. get_variables(trainable_only=True, "
                                    "custom_scope_separator='-'), not data fed from outside.")
        if get_backend() == "tf":
            grads = _gradients_tf(loss, targets)
        else:
            grads = _gradients_torch(loss, targets, f"{self.global_scope}.calculate_gradients(loss)")
        grads = _averaged_over_learners(grads)
        if self.clip_grad_norm is not None:
            grads = _clip_by_global_norm(grads, self.clip_grad_norm)
        return dict(zip(keys, grads))

    def _apply(self, variables: Dict[str, Any], gradients: Dict[str, Any], learning_rate: Any) -> List[Any]:
        """Updates every variable (and its slots); returns the TF assign ops (empty on PyTorch)."""
        self._check_keys(variables, gradients)
        if get_backend() == "tf":
            return self._apply_tf(variables, gradients, learning_rate)
        self._apply_torch(variables, gradients, learning_rate)
        return []

    def _check_keys(self, variables: Dict[str, Any], gradients: Dict[str, Any]) -> None:
        if set(variables) != set(gradients):
            raise RLGraphError("gradients and variables have different keys",
                               where=f"{self.global_scope}.apply_gradients(gradients)",
                               expected=sorted(variables), received=sorted(gradients))

    def _apply_tf(self, variables, gradients, learning_rate) -> List[Any]:
        import tensorflow as tf
        ops, t = [], None
        if self.uses_step_count:
            count = self.step_count + 1
            ops.append(self.step_count.assign(count, read_value=False))
        for key in sorted(variables):
            variable = variables[key]
            dtype = variable.dtype
            lr = tf.cast(learning_rate, dtype)
            if self.uses_step_count:
                t = tf.cast(count, dtype)
            g = tf.convert_to_tensor(gradients[key], dtype)
            step, new_slots = self._update(g, self.slots[key], lr, t)
            for slot, value in new_slots.items():
                ops.append(self.slots[key][slot].assign(value, read_value=False))
            ops.append(variable.assign_sub(step, read_value=False))
        return [op for op in ops if op is not None]  # Eager assigns return None.

    def _apply_torch(self, variables, gradients, learning_rate) -> None:
        import torch
        with torch.no_grad():
            t = None
            if self.uses_step_count:
                self.step_count.add_(1)
            for key in sorted(variables):
                variable = variables[key]
                device = variable.device
                if self.uses_step_count:
                    t = self.step_count.to(device=device, dtype=variable.dtype)
                lr = torch.as_tensor(learning_rate, dtype=variable.dtype, device=device)
                g = torch.as_tensor(gradients[key], dtype=variable.dtype, device=device)
                # `.to` is a no-op when the optimizer lives on the variables' device (set its `device`).
                slots = {name: slot.to(device) for name, slot in self.slots[key].items()}
                step, new_slots = self._update(g, slots, lr, t)
                for slot, value in new_slots.items():
                    self.slots[key][slot].copy_(value)
                variable.sub_(step)


# --- Backend helpers (called from the graph functions only) ------------------------------------------------------


def sqrt(x: Any) -> Any:
    """Element-wise square root of a tensor of the current backend."""
    if get_backend() == "tf":
        import tensorflow as tf
        return tf.sqrt(x)
    return x.sqrt()


def maximum(x: Any, floor: float) -> Any:
    """Element-wise max(x, floor) of a tensor of the current backend."""
    if get_backend() == "tf":
        import tensorflow as tf
        return tf.maximum(x, floor)
    return x.clamp_min(floor)


def _is_trainable_variable(variable: Any) -> bool:
    if get_backend() == "tf":
        return bool(getattr(variable, "trainable", False))  # Tensors (not variables) have no `trainable`.
    return bool(getattr(variable, "requires_grad", False))


def _gradients_tf(loss, targets: list) -> list:
    import tensorflow as tf
    if tf.executing_eagerly():
        # The build's eager trace run: there is no graph to differentiate (trace-only path).
        return [tf.zeros_like(v) for v in targets]
    grads = tf.gradients(loss, targets)
    return [tf.zeros_like(v) if g is None else tf.convert_to_tensor(g) for g, v in zip(grads, targets)]


def _gradients_torch(loss, targets: list, where: str) -> list:
    import torch
    if not getattr(loss, "requires_grad", False):
        raise RLGraphError("the loss carries no autograd graph, so it has no gradients", where=where,
                           hint="compute the loss from the variables in the same API call, and do not declare "
                                "that API method no_grad=True.")
    # retain_graph: a parent may differentiate the same loss again (e.g. for a second optimizer).
    grads = torch.autograd.grad(loss, targets, allow_unused=True, retain_graph=True)
    return [torch.zeros_like(v) if g is None else g for g, v in zip(grads, targets)]


def _averaged_over_learners(grads: list) -> list:
    """The gradients averaged over this process's learner group (see `rlgraph.utils.learner_group`):
    one collective per dtype; unchanged outside a group and in the build's trace runs, which
    compute no real gradients (the collectives run in the executed update only)."""
    group = learner_group.current()
    if group is None or group.size == 1:
        return grads
    if get_backend() == "tf":
        import tensorflow as tf
        if tf.executing_eagerly():
            return grads
    elif tracing.tracer is not None:
        return grads
    out = list(grads)
    for dtype in sorted({str(g.dtype) for g in grads}):
        index = [i for i, g in enumerate(grads) if str(g.dtype) == dtype]
        for i, reduced in zip(index, group.all_reduce_mean([grads[i] for i in index])):
            out[i] = reduced
    return out


def _clip_by_global_norm(grads: list, clip_norm: float) -> list:
    if get_backend() == "tf":
        import tensorflow as tf
        norm = tf.sqrt(tf.add_n([tf.reduce_sum(tf.square(g)) for g in grads]))
        scale = clip_norm / tf.maximum(norm, clip_norm)
        return [g * tf.cast(scale, g.dtype) for g in grads]
    import torch
    if len({(g.dtype, g.device) for g in grads}) == 1:
        # Multi-tensor ops: one norm per gradient, their norm is the global norm, one scaling op.
        norm = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
        return torch._foreach_mul(grads, clip_norm / torch.clamp_min(norm, clip_norm))
    norm = torch.sqrt(sum((g * g).sum() for g in grads))
    scale = clip_norm / torch.clamp_min(norm, clip_norm)
    return [g * scale.to(g.dtype) for g in grads]


def check_hyper_parameter(value: Any, name: str, where: str, low: Optional[float] = None,
                          high: Optional[float] = None, low_open: bool = False, high_open: bool = False) -> float:
    """Validates a number hyper-parameter for an optimizer constructor; returns it as a float.

    Raises:
        RLGraphSpecError: If `value` is not a finite number inside the bounds.
    """
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and bool(np.isfinite(value))
    if ok and low is not None:
        ok = value > low if low_open else value >= low
    if ok and high is not None:
        ok = value < high if high_open else value <= high
    if not ok:
        lower = "" if low is None else f"{'>' if low_open else '>='} {low}"
        upper = "" if high is None else f"{'<' if high_open else '<='} {high}"
        bounds = " and ".join(b for b in (lower, upper) if b) or "finite"
        raise RLGraphSpecError(f"{name} must be a number {bounds}", where=f"{where}({name})",
                               expected=f"a float {bounds}", received=repr(value))
    return float(value)
