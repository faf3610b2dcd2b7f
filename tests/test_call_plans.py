"""Call plans: the PyTorch executor replays an API call's graph functions without the API layers.

Behaviour tests run on both backends (TF serves API methods through tf.function; the results
must be the same either way); tests of the plan cache itself are PyTorch-only.
"""
import numpy as np

from components_for_tests import Containers, Top
from rlgraph.backend_system import get_backend
from rlgraph.components import Component
from rlgraph.spaces import Dict, FloatBox
from rlgraph.tests import ComponentTest
from rlgraph.utils.decorators import graph_fn, rlgraph_api


def _top_reference(x):
    # Top.run: sum(scale(scale(x)) - x) with w = 2, b = 0.5: (4x + 1.5) - x = 3x + 1.5 per element.
    return (3.0 * x + 1.5).sum(-1)


def _plans(test):
    return test.graph_executor.plans


def test_repeated_calls_with_changing_batch_sizes_match_numpy(backend):
    test = ComponentTest(Top(scope="top"), input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend=backend)
    rng = np.random.RandomState(0)
    for batch_size in (1, 1, 1, 4, 4, 4, 1, 2, 4):
        x = rng.randn(batch_size, 3).astype(np.float32)
        np.testing.assert_allclose(test.test(("run", x)), _top_reference(x), rtol=1e-5)
    if backend == "pytorch":
        plans = _plans(test).plans["run"]
        assert sum(type(p).__name__ == "CallPlan" for p in plans.values()) == 2  # B=1 and B=4 (B=2 seen once)
        assert not _plans(test).unplannable


def test_container_inputs_and_outputs_replay(backend):
    space = Dict(a=FloatBox(shape=(2,)), b=FloatBox(), add_batch_rank=True)
    test = ComponentTest(Containers(scope="c"), input_spaces=dict(data=space, factor=float), backend=backend)
    for factor in (2.0, 3.0, -1.0, 0.5):
        data = {"a": np.array([[1.0, 2.0]], np.float32), "b": np.array([4.0], np.float32)}
        out = test.test(("keyed", [data, factor]))
        np.testing.assert_allclose(out["a"], [[factor, 2 * factor]], rtol=1e-6)
        np.testing.assert_allclose(out["b"], [-4.0])
    if backend == "pytorch":
        assert any(type(p).__name__ == "CallPlan" for p in _plans(test).plans["keyed"].values())


class _Noise(Component):
    @rlgraph_api
    def draw(self, x):
        return self._graph_fn_draw(x)

    @graph_fn
    def _graph_fn_draw(self, x):
        if get_backend() == "tf":
            import tensorflow as tf
            return x + tf.random.uniform(tf.shape(x))
        import torch
        return x + torch.rand(x.shape)


def test_random_draws_are_fresh_on_every_call(backend):
    test = ComponentTest(_Noise(scope="noise"), input_spaces=dict(x=FloatBox(shape=(5,), add_batch_rank=True)),
                         backend=backend)
    x = np.zeros((1, 5), np.float32)
    draws = [test.test(("draw", x)) for _ in range(6)]
    assert all(((d >= 0) & (d < 1)).all() for d in draws)
    assert len({d.tobytes() for d in draws}) == 6  # Replays draw anew; nothing is baked in.


class _Routed(Component):
    """An API method whose route depends on python state (not allowed to change once planned)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.negate = False

    @rlgraph_api
    def route(self, x):
        return self._graph_fn_negate(x) if self.negate else self._graph_fn_double(x)

    @graph_fn
    def _graph_fn_negate(self, x):
        return -x

    @graph_fn
    def _graph_fn_double(self, x):
        return x * 2.0


def test_a_route_that_differs_between_the_first_calls_is_never_planned():
    component = _Routed(scope="routed")
    test = ComponentTest(component, input_spaces=dict(x=FloatBox(add_batch_rank=True)), backend="pytorch")
    x = np.array([1.5], np.float32)
    component.negate = False
    np.testing.assert_allclose(test.test(("route", x)), [3.0])
    component.negate = True
    np.testing.assert_allclose(test.test(("route", x)), [-1.5])
    assert "route" in _plans(test).unplannable
    for negate, expected in ((False, 3.0), (True, -1.5), (False, 3.0)):
        component.negate = negate
        np.testing.assert_allclose(test.test(("route", x)), [expected])
    # After a change of python state that alters routes, `clear()` makes the executor re-record.
    _plans(test).clear()
    assert not _plans(test).unplannable


class _Numbers(Component):
    @rlgraph_api
    def total(self, x):
        return self._graph_fn_scaled(x, self._graph_fn_count(x))

    @graph_fn
    def _graph_fn_count(self, x):
        return float(x.sum())  # A python number made at run time: must not be baked into a plan.

    @graph_fn
    def _graph_fn_scaled(self, x, count):
        return x * count


def test_python_numbers_from_graph_functions_disable_the_plan():
    test = ComponentTest(_Numbers(scope="numbers"), input_spaces=dict(x=FloatBox(add_batch_rank=True)),
                         backend="pytorch")
    for value in (1.0, 2.0, 3.0, 4.0):
        x = np.array([value, 1.0], np.float32)
        np.testing.assert_allclose(test.test(("total", x)), x * (value + 1.0))
    assert "python" not in _plans(test).plans.get("total", {})
    assert "returned a float" in _plans(test).unplannable["total"]


def test_plans_can_be_switched_off():
    test = ComponentTest(Top(scope="top"), input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend="pytorch", execution_spec={"torch_call_plans": False})
    assert _plans(test) is None
    x = np.ones((2, 3), np.float32)
    for _ in range(3):
        np.testing.assert_allclose(test.test(("run", x)), _top_reference(x), rtol=1e-6)


def _dqn_trace(plans: bool) -> list:
    from rlgraph.agents import Agent
    spec = {"type": "dqn", "network_spec": [{"type": "dense", "units": 16, "activation": "relu"}],
            "memory_spec": {"type": "replay-memory", "capacity": 64},
            "update_spec": {"batch_size": 8, "steps_before_update": 0, "sync_interval": 4},
            "execution_spec": {"seed": 3, "torch_call_plans": plans, "max_timesteps": 100}}
    agent = Agent.from_spec(spec, state_space=FloatBox(shape=(4,)), action_space={"type": "int-box", "high": 3},
                            backend="pytorch")
    rng = np.random.RandomState(0)
    trace = []
    for step in range(40):
        state = rng.randn(4).astype(np.float32)
        action = agent.get_action(state)
        greedy = agent.get_action(rng.randn(3, 4).astype(np.float32), use_exploration=False)
        agent.observe(state, action, None, float(rng.randn()), rng.randn(4).astype(np.float32), step % 9 == 8)
        trace += [int(action), *greedy.tolist()]
        if step >= 16:
            trace.append(float(agent.update()[0]))
    executor_plans = agent.graph_executor.plans
    if plans:
        for api in ("get_actions", "get_greedy_actions", "update_from_memory"):
            assert any(type(p).__name__ == "CallPlan" for p in executor_plans.plans[api].values()), api
    else:
        assert executor_plans is None
    return trace


def test_dqn_agent_is_identical_with_and_without_plans():
    # The same seed, states and calls: actions and losses must not depend on the fast path.
    assert _dqn_trace(True) == _dqn_trace(False)
