"""`execution_spec.compile`: root API methods compiled with torch.compile (PyTorch) or XLA (TF).

A compiled method gives what the uncompiled one gives, within float tolerance (fused kernels round
differently): the same greedy actions and, from the same weights and batches, the same losses and
weights. A method the compiler cannot take whole, or whose results XLA would change (random draws,
assertions), runs uncompiled with one warning that says why, and its results are exactly the
uncompiled ones. See rlgraph/graphs/compilation.py.
"""
import json
import logging

import numpy as np
import pytest

from rlgraph.agents import Agent
from rlgraph.backend_system import get_backend
from rlgraph.benchmarks.update_overhead import make_batch
from rlgraph.components import Component
from rlgraph.graphs.compilation import torch_failure_reason
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils.compile_spec import check_compile
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

COMPILED = ["update_from_external_batch", "get_greedy_actions"]


def _dqn(backend, compile_spec, seed=1, capacity=None):
    with open("configs/dqn_cartpole.json") as handle:
        spec = json.load(handle)
    if capacity:
        spec["memory_spec"] = {"type": "replay-memory", "capacity": capacity}
    spec["network_spec"] = [{"type": "dense", "units": 32, "activation": "relu"}]
    spec["execution_spec"] = dict(seed=seed, compile=compile_spec, torch_num_threads=1, tf_num_threads=1)
    return Agent.from_spec(spec, state_space=FloatBox(shape=(4,)), action_space=IntBox(2), backend=backend)


def test_compile_spec_values():
    assert check_compile(False, "A") is False and check_compile(None, "A") is False
    assert check_compile(True, "A") == {"api_methods": None, "mode": None}
    assert check_compile({"api_methods": "update"}, "A") == {"api_methods": ("update",), "mode": None}
    for bad, text in ((1, "true, false or a dict"), ("yes", "true, false or a dict"),
                      ({"modes": "default"}, "unknown"), ({"mode": "fast"}, "torch.compile's modes"),
                      ({"api_methods": []}, "non-empty list"), ({"api_methods": [3]}, "non-empty list")):
        with pytest.raises(RLGraphSpecError, match=text) as error:
            check_compile(bad, "Agent")
        assert "execution_spec.compile" in str(error.value)


def test_agent_refuses_bad_compile_values(backend):
    with pytest.raises(RLGraphSpecError, match="execution_spec.compile"):
        _dqn(backend, "yes")
    with pytest.raises(RLGraphSpecError, match="no root API method") as error:
        _dqn(backend, {"api_methods": ["update_from_external_batc"]})
    assert "update_from_external_batch" in str(error.value)  # The names it could have meant.
    if backend == "tf":
        with pytest.raises(RLGraphSpecError, match="no mode 'reduce-overhead'"):
            _dqn(backend, {"mode": "reduce-overhead"})


def test_compiled_dqn_updates_and_acts_as_uncompiled(backend):
    plain, compiled = _dqn(backend, False), _dqn(backend, {"api_methods": COMPILED})
    assert compiled.graph_executor.compiled_apis == frozenset(COMPILED)
    batch = make_batch(4, 2, batch_size=32)
    states = np.random.RandomState(0).randn(64, 4).astype(np.float32)
    for _ in range(3):
        ours, theirs = compiled.update(batch), plain.update(batch)
        np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5)
        np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-4, atol=1e-6)  # The TD errors.
    weights, expected = compiled.get_weights(), plain.get_weights()
    assert set(weights) == set(expected)
    for name in expected:
        np.testing.assert_allclose(weights[name], expected[name], rtol=1e-5, atol=1e-6, err_msg=name)
    np.testing.assert_array_equal(compiled.get_action(states, use_exploration=False),
                                  plain.get_action(states, use_exploration=False))
    status = compiled.graph_executor.compile_status
    assert set(status) == set(COMPILED)
    for api in COMPILED:
        assert status[api]["compiled"] is True and status[api]["reason"] is None and status[api]["seconds"] > 0
    assert compiled.build_stats["compile"] is status
    assert "compile" not in plain.build_stats


