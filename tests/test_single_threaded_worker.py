"""`SingleThreadedWorker`: step counts, per-env observes, update cadence, hooks, evaluation."""
import numpy as np
import pytest

from rlgraph.agents import DQNAgent
from rlgraph.environments import GridWorld
from rlgraph.execution import EpisodeReturnsHook, Hook, SingleThreadedWorker
from rlgraph.spaces import FloatBox, IntBox


def _agent(backend, state_space, **kwargs):
    spec = dict(network_spec=[{"type": "dense", "units": 8}], dueling_q=False,
                memory_spec={"type": "replay-memory", "capacity": 500},
                update_spec={"update_interval": 4, "steps_before_update": 8, "batch_size": 4, "update_steps": 2,
                             "sync_interval": 10},
                observe_spec={"buffer_size": 4}, execution_spec={"seed": 3}, backend=backend)
    spec.update(kwargs)
    return DQNAgent(state_space=state_space, action_space=IntBox(4), **spec)


def _random_env_spec(terminal_prob=0.0):
    return {"type": "random-env", "state_space": FloatBox(shape=(3,)), "action_space": IntBox(4),
            "terminal_prob": terminal_prob}


def test_timesteps_updates_and_observes(backend):
    agent = _agent(backend, FloatBox(shape=(3,)))
    worker = SingleThreadedWorker(agent, _random_env_spec(), num_environments=1, seed=5)
    stats = worker.execute_timesteps(20)
    assert stats["timesteps_executed"] == 20 and stats["episodes_executed"] == 0
    # The worker observes step t when step t+1's action comes in: 19 transitions observed.
    assert agent.timesteps == 19
    # Update rounds at observed steps 8, 12, 16 (every 4 once 8 are in), 2 updates each.
    assert stats["num_updates"] == 6 and agent.num_updates == 6
    assert agent.max_timesteps == 20  # set by the worker for the schedules
    # Buffers of 4 flushed 4 times: 16 transitions are in the memory, 3 wait in the buffer.
    assert agent.memory_size() == 16 and agent.buffers.pending() == 3
    assert np.isfinite(stats["mean_loss"]) and stats["env_frames_per_second"] > 0


def test_vectorized_envs_observe_per_env(backend):
    agent = _agent(backend, FloatBox(shape=(3,)), update_spec={"do_updates": False})
    worker = SingleThreadedWorker(agent, _random_env_spec(), num_environments=3, seed=5)
    stats = worker.execute_timesteps(30)
    assert stats["timesteps_executed"] == 30
    # 10 steps per env, 9 observed per env so far; each env's buffer flushed twice (8 of 9).
    assert agent.timesteps == 27 and agent.memory_size() == 24
    assert sorted(agent.buffers.buffers) == [0, 1, 2]
    assert all(len(b) == 1 for b in agent.buffers.buffers.values())
    # Continuing without reset observes the pending transitions.
    worker.execute_timesteps(3, reset=False)
    assert agent.timesteps == 30


def test_episodes_hooks_and_truncation(backend):
    agent = _agent(backend, IntBox(16), preprocessing_spec=[{"type": "reshape", "flatten": True,
                                                            "flatten_categories": 16}],
                   update_spec={"do_updates": False})
    calls = []

    class Recorder(Hook):
        def __init__(self):
            self.ends = []

        def __call__(self, agent_, data):
            calls.append(data)

        def on_episode_end(self, agent_, data):
            self.ends.append((data.episode, data.episode_step, data.done))

    recorder, returns_hook = Recorder(), EpisodeReturnsHook()
    env = {"type": "grid-world", "world": "2x2"}
    worker = SingleThreadedWorker(agent, env, num_environments=1, hooks=[recorder, returns_hook], seed=1)
    stats = worker.execute_episodes(3, max_timesteps_per_episode=5)
    assert stats["episodes_executed"] == 3 and len(stats["episode_returns"]) == 3
    assert [d.step for d in calls] == list(range(1, len(calls) + 1))
    assert [e[0] for e in recorder.ends] == [1, 2, 3] and all(e[2] for e in recorder.ends)
    assert all(e[1] <= 5 for e in recorder.ends)
    assert [r[1] for r in returns_hook.records] == stats["episode_returns"]
    assert calls[0].observation == 0 and calls[0].episode_step == 1 and calls[0].training
    # Every step was observed (episodes end: transitions flushed at the end of each episode).
    assert agent.timesteps == stats["timesteps_executed"]


def test_evaluate_does_not_learn(backend):
    agent = _agent(backend, FloatBox(shape=(3,)))
    worker = SingleThreadedWorker(agent, _random_env_spec(terminal_prob=0.2), num_environments=2, seed=2)
    stats = worker.evaluate(4)
    assert stats["episodes_executed"] == 4 and stats["num_updates"] == 0
    assert agent.timesteps == 0 and agent.num_updates == 0


