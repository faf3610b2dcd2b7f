"""Agent checkpoints: `store_model` / `load_model` round trips (same process and a new one), exact
resumption on PyTorch, and damaged, crafted or mismatched checkpoints (RLGraphCheckpointError, agent
unchanged). Atomic saves and the kill-during-save test are in test_checkpoint_files.py.
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from rlgraph.agents import Agent
from rlgraph.backend_system import is_backend_installed
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphError

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# JSON-able, so that a new process can build the same agent from a file.
SPEC = {"type": "dqn", "network_spec": [{"type": "dense", "units": 8}], "dueling_q": False,
        "memory_spec": {"type": "replay-memory", "capacity": 32}, "observe_spec": {"buffer_size": 4},
        "update_spec": {"batch_size": 4, "sync_interval": 3}, "execution_spec": {"seed": 1, "max_timesteps": 40},
        "optimizer_spec": {"type": "adam", "learning_rate": 0.01}}
SPACES = dict(state_space=FloatBox(shape=(4,)), action_space=IntBox(3))


def _agent(backend, seed=1, units=8, **overrides):
    spec = dict(SPEC, execution_spec=dict(SPEC["execution_spec"], seed=seed),
                network_spec=[{"type": "dense", "units": units}], **overrides)
    return Agent.from_spec(spec, backend=backend, **SPACES)


def _data(steps, seed=0):
    """Env data for `steps` steps: states [steps + 1, 4], rewards, terminals (every 5th step)."""
    rng = np.random.RandomState(seed)
    return (rng.normal(size=(steps + 1, 4)).astype(np.float32), rng.uniform(-1, 1, steps).astype(np.float32),
            np.arange(steps) % 5 == 4)


def _run(agent, data, start, stop):
    """Acts (with exploration), observes and updates (once the memory has records) for steps [start, stop).

    Returns:
        (actions, losses) of those steps.
    """
    states, rewards, terminals = data
    actions, losses = [], []
    for t in range(start, stop):
        action = agent.get_action(states[t])
        agent.observe(states[t], action, None, rewards[t], states[t + 1], terminals[t])
        actions.append(int(action))
        if agent.memory_size() > 0:
            loss, _ = agent.update()
            losses.append(float(loss))
    return actions, losses


def _all_weights(agent):
    return agent.graph_executor.get_weights()


def _assert_same_weights(a, b):
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)


# One trained agent and checkpoint per backend for the whole module (tests must not change the agent;
# each test gets its own copy of the checkpoint directory).
_TRAINED = {}


@pytest.fixture
def trained(backend, tmp_path_factory, tmp_path):
    """An agent after 7 steps and a copy of its checkpoint ("<tmp_path>/ckpt/step-7").

    Steps 0-3 fill the buffer of 4 (memory 4), step 4 is terminal (memory 5), steps 5 and 6 wait
    in the buffer; updates after steps 3..6 (4 updates, at timesteps 4..7) with target syncs at
    timesteps 4 and 7 (sync_interval 3).
    """
    if backend not in _TRAINED:
        agent = _agent(backend)
        _run(agent, _data(7), 0, 7)
        _TRAINED[backend] = agent, agent.store_model(str(tmp_path_factory.mktemp(f"trained-{backend}")))
    agent, source = _TRAINED[backend]
    path = str(tmp_path / "ckpt" / os.path.basename(source))
    shutil.copytree(source, path)
    return agent, path


def test_store_and_load_in_the_same_process(trained, backend, tmp_path):
    agent, path = trained
    assert os.path.basename(path) == "step-7"  # add_timestep=True: "<path>/step-<timesteps>".
    assert agent.timesteps == 7 and agent.num_updates == 4 and agent.memory_size() == 5
    assert agent.buffers.pending() == 2 and agent.last_sync_timestep == 7

    twin = _agent(backend, seed=99)
    probe = np.random.RandomState(1).normal(size=(6, 4)).astype(np.float32)
    assert not np.allclose(twin.get_q_values(probe), agent.get_q_values(probe))
    twin.load_model(path)
    np.testing.assert_array_equal(twin.get_q_values(probe), agent.get_q_values(probe))
    np.testing.assert_array_equal(twin.get_action(probe, use_exploration=False),
                                  agent.get_action(probe, use_exploration=False))
    # Everything else comes back too: target net, optimizer slots, memory, counters, buffers.
    _assert_same_weights(_all_weights(twin), _all_weights(agent))
    assert (twin.timesteps, twin.num_updates, twin.last_sync_timestep) == (7, 4, 7)
    assert twin.memory_size() == 5 and twin.buffers.pending() == 2
    assert [t.reward for t in twin.buffers.buffers[None]] == [t.reward for t in agent.buffers.buffers[None]]


def test_store_into_saver_directory(backend, tmp_path):
    agent = _agent(backend, saver_spec={"directory": str(tmp_path / "saves")})
    path = agent.store_model(add_timestep=False)
    assert path == str(tmp_path / "saves")
    assert sorted(f for f in os.listdir(path) if not f.startswith("model")) == \
        ["agent_state.json", "agent_state.npz", "manifest.json"]
    agent.load_model()  # From saver_spec.directory too.
    with pytest.raises(RLGraphError, match="no checkpoint path"):
        _agent(backend).store_model()


def test_load_in_a_new_process(trained, backend, tmp_path):
    agent, path = trained
    spec_file = tmp_path / "agent.json"
    spec_file.write_text(json.dumps(dict(SPEC, execution_spec={"seed": 5})))
    probe = np.random.RandomState(2).normal(size=(5, 4)).astype(np.float32)
    np.save(tmp_path / "probe.npy", probe)
    script = (
        "import json, sys\n"
        "import numpy as np\n"
        "from rlgraph.agents import Agent\n"
        "from rlgraph.spaces import FloatBox, IntBox\n"
        "spec_file, path, probe_file, backend = sys.argv[1:5]\n"
        "agent = Agent.from_spec(spec_file, state_space=FloatBox(shape=(4,)), action_space=IntBox(3),"
        " backend=backend)\n"
        "agent.load_model(path)\n"
        "probe = np.load(probe_file)\n"
        "print(json.dumps({'actions': agent.get_action(probe, use_exploration=False).tolist(),"
        " 'q': agent.get_q_values(probe).tolist(), 'timesteps': agent.timesteps,"
        " 'memory_size': agent.memory_size()}))\n")
    result = subprocess.run([sys.executable, "-c", script, str(spec_file), path, str(tmp_path / "probe.npy"), backend],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    out = json.loads(result.stdout.strip().splitlines()[-1])
    assert out["actions"] == agent.get_action(probe, use_exploration=False).tolist()
    np.testing.assert_array_equal(np.asarray(out["q"], np.float32), agent.get_q_values(probe))
    assert out["timesteps"] == 7 and out["memory_size"] == 5


def test_pytorch_resumes_exactly(tmp_path):
    if not is_backend_installed("pytorch"):
        pytest.skip(reason="PyTorch is not installed")
    data = _data(20)
    first = _agent("pytorch")
    _run(first, data, 0, 8)
    path = first.store_model(str(tmp_path), add_timestep=False)
    # The uninterrupted run: exploration draws, memory samples and steps after the checkpoint.
    actions, losses = _run(first, data, 8, 20)
    assert len(losses) == 12 and len(set(actions)) > 1

    resumed = _agent("pytorch", seed=123)
    resumed.load_model(path)
    resumed_actions, resumed_losses = _run(resumed, data, 8, 20)
    assert resumed_actions == actions
    assert resumed_losses == losses  # Exact: same weights, memory, buffers and random states.
    _assert_same_weights(_all_weights(resumed), _all_weights(first))
    assert resumed.num_updates == first.num_updates == 17  # Steps 3..19.


# --- Damaged and mismatched checkpoints --------------------------------------------------------------------


def _check_unchanged(agent, before, counters):
    _assert_same_weights(_all_weights(agent), before)
    assert (agent.timesteps, agent.num_updates, agent.memory_size()) == counters


def _model_files(path):
    return sorted(os.path.join(path, f) for f in os.listdir(path) if f.startswith("model"))


def _rewrite(path, name, data):
    """Replaces checkpoint file `name` and updates the manifest to match: a crafted checkpoint whose
    files are all consistent with its manifest, so the loader's value checks must catch it."""
    with open(os.path.join(path, name), "wb") as handle:
        handle.write(data)
    manifest_file = os.path.join(path, "manifest.json")
    manifest = json.load(open(manifest_file))
    manifest["files"][name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    with open(manifest_file, "w") as handle:
        json.dump(manifest, handle)


def _edit_state(path, edit):
    state = json.load(open(os.path.join(path, "agent_state.json")))
    edit(state)
    _rewrite(path, "agent_state.json", json.dumps(state).encode())


def _edit_arrays(path, edit):
    import io
    with np.load(os.path.join(path, "agent_state.npz"), allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    edit(arrays)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    _rewrite(path, "agent_state.npz", buffer.getvalue())


def _assert_refused(backend, path, match):
    victim = _agent(backend, seed=7)
    _run(victim, _data(3, seed=4), 0, 3)
    before, counters = _all_weights(victim), (victim.timesteps, victim.num_updates, victim.memory_size())
    with pytest.raises(RLGraphCheckpointError, match=match):
        victim.load_model(path)
    _check_unchanged(victim, before, counters)


@pytest.mark.parametrize("damage", ["truncate-model", "garbage-model", "missing-model", "truncate-state",
                                    "garbage-state", "missing-state", "truncate-arrays", "missing-manifest",
                                    "garbage-manifest", "missing-dir"])
def test_damaged_checkpoint_raises_and_changes_nothing(trained, backend, damage):
    _, path = trained
    files = {"model": _model_files(path), "state": [os.path.join(path, "agent_state.json")],
             "arrays": [os.path.join(path, "agent_state.npz")], "manifest": [os.path.join(path, "manifest.json")]}
    part = damage.split("-")[1]
    for filename in files.get(part, []):
        data = open(filename, "rb").read()
        if damage.startswith("truncate"):
            data = data[:len(data) // 2]
        elif damage.startswith("garbage"):
            data = np.random.RandomState(0).bytes(len(data))
        if damage.startswith("missing"):
            os.remove(filename)
        else:
            with open(filename, "wb") as handle:
                handle.write(data)
    if damage == "missing-dir":
        path = path + "-nowhere"
    _assert_refused(backend, path, None)


def test_flipped_bytes_in_the_model_file(trained, backend):
    """Bytes changed inside a stored tensor (same file length) must not load silently."""
    agent, path = trained
    kernel = next(v for k, v in _all_weights(agent).items() if k.endswith("policy/neural-network/dense/kernel")
                  and "target" not in k)
    needle = np.ascontiguousarray(kernel).tobytes()
    hits = [f for f in _model_files(path) if needle in open(f, "rb").read()]
    assert hits, "the kernel's raw bytes are not in the model file(s)"
    data = bytearray(open(hits[0], "rb").read())
    offset = bytes(data).index(needle)
    data[offset:offset + 8] = np.array([1e30, -1e30], np.float32).tobytes()
    with open(hits[0], "wb") as handle:
        handle.write(bytes(data))
    _assert_refused(backend, path, "SHA-256 does not match")


@pytest.mark.parametrize("bit", [0, 7, 100, 1000])
def test_a_single_flipped_bit_in_the_agent_state_is_caught(trained, backend, bit):
    _, path = trained
    filename = os.path.join(path, "agent_state.npz")
    data = bytearray(open(filename, "rb").read())
    position = (bit * 7919) % (8 * len(data))
    data[position // 8] ^= 1 << (position % 8)
    with open(filename, "wb") as handle:
        handle.write(bytes(data))
    _assert_refused(backend, path, "damaged")


def test_model_file_of_another_step_is_refused(backend, tmp_path):
    """The model of a later checkpoint next to the agent state of an earlier one."""
    agent = _agent(backend)
    _run(agent, _data(12), 0, 5)
    early = agent.store_model(str(tmp_path))
    _run(agent, _data(12), 5, 12)
    late = agent.store_model(str(tmp_path))
    for name in os.listdir(late):
        if name.startswith("model"):
            shutil.copy(os.path.join(late, name), os.path.join(early, name))
    _assert_refused(backend, early, "has another size|SHA-256")


def test_manifest_step_must_match_the_agent_state(trained, backend):
    _, path = trained
    manifest_file = os.path.join(path, "manifest.json")
    manifest = json.load(open(manifest_file))
    manifest["step"] = 25000
    with open(manifest_file, "w") as handle:
        json.dump(manifest, handle)
    _assert_refused(backend, path, "disagree on the step")


def test_different_network_size_raises(trained, backend):
    _, path = trained
    other = _agent(backend, units=6)
    before = _all_weights(other)
    with pytest.raises(RLGraphCheckpointError, match="does not fit"):
        other.load_model(path)
    _check_unchanged(other, before, (0, 0, 0))


def test_state_of_another_agent_type_raises(trained, backend):
    _, path = trained
    _edit_state(path, lambda state: state.update(agent_type="ApexAgent"))
    _assert_refused(backend, path, "another agent type")
    _rewrite(path, "agent_state.json", b"[1, 2, 3]")  # Valid JSON, not an agent state.
    _assert_refused(backend, path, "not an rlgraph agent state")


@pytest.mark.parametrize("edit, match", [
    (lambda s: s["counters"].pop("timesteps"), "counters are incomplete"),
    (lambda s: s["counters"].update(num_updates=-1), "num_updates"),
    (lambda s: s["counters"].update(timesteps=2.5), "timesteps"),
    (lambda s: s["counters"].update(last_sync_timestep=10 ** 6), "last target sync"),
    (lambda s: s.update(max_timesteps=0), "max_timesteps"),
    (lambda s: s["buffers"][0].update(length=10 ** 6), "more transitions"),
    (lambda s: s["buffers"][0].update(env_id={"pickle": "x"}), "env id"),
    (lambda s: s["rng"]["numpy"].update(pos=10 ** 9), "random generator position"),
])
def test_crafted_agent_state_values_are_refused(trained, backend, edit, match):
    """Manifest-consistent files with values out of range fail at load, before anything changes."""
    _, path = trained

    def apply(state):
        edit(state)
        state["counters"]["timesteps"] = state["counters"].get("timesteps", 7)  # (Keep the manifest step.)
    _edit_state(path, apply if "incomplete" not in match else edit)
    if "incomplete" in match:
        manifest_file = os.path.join(path, "manifest.json")
        assert json.load(open(manifest_file))["step"] == 7
    _assert_refused(backend, path, match)


@pytest.mark.parametrize("field, value, match", [("actions", 3, "outside its space"),
                                                 ("actions", -1, "outside its space"),
                                                 ("states", None, "missing or damaged"),
                                                 ("rewards", np.inf, "non-finite")])
def test_crafted_buffered_transitions_are_refused(trained, backend, field, value, match):
    _, path = trained

    def edit(arrays):
        key = f"buffers/0/{field}"
        if value is None:
            arrays[key] = arrays[key][:, :2]  # States of another shape.
        else:
            arrays[key] = np.full_like(arrays[key], value)
    _edit_arrays(path, edit)
    _assert_refused(backend, path, match)


def test_memory_positions_out_of_range_are_refused(backend, tmp_path):
    """A model file whose memory `size` exceeds the capacity (written through set_weights, so the
    manifest is consistent) fails at load instead of sampling garbage later."""
    agent = _agent(backend)
    _run(agent, _data(6), 0, 6)
    name = next(k for k in agent.graph_executor.get_weights() if k.endswith("memory/size"))
    agent.graph_executor.set_weights({name: np.int64(1000)})
    path = agent.store_model(str(tmp_path))
    _assert_refused(backend, path, "out of range")


def test_legacy_pickled_agent_state_is_never_unpickled(trained, backend, tmp_path):
    """A checkpoint of the pickle era (agent_state.pkl, no manifest) is refused with a hint; the
    pickle's payload does not run."""
    import pickle
    _, path = trained
    marker = tmp_path / "payload-ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))
    os.remove(os.path.join(path, "manifest.json"))
    with open(os.path.join(path, "agent_state.pkl"), "wb") as handle:
        pickle.dump(Payload(), handle)
    _assert_refused(backend, path, "older rlgraph with a pickled agent state")
    assert not marker.exists()


def test_python_memory_round_trip(backend, tmp_path):
    spec = dict(memory_spec={"type": "mem-prioritized-replay", "capacity": 16})
    agent = _agent(backend, **spec)
    _run(agent, _data(9), 0, 9)
    path = agent.store_model(str(tmp_path), add_timestep=False)
    twin = _agent(backend, seed=5, **spec)
    assert twin.memory_size() == 0
    twin.load_model(path)
    assert twin.memory_size() == agent.memory_size() == 9
    np.testing.assert_array_equal(twin.replay.memory.tree.leaves(), agent.replay.memory.tree.leaves())
    for key, stored in agent.replay.memory.storage.items():
        np.testing.assert_array_equal(twin.replay.memory.storage[key], stored, err_msg=key)
