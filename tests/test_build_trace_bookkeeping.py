"""The build's bookkeeping shortcuts keep their results: restored variables, trace spaces, completeness."""
import numpy as np
import pytest

from rlgraph.components import Component
from rlgraph.graphs.op_records import DataOpRecord
from rlgraph.graphs.trace_data import TraceBackend
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils.decorators import make_api_info, api_wrapper, rlgraph_api


class TraceWriter(Component):
    """Writes its variables while the build traces `write`: rows only, rows and more, whole variables."""

    def create_variables(self, input_spaces, action_space=None):
        self.rows = self.get_variable("rows", shape=(6, 2), initializer=3.0, trainable=False)
        self.mixed = self.get_variable("mixed", shape=(4,), initializer=np.arange(4.0), trainable=False)
        self.count = self.get_variable("count", dtype="int", initializer=5, trainable=False)
        self.kept = self.get_variable("kept", shape=(2, 2), initializer=np.eye(2), trainable=False)

    @rlgraph_api
    def _graph_fn_write(self, x):
        self.scatter_update_variable(self.rows, np.array([1, 4]), np.full((2, 2), 9.0, np.float32))
        self.scatter_update_variable(self.mixed, np.array([0]), np.array([7.0], np.float32))
        self.assign_variable(self.mixed, np.full(4, 8.0, np.float32))  # Not only rows any more.
        self.assign_variable(self.count, 11)
        return x


def _initial_values():
    return {"rows": np.full((6, 2), 3.0), "mixed": np.arange(4.0), "count": 5, "kept": np.eye(2)}


def test_the_trace_writes_are_undone_after_the_build(backend):
    component = TraceWriter(scope="writer")
    test = ComponentTest(component, input_spaces=dict(x=FloatBox(shape=(2,), add_batch_rank=True)),
                         backend=backend)
    values = test.read_variable_values(component.variable_registry)
    for name, expected in _initial_values().items():
        np.testing.assert_array_equal(values[f"writer/{name}"], expected)


def test_restore_initial_values_undoes_writes_made_at_run_time(backend):
    component = TraceWriter(scope="writer")
    test = ComponentTest(component, input_spaces=dict(x=FloatBox(shape=(2,), add_batch_rank=True)),
                         backend=backend)
    test.test(("write", np.zeros((1, 2), np.float32)))
    assert test.read_variable_values(component.variable_registry)["writer/count"] == 11
    component.restore_initial_values()
    values = test.read_variable_values(component.variable_registry)
    for name, expected in _initial_values().items():
        np.testing.assert_array_equal(values[f"writer/{name}"], expected)


def test_trace_output_ranks_come_from_the_two_trace_runs():
    trace = TraceBackend("tf")  # numpy outputs: no backend needed
    inputs = DataOpRecord(FloatBox(shape=(5,), add_batch_rank=True), np.zeros((5, 5)), np.zeros((6, 5)))
    batched = trace.wrap_output(np.zeros((5, 5), np.float32), np.zeros((6, 5), np.float32), [inputs])
    reduced = trace.wrap_output(np.zeros((5,), np.float32), np.zeros((5,), np.float32), [inputs])
    assert batched.space == FloatBox(shape=(5,), add_batch_rank=True)
    assert reduced.space == FloatBox(shape=(5,))  # A mean over the batch: 5 is the feature size.
    again = trace.wrap_output(np.zeros((5, 5), np.float32), np.zeros((6, 5), np.float32), [inputs])
    assert again.space == batched.space and again.space is not batched.space


def test_input_completeness_sees_api_methods_replaced_later():
    class TwoApis(Component):
        @rlgraph_api
        def f(self, x):
            return x

        @rlgraph_api
        def g(self, y):
            return y

    component = TwoApis()
    component.api_method_inputs = {"x": FloatBox()}
    assert not component.check_input_completeness()  # g(y) still lacks a space.

    def g(self, x):
        return x

    info = make_api_info(g, "g")
    component.register_api(info, api_wrapper(info), ok_to_overwrite=True)
    assert component.check_input_completeness()


@pytest.mark.parametrize("low, high, shape", [(-1.0, 2.0, (2, 3)), ([0.0, 1.0], [2.0, 3.0], None), (0.0, 1.0, (0, 2))])
def test_box_bounds_are_independent_arrays_in_every_copy(low, high, shape):
    box = FloatBox(low, high, shape=shape)
    copy = box.with_batch_rank()
    assert box.low.shape == box.shape and box.low.dtype == np.float32
    copy.low[...] = -5.0
    assert box == FloatBox(low, high, shape=shape) and box.low is not copy.low
    assert box.global_bounds == ((float(low), float(high)) if np.ndim(low) == 0 and np.prod(box.shape) else False)


def test_boxes_from_python_types_and_data_are_fresh_objects():
    first, second = FloatBox.from_spec(float), FloatBox.from_spec(float)
    assert first == second == FloatBox() and first is not second
    first.low[...] = 3.0
    assert np.all(FloatBox.from_spec(float).low == -np.inf)
    assert IntBox.from_spec(int) == IntBox()


def test_box_state_pickled_with_plain_bounds_still_loads():
    """Pickles from before the lazy bounds hold `low`/`high` arrays under those names."""
    state = dict(FloatBox(0.0, 2.0, shape=(2,)).__dict__)
    for key in ("_low", "_high", "_low_fill", "_high_fill"):
        state.pop(key)
    state.update(low=np.array([0.0, 1.0], np.float32), high=np.array([2.0, 2.0], np.float32))
    box = FloatBox.__new__(FloatBox)
    box.__setstate__(state)
    assert box == FloatBox([0.0, 1.0], [2.0, 2.0]) and box.contains(np.array([0.5, 1.5]))
    assert not box.contains(np.array([0.5, 0.5]))
