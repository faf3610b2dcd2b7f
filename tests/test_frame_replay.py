"""FrameReplay against MemPrioritizedReplay: the same stream in, the same batches out.

The stream is made as an agent makes it: envs that stack frames on the last axis (padding an
episode's first stack with copies of its reset frame, as `AtariEnv` does, or with zeros), their
transitions folded into n-step records by `ObserveBuffers`, records of two envs interleaved.
"""
from __future__ import annotations

import logging
import os

import numpy as np
import pytest

from rlgraph.agents.observe_buffers import ObserveBuffers, Transition, stack_transitions
from rlgraph.components.memories import memory_size
from rlgraph.components.memories.frame_pool import FRAME_INDEX_BYTES
from rlgraph.components.memories.frame_replay import FrameReplay, frame_replay_bytes
from rlgraph.components.memories.mem_prioritized_replay import MemPrioritizedReplay
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphSpaceError, RLGraphSpecError


class StackingEnv:
    """Random frames [*frame_shape], stacked k deep on the last axis; episodes of random length
    (1 included) ending terminal or truncated. Frame values come from {0, 1, 2} so that equal
    frames recur across time and episodes."""

    def __init__(self, rng, frame_shape, k, dtype, pad):
        self.rng, self.frame_shape, self.k, self.dtype, self.pad = rng, frame_shape, k, dtype, pad
        self.frames = []

    def _frame(self):
        return self.rng.randint(0, 3, size=self.frame_shape).astype(self.dtype)

    def reset(self):
        first = self._frame()
        padding = first if self.pad == "repeat" else np.zeros_like(first)
        self.frames = [padding] * (self.k - 1) + [first]
        self.steps_left = int(self.rng.choice([1, 1, 2, 3, 5, 9]))
        self.truncate = bool(self.rng.rand() < 0.4)
        return self.state()

    def state(self):
        return np.concatenate(self.frames[-self.k:], axis=-1)

    def step(self):
        self.frames.append(self._frame())
        self.steps_left -= 1
        over = self.steps_left == 0
        return self.state(), over and not self.truncate, over


def make_records(seed, num_envs, n_step, steps, frame_shape=(3, 2, 1), k=4, dtype=np.uint8, pad="repeat"):
    """Records (dicts of batches of 1..7 transitions) in arrival order, and counts of what the stream held."""
    rng = np.random.RandomState(seed)
    envs = [StackingEnv(rng, frame_shape, k, dtype, pad) for _ in range(num_envs)]
    states = [env.reset() for env in envs]
    buffers = ObserveBuffers(buffer_size=4, n_step=n_step, discount=0.9)
    ready, counts = [], {"length_1": 0, "terminal": 0, "truncated": 0}
    for t in range(steps):
        e = t % num_envs if rng.rand() < 0.7 else int(rng.randint(num_envs))
        env = envs[e]
        length_1 = env.steps_left == 1 and len(env.frames) == k
        next_state, terminal, over = env.step()
        transition = Transition(states[e], np.int32(rng.randint(4)), float(rng.randn()), terminal, next_state)
        ready += buffers.add(e, [transition], episode_end=over)
        states[e] = next_state
        if over:
            counts["length_1"] += length_1
            counts["terminal" if terminal else "truncated"] += 1
            states[e] = env.reset()
    records, i = [], 0
    while i < len(ready):
        size = int(rng.randint(1, 8))
        records.append(stack_transitions(ready[i:i + size]))
        i += size
    return records, counts


def assert_same_batches(naive, frames, records, seed, batch_size=5):
    """Inserts `records` into both memories, sampling both and updating both alike after each insert."""
    rng = np.random.RandomState(seed)
    for record in records:
        naive.insert_records(record)
        frames.insert_records(record)
        assert frames.index == naive.index and frames.size == naive.size
        for _ in range(int(rng.randint(0, 3))):
            (r_naive, i_naive, w_naive), (r_frames, i_frames, w_frames) = \
                naive.get_records(batch_size), frames.get_records(batch_size)
            assert np.array_equal(i_naive, i_frames) and np.array_equal(w_naive, w_frames)
            assert sorted(r_naive) == sorted(r_frames)
            for key in r_naive:
                assert r_naive[key].dtype == r_frames[key].dtype, key
                assert np.array_equal(r_naive[key], r_frames[key]), key
            priorities = rng.exponential(size=batch_size)
            naive.update_records(i_naive, priorities)
            frames.update_records(i_frames, priorities)


