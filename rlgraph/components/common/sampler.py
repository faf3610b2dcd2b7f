"""`Sampler`: draws rows uniformly (with replacement) from a batch of records, reproducibly."""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.common.leading_ranks import batch_axis, map_leaf_spaces, require_ranks
from rlgraph.components.component import Component
from rlgraph.utils import nest
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.numpy.batches import HASH_MASK, HASH_MULTIPLIER
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError

SAMPLING_STRATEGIES = ("uniform",)


class Sampler(Component):
    """Samples `sample_size` rows of a batch uniformly, with replacement: the same rows of every leaf
    of `inputs` (a record of several fields keeps its rows together).

    Reproducible and identical on both backends: the row indices do not come from TF's or
    PyTorch's random generators (which differ) but from a counter-based integer hash, computed
    with int64 ops in the graph function, that `rlgraph.utils.numpy.sampler_indices` reproduces:
    call k (k = 0, 1, ...) draws rows `hash32(stream_k + i) % B` for i < sample_size, with
    stream_k = hash32(seed ^ hash32(k)). `seed` and the call counter k are the component's
    variables "<scope>/seed" and "<scope>/num_calls" (worker-local, saved with the model), so a
    restored model continues the same sequence. With `seed=None` the seed is drawn from numpy's
    global generator when the variables are created (`ComponentTest` and agents seed it, so
    this too repeats run by run). `hash32` is a 32-bit mixing function (two xor-shift-multiply
    rounds); taking it modulo B biases rows by less than B / 2**32.

    Args:
        sampling_strategy: Only "uniform".
        seed: The stream's seed in [0, 2**31), or None (see above).
        scope: Default "sampler".

    Raises:
        RLGraphSpecError: For another strategy or a bad seed.
        RLGraphSpaceError: At build, if a leaf of `inputs` has no batch rank.
        RLGraphError: At run time, for a negative sample_size, sampling from an empty batch, or
            leaves of different batch sizes.

    API:
        sample(sample_size, inputs) -> `inputs` with `sample_size` rows (nested like `inputs`).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.utils import numpy as rnp
    >>> test = ComponentTest(Sampler(seed=42), input_spaces=dict(sample_size=int, inputs=FloatBox(
    ...     add_batch_rank=True)), backend="pytorch")
    >>> test.test(("sample", [4, np.arange(10, dtype=np.float32)])).tolist()
    [3.0, 7.0, 0.0, 7.0]
    >>> rnp.sampler_indices(seed=42, num_calls=0, sample_size=4, batch_size=10).tolist()
    [3, 7, 0, 7]
    """

    def __init__(self, sampling_strategy: str = "uniform", seed: Optional[int] = None, scope: str = "sampler",
                 **kwargs):
        super().__init__(scope=scope, **kwargs)
        name = type(self).__name__
        if sampling_strategy not in SAMPLING_STRATEGIES:
            raise RLGraphSpecError("unknown sampling strategy", where=f"{name}(sampling_strategy)",
                                   expected=" or ".join(repr(s) for s in SAMPLING_STRATEGIES),
                                   received=repr(sampling_strategy))
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or
                                 not 0 <= seed < 2 ** 31):
            raise RLGraphSpecError("seed must be None or an int in [0, 2**31)", where=f"{name}(seed)",
                                   received=repr(seed))
        self.sampling_strategy = sampling_strategy
        self.seed = None if seed is None else int(seed)
        self.seed_variable = None
        self.num_calls = None
        self._axes = None  # The batch axis of each leaf of `inputs`, nested like it.

    def check_input_spaces(self, input_spaces, action_space=None):
        require_ranks(input_spaces["inputs"], f"{self.global_scope}.sample(inputs)", batch=True)
        self._axes = map_leaf_spaces(input_spaces["inputs"], batch_axis)

    def create_variables(self, input_spaces, action_space=None):
        seed = self.seed if self.seed is not None else int(np.random.randint(0, 2 ** 31))
        self.seed_variable = self.get_variable("seed", dtype="int64", initializer=seed, trainable=False, local=True)
        self.num_calls = self.get_variable("num_calls", dtype="int64", initializer=0, trainable=False, local=True)

    @rlgraph_api
    def sample(self, sample_size, inputs):
        """`sample_size` rows of `inputs`, drawn uniformly with replacement (the same rows in every leaf)."""
        return self._graph_fn_sample(sample_size, inputs)

    # The result has sample_size rows, which no trace shape ties to the input's batch.
    @graph_fn(output_space=lambda self, sample_size, inputs: map_leaf_spaces(
        inputs, lambda leaf: leaf.with_batch_rank(True) if leaf.batch_size else leaf))
    def _graph_fn_sample(self, sample_size, inputs):
        where = f"{self.global_scope}.sample"
        flat = list(zip(nest.flatten(inputs), nest.flatten(self._axes)))
        if get_backend() == "tf":
            return self._sample_tf(sample_size, inputs, flat, where)
        return self._sample_torch(sample_size, inputs, flat, where)

    def _sample_tf(self, sample_size, inputs, flat: list, where: str) -> Any:
        import tensorflow as tf
        sizes = [tf.shape(x, out_type=tf.int64)[axis] for x, axis in flat]
        b, n = sizes[0], tf.cast(sample_size, tf.int64)
        checks = [tf.debugging.Assert(tf.logical_and(n >= 0, tf.logical_or(tf.equal(n, 0), b > 0)), [
            f"{where}(sample_size): expected a sample_size >= 0 (and > 0 only for a non-empty batch); received",
            n, "rows from a batch of", b])]
        checks += [tf.debugging.Assert(tf.equal(s, b), [
            f"{where}(inputs): the batch sizes of the leaves differ. Expected", b, "rows in every leaf; received", s])
            for s in sizes[1:]]
        with tf.control_dependencies(checks):
            k = self.read_variable(self.num_calls)
            indices = _sampler_indices_tf(self.read_variable(self.seed_variable), k, n, b)
        with tf.control_dependencies([self.assign_variable(self.num_calls, k + 1)]):
            return nest.map_structure(lambda x, axis: tf.gather(x, indices, axis=axis), inputs, self._axes)

    def _sample_torch(self, sample_size, inputs, flat: list, where: str) -> Any:
        sizes = [int(x.shape[axis]) for x, axis in flat]
        b, n = sizes[0], int(sample_size)
        if any(s != b for s in sizes):
            raise RLGraphError("the batch sizes of the leaves differ", where=f"{where}(inputs)",
                               expected=f"{b} rows in every leaf", received=f"batch sizes {sizes}")
        if n < 0 or (n > 0 and b == 0):
            raise RLGraphError("cannot draw that many rows", where=f"{where}(sample_size)",
                               expected="a sample_size >= 0 (and > 0 only for a non-empty batch)",
                               received=f"{n} rows from a batch of {b}")
        k = self.read_variable(self.num_calls)
        indices = _sampler_indices_torch(self.read_variable(self.seed_variable), k, n, b)
        self.assign_variable(self.num_calls, k + 1)
        return nest.map_structure(lambda x, axis: _take_torch(x, indices, axis), inputs, self._axes)