def test_an_evaluation_between_training_steps_leaves_the_preprocessor_state(backend):
    """A frame stack and whole-run statistics: training continues with its own episode's stack,
    as if no evaluation (of other episodes, through the same agent) had run in between."""
    preprocessing = [{"type": "moving-standardize", "per_episode": False},
                     {"type": "sequence", "sequence_length": 3, "add_rank": False}]

    def run(evaluate_between):
        agent = _agent(backend, FloatBox(shape=(3,)), preprocessing_spec=preprocessing,
                       update_spec={"do_updates": False}, observe_spec={"buffer_size": 100})
        worker = SingleThreadedWorker(agent, _random_env_spec(), seed=4)
        evaluator = SingleThreadedWorker(agent, _random_env_spec(terminal_prob=0.3), seed=9)
        worker.execute_timesteps(5)
        if evaluate_between:
            before = agent.graph_executor.get_weights()
            evaluator.evaluate(3)
            after = agent.graph_executor.get_weights()
            assert all(np.array_equal(before[k], after[k]) for k in before)
        worker.execute_timesteps(5, reset=False)
        agent.terminate()
        return np.stack([transition.state for transition in agent.buffers.buffers[0]])  # Preprocessed.

    with_evaluation = run(True)
    np.testing.assert_array_equal(with_evaluation, run(False))


def test_grid_world_returns_match_env(backend):
    """The worker's episode return equals the sum of the env's rewards along the same actions."""
    agent = _agent(backend, IntBox(16), preprocessing_spec=[{"type": "reshape", "flatten": True,
                                                            "flatten_categories": 16}],
                   update_spec={"do_updates": False})
    seen = []
    worker = SingleThreadedWorker(agent, GridWorld("4x4"), hooks=[lambda a, d: seen.append(d)], seed=0)
    stats = worker.execute_episodes(1, max_timesteps_per_episode=30)
    replay = GridWorld("4x4")
    replay.reset()
    total = sum(replay.step(int(d.action))[1] for d in seen)
    assert stats["episode_returns"][0] == pytest.approx(total)


def test_agent_test_checks(backend):
    from rlgraph.tests import AgentTest
    agent = _agent(backend, IntBox(4), preprocessing_spec=[{"type": "reshape", "flatten": True,
                                                           "flatten_categories": 4}],
                   update_spec={"do_updates": False}, exploration_spec={"epsilon_spec": {"decay_spec": 0.0}})
    env = GridWorld("2x2")
    test = AgentTest(SingleThreadedWorker(agent, env, seed=1))
    test.step(4)
    test.check_agent("timesteps", 3)
    with pytest.raises(AssertionError):
        test.check_agent("timesteps", 4)
    # Greedy actions of a fixed network: replaying them on a fresh 2x2 world gives the worker's position.
    replay = GridWorld("2x2")
    replay.reset()
    for _ in range(4):
        _, _, terminal, _ = replay.step(int(agent.get_action(replay.get_discrete_pos(replay.x, replay.y),
                                                             use_exploration=False)))
        if terminal:
            replay.reset()
    test.check_env("x", replay.x)
    test.check_env("y", replay.y)
    weights = agent.get_weights()
    name = next(iter(weights))
    test.check_var(name, weights[name])


@pytest.mark.parametrize("memory_type", ["replay-memory", "prioritized-replay", "mem-prioritized-replay"])
def test_updates_wait_for_a_batch_in_the_memory(backend, memory_type):
    """steps_before_update 0 (the original RLgraph configs' default): the first update round comes
    once the memory holds batch_size records, not on an empty memory (a regression: it raised)."""
    agent = _agent(backend, FloatBox(shape=(3,)), memory_spec={"type": memory_type, "capacity": 100},
                   update_spec={"update_interval": 1, "steps_before_update": 0, "batch_size": 6, "update_steps": 1},
                   observe_spec={"buffer_size": 4})
    worker = SingleThreadedWorker(agent, _random_env_spec(), num_environments=1, seed=5)
    assert not agent.ready_to_update()
    stats = worker.execute_timesteps(10)
    # 9 observed; buffers of 4 flush at 4 and 8: the memory first holds >= 6 records at observed step 8,
    # so rounds run at observed steps 8 and 9.
    assert agent.memory_size() == 8 and stats["num_updates"] == 2 and agent.ready_to_update()


def test_a_batch_larger_than_the_memory_waits_for_a_full_memory(backend):
    agent = _agent(backend, FloatBox(shape=(3,)), memory_spec={"type": "replay-memory", "capacity": 4},
                   update_spec={"update_interval": 1, "steps_before_update": 0, "batch_size": 8, "update_steps": 1},
                   observe_spec={"buffer_size": 2})
    worker = SingleThreadedWorker(agent, _random_env_spec(), num_environments=1, seed=5)
    stats = worker.execute_timesteps(6)
    # 5 observed, 4 flushed into the memory (full at observed step 4): rounds at steps 4 and 5.
    assert stats["num_updates"] == 2
