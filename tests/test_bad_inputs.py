"""Bad input gives an `RLGraphError` that names the method or option, what was expected and what came
in: agent API arguments, Dict keys and empty containers, text in memories, failing environments and
the options of the `rlgraph` command."""
import json

import numpy as np
import pytest

from agent_helpers import _agent
from rlgraph.cli.main import main
from rlgraph.components.memories.prioritized_replay import PrioritizedReplay
from rlgraph.components.memories.replay_memory import ReplayMemory
from rlgraph.environments import GridWorld
from rlgraph.execution import SingleThreadedWorker
from rlgraph.spaces import Dict, FloatBox, IntBox, Space, TextBox, Tuple
from rlgraph.tests import ComponentTest
from rlgraph.utils.nest import flatten_op
from rlgraph.utils.rlgraph_errors import RLGraphEnvError, RLGraphError, RLGraphSpaceError, RLGraphSpecError

_AGENTS = {}


def _shared_agent(backend):
    """One small DQN agent per backend for the tests that only call it with bad input (builds are slow)."""
    if backend not in _AGENTS:
        _AGENTS[backend] = _agent(backend, update_spec={"batch_size": 4})
    return _AGENTS[backend]


# --- Agent API ----------------------------------------------------------------------------------------
BAD_STATES = {
    "a dict for a FloatBox": {"a": np.zeros(4, np.float32)},
    "an empty dict": {},
    "ragged lists": [[1.0, 2.0], [3.0]],
    "ragged rows of 4 and 1": [[1.0, 2.0, 3.0, 4.0], [3.0]],
    "a list of dicts": [{"a": 1.0}, {"a": 2.0}],
    "an object array of dicts": np.array([{"a": 1}] * 4, dtype=object),
    "a single state of 3": np.zeros(3, np.float32),
    "a batch of rank 3": np.zeros((2, 3, 4), np.float32),
    "a scalar": 1.0,
    "None": None,
    "strings": np.array(["a", "b", "c", "d"]),
    "complex numbers": np.zeros(4, np.complex64),
}


@pytest.mark.parametrize("apply_preprocessing", [True, False])
def test_get_action_refuses_states_that_do_not_fit(backend, apply_preprocessing):
    agent = _shared_agent(backend)
    for name, states in BAD_STATES.items():
        with pytest.raises(RLGraphSpaceError, match=r"agent\.get_action\(states\)") as info:
            agent.get_action(states, apply_preprocessing=apply_preprocessing)
        assert "FloatBox" in str(info.value) or "(None, 4)" in str(info.value), name
    assert agent.get_action(np.zeros(4, np.float32)) in range(3)  # The agent still works.


def test_get_action_refuses_a_time_percentage_that_is_no_number(backend):
    agent = _shared_agent(backend)
    with pytest.raises(RLGraphSpecError, match=r"get_action\(time_percentage\)"):
        agent.get_action(np.zeros(4, np.float32), time_percentage="half")


def test_observe_refuses_an_unhashable_env_id(backend):
    agent = _shared_agent(backend)
    state = np.zeros(4, np.float32)
    with pytest.raises(RLGraphError, match=r"observe\(env_id\): env_id must be hashable") as info:
        agent.observe(state, 1, None, 1.0, state, False, env_id=[1])
    assert "list [1]" in str(info.value)
    agent.reset_env_buffers()


@pytest.mark.parametrize("observations", [5, None, "states", [5], (1, 2)])
def test_import_observations_refuses_what_is_no_record(backend, observations):
    agent = _shared_agent(backend)
    size = agent.memory_size()
    with pytest.raises(RLGraphError, match=r"import_observations\(observations\)"):
        agent.import_observations(observations)
    assert agent.memory_size() == size


# --- Spaces ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("key", ["", "_T0_", "_T12_", "a/b", 3, None])
def test_dict_keys_that_cannot_be_auto_keys_are_refused(key):
    # "" flattens to the key "/" (unflatten failed with an IndexError) and "_T0_" came back as a tuple.
    with pytest.raises(RLGraphSpaceError, match="invalid Dict key") as info:
        Dict({key: FloatBox()})
    assert repr(key) in str(info.value)
    if isinstance(key, str):
        with pytest.raises(RLGraphError, match="auto-key"):
            flatten_op({key: 1.0})


