"""What a component declares to the build: the input spaces it needs, its graph functions' output
spaces; and the ranks the build infers where nothing is declared, including sizes that happen to
equal the trace's batch or time size."""
import numpy as np
import pytest

from rlgraph.backend_system import get_backend
from rlgraph.components import Component
from rlgraph.spaces import FloatBox, IntBox, Tuple
from rlgraph.tests import ComponentTest
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphInputIncompleteError, RLGraphSpaceError


def _backend_module():
    if get_backend() == "tf":
        import tensorflow as tf
        return tf
    import torch
    return torch


class Sink(Component):
    """Passes its input on; `api_method_inputs["x"]` shows the space the build gave it."""

    @rlgraph_api
    def run(self, x):
        return self._graph_fn_identity(x)

    @graph_fn
    def _graph_fn_identity(self, x):
        return x


# --- Declared input spaces -----------------------------------------------------------------------------
class Accumulator(Component):
    """Creates its variable from the space of `x` alone; `scaled` may never be called."""

    input_spaces_needed = ("x",)

    def create_variables(self, input_spaces, action_space=None):
        self.total = self.get_variable("total", shape=input_spaces["x"].shape, initializer=1.5, trainable=False)

    def check_input_spaces(self, input_spaces, action_space=None):
        factor = input_spaces.get("factor")
        if factor is not None and factor.shape != ():
            raise RLGraphSpaceError(factor, "factor must be a scalar", where=f"{self.global_scope}.scaled(factor)")

    @rlgraph_api
    def add(self, x):
        return self._graph_fn_add(x)

    @rlgraph_api
    def scaled(self, x, factor):
        return self._graph_fn_scaled(x, factor)

    @graph_fn
    def _graph_fn_add(self, x):
        return x + self.total

    @graph_fn
    def _graph_fn_scaled(self, x, factor):
        return x * factor


class OnlyAdds(Component):
    def __init__(self, child, **kwargs):
        super().__init__(child, **kwargs)
        self.child = child

    @rlgraph_api
    def run(self, x):
        return self.child.add(x)


class AddsAndScales(OnlyAdds):
    @rlgraph_api
    def run_scaled(self, x, factor):
        return self.child.scaled(x, factor)


def test_a_declared_input_space_is_all_a_component_waits_for(backend):
    test = ComponentTest(OnlyAdds(Accumulator(scope="acc"), scope="root"),
                         input_spaces=dict(x=FloatBox(shape=(2,), add_batch_rank=True)), backend=backend)
    x = np.array([[1.0, -2.0]], np.float32)
    np.testing.assert_allclose(test.test(("run", x)), x + 1.5)


def test_without_the_declaration_the_build_names_the_missing_argument(backend):
    class Undeclared(Accumulator):
        input_spaces_needed = None

    with pytest.raises(RLGraphInputIncompleteError, match=r"'root/acc' \(Undeclared\): API method 'scaled' never "
                                                          r"received a space for argument\(s\) factor"):
        ComponentTest(OnlyAdds(Undeclared(scope="acc"), scope="root"),
                      input_spaces=dict(x=FloatBox(shape=(2,), add_batch_rank=True)), backend=backend)


def test_a_declared_name_that_never_arrives_is_named(backend):
    class NeedsY(Accumulator):
        input_spaces_needed = ("x", "y")

    with pytest.raises(RLGraphInputIncompleteError, match=r"input_spaces_needed never received a space for "
                                                          r"argument\(s\) y"):
        ComponentTest(OnlyAdds(NeedsY(scope="acc"), scope="root"),
                      input_spaces=dict(x=FloatBox(shape=(2,), add_batch_rank=True)), backend=backend)


def test_an_argument_arriving_after_the_variables_is_checked_too(backend):
    spaces = dict(x=FloatBox(shape=(2,), add_batch_rank=True), factor=float)
    test = ComponentTest(AddsAndScales(Accumulator(scope="acc"), scope="root"), input_spaces=spaces, backend=backend)
    x = np.array([[1.0, -2.0]], np.float32)
    np.testing.assert_allclose(test.test(("run_scaled", [x, 3.0])), x * 3.0)
    with pytest.raises(RLGraphSpaceError, match=r"root/acc.scaled\(factor\): factor must be a scalar"):
        ComponentTest(AddsAndScales(Accumulator(scope="acc"), scope="root"),
                      input_spaces=dict(spaces, factor=FloatBox(shape=(2,))), backend=backend)


