"""Hostile checkpoints (issue 34, second pass): files the manifest does not list, decompression
bombs, aliased and improper manifest names, counters and random states out of range, a directory
swapped during the load, and `load_model` of a directory of checkpoints. Each crafted checkpoint is
refused with `RLGraphCheckpointError` and leaves the agent exactly as it was."""
import errno
import hashlib
import io
import json
import os
import pickle
import shutil
import threading
import zipfile

import numpy as np
import pytest
from test_agent_checkpoints import _edit_arrays, _edit_state, _rewrite

from rlgraph.agents import Agent
from rlgraph.agents import agent_checkpoints
from rlgraph.components.memories.mem_prioritized_replay import MemPrioritizedReplay
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.utils.checkpoint_dir import replace_directory, verify_checkpoint
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphCheckpointWriteError

SPEC = {"type": "dqn", "network_spec": [{"type": "dense", "units": 4}], "dueling_q": False,
        "memory_spec": {"type": "replay-memory", "capacity": 8}, "observe_spec": {"buffer_size": 4}}
SPACES = dict(state_space=FloatBox(shape=(4,)), action_space=IntBox(2))


def _agent(backend, seed=1, **overrides):
    return Agent.from_spec(dict(SPEC, execution_spec={"seed": seed}, **overrides), backend=backend, **SPACES)


def _observe(agent, count, seed=0):
    rng = np.random.RandomState(seed)
    for _ in range(count):
        state = rng.normal(size=4).astype(np.float32)
        agent.observe(state, int(rng.randint(2)), None, 1.0, state, False)


def _stored(backend, path, seed=1, steps=1, add_timestep=False):
    agent = _agent(backend, seed=seed)
    _observe(agent, steps, seed)
    return agent, agent.store_model(str(path), add_timestep=add_timestep)


def _manifest(path):
    with open(os.path.join(path, "manifest.json")) as handle:
        return json.load(handle)


def _write_manifest(path, manifest):
    with open(os.path.join(path, "manifest.json"), "w") as handle:
        json.dump(manifest, handle)


def _model_files(path):
    return sorted(n for n in _manifest(path)["files"] if n.startswith("model."))


def _state(agent):
    return ({k: v.copy() for k, v in agent.graph_executor.get_weights().items()},
            (agent.timesteps, agent.num_updates, agent.max_timesteps,
             {k: len(v) for k, v in agent.buffers.buffers.items()}))


def _assert_unchanged(agent, before):
    weights, counters = _state(agent)
    assert counters == before[1]
    assert sorted(weights) == sorted(before[0])
    for name, value in before[0].items():
        np.testing.assert_array_equal(weights[name], value, err_msg=name)


def _assert_refused(agent, path, match):
    before = _state(agent)
    with pytest.raises(RLGraphCheckpointError, match=match):
        agent.load_model(path)
    _assert_unchanged(agent, before)


# --- 3. Every file that a load reads is listed and verified ---------------------------------------
def test_model_missing_from_the_manifest_is_never_read(tmp_path, backend):
    victim, path = _stored(backend, tmp_path / "a", seed=1)
    _, other = _stored(backend, tmp_path / "b", seed=2)
    manifest = _manifest(path)
    for name in _model_files(path):  # Unlisted, and another agent's model put in its place.
        del manifest["files"][name]
        shutil.copyfile(os.path.join(other, name), os.path.join(path, name))
    _write_manifest(path, manifest)
    _assert_refused(victim, path, "'model.* is not listed in the manifest")


def test_unlisted_or_listed_fifo_is_refused_without_blocking(tmp_path, backend):
    victim, path = _stored(backend, tmp_path / "a")
    fifo = os.path.join(path, "agent_state.npz")
    os.remove(fifo)
    os.mkfifo(fifo)
    # (Were the FIFO opened, this thread would release the reader with an empty file after a while.)
    done = threading.Event()

    def release():
        released = False
        while not released and not done.wait(0.05):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
                released = True
            except OSError:
                pass
    thread = threading.Thread(target=release, daemon=True)
    thread.start()
    try:
        _assert_refused(victim, path, "'agent_state.npz' is not a regular file")
        manifest = _manifest(path)
        del manifest["files"]["agent_state.npz"]
        _write_manifest(path, manifest)
        _assert_refused(victim, path, "'agent_state.npz' is not listed in the manifest")
    finally:
        done.set()
        thread.join()


