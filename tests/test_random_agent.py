"""RandomAgent: seeded uniform actions from any action space, no learning, the worker, `rlgraph train`,
`rlgraph evaluate` and checkpoints."""
import json
import os

import numpy as np
import pytest

from rlgraph.agents import Agent, RandomAgent
from rlgraph.cli.main import main
from rlgraph.environments import GridWorld
from rlgraph.execution import SingleThreadedWorker
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphExportError, RLGraphSpaceError

CONTAINER = Dict(a=IntBox(2), b=FloatBox(-1.0, 1.0, shape=(3,)), c=BoolBox())
ONE_HOT_16 = [{"type": "reshape", "flatten": True, "flatten_categories": 16}]


def _agent(backend, action_space=IntBox(3), seed=1, state_space=IntBox(16), **kwargs):
    return Agent.from_spec({"type": "random", "execution_spec": {"seed": seed}, **kwargs}, backend=backend,
                           state_space=state_space, action_space=action_space)


@pytest.mark.parametrize("name", ["random", "random-agent", "RandomAgent"])
def test_spec_names_resolve(name):
    assert Agent.resolve_type(name) is RandomAgent


def test_a_seed_gives_numpys_draws_on_either_backend(backend):
    agent = _agent(backend, seed=1)
    states = np.arange(6) % 16
    expected = np.random.RandomState(1).randint(0, 3, size=6, dtype=np.int32)  # What the seed makes numpy draw.
    np.testing.assert_array_equal(agent.get_action(states), expected)
    again = _agent(backend, seed=1)
    assert [int(again.get_action(s)) for s in states] == expected.tolist()
    other = [int(a) for a in _agent(backend, seed=2).get_action(np.arange(16))]
    assert other != _agent(backend, seed=1).get_action(np.arange(16)).tolist()


@pytest.mark.parametrize("action_space", [IntBox(5), FloatBox(-2.0, 3.0, shape=(2,)), CONTAINER],
                         ids=["IntBox", "FloatBox", "Dict"])
def test_actions_lie_in_the_action_space(backend, action_space):
    agent = _agent(backend, action_space, seed=3)
    batch = agent.get_action(np.arange(50) % 16)
    assert action_space.with_batch_rank().contains(batch)
    single = agent.get_action(7)
    assert action_space.contains(single)
    if not isinstance(action_space, Dict):
        assert np.shape(single) == action_space.shape
    else:
        assert single["a"].shape == () and single["b"].shape == (3,) and single["c"].shape == ()
        assert set(np.unique(batch["a"]).tolist()) == {0, 1} and set(np.unique(batch["c"]).tolist()) == {False, True}


def test_draws_are_uniform(backend):
    actions = _agent(backend, IntBox(4), seed=5).get_action(np.zeros(4000, dtype=np.int32))
    counts = np.bincount(actions, minlength=4)
    assert np.all(np.abs(counts - 1000) < 100), counts  # Binomial sd 27: 100 is ~3.7 sd.
    floats = _agent(backend, FloatBox(-2.0, 3.0), seed=5).get_action(np.zeros(4000, dtype=np.int32))
    assert floats.min() >= -2.0 and floats.max() < 3.0 and abs(floats.mean() - 0.5) < 0.1


def test_without_exploration_the_actions_stay_random(backend):
    """A random policy is its own greedy policy: use_exploration=False draws from the same stream."""
    agent, twin = _agent(backend, seed=4), _agent(backend, seed=4)
    greedy = [int(agent.get_action(0, use_exploration=False)) for _ in range(20)]
    assert greedy == [int(twin.get_action(0)) for _ in range(20)] and len(set(greedy)) == 3


def test_preprocessing_observe_and_update_change_nothing(backend):
    agent = _agent(backend, seed=1, preprocessing_spec=ONE_HOT_16)
    assert agent.preprocessed_state_space == FloatBox(0.0, 1.0, shape=(16,))
    actions, preprocessed = agent.get_action(np.array([3, 5]), extra_returns="preprocessed_states")
    np.testing.assert_array_equal(preprocessed, np.eye(16, dtype=np.float32)[[3, 5]])
    assert agent.update_spec["do_updates"] is False
    agent.observe(preprocessed[0], actions[0], None, 1.0, preprocessed[1], False)
    agent.observe(preprocessed, actions, None, np.array([0.0, 1.0]), preprocessed, np.array([False, True]))
    assert agent.timesteps == 3 and agent.buffers.buffers == {} and agent.num_updates == 0
    assert agent.update() == (0.0, 0.0) and agent.num_updates == 0
    assert agent.get_weights() == {} and agent.graph_executor.get_weights() == {}
    with pytest.raises(RLGraphSpaceError, match="action"):
        agent.observe(preprocessed[0], 3, None, 1.0, preprocessed[1], False)  # Observed data is still checked.
    with pytest.raises(RLGraphSpaceError, match="get_action"):
        agent.get_action(np.zeros((2, 3)))
    with pytest.raises(RLGraphExportError, match="no greedy acting"):
        agent.export_policy("unused.pt")


