"""Container and batch helpers (ContainerSplitter, ContainerMerger, Slice, BatchApply, BatchSplitter,
Sampler) and the LRN layer, against the numpy reference and worked numbers, on both backends."""
import numpy as np
import pytest

from rlgraph.components import (BatchApply, BatchSplitter, Component, ContainerMerger, ContainerSplitter, DenseLayer,
                                DictPreprocessorStack, Divide, LocalResponseNormalizationLayer, Multiply, Sampler,
                                Slice)
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox, Tuple
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal
from rlgraph.utils import numpy as rnp
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError


# --- ContainerSplitter ---------------------------------------------------------------------------------------------
def test_container_splitter_dict_in_output_order(backend):
    # The original's test_dict_splitter: nested parts come out whole, in the given order.
    space = Dict(a=dict(aa=bool, ab=float), b=dict(ba=bool), c=float, d=IntBox(low=0, high=255), e=IntBox(2),
                 f=FloatBox(shape=(3, 2)), g=Tuple(bool, FloatBox(shape=())), add_batch_rank=True)
    order = ("g", "a", "b", "c", "d", "e", "f")
    test = ComponentTest(ContainerSplitter(*order), input_spaces=dict(inputs=space), backend=backend)
    space.seed(1)
    sample = space.sample(size=3)
    test.test(("split", sample), expected_outputs=tuple(sample[k] for k in order))
    test.test(("apply", sample), expected_outputs=tuple(sample[k] for k in order))
    test.test(("split_into_dict", sample), expected_outputs={k: sample[k] for k in order})


def test_container_splitter_dict_without_batch_rank_and_dropped_keys(backend):
    # The original's test_dict_splitter_with_different_input_space (no batch rank), here also
    # leaving out key "e": keys not in output_order are dropped.
    space = Dict(a=Tuple(bool, FloatBox(shape=())), b=FloatBox(shape=()), c=bool, d=IntBox(low=0, high=255),
                 e=dict(ea=float), f=FloatBox(shape=(3, 2)))
    test = ComponentTest(ContainerSplitter("b", "c", "d", "a", "f"), input_spaces=dict(inputs=space),
                         backend=backend)
    space.seed(2)
    sample = space.sample()
    test.test(("split", sample), expected_outputs=(sample["b"], sample["c"], sample["d"], sample["a"], sample["f"]))


def test_container_splitter_tuple(backend):
    # The original's test_tuple_splitter (tuple_length, batch of 6), plus a reordering by indices.
    space = Tuple(FloatBox(shape=()), bool, IntBox(low=0, high=255), add_batch_rank=True)
    space.seed(3)
    sample = space.sample(size=6)
    test = ComponentTest(ContainerSplitter(tuple_length=3), input_spaces=dict(inputs=space), backend=backend)
    test.test(("split", sample), expected_outputs=sample)
    test = ComponentTest(ContainerSplitter(2, 0), input_spaces=dict(inputs=space), backend=backend)
    test.test(("split", sample), expected_outputs=(sample[2], sample[0]))
    assert "split_into_dict" not in test.component.api_methods


def test_container_splitter_bad_inputs(backend):
    space = Dict(a=FloatBox(), b=IntBox(3), add_batch_rank=True)
    with pytest.raises(RLGraphSpaceError, match=r"container-splitter\.split\(inputs\): key\(s\) \['z'\].*"
                                                r"Expected keys among \['a', 'b'\]; received keys \['z'\]"):
        ComponentTest(ContainerSplitter("a", "z"), input_spaces=dict(inputs=space), backend=backend)
    with pytest.raises(RLGraphSpaceError, match=r"split\(inputs\): the input must be a Tuple"):
        ComponentTest(ContainerSplitter(0, 1), input_spaces=dict(inputs=space), backend=backend)
    with pytest.raises(RLGraphSpaceError, match=r"index\(es\) \[2\].*Expected indices < 2; received indices \[2\]"):
        ComponentTest(ContainerSplitter(2, 0), input_spaces=dict(inputs=Tuple(FloatBox(), FloatBox())),
                      backend=backend)
    with pytest.raises(RLGraphSpaceError, match=r"Expected 3 items; received 2 items"):
        ComponentTest(ContainerSplitter(tuple_length=3), input_spaces=dict(inputs=Tuple(FloatBox(), FloatBox())),
                      backend=backend)
    for args, kwargs in (((), {}), (("a", 1), {}), (("a", "a"), {}), ((0,), {"tuple_length": 2}),
                         ((), {"tuple_length": 0})):
        with pytest.raises(RLGraphSpecError, match=r"ContainerSplitter"):
            ContainerSplitter(*args, **kwargs)