def distinct_frames(naive, k):
    """The number of distinct frames (by bytes) in the states and next_states a memory holds."""
    stored = [naive.storage[key][:naive.size] for key in ("/states", "/next_states")]
    frames = [np.moveaxis(s.reshape(s.shape[:-1] + (k, -1)), -2, 1) for s in stored]
    return len({f.tobytes() for stack in frames for record in stack for f in record})


@pytest.mark.parametrize("n_step, num_envs, alpha, beta, frame_shape, dtype, pad, compress", [
    (1, 1, 0.0, 0.0, (3, 2, 1), np.uint8, "repeat", False),    # Plain (uniform) mode, one env.
    (3, 2, 0.6, 0.4, (3, 2, 1), np.uint8, "repeat", False),    # Prioritized, n-step, interleaved envs.
    (3, 2, 0.6, 1.0, (2, 2, 2), np.uint8, "zeros", False),     # Two channels a frame, zero-padded reset stacks.
    (1, 2, 0.6, 0.4, (4, 3), np.float32, "repeat", False),     # Float frames (after a Divide), 2-D states.
    (3, 2, 0.6, 0.4, (3, 2, 1), np.uint8, "repeat", True),     # Compressed frames.
])
def test_same_batches_as_the_naive_memory(n_step, num_envs, alpha, beta, frame_shape, dtype, pad, compress):
    records, counts = make_records(seed=n_step + 10 * num_envs, num_envs=num_envs, n_step=n_step, steps=400,
                                   frame_shape=frame_shape, dtype=dtype, pad=pad)
    assert min(counts.values()) > 0, counts  # Length-1 episodes, terminal and truncated ends occur.
    capacity = 23
    assert sum(len(r["rewards"]) for r in records) > 5 * capacity  # The ring wraps several times.
    naive = MemPrioritizedReplay(capacity=capacity, alpha=alpha, beta=beta, seed=7)
    frames = FrameReplay(capacity=capacity, alpha=alpha, beta=beta, seed=7, frame_stack=4, compress=compress)
    assert_same_batches(naive, frames, records, seed=3)
    # Every stored frame is referenced by a stored record, and each distinct frame is stored once.
    assert frames.pool.live == distinct_frames(naive, 4)
    assert frames.pool.live == int(np.count_nonzero(frames.pool.refcount))
    assert int(frames.pool.refcount.sum()) == capacity * 2 * 4


def test_oversized_batch_and_clear():
    """A batch larger than the capacity keeps its last `capacity` records, as the naive memory does;
    `clear` forgets the frames."""
    records, _ = make_records(seed=5, num_envs=2, n_step=3, steps=60)
    whole = {key: np.concatenate([r[key] for r in records]) for key in records[0]}
    assert len(whole["rewards"]) > 13
    naive = MemPrioritizedReplay(capacity=13, alpha=0.5, beta=0.5, seed=2)
    frames = FrameReplay(capacity=13, alpha=0.5, beta=0.5, seed=2)
    assert_same_batches(naive, frames, [whole] + records[:4], seed=4)
    frames.clear()
    assert frames.pool.live == 0 and frames.size == 0 and not frames.pool.index
    naive.clear()
    assert_same_batches(naive, frames, records[:6], seed=4)


def test_pool_grows_when_episodes_are_short():
    """Length-1 episodes show 2 distinct frames per record: a pool sized for 1 per record grows,
    and the batches stay exact."""
    records, _ = make_records(seed=9, num_envs=1, n_step=1, steps=150, frame_shape=(5, 5, 1))
    naive = MemPrioritizedReplay(capacity=16, alpha=0.7, beta=0.5, seed=1)
    frames = FrameReplay(capacity=16, alpha=0.7, beta=0.5, seed=1, frame_capacity=16)
    assert frames.frame_capacity == 16
    assert_same_batches(naive, frames, records, seed=2)
    assert frames.pool.capacity > 16 and len(frames.pool.blocks) > 1


