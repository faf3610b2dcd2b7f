"""Shape-changing and stateful preprocessors: ReShape, Transpose, Sequence, MovingStandardize,
RankReinterpreter; numbers vs numpy and output spaces (with batch/time flags) on both backends."""
import numpy as np
import pytest
from backend_marks import needs_both_backends

from rlgraph.components import Component
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.components.layers.preprocessing.moving_standardize import MovingStandardize
from rlgraph.components.layers.preprocessing.rank_reinterpreter import RankReinterpreter
from rlgraph.components.layers.preprocessing.reshape import ReShape
from rlgraph.components.layers.preprocessing.sequence import Sequence
from rlgraph.components.layers.preprocessing.transpose import Transpose
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.numpy import dense_layer, one_hot
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError


class Sink(Component):
    """Passes its input on; its `api_method_inputs["x"]` shows the space it received."""

    def __init__(self):
        super().__init__(scope="sink")

    @rlgraph_api
    def _graph_fn_take(self, x):
        return x


class Pipe(Component):
    """inputs -> layer.apply -> sink.take, so the layer's built output space lands in the sink."""

    def __init__(self, layer):
        self.layer, self.sink = layer, Sink()
        super().__init__(layer, self.sink, scope="pipe")

    @rlgraph_api
    def run(self, inputs):
        return self.sink.take(self.layer.apply(inputs))

    @rlgraph_api
    def reset(self):
        return self.layer.reset()


class FoldDenseUnfold(Component):
    """[B, T, n] -> fold -> dense -> unfold -> sink: a per-time-step dense layer."""

    def __init__(self, time_major=None):
        self.fold, self.dense = ReShape(fold_time_rank=True, scope="fold"), DenseLayer(units=2)
        self.unfold = ReShape(unfold_time_rank=True, time_major=time_major, scope="unfold")
        self.sink = Sink()
        super().__init__(self.fold, self.dense, self.unfold, self.sink, scope="fdu")

    @rlgraph_api
    def run(self, inputs):
        return self.sink.take(self.unfold.apply(self.dense.apply(self.fold.apply(inputs)), inputs))


def _built_space(layer, space, backend, x):
    """(built output space seen downstream, output data) for `layer` applied to `space`."""
    pipe = Pipe(layer)
    test = ComponentTest(pipe, input_spaces=dict(inputs=space), backend=backend)
    return pipe.sink.api_method_inputs["x"], test.test(("run", x))


def _assert_space_fits(space, out):
    """`out` has the dims `space` promises (None: any size for a batch/time rank) and its dtype."""
    dims = space.get_shape(with_batch_rank=True, with_time_rank=True)
    assert len(out.shape) == len(dims) and all(d is None or d == n for d, n in zip(dims, out.shape))
    assert out.dtype == space.dtype


# --- ReShape -------------------------------------------------------------------------------------
def test_reshape_new_shape_keeps_batch_and_time(backend):
    space = FloatBox(shape=(2, 3), add_batch_rank=True, add_time_rank=True)
    layer = ReShape(new_shape=(3, -1))
    x = np.arange(2 * 4 * 6, dtype=np.float32).reshape((2, 4, 2, 3))
    built, out = _built_space(layer, space, backend, x)
    np.testing.assert_array_equal(out, x.reshape((2, 4, 3, 2)))
    expected = layer.get_preprocessed_space(space)
    assert expected == built == FloatBox(shape=(3, 2), add_batch_rank=True, add_time_rank=True)
    _assert_space_fits(built, out)