# --- ContainerMerger -----------------------------------------------------------------------------------------------
MERGE_SPACE = Tuple(dict(a=bool, b=float), dict(c=bool), float, IntBox(low=0, high=255), IntBox(2),
                    FloatBox(shape=(3, 2)), Dict(d=bool, e=FloatBox(shape=())))


def test_container_merger_dict_and_tuple(backend):
    # The original's test_dict_merger_component and test_tuple_merger_component.
    MERGE_SPACE.seed(4)
    sample = MERGE_SPACE.sample()
    keys = ("1", "2", "3", "test", "5", "6", "7")
    test = ComponentTest(ContainerMerger(*keys), input_spaces=dict(inputs=list(MERGE_SPACE)), backend=backend)
    test.test(("merge", list(sample)), expected_outputs=dict(zip(keys, sample)))
    test = ComponentTest(ContainerMerger(7), input_spaces=dict(inputs=list(MERGE_SPACE)), backend=backend)
    test.test(("merge", list(sample)), expected_outputs=tuple(sample))


def test_container_merger_merges_tuples_into_one(backend):
    # The original's test_tuple_merger_component_merging_two_data_op_tuples.
    space = Tuple(Tuple(IntBox(2), IntBox(3)), IntBox(3), Tuple(FloatBox(shape=(3,)), BoolBox(shape=(1,))))
    space.seed(5)
    sample = space.sample()
    test = ComponentTest(ContainerMerger(merge_tuples_into_one=True), input_spaces=dict(inputs=list(space)),
                         backend=backend)
    test.test(("merge", list(sample)),
              expected_outputs=(sample[0][0], sample[0][1], sample[1], sample[2][0], sample[2][1]))


def test_container_merger_then_splitter_round_trip(backend):
    class RoundTrip(Component):
        def __init__(self):
            super().__init__(ContainerMerger("x", "y"), ContainerSplitter("y", "x"), scope="round-trip")

        @rlgraph_api
        def run(self, x, y):
            merged = self.sub_components["container-merger"].merge(x, y)
            return self.sub_components["container-splitter"].split(merged)

    x, y = np.array([[1.0, 2.0]], np.float32), np.array([2])
    test = ComponentTest(RoundTrip(), input_spaces=dict(x=FloatBox(shape=(2,), add_batch_rank=True),
                                                        y=IntBox(3, add_batch_rank=True)), backend=backend)
    test.test(("run", [x, y]), expected_outputs=(y, x))


def test_container_merger_bad_inputs(backend):
    spaces = [FloatBox(), FloatBox(), FloatBox()]
    with pytest.raises(RLGraphSpaceError, match=r"container-merger\.merge\(inputs\): wrong number of inputs.*"
                                                r"Expected 2 inputs \(one per key \['a', 'b'\]\); received 3 inputs"):
        ComponentTest(ContainerMerger("a", "b"), input_spaces=dict(inputs=spaces), backend=backend)
    with pytest.raises(RLGraphSpaceError, match=r"Expected 2 inputs .*received 3 inputs"):
        ComponentTest(ContainerMerger(2), input_spaces=dict(inputs=spaces), backend=backend)
    for args, kwargs in ((("a", "a"), {}), (("a/b",), {}), (("_T0_",), {}), ((0,), {}), (("a",), {"is_tuple": True})):
        with pytest.raises(RLGraphSpecError, match=r"ContainerMerger\(input_names_or_num_items\)"):
            ContainerMerger(*args, **kwargs)


