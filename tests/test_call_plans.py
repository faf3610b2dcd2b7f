"""One execution semantics: API methods run once, at build time; graph functions on every call.

The build derives each root API method's call plan from its trace; the PyTorch executor replays
it, TensorFlow's tf.function traces the same python once. Behaviour tests run on both backends
from the same body and must give the same numbers.
"""
import numpy as np
import pytest

from components_for_tests import Containers, Top
from rlgraph.backend_system import get_backend
from rlgraph.components import Component
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphBuildError, RLGraphError


def _top_reference(x):
    # Top.run: sum(scale(scale(x)) - x) with w = 2, b = 0.5: (4x + 1.5) - x = 3x + 1.5 per element.
    return (3.0 * x + 1.5).sum(-1)


def test_repeated_calls_with_changing_batch_sizes_match_numpy(backend):
    test = ComponentTest(Top(scope="top"), input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend=backend)
    rng = np.random.RandomState(0)
    for batch_size in (1, 1, 1, 4, 4, 4, 1, 2, 4, 0):
        x = rng.randn(batch_size, 3).astype(np.float32)
        np.testing.assert_allclose(test.test(("run", x)), _top_reference(x), rtol=1e-5)


def test_every_root_api_has_a_plan_after_the_build(backend):
    test = ComponentTest(Top(scope="top"), input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend=backend)
    plans = test.graph_executor.graph_builder.plans
    assert set(plans) == {"run", "twice"}
    # run: inner.apply twice, minus, sum (the API layers between them are not steps).
    assert len(plans["run"].steps) == 4
    assert len(plans["twice"].steps) == 3


def test_container_inputs_and_outputs_replay(backend):
    space = Dict(a=FloatBox(shape=(2,)), b=FloatBox(), add_batch_rank=True)
    test = ComponentTest(Containers(scope="c"), input_spaces=dict(data=space, factor=float), backend=backend)
    for factor in (2.0, 3.0, -1.0, 0.5):
        data = {"a": np.array([[1.0, 2.0]], np.float32), "b": np.array([4.0], np.float32)}
        out = test.test(("keyed", [data, factor]))
        np.testing.assert_allclose(out["a"], [[factor, 2 * factor]], rtol=1e-6)
        np.testing.assert_allclose(out["b"], [-4.0])


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


class Brancher(Component):
    """Takes a python decision on an input value: not allowed in an API method."""

    @rlgraph_api
    def run(self, x, flag):
        if flag:
            return self._graph_fn_a(x)
        return self._graph_fn_b(x)

    @graph_fn
    def _graph_fn_a(self, x):
        return x + 1

    @graph_fn
    def _graph_fn_b(self, x):
        return x - 1


def test_a_python_branch_on_an_input_value_is_a_build_error_on_both_backends(backend):
    with pytest.raises(RLGraphBuildError) as info:
        ComponentTest(Brancher(scope="b"), input_spaces=dict(x=FloatBox(shape=(2,), add_batch_rank=True),
                                                             flag=bool), backend=backend)
    message = str(info.value)
    assert message.startswith("b.run(flag):")
    assert "graph function" in message


class GraphBrancher(Brancher):
    """The same decision, taken where it belongs: in a graph function."""

    @rlgraph_api
    def run(self, x, flag):
        return self._graph_fn_choose(flag, self._graph_fn_a(x), self._graph_fn_b(x))

    @graph_fn
    def _graph_fn_choose(self, flag, a, b):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.where(flag, a, b)
        return a if bool(flag) else b


def test_the_decision_in_a_graph_function_gives_the_right_values_every_call(backend):
    test = ComponentTest(GraphBrancher(scope="b"), input_spaces=dict(x=FloatBox(shape=(2,), add_batch_rank=True),
                                                                     flag=bool), backend=backend)
    x = np.array([[1.0, 2.0]], np.float32)
    for flag in (True, True, True, False, False, True):
        np.testing.assert_allclose(test.test(("run", [x, flag])), x + (1.0 if flag else -1.0))


class _ValueUser(Component):
    """API methods that use a traced value in python in different ways."""

    def __init__(self, use, **kwargs):
        super().__init__(**kwargs)
        self.use = use

    @rlgraph_api
    def run(self, x, n):
        return self._graph_fn_id(self.use(x, n, self._graph_fn_id(x)))

    @graph_fn
    def _graph_fn_id(self, x):
        return x


