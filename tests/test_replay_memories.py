"""ReplayMemory, RingBuffer and FIFOQueue on both backends: contents, wrap-around, errors, save/load."""
import numpy as np
import pytest

from rlgraph.components import Component
from rlgraph.components.memories.fifo_queue import FIFOQueue
from rlgraph.components.memories.replay_memory import ReplayMemory
from rlgraph.components.memories.ring_buffer import RingBuffer
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphError, RLGraphSpaceError, RLGraphSpecError

RECORDS = Dict(image=IntBox(256, shape=(2, 2), dtype="uint8"), reward=FloatBox(), action=IntBox(5),
               terminals=BoolBox(), add_batch_rank=True)


def make_records(ids, terminal_ids=()):
    """Records whose every leaf encodes its id (so rows can be identified after sampling)."""
    ids = np.asarray(ids)
    return {"image": np.tile((ids % 256).astype(np.uint8)[:, None, None], (1, 2, 2)),
            "reward": ids.astype(np.float32) / 2.0,
            "action": (ids % 5).astype(np.int32),
            "terminals": np.isin(ids, terminal_ids)}


def build(memory, backend, seed=10):
    spaces = dict(records=RECORDS, num_records=int)
    if isinstance(memory, RingBuffer):
        spaces["num_episodes"] = int
    return ComponentTest(memory, input_spaces=spaces, backend=backend, seed=seed)


def runtime_error(backend):
    """What a failed run-time check raises on both backends (the TF executor converts in-graph assertion errors)."""
    return RLGraphError


def stored_ids(test, memory):
    return (test.read_variable_values(memory.memory["/reward"]) * 2).astype(int).tolist()


def positions(test, memory):
    return int(test.read_variable_values(memory.index)), int(test.read_variable_values(memory.size))


# --- ReplayMemory --------------------------------------------------------------------------------------
def test_replay_memory_insert_and_get_dict_records(backend):
    memory = ReplayMemory(capacity=8)
    test = build(memory, backend)
    test.test(("insert_records", make_records([0, 1, 2], terminal_ids=[2])))
    assert int(test.test("get_size")) == 3
    values = test.read_variable_values(memory.variable_registry)
    assert values["replay-memory/memory/image"].dtype == np.uint8
    assert values["replay-memory/memory/image"].shape == (8, 2, 2)
    assert values["replay-memory/memory/terminals"][:3].tolist() == [False, False, True]
    out = test.test(("get_records", 4))
    assert sorted(out) == ["action", "image", "reward", "terminals"]
    assert out["image"].dtype == np.uint8 and out["image"].shape == (4, 2, 2)
    assert out["action"].shape == (4,) and out["terminals"].dtype == np.bool_
    ids = (out["reward"] * 2).astype(int)
    np.testing.assert_array_equal(out["image"][:, 0, 0], ids)  # Leaves of one row stay together.
    np.testing.assert_array_equal(out["terminals"], ids == 2)


def test_replay_memory_wraps_around_exactly(backend):
    memory = ReplayMemory(capacity=4)
    test = build(memory, backend)
    test.test(("insert_records", make_records([0, 1, 2])))
    assert positions(test, memory) == (3, 3)
    test.test(("insert_records", make_records([3, 4, 5])))
    # capacity + 2 inserts: the oldest two (0, 1) are overwritten, in slots 0 and 1.
    assert stored_ids(test, memory) == [4, 5, 2, 3]
    assert positions(test, memory) == (2, 4)
    test.test(("insert_records", make_records([6])))
    assert stored_ids(test, memory) == [4, 5, 6, 3]
    assert positions(test, memory) == (3, 4)


def test_replay_memory_batch_larger_than_capacity_keeps_last_records(backend):
    memory = ReplayMemory(capacity=3)
    test = build(memory, backend)
    test.test(("insert_records", make_records([0])))
    test.test(("insert_records", make_records(np.arange(1, 8))))
    # Record i goes to slot i % 3; of 1..7 only 5, 6, 7 survive.
    assert stored_ids(test, memory) == [6, 7, 5]
    assert positions(test, memory) == (8 % 3, 3)