# --- Slice ---------------------------------------------------------------------------------------------------------
TIME_MAJOR = FloatBox(shape=(2, 2, 3), add_batch_rank=True, add_time_rank=True, time_major=True)


def test_slice_single_items_with_and_without_squeeze(backend):
    # The original's test_slice_with_squeeze (time-major [3, 5, 2, 2, 3]) with single items.
    TIME_MAJOR.seed(6)
    x = TIME_MAJOR.sample(size=(3, 5))
    test = ComponentTest(Slice(squeeze=True), input_spaces=dict(inputs=TIME_MAJOR, start_index=int), backend=backend)
    for i in (1, 0, -1, 2):
        test.test(("slice", [x, i]), expected_outputs=rnp.slice_leading(x, i, squeeze=True))
    assert test.test(("slice", [x, -1])).shape == (5, 2, 2, 3)   # The time rank is gone.
    test = ComponentTest(Slice(), input_spaces=dict(inputs=TIME_MAJOR, start_index=int), backend=backend)
    test.test(("slice", [x, -1]), expected_outputs=x[2:3])   # Not x[-1:0], which is empty.
    test.test(("slice", [x, 1]), expected_outputs=x[1:2])


def test_slice_ranges(backend):
    # The original's test_slice_without_squeeze ([4, 1, 4, 5] batch-major), plus python's rules
    # for negative and out-of-range bounds.
    space = FloatBox(shape=(1, 4, 5), add_batch_rank=True)
    space.seed(7)
    x = space.sample(size=4)
    test = ComponentTest(Slice(), input_spaces=dict(inputs=space, start_index=int, end_index=int), backend=backend)
    test.test(("slice", [x, 1, 2]), expected_outputs=np.asarray([x[1]]))
    test.test(("slice", [x, 0, 2]), expected_outputs=x[0:2])
    test.test(("slice", [x, 0, 1]), expected_outputs=np.asarray([x[0]]))
    for start, end in ((-3, -1), (2, 100), (3, 1), (-100, 2)):
        test.test(("slice", [x, start, end]), expected_outputs=rnp.slice_leading(x, start, end))
        assert test.test(("slice", [x, start, end])).shape == x[start:end].shape


def test_slice_squeezes_build_time_ranges_of_length_one(backend):
    # The original's squeezed ranges (1, 2) -> x[1], (0, 1) -> x[0], (0, 2) -> x[0:2], with the
    # bounds given as python ints by a parent, so that the result's rank is known at build.
    class Slices(Component):
        def __init__(self):
            super().__init__(Slice(squeeze=True), scope="slices")

        @rlgraph_api
        def run(self, inputs):
            slicer = self.sub_components["slice"]
            return slicer.slice(inputs, 1, 2), slicer.slice(inputs, 0, 2), slicer.slice(inputs, 0, 1)

    TIME_MAJOR.seed(8)
    x = TIME_MAJOR.sample(size=(3, 5))
    test = ComponentTest(Slices(), input_spaces=dict(inputs=TIME_MAJOR), backend=backend)
    test.test(("run", x), expected_outputs=(x[1], x[0:2], x[0]))


