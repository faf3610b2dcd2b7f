"""The TF executor's call path: each API method's tf.function is traced at its first call (or at
build with `execution_spec.tf_trace_at_build`), and calls go to the traced graph's flat inputs.
Neither may change a result: every test compares against the path it replaces, bit for bit."""
import threading

import numpy as np
import pytest

from rlgraph.agents import Agent
from rlgraph.components import Component
from rlgraph.spaces import Dict, FloatBox, IntBox, Tuple
from rlgraph.tests import ComponentTest
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

pytest.importorskip("tensorflow")

STATE = FloatBox(shape=(4,))
ACTIONS = IntBox(2)


def _dqn_spec(**execution):
    return {"type": "dqn", "backend": "tf", "network_spec": [{"type": "dense", "units": 16, "activation": "relu"}],
            "memory_spec": {"type": "replay-memory", "capacity": 256}, "observe_spec": {"buffer_size": 8},
            "update_spec": {"steps_before_update": 0, "batch_size": 16, "update_interval": 1, "sync_interval": 4},
            "exploration_spec": {"epsilon_spec": {"decay_spec": {"type": "constant-decay", "constant_value": 0.5}}},
            "optimizer_spec": {"type": "adam", "learning_rate": 0.01},
            "execution_spec": dict({"seed": 5}, **execution)}


def _run(agent, steps=40, updates=3):
    """Explores (random draws inside the graph), observes and updates; returns every number it got."""
    rng = np.random.RandomState(0)
    out = []
    for _ in range(steps):
        state = rng.randn(1, 4).astype(np.float32)
        action = agent.get_action(state)
        out.append(np.asarray(action, np.float64).ravel())
        agent.observe(state, action, None, np.ones(1, np.float32), state, np.zeros(1, bool))
    for _ in range(updates):
        loss = agent.update()
        out.append(np.asarray(loss[0] if isinstance(loss, tuple) else loss, np.float64).ravel())
    return np.concatenate(out)


def test_methods_are_traced_at_their_first_call_unless_asked_at_build():
    lazy = Agent.from_spec(_dqn_spec(), state_space=STATE, action_space=ACTIONS)
    executor = lazy.graph_executor
    assert executor.trace_times == {}
    lazy.get_action(np.zeros((1, 4), np.float32))
    traced = set(executor.trace_times)
    assert traced and traced < set(executor.functions)
    lazy.get_action(np.zeros((3, 4), np.float32))  # Another batch size: no new trace.
    assert set(executor.trace_times) == traced
    eager = Agent.from_spec(_dqn_spec(tf_trace_at_build=True), state_space=STATE, action_space=ACTIONS)
    assert set(eager.graph_executor.trace_times) == set(eager.graph_executor.functions)
    with pytest.raises(RLGraphSpecError, match="tf_trace_at_build"):
        Agent.from_spec(_dqn_spec(tf_trace_at_build="yes"), state_space=STATE, action_space=ACTIONS)


def test_a_run_traced_at_first_calls_equals_one_traced_at_build():
    """Random draws in the graph (exploration, replay sampling) take their seeds from the trace: a method
    traced later, after another agent re-seeded TF, still draws what it would have drawn at build."""
    eager = _run(Agent.from_spec(_dqn_spec(tf_trace_at_build=True), state_space=STATE, action_space=ACTIONS))
    lazy = _run(Agent.from_spec(_dqn_spec(), state_space=STATE, action_space=ACTIONS))
    np.testing.assert_array_equal(lazy, eager)
    agent = Agent.from_spec(_dqn_spec(), state_space=STATE, action_space=ACTIONS)
    Agent.from_spec(dict(_dqn_spec(), execution_spec={"seed": 99}), state_space=STATE, action_space=ACTIONS)
    eager_between = Agent.from_spec(_dqn_spec(tf_trace_at_build=True), state_space=STATE, action_space=ACTIONS)
    Agent.from_spec(dict(_dqn_spec(), execution_spec={"seed": 99}), state_space=STATE, action_space=ACTIONS)
    np.testing.assert_array_equal(_run(agent), _run(eager_between))


