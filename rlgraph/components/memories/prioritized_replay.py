"""`PrioritizedReplay`: proportional prioritized experience replay, in-graph on both backends."""
from __future__ import annotations

from typing import Any

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.memories.memory import Memory
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.utils import torch_random
from rlgraph.utils.decorators import graph_fn, rlgraph_api, tracing
from rlgraph.utils.nest import unflatten_op
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphError, RLGraphSpaceError, RLGraphSpecError


class PrioritizedReplay(Memory):
    """A ring-buffer replay memory sampling records with probability P(i) = p_i / sum_k p_k.

    Proportional prioritization after Schaul et al. 2015, https://arxiv.org/abs/1511.05952:
    a record's priority is p_i = (|delta_i| + epsilon) ** alpha, new records get
    max_priority ** alpha (max_priority: the largest |delta| + epsilon seen so far, initially 1),
    and `get_records` returns importance weights w_i = (N * P(i)) ** -beta / max_j w_j, where N
    is the fill level and max_j w_j belongs to the smallest stored priority (computed as
    (p_i / p_min) ** -beta).

    Variables (besides the `Memory` record storage, `index` and `size`): "sum_tree" and
    "min_tree", flat [2 * C2] float32 trees with C2 = `capacity` rounded up to a power of two;
    node 1 is the root, node k has children 2k and 2k + 1, the leaf of record i is node C2 + i
    (node 0 and leaves past `capacity` are unused: 0 in the sum tree, +inf in the min tree);
    and "max_priority" (float32 scalar). All of them go through `Memory.save`/`load`.

    API:
        insert_records(records): Writes a batch [B, ...] at the ring-buffer position (the last
            `capacity` rows if B > capacity).
        get_records(num_records): (records [n, ...], indices [n] int32, weights [n] float32):
            stratified sampling, one uniform draw in each of n equal slices of the total
            priority mass, found by a vectorized descent of the sum tree (log2(C2) gathers).
            Uses the agent's own random stream (seeded by the executor's seed). On an empty memory
            the result is meaningless (rows of record 0).
        update_records(indices, update): Sets p_i = (|update_i| + epsilon) ** alpha for
            indices [B] and updates [B]; for a duplicate index the last occurrence wins.
            Spaces that cannot fit (not batches of scalars, different fixed batch sizes) fail
            the build with `RLGraphSpaceError`; at run time, batches of different lengths or
            indices outside [0, size) raise `RLGraphError` (on TF from in-graph checks, which
            the executor converts).
        get_size(): The number of stored records (int64).
        clear(): Empties the memory (positions, trees, max_priority; stale record rows stay).

    Args:
        capacity: The maximum number of records.
        alpha: Prioritization exponent in [0, 1] (0: uniform sampling, 1: proportional to the priorities).
        beta: Importance-sampling exponent in [0, 1] (0: all weights 1, 1: full correction).
        epsilon: Added to |update| so that no stored record has priority 0 (> 0).
        scope: Default "prioritized-replay".

    Raises:
        RLGraphSpecError: For a bad `capacity`, `alpha`, `beta` or `epsilon`.

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import FloatBox, IntBox
    >>> memory = PrioritizedReplay(capacity=4, alpha=1.0, beta=1.0)
    >>> test = ComponentTest(memory, backend="pytorch", input_spaces=dict(
    ...     records=FloatBox(add_batch_rank=True), num_records=int,
    ...     indices=IntBox(4, add_batch_rank=True), update=FloatBox(add_batch_rank=True)))
    >>> test.test(("insert_records", np.array([10.0, 11.0, 12.0], np.float32)))
    >>> test.test(("update_records", [np.array([0, 1, 2]), np.array([1.0, 3.0, -2.0], np.float32)]))
    >>> records, indices, weights = test.test(("get_records", 6))  # One draw per unit of priority mass.
    >>> records.tolist(), indices.tolist(), weights.astype(float).round(4).tolist()
    ([10.0, 11.0, 11.0, 11.0, 12.0, 12.0], [0, 1, 1, 1, 2, 2], [1.0, 0.3333, 0.3333, 0.3333, 0.5, 0.5])
    >>> int(test.test("get_size"))
    3
    """

    def __init__(self, capacity: int = 1000, alpha: float = 1.0, beta: float = 0.0, epsilon: float = 1e-6,
                 scope: str = "prioritized-replay", **kwargs):
        super().__init__(capacity=capacity, scope=scope, **kwargs)
        if self.capacity > 2 ** 31:
            raise RLGraphSpecError("capacity must be at most 2**31 (2147483648): the sampled indices are int32",
                                   where=f"{type(self).__name__}(capacity)", received=self.capacity,
                                   hint='lower memory_spec.capacity, or use "mem-prioritized-replay" (numpy).')
        self.alpha = _non_negative(alpha, "alpha", high=1.0)
        self.beta = _non_negative(beta, "beta", high=1.0)
        self.epsilon = _non_negative(epsilon, "epsilon")
        if self.epsilon == 0.0:
            raise RLGraphSpecError("epsilon must be > 0", where="PrioritizedReplay(epsilon)", received=epsilon,
                                   hint="a record of priority 0 could never be sampled again and breaks the "
                                        "weight normalization; use a small value such as 1e-6.")
        self.depth = (self.capacity - 1).bit_length()  # Tree levels below the root.
        self.capacity_pow2 = 2 ** self.depth
        self.sum_tree = None
        self.min_tree = None
        self.max_priority = None

    def check_input_spaces(self, input_spaces, action_space=None):
        super().check_input_spaces(input_spaces, action_space)
        indices, update = input_spaces.get("indices"), input_spaces.get("update")
        where = f"{self.global_scope}.update_records"
        for name, space, kinds in (("indices", indices, (IntBox,)), ("update", update, (FloatBox, IntBox))):
            if space is None:
                continue
            if not isinstance(space, kinds) or not space.has_batch_rank or space.has_time_rank or space.shape != ():
                raise RLGraphSpaceError(space, f"'{name}' must be a batch of scalars", where=f"{where}({name})",
                                        expected=f"{' or '.join(k.__name__ for k in kinds)}(shape=(), "
                                                 f"add_batch_rank=True)", received=space)
        if indices is not None and update is not None and None not in (indices.batch_size, update.batch_size) \
                and indices.batch_size != update.batch_size:
            raise RLGraphSpaceError(update, "'indices' and 'update' must have the same batch size",
                                    where=f"{where}(indices, update)", expected=indices.batch_size,
                                    received=update.batch_size)

    def storage_bytes(self, record_space):
        return super().storage_bytes(record_space) + 2 * 2 * self.capacity_pow2 * 4  # Two float32 trees.

    def create_variables(self, input_spaces, action_space=None):
        super().create_variables(input_spaces, action_space)
        size = 2 * self.capacity_pow2
        self.sum_tree = self.get_variable("sum_tree", shape=(size,), dtype="float", initializer=0.0, trainable=False)
        self.min_tree = self.get_variable("min_tree", shape=(size,), dtype="float", initializer=float("inf"),
                                          trainable=False)
        self.max_priority = self.get_variable("max_priority", dtype="float", initializer=1.0, trainable=False)

    def check_restored_variables(self, values, where):
        """Besides the positions: priorities non-negative and finite (the sum tree), the max
        priority finite and positive; a crafted tree would otherwise sample garbage indices."""
        super().check_restored_variables(values, where)
        sum_tree, max_priority = values.get("sum_tree"), values.get("max_priority")
        if sum_tree is not None and not (np.all(np.isfinite(sum_tree)) and np.all(sum_tree >= 0)):
            raise RLGraphCheckpointError("the memory's priorities are negative or not finite", where=where,
                                         expected=f"finite priorities >= 0 ({self.global_scope})")
        if max_priority is not None and not (np.isfinite(max_priority) and float(max_priority) > 0):
            raise RLGraphCheckpointError("the memory's max_priority is out of range", where=where,
                                         expected="a finite value > 0", received=repr(np.asarray(max_priority).tolist()))

    # --- API ------------------------------------------------------------------------------------
    @rlgraph_api(flatten_ops=True)
    def _graph_fn_insert_records(self, records):
        flat = records if isinstance(records, dict) else {"": records}
        if get_backend() == "tf":
            _insert_tf(self, flat)
        else:
            _insert_torch(self, flat)
        return None

    @rlgraph_api
    def get_records(self, num_records=1):
        return self._graph_fn_get_records(num_records)

    def _sample_spaces(self, num_records_space: Any = None) -> tuple:
        """(records, indices, importance weights) of a sample (its size is no traced batch size)."""
        return self.records_space(), IntBox(self.capacity, add_batch_rank=True), FloatBox(add_batch_rank=True)

    @graph_fn(output_space="_sample_spaces")
    def _graph_fn_get_records(self, num_records):
        if get_backend() == "tf":
            records, indices, weights = _sample_tf(self, num_records)
        else:
            records, indices, weights = _sample_torch(self, num_records)
        return unflatten_op(records), indices, weights

    @rlgraph_api
    def _graph_fn_update_records(self, indices, update):
        if get_backend() == "tf":
            _update_tf(self, indices, update)
        else:
            _update_torch(self, indices, update)
        return None

    @rlgraph_api
    def _graph_fn_get_size(self):
        return self.read_variable(self.size)

    @rlgraph_api
    def _graph_fn_clear(self):
        self.assign_variable(self.index, np.int64(0))
        self.assign_variable(self.size, np.int64(0))
        size = 2 * self.capacity_pow2
        self.assign_variable(self.sum_tree, np.zeros(size, np.float32))
        self.assign_variable(self.min_tree, np.full(size, np.inf, np.float32))
        self.assign_variable(self.max_priority, np.float32(1.0))
        return None