def test_a_pool_that_cannot_grow_refuses_the_insert_and_changes_nothing(monkeypatch):
    records, _ = make_records(seed=9, num_envs=1, n_step=1, steps=150, frame_shape=(5, 5, 1))
    naive = MemPrioritizedReplay(capacity=16, alpha=0.7, beta=0.5, seed=1)
    frames = FrameReplay(capacity=16, alpha=0.7, beta=0.5, seed=1, frame_capacity=16)
    for memory in (naive, frames):
        memory.insert_records(records[0])  # (Allocated while there is memory.)
    monkeypatch.setattr(memory_size, "available_memory_bytes", lambda: 100)
    for i, record in enumerate(records[1:], start=1):
        try:
            frames.insert_records(record)
        except RLGraphSpecError as error:
            assert "FrameReplay.insert_records: growing the frame pool to 32 frames needs ~" in str(error)
            break
        naive.insert_records(record)
    assert 0 < i < len(records) - 1 and frames.pool.capacity == 16
    monkeypatch.undo()  # Memory is back: the same stream goes on from the refused record.
    assert frames.pool.live == distinct_frames(naive, 4)
    assert_same_batches(naive, frames, records[i:], seed=2)


def atari_record_space():
    state = IntBox(0, 256, shape=(84, 84, 4), dtype="uint8")
    return Dict(states=state, actions=IntBox(4), rewards=FloatBox(), terminals=BoolBox(), next_states=state,
                add_batch_rank=True)


def test_footprint_of_84x84x4_frames():
    """Allocated bytes for 84 x 84 x 4 uint8 states: 1/8 of the naive memory plus the ids and trees."""
    capacity = 64
    naive = MemPrioritizedReplay(capacity=capacity, record_space=atari_record_space())
    frames = FrameReplay(capacity=capacity, record_space=atari_record_space(), frame_capacity=capacity)
    naive_bytes = sum(s.nbytes for s in naive.storage.values())
    assert naive_bytes == capacity * (2 * 84 * 84 * 4 + 4 + 4 + 1)
    # Pool: 64 frames of 7056 bytes + refcount (4) and key (8); ids: 2 x 4 int32; the rest; trees (2 x 2 x 64 x 8).
    assert frames.nbytes == 64 * (7056 + 12) + capacity * (32 + 9) + 2 * 2 * 64 * 8
    assert frames.nbytes / naive_bytes < 1 / 8 + 0.01
    # The estimate is those bytes plus the key index's (per frame, not allocated as arrays).
    estimate = frame_replay_bytes(capacity, IntBox(0, 256, shape=(84, 84, 4), dtype="uint8"), 4, capacity)
    assert estimate == frames.nbytes + (FRAME_INDEX_BYTES - 12) * 64
    # The standard replay of 1,000,000 transitions: 56.5 GB naive; with frames stored once 1,062,516
    # frames allocated (17 blocks of 65536 = 1,114,112), ids and other leaves, trees: 8.07 GB (1/7).
    big = frame_replay_bytes(1_000_000, IntBox(0, 256, shape=(84, 84, 4), dtype="uint8"))
    assert big == 17 * 65536 * (7056 + FRAME_INDEX_BYTES) + 1_000_000 * (32 + 9) + 2 * 2 * 2 ** 20 * 8
    assert 0.14 < big / (1_000_000 * (2 * 84 * 84 * 4 + 9)) < 0.145


def test_bytes_logged_and_refused(monkeypatch, caplog):
    with caplog.at_level(logging.INFO, logger="rlgraph.components.memories.frame_replay"):
        FrameReplay(capacity=1000, record_space=atari_record_space())
    assert "capacity 1000 (1078 frames of (84, 84, 1) uint8, 4 per state) takes ~" in caplog.text
    assert "(stored as plain records: ~53.9 MiB)" in caplog.text
    monkeypatch.setattr(memory_size, "available_memory_bytes", lambda: 2 ** 30)
    with pytest.raises(RLGraphSpecError, match=r"FrameReplay\(capacity\): capacity 1000000 .* needs ~7.5 GiB, "
                                               r"more than the 1.0 GiB of memory available now"):
        FrameReplay(capacity=1_000_000, record_space=atari_record_space())