# --- Declared output spaces ------------------------------------------------------------------------------
class Greedy(Component):
    """argmax over 3 values: declared as IntBox(3), which the shape alone cannot tell."""

    def __init__(self, declared, **kwargs):
        super().__init__(Sink(scope="sink"), **kwargs)
        self.declared = declared

    @rlgraph_api
    def run(self, q):
        return self.sub_components["sink"].run(self._graph_fn_greedy(q))

    @graph_fn(output_space=lambda self, q: self.declared(q))
    def _graph_fn_greedy(self, q):
        return _backend_module().argmax(q, -1)


def test_a_declared_output_space_keeps_bounds_and_reaches_the_next_component(backend):
    component = Greedy(lambda q: IntBox(3, dtype="int64", add_batch_rank=q.has_batch_rank), scope="greedy")
    test = ComponentTest(component, input_spaces=dict(q=FloatBox(shape=(3,), add_batch_rank=True)), backend=backend)
    assert component.sub_components["sink"].api_method_inputs["x"] == IntBox(3, dtype="int64", add_batch_rank=True)
    q = np.array([[0.0, 2.0, 1.0], [5.0, 1.0, 1.0]], np.float32)
    np.testing.assert_array_equal(test.test(("run", q)), [1, 0])


def test_a_declared_output_space_that_does_not_fit_the_output_is_an_error(backend):
    component = Greedy(lambda q: IntBox(3, shape=(2,), add_batch_rank=True), scope="greedy")
    with pytest.raises(RLGraphSpaceError, match=r"greedy._graph_fn_greedy: the graph function's output does not "
                                                r"fit its declared output space"):
        ComponentTest(component, input_spaces=dict(q=FloatBox(shape=(3,), add_batch_rank=True)), backend=backend)


class Sampler(Component):
    """Returns (rows, their count): the rows' batch rank comes from a python count, not a traced size."""

    def __init__(self, **kwargs):
        super().__init__(Sink(scope="rows"), Sink(scope="count"), **kwargs)

    @rlgraph_api
    def run(self, x, n):
        rows, count = self._graph_fn_first_rows(x, n)
        return self.sub_components["rows"].run(rows), self.sub_components["count"].run(count)

    def _first_rows_spaces(self, x, n):
        return x.with_batch_rank(), None  # The count stays inferred.

    @graph_fn(returns=2, output_space="_first_rows_spaces")
    def _graph_fn_first_rows(self, x, n):
        if get_backend() == "tf":
            import tensorflow as tf
            return x[:n], tf.shape(x)[0]
        return x[:int(n)], x.shape[0]


def test_output_spaces_declared_by_method_name_and_partly_inferred(backend):
    component = Sampler(scope="sampler")
    test = ComponentTest(component, input_spaces=dict(x=FloatBox(shape=(2,), add_batch_rank=True), n=IntBox(1, 9)),
                         backend=backend)
    assert component.sub_components["rows"].api_method_inputs["x"] == FloatBox(shape=(2,), add_batch_rank=True)
    assert not component.sub_components["count"].api_method_inputs["x"].has_batch_rank
    x = np.arange(8, dtype=np.float32).reshape(4, 2)
    rows, count = test.test(("run", [x, 3]))
    np.testing.assert_array_equal(rows, x[:3])
    assert int(count) == 4


# --- Inferred ranks: sizes that equal a trace size --------------------------------------------------------
class Reducer(Component):
    """Applies `fn` to x in a graph function and hands the result to a sink."""

    def __init__(self, fn, **kwargs):
        super().__init__(Sink(scope="sink"), **kwargs)
        self.fn = fn

    @rlgraph_api
    def run(self, x):
        return self.sub_components["sink"].run(self._graph_fn_apply(x))

    @graph_fn
    def _graph_fn_apply(self, x):
        return self.fn(x)


def _mean(axis):
    def fn(x):
        return _backend_module().reduce_mean(x, axis=axis) if get_backend() == "tf" else x.mean(axis)
    return fn