def test_slice_containers_and_data_dims(backend):
    space = Dict(a=FloatBox(shape=(2,)), b=Tuple(IntBox(3), BoolBox()), add_batch_rank=True)
    space.seed(9)
    x = space.sample(size=4)
    test = ComponentTest(Slice(squeeze=True), input_spaces=dict(inputs=space, start_index=int), backend=backend)
    expected = dict(a=x["a"][3], b=(x["b"][0][3], x["b"][1][3]))
    test.test(("slice", [x, -1]), expected_outputs=expected)
    # Without batch/time rank, axis 0 is the first data dim.
    test = ComponentTest(Slice(squeeze=True), input_spaces=dict(inputs=FloatBox(shape=(3, 2)), start_index=int),
                         backend=backend)
    y = np.arange(6, dtype=np.float32).reshape((3, 2))
    test.test(("slice", [y, 1]), expected_outputs=[2.0, 3.0])


def test_slice_bad_inputs(backend):
    x = np.zeros((4, 2), np.float32)
    test = ComponentTest(Slice(), input_spaces=dict(inputs=FloatBox(shape=(2,), add_batch_rank=True),
                                                    start_index=int), backend=backend)
    for i in (4, -5):
        with pytest.raises(RLGraphError, match=r"slice\(start_index\): index out of range.*\[-n, n\)|"
                                               r"slice\(start_index\): index out of range.*\[-4, 4\)") as info:
            test.test(("slice", [x, i]))
        assert str(i) in str(info.value)
    with pytest.raises(RLGraphSpaceError, match=r"slice\.slice\(end_index\): squeeze=True cannot squeeze a range"):
        ComponentTest(Slice(squeeze=True), input_spaces=dict(inputs=FloatBox(add_batch_rank=True), start_index=int,
                                                             end_index=int), backend=backend)
    with pytest.raises(RLGraphSpaceError, match=r"slice\.slice\(inputs\): a range needs a batch or time rank"):
        ComponentTest(Slice(), input_spaces=dict(inputs=FloatBox(shape=(3,)), start_index=int, end_index=int),
                      backend=backend)
    with pytest.raises(RLGraphSpecError, match=r"Slice\(squeeze\)"):
        Slice(squeeze=1)


# --- BatchApply ----------------------------------------------------------------------------------------------------
def test_batch_apply_dense_layer(backend):
    # The original's test_batch_apply_component_with_simple_input_space: [5, 10, 3] through a
    # bias-free dense layer of 4 units equals the numpy dense layer on the [50, 3] fold.
    space = FloatBox(shape=(3,), add_batch_rank=True, add_time_rank=True)
    batch_apply = BatchApply(DenseLayer(units=4, biases_spec=False), "apply")
    test = ComponentTest(batch_apply, input_spaces=dict(inputs=space), backend=backend)
    kernel = test.read_variable_values("batch-apply/dense/kernel")
    space.seed(10)
    x = space.sample(size=(5, 10))
    expected = rnp.dense_layer(x.reshape((50, 3)), kernel).reshape((5, 10, 4))
    test.test(("apply", x), expected_outputs=expected, decimals=5)
    recursive_assert_almost_equal(expected, rnp.batch_apply(lambda f: rnp.dense_layer(f, kernel), x), decimals=5)


def test_batch_apply_dict_preprocessor_and_time_major(backend):
    # The original's test_batch_apply_component_with_dict_input_space.
    space = Dict(a=FloatBox(shape=(3,)), b=FloatBox(shape=(1, 2)), add_batch_rank=True, add_time_rank=True)
    stack = DictPreprocessorStack(preprocessors=dict(a=[Multiply(factor=2.0)], b=[Divide(divisor=2.0),
                                                                                   Multiply(factor=2.0)]))
    test = ComponentTest(BatchApply(stack, api_method_name="preprocess"), input_spaces=dict(inputs=space),
                         backend=backend)
    space.seed(11)
    x = space.sample(size=(5, 10))
    test.test(("apply", x), expected_outputs=dict(a=x["a"] * 2.0, b=x["b"]), decimals=6)
    # Time-major [T, B, ...] comes back time-major; row (t, b) keeps its place.
    tm = FloatBox(shape=(2,), add_batch_rank=True, add_time_rank=True, time_major=True)
    test = ComponentTest(BatchApply({"type": "multiply", "factor": 3.0}), input_spaces=dict(inputs=tm),
                         backend=backend)
    y = np.arange(12, dtype=np.float32).reshape((3, 2, 2))
    test.test(("apply", y), expected_outputs=y * 3.0)