def test_available_memory_is_read_from_psutil_else_proc_meminfo(monkeypatch, tmp_path):
    import builtins
    import sys
    import types
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       24683584 kB\nMemFree:         1000000 kB\nMemAvailable:   23226280 kB\n")
    real_open = builtins.open
    monkeypatch.setattr(builtins, "open", lambda path, *a, **k: real_open(meminfo if path == "/proc/meminfo" else path,
                                                                          *a, **k))
    monkeypatch.setitem(sys.modules, "psutil", None)  # (Not installed: the import fails.)
    assert memory_size.available_memory_bytes() == 23226280 * 1024
    fake = types.SimpleNamespace(virtual_memory=lambda: types.SimpleNamespace(available=123456789))
    monkeypatch.setitem(sys.modules, "psutil", fake)
    assert memory_size.available_memory_bytes() == 123456789


def test_clear_errors():
    with pytest.raises(RLGraphSpecError, match=r"FrameReplay\(frame_stack\): frame_stack must be a positive int"):
        FrameReplay(frame_stack=0)
    with pytest.raises(RLGraphSpecError, match=r"FrameReplay\(frame_capacity\)"):
        FrameReplay(frame_capacity=2.5)
    odd = Dict(states=FloatBox(shape=(2, 6)), actions=IntBox(2), rewards=FloatBox(), terminals=BoolBox(),
               next_states=FloatBox(shape=(2, 6)), add_batch_rank=True)
    with pytest.raises(RLGraphSpaceError, match=r"FrameReplay\(record_space\): the states' last axis must hold "
                                                r"frame_stack frames.*\[\.\.\., 4 \* C\]"):
        FrameReplay(record_space=odd)
    mismatched = Dict(states=FloatBox(shape=(4,)), actions=IntBox(2), rewards=FloatBox(), terminals=BoolBox(),
                      next_states=FloatBox(shape=(8,)), add_batch_rank=True)
    with pytest.raises(RLGraphSpaceError, match="box 'states' and 'next_states' of one shape"):
        FrameReplay(record_space=mismatched)
    memory = FrameReplay(capacity=4, record_space=atari_record_space())
    record = {"states": np.zeros((2, 84, 84, 4), np.uint8), "actions": np.zeros(2, np.int32),
              "rewards": np.zeros(2, np.float32), "terminals": np.zeros(2, bool),
              "next_states": np.zeros((2, 84, 84, 3), np.uint8)}
    with pytest.raises(RLGraphSpaceError, match=r"insert_records\(records\): leaf '/next_states' has the wrong shape"):
        memory.insert_records(record)
    record["next_states"] = np.zeros((2, 84, 84, 4), np.float32)
    with pytest.raises(RLGraphSpaceError, match=r"leaf '/next_states' has the wrong dtype.*Expected uint8"):
        memory.insert_records(record)


def test_save_and_load_continue_the_same_batches(tmp_path):
    """A saved and loaded frame replay (record space given or inferred) goes on exactly as a saved and
    loaded naive one; the file holds each stored frame once."""
    records, _ = make_records(seed=4, num_envs=2, n_step=3, steps=200)
    naive = MemPrioritizedReplay(capacity=23, alpha=0.6, beta=0.4, seed=1)
    frames = FrameReplay(capacity=23, alpha=0.6, beta=0.4, seed=1)
    assert_same_batches(naive, frames, records[:25], seed=1)
    naive_file, frames_file = naive.save(str(tmp_path / "naive")), frames.save(str(tmp_path / "frames"))
    naive = MemPrioritizedReplay(capacity=23, alpha=0.6, beta=0.4, seed=8)
    naive.load(naive_file)
    for record_space in (None, frames.record_space):
        loaded = FrameReplay(capacity=23, alpha=0.6, beta=0.4, seed=9, record_space=record_space)
        assert loaded.check_file(frames_file) == 23
        loaded.load(frames_file)
        assert loaded.pool.live == frames.pool.live == distinct_frames(naive, 4)
    assert_same_batches(naive, loaded, records[25:], seed=2)
    with np.load(frames_file) as stored:
        assert len(stored["frames"]) == frames.pool.live and stored["frame_ids"].shape == (23, 2, 4)


