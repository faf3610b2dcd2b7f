"""`SequenceHelper`: lengths, decays and discounted sums of episode fragments in a flat batch."""
from __future__ import annotations

from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.spaces import IntBox
from rlgraph.utils.decorators import graph_fn, rlgraph_api


# Backend functions shared with `GeneralizedAdvantageEstimation`. A flat batch [B] is a chain of
# fragments; `ends` is True at the last step of each fragment. The batch's last step always ends one.

def fragment_ends_tf(sequence_indices):
    import tensorflow as tf
    ends = tf.cast(tf.reshape(sequence_indices, [-1]), tf.bool)
    is_last = tf.equal(tf.range(tf.size(ends)), tf.size(ends) - 1)
    return tf.logical_or(ends, is_last)


def fragment_ends_torch(sequence_indices):
    import torch
    ends = sequence_indices.reshape(-1).to(torch.bool).clone()
    if ends.numel() > 0:
        ends[-1] = True
    return ends


def reverse_decayed_sum_tf(x_t, ends, decay):
    """acc_t = x_t + decay * acc_{t+1}, restarting after each fragment end (tf.scan in reverse over B)."""
    import tensorflow as tf
    decay_t = tf.cast(decay, x_t.dtype) * (1.0 - tf.cast(ends, x_t.dtype))
    return tf.scan(lambda acc, elems: elems[0] + elems[1] * acc, (x_t, decay_t),
                   initializer=tf.zeros([], x_t.dtype), reverse=True)


def reverse_decayed_sum_torch(x_t, ends, decay):
    import torch
    decay_t = decay * (1.0 - ends.to(x_t.dtype))
    acc = torch.zeros((), dtype=x_t.dtype, device=x_t.device)
    out = [None] * x_t.shape[0]
    for t in reversed(range(x_t.shape[0])):
        acc = x_t[t] + decay_t[t] * acc
        out[t] = acc
    return torch.stack(out) if out else x_t.clone()


def next_values_tf(v_t, ends):
    """v_{t+1} inside a fragment; at a fragment's last step that step's own value v_t."""
    import tensorflow as tf
    v_shift = tf.concat([v_t[1:], v_t[-1:]], axis=0)
    return tf.where(ends, v_t, v_shift)


def next_values_torch(v_t, ends):
    import torch
    v_shift = torch.cat([v_t[1:], v_t[-1:]], dim=0)
    return torch.where(ends, v_t, v_shift)