@pytest.mark.parametrize("use, where, operation", [
    (lambda x, n, y: x if int(n) else x, "u.run(n)", "int(x)"),
    (lambda x, n, y: x[: len(x)], "u.run(x)", "len(x)"),
    (lambda x, n, y: x if n > 2 else x, "u.run(n)", ">"),
    (lambda x, n, y: x if n == 2 else x, "u.run(n)", "=="),
    (lambda x, n, y: x + 1, "u.run(x)", "+"),
    (lambda x, n, y: list(x)[0], "u.run(x)", "iteration"),
    (lambda x, n, y: x if y else x, "u.run:", "a value computed by a graph function"),
])
def test_every_python_use_of_a_traced_value_names_api_and_argument(backend, use, where, operation):
    with pytest.raises(RLGraphBuildError) as info:
        ComponentTest(_ValueUser(use, scope="u"), input_spaces=dict(x=FloatBox(shape=(2,), add_batch_rank=True),
                                                                    n=IntBox(5)), backend=backend)
    assert str(info.value).startswith(where)
    assert operation in str(info.value)


class _Routed(Component):
    """An API method whose route depends on python state: fixed when the build traces it."""

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


def test_python_state_read_by_an_api_method_is_fixed_at_build_on_both_backends(backend):
    component = _Routed(scope="routed")
    component.negate = True
    test = ComponentTest(component, input_spaces=dict(x=FloatBox(add_batch_rank=True)), backend=backend)
    x = np.array([1.5], np.float32)
    for negate in (True, False, True):
        component.negate = negate
        np.testing.assert_allclose(test.test(("route", x)), [-1.5])


class _Numbers(Component):
    @rlgraph_api
    def total(self, x):
        return self._graph_fn_scaled(x, self._graph_fn_count(x))

    @graph_fn
    def _graph_fn_count(self, x):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.reduce_sum(x)
        return float(x.sum())  # A python number made at run time: passed on, never baked in.

    @graph_fn
    def _graph_fn_scaled(self, x, count):
        return x * count


def test_python_numbers_from_graph_functions_are_recomputed_every_call(backend):
    test = ComponentTest(_Numbers(scope="numbers"), input_spaces=dict(x=FloatBox(add_batch_rank=True)),
                         backend=backend)
    for value in (1.0, 2.0, 3.0, 4.0):
        x = np.array([value, 1.0], np.float32)
        np.testing.assert_allclose(test.test(("total", x)), x * (value + 1.0))


class _Stash(Component):
    """Keeps a traced value of one API call to use it in another: refused at build."""

    @rlgraph_api
    def first(self, x):
        self.kept = self._graph_fn_id(x)
        return self.kept

    @rlgraph_api
    def second(self, x):
        return self._graph_fn_id(self.kept)

    @graph_fn
    def _graph_fn_id(self, x):
        return x


def test_a_traced_value_kept_from_another_api_call_is_a_build_error(backend):
    with pytest.raises(RLGraphBuildError, match="does not come from this call"):
        ComponentTest(_Stash(scope="stash"), input_spaces=dict(x=FloatBox(add_batch_rank=True)), backend=backend)


def test_an_input_with_a_space_must_be_passed(backend):
    class _Optional(Component):
        @rlgraph_api
        def run(self, x, y=None):
            return self._graph_fn_add(x, y)

        @graph_fn
        def _graph_fn_add(self, x, y):
            return x + y

    test = ComponentTest(_Optional(scope="opt"), input_spaces=dict(x=FloatBox(add_batch_rank=True),
                                                                   y=FloatBox(add_batch_rank=True)), backend=backend)
    np.testing.assert_allclose(test.test(("run", [np.ones(2, np.float32), np.ones(2, np.float32)])), [2.0, 2.0])
    with pytest.raises(RLGraphError, match=r"opt.run\(y\).*must pass it"):
        test.test(("run", [np.ones(2, np.float32)]))


def _dqn_trace(backend: str) -> list:
    from rlgraph.agents import Agent
    spec = {"type": "dqn", "network_spec": [{"type": "dense", "units": 16, "activation": "relu"}],
            "memory_spec": {"type": "replay-memory", "capacity": 64},
            "update_spec": {"batch_size": 8, "steps_before_update": 0, "sync_interval": 4},
            "execution_spec": {"seed": 3, "max_timesteps": 100}}
    agent = Agent.from_spec(spec, state_space=FloatBox(shape=(4,)), action_space={"type": "int-box", "high": 3},
                            backend=backend)
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
    return trace


def test_dqn_agent_is_deterministic_under_its_seed(backend):
    # The same seed, states and calls: actions and losses must repeat exactly.
    assert _dqn_trace(backend) == _dqn_trace(backend)


def test_the_removed_torch_call_plans_key_is_explained():
    # The spec is checked before any backend is touched: one backend is enough.
    from rlgraph.agents import Agent
    from rlgraph.utils.rlgraph_errors import RLGraphSpecError
    spec = {"type": "dqn", "network_spec": [{"type": "dense", "units": 4}],
            "execution_spec": {"torch_call_plans": False}}
    with pytest.raises(RLGraphSpecError, match=r"torch_call_plans.*derived at build and always used"):
        Agent.from_spec(spec, state_space=FloatBox(shape=(2,)), action_space=IntBox(2), backend="pytorch")
