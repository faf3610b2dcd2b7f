"""`VTraceFunction`: V-trace value targets and policy-gradient advantages (IMPALA)."""
from __future__ import annotations

from typing import Optional

from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.spaces import Space
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

_SEQUENCE_ARGS = ("log_is_weights", "discounts", "rewards", "values")


def _check_clip(value, name: str, owner: str) -> Optional[float]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0.0:
        raise RLGraphSpecError(f"{name} must be a positive number (or None for no clipping)",
                               where=f"{owner}({name})", expected="a float > 0 or None", received=repr(value),
                               hint="the paper uses 1.0 for all three thresholds.")
    return float(value)


def _full_rank(space: Space) -> int:
    return int(space.has_batch_rank) + int(space.has_time_rank) + len(space.shape)


class VTraceFunction(Component):
    """V-trace targets v_s and policy-gradient advantages (Espeholt et al. 2018, https://arxiv.org/abs/1802.01561).

    With rho_t = pi(a_t|x_t) / mu(a_t|x_t), the clipped ratios rho_t' = min(rho_bar, rho_t),
    c_t = min(c_bar, rho_t) and V_T = bootstrapped_values (the paper's eq. (1) with lambda = 1,
    computed backwards):

        delta_t = rho_t' * (r_t + gamma_t * V_{t+1} - V_t)
        v_t = V_t + delta_t + gamma_t * c_t * (v_{t+1} - V_{t+1}),      v_T = V_T
        pg_advantage_t = min(rho_bar_pg, rho_t) * (r_t + gamma_t * v_{t+1} - V_t)

    Inputs are batch-major [B, T] (time-major [T, B] with `time_major=True`); a trailing size-1
    axis ([B, T, 1]) is accepted too and kept in the outputs. `bootstrapped_values` is V(x_T),
    the value of the state after the last step: [B] or [B, 1]. The discounts gamma_t are per step
    and must already be 0 where an episode ended at step t (gamma * (1 - d_t)). The outputs are
    targets: on TF and PyTorch alike, callers should stop gradients through them.

    The numpy reference is `rlgraph.utils.numpy.vtrace` (time-major).

    Args:
        rho_bar: Clip of the ratios in the TD errors delta_t (rho-bar); None: no clipping.
        rho_bar_pg: Clip of the ratios in the policy-gradient advantages; None: no clipping.
        c_bar: Clip of the trace coefficients c_t (c-bar); None: no clipping.
        time_major: Whether the [B, T] inputs come as [T, B] instead.
        scope: Default "v-trace-function".

    Raises:
        RLGraphSpecError: If a threshold is not a positive number or None.

    API:
        calc_v_trace_values(log_is_weights, discounts, rewards, values, bootstrapped_values) ->
            (vs, pg_advantages), each shaped like `values`.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> seq = FloatBox(add_batch_rank=True, add_time_rank=True)
    >>> v_trace = VTraceFunction()
    >>> test = ComponentTest(v_trace, input_spaces=dict(
    ...     log_is_weights=seq, discounts=seq, rewards=seq, values=seq,
    ...     bootstrapped_values=FloatBox(add_batch_rank=True)), backend="pytorch")
    >>> ones = np.ones((1, 2), dtype=np.float32)
    >>> vs, pg_adv = test.test(("calc_v_trace_values", [0 * ones, 0.5 * ones, ones, 0 * ones,
    ...                                                 np.array([2.0], np.float32)]))
    >>> vs.tolist(), pg_adv.tolist()
    ([[2.0, 2.0]], [[2.0, 2.0]])
    """

    def __init__(self, rho_bar: Optional[float] = 1.0, rho_bar_pg: Optional[float] = 1.0,
                 c_bar: Optional[float] = 1.0, time_major: bool = False, scope: str = "v-trace-function",
                 **kwargs):
        super().__init__(scope=scope, **kwargs)
        owner = type(self).__name__
        self.rho_bar = _check_clip(rho_bar, "rho_bar", owner)
        self.rho_bar_pg = _check_clip(rho_bar_pg, "rho_bar_pg", owner)
        self.c_bar = _check_clip(c_bar, "c_bar", owner)
        if not isinstance(time_major, bool):
            raise RLGraphSpecError("time_major must be a bool", where=f"{owner}(time_major)", received=repr(time_major))
        self.time_major = time_major

    def check_input_spaces(self, input_spaces, action_space=None):
        layout = "[T, B]" if self.time_major else "[B, T]"
        for name in _SEQUENCE_ARGS:
            space = input_spaces.get(name)
            if space is None:
                continue
            rank = _full_rank(space)
            if rank not in (2, 3) or (rank == 3 and tuple(space.shape)[-1:] != (1,)):
                raise RLGraphSpaceError(space, f"`{name}` must be a sequence batch",
                                        where=f"{self.global_scope}.calc_v_trace_values({name})",
                                        expected=f"{layout} or {layout[:-1]}, 1]", received=repr(space),
                                        hint="use FloatBox(add_batch_rank=True, add_time_rank=True).")
            if space.has_batch_rank and space.has_time_rank and bool(space.time_major) != self.time_major:
                raise RLGraphSpaceError(space, f"`{name}` is {'' if space.time_major else 'not '}time-major",
                                        where=f"{self.global_scope}.calc_v_trace_values({name})",
                                        expected=layout, received=repr(space),
                                        hint=f"construct VTraceFunction(time_major={bool(space.time_major)}).")
        space = input_spaces.get("bootstrapped_values")
        if space is not None:
            rank = _full_rank(space)
            if rank not in (1, 2) or (rank == 2 and tuple(space.shape)[-1:] != (1,)):
                raise RLGraphSpaceError(space, "`bootstrapped_values` must hold one value per batch item",
                                        where=f"{self.global_scope}.calc_v_trace_values(bootstrapped_values)",
                                        expected="[B] or [B, 1]", received=repr(space),
                                        hint="pass V(x_T), the value of the state after the last step.")

    @rlgraph_api
    def calc_v_trace_values(self, log_is_weights, discounts, rewards, values, bootstrapped_values):
        """V-trace targets and advantages; see the class docstring for maths and shapes.

        Returns:
            (vs, pg_advantages), each shaped like `values`.
        """
        return self._graph_fn_calc_v_trace_values(log_is_weights, discounts, rewards, values, bootstrapped_values)

    @graph_fn(returns=2)
    def _graph_fn_calc_v_trace_values(self, log_is_weights, discounts, rewards, values, bootstrapped_values):
        if get_backend() == "tf":
            return self._v_trace_tf(log_is_weights, discounts, rewards, values, bootstrapped_values)
        return self._v_trace_torch(log_is_weights, discounts, rewards, values, bootstrapped_values)

    def _v_trace_tf(self, log_is_weights, discounts, rewards, values, bootstrapped_values):
        import tensorflow as tf
        dtype = values.dtype if values.dtype.is_floating else tf.float32
        keep_dim = len(values.shape) == 3
        # Work time-major on [T, B]: tf.scan runs over the leading (dynamic) axis.
        log_rho_t, gamma_t, r_t, v_t = (self._to_time_major_tf(tf.cast(x, dtype)) for x in
                                        (log_is_weights, discounts, rewards, values))
        v_T = tf.reshape(tf.cast(bootstrapped_values, dtype), [-1])
        rho_t = tf.exp(log_rho_t)
        clipped_rho_t = rho_t if self.rho_bar is None else tf.minimum(rho_t, self.rho_bar)
        c_t = rho_t if self.c_bar is None else tf.minimum(rho_t, self.c_bar)
        v_tp1 = tf.concat([v_t[1:], v_T[None]], axis=0)
        delta_t = clipped_rho_t * (r_t + gamma_t * v_tp1 - v_t)

        vs_minus_v = tf.scan(lambda acc, elems: elems[0] + elems[1] * acc, (delta_t, gamma_t * c_t),
                             initializer=tf.zeros_like(v_T), reverse=True)
        vs = v_t + vs_minus_v
        vs_tp1 = tf.concat([vs[1:], v_T[None]], axis=0)
        pg_rho_t = rho_t if self.rho_bar_pg is None else tf.minimum(rho_t, self.rho_bar_pg)
        pg_advantages = pg_rho_t * (r_t + gamma_t * vs_tp1 - v_t)
        return tuple(self._from_time_major_tf(x, keep_dim) for x in (vs, pg_advantages))

    def _to_time_major_tf(self, x):
        import tensorflow as tf
        if len(x.shape) == 3:
            x = tf.squeeze(x, axis=-1)
        return x if self.time_major else tf.transpose(x, [1, 0])

    def _from_time_major_tf(self, x, keep_dim):
        import tensorflow as tf
        x = x if self.time_major else tf.transpose(x, [1, 0])
        return x[..., None] if keep_dim else x

    def _v_trace_torch(self, log_is_weights, discounts, rewards, values, bootstrapped_values):
        import torch
        dtype = values.dtype if values.is_floating_point() else torch.float32
        keep_dim = values.dim() == 3

        def time_major(x):
            x = x.to(dtype)
            x = x.squeeze(-1) if x.dim() == 3 else x
            return x if self.time_major else x.transpose(0, 1)

        log_rho_t, gamma_t, r_t, v_t = (time_major(x) for x in (log_is_weights, discounts, rewards, values))
        v_T = bootstrapped_values.to(dtype).reshape(-1)
        rho_t = torch.exp(log_rho_t)
        clipped_rho_t = rho_t if self.rho_bar is None else rho_t.clamp(max=self.rho_bar)
        c_t = rho_t if self.c_bar is None else rho_t.clamp(max=self.c_bar)
        v_tp1 = torch.cat([v_t[1:], v_T[None]], dim=0)
        delta_t = clipped_rho_t * (r_t + gamma_t * v_tp1 - v_t)
        gamma_c_t = gamma_t * c_t

        acc = torch.zeros_like(v_T)
        steps = []
        for t in reversed(range(v_t.shape[0])):
            acc = delta_t[t] + gamma_c_t[t] * acc
            steps.append(acc)
        vs_minus_v = torch.stack(steps[::-1], dim=0) if steps else torch.zeros_like(v_t)
        vs = v_t + vs_minus_v
        vs_tp1 = torch.cat([vs[1:], v_T[None]], dim=0)
        pg_rho_t = rho_t if self.rho_bar_pg is None else rho_t.clamp(max=self.rho_bar_pg)
        pg_advantages = pg_rho_t * (r_t + gamma_t * vs_tp1 - v_t)

        def restore(x):
            x = x if self.time_major else x.transpose(0, 1)
            return x.unsqueeze(-1) if keep_dim else x

        return restore(vs), restore(pg_advantages)