def test_threads_calling_an_untraced_method_trace_it_once():
    agent = Agent.from_spec(_dqn_spec(), state_space=STATE, action_space=ACTIONS)
    executor = agent.graph_executor
    calls = []
    for name, function in list(executor.functions.items()):
        original = function.get_concrete_function

        def counted(*args, _original=original, _name=name):
            calls.append(_name)
            return _original(*args)
        function.get_concrete_function = counted
    barrier, errors = threading.Barrier(4), []

    def act():
        try:
            barrier.wait()
            agent.get_action(np.zeros((2, 4), np.float32), use_exploration=False)
        except Exception as error:  # noqa: BLE001 - reported below.
            errors.append(error)
    threads = [threading.Thread(target=act) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert sorted(calls) == sorted(set(calls)) and calls  # Each method traced once.


class _Leaves(Component):
    """Returns its Dict/Tuple input's leaves in a fixed arrangement (so a mixed-up order shows)."""

    @rlgraph_api
    def arrange(self, data, scale):
        return self._graph_fn_arrange(data, scale)

    @graph_fn(flatten_ops=False, split_ops=False)
    def _graph_fn_arrange(self, data, scale):
        first, second = data["pair"]
        return {"a": data["a"] * scale, "b": data["b"] - data["a"], "pair": (second, first + data["z"])}


def test_flat_calls_give_what_the_public_call_gives():
    leaf = FloatBox(shape=(2,))
    space = Dict(b=leaf, a=leaf, z=leaf, pair=Tuple(leaf, leaf), add_batch_rank=True)
    test = ComponentTest(_Leaves(), input_spaces=dict(data=space, scale=float), backend="tf")
    executor = test.graph_executor
    rng = np.random.RandomState(1)
    data = {"a": rng.randn(3, 2), "b": rng.randn(3, 2), "z": rng.randn(3, 2),
            "pair": (rng.randn(3, 2), rng.randn(3, 2))}
    flat = test.test(("arrange", [data, 2.0]))
    assert executor._flat_call["arrange"]
    executor._flat_call["arrange"] = False
    public = test.test(("arrange", [data, 2.0]))
    f32 = {k: np.float32(v) if not isinstance(v, tuple) else tuple(np.float32(x) for x in v) for k, v in data.items()}
    expected = {"a": f32["a"] * np.float32(2.0), "b": f32["b"] - f32["a"],
                "pair": (f32["pair"][1], f32["pair"][0] + f32["z"])}
    for result in (flat, public):
        np.testing.assert_array_equal(result["a"], expected["a"])
        np.testing.assert_array_equal(result["b"], expected["b"])
        np.testing.assert_array_equal(result["pair"][0], expected["pair"][0])
        np.testing.assert_array_equal(result["pair"][1], expected["pair"][1])
    executor._flat_call["arrange"] = True
    with pytest.raises(RLGraphSpaceError, match="arrange"):
        test.test(("arrange", [dict(data, a=rng.randn(3, 3)), 2.0]))


def test_flat_calls_of_an_agent_equal_public_calls():
    def run(flat):
        agent = Agent.from_spec(_dqn_spec(), state_space=STATE, action_space=ACTIONS)
        executor = agent.graph_executor
        original = executor._concrete_function

        def trace(api):
            concrete = original(api)
            executor._flat_call[api] = executor._flat_call[api] and flat
            return concrete
        executor._concrete_function = trace
        result = _run(agent)
        assert any(executor._flat_call.values()) == flat
        return result
    np.testing.assert_array_equal(run(True), run(False))


def test_tf_num_threads_sizes_both_thread_pools():
    """tf_num_threads=1 means one thread: TF's inter-op pool otherwise has one thread per core. TF fixes
    its pools when its runtime starts, so this runs in a fresh process."""
    import os
    import subprocess
    import sys
    script = ("import numpy as np, tensorflow as tf\n"
              "from rlgraph.agents import Agent\n"
              "from rlgraph.spaces import FloatBox, IntBox\n"
              "agent = Agent.from_spec({'type': 'dqn', 'backend': 'tf',"
              " 'network_spec': [{'type': 'dense', 'units': 4}], 'execution_spec': {'tf_num_threads': 1}},"
              " state_space=FloatBox(shape=(4,)), action_space=IntBox(2))\n"
              "agent.get_action(np.zeros((1, 4), np.float32))\n"
              "print(tf.config.threading.get_intra_op_parallelism_threads(),"
              " tf.config.threading.get_inter_op_parallelism_threads())\n")
    # (Without the thread variables a parallel test run sets for its workers: TF alone would obey those.)
    env = {k: v for k, v in os.environ.items() if k not in ("TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS")}
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split()[-2:] == ["1", "1"]