def test_replay_memory_samples_uniformly_from_inserted_records(backend):
    memory = ReplayMemory(capacity=10)
    test = build(memory, backend)
    test.test(("insert_records", make_records([3, 7, 11, 12])))
    ids = (test.test(("get_records", 400))["reward"] * 2).astype(int)
    assert set(ids.tolist()) == {3, 7, 11, 12}  # Never the empty slots 4..9 (zeros).
    counts = np.bincount(ids)[[3, 7, 11, 12]]
    assert counts.min() > 60  # About 100 each.
    assert test.test(("get_records", 0))["image"].shape == (0, 2, 2)


def test_replay_memory_sampling_follows_the_seed(backend):
    samples = []
    for _ in range(2):
        memory = ReplayMemory(capacity=10)
        test = build(memory, backend, seed=3)
        test.test(("insert_records", make_records(np.arange(10))))
        samples.append(test.test(("get_records", 6))["action"])
    np.testing.assert_array_equal(samples[0], samples[1])


def test_replay_memory_size_and_clear(backend):
    memory = ReplayMemory(capacity=4)
    test = build(memory, backend)
    test.test(("insert_records", make_records([1, 2, 3, 4, 5])))
    assert int(test.test("get_size")) == 4
    test.test("clear")
    assert positions(test, memory) == (0, 0)
    with pytest.raises(runtime_error(backend), match="empty memory"):
        test.test(("get_records", 1))
    test.test(("insert_records", make_records([9])))
    assert stored_ids(test, memory)[0] == 9
    assert (test.test(("get_records", 3))["reward"] == 4.5).all()


def test_replay_memory_primitive_records(backend):
    memory = ReplayMemory(capacity=3)
    test = ComponentTest(memory, input_spaces=dict(records=IntBox(100, add_batch_rank=True), num_records=int),
                         backend=backend)
    test.test(("insert_records", np.array([5, 6, 7, 8])))
    assert test.read_variable_values(memory.memory[""]).tolist() == [8, 6, 7]
    assert set(test.test(("get_records", 20)).tolist()) == {6, 7, 8}


def test_memory_errors(backend):
    no_batch = Dict(s=FloatBox(), terminals=BoolBox())
    with pytest.raises(RLGraphSpaceError, match="batch rank"):
        ComponentTest(ReplayMemory(capacity=2), input_spaces=dict(records=no_batch, num_records=int),
                      backend=backend)
    no_terminals = Dict(s=FloatBox(), add_batch_rank=True)
    with pytest.raises(RLGraphSpaceError, match="terminals"):
        ComponentTest(RingBuffer(capacity=2), input_spaces=dict(records=no_terminals, num_records=int,
                                                                num_episodes=int), backend=backend)
    float_terminals = Dict(s=FloatBox(), terminals=FloatBox(), add_batch_rank=True)
    with pytest.raises(RLGraphSpaceError, match="scalar bool or int"):
        ComponentTest(RingBuffer(capacity=2), input_spaces=dict(records=float_terminals, num_records=int,
                                                                num_episodes=int), backend=backend)
    for bad in (0, -3, 2.5, True):
        with pytest.raises(RLGraphSpecError, match="capacity"):
            ReplayMemory(capacity=bad)


# --- RingBuffer ----------------------------------------------------------------------------------------
def test_ring_buffer_most_recent_records_across_wrap(backend):
    memory = RingBuffer(capacity=5)
    test = build(memory, backend)
    test.test(("insert_records", make_records([0, 1, 2, 3])))
    test.test(("insert_records", make_records([4, 5, 6])))
    assert stored_ids(test, memory) == [5, 6, 2, 3, 4]
    out = test.test(("get_records", 4))
    assert (out["reward"] * 2).astype(int).tolist() == [3, 4, 5, 6]
    assert out["image"][:, 1, 1].tolist() == [3, 4, 5, 6]
    assert (test.test(("get_records", 5))["reward"] * 2).astype(int).tolist() == [2, 3, 4, 5, 6]
    with pytest.raises(runtime_error(backend), match="more records requested"):
        test.test(("get_records", 6))