def test_batch_apply_bad_inputs(backend):
    with pytest.raises(RLGraphSpaceError, match=r"batch-apply\.apply\(inputs\): the input \(leaf '/b'\) needs a "
                                                r"batch rank and a time rank"):
        ComponentTest(BatchApply(Multiply(factor=2.0)), input_spaces=dict(
            inputs=Dict(a=FloatBox(add_batch_rank=True, add_time_rank=True), b=FloatBox(add_batch_rank=True))),
            backend=backend)
    with pytest.raises(RLGraphSpecError, match=r"BatchApply\(api_method_name\): the sub-component has no API "
                                               r"method 'call'.*Expected one of \['apply', 'reset'\]"):
        BatchApply(Multiply(factor=2.0), api_method_name="call")


# --- BatchSplitter -------------------------------------------------------------------------------------------------
def test_batch_splitter_four_shards_of_five(backend):
    # The original's test_batch_splitter_component: 21 records into 4 shards of 5 (row 20 dropped).
    space = Dict(states=dict(state1=float, state2=float), actions=dict(action1=float), rewards=float,
                 terminals=BoolBox(), add_batch_rank=True)
    space.seed(12)
    sample = space.sample(size=21)
    keys = ("states", "actions", "rewards", "terminals")
    test = ComponentTest(BatchSplitter(num_shards=4, shard_size=5), input_spaces=dict(
        inputs=[space[k] for k in keys]), backend=backend)
    out = test.test(("split_batch", [sample[k] for k in keys]))
    expected = tuple(tuple({n: v[a:b] for n, v in sample[k].items()} if isinstance(sample[k], dict) else
                           sample[k][a:b] for k in keys) for a, b in ((0, 5), (5, 10), (10, 15), (15, 20)))
    recursive_assert_almost_equal(out, expected)
    # Shard k of the rewards, by the numpy reference.
    recursive_assert_almost_equal([shard[2] for shard in out], rnp.split_batch(sample["rewards"], 4, 5))


def test_batch_splitter_shard_size_from_the_batch(backend):
    # shard_size=None: B // num_shards rows per shard, for every call's B.
    test = ComponentTest(BatchSplitter(num_shards=3), input_spaces=dict(
        inputs=[FloatBox(add_batch_rank=True), IntBox(5, shape=(2,), add_batch_rank=True)]), backend=backend)
    for b in (3, 7, 9):
        x, y = np.arange(b, dtype=np.float32), np.arange(2 * b).reshape((b, 2)) % 5
        out = test.test(("split_batch", [x, y]))
        recursive_assert_almost_equal(out, tuple(zip(rnp.split_batch(x, 3), rnp.split_batch(y, 3))))


def test_batch_splitter_bad_inputs(backend):
    test = ComponentTest(BatchSplitter(num_shards=4, shard_size=5), input_spaces=dict(
        inputs=[FloatBox(add_batch_rank=True), FloatBox(add_batch_rank=True)]), backend=backend)
    with pytest.raises(RLGraphError, match=r"batch-splitter\.split_batch\(inputs\): the batch is too small.*20"
                                           r"[^0-9].*received.*19"):
        test.test(("split_batch", [np.zeros(19, np.float32), np.zeros(19, np.float32)]))
    with pytest.raises(RLGraphError, match=r"split_batch\(inputs\): the batch sizes of the inputs differ.*20.*21"):
        test.test(("split_batch", [np.zeros(20, np.float32), np.zeros(21, np.float32)]))
    with pytest.raises(RLGraphSpaceError, match=r"batch-splitter\.split_batch\(inputs\[1\]\): the input needs a "
                                                r"batch rank"):
        ComponentTest(BatchSplitter(num_shards=2), input_spaces=dict(
            inputs=[FloatBox(add_batch_rank=True), FloatBox()]), backend=backend)
    for kwargs in ({"num_shards": 0}, {"num_shards": 2, "shard_size": 0}, {"num_shards": 2.0}):
        with pytest.raises(RLGraphSpecError, match=r"BatchSplitter\((num_shards|shard_size)\)"):
            BatchSplitter(**kwargs)