def test_files_of_another_memory_are_refused(tmp_path):
    records, _ = make_records(seed=4, num_envs=1, n_step=1, steps=40)
    frames = FrameReplay(capacity=8, seed=1)
    for record in records:
        frames.insert_records(record)
    path = frames.save(str(tmp_path / "frames"))
    with pytest.raises(RLGraphCheckpointError, match="frame replay of another capacity or frame_stack"):
        FrameReplay(capacity=8, frame_stack=2).load(path)
    with pytest.raises(RLGraphCheckpointError):
        MemPrioritizedReplay(capacity=8).load(path)
    whole = MemPrioritizedReplay(capacity=8, seed=1)  # (A checkpoint of an agent before store_frames_once.)
    whole.insert_records(records[0])
    with pytest.raises(RLGraphCheckpointError, match=r"FrameReplay.load: the file was written by a memory of whole "
                                                     r"states.*store_frames_once false"):
        FrameReplay(capacity=8).load(whole.save(str(tmp_path / "whole")))
    with np.load(path) as stored:
        values = dict(stored)
    values["frame_ids"][0, 0, 0] = len(values["frames"])  # An id past the frames.
    np.savez(str(tmp_path / "damaged.npz"), **values)
    with pytest.raises(RLGraphCheckpointError, match=r"FrameReplay.load: damaged frames or frame ids"):
        FrameReplay(capacity=8).load(str(tmp_path / "damaged.npz"))
    assert os.path.exists(path)


def _dqn(memory_type, backend="pytorch", sequence=2, state_space=None, **memory):
    from rlgraph.agents import Agent
    return Agent.from_spec(dict(
        type="dqn", network_spec=[{"type": "reshape", "flatten": True}, {"type": "dense", "units": 8}],
        preprocessing_spec=[{"type": "sequence", "sequence_length": sequence, "add_rank": False}] if sequence else None,
        memory_spec=dict({"type": memory_type, "capacity": 16, "alpha": 0.6, "beta": 0.4}, **memory), n_step=2,
        update_spec={"batch_size": 4, "steps_before_update": 0, "update_interval": 1}, execution_spec={"seed": 1}),
        state_space=state_space or IntBox(0, 256, shape=(3, 3, 1), dtype="uint8"), action_space=IntBox(2),
        backend=backend)


def _feed_the_same_stream(agents, steps=24):
    """Observes one random frame stream (episodes of 7 steps) in each agent and updates each after
    step 16; returns each agent's update losses."""
    rng = np.random.RandomState(0)
    states = [agent.preprocess_states(np.zeros((3, 3, 1), np.uint8)) for agent in agents]
    losses = [[] for _ in agents]
    for t in range(steps):
        frame, reward, terminal = rng.randint(0, 256, size=(3, 3, 1)).astype(np.uint8), rng.rand(), t % 7 == 6
        for i, agent in enumerate(agents):
            next_state = agent.preprocess_states(frame)
            agent.observe(states[i], np.int64(t % 2), None, reward, next_state, terminal)
            states[i] = next_state
            if terminal:
                agent.reset()
                states[i] = agent.preprocess_states(frame)
            if t >= 16:
                losses[i].append(agent.update()[1])
    return losses


def test_dqn_learns_the_same_from_both_memories(caplog, tmp_path):
    """A DQN agent with memory_spec "frame-replay" (frame_stack from its "sequence" preprocessor) is
    allocated and logged at build, learns exactly as with "mem-prioritized-replay", and its
    checkpoint holds the replay."""
    with caplog.at_level(logging.INFO, logger="rlgraph.components.memories.frame_replay"):
        frames = _dqn("frame-replay")
    assert isinstance(frames.replay.memory, FrameReplay) and frames.replay.memory.frame_stack == 2
    assert "FrameReplay: capacity 16 (33 frames of (3, 3, 1) uint8, 2 per state)" in caplog.text
    naive = _dqn("mem-prioritized-replay", store_frames_once=False)
    assert type(naive.replay.memory) is MemPrioritizedReplay
    losses = _feed_the_same_stream((naive, frames))
    assert frames.memory_size() == naive.memory_size() == 16
    assert len(losses[0]) == 8 and np.array_equal(losses[0], losses[1])
    frames.store_model(str(tmp_path))
    restored = _dqn("frame-replay")
    restored.load_model(str(tmp_path))
    assert restored.memory_size() == 16 and restored.replay.memory.pool.live == frames.replay.memory.pool.live