def test_ring_buffer_episodes_across_wrap(backend):
    memory = RingBuffer(capacity=6)
    test = build(memory, backend)

    def episodes(k):
        return (test.test(("get_episodes", k))["reward"] * 2).astype(int).tolist()

    def num_episodes():
        return int(test.read_variable_values(memory.num_episodes))

    # Episodes: [0 1] [2 3 4] [5 ...
    test.test(("insert_records", make_records([0, 1, 2, 3, 4, 5], terminal_ids=[1, 4])))
    assert num_episodes() == 2
    assert episodes(1) == [2, 3, 4]
    assert episodes(2) == [0, 1, 2, 3, 4]
    assert episodes(0) == []
    # ... 5 6] [7 8]: overwrites records 0..2, so the first two episodes are no longer complete.
    test.test(("insert_records", make_records([6, 7, 8], terminal_ids=[6, 8])))
    assert stored_ids(test, memory) == [6, 7, 8, 3, 4, 5]
    assert num_episodes() == 2
    assert episodes(2) == [5, 6, 7, 8]  # Read across the wrap: slots 5, 0, 1, 2.
    with pytest.raises(runtime_error(backend), match="more episodes requested"):
        test.test(("get_episodes", 3))
    # Overwriting record 3 does not touch complete episodes; overwriting 5 drops [5 6].
    test.test(("insert_records", make_records([9], terminal_ids=[9])))
    assert num_episodes() == 3 and episodes(3) == [5, 6, 7, 8, 9]
    test.test(("insert_records", make_records([10, 11])))
    assert num_episodes() == 2 and episodes(2) == [7, 8, 9]
    # Record 9 is the oldest now, but it follows the (overwritten) terminal 8: [9] stays complete.
    test.test(("insert_records", make_records([12, 13, 14], terminal_ids=[13])))
    assert stored_ids(test, memory) == [12, 13, 14, 9, 10, 11]
    assert num_episodes() == 2 and episodes(1) == [10, 11, 12, 13]
    assert episodes(2) == [9, 10, 11, 12, 13]
    test.test("clear")
    assert num_episodes() == 0 and positions(test, memory) == (0, 0)
    test.test(("insert_records", make_records([20, 21], terminal_ids=[21])))
    assert episodes(1) == [20, 21]


def test_ring_buffer_without_boundary_and_int_terminals(backend):
    space = Dict(x=FloatBox(), terminals=IntBox(2), add_batch_rank=True)
    memory = RingBuffer(capacity=3)
    test = ComponentTest(memory, input_spaces=dict(records=space, num_records=int, num_episodes=int),
                         backend=backend)
    test.test(("insert_records", {"x": np.arange(7, dtype=np.float32), "terminals": np.array([0, 1, 0, 0, 0, 0, 0])}))
    assert int(test.read_variable_values(memory.num_episodes)) == 0
    test.test(("insert_records", {"x": np.array([7.0], np.float32), "terminals": np.array([1])}))
    assert int(test.read_variable_values(memory.num_episodes)) == 0  # Episode 2..7 lost its start.
    test.test(("insert_records", {"x": np.array([8.0, 9.0], np.float32), "terminals": np.array([0, 1])}))
    assert test.test(("get_episodes", 1))["x"].tolist() == [8.0, 9.0]


# --- FIFOQueue -----------------------------------------------------------------------------------------
def test_fifo_queue_order_wrap_and_errors(backend):
    memory = FIFOQueue(capacity=4)
    test = build(memory, backend)
    test.test(("insert_records", make_records([0, 1, 2])))

    def dequeue(n):
        return (test.test(("get_records", n))["reward"] * 2).astype(int).tolist()

    assert dequeue(2) == [0, 1]
    test.test(("insert_records", make_records([3, 4, 5])))  # Wraps: slots 3, 0, 1.
    assert int(test.test("get_size")) == 4
    with pytest.raises(runtime_error(backend), match="full"):
        test.test(("insert_records", make_records([6])))
    assert positions(test, memory) == (2, 4)  # The failed insert changed nothing.
    assert dequeue(1) == [2]
    with pytest.raises(runtime_error(backend), match="fewer records queued"):
        dequeue(4)
    assert dequeue(3) == [3, 4, 5]
    assert int(test.test("get_size")) == 0
    assert dequeue(0) == []