# --- 4. Decompression bombs --------------------------------------------------------------------------
def _npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def _zip(members, deflated):
    """An .npz of .npy `members`, those named in `deflated` compressed (np.savez stores all)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name + ".npy", data,
                             compress_type=zipfile.ZIP_DEFLATED if name in deflated else zipfile.ZIP_STORED)
    return buffer.getvalue()


def _npz_members(data):
    with np.load(io.BytesIO(data), allow_pickle=False) as arrays:
        return {k: _npy(arrays[k]) for k in arrays.files}


@pytest.fixture
def inflated_bytes(monkeypatch):
    """Counts the bytes read out of zip members (decompressed)."""
    count = [0]
    read = zipfile.ZipExtFile.read

    def counting(self, n=-1):
        data = read(self, n)
        count[0] += len(data)
        return data
    monkeypatch.setattr(zipfile.ZipExtFile, "read", counting)
    return count


BOMB = 64 << 20  # 64 MiB of zeros: 64 KiB compressed.


def test_agent_state_bomb_is_refused_before_it_is_decompressed(tmp_path, backend, inflated_bytes):
    victim, path = _stored(backend, tmp_path / "a")
    with open(os.path.join(path, "agent_state.npz"), "rb") as handle:
        members = _npz_members(handle.read())
    members["buffers/0/states"] = _npy(np.zeros((BOMB // 16, 4), np.float32))
    _rewrite(path, "agent_state.npz", _zip(members, ["buffers/0/states"]))
    inflated_bytes[0] = 0
    _assert_refused(victim, path, "buffers/0/states' is missing or damaged: it does not fit")
    assert inflated_bytes[0] < 1 << 20


def test_member_declaring_more_bytes_than_its_header_is_refused(tmp_path, backend, inflated_bytes):
    victim, path = _stored(backend, tmp_path / "a")
    with open(os.path.join(path, "agent_state.npz"), "rb") as handle:
        members = _npz_members(handle.read())
    members["rng/numpy_keys"] += bytes(BOMB)  # A valid header, then 64 MiB no array needs.
    _rewrite(path, "agent_state.npz", _zip(members, ["rng/numpy_keys"]))
    inflated_bytes[0] = 0
    _assert_refused(victim, path, "'rng/numpy_keys' declares another size than its header")
    assert inflated_bytes[0] < 1 << 20


def test_python_memory_bomb_is_refused(tmp_path, backend, inflated_bytes):
    victim = _agent(backend, memory_spec={"type": "mem-prioritized-replay", "capacity": 8})
    _observe(victim, 5)
    path = victim.store_model(str(tmp_path / "a"), add_timestep=False)
    with open(os.path.join(path, "python_memory.npz"), "rb") as handle:
        members = _npz_members(handle.read())
    members["priorities"] = _npy(np.zeros(BOMB // 8))
    _rewrite(path, "python_memory.npz", _zip(members, ["priorities"]))
    inflated_bytes[0] = 0
    before = victim.memory_size()
    _assert_refused(victim, path, "'priorities' is missing or damaged: it does not fit")
    assert inflated_bytes[0] < 1 << 20 and victim.memory_size() == before


def test_memory_file_of_unknown_record_space_must_not_be_compressed(tmp_path, inflated_bytes):
    """An Ape-X shard (record space not known yet) bounds its records by the file's own size."""
    memory = MemPrioritizedReplay(capacity=4, seed=0)
    memory.insert_records({"s": np.ones((3, 2), np.float32), "a": np.arange(3)})
    path = memory.save(str(tmp_path / "shard.npz"))
    with open(path, "rb") as handle:
        data = handle.read()
    assert MemPrioritizedReplay(capacity=4).check_file(data) == 3  # As written: stored, accepted.
    members = _npz_members(data)
    members["record:/s"] = _npy(np.zeros((4, BOMB // 16), np.float32))
    inflated_bytes[0] = 0
    with pytest.raises(RLGraphCheckpointError, match="free shape is compressed"):
        MemPrioritizedReplay(capacity=4).check_file(_zip(members, ["record:/s"]))
    known = MemPrioritizedReplay(capacity=4, record_space=Dict(s=FloatBox(shape=(2,)), a=IntBox(3)))
    with pytest.raises(RLGraphCheckpointError, match="records do not fit this memory"):
        known.load(_zip(members, ["record:/s"]))
    assert inflated_bytes[0] < 1 << 20


# --- 5. and 6. Manifest names ------------------------------------------------------------------------
def _junk(path):
    """Writes a 1 MiB file "junk.bin" into checkpoint `path` (not in its manifest); returns its bytes."""
    data = bytes(1 << 20)
    with open(os.path.join(path, "junk.bin"), "wb") as handle:
        handle.write(data)
    return data


@pytest.mark.parametrize("names", [["d0/../junk.bin", "d1/../junk.bin"], ["./junk.bin"], ["a//junk.bin"],
                                   ["junk\x00.bin"], ["/etc/passwd"], ["a\\..\\junk.bin"]])
def test_improper_manifest_names_are_refused(tmp_path, names):
    victim, path = _stored("pytorch", tmp_path / "a")
    data = _junk(path)
    manifest = _manifest(path)
    for name in names:
        manifest["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    _write_manifest(path, manifest)
    _assert_refused(victim, path, "names a file outside the checkpoint or by an improper name")


def test_hard_linked_aliases_are_read_and_hashed_once(tmp_path, monkeypatch):
    from rlgraph.utils import checkpoint_files
    victim, path = _stored("pytorch", tmp_path / "a")
    data = _junk(path)
    manifest = _manifest(path)
    for i in range(50):
        os.link(os.path.join(path, "junk.bin"), os.path.join(path, f"alias-{i}.bin"))
        manifest["files"][f"alias-{i}.bin"] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    _write_manifest(path, manifest)
    hashed = [0]
    real = hashlib.sha256

    def counting(data=b""):
        hashed[0] += len(data)
        return real(data)
    monkeypatch.setattr(checkpoint_files.hashlib, "sha256", counting)
    files = checkpoint_files.read_checkpoint(path, "agent", "test")
    inodes = {os.stat(os.path.join(path, n)).st_ino: os.path.getsize(os.path.join(path, n)) for n in manifest["files"]}
    assert hashed[0] == sum(inodes.values()) < 2 << 20 and files.read("alias-49.bin") == data
    victim.load_model(path)


# --- 7. Counters and random states ---------------------------------------------------------------
@pytest.mark.parametrize("key,value", [("max_timesteps", 10 ** 400), ("timesteps", 10 ** 4000),
                                       ("timesteps", 2 ** 63), ("num_updates", 2 ** 64)],
                         ids=["max_timesteps-1e400", "timesteps-1e4000", "timesteps-2**63", "num_updates-2**64"])
def test_counters_beyond_int64_are_refused(tmp_path, backend, key, value):
    victim, path = _stored(backend, tmp_path / "a")

    def edit(state):
        if key == "max_timesteps":
            state["max_timesteps"] = value
        else:
            state["counters"][key] = value
    _edit_state(path, edit)
    _assert_refused(victim, path, f"'{'counters.' if key != 'max_timesteps' else ''}{key}' is damaged")


def test_degenerate_numpy_random_state_is_refused(tmp_path, backend):
    victim, path = _stored(backend, tmp_path / "a")
    _edit_arrays(path, lambda arrays: arrays.update({"rng/numpy_keys": np.zeros(624, np.uint32)}))
    _assert_refused(victim, path, "degenerate")
    _edit_arrays(path, lambda arrays: arrays.update({"rng/numpy_keys": np.arange(624, dtype=np.uint32)}))
    _edit_state(path, lambda state: state["rng"]["numpy"].update(pos=625))
    _assert_refused(victim, path, "random generator position")


def test_short_torch_random_state_is_refused_before_anything_changes(tmp_path):
    victim, path = _stored("pytorch", tmp_path / "a", steps=3)
    _observe(victim, 1, seed=5)  # The victim differs from the checkpoint (counters, buffers).
    _edit_arrays(path, lambda arrays: arrays.update({"rng/backend": np.arange(10, dtype=np.uint8)}))
    _assert_refused(victim, path, "pytorch random generator state is damaged")


# --- 8. A checkpoint replaced while it loads ----------------------------------------------------------
def test_directory_swapped_after_verification_is_not_read(tmp_path, backend, monkeypatch):
    victim = _agent(backend, seed=3)
    first, path = _stored(backend, tmp_path / "ckpt", seed=1, steps=1)
    _, other = _stored(backend, tmp_path / "other", seed=2, steps=3)
    # The verifying step returns, then the directory is swapped atomically (as a live run rewriting
    # `final` does); what the load then restores must be the checkpoint it verified.
    name = "read_checkpoint" if hasattr(agent_checkpoints, "read_checkpoint") else "verify_checkpoint"
    verify = getattr(agent_checkpoints, name)

    def verify_then_swap(*args, **kwargs):
        result = verify(*args, **kwargs)
        replace_directory(other, path)
        return result
    monkeypatch.setattr(agent_checkpoints, name, verify_then_swap)
    victim.load_model(path)
    assert victim.timesteps == 1 and _manifest(path)["step"] == 3
    _assert_unchanged(victim, _state(first))


# --- 9. load_model of a directory of checkpoints ----------------------------------------------------
def test_load_model_of_a_directory_loads_its_newest_checkpoint(tmp_path, backend):
    agent = _agent(backend, seed=1)
    _observe(agent, 2)
    agent.store_model(str(tmp_path / "run"))  # run/step-2
    _observe(agent, 9, seed=1)
    agent.store_model(str(tmp_path / "run"))  # run/step-11
    newest = _state(agent)
    os.makedirs(tmp_path / "run" / "notes")  # Not a checkpoint: ignored.
    os.makedirs(tmp_path / "run" / ".step-20.tmp-1-abcd")  # A save in progress: ignored.
    victim = _agent(backend, seed=4)
    victim.load_model(str(tmp_path / "run"))
    _assert_unchanged(victim, newest)
    assert sorted(os.listdir(tmp_path / "run")) == [".step-20.tmp-1-abcd", "notes", "step-11", "step-2"]
    os.makedirs(tmp_path / "empty")
    _assert_refused(victim, str(tmp_path / "empty"), "no checkpoint in")


# --- store_model on a full disk ---------------------------------------------------------------------
def test_store_model_on_a_full_disk_is_a_checkpoint_error_and_keeps_the_previous_checkpoint(
        tmp_path, backend, monkeypatch):
    """A direct `store_model` whose write fails with ENOSPC raises `RLGraphCheckpointWriteError`: an
    `RLGraphCheckpointError` that says the disk is full, names the method and the path, and is also
    the `OSError` (errno ENOSPC) for code that handles those; the checkpoint that was at the path
    is intact and no temporary directory is left."""
    agent, path = _stored(backend, tmp_path / "ckpt", steps=3)
    before = {name: os.path.getsize(os.path.join(path, name)) for name in os.listdir(path)}
    _observe(agent, 2, seed=5)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "agent_state.json")
    monkeypatch.setattr(agent_checkpoints, "write_json", full)
    with pytest.raises(RLGraphCheckpointWriteError) as info:
        agent.store_model(path, add_timestep=False, extra_files={"note.json": {"a": 1}})
    error = info.value
    assert isinstance(error, RLGraphCheckpointError) and isinstance(error, OSError)
    assert error.errno == errno.ENOSPC and error.filename == "agent_state.json"
    assert str(error).startswith(f"{agent.name}.store_model: cannot write the checkpoint {path}: the disk is full")
    assert "free space on its disk" in str(error)
    copy = pickle.loads(pickle.dumps(error))  # (Errors cross process boundaries on Ray.)
    assert str(copy) == str(error) and copy.errno == errno.ENOSPC
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]
    assert {name: os.path.getsize(os.path.join(path, name)) for name in os.listdir(path)} == before
    verify_checkpoint(path, None, "test")