def test_a_numpy_memory_of_stacked_frames_stores_each_frame_once_by_itself(backend, caplog):
    """"mem-prioritized-replay" of image states stacked by a "sequence" preprocessor becomes a
    FrameReplay (store_frames_once "auto"), logged, and learns exactly as the whole-state memory."""
    with caplog.at_level(logging.INFO, logger="rlgraph.agents.replay_access"):
        auto = _dqn("mem_prioritized_replay", backend=backend)
    assert isinstance(auto.replay.memory, FrameReplay) and auto.replay.memory.frame_stack == 2
    assert (auto.replay.memory.capacity, auto.replay.memory.alpha, auto.replay.memory.beta) == (16, 0.6, 0.4)
    assert "the states are stacks of 2 frames, so a FrameReplay stores each frame once" in caplog.text
    plain = _dqn("mem-prioritized-replay", backend=backend, store_frames_once=False)
    assert type(plain.replay.memory) is MemPrioritizedReplay
    losses = _feed_the_same_stream((plain, auto))
    assert len(losses[0]) == 8 and np.array_equal(losses[0], losses[1])
    assert auto.replay.memory.pool.live < 2 * 2 * 16  # (Frames shared by consecutive states, once each.)


def test_which_numpy_memories_store_frames_once():
    # Known stacks of images: the "sequence" length, or memory_spec.frame_stack (an env's stack).
    two = IntBox(0, 256, shape=(3, 3, 2), dtype="uint8")
    assert _dqn("mem-prioritized-replay", sequence=None, frame_stack=2, state_space=two).replay.memory.frame_stack == 2
    always = _dqn("mem-prioritized-replay", sequence=None, state_space=IntBox(0, 256, shape=(3, 3, 4), dtype="uint8"),
                  store_frames_once=True)
    assert isinstance(always.replay.memory, FrameReplay) and always.replay.memory.frame_stack == 4
    # Unknown stacking, vectors, a stack that does not divide the last axis, or false: whole states.
    for agent in (_dqn("mem-prioritized-replay", sequence=None),
                  _dqn("mem-prioritized-replay", state_space=FloatBox(shape=(4,))),
                  _dqn("mem-prioritized-replay", sequence=None, frame_stack=2,
                       state_space=IntBox(0, 256, shape=(3, 3, 3), dtype="uint8")),
                  _dqn("mem-prioritized-replay", store_frames_once=False)):
        assert type(agent.replay.memory) is MemPrioritizedReplay, agent.preprocessed_state_space
    with pytest.raises(RLGraphSpecError, match=r"store_frames_once must be \"auto\", true or false.*'yes'"):
        _dqn("mem-prioritized-replay", store_frames_once="yes")
    with pytest.raises(RLGraphSpecError, match=r"memory_spec.frame_stack"):
        _dqn("mem-prioritized-replay", frame_stack=0)
    with pytest.raises(RLGraphSpecError, match=r"unknown key\(s\) \['store_frames_once'\]"):
        _dqn("frame-replay", store_frames_once=False)


def test_rlgraph_train_tells_the_memory_the_environments_frame_stack():
    """An Atari env stacks 4 frames itself: the run passes its frame_stack on, and a numpy memory of a
    config that names none stores each frame once (the config's own dict stays as it was)."""
    from rlgraph.agents.replay_access import with_env_frame_stack
    from rlgraph.execution.run_config import make_agent_and_env
    config = {"type": "dqn", "network_spec": [{"type": "reshape", "flatten": True}, {"type": "dense", "units": 2}],
              "memory_spec": {"type": "mem-prioritized-replay", "capacity": 8},
              "environment_spec": {"type": "atari", "game": "Pong", "frame_stack": 4}, "backend": "pytorch"}
    agent, _ = make_agent_and_env(config)
    assert isinstance(agent.replay.memory, FrameReplay) and agent.replay.memory.frame_stack == 4
    assert config["memory_spec"] == {"type": "mem-prioritized-replay", "capacity": 8}
    agent.terminate()
    spec = {"memory_spec": {"type": "replay-memory"}}
    assert with_env_frame_stack(spec, 4) is spec  # (An in-graph memory samples otherwise: left as it is.)
    spec = {"memory_spec": {"type": "frame-replay", "frame_stack": 2}}
    assert with_env_frame_stack(spec, 4) is spec and with_env_frame_stack({}, 4) == {}


