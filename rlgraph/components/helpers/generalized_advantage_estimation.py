"""`GeneralizedAdvantageEstimation`: GAE advantages over a flat batch of episode fragments."""
from __future__ import annotations

from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.components.helpers.clipping import Clipping
from rlgraph.components.helpers.sequence_helper import (fragment_ends_tf, fragment_ends_torch, next_values_tf,
                                                        next_values_torch, reverse_decayed_sum_tf,
                                                        reverse_decayed_sum_torch)
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


def _check_unit_interval(value, name: str, owner: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise RLGraphSpecError(f"{name} must be a number in [0, 1]", where=f"{owner}({name})",
                               expected="a float in [0, 1]", received=repr(value))
    return float(value)


class GeneralizedAdvantageEstimation(Component):
    """GAE(gamma, lambda) advantages (Schulman et al. 2015, https://arxiv.org/abs/1506.02438).

    The batch is flat, [B], made of concatenated episode fragments: `sequence_indices` is True at
    the last step of each fragment (the batch's last step always ends one), `terminals` d_t where
    the episode really ended. With v_{t+1} the next baseline value in the same fragment:

        delta_t = r_t + gamma * (1 - d_t) * v_{t+1} - v_t
        A_t = delta_t + gamma * lambda * (1 - d_t) * A_{t+1},   A = 0 after a fragment's last step

    The next state of a fragment's last step is not in the batch: if that step is not terminal,
    its own value v_t stands in for v_{t+1} (a truncated fragment is bootstrapped, not treated as
    an episode end); if it is terminal, the bootstrap is 0. Per fragment this is the numpy
    reference `gae(r, v, bootstrap_value=v[-1], d, gamma, lambda)`. Rewards are clipped to
    [-clip_rewards, clip_rewards] first when clip_rewards > 0.

    Args:
        gae_lambda: lambda in [0, 1] (0: one-step TD errors, 1: discounted returns minus values).
        discount: gamma in [0, 1].
        clip_rewards: Reward clip value (>= 0); 0: no clipping.
        scope: Default "generalized-advantage-estimation".

    Raises:
        RLGraphSpecError: If `gae_lambda` or `discount` are not in [0, 1], or `clip_rewards` < 0.

    API:
        calc_gae_values(baseline_values, rewards, terminals, sequence_indices) -> [B] advantages A_t.
        calc_td_errors(baseline_values, rewards, terminals, sequence_indices) -> [B] delta_t.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import BoolBox, FloatBox
    >>> gae = GeneralizedAdvantageEstimation(gae_lambda=1.0, discount=0.5)
    >>> flat, flags = FloatBox(add_batch_rank=True), BoolBox(add_batch_rank=True)
    >>> test = ComponentTest(gae, input_spaces=dict(baseline_values=flat, rewards=flat, terminals=flags,
    ...                                             sequence_indices=flags), backend="pytorch")
    >>> v, r = np.zeros(3, np.float32), np.array([1.0, 1.0, 1.0], np.float32)
    >>> d = np.array([False, False, True])
    >>> test.test(("calc_gae_values", [v, r, d, d])).tolist()
    [1.75, 1.5, 1.0]
    """

    def __init__(self, gae_lambda: float = 1.0, discount: float = 1.0, clip_rewards: float = 0.0,
                 scope: str = "generalized-advantage-estimation", **kwargs):
        super().__init__(scope=scope, **kwargs)
        owner = type(self).__name__
        self.gae_lambda = _check_unit_interval(gae_lambda, "gae_lambda", owner)
        self.discount = _check_unit_interval(discount, "discount", owner)
        if isinstance(clip_rewards, bool) or not isinstance(clip_rewards, (int, float)) or not clip_rewards >= 0.0:
            raise RLGraphSpecError("clip_rewards must be a number >= 0", where=f"{owner}(clip_rewards)",
                                   expected="a float >= 0 (0: no clipping)", received=repr(clip_rewards))
        self.clip_rewards = float(clip_rewards)
        self.clipping = Clipping(clip_value=self.clip_rewards, scope="reward-clipping")
        self.add_components(self.clipping)

    @rlgraph_api
    def calc_gae_values(self, baseline_values, rewards, terminals, sequence_indices):
        """Advantages A_t [B]; see the class docstring."""
        rewards = self.clipping.clip_if_needed(rewards)
        return self._graph_fn_calc_gae_values(baseline_values, rewards, terminals, sequence_indices)

    @rlgraph_api(must_be_complete=False)
    def calc_td_errors(self, baseline_values, rewards, terminals, sequence_indices):
        """One-step TD errors delta_t [B], bootstrapped as in `calc_gae_values`."""
        rewards = self.clipping.clip_if_needed(rewards)
        return self._graph_fn_calc_td_errors(baseline_values, rewards, terminals, sequence_indices)

    @graph_fn
    def _graph_fn_calc_td_errors(self, baseline_values, rewards, terminals, sequence_indices):
        if get_backend() == "tf":
            return self._td_errors_tf(baseline_values, rewards, terminals, sequence_indices)[0]
        return self._td_errors_torch(baseline_values, rewards, terminals, sequence_indices)[0]

    @graph_fn
    def _graph_fn_calc_gae_values(self, baseline_values, rewards, terminals, sequence_indices):
        decay = self.discount * self.gae_lambda
        if get_backend() == "tf":
            import tensorflow as tf
            delta_t, ends = self._td_errors_tf(baseline_values, rewards, terminals, sequence_indices)
            cut = tf.logical_or(ends, tf.cast(tf.reshape(terminals, [-1]), tf.bool))
            return reverse_decayed_sum_tf(delta_t, cut, decay)
        import torch
        delta_t, ends = self._td_errors_torch(baseline_values, rewards, terminals, sequence_indices)
        cut = torch.logical_or(ends, terminals.reshape(-1).to(torch.bool))
        return reverse_decayed_sum_torch(delta_t, cut, decay)

    def _td_errors_tf(self, baseline_values, rewards, terminals, sequence_indices):
        import tensorflow as tf
        dtype = baseline_values.dtype if baseline_values.dtype.is_floating else tf.float32
        v_t = tf.reshape(tf.cast(baseline_values, dtype), [-1])
        r_t = tf.reshape(tf.cast(rewards, dtype), [-1])
        not_done = 1.0 - tf.reshape(tf.cast(terminals, dtype), [-1])
        ends = fragment_ends_tf(sequence_indices)
        return r_t + self.discount * not_done * next_values_tf(v_t, ends) - v_t, ends

    def _td_errors_torch(self, baseline_values, rewards, terminals, sequence_indices):
        import torch
        dtype = baseline_values.dtype if baseline_values.is_floating_point() else torch.float32
        v_t = baseline_values.to(dtype).reshape(-1)
        r_t = rewards.to(dtype).reshape(-1)
        not_done = 1.0 - terminals.to(dtype).reshape(-1)
        ends = fragment_ends_torch(sequence_indices)
        return r_t + self.discount * not_done * next_values_torch(v_t, ends) - v_t, ends