def test_reshape_flatten_categories(backend):
    space = IntBox(3, shape=(2,), add_batch_rank=True)
    layer = ReShape(flatten=True, flatten_categories=True)
    assert layer.get_preprocessed_space(space) == FloatBox(0.0, 1.0, shape=(6,), add_batch_rank=True)
    x = np.array([[0, 2], [1, 1], [2, 0]], dtype=np.int32)
    built, out = _built_space(layer, space, backend, x)
    np.testing.assert_array_equal(out, one_hot(x, 3).reshape((3, 6)))
    assert built == layer.get_preprocessed_space(space)
    _assert_space_fits(built, out)
    # An explicit category count, and a float input that is only flattened.
    space4 = IntBox(shape=(2,), add_batch_rank=True)
    built4, out4 = _built_space(ReShape(flatten=True, flatten_categories=4), space4, backend, x)
    np.testing.assert_array_equal(out4, one_hot(x, 4).reshape((3, 8)))
    assert built4.shape == (8,) and built4.has_batch_rank
    float_space = FloatBox(-1.0, 1.0, shape=(2, 2), add_batch_rank=True)
    built_f, out_f = _built_space(ReShape(flatten=True, flatten_categories=True), float_space, backend,
                                  np.full((1, 2, 2), 0.5, np.float32))
    assert built_f == FloatBox(-1.0, 1.0, shape=(4,), add_batch_rank=True)
    np.testing.assert_array_equal(out_f, np.full((1, 4), 0.5))


def test_fold_dense_unfold_per_time_step(backend):
    component = FoldDenseUnfold()
    space = FloatBox(shape=(3,), add_batch_rank=True, add_time_rank=True)
    test = ComponentTest(component, input_spaces=dict(inputs=space), backend=backend)
    # The dense layer saw [B*T, 3] with a batch rank only; the sink [B, T, 2] with both ranks.
    assert component.dense.api_method_inputs["inputs[0]"] == FloatBox(shape=(3,), add_batch_rank=True)
    assert component.sink.api_method_inputs["x"] == FloatBox(shape=(2,), add_batch_rank=True, add_time_rank=True)
    assert ReShape(fold_time_rank=True).get_preprocessed_space(space) == FloatBox(shape=(3,), add_batch_rank=True)
    x = np.random.RandomState(0).standard_normal((2, 4, 3)).astype(np.float32)
    weights = test.read_variable_values(component.dense.variable_registry)
    expected = dense_layer(x.reshape((8, 3)), weights["fdu/dense/kernel"], weights["fdu/dense/bias"]).reshape((2, 4, 2))
    out = test.test(("run", x))
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)


def test_unfold_time_major_output(backend):
    component = FoldDenseUnfold(time_major=True)
    test = ComponentTest(component, input_spaces=dict(inputs=FloatBox(shape=(3,), add_batch_rank=True,
                                                                       add_time_rank=True)), backend=backend)
    assert component.sink.api_method_inputs["x"] == FloatBox(shape=(2,), add_batch_rank=True, add_time_rank=True,
                                                             time_major=True)
    x = np.random.RandomState(1).standard_normal((2, 4, 3)).astype(np.float32)
    weights = test.read_variable_values(component.dense.variable_registry)
    expected = dense_layer(x, weights["fdu/dense/kernel"], weights["fdu/dense/bias"]).transpose((1, 0, 2))
    np.testing.assert_allclose(test.test(("run", x)), expected, rtol=1e-5, atol=1e-6)


def test_unfold_as_root_with_original(backend):
    layer = ReShape(unfold_time_rank=True)
    spaces = dict(inputs=FloatBox(shape=(2,), add_batch_rank=True),
                  input_before_time_rank_folding=FloatBox(shape=(5,), add_batch_rank=True, add_time_rank=True))
    test = ComponentTest(layer, input_spaces=spaces, backend=backend)
    folded = np.arange(12, dtype=np.float32).reshape((6, 2))
    out = test.test(("apply", [folded, np.zeros((3, 2, 5), np.float32)]))
    np.testing.assert_array_equal(out, folded.reshape((3, 2, 2)))


