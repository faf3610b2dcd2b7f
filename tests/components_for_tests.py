"""Small components shared by the component-core tests (module level, so that they pickle)."""
import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components import Component
from rlgraph.utils.decorators import graph_fn, rlgraph_api


def _tf():
    import tensorflow as tf
    return tf


class Scale(Component):
    """y = x * w + b with a trainable weight vector w (shape of x) and scalar b."""

    def __init__(self, w_init=2.0, b_init=0.5, **kwargs):
        super().__init__(**kwargs)
        self.w_init, self.b_init = w_init, b_init
        self.w = self.b = None

    def create_variables(self, input_spaces, action_space=None):
        space = input_spaces["x"]
        self.w = self.get_variable("w", shape=space.shape, initializer=self.w_init)
        self.b = self.get_variable("b", initializer=self.b_init)

    @rlgraph_api
    def apply(self, x):
        return self._graph_fn_apply(x)

    @graph_fn
    def _graph_fn_apply(self, x):
        return x * self.w + self.b


class Middle(Component):
    """Calls its sub-component twice: scale(scale(x)) - x, through an API of its own."""

    def __init__(self, **kwargs):
        super().__init__(Scale(scope="inner"), **kwargs)

    @rlgraph_api
    def twice(self, x):
        inner = self.get_sub_component_by_name("inner")
        once = inner.apply(x)
        return self._graph_fn_minus(inner.apply(once), x)

    @graph_fn
    def _graph_fn_minus(self, a, b):
        return a - b


class Top(Component):
    """Three levels: Top.run -> Middle.twice -> Scale.apply; plus an exposed API."""

    def __init__(self, **kwargs):
        middle = Middle(scope="middle")
        super().__init__(**kwargs)
        self.add_components(middle, expose_apis={"twice"})

    @rlgraph_api
    def run(self, x):
        out = self.get_sub_component_by_name("middle").twice(x)
        return self._graph_fn_sum(out)

    @graph_fn
    def _graph_fn_sum(self, y):
        if get_backend() == "tf":
            return _tf().reduce_sum(y, axis=-1)
        return y.sum(-1)


class Containers(Component):
    """Container handling: flatten_ops, split_ops, auto-keys, Dict/Tuple results."""

    @rlgraph_api
    def add_one(self, data):
        return self._graph_fn_add_one(data)

    @graph_fn(flatten_ops=True, split_ops=True)
    def _graph_fn_add_one(self, leaf):
        return leaf + 1

    @rlgraph_api
    def keyed(self, data, factor):
        return self._graph_fn_keyed(data, factor)

    @graph_fn(flatten_ops={"leaf"}, split_ops=True, add_auto_key_as_first_param=True)
    def _graph_fn_keyed(self, key, leaf, factor):
        # Leaves under "/a" are scaled by factor, the others negated.
        return leaf * factor if key.startswith("/a") else -leaf

    @rlgraph_api
    def keys_of(self, data):
        return self._graph_fn_keys_of(data)

    @graph_fn(flatten_ops=True)
    def _graph_fn_keys_of(self, flat):
        # Gets a FlattenedDataOp; returns the sum of all leaves over their last axis, per key.
        if get_backend() == "tf":
            return {k.strip("/").replace("/", "-"): _tf().reduce_sum(v, axis=-1) for k, v in flat.items()}
        return {k.strip("/").replace("/", "-"): v.sum(-1) for k, v in flat.items()}

    @rlgraph_api
    def _graph_fn_pair(self, data):
        # Auto-thin-wrapped graph function: API "pair"; returns a tuple of two results.
        return data["a"] * 2, data["b"][0]


class Memory(Component):
    """A row buffer: insert(rows, indices), read(indices); get_all before any insert
    (in the same API method) works through `returns`."""

    def __init__(self, capacity=4, **kwargs):
        super().__init__(**kwargs)
        self.capacity = capacity
        self.buffer = None

    def create_variables(self, input_spaces, action_space=None):
        self.buffer = self.get_variable("buffer", from_space=input_spaces["rows"].strip_ranks(),
                                        add_batch_rank=self.capacity, trainable=False)

    @rlgraph_api
    def insert(self, rows, indices):
        return self._graph_fn_insert(rows, indices)

    @rlgraph_api
    def read(self, indices):
        return self._graph_fn_read(indices)

    @rlgraph_api
    def get_all(self):
        return self._graph_fn_all()

    @graph_fn
    def _graph_fn_insert(self, rows, indices):
        op = self.scatter_update_variable(self.buffer, indices, rows)
        if get_backend() == "tf":
            with _tf().control_dependencies([op]):
                return _tf().no_op()
        return None

    @graph_fn
    def _graph_fn_read(self, indices):
        return self.read_variable(self.buffer, indices)

    @graph_fn(returns=1)
    def _graph_fn_all(self):
        return self.read_variable(self.buffer)


class MemoryUser(Component):
    """Reads its memory before inserting in the same API method (needs `returns` to build)."""

    def __init__(self, **kwargs):
        super().__init__(Memory(capacity=3, scope="memory"), **kwargs)

    @rlgraph_api
    def read_then_insert(self, rows, indices):
        memory = self.get_sub_component_by_name("memory")
        before = memory.get_all()
        memory.insert(rows, indices)
        return before

    @rlgraph_api
    def read(self, indices):
        return self.get_sub_component_by_name("memory").read(indices)


class Unused(Component):
    """Has an API method nobody calls."""

    @rlgraph_api
    def used(self, x):
        return self._graph_fn_identity(x)

    @rlgraph_api
    def never_called(self, y):
        return self._graph_fn_identity(y)

    @graph_fn
    def _graph_fn_identity(self, x):
        return x


class UsesUnused(Component):
    def __init__(self, **kwargs):
        super().__init__(Unused(scope="helper"), **kwargs)

    @rlgraph_api
    def go(self, x):
        return self.get_sub_component_by_name("helper").used(x)


class Chain(Component):
    """A linear chain of `depth` Scale components below a root (for the synthetic build)."""

    def __init__(self, width=10, depth=5, **kwargs):
        super().__init__(**kwargs)
        self.chains = []
        for i in range(width):
            node, chain = self, []
            for j in range(depth):
                child = Scale(w_init=1.0 + 0.01 * (i + j), b_init=0.0, scope=f"s{i}-{j}")
                node.add_components(child)
                chain.append(child)
                node = child
            self.chains.append(chain)

    @rlgraph_api
    def run(self, x):
        outs = []
        for chain in self.chains:
            y = x
            for scale in chain:
                y = scale.apply(y)
            outs.append(y)
        return self._graph_fn_stack(*outs)

    @graph_fn
    def _graph_fn_stack(self, *outs):
        if get_backend() == "tf":
            return _tf().stack(outs, axis=1)
        import torch
        return torch.stack(outs, dim=1)


def chain_reference(x, width, depth):
    outs = []
    for i in range(width):
        y = x
        for j in range(depth):
            y = y * (1.0 + 0.01 * (i + j))
        outs.append(y)
    return np.stack(outs, axis=1)