# --- Sampler -------------------------------------------------------------------------------------------------------
RECORD = Dict(states=dict(state1=float, state2=float), actions=dict(action1=float), reward=float,
              terminals=BoolBox(), add_batch_rank=True)


def test_sampler_draws_the_reference_rows_on_both_backends(backend):
    # The original's test_sampler_component (10 of 100 records), with the rows checked exactly:
    # call k draws rnp.sampler_indices(seed, k, ...), the same rows on TF and PyTorch.
    test = ComponentTest(Sampler(seed=5), input_spaces=dict(sample_size=int, inputs=RECORD), backend=backend)
    RECORD.seed(13)
    records = RECORD.sample(size=100)
    for k in range(3):
        rows = rnp.sampler_indices(seed=5, num_calls=k, sample_size=10, batch_size=100)
        out = test.test(("sample", [10, records]))
        expected = {key: {n: v[rows] for n, v in value.items()} if isinstance(value, dict) else value[rows]
                    for key, value in records.items()}
        recursive_assert_almost_equal(out, expected)
        assert len(out["actions"]["action1"]) == 10 and len(out["terminals"]) == 10
    # The worked value: hash32(1) by hand, two rounds of x = ((x >> 16) ^ x) * 0x45d9f3b mod 2**32.
    x = 1
    for _ in range(2):
        x = (((x >> 16) ^ x) * 0x45D9F3B) & 0xFFFFFFFF
    assert rnp.hash32(1) == (x >> 16) ^ x


def test_sampler_is_uniform_and_restores_its_stream(backend, tmp_path):
    test = ComponentTest(Sampler(seed=123), input_spaces=dict(sample_size=int, inputs=FloatBox(add_batch_rank=True)),
                         backend=backend)
    batch = np.arange(8, dtype=np.float32)
    draws = np.concatenate([test.test(("sample", [500, batch])) for _ in range(4)]).astype(int)
    counts = np.bincount(draws, minlength=8)
    assert counts.min() > 200 and counts.max() < 300  # 2000 draws: 250 expected per row.
    path = test.graph_executor.store_model(str(tmp_path / "ckpt"))
    next_draw = test.test(("sample", [6, batch]))
    test.graph_executor.load_model(path)
    recursive_assert_almost_equal(test.test(("sample", [6, batch])), next_draw)
    assert test.test(("sample", [0, batch])).shape == (0,)


def test_sampler_default_seed_follows_the_numpy_seed(backend):
    outs = []
    for seed in (1, 1, 2):
        test = ComponentTest(Sampler(), input_spaces=dict(sample_size=int, inputs=FloatBox(add_batch_rank=True)),
                             backend=backend, seed=seed)
        outs.append(test.test(("sample", [20, np.arange(50, dtype=np.float32)])))
    recursive_assert_almost_equal(outs[0], outs[1])
    recursive_assert_almost_equal(outs[0], outs[2], false=True)


