"""`AdamOptimizer`: adaptive moment estimation (Kingma & Ba 2014)."""
from __future__ import annotations

from typing import Any, Dict, Tuple

from rlgraph.components.optimizers.local_optimizer import LocalOptimizer, check_hyper_parameter, sqrt


# Device types with a fused Adam kernel in torch (`torch._fused_adam_`); others take the multi-tensor path.
FUSED_DEVICE_TYPES = ("cpu", "cuda")


class AdamOptimizer(LocalOptimizer):
    """Adam, Kingma & Ba 2014, https://arxiv.org/abs/1412.6980 (Algorithm 1).

    Slots m and v (first and second moment estimates) per variable, plus "step-count" t:
        m_t = beta_1 m + (1 - beta_1) g;  v_t = beta_2 v + (1 - beta_2) g^2;
        theta -= lr * m_hat / (sqrt(v_hat) + epsilon),  m_hat = m_t / (1 - beta_1^t),
        v_hat = v_t / (1 - beta_2^t).

    Args:
        learning_rate: A number >= 0 or a time-dependent parameter spec.
        beta_1: Decay of the first moment, in [0, 1).
        beta_2: Decay of the second moment, in [0, 1).
        epsilon: Added to sqrt(v_hat) (>= 0).
        scope: Default "adam-optimizer".
        **kwargs: `LocalOptimizer` arguments, e.g. `clip_grad_norm` (optional global-norm clipping).

    Raises:
        RLGraphSpecError: For hyper-parameters outside their ranges.

    >>> import torch
    >>> from rlgraph.backend_system import backend_scope
    >>> from rlgraph.spaces import Dict, FloatBox
    >>> with backend_scope("pytorch"):
    ...     optimizer = AdamOptimizer(learning_rate=0.1)
    ...     optimizer.when_input_complete(dict(variables=Dict(w=FloatBox(shape=(2,)))))
    ...     w = torch.tensor([1.0, -2.0], requires_grad=True)
    ...     _ = optimizer.step({"w": w}, (w ** 2).sum(), None)
    >>> [round(x, 4) for x in w.tolist()]  # The first step is lr * sign(g).
    [0.9, -1.9]
    >>> sorted(optimizer.get_optimizer_variables())
    ['step-count', 'w-m', 'w-v']
    """

    slot_names = ("m", "v")
    uses_step_count = True

    def __init__(self, learning_rate: Any, beta_1: float = 0.9, beta_2: float = 0.999, epsilon: float = 1e-7,
                 scope: str = "adam-optimizer", **kwargs):
        super().__init__(learning_rate=learning_rate, scope=scope, **kwargs)
        name = type(self).__name__
        self.beta_1 = check_hyper_parameter(beta_1, "beta_1", name, low=0.0, high=1.0, high_open=True)
        self.beta_2 = check_hyper_parameter(beta_2, "beta_2", name, low=0.0, high=1.0, high_open=True)
        self.epsilon = check_hyper_parameter(epsilon, "epsilon", name, low=0.0)

    def _moments(self, g: Any, slots: Dict[str, Any]) -> Tuple[Any, Any]:
        m_t = self.beta_1 * slots["m"] + (1.0 - self.beta_1) * g
        v_t = self.beta_2 * slots["v"] + (1.0 - self.beta_2) * g * g
        return m_t, v_t

    def _update(self, g: Any, slots: Dict[str, Any], learning_rate: Any, t: Any) -> Tuple[Any, Dict[str, Any]]:
        m_t, v_t = self._moments(g, slots)
        m_hat = m_t / (1.0 - self.beta_1 ** t)
        v_hat = v_t / (1.0 - self.beta_2 ** t)
        return learning_rate * m_hat / (sqrt(v_hat) + self.epsilon), {"m": m_t, "v": v_t}

    def _apply_tf(self, variables, gradients, learning_rate) -> list:
        """The same rule with TF's fused kernel (`ResourceApplyAdam`: one op per variable instead of
        about twenty, so the update traces and runs faster); subclasses with another rule (Nadam) and
        dtypes other than float32/float64 take the generic per-variable path.

        The kernel adds epsilon to sqrt(v) and folds both bias corrections into the learning rate:
        theta -= lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(v) + eps'). With
        eps' = epsilon * sqrt(1 - beta_2^t) that is this class's rule, lr * m_hat / (sqrt(v_hat) + epsilon).
        """
        import tensorflow as tf
        if type(self)._update is not AdamOptimizer._update or \
                any(variables[k].dtype not in (tf.float32, tf.float64) for k in variables):
            return super()._apply_tf(variables, gradients, learning_rate)
        count = self.step_count + 1
        ops = [self.step_count.assign(count, read_value=False)]
        terms = {}  # dtype -> the kernel's scalar inputs but the variable's own, made once per dtype.
        for key in sorted(variables):
            variable = variables[key]
            dtype = variable.dtype
            if dtype not in terms:
                beta_1, beta_2 = tf.constant(self.beta_1, dtype), tf.constant(self.beta_2, dtype)
                t = tf.cast(count, dtype)
                beta_2_power = tf.pow(beta_2, t)
                terms[dtype] = dict(beta1_power=tf.pow(beta_1, t), beta2_power=beta_2_power,
                                    lr=tf.cast(learning_rate, dtype), beta1=beta_1, beta2=beta_2,
                                    epsilon=self.epsilon * tf.sqrt(1.0 - beta_2_power))
            ops.append(tf.raw_ops.ResourceApplyAdam(
                var=variable.handle, m=self.slots[key]["m"].handle, v=self.slots[key]["v"].handle,
                grad=tf.convert_to_tensor(gradients[key], dtype), **terms[dtype]))
        return [op for op in ops if op is not None]  # Eager ops return None.

    def _apply_torch(self, variables, gradients, learning_rate) -> None:
        """The same rule with torch's fused Adam kernel, or else in-place multi-tensor ops
        (`_apply_torch_multi_tensor`); subclasses with another rule, mixed devices or dtypes other than
        float32 take the generic per-variable path."""
        import torch
        keys = sorted(variables)
        params = [variables[k] for k in keys]
        m = [self.slots[k]["m"] for k in keys]
        v = [self.slots[k]["v"] for k in keys]
        devices = {t.device for t in params + m + v}
        if len(devices) > 1 or any(p.dtype != torch.float32 for p in params) or \
                type(self)._update is not AdamOptimizer._update:  # Subclasses with other rules (Nadam).
            return super()._apply_torch(variables, gradients, learning_rate)
        with torch.no_grad():
            self.step_count.add_(1)
            grads = [torch.as_tensor(gradients[k], dtype=p.dtype, device=p.device) for k, p in zip(keys, params)]
            if next(iter(devices)).type in FUSED_DEVICE_TYPES and hasattr(torch, "_fused_adam_") and \
                    not torch.compiler.is_compiling() and all(t.is_contiguous() for t in params + m + v):
                # torch's fused kernel: the same rule (bias-corrected, epsilon added to sqrt(v_hat)) in one
                # pass over each variable, about 3x faster than the multi-tensor ops on CPU (torch.compile
                # cannot take it: it writes through data pointers, so compiled plans use those). It walks
                # every tensor's memory in order, blind to strides: each gradient must be laid out as its
                # variable is. A convolution kernel's gradient comes back strided (the forward pass
                # permutes the kernel), and was applied to the wrong elements before it was copied.
                grads = [g.contiguous() for g in grads]
                steps = [self.step_count.to(torch.float32)] * len(params)
                torch._fused_adam_(params, grads, m, v, [], steps, lr=float(learning_rate), beta1=self.beta_1,
                                   beta2=self.beta_2, weight_decay=0.0, eps=self.epsilon, amsgrad=False,
                                   maximize=False)
                # The kernel writes through data pointers without bumping the tensors' in-place version
                # counters, which autograd's checks rely on.
                torch.autograd.graph.increment_version(params + m + v)
                return None
            return self._apply_torch_multi_tensor(params, grads, m, v, learning_rate)

    def _apply_torch_multi_tensor(self, params: list, grads: list, m: list, v: list, learning_rate: Any) -> None:
        """The rule of `_apply_torch` in multi-tensor ops (one call per op for all variables), with the
        step count kept as a tensor: no host sync reads it, and torch.compile traces it (the compiler
        fuses these ops itself). The step count is already incremented."""
        import torch
        t = self.step_count.to(torch.float64)
        step_size = (torch.as_tensor(learning_rate, dtype=torch.float64) / (1.0 - self.beta_1 ** t)).to(torch.float32)
        bias_2 = (1.0 - self.beta_2 ** t).to(torch.float32)
        torch._foreach_mul_(m, self.beta_1)
        torch._foreach_add_(m, grads, alpha=1.0 - self.beta_1)
        torch._foreach_mul_(v, self.beta_2)
        torch._foreach_addcmul_(v, grads, grads, value=1.0 - self.beta_2)
        denominators = torch._foreach_div(v, bias_2)
        torch._foreach_sqrt_(denominators)
        torch._foreach_add_(denominators, self.epsilon)
        steps = torch._foreach_div(torch._foreach_mul(m, step_size), denominators)
        torch._foreach_sub_(params, steps)
