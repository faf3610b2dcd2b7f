"""Checkpoint directories (`rlgraph/utils/checkpoint_dir.py`): atomic saves that survive SIGKILL on both
backends, refusal to replace what is not a checkpoint, and a manifest that is checked before use."""
import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from rlgraph.agents import Agent
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.utils.checkpoint_dir import CheckpointWriter, verify_checkpoint
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = {"type": "dqn", "network_spec": [{"type": "dense", "units": 8}], "dueling_q": False,
        "memory_spec": {"type": "replay-memory", "capacity": 32}, "observe_spec": {"buffer_size": 4},
        "update_spec": {"batch_size": 4}, "execution_spec": {"seed": 1}}


def _agent(backend, **overrides):
    return Agent.from_spec(dict(SPEC, **overrides), backend=backend, state_space=FloatBox(shape=(4,)),
                           action_space=IntBox(3))


def _observe(agent, steps, seed=0):
    rng = np.random.RandomState(seed)
    for t in range(steps):
        state = rng.normal(size=4).astype(np.float32)
        agent.observe(state, agent.get_action(state), None, 1.0, rng.normal(size=4).astype(np.float32), t % 3 == 2)


def _siblings(path):
    return sorted(os.listdir(os.path.dirname(path)))


def test_replacing_a_checkpoint_leaves_no_temporaries(backend, tmp_path):
    agent = _agent(backend)
    _observe(agent, 4)
    path = agent.store_model(str(tmp_path / "ckpt"), add_timestep=False)
    assert verify_checkpoint(path, "agent", "test")["step"] == 4
    _observe(agent, 5, seed=1)
    assert agent.store_model(path, add_timestep=False) == path
    assert verify_checkpoint(path, "agent", "test")["step"] == 9
    assert _siblings(path) == ["ckpt"]
    twin = _agent(backend)
    twin.load_model(path)
    assert twin.timesteps == 9