class SequenceHelper(Component):
    """Works on flat batches [B] made of concatenated episode fragments.

    `sequence_indices` [B] (bools) is True at the last step of each fragment; the batch's last step
    always ends a fragment, whatever its flag. E.g. [F, F, T, F, T] holds fragments of 3 and 2 steps.
    `terminals` d_t [B] mark steps after which the episode really ended (no bootstrapping).

    Args:
        scope: Default "sequence-helper".

    API:
        calc_sequence_lengths(sequence_indices) -> [num_fragments] int64 lengths.
        calc_sequence_decays(sequence_indices, decay) -> [B] decay^k, k the step's index in its
            fragment (0 at the first step).
        reverse_apply_decays_to_sequence(values, sequence_indices, decay) -> [B]
            G_t = x_t + decay * G_{t+1} within each fragment, G = 0 after its last step (the numpy
            reference is `discounted_returns` per fragment with no terminals).
        bootstrap_values(rewards, values, terminals, sequence_indices, discount) -> [B] bootstrapped
            returns G_t = r_t + discount * (1 - d_t) * G_{t+1}, where after a fragment's last step
            G = v_last, the value estimate of that last step (the next state is not in the batch, so
            its own value stands in for it), and 0 if that step is terminal. Each step thus gets an
            n-step target with n reaching to the end of its fragment; numpy: `discounted_returns`
            per fragment with `bootstrap_value=v_last`.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import BoolBox
    >>> test = ComponentTest(SequenceHelper(), input_spaces=dict(
    ...     sequence_indices=BoolBox(add_batch_rank=True)), backend="pytorch")
    >>> test.test(("calc_sequence_lengths", np.array([False, False, True, False, True]))).tolist()
    [3, 2]
    """

    def __init__(self, scope: str = "sequence-helper", **kwargs):
        super().__init__(scope=scope, **kwargs)

    @rlgraph_api(must_be_complete=False)
    def calc_sequence_lengths(self, sequence_indices):
        """Lengths [num_fragments] of the fragments, in batch order."""
        return self._graph_fn_calc_sequence_lengths(sequence_indices)

    # One row per fragment: a batch whose size no traced shape shows.
    @graph_fn(output_space=IntBox(dtype="int64", add_batch_rank=True))
    def _graph_fn_calc_sequence_lengths(self, sequence_indices):
        if get_backend() == "tf":
            import tensorflow as tf
            end_positions = tf.where(fragment_ends_tf(sequence_indices))[:, 0]
            return end_positions - tf.concat([tf.constant([-1], tf.int64), end_positions[:-1]], axis=0)
        import torch
        end_positions = torch.nonzero(fragment_ends_torch(sequence_indices)).reshape(-1)
        previous = torch.cat([torch.tensor([-1], dtype=end_positions.dtype), end_positions[:-1]])
        return end_positions - previous

    @rlgraph_api(must_be_complete=False)
    def _graph_fn_calc_sequence_decays(self, sequence_indices, decay):
        """decay^k [B] with k the index of each step within its fragment."""
        if get_backend() == "tf":
            import tensorflow as tf
            ends = fragment_ends_tf(sequence_indices)
            # A step's index in its fragment: the previous one's + 1, 0 after a fragment end.
            starts = tf.concat([[True], ends[:-1]], axis=0)
            k = tf.scan(lambda count, start: tf.where(start, tf.zeros_like(count), count + 1), starts,
                        initializer=tf.constant(-1, tf.int32))
            return tf.pow(tf.cast(decay, tf.float32), tf.cast(k, tf.float32))
        import torch
        ends = fragment_ends_torch(sequence_indices)
        k, count = [], -1
        for t in range(ends.shape[0]):
            count = 0 if t == 0 or bool(ends[t - 1]) else count + 1
            k.append(count)
        decay = torch.as_tensor(decay, dtype=torch.float32)
        return torch.pow(decay, torch.tensor(k, dtype=torch.float32))

    @rlgraph_api(must_be_complete=False)
    def _graph_fn_reverse_apply_decays_to_sequence(self, values, sequence_indices, decay):
        """Decayed sums G_t = x_t + decay * G_{t+1} within each fragment, [B]."""
        if get_backend() == "tf":
            import tensorflow as tf
            x_t = tf.cast(values, tf.float32) if not values.dtype.is_floating else values
            return reverse_decayed_sum_tf(x_t, fragment_ends_tf(sequence_indices), decay)
        import torch
        x_t = values if values.is_floating_point() else values.to(torch.float32)
        return reverse_decayed_sum_torch(x_t, fragment_ends_torch(sequence_indices), decay)

    @rlgraph_api(must_be_complete=False)
    def _graph_fn_bootstrap_values(self, rewards, values, terminals, sequence_indices, discount):
        """Returns [B] bootstrapped to the end of each fragment; see the class docstring."""
        if get_backend() == "tf":
            import tensorflow as tf
            v_t = tf.reshape(tf.cast(values, tf.float32) if not values.dtype.is_floating else values, [-1])
            r_t, not_done = tf.cast(rewards, v_t.dtype), 1.0 - tf.cast(terminals, v_t.dtype)
            ends = fragment_ends_tf(sequence_indices)
            # Fold the bootstrap into the last reward of each fragment, then sum backwards
            # with the discount cut at terminals as well as at fragment ends.
            r_t = r_t + tf.cast(discount, v_t.dtype) * not_done * tf.where(ends, v_t, tf.zeros_like(v_t))
            cut = tf.logical_or(ends, tf.cast(terminals, tf.bool))
            return reverse_decayed_sum_tf(r_t, cut, discount)
        import torch
        v_t = (values if values.is_floating_point() else values.to(torch.float32)).reshape(-1)
        r_t, not_done = rewards.to(v_t.dtype), 1.0 - terminals.to(v_t.dtype)
        ends = fragment_ends_torch(sequence_indices)
        r_t = r_t + discount * not_done * torch.where(ends, v_t, torch.zeros_like(v_t))
        cut = torch.logical_or(ends, terminals.to(torch.bool))
        return reverse_decayed_sum_torch(r_t, cut, discount)