def test_apex_shards_of_stacked_frames_store_each_frame_once():
    from rlgraph.execution.ray.apex.replay_shard import resolve_shard_memory_spec
    from rlgraph.execution.ray.specs import split_ray_spec
    _, spec = split_ray_spec({"type": "apex", "execution_spec": {}})
    plain = spec["apex_replay_spec"]["memory_spec"]
    assert "type" not in plain and (plain["store_frames_once"], plain["frame_stack"]) == ("auto", None)
    images = _dqn("mem-prioritized-replay", sequence=None, state_space=IntBox(0, 256, shape=(3, 3, 4),
                                                                             dtype="uint8"))
    assert resolve_shard_memory_spec(plain, images, env_frame_stack=4) == dict(
        {k: v for k, v in plain.items() if k not in ("store_frames_once", "frame_stack")},
        type="frame-replay", frame_stack=4, frame_capacity=None, compress=False)
    for agent, env_stack, store in ((images, None, "auto"), (images, 4, False), (images, 3, "auto")):
        resolved = resolve_shard_memory_spec(dict(plain, store_frames_once=store), agent, env_stack)
        assert resolved == {k: v for k, v in plain.items() if k not in ("store_frames_once", "frame_stack")}
    ray_spec = {"apex_replay_spec": {"memory_spec": {"type": "frame-replay", "store_frames_once": False}}}
    with pytest.raises(RLGraphSpecError, match=r"a frame replay stores each frame once"):
        split_ray_spec({"type": "apex", "execution_spec": {"ray_spec": ray_spec}})


def test_apex_shards_serve_the_same_batches_and_snapshots(tmp_path):
    """Ape-X: memory_spec type "frame-replay" is checked with its keys, and a frame shard serves
    the batches of a plain one, also after a restart from its snapshot."""
    from rlgraph.execution.ray.apex.replay_shard import ReplayShard
    from rlgraph.execution.ray.specs import split_ray_spec
    ray_spec = {"apex_replay_spec": {"memory_spec": {"type": "frame_replay", "capacity": 40, "frame_stack": 4}}}
    _, spec = split_ray_spec({"type": "apex", "execution_spec": {"ray_spec": ray_spec}})
    assert spec["apex_replay_spec"]["memory_spec"] == {"type": "frame-replay", "capacity": 40, "alpha": 0.6,
                                                       "beta": 0.4, "epsilon": 1e-6, "frame_stack": 4,
                                                       "frame_capacity": None, "compress": False}
    ray_spec["apex_replay_spec"]["memory_spec"] = {"capacity": 40, "frame_stacks": 4}
    with pytest.raises(RLGraphSpecError, match=r"unknown key\(s\) \['frame_stacks'\] in memory_spec"):
        split_ray_spec({"type": "apex", "execution_spec": {"ray_spec": ray_spec}})
    records, _ = make_records(seed=6, num_envs=2, n_step=3, steps=120)
    plain = {"capacity": 20, "alpha": 0.6, "beta": 0.4}
    framed = dict(plain, type="frame-replay", frame_stack=4, compress=True)  # (Snapshots of compressed frames too.)
    path = str(tmp_path / "shard.npz")
    naive = ReplayShard(0, plain, batch_size=4, min_sample_memory_size=1, seed=3)
    frames = ReplayShard(0, framed, batch_size=4, min_sample_memory_size=1, seed=3, snapshot_interval=25,
                         snapshot_path=path)
    rng = np.random.RandomState(1)
    for i, record in enumerate(records):
        if i == len(records) // 2:  # The shard restarts from its snapshot; the plain one reloads the same state.
            frames.snapshot()
            naive.memory.save(str(tmp_path / "naive.npz"))
            frames = ReplayShard(0, framed, batch_size=4, min_sample_memory_size=1, seed=3, restore_from=path)
            naive = ReplayShard(0, plain, batch_size=4, min_sample_memory_size=1, seed=3)
            naive.load(str(tmp_path / "naive.npz"))
        priorities = rng.exponential(size=len(record["rewards"]))
        assert naive.add({"records": record, "priorities": priorities}) == \
            frames.add({"records": record, "priorities": priorities})
        batches = naive.sample(), frames.sample()
        assert sorted(batches[0]) == sorted(batches[1])
        assert all(np.array_equal(batches[0][key], batches[1][key]) for key in batches[0])
        new = rng.exponential(size=4)
        naive.update_priorities(batches[0]["indices"], new)
        frames.update_priorities(batches[1]["indices"], new)
    assert isinstance(frames.memory, FrameReplay) and frames.memory.compress