def _double(x):
    return x * 2.0


def _constant_rows(x):
    # As many rows as the trace's first batch size, but a constant, not the batch.
    if get_backend() == "tf":
        import tensorflow as tf
        return tf.zeros((5, 3))
    import torch
    return torch.zeros(5, 3)


@pytest.mark.parametrize("fn, in_space, expected, reference", [
    # Feature size 5 = the trace's batch size: still a batch rank, still a feature dim.
    (_double, FloatBox(shape=(5,), add_batch_rank=True), FloatBox(shape=(5,), add_batch_rank=True), lambda x: 2 * x),
    # The mean over the batch of 5 features: no batch rank.
    (_mean(0), FloatBox(shape=(5,), add_batch_rank=True), FloatBox(shape=(5,)), lambda x: x.mean(0)),
    # Feature size 7 = the trace's time size, summed over time: batch rank, no time rank.
    (_mean(1), FloatBox(shape=(7,), add_batch_rank=True, add_time_rank=True),
     FloatBox(shape=(7,), add_batch_rank=True), lambda x: x.mean(1)),
    # Feature size 5 kept next to batch and time.
    (_double, FloatBox(shape=(5,), add_batch_rank=True, add_time_rank=True),
     FloatBox(shape=(5,), add_batch_rank=True, add_time_rank=True), lambda x: 2 * x),
    # Reduced over the batch of [B, T, 5]: only the time rank stays.
    (_mean(0), FloatBox(shape=(5,), add_batch_rank=True, add_time_rank=True),
     FloatBox(shape=(5,), add_time_rank=True), lambda x: x.mean(0)),
    # A constant with 5 rows is not batched.
    (_constant_rows, FloatBox(shape=(2,), add_batch_rank=True), FloatBox(shape=(5, 3)), lambda x: np.zeros((5, 3))),
])
def test_ranks_never_come_from_a_coincidental_size(backend, fn, in_space, expected, reference):
    component = Reducer(fn, scope="reducer")
    test = ComponentTest(component, input_spaces=dict(x=in_space), backend=backend)
    assert component.sub_components["sink"].api_method_inputs["x"] == expected
    shape = (3, 4) if in_space.has_time_rank else (3,)
    x = np.random.RandomState(0).randn(*shape, *in_space.shape).astype(np.float32)
    np.testing.assert_allclose(test.test(("run", x)), reference(x), rtol=1e-5, atol=1e-6)


def test_trace_sizes_can_be_chosen(backend):
    # With trace batch size 3, a feature size of 3 is no batch either.
    component = Reducer(_mean(0), scope="reducer")
    ComponentTest(component, input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)), backend=backend,
                  build_kwargs=dict(trace_batch_size=3, trace_time_size=4))
    assert component.sub_components["sink"].api_method_inputs["x"] == FloatBox(shape=(3,))


def test_tuple_outputs_get_their_own_ranks(backend):
    def both(x):
        return x, _mean(0)(x)
    component = Reducer(both, scope="reducer")
    ComponentTest(component, input_spaces=dict(x=FloatBox(shape=(5,), add_batch_rank=True)), backend=backend)
    assert component.sub_components["sink"].api_method_inputs["x"] == \
        Tuple(FloatBox(shape=(5,), add_batch_rank=True), FloatBox(shape=(5,)))


@pytest.mark.parametrize("sizes", [(1, 7), (5, 5), (5.0, 7)])
def test_trace_sizes_must_tell_batch_and_time_apart(sizes):
    from rlgraph.graphs import GraphBuilder
    from rlgraph.utils.rlgraph_errors import RLGraphError
    with pytest.raises(RLGraphError, match="invalid trace sizes"):
        GraphBuilder(trace_batch_size=sizes[0], trace_time_size=sizes[1])


@pytest.mark.parametrize("flags, message", [
    (dict(output_space=5), "invalid `output_space`"),
    (dict(requires_variable_completeness="grandparent"), "invalid `requires_variable_completeness`"),
])
def test_invalid_declarations_fail_at_the_decorator(flags, message):
    from rlgraph.utils.rlgraph_errors import RLGraphError
    with pytest.raises(RLGraphError, match=message):
        @graph_fn(**flags)
        def _graph_fn_f(self, x):
            return x
