"""Each agent draws its random numbers from a stream of its own (rlgraph/utils/torch_random.py).

Two agents in one process must not take numbers from each other: an agent given the same seed and
the same inputs acts, samples its replay and updates the same whether or not other agents are built
and called in between. TF's traced functions keep their random state per function; PyTorch's draws
went to one global generator per process until each executor had generators of its own.
"""
import json

import numpy as np
import pytest

from rlgraph.agents import Agent
from rlgraph.environments import Environment

SMALL = [{"type": "dense", "units": 16, "activation": "relu"}]
STEPS = 48


def _agent(name, backend, seed):
    """DQN (epsilon-greedy draws, uniform replay sampling) or SAC (Gaussian policy draws), small."""
    path = {"dqn": "configs/dqn_cartpole.json", "sac": "configs/sac_pendulum.json"}[name]
    with open(path) as handle:
        config = json.load(handle)
    env = Environment.from_spec(config.pop("environment_spec"))
    config.pop("training_spec", None)
    config.update(network_spec=SMALL, memory_spec={"type": "replay-memory", "capacity": 256},
                  observe_spec={"buffer_size": 8}, execution_spec={"seed": seed, "max_timesteps": 1000})
    config["update_spec"] = dict(config["update_spec"], batch_size=8, steps_before_update=0)
    if name == "sac":
        config["value_function_spec"] = SMALL
    agent = Agent.from_spec(config, state_space=env.state_space, action_space=env.action_space, backend=backend)
    env.terminate()
    return agent


def _steps(agent, states):
    """A generator of the agent's results, one step at a time: an exploring action, an observe and,
    every 8 steps, an update (its loss)."""
    for i in range(STEPS):
        action = agent.get_action(states[i], time_percentage=0.05)
        yield np.asarray(action).tolist()
        agent.observe(states[i], action, None, 1.0, states[i + 1], i % 16 == 15)
        if i % 8 == 7:
            yield float(np.asarray(agent.update()[0]))


@pytest.mark.parametrize("name", ["dqn", "sac"])
def test_agents_in_one_process_draw_from_their_own_streams(backend, name):
    agent = _agent(name, backend, seed=7)
    states = np.random.RandomState(3).uniform(-0.5, 0.5, (STEPS + 1,) + agent.state_space.shape).astype(np.float32)
    alone = list(_steps(agent, states))
    assert len({str(a) for a in alone[:8]}) > 1  # (The actions vary: there are draws to compare.)

    # The same agent again, now with a twin (same seed) called in turn, and a third agent built
    # half-way (a build seeds and draws).
    first, twin = _agent(name, backend, seed=7), _agent(name, backend, seed=7)
    ours, theirs, other = _steps(first, states), _steps(twin, states), None
    together, twins = [], []
    for index, (mine, its) in enumerate(zip(ours, theirs)):
        together.append(mine)
        twins.append(its)
        if index == len(alone) // 2:
            other = _agent(name, backend, seed=1)
            other.get_action(states[0])
    assert together == alone
    assert twins == alone
    assert other is not None


def test_a_restored_random_state_replays_the_agents_own_draws(backend):
    """The executor's random state (what checkpoints keep) is the agent's own stream: restored, the
    agent draws the same actions again, even after another agent drew in between."""
    agent = _agent("dqn", backend, seed=4)
    if agent.graph_executor.get_rng_state()["backend"] is None:
        pytest.skip(reason=f"{backend}'s random ops keep their state inside the traced functions, where it "
                           "cannot be read or restored (checkpoints keep the numpy stream only)")
    states = np.random.RandomState(5).uniform(-0.5, 0.5, (16, 4)).astype(np.float32)
    state = agent.graph_executor.get_rng_state()
    first = [int(agent.get_action(s, time_percentage=0.0)) for s in states]
    _agent("dqn", backend, seed=9).get_action(states[0])
    agent.graph_executor.set_rng_state(state)
    assert [int(agent.get_action(s, time_percentage=0.0)) for s in states] == first


def test_an_eager_random_op_during_another_threads_trace_works(monkeypatch):
    """TF only: a trace sets the executor's seed on TF's context (`_graph_seed`), where an eager random
    op of another thread (e.g. an agent being built while an actor thread traces) reads it. With a
    global seed set, that op takes its seed from the context's generator, which only
    `tf.random.set_seed` used to create (executors no longer call it): it must be there."""
    tf = pytest.importorskip("tensorflow", reason="the trace seed is TF's")
    from tensorflow.python.eager import context

    from rlgraph.graphs.tensorflow_executor import _graph_seed
    monkeypatch.delattr(context.context(), "_rng", raising=False)  # (A process where set_seed never ran.)
    with _graph_seed(3):
        value = tf.random.uniform([2]).numpy()  # The other thread's eager op, here in one thread.
    assert value.shape == (2,) and np.all((value >= 0) & (value < 1))


def test_a_draw_without_a_device_takes_the_generator_of_the_default_device():
    """A graph function's draw that names no device (torch.rand(shape)) comes from the current
    generator of the default device: the CPU's outside any device context, the context's device's
    inside one (a GPU executor's calls, a placed component's). The meta device stands in for a GPU."""
    torch = pytest.importorskip("torch")
    from rlgraph.utils import torch_random
    cpu, meta = torch.Generator().manual_seed(5), object()
    previous = torch_random.set_current({"cpu": cpu, "meta": meta})
    try:
        assert torch_random._current(None) is cpu
        with torch.device("meta"):
            assert torch_random._current(None) is meta
        assert torch_random._current(torch.device("meta")) is meta and torch_random._current("cpu") is cpu
        expected = torch.rand((3,), generator=torch.Generator().manual_seed(5))
        assert torch.equal(torch_random.rand((3,)), expected)  # (The CPU generator's own draws.)
    finally:
        torch_random.set_current(previous)
    assert torch_random._current(None) is None  # (Outside an executor's call: torch's global one.)