def _non_negative(value: Any, name: str, high: float = np.inf) -> float:
    """`value` as a float if it is a finite number in [0, high]; alpha and beta are exponents in
    [0, 1] (Schaul et al. 2015: 0 uniform / no correction, 1 fully proportional / full correction)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value) or not 0 <= value <= high:
        raise RLGraphSpecError(f"{name} must be a finite number >= 0" + (f" and <= {high:g}" if high < np.inf else ""),
                               where=f"PrioritizedReplay({name})", received=repr(value))
    return float(value)


def _tracing() -> bool:
    """Whether the build is running graph functions on trace data (zeros, empty memory)."""
    return tracing.tracer is not None


# --- TensorFlow -----------------------------------------------------------------------------------
def _set_leaves_tf(memory: PrioritizedReplay, indices, priorities) -> None:
    """Writes leaf priorities [B] (the last occurrence of a duplicate index wins) and recomputes
    the ancestors level by level (O(B log capacity)); siblings share a parent and write the same
    value to it, so the order of duplicate writes does not matter."""
    import tensorflow as tf
    order = tf.argsort(indices, stable=True)
    sorted_indices = tf.gather(indices, order)
    # After a stable sort, the last occurrence of an index is the one before a different index.
    last = tf.not_equal(sorted_indices, tf.concat([sorted_indices[1:], tf.constant([-1], indices.dtype)], 0))
    indices = tf.boolean_mask(sorted_indices, last)
    priorities = tf.boolean_mask(tf.gather(priorities, order), last)
    nodes = indices + memory.capacity_pow2
    memory.sum_tree.scatter_update(tf.IndexedSlices(priorities, nodes))
    memory.min_tree.scatter_update(tf.IndexedSlices(priorities, nodes))
    for _ in range(memory.depth):
        nodes = nodes // 2
        left, right = 2 * nodes, 2 * nodes + 1
        sums = tf.gather(memory.sum_tree, left) + tf.gather(memory.sum_tree, right)
        mins = tf.minimum(tf.gather(memory.min_tree, left), tf.gather(memory.min_tree, right))
        memory.sum_tree.scatter_update(tf.IndexedSlices(sums, nodes))
        memory.min_tree.scatter_update(tf.IndexedSlices(mins, nodes))


def _insert_tf(memory: PrioritizedReplay, flat: dict) -> None:
    import tensorflow as tf
    n = tf.shape(next(iter(flat.values())), out_type=tf.int64)[0]
    capacity = tf.constant(memory.capacity, tf.int64)
    start = tf.maximum(n - capacity, 0)  # More rows than capacity: only the last `capacity` survive.
    indices = (memory.index + start + tf.range(n - start, dtype=tf.int64)) % capacity
    for key, variable in memory.memory.items():
        memory.scatter_update_variable(variable, indices, flat[key][start:])
    memory.index.assign((memory.index + n) % capacity)
    memory.size.assign(tf.minimum(memory.size + n, capacity))
    priorities = tf.fill([n - start], memory.max_priority ** memory.alpha)
    _set_leaves_tf(memory, indices, priorities)


def _sample_tf(memory: PrioritizedReplay, num_records):
    import tensorflow as tf
    n = tf.cast(tf.reshape(num_records, []), tf.int64)
    total = memory.sum_tree[1]
    # Stratified: one uniform draw in each of n equal slices of the priority mass.
    u = (tf.cast(tf.range(n), tf.float32) + tf.random.uniform([n], dtype=tf.float32)) * \
        (total / tf.cast(n, tf.float32))
    node = tf.ones([n], tf.int64)
    for _ in range(memory.depth):
        left = 2 * node
        left_sum = tf.gather(memory.sum_tree, left)
        # Rounding may leave u >= left_sum in front of an empty right subtree: stay left then.
        go_right = (u >= left_sum) & (tf.gather(memory.sum_tree, left + 1) > 0.0)
        u = tf.where(go_right, u - left_sum, u)
        node = tf.where(go_right, left + 1, left)
    priorities = tf.gather(memory.sum_tree, node)
    weights = tf.pow(priorities / memory.min_tree[1], -memory.beta)
    indices = node - memory.capacity_pow2
    records = {key: tf.gather(variable, indices) for key, variable in memory.memory.items()}
    return records, tf.cast(indices, tf.int32), weights


def _update_tf(memory: PrioritizedReplay, indices, update) -> None:
    import tensorflow as tf
    indices = tf.cast(indices, tf.int64)
    update = tf.cast(update, tf.float32)
    if not _tracing():
        where = f"{memory.global_scope}.update_records"
        checks = [
            tf.debugging.assert_equal(tf.size(indices), tf.size(update),
                                      message=f"{where}: 'indices' and 'update' must have the same batch size"),
            tf.debugging.assert_non_negative(indices, message=f"{where}(indices): indices must be >= 0"),
            tf.debugging.assert_less(indices, memory.size,
                                     message=f"{where}(indices): indices must point at stored records (< size)")]
        # The scatters below are not stateful: without these dependencies one may fail first, with
        # TF's own message, inside a tf.function.
        with tf.control_dependencies([c for c in checks if c is not None]):
            indices, update = tf.identity(indices), tf.identity(update)
    raw = tf.abs(update) + memory.epsilon
    memory.max_priority.assign(tf.maximum(memory.max_priority, tf.reduce_max(raw)))
    _set_leaves_tf(memory, indices, tf.pow(raw, memory.alpha))


# --- PyTorch --------------------------------------------------------------------------------------
def _set_leaves_torch(memory: PrioritizedReplay, indices, priorities) -> None:
    """See `_set_leaves_tf`."""
    import torch
    sorted_indices, order = torch.sort(indices, stable=True)
    last = sorted_indices != torch.cat([sorted_indices[1:], sorted_indices.new_full((1,), -1)])
    indices, priorities = sorted_indices[last], priorities[order][last]
    nodes = indices + memory.capacity_pow2
    sum_tree, min_tree = memory.sum_tree, memory.min_tree
    with torch.no_grad():
        sum_tree[nodes] = priorities
        min_tree[nodes] = priorities
        for _ in range(memory.depth):
            nodes = nodes // 2
            left, right = 2 * nodes, 2 * nodes + 1
            sum_tree[nodes] = sum_tree[left] + sum_tree[right]
            min_tree[nodes] = torch.minimum(min_tree[left], min_tree[right])


def _insert_torch(memory: PrioritizedReplay, flat: dict) -> None:
    import torch
    n = int(next(iter(flat.values())).shape[0])
    start = max(n - memory.capacity, 0)
    index, size, device = int(memory.index), int(memory.size), memory.sum_tree.device
    indices = (index + start + torch.arange(n - start, dtype=torch.long, device=device)) % memory.capacity
    with torch.no_grad():
        for key, variable in memory.memory.items():
            variable[indices.to(variable.device)] = torch.as_tensor(flat[key][start:]).to(variable)
        memory.index.fill_((index + n) % memory.capacity)
        memory.size.fill_(min(size + n, memory.capacity))
    priorities = torch.full((n - start,), float(memory.max_priority) ** memory.alpha, dtype=torch.float32,
                            device=device)
    _set_leaves_torch(memory, indices, priorities)


def _sample_torch(memory: PrioritizedReplay, num_records):
    import torch
    n = int(num_records)
    tree = memory.sum_tree.detach()
    total = tree[1]
    u = (torch.arange(n, dtype=torch.float32, device=tree.device) + torch_random.rand(n).to(tree.device)) * \
        (total / max(n, 1))
    node = torch.ones(n, dtype=torch.long, device=tree.device)
    for _ in range(memory.depth):
        left = 2 * node
        left_sum = tree[left]
        go_right = (u >= left_sum) & (tree[left + 1] > 0.0)
        u = torch.where(go_right, u - left_sum, u)
        node = torch.where(go_right, left + 1, left)
    weights = torch.pow(tree[node] / memory.min_tree.detach()[1], -memory.beta)
    indices = node - memory.capacity_pow2
    records = {key: variable.detach()[indices.to(variable.device)] for key, variable in memory.memory.items()}
    return records, indices.to(torch.int32), weights


def _update_torch(memory: PrioritizedReplay, indices, update) -> None:
    import torch
    device = memory.sum_tree.device
    indices = torch.as_tensor(indices).to(device=device, dtype=torch.long).reshape(-1)
    update = torch.as_tensor(update).to(device=device, dtype=torch.float32).reshape(-1)
    if not _tracing():
        where = f"{memory.global_scope}.update_records"
        if indices.numel() != update.numel():
            raise RLGraphError("'indices' and 'update' must have the same batch size",
                               where=f"{where}(indices, update)", expected=indices.numel(), received=update.numel())
        size = int(memory.size)
        if indices.numel() and (int(indices.min()) < 0 or int(indices.max()) >= size):
            raise RLGraphError("indices must point at stored records", where=f"{where}(indices)",
                               expected=f"0 <= index < {size} (the memory's size)",
                               received=f"indices in [{int(indices.min())}, {int(indices.max())}]")
    raw = update.abs() + memory.epsilon
    if raw.numel():
        with torch.no_grad():
            memory.max_priority.fill_(max(float(memory.max_priority), float(raw.max())))
    _set_leaves_torch(memory, indices, torch.pow(raw, memory.alpha))
