"""`MovingStandardize`: standardizes inputs with running per-feature mean and std (Welford)."""
from __future__ import annotations

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.layers.layer import preprocessed_space
from rlgraph.components.layers.preprocessing.preprocess_layer import PreprocessLayer
from rlgraph.spaces import BoolBox, ContainerSpace, FloatBox, Space, TextBox
from rlgraph.utils.decorators import graph_fn
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError


class MovingStandardize(PreprocessLayer):
    """Outputs (x - mean) / (std + epsilon) with the running statistics of all inputs since the last reset.

    Mean and (population) standard deviation are kept per feature and pooled over every row of
    every batch (and time step) seen since the last `reset`, the current input included. A batch
    is merged into the running count n, mean and sum of squared differences M2 in one step
    (Welford's algorithm in the batched form of Chan et al. 1979,
    https://doi.org/10.1007/978-3-642-51461-6_3):
        delta = mean_b - mean, n' = n + n_b, mean' = mean + delta * n_b / n',
        M2' = M2 + M2_b + delta^2 * n * n_b / n', std = sqrt(M2' / n').

    Shapes: inputs [B, ...] or [B, T, ...] (int or float); outputs the same shape, float.
    Variables: "count" (scalar), "mean" and "m2" (shaped like one input row).

    Args:
        batch_size: The acting batch size. The statistics are pooled over all rows, so it does not
            change the maths; it is kept (and validated) for specs written for the reference API.
        epsilon: Added to the std to avoid dividing by zero (e.g. for the first single input).
        per_episode: True (default, as the reference): `reset` zeroes the statistics, and agents
            reset their preprocessors at episode starts. False: the statistics run over the whole
            training (what Stable-Baselines3's VecNormalize keeps for observations); `reset`
            leaves them.
        scope: Default "moving-standardize".

    Raises:
        RLGraphSpecError: For a non-positive `batch_size` or `epsilon`.
        RLGraphSpaceError: At build time for inputs without a batch rank, bool/text or container inputs.

    API:
        apply(inputs): The standardized inputs.
        reset(): Zeroes count, mean and M2 (with per_episode; else nothing).

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox
    >>> test = ComponentTest(MovingStandardize(), input_spaces=dict(inputs=FloatBox(shape=(1,),
    ...                      add_batch_rank=True)), backend="pytorch")
    >>> test.test(("apply", np.array([[1.0], [3.0]]))).round(4).tolist()
    [[-1.0], [1.0]]
    """

    def __init__(self, batch_size: int = 1, epsilon: float = 1e-8, per_episode: bool = True,
                 scope: str = "moving-standardize", **kwargs):
        super().__init__(scope=scope, **kwargs)
        where = type(self).__name__
        if not isinstance(batch_size, (int, np.integer)) or isinstance(batch_size, bool) or batch_size < 1:
            raise RLGraphSpecError("batch_size must be a positive int", where=f"{where}(batch_size)",
                                   received=repr(batch_size))
        if not isinstance(epsilon, (int, float, np.floating)) or isinstance(epsilon, bool) or epsilon <= 0:
            raise RLGraphSpecError("epsilon must be a positive number", where=f"{where}(epsilon)",
                                   received=repr(epsilon))
        if not isinstance(per_episode, (bool, np.bool_)):
            raise RLGraphSpecError("per_episode must be a bool", where=f"{where}(per_episode)",
                                   received=repr(per_episode))
        self.batch_size = int(batch_size)
        self.epsilon = float(epsilon)
        self.per_episode = bool(per_episode)
        self.stateful = self.per_episode
        self.count = None
        self.mean = None
        self.m2 = None
        self._num_lead = 1

    def _float_dtype(self, space: Space) -> np.dtype:
        return space.dtype if space.dtype.kind == "f" else np.dtype(np.float32)

    def get_preprocessed_space(self, space: Space) -> Space:
        """A FloatBox of the input's shape and ranks (the input's float dtype, else float32)."""
        self._check(space)
        return FloatBox(shape=space.shape, dtype=self._float_dtype(space), add_batch_rank=space.has_batch_rank,
                        add_time_rank=space.has_time_rank, time_major=space.time_major)

    def _check(self, space: Space) -> None:
        where = f"{self.global_scope}.apply(inputs)"
        if isinstance(space, (ContainerSpace, BoolBox, TextBox)):
            raise RLGraphSpaceError(space, "only int or float boxes can be standardized", where=where,
                                    hint="standardize the numeric parts of a container in a DictPreprocessorStack.")
        if not space.has_batch_rank:
            raise RLGraphSpaceError(space, "the input needs a batch rank", where=where,
                                    expected="a space with add_batch_rank=True")

    def check_input_spaces(self, input_spaces, action_space=None):
        self._check(self.input_space(input_spaces))

    def create_variables(self, input_spaces, action_space=None):
        space = self.input_space(input_spaces)
        self._num_lead = 1 + int(space.has_time_rank)
        dtype = self._float_dtype(space)
        self.count = self.get_variable("count", dtype=dtype, trainable=False)
        self.mean = self.get_variable("mean", shape=space.shape, dtype=dtype, trainable=False)
        self.m2 = self.get_variable("m2", shape=space.shape, dtype=dtype, trainable=False)

    # It moves or keeps ranks that the traced shapes do not show.
    @graph_fn(output_space=preprocessed_space)
    def _graph_fn_apply(self, *inputs):
        if get_backend() == "tf":
            return self._apply_tf(inputs[0])
        return self._apply_torch(inputs[0])

    def _apply_tf(self, x):
        import tensorflow as tf
        x = tf.cast(x, self.mean.dtype)
        axes = list(range(self._num_lead))
        n_b = tf.cast(tf.reduce_prod(tf.shape(x)[:self._num_lead]), x.dtype)
        mean_b = tf.reduce_mean(x, axis=axes)
        m2_b = tf.reduce_sum(tf.square(x - mean_b), axis=axes)
        n, mean, m2 = self.count.read_value(), self.mean.read_value(), self.m2.read_value()
        total = n + n_b
        delta = mean_b - mean
        mean = mean + delta * n_b / total
        m2 = m2 + m2_b + tf.square(delta) * n * n_b / total
        self.count.assign(total)
        self.mean.assign(mean)
        self.m2.assign(m2)
        return (x - mean) / (tf.sqrt(m2 / total) + self.epsilon)

    def _apply_torch(self, x):
        import torch
        x = x.to(self.mean.dtype)
        axes = tuple(range(self._num_lead))
        with torch.no_grad():
            n_b = float(np.prod(tuple(x.shape[:self._num_lead])))
            mean_b = x.mean(dim=axes)
            m2_b = ((x - mean_b) ** 2).sum(dim=axes)
            n = float(self.count)
            total = n + n_b
            delta = mean_b - self.mean
            self.mean.add_(delta * n_b / total)
            self.m2.add_(m2_b + delta ** 2 * n * n_b / total)
            self.count.fill_(total)
            return (x - self.mean) / (torch.sqrt(self.m2 / total) + self.epsilon)

    @graph_fn
    def _graph_fn_reset(self):
        if not self.per_episode:
            return None
        if get_backend() == "tf":
            import tensorflow as tf
            for variable in (self.count, self.mean, self.m2):
                variable.assign(tf.zeros_like(variable))
            return None
        import torch
        with torch.no_grad():
            for variable in (self.count, self.mean, self.m2):
                variable.zero_()
        return None