class HostAndNoise(Component):
    """`double` takes a python decision (PyTorch) or runs numpy (TF), which neither compiler can take;
    `noisy` draws random numbers."""

    @rlgraph_api
    def _graph_fn_double(self, x):
        if get_backend() == "tf":
            import tensorflow as tf
            y = tf.numpy_function(lambda a: a * np.float32(2), [x], tf.float32)
            y.set_shape(x.shape)
            return y
        # A python decision on a tensor's value (Dynamo traces numpy maths, not this).
        return x * 2.0 if bool((x == x).all()) else x

    @rlgraph_api
    def _graph_fn_noisy(self, x):
        if get_backend() == "tf":
            import tensorflow as tf
            return x + tf.random.normal(tf.shape(x))
        import torch
        return x + torch.randn_like(x)


def _host_and_noise(backend, compile_spec):
    return ComponentTest(HostAndNoise(scope="host-and-noise"), input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend=backend, seed=5, execution_spec={"compile": compile_spec})


def test_methods_the_compiler_cannot_take_run_uncompiled_with_one_warning(backend, caplog):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    plain, compiled = _host_and_noise(backend, False), _host_and_noise(backend, True)
    with caplog.at_level(logging.WARNING, logger="rlgraph.graphs.compilation"):
        # (A compiled PyTorch agent draws from torch's global generator, which the other agent's build
        # seeded too: each sequence starts from the seed.)
        compiled.graph_executor.seed(5)
        ours = [(compiled.test(("double", x)), compiled.test(("noisy", x))) for _ in range(3)]
    plain.graph_executor.seed(5)
    for (double, noisy), _ in zip(ours, range(3)):
        np.testing.assert_array_equal(double, x * 2)
        # Random draws: the same numbers as uncompiled, from the same seed (PyTorch compiles the
        # method with torch's own generator; XLA's would differ, so TF leaves it uncompiled).
        np.testing.assert_array_equal(noisy, plain.test(("noisy", x)))
    status = compiled.graph_executor.compile_status
    warnings = [r.getMessage() for r in caplog.records if r.name == "rlgraph.graphs.compilation"]
    assert status["double"]["compiled"] is False
    assert len([w for w in warnings if "host-and-noise.double runs uncompiled" in w]) == 1, warnings
    if backend == "pytorch":
        assert "_graph_fn_double" in status["double"]["reason"], status["double"]
        assert status["noisy"]["compiled"] is True
    else:
        assert "XLA cannot compile it" in status["double"]["reason"], status["double"]
        assert status["noisy"]["compiled"] is False
        assert "random ops (RandomStandardNormal)" in status["noisy"]["reason"]
        assert len([w for w in warnings if "host-and-noise.noisy runs uncompiled" in w]) == 1, warnings


def test_exploring_dqn_actions_stay_exact(backend, caplog):
    # get_actions has no compiled form on either backend (PyTorch: greedy calls skip the random draws,
    # a branch on the input; TF: XLA's random ops): it warns once and acts exactly as uncompiled.
    plain, compiled = _dqn(backend, False, seed=3), _dqn(backend, {"api_methods": ["get_actions"]}, seed=3)
    states = np.random.RandomState(1).randn(20, 4).astype(np.float32)
    with caplog.at_level(logging.WARNING, logger="rlgraph.graphs.compilation"):
        compiled.graph_executor.seed(3)
        ours = [int(compiled.get_action(s, time_percentage=0.05)) for s in states]
    plain.graph_executor.seed(3)
    theirs = [int(plain.get_action(s, time_percentage=0.05)) for s in states]
    assert ours == theirs and 0 < sum(ours) < len(ours)
    reason = compiled.graph_executor.compile_status["get_actions"]["reason"]
    assert ("exploration.py" in reason) if backend == "pytorch" else ("RandomUniform" in reason), reason
    assert len([r for r in caplog.records if r.name == "rlgraph.graphs.compilation"]) == 1