def test_a_large_plain_memory_of_stacked_frames_points_to_the_frame_replay(caplog):
    from rlgraph.agents import Agent
    with caplog.at_level(logging.INFO, logger="rlgraph.agents.replay_access"):
        Agent.from_spec(dict(type="dqn", network_spec=[{"type": "reshape", "flatten": True},
                                                       {"type": "dense", "units": 4}],
                             memory_spec={"type": "mem-prioritized-replay", "capacity": 1_000_000}),
                        state_space=IntBox(0, 256, shape=(84, 84, 4), dtype="uint8"), action_space=IntBox(2),
                        backend="pytorch", auto_build=False)
    assert 'memory_spec type "frame-replay" would store each frame once, in ~7.5 GiB instead of ~52.6 GiB' \
        in caplog.text


def test_compressed_frames(monkeypatch):
    """Atari-like frames (a flat background, a few moving pixels) compress about 10x, the batches stay
    exact, and compressed bytes beyond what is available are refused before anything changes."""
    rng = np.random.RandomState(3)

    def frame(t):
        image = np.full((84, 84, 1), 87, np.uint8)
        image[(t * 3) % 80:(t * 3) % 80 + 4, 10:12] = 236  # The ball.
        image[rng.randint(70):, 76:80] = 92  # A paddle.
        return image
    stream = [frame(t) for t in range(40)]
    states = np.stack([np.concatenate([stream[max(i, 0)] for i in range(t - 3, t + 1)], -1) for t in range(39)])
    next_states = np.stack([np.concatenate([stream[i] for i in range(t - 2, t + 2)], -1) for t in range(3, 39)])
    record = {"states": states[3:], "next_states": next_states, "actions": np.zeros(36, np.int32),
              "rewards": np.zeros(36, np.float32), "terminals": np.zeros(36, bool)}
    naive = MemPrioritizedReplay(capacity=32, alpha=0.6, beta=0.4, seed=2)
    plain = FrameReplay(capacity=32, alpha=0.6, beta=0.4, seed=2)
    packed = FrameReplay(capacity=32, alpha=0.6, beta=0.4, seed=2, compress=True)
    for memory in (naive, plain, packed):
        memory.insert_records(record)
    live = packed.pool.live
    assert live == plain.pool.live == distinct_frames(naive, 4) > 30
    assert packed.pool.compressed_bytes * 10 < live * 84 * 84 and packed.nbytes * 5 < plain.nbytes
    assert packed.pool.capacity == plain.pool.capacity == 64  # (Sized up front for 32 + 2 + 16 frames: no growth.)
    batches = [m.get_records(16) for m in (naive, plain, packed)]
    for batch in batches[1:]:
        assert all(np.array_equal(batches[0][0][key], batch[0][key]) for key in batch[0])
        assert np.array_equal(batches[0][1], batch[1]) and np.array_equal(batches[0][2], batch[2])
    monkeypatch.setattr(type(packed.pool), "CHECK_BYTES", 1)
    monkeypatch.setattr(memory_size, "available_memory_bytes", lambda: 0)
    with pytest.raises(RLGraphSpecError, match=r"FrameReplay.insert_records: compressed frames beyond .* needs ~1 B"):
        packed.insert_records({key: value[:2] for key, value in record.items()})
    assert packed.pool.live == live and packed.size == 32