def test_sampler_bad_inputs(backend):
    test = ComponentTest(Sampler(seed=0), input_spaces=dict(sample_size=int, inputs=FloatBox(add_batch_rank=True)),
                         backend=backend)
    with pytest.raises(RLGraphError, match=r"sampler\.sample\(sample_size\).*sample_size >= 0.*-1"):
        test.test(("sample", [-1, np.zeros(3, np.float32)]))
    with pytest.raises(RLGraphError, match=r"sampler\.sample\(sample_size\).*batch of.*0"):
        test.test(("sample", [2, np.zeros(0, np.float32)]))
    pair = Dict(a=FloatBox(add_batch_rank=True), b=FloatBox(add_batch_rank=True))
    test = ComponentTest(Sampler(seed=0), input_spaces=dict(sample_size=int, inputs=pair), backend=backend)
    with pytest.raises(RLGraphError, match=r"sampler\.sample\(inputs\): the batch sizes of the leaves differ.*3.*4"):
        test.test(("sample", [2, dict(a=np.zeros(3, np.float32), b=np.zeros(4, np.float32))]))
    with pytest.raises(RLGraphSpaceError, match=r"sampler\.sample\(inputs\): the input \(leaf '/b'\) needs a batch "
                                                r"rank"):
        ComponentTest(Sampler(), input_spaces=dict(sample_size=int, inputs=Dict(a=FloatBox(add_batch_rank=True),
                                                                                 b=FloatBox())), backend=backend)
    for kwargs in ({"sampling_strategy": "prioritized"}, {"seed": -1}, {"seed": 2 ** 31}):
        with pytest.raises(RLGraphSpecError, match=r"Sampler\((sampling_strategy|seed)\)"):
            Sampler(**kwargs)


# --- LocalResponseNormalizationLayer -------------------------------------------------------------------------------
def test_lrn_worked_numbers_and_tf_formula(backend):
    # depth_radius=1 on [1, 2, 3]: sums of squares 1+4=5, 1+4+9=14, 4+9=13.
    layer = LocalResponseNormalizationLayer(depth_radius=1, bias=1.0, alpha=1.0, beta=0.5)
    test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(3,), add_batch_rank=True)), backend=backend)
    test.test(("apply", np.array([[1.0, 2.0, 3.0]], np.float32)),
              expected_outputs=[[1 / 6 ** 0.5, 2 / 15 ** 0.5, 3 / 14 ** 0.5]], decimals=6)
    # Images [B, H, W, C] with a window wider than C/2 and beta != 0.5.
    space = FloatBox(shape=(2, 3, 7), add_batch_rank=True)
    layer = LocalResponseNormalizationLayer(depth_radius=2, bias=2.0, alpha=0.1, beta=0.75)
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend)
    space.seed(14)
    x = space.sample(size=4) * 3.0
    test.test(("apply", x), expected_outputs=rnp.local_response_normalization(x, 2, 2.0, 0.1, 0.75), decimals=5)


def test_lrn_depth_radius_zero_and_time_rank(backend):
    # The original's test_local_response_normalization_layer: depth_radius 0 on [2, 2, 2, 3] images
    # gives x / (bias + alpha * x**2) ** beta.
    rng = np.random.RandomState(15)
    bias, alpha, beta = rng.random_sample(3) + 1.0
    space = FloatBox(shape=(2, 2, 3), add_batch_rank=True, add_time_rank=True)
    layer = LocalResponseNormalizationLayer(depth_radius=0, bias=bias, alpha=alpha, beta=beta)
    test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend)
    space.seed(15)
    x = space.sample(size=(2, 3))
    test.test(("apply", x), expected_outputs=x / (bias + alpha * np.square(x)) ** beta, decimals=5)


def test_lrn_bad_inputs(backend):
    with pytest.raises(RLGraphSpaceError, match=r"local-response-normalization\.apply\(inputs\[0\]\): the input needs "
                                                r"a last \(channel\) axis.*received shape \(\)"):
        ComponentTest(LocalResponseNormalizationLayer(), input_spaces=dict(inputs=FloatBox(add_batch_rank=True)),
                      backend=backend)
    for kwargs in ({"depth_radius": -1}, {"depth_radius": 1.5}, {"beta": float("nan")}, {"alpha": "1"}):
        with pytest.raises(RLGraphSpecError, match=r"LocalResponseNormalizationLayer\("):
            LocalResponseNormalizationLayer(**kwargs)