def test_keys_that_only_look_like_tuple_keys_are_fine():
    space = Dict({"_T_": FloatBox(), "T0": IntBox(2), "_t0_": FloatBox()})
    assert space.unflatten(space.flatten()) == {"_T_": FloatBox(), "T0": IntBox(2), "_t0_": FloatBox()}


@pytest.mark.parametrize("space", [Dict(), Tuple(), Dict(a=FloatBox(), b=Dict(), c=Tuple()),
                                   Tuple(Dict(), IntBox(2), Tuple(Tuple()))])
def test_empty_containers_survive_flatten_and_unflatten(space):
    structure = space.unflatten(space.flatten())
    assert Space.from_spec(structure) == space
    keys = space.unflatten(space.flatten(mapping=lambda key, leaf: key))
    assert keys == space.unflatten(space.flatten(scope_separator_at_start=False, mapping=lambda key, leaf: key))


def test_unflatten_names_missing_and_unknown_keys():
    space = Dict(a=FloatBox(), b=Tuple(IntBox(2)))
    with pytest.raises(RLGraphSpaceError, match="no value for the leaf '/b/_T0_'"):
        space.unflatten({"/a": 1})
    with pytest.raises(RLGraphSpaceError, match=r"keys that name no leaf.*'/c'"):
        space.unflatten({"/a": 1, "/b/_T0_": 2, "/c": 3})


# --- Memories ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("memory_class", [ReplayMemory, PrioritizedReplay])
def test_memories_refuse_text_records_at_build(backend, memory_class):
    spaces = dict(records=Dict(text=TextBox(), reward=FloatBox(), add_batch_rank=True), num_records=int)
    if memory_class is PrioritizedReplay:
        spaces.update(indices=IntBox(add_batch_rank=True), update=FloatBox(add_batch_rank=True))
    with pytest.raises(RLGraphSpaceError, match=r"insert_records\(records\): a memory cannot store text") as info:
        ComponentTest(memory_class(capacity=4), input_spaces=spaces, backend=backend)
    assert "['/text']" in str(info.value) and "TextBox" in str(info.value)


# --- Failing environments -------------------------------------------------------------------------------
class FailingGridWorld(GridWorld):
    """A 2x2 grid world whose `method` raises on its `fail_at`-th call (counted over all instances)."""

    calls = {"step": 0, "reset": 0}

    def __init__(self, method="step", fail_at=5):
        super().__init__(world="2x2")
        self.method, self.fail_at = method, fail_at

    def _count(self, method):
        if self.method == method:
            FailingGridWorld.calls[method] += 1
            if FailingGridWorld.calls[method] == self.fail_at:
                raise ZeroDivisionError(f"{method} failed")

    def step(self, actions, set_discrete_pos=None):
        self._count("step")
        return super().step(actions, set_discrete_pos)

    def reset(self, randomize=False):
        self._count("reset")
        return super().reset(randomize)


def _grid_agent(backend):
    env = GridWorld(world="2x2")
    return _agent(backend, state_space=env.state_space, action_space=env.action_space,
                  preprocessing_spec=[{"type": "reshape", "flatten": True, "flatten_categories": 4}],
                  update_spec={"batch_size": 4, "steps_before_update": 4})


@pytest.mark.parametrize("method, fail_at, index", [("step", 5, 0), ("step", 4, 1), ("reset", 4, None)])
def test_a_failing_env_is_named_with_its_index_and_step(backend, monkeypatch, method, fail_at, index):
    monkeypatch.setattr(FailingGridWorld, "calls", {"step": 0, "reset": 0})
    worker = SingleThreadedWorker(_grid_agent(backend), lambda: FailingGridWorld(method, fail_at),
                                  num_environments=2, seed=3)
    with pytest.raises(RLGraphEnvError) as info:
        worker.execute_timesteps(40)
    error = info.value
    assert isinstance(error.__cause__, ZeroDivisionError) and str(error.__cause__) == f"{method} failed"
    assert f"GridWorld(2x2, state='discr').{method}" in str(error)
    assert f"raised ZeroDivisionError: {method} failed" in str(error)
    if method == "step":
        # Calls 1, 2 are env 0, 1 at worker steps 1, 2; call 4 is env 1 at step 4, call 5 env 0 at step 5.
        assert (error.env_index, error.step) == (index, fail_at)
        assert f"env {index} of 2" in str(error) and f"worker's env step {fail_at}" in str(error)
    else:
        # Resets 1, 2 start the episodes; 3 and 4 follow the first two finished episodes.
        assert error.env_index in (0, 1) and error.step >= 2
        assert worker.interrupted_stats["episodes_executed"] >= 1
    worker.terminate()