def test_reshape_errors(backend):
    with pytest.raises(RLGraphSpaceError, match="new_shape"):
        ComponentTest(ReShape(new_shape=(4,)), input_spaces=dict(inputs=FloatBox(shape=(3,), add_batch_rank=True)),
                      backend=backend)
    with pytest.raises(RLGraphSpaceError, match="divisible"):
        ReShape(new_shape=(2, -1)).get_preprocessed_space(FloatBox(shape=(3,), add_batch_rank=True))
    with pytest.raises(RLGraphSpaceError, match="batch and time"):
        ComponentTest(ReShape(fold_time_rank=True), input_spaces=dict(inputs=FloatBox(shape=(3,),
                      add_batch_rank=True)), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="unfolded original"):
        ComponentTest(ReShape(unfold_time_rank=True), input_spaces=dict(inputs=FloatBox(shape=(3,),
                      add_batch_rank=True)), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="categories"):
        ReShape(flatten=True, flatten_categories=True).get_preprocessed_space(IntBox(shape=(2,)))
    for kwargs in (dict(new_shape=(2, -1, -1)), dict(new_shape=(0,)), dict(new_shape=(2,), flatten=True),
                   dict(flatten_categories=3), dict(fold_time_rank=True, unfold_time_rank=True),
                   dict(fold_time_rank=True, time_major=True), dict(), dict(flatten=True, flatten_categories=-2)):
        with pytest.raises(RLGraphSpecError):
            ReShape(**kwargs)


# --- Transpose -----------------------------------------------------------------------------------
def test_transpose(backend):
    space = FloatBox(shape=(2,), add_batch_rank=True, add_time_rank=True)
    x = np.arange(3 * 4 * 2, dtype=np.float32).reshape((3, 4, 2))
    built, out = _built_space(Transpose(), space, backend, x)
    np.testing.assert_array_equal(out, x.transpose((1, 0, 2)))
    assert built == Transpose().get_preprocessed_space(space)
    assert built.time_major and built.has_batch_rank and built.has_time_rank
    back = Transpose().get_preprocessed_space(built)
    assert not back.time_major
    with pytest.raises(RLGraphSpaceError, match="batch and time"):
        ComponentTest(Transpose(), input_spaces=dict(inputs=FloatBox(shape=(2,), add_batch_rank=True)),
                      backend=backend)


# --- RankReinterpreter ---------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs, space, expected", [
    (dict(add_time_rank=True), FloatBox(shape=(4, 2), add_batch_rank=True),
     FloatBox(shape=(2,), add_batch_rank=True, add_time_rank=True)),
    (dict(add_batch_rank=True), FloatBox(shape=(4, 2), add_time_rank=True),
     FloatBox(shape=(2,), add_batch_rank=True, add_time_rank=True, time_major=True)),
    (dict(add_batch_rank=True, add_time_rank=True, time_major=True), IntBox(5, shape=(3, 4, 2)),
     IntBox(5, shape=(2,), add_batch_rank=True, add_time_rank=True, time_major=True)),
])
def test_rank_reinterpreter(backend, kwargs, space, expected):
    layer = RankReinterpreter(**kwargs)
    assert layer.get_preprocessed_space(space) == expected
    x = space.sample(size=2 if space.has_batch_rank or space.has_time_rank else None)
    built, out = _built_space(layer, space, backend, x)
    assert built == expected
    np.testing.assert_array_equal(out, x)


def test_rank_reinterpreter_errors(backend):
    with pytest.raises(RLGraphSpecError):
        RankReinterpreter()
    with pytest.raises(RLGraphSpecError, match="time_major"):
        RankReinterpreter(add_time_rank=True, time_major=True)
    with pytest.raises(RLGraphSpaceError, match="time rank already"):
        RankReinterpreter(add_time_rank=True).get_preprocessed_space(
            FloatBox(shape=(2,), add_batch_rank=True, add_time_rank=True))
    with pytest.raises(RLGraphSpaceError, match="data dim"):
        ComponentTest(RankReinterpreter(add_time_rank=True), input_spaces=dict(inputs=FloatBox(add_batch_rank=True)),
                      backend=backend)