@pytest.mark.parametrize("env_spec", [{"type": "grid-world", "world": "4x4"},
                                      {"type": "grid-world", "world": "4-room", "action_type": "ftj",
                                       "state_representation": "xy+orientation"},
                                      {"type": "openai-gym", "gym_env": "CartPole-v1"}],
                         ids=["grid-world", "4-room-ftj", "cartpole"])
def test_worker_runs_100_steps(backend, env_spec):
    pytest.importorskip("gymnasium", reason="CartPole needs gymnasium")
    from rlgraph.environments import Environment

    def run():
        env = Environment.from_spec(dict(env_spec))
        agent = Agent.from_spec({"type": "random", "execution_spec": {"seed": 3}}, backend=backend,
                                state_space=env.state_space, action_space=env.action_space)
        worker = SingleThreadedWorker(agent, lambda: Environment.from_spec(dict(env_spec)), num_environments=2,
                                      seed=3)
        return agent, worker.execute_timesteps(100, max_timesteps_per_episode=40)

    agent, stats = run()
    # (The worker observes a step's transitions with the next step's states, unless they end an episode.)
    assert stats["timesteps_executed"] == 100 and 98 <= agent.timesteps <= 100 and stats["num_updates"] == 0
    assert stats["episodes_executed"] >= 2 and all(length <= 40 for length in stats["episode_lengths"])
    if env_spec["type"] == "openai-gym":  # Reward 1 per step.
        assert stats["episode_returns"] == [float(n) for n in stats["episode_lengths"]]
    elif env_spec["world"] == "4x4":  # Goal, hole, or the time limit.
        assert set(stats["episode_returns"]) <= {1.0, -1.0, 0.0}
    assert run()[1]["episode_returns"] == stats["episode_returns"]  # Seeded agent and envs: the same run.


def test_checkpoint_resumes_the_action_stream(backend, tmp_path):
    agent = _agent(backend, CONTAINER, seed=7)
    for _ in range(5):
        agent.observe(np.zeros(1, np.int32)[0], agent.get_action(0), None, 0.0, np.int32(1), False)
    path = agent.store_model(str(tmp_path / "ckpt"), add_timestep=False)
    assert "random_agent_rng.npz" in json.loads(open(os.path.join(path, "manifest.json")).read())["files"]
    expected = agent.get_action(np.zeros(10, np.int32))
    restored = _agent(backend, CONTAINER, seed=99)
    restored.load_model(path)
    assert restored.timesteps == 5
    resumed = restored.get_action(np.zeros(10, np.int32))
    for key in ("a", "b", "c"):
        np.testing.assert_array_equal(resumed[key], expected[key])


def test_checkpoint_of_another_action_space_is_refused_and_changes_nothing(backend, tmp_path):
    path = _agent(backend, IntBox(3), seed=1).store_model(str(tmp_path / "ckpt"), add_timestep=False)
    agent, twin = _agent(backend, CONTAINER, seed=2), _agent(backend, CONTAINER, seed=2)
    with pytest.raises(RLGraphCheckpointError, match="another action space"):
        agent.load_model(path)
    np.testing.assert_array_equal(agent.get_action(np.zeros(5, np.int32))["b"],
                                  twin.get_action(np.zeros(5, np.int32))["b"])


def test_rlgraph_train_and_evaluate(backend, tmp_path, capsys):
    config = {"type": "random", "environment_spec": {"type": "grid-world", "world": "4x4", "max_episode_steps": 20},
              "training_spec": {"num_timesteps": 100, "evaluation_interval": 50, "evaluation_episodes": 2,
                                "log_interval": 50}}
    path = tmp_path / "random.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "run"
    assert main(["train", str(path), "--backend", backend, "--seed", "2", "--output-dir", str(out),
                 "--no-progress"]) == 0
    assert "100 steps" in capsys.readouterr().out
    final = out / "checkpoints" / "final"
    assert (final / "random_agent_rng.npz").exists()
    assert main(["evaluate", str(final), "--episodes", "3"]) == 0
    assert "3 greedy episodes" in capsys.readouterr().out


def test_grid_world_run_matches_the_env(backend):
    """The worker's returns are the env's rewards along the agent's (random) actions."""
    seen = []
    agent = _agent(backend, IntBox(4), seed=0, preprocessing_spec=ONE_HOT_16)
    worker = SingleThreadedWorker(agent, GridWorld("4x4"), hooks=[lambda a, d: seen.append(d)], seed=0)
    stats = worker.execute_episodes(1, max_timesteps_per_episode=30)
    replay = GridWorld("4x4")
    replay.reset()
    assert stats["episode_returns"][0] == pytest.approx(sum(replay.step(int(d.action))[1] for d in seen))