def _tiny_config(tmp_path, max_episode_steps=50):
    config = json.loads(open("configs/dqn_gridworld_4x4.json").read())
    config["training_spec"].update(num_timesteps=120, evaluation_interval=0, log_interval=50, stop_at_return=None)
    config["environment_spec"]["max_episode_steps"] = max_episode_steps
    config["update_spec"]["steps_before_update"] = 20
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(config))
    return path


def test_train_keeps_its_files_consistent_when_an_env_fails(capsys, tmp_path, monkeypatch):
    # File handling does not depend on the backend: PyTorch only.
    calls, episode_ends = [], []

    def failing_step(self, actions, set_discrete_pos=None):
        calls.append(1)
        if len(episode_ends) > 0 and episode_ends[-1] > 50:  # Right after an episode end in the 2nd chunk.
            raise ZeroDivisionError("the env broke")
        out = original_step(self, actions, set_discrete_pos)
        if out[2]:
            episode_ends.append(len(calls))
        return out

    original_step = GridWorld.step
    monkeypatch.setattr(GridWorld, "step", failing_step)
    out = tmp_path / "run"
    assert main(["train", str(_tiny_config(tmp_path, max_episode_steps=20)), "--backend", "pytorch",
                 "--seed", "2", "--output-dir", str(out), "--no-progress"]) == 2
    failed_at = len(calls)
    assert 50 < failed_at <= 71  # Episodes last at most 20 steps.
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("rlgraph train: GridWorld(4x4") and "raised ZeroDivisionError: the env broke" in last
    assert "env 0 of 1" in last and f"worker's env step {failed_at}" in last
    assert "Traceback" in err and "failing_step" in err  # The env's own traceback comes first.
    rows = (out / "episodes.csv").read_text().splitlines()
    assert rows[0].startswith("step,episode,return,length")
    # Every finished episode is logged, those of the chunk that the failure cut short too.
    assert [int(row.split(",")[0]) for row in rows[1:]] == episode_ends
    assert (out / "learning_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out / "checkpoints" / "final").exists()


# --- The rlgraph command --------------------------------------------------------------------------------
@pytest.mark.parametrize("argv, where, message", [
    (["train", "configs/dqn_cartpole.json", "--seed", "-1"], "--seed", "seed out of range"),
    (["train", "configs/dqn_cartpole.json", "--seed", str(2 ** 40)], "--seed", "seed out of range"),
    (["evaluate", "no/such/checkpoint", "--episodes", "0"], "--episodes", "at least one episode"),
    (["evaluate", "no/such/checkpoint", "--seed", "-3"], "--seed", "seed out of range"),
    (["visualize", "configs/dqn_cartpole.json", "--output", "graph.png"], "--output", "unsupported output format"),
])
def test_cli_refuses_bad_options_in_one_line(capsys, argv, where, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"rlgraph {argv[0]} {where}: {message}")


def test_cli_output_paths(capsys, tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("x")
    assert main(["train", str(_tiny_config(tmp_path)), "--output-dir", str(a_file), "--no-progress"]) == 2
    assert capsys.readouterr().err.startswith("rlgraph train --output-dir: the path is a file, not a directory")
    assert main(["visualize", str(_tiny_config(tmp_path)), "--output", str(a_file / "graph.svg")]) == 2
    assert capsys.readouterr().err.startswith("rlgraph visualize --output: the path is a file, not a directory")
    # A missing directory is created.
    dot = tmp_path / "new" / "dir" / "graph.dot"
    assert main(["visualize", str(_tiny_config(tmp_path)), "--backend", "pytorch", "--output", str(dot)]) == 0
    assert dot.read_text().startswith("digraph")