# --- Sequence ------------------------------------------------------------------------------------
def test_sequence_stacks_across_resets(backend):
    layer = Sequence(sequence_length=3, batch_size=1, add_rank=True)
    space = FloatBox(shape=(2,), add_batch_rank=True)
    pipe = Pipe(layer)
    test = ComponentTest(pipe, input_spaces=dict(inputs=space), backend=backend)
    assert pipe.sink.api_method_inputs["x"] == layer.get_preprocessed_space(space) == \
        FloatBox(shape=(2, 3), add_batch_rank=True)

    def frame(v):
        return np.array([[v, -v]], dtype=np.float32)

    def stack(*vs):
        return np.stack([frame(v) for v in vs], axis=-1)

    for value, expected in ((1, (1, 1, 1)), (2, (1, 1, 2)), (3, (1, 2, 3))):
        np.testing.assert_array_equal(test.test(("run", frame(value))), stack(*expected))
    test.test("reset")
    np.testing.assert_array_equal(test.test(("run", frame(4))), stack(4, 4, 4))
    np.testing.assert_array_equal(test.test(("run", frame(5))), stack(4, 4, 5))
    np.testing.assert_array_equal(test.test(("run", frame(6))), stack(4, 5, 6))
    np.testing.assert_array_equal(test.test(("run", frame(7))), stack(5, 6, 7))


def test_sequence_root_reset_and_concat(backend):
    layer = Sequence(sequence_length=2, batch_size=2, add_rank=False)
    space = IntBox(10, shape=(1, 2), add_batch_rank=True)
    assert layer.get_preprocessed_space(space) == IntBox(10, shape=(1, 4), add_batch_rank=True)
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend)
    a = np.array([[[1, 2]], [[3, 4]]], dtype=np.int32)
    b = a + 4
    np.testing.assert_array_equal(test.test(("apply", a)), np.concatenate([a, a], -1))
    np.testing.assert_array_equal(test.test(("apply", b)), np.concatenate([a, b], -1))
    test.test("reset")
    np.testing.assert_array_equal(test.test(("apply", b)), np.concatenate([b, b], -1))
    assert test.test(("apply", a)).dtype == np.int32


def test_sequence_errors(backend):
    with pytest.raises(RLGraphSpecError):
        Sequence(sequence_length=0)
    with pytest.raises(RLGraphSpaceError, match="no time rank"):
        ComponentTest(Sequence(), input_spaces=dict(inputs=FloatBox(shape=(2,), add_batch_rank=True,
                                                                    add_time_rank=True)), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="last data axis"):
        Sequence(add_rank=False).get_preprocessed_space(FloatBox(add_batch_rank=True))
    test = ComponentTest(Sequence(batch_size=1), input_spaces=dict(inputs=FloatBox(shape=(2,), add_batch_rank=True)),
                         backend=backend)
    # A batch of 3 for a batch_size=1 buffer (TF checks inside its tf.function, so its own error type).
    with pytest.raises(RLGraphSpaceError if backend == "pytorch" else Exception, match="batch_size"):
        test.test(("apply", np.zeros((3, 2), np.float32)))


# --- MovingStandardize ---------------------------------------------------------------------------
def _standardize_stream(batches, epsilon=1e-8):
    seen, outs = [], []
    for x in batches:
        seen.append(x.reshape((-1,) + x.shape[-1:]))
        history = np.concatenate(seen, axis=0).astype(np.float64)
        outs.append((x - history.mean(0)) / (history.std(0) + epsilon))
    return outs