# --- The hash (see `rlgraph.utils.numpy.batches` for the reference) --------------------------------------------

def _hash32_tf(x):
    import tensorflow as tf
    x = tf.bitwise.bitwise_and(x, HASH_MASK)
    for _ in range(2):
        x = tf.bitwise.bitwise_and(tf.bitwise.bitwise_xor(tf.bitwise.right_shift(x, 16), x) * HASH_MULTIPLIER,
                                   HASH_MASK)
    return tf.bitwise.bitwise_xor(tf.bitwise.right_shift(x, 16), x)


def _sampler_indices_tf(seed, k, n, b):
    import tensorflow as tf
    stream = _hash32_tf(tf.bitwise.bitwise_xor(seed, _hash32_tf(k)))
    return tf.math.floormod(_hash32_tf(stream + tf.range(n, dtype=tf.int64)), tf.maximum(b, 1))


def _hash32_torch(x):
    x = x & HASH_MASK
    for _ in range(2):
        x = (((x >> 16) ^ x) * HASH_MULTIPLIER) & HASH_MASK
    return (x >> 16) ^ x


def _sampler_indices_torch(seed, k, n: int, b: int):
    import torch
    stream = _hash32_torch(seed ^ _hash32_torch(k))
    return _hash32_torch(stream + torch.arange(n, dtype=torch.int64, device=stream.device)) % max(b, 1)


def _take_torch(x, indices, axis: int):
    if isinstance(x, np.ndarray):  # Text leaves stay numpy arrays on PyTorch.
        return np.take(x, indices.cpu().numpy(), axis=axis)
    return x.index_select(axis, indices.to(x.device))