def test_store_never_replaces_what_is_not_a_checkpoint(backend, tmp_path):
    agent = _agent(backend)
    a_file = tmp_path / "notes.txt"
    a_file.write_text("keep me")
    with pytest.raises(RLGraphCheckpointError, match="not a directory"):
        agent.store_model(str(a_file), add_timestep=False)
    assert a_file.read_text() == "keep me"
    folder = tmp_path / "home"
    folder.mkdir()
    (folder / "thesis.tex").write_text("keep me too")
    with pytest.raises(RLGraphCheckpointError, match="holds other files"):
        agent.store_model(str(folder), add_timestep=False)
    assert sorted(os.listdir(folder)) == ["thesis.tex"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert agent.store_model(str(empty), add_timestep=False) == str(empty)


def test_a_failed_save_keeps_the_previous_checkpoint(backend, tmp_path, monkeypatch):
    import rlgraph.agents.agent_checkpoints as agent_module
    agent = _agent(backend)
    _observe(agent, 4)
    path = agent.store_model(str(tmp_path / "ckpt"), add_timestep=False)
    before = json.load(open(os.path.join(path, "manifest.json")))

    def broken(directory, _agent):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(agent_module, "save_agent_state", broken)
    _observe(agent, 3, seed=2)
    with pytest.raises(OSError):
        agent.store_model(path, add_timestep=False)
    assert json.load(open(os.path.join(path, "manifest.json"))) == before
    assert _siblings(path) == ["ckpt"]  # The temporary directory is gone.
    verify_checkpoint(path, "agent", "test")


def test_manifest_cannot_point_outside_the_checkpoint(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("x")
    with CheckpointWriter(str(tmp_path / "ckpt"), "agent", "test") as writer:
        open(writer.path("a.bin"), "wb").write(b"abc")
        path = writer.commit(0)
    manifest_file = os.path.join(path, "manifest.json")
    manifest = json.load(open(manifest_file))
    manifest["files"]["../secret.txt"] = {"bytes": 1, "sha256": hashlib.sha256(b"x").hexdigest()}
    json.dump(manifest, open(manifest_file, "w"))
    with pytest.raises(RLGraphCheckpointError, match="outside the checkpoint"):
        verify_checkpoint(path, "agent", "test")


def test_manifest_kind_and_size_limits(tmp_path):
    with CheckpointWriter(str(tmp_path / "ckpt"), "apex-executor", "test") as writer:
        open(writer.path("a.bin"), "wb").write(b"abc")
        path = writer.commit(3)
    with pytest.raises(RLGraphCheckpointError, match="holds something else"):
        verify_checkpoint(path, "agent", "test")
    assert verify_checkpoint(path, None, "test")["kind"] == "apex-executor"
    with open(os.path.join(path, "manifest.json"), "w") as handle:
        handle.write(" " * (17 * 1024 * 1024))
    with pytest.raises(RLGraphCheckpointError, match="too large"):
        verify_checkpoint(path, None, "test")


# --- SIGKILL during a save -------------------------------------------------------------------------------------

# The child builds an agent whose replay memory holds ~130 MB (4,000 records of 4,096 floats, states and
# next states), saves it once, reports "ready", then saves again over the same directory.
_CHILD = """
import sys
import numpy as np
from rlgraph.agents import Agent
from rlgraph.spaces import FloatBox, IntBox
backend, path = sys.argv[1:3]
agent = Agent.from_spec({SPEC}, backend=backend, state_space=FloatBox(shape=(4096,)), action_space=IntBox(2))
state = np.zeros(4096, np.float32)
agent.observe(state, 0, None, 1.0, state, True)
agent.store_model(path, add_timestep=False)
agent.observe(state, 1, None, 2.0, state, True)
print("ready", flush=True)
agent.store_model(path, add_timestep=False)
print("saved", flush=True)
"""
_BIG = dict(SPEC, memory_spec={"type": "replay-memory", "capacity": 4000}, network_spec=[{"type": "dense", "units": 4}])


def test_sigkill_during_store_model_leaves_the_previous_checkpoint(backend, tmp_path):
    path = str(tmp_path / "ckpt")
    script = _CHILD.replace("{SPEC}", repr(_BIG))
    for attempt in range(3):
        child = subprocess.Popen([sys.executable, "-c", script, backend, path], cwd=REPO, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        try:
            assert child.stdout.readline().strip() == "ready", child.stderr.read()[-3000:]
            deadline = time.monotonic() + 60
            while not any(n.startswith(".ckpt.tmp-") for n in os.listdir(tmp_path)) and time.monotonic() < deadline:
                time.sleep(0.001)
            os.kill(child.pid, signal.SIGKILL)
        finally:
            child.kill()
            child.wait(timeout=60)
            child.stdout.close()
            child.stderr.close()
        if any(n.startswith(".ckpt.tmp-") for n in os.listdir(tmp_path)):
            break  # Killed in the middle of the second save.
    else:
        pytest.fail("the second save always finished before the kill")
    # The first checkpoint is intact and loads; its step is the first save's.
    assert verify_checkpoint(path, "agent", "test")["step"] == 1
    agent = Agent.from_spec(_BIG, backend=backend, state_space=FloatBox(shape=(4096,)), action_space=IntBox(2))
    agent.load_model(path)
    assert agent.timesteps == 1 and agent.memory_size() == 1
    # The next save removes the dead process's temporary directory.
    agent.store_model(path, add_timestep=False)
    assert sorted(os.listdir(tmp_path)) == ["ckpt"]


def test_deeply_nested_checkpoint_json_is_refused(tmp_path):
    with CheckpointWriter(str(tmp_path / "ckpt"), "agent", "test") as writer:
        open(writer.path("a.bin"), "wb").write(b"abc")
        path = writer.commit(0)
    manifest_file = os.path.join(path, "manifest.json")
    manifest = json.load(open(manifest_file))
    manifest["files"]["a.bin"]["extra"] = json.loads("[" * 40 + "]" * 40)
    json.dump(manifest, open(manifest_file, "w"))
    with pytest.raises(RLGraphCheckpointError, match="nests deeper"):
        verify_checkpoint(path, "agent", "test")