def test_moving_standardize_stream_and_reset(backend):
    rng = np.random.RandomState(3)
    layer = MovingStandardize()
    space = FloatBox(shape=(3,), add_batch_rank=True)
    pipe = Pipe(layer)
    test = ComponentTest(pipe, input_spaces=dict(inputs=space), backend=backend)
    assert pipe.sink.api_method_inputs["x"] == layer.get_preprocessed_space(space) == space
    batches = [rng.normal(2.0, 3.0, size=(n, 3)).astype(np.float32) for n in (4, 1, 6, 3)]
    for x, expected in zip(batches, _standardize_stream(batches)):
        np.testing.assert_allclose(test.test(("run", x)), expected, rtol=1e-4, atol=1e-4)
    values = test.read_variable_values(layer.variable_registry)
    history = np.concatenate(batches)
    assert values["pipe/moving-standardize/count"] == 14
    np.testing.assert_allclose(values["pipe/moving-standardize/mean"], history.mean(0), rtol=1e-5)
    np.testing.assert_allclose(values["pipe/moving-standardize/m2"], history.var(0) * 14, rtol=1e-4)


def test_moving_standardize_time_rank_ints_and_reset(backend):
    layer = MovingStandardize()
    space = IntBox(10, shape=(2,), add_batch_rank=True, add_time_rank=True)
    assert layer.get_preprocessed_space(space) == FloatBox(shape=(2,), add_batch_rank=True, add_time_rank=True)
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend)
    rng = np.random.RandomState(4)
    batches = [rng.randint(0, 10, size=(2, 3, 2)).astype(np.int32) for _ in range(2)]
    for x, expected in zip(batches, _standardize_stream(batches)):
        np.testing.assert_allclose(test.test(("apply", x)), expected, rtol=1e-4, atol=1e-4)
    test.test("reset")
    # After the reset only the new batch counts.
    np.testing.assert_allclose(test.test(("apply", batches[1])), _standardize_stream([batches[1]])[0],
                               rtol=1e-4, atol=1e-4)
    single = np.array([[[7, 7]]], dtype=np.int32)
    test.test("reset")
    np.testing.assert_array_equal(test.test(("apply", single)), np.zeros((1, 1, 2)))


def test_moving_standardize_over_the_whole_training_ignores_episode_resets(backend):
    layer = MovingStandardize(per_episode=False)
    assert not layer.stateful
    test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(2,), add_batch_rank=True)), backend=backend)
    rng = np.random.RandomState(6)
    batches = [rng.normal(1.0, 2.0, size=(3, 2)).astype(np.float32) for _ in range(3)]
    expected = _standardize_stream(batches)
    for x, want in zip(batches, expected):
        np.testing.assert_allclose(test.test(("apply", x)), want, rtol=1e-4, atol=1e-4)
        test.test("reset")  # (An agent's episode start: the statistics stay.)
    assert test.read_variable_values(layer.variable_registry)["moving-standardize/count"] == 9


def test_moving_standardize_errors(backend):
    for kwargs in (dict(batch_size=0), dict(epsilon=0.0), dict(per_episode="no")):
        with pytest.raises(RLGraphSpecError):
            MovingStandardize(**kwargs)
    with pytest.raises(RLGraphSpaceError, match="batch rank"):
        ComponentTest(MovingStandardize(), input_spaces=dict(inputs=FloatBox(shape=(2,))), backend=backend)


@needs_both_backends
def test_stateful_layers_cross_backend_parity():
    rng = np.random.RandomState(5)
    xs = [rng.standard_normal((1, 2)).astype(np.float32) for _ in range(4)]
    results = {}
    for backend in ("tf", "pytorch"):
        outs = []
        for layer in (MovingStandardize(), Sequence(sequence_length=3)):
            test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(2,), add_batch_rank=True)),
                                 backend=backend)
            outs += [test.test(("apply", x)) for x in xs]
        results[backend] = outs
    for tf_out, torch_out in zip(results["tf"], results["pytorch"]):
        np.testing.assert_allclose(tf_out, torch_out, rtol=1e-5, atol=1e-5)


def test_layers_are_stateful_or_not():
    assert Sequence().stateful and MovingStandardize().stateful
    assert not ReShape(flatten=True).stateful and not Transpose().stateful
    assert not RankReinterpreter(add_time_rank=True).stateful
    assert issubclass(RLGraphSpaceError, RLGraphError)