def test_torch_failure_reason_names_the_rlgraph_line():
    text = ("Data-dependent branching\n  Explanation: ...\nfrom user code:\n"
            '   File "/x/rlgraph/graphs/plans.py", line 39, in run\n'
            '  File "/x/rlgraph/components/explorations/exploration.py", line 141, in _graph_fn_epsilon_greedy\n')
    assert torch_failure_reason(RuntimeError(text)) == (
        "RuntimeError: Data-dependent branching (at rlgraph/components/explorations/exploration.py:141 in "
        "_graph_fn_epsilon_greedy)")
    failed = "backend='inductor' raised:\nRuntimeError: boom\n"
    assert torch_failure_reason(ValueError(failed)) == "ValueError: backend='inductor' raised: RuntimeError: boom"


def test_the_memory_path_compiled_equals_uncompiled(backend):
    # Inserts that wrap around the ring, then updates that sample it. PyTorch compiles both (the
    # sampling draws from torch's generator); TF compiles the insert and keeps the update uncompiled
    # (XLA's generator would sample other records).
    rng = np.random.RandomState(0)
    states, actions = rng.randn(100, 4).astype(np.float32), rng.randint(0, 2, 100)
    losses, memories = {}, {}
    for compile_spec in (False, {"api_methods": ["update_from_memory", "insert_records"]}):
        agent = _dqn(backend, compile_spec, seed=2, capacity=64)
        for start in (0, 50):  # Two inserts: the second one wraps.
            part = slice(start, start + 50)
            agent.observe(states[part], actions[part], None, np.ones(50, np.float32), states[part][::-1].copy(),
                          np.arange(50) % 25 == 24, truncated=True)
        memories[bool(compile_spec)] = {k: v for k, v in agent.graph_executor.get_weights().items() if "memory" in k}
        agent.graph_executor.seed(2)
        losses[bool(compile_spec)] = [float(agent.update()[0]) for _ in range(3)]
    assert memories[True] and set(memories[True]) == set(memories[False])
    for name, value in memories[False].items():
        np.testing.assert_array_equal(memories[True][name], value, err_msg=name)
    np.testing.assert_allclose(losses[True], losses[False], rtol=1e-5)
    status = agent.graph_executor.compile_status
    assert status["insert_records"]["compiled"] is True
    if backend == "pytorch":
        assert status["update_from_memory"]["compiled"] is True
    else:
        assert status["update_from_memory"]["compiled"] is False
        assert "RandomUniformInt" in status["update_from_memory"]["reason"]


class PythonScale(Component):
    """Multiplies by the factor of a python setting (a name) read at each call: Dynamo guards on the
    name, so each new one recompiles."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.setting = "s1"

    @rlgraph_api
    def _graph_fn_scaled(self, x):
        return x * float(self.setting[1:])


def test_a_method_at_the_recompile_limit_runs_uncompiled_and_says_so(caplog):
    """PyTorch only: Dynamo recompiles `scaled` for each new setting it reads, and at its recompile
    limit it raises (with fullgraph), which used to fail the agent's call. Every call gives the
    uncompiled result, and from the limit on the method runs uncompiled, its status says why, with one
    warning. (TF traces a method once for its input signature: a python value is read at the trace,
    never recompiled.)"""
    pytest.importorskip("torch", reason="the recompile limit is torch.compile's")
    import torch._dynamo
    component = PythonScale(scope="python-scale")
    test = ComponentTest(component, input_spaces=dict(x=FloatBox(shape=(2,), add_batch_rank=True)),
                         backend="pytorch", execution_spec={"compile": True})
    limit = torch._dynamo.config.recompile_limit
    x = np.ones((3, 2), np.float32)
    with caplog.at_level(logging.WARNING, logger="rlgraph.graphs.compilation"):
        for step in range(limit + 3):
            component.setting = f"s{step + 1}"
            np.testing.assert_array_equal(test.test(("scaled", x)), x * (step + 1))
            if step == 0:
                assert test.graph_executor.compile_status["scaled"]["compiled"] is True
    entry = test.graph_executor.compile_status["scaled"]
    assert entry["compiled"] is False and f"recompiled {limit} times" in entry["reason"], entry
    warnings = [r.getMessage() for r in caplog.records if r.name == "rlgraph.graphs.compilation"]
    assert len(warnings) == 1 and "python-scale.scaled runs uncompiled" in warnings[0], warnings