def test_fifo_queue_single_trajectory_records(backend):
    trajectory = Dict(states=FloatBox(shape=(3, 2)), actions=IntBox(4, shape=(3,)))
    memory = FIFOQueue(capacity=2, record_space=trajectory, only_insert_single_records=True)
    test = ComponentTest(memory, input_spaces=dict(records=trajectory, num_records=int), backend=backend)
    for i in range(2):
        test.test(("insert_records", {"states": np.full((3, 2), i, np.float32),
                                      "actions": np.array([i, i, 1], np.int32)}))
    out = test.test(("get_records", 2))
    assert out["states"].shape == (2, 3, 2) and out["states"][:, 0, 0].tolist() == [0.0, 1.0]
    assert out["actions"].tolist() == [[0, 0, 1], [1, 1, 1]]


def test_fifo_queue_space_errors(backend):
    with pytest.raises(RLGraphSpaceError, match="record_space"):
        ComponentTest(FIFOQueue(capacity=2, record_space=FloatBox(shape=(3,))),
                      input_spaces=dict(records=FloatBox(shape=(2,), add_batch_rank=True), num_records=int),
                      backend=backend)
    with pytest.raises(RLGraphSpaceError, match="single records"):
        ComponentTest(FIFOQueue(capacity=2, only_insert_single_records=True),
                      input_spaces=dict(records=FloatBox(add_batch_rank=True), num_records=int), backend=backend)
    with pytest.raises(RLGraphSpecError, match="only_insert_single_records"):
        FIFOQueue(only_insert_single_records="yes")


# --- Persistence ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("memory_class", [ReplayMemory, RingBuffer, FIFOQueue])
def test_memory_save_load_round_trip(backend, memory_class, tmp_path):
    memory = memory_class(capacity=4)
    test = build(memory, backend)
    test.test(("insert_records", make_records([0, 1, 2], terminal_ids=[1])))
    if memory_class is FIFOQueue:
        test.test(("get_records", 2))
    test.test(("insert_records", make_records([3, 4], terminal_ids=[4])))
    path = memory.save(str(tmp_path / "memory"))
    before = test.read_variable_values(memory.variable_registry)

    restored = memory_class(capacity=4)
    restored_test = build(restored, backend)
    restored.load(path)
    after = restored_test.read_variable_values(restored.variable_registry)
    assert sorted(before) == sorted(after)
    for name in before:
        np.testing.assert_array_equal(before[name], after[name])
        assert before[name].dtype == after[name].dtype
    if memory_class is RingBuffer:
        assert (restored_test.test(("get_episodes", 1))["reward"] * 2).astype(int).tolist() == [2, 3, 4]
    if memory_class is FIFOQueue:
        assert (restored_test.test(("get_records", 3))["reward"] * 2).astype(int).tolist() == [2, 3, 4]

    larger = memory_class(capacity=5)
    build(larger, backend)
    with pytest.raises(RLGraphCheckpointError, match="does not fit"):
        larger.load(path)


def test_memory_survives_executor_store_and_load(backend, tmp_path):
    memory = RingBuffer(capacity=4)
    test = build(memory, backend)
    test.test(("insert_records", make_records([0, 1, 2, 3, 4], terminal_ids=[2, 4])))
    path = test.graph_executor.store_model(str(tmp_path / "model"))
    test.test("clear")
    test.graph_executor.load_model(path)
    assert stored_ids(test, memory) == [4, 1, 2, 3]
    assert (test.test(("get_episodes", 1))["reward"] * 2).astype(int).tolist() == [3, 4]


class _SampleBeforeInsert(Component):
    """Its first root API samples, its second inserts: the build must not depend on that order."""

    def __init__(self):
        super().__init__(ReplayMemory(capacity=4), scope="root")

    @rlgraph_api
    def sample(self, num_records):
        return self.sub_components["replay-memory"].get_records(num_records)

    @rlgraph_api
    def insert(self, records):
        return self.sub_components["replay-memory"].insert_records(records)


def test_root_apis_may_sample_before_they_insert(backend):
    test = ComponentTest(_SampleBeforeInsert(), input_spaces=dict(
        num_records=IntBox(1, 10, dtype="int64"), records=Dict(x=FloatBox(shape=(2,)), add_batch_rank=True)),
        backend=backend)
    with pytest.raises(RLGraphError, match="empty memory"):
        test.test(("sample", np.int64(2)))
    test.test(("insert", {"x": np.array([[3.0, 4.0]], np.float32)}))
    np.testing.assert_array_equal(test.test(("sample", np.int64(2)))["x"], [[3.0, 4.0], [3.0, 4.0]])
