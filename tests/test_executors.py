"""Executors on both backends: save -> new process -> load, export, corrupt checkpoints, seeding."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from components_for_tests import Middle, Scale, Top
from rlgraph.components import Component
from rlgraph.graphs import GraphExecutor, executor_for
from rlgraph.spaces import FloatBox
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphError

TESTS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TESTS)

_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, {tests!r})
    from components_for_tests import Top
    from rlgraph.spaces import FloatBox
    from rlgraph.tests import ComponentTest
    backend, mode, path = sys.argv[1:4]
    test = ComponentTest(Top(scope="top"), input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend=backend)
    if mode == "store":
        rng = np.random.RandomState(3)
        test.graph_executor.set_weights({{"top/middle/inner/w": rng.randn(3), "top/middle/inner/b": rng.randn()}})
        written = test.graph_executor.store_model(path)
    else:
        test.graph_executor.load_model(path)
        written = path
    x = np.array([[0.1, -0.2, 0.3], [1.0, 2.0, -3.0]], np.float32)
    print(json.dumps({{"out": test.test(("run", x)).tolist(), "path": written}}))
""")


def _run(backend, mode, path):
    script = _SCRIPT.format(tests=TESTS)
    result = subprocess.run([sys.executable, "-c", script, backend, mode, path], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_store_then_load_in_a_new_process_gives_identical_outputs(backend, tmp_path):
    stored = _run(backend, "store", str(tmp_path / "ckpt" / "model"))
    loaded = _run(backend, "load", stored["path"])
    assert loaded["out"] == stored["out"]  # bit-identical
    fresh = ComponentTest(Top(scope="top"), input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)),
                          backend=backend)
    x = np.array([[0.1, -0.2, 0.3], [1.0, 2.0, -3.0]], np.float32)
    assert fresh.test(("run", x)).tolist() != stored["out"]  # the default weights differ


def test_corrupt_or_mismatching_checkpoints_raise(backend, tmp_path):
    test = ComponentTest(Scale(scope="s"), input_spaces=dict(x=FloatBox(shape=(2,))), backend=backend)
    with pytest.raises(RLGraphCheckpointError, match="no .*checkpoint"):
        test.graph_executor.load_model(str(tmp_path / "missing"))
    path = test.graph_executor.store_model(str(tmp_path / "good" / "model"))
    other = ComponentTest(Scale(scope="s"), input_spaces=dict(x=FloatBox(shape=(3,))), backend=backend)
    with pytest.raises(RLGraphCheckpointError, match="does not fit"):
        other.graph_executor.load_model(path)
    renamed = ComponentTest(Scale(scope="t"), input_spaces=dict(x=FloatBox(shape=(2,))), backend=backend)
    with pytest.raises(RLGraphCheckpointError, match="does not fit"):
        renamed.graph_executor.load_model(path)
    # Damage every file of the checkpoint.
    for name in os.listdir(tmp_path / "good"):
        with open(tmp_path / "good" / name, "wb") as handle:
            handle.write(b"\x00garbage" * 10)
    with pytest.raises(RLGraphCheckpointError):
        test.graph_executor.load_model(path)
    # The variables are untouched by the failed loads.
    recursive_assert_almost_equal(test.graph_executor.get_weights(), {"s/w": [2.0, 2.0], "s/b": 0.5})


def test_export_graph_runs_without_the_build(backend, tmp_path):
    test = ComponentTest(Top(scope="top"), input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend=backend)
    x = np.array([[1.0, 2.0, 3.0]], np.float32)
    expected = test.test(("run", x))
    # (PyTorch writes its pickled module only when asked for by name.)
    path = test.graph_executor.export_graph(str(tmp_path / "exported"),
                                            format="pickled-module" if backend == "pytorch" else None)
    if backend == "tf":
        import tensorflow as tf
        loaded = tf.saved_model.load(path)
        out = loaded.api_functions["run"](tf.constant(x)).numpy()
    else:
        import torch
        module = torch.load(path, weights_only=False)
        assert isinstance(module, torch.nn.Module)
        assert sorted(n for n, _ in module.named_parameters()) == ["v0", "v1"]
        device = next(module.parameters()).device  # (The executor's: a GPU where torch sees one.)
        out = module("run", torch.from_numpy(x).to(device)).detach().cpu().numpy()
    recursive_assert_almost_equal(out, expected)


class Noisy(Component):
    @rlgraph_api
    def _graph_fn_noise(self, x):
        from rlgraph.backend_system import get_backend
        if get_backend() == "tf":
            import tensorflow as tf
            return x + tf.random.uniform(tf.shape(x))
        import torch
        return x + torch.rand(x.shape)


def test_seeding_makes_runs_repeatable(backend):
    def run(seed):
        test = ComponentTest(Noisy(), input_spaces=dict(x=FloatBox(shape=(4,))), backend=backend, seed=seed)
        return [test.test(("noise", np.zeros(4, np.float32))) for _ in range(2)]
    first, again, other = run(5), run(5), run(6)
    recursive_assert_almost_equal(first, again)
    assert not np.allclose(first[0], other[0]) and not np.allclose(first[0], first[1])


def test_executor_from_spec_and_errors(backend):
    executor = GraphExecutor.from_spec(backend, execution_spec={"seed": 1})
    assert executor.backend == backend and type(executor) is type(executor_for(backend))
    with pytest.raises(RLGraphError, match="unknown key 'sede'.*did you mean 'seed'"):
        GraphExecutor.from_spec(backend, sede=1)
    stats = executor.build(Middle(scope="m"), dict(x=FloatBox(shape=(2,), add_batch_rank=True)))
    assert stats.variable_count == 2 and stats.total_build_time >= stats.build_overhead > 0
    with pytest.raises(RLGraphError, match="built already"):
        executor_for(backend).build(executor.root_component, dict(x=FloatBox(shape=(2,), add_batch_rank=True)))
    out = executor.execute(("twice", np.ones((2, 2))), ("twice", [np.zeros((1, 2))]))
    recursive_assert_almost_equal(out, [np.full((2, 2), 4.5), [[1.5, 1.5]]])
    with pytest.raises(RLGraphError, match="no variable named 'm/x'"):
        executor.read_variable_values("m/x")
    recursive_assert_almost_equal(executor.read_variable_values(["m/inner/b"]), [0.5])


def test_pytorch_no_grad_api_and_trainable_outputs():
    pytest.importorskip("torch")
    import torch
    root = Scale(scope="s")
    grad_enabled = []

    @graph_fn(component=root)
    def _graph_fn_probe(self, x):
        grad_enabled.append(torch.is_grad_enabled())
        return x

    @rlgraph_api(component=root, no_grad=True)
    def act(self, x):
        return self._graph_fn_probe(self.apply(x))

    @rlgraph_api(component=root)
    def learn(self, x):
        return self._graph_fn_probe(self.apply(x))

    test = ComponentTest(root, input_spaces=dict(x=FloatBox(shape=(2,))), backend="pytorch")
    grad_enabled.clear()
    for _ in range(4):  # Also once call plans replay the graph functions.
        recursive_assert_almost_equal(test.test(("act", np.ones(2))), [2.5, 2.5])
        recursive_assert_almost_equal(test.test(("learn", np.ones(2))), [2.5, 2.5])
    assert grad_enabled == [False, True] * 4
    assert torch.is_grad_enabled()
    # A trainable path returns numpy too (outputs are detached).
    recursive_assert_almost_equal(test.test(("apply", np.ones(2))), [2.5, 2.5])


def test_optional_arguments_with_a_space_can_be_left_out(backend):
    class Scaler(Component):
        @rlgraph_api
        def _graph_fn_scale(self, x, factor=2.0, offset=1.0):
            return x * factor + offset

    test = ComponentTest(Scaler(), input_spaces=dict(x=FloatBox(add_batch_rank=True), factor=float, offset=float),
                         backend=backend)
    test.test(("scale", [np.array([1.0, 2.0])]), expected_outputs=np.array([3.0, 5.0]))
    test.test(("scale", [np.array([1.0, 2.0]), 3.0]), expected_outputs=np.array([4.0, 7.0]))
    test.test(("scale", [np.array([1.0, 2.0]), 3.0, 0.0]), expected_outputs=np.array([3.0, 6.0]))


class TinyTimes(Component):
    """Multiplies its input by a float32 subnormal: 0 under flush-to-zero, 1e-39 * x otherwise."""

    @rlgraph_api
    def _graph_fn_run(self, x):
        import torch
        return x * torch.tensor(1e-39, dtype=torch.float32)


def test_pytorch_flush_denormal_is_scoped_to_api_calls():
    pytest.importorskip("torch")
    space = dict(x=FloatBox(shape=(2,)))
    x = np.array([1.0, 2.0], np.float32)
    tiny = 5e-324  # The smallest double: a subnormal that flush-to-zero turns into 0.
    # Default: subnormal results inside the call are flushed; the thread's setting is back to off after it.
    flushed = ComponentTest(TinyTimes(scope="t"), input_spaces=space, backend="pytorch").test(("run", x))
    np.testing.assert_array_equal(flushed, [0.0, 0.0])
    assert tiny * 1.0 != 0.0
    kept = ComponentTest(TinyTimes(scope="t"), input_spaces=space, backend="pytorch",
                         execution_spec={"torch_flush_denormal": False}).test(("run", x))
    np.testing.assert_allclose(kept, [1e-39, 2e-39], rtol=1e-3)
    assert tiny * 1.0 != 0.0


_HEAP_SCRIPT = textwrap.dedent("""
    import resource, sys
    import torch
    sys.path.insert(0, {tests!r})
    from components_for_tests import Top
    from rlgraph.spaces import FloatBox
    from rlgraph.tests import ComponentTest
    # (On the CPU: the promise is about host memory; a GPU executor's CUDA runtime allocates on its own.)
    ComponentTest(Top(scope="top"), input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)),
                  backend="pytorch", execution_spec={{"device": "cpu"}})

    def update_like():  # 24 temporaries of 256 KiB (6 MiB) alive at once, then all freed.
        return [torch.ones(256, 256) for _ in range(24)]

    update_like()
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(20):
        update_like()
    print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults)
""")


def test_pytorch_executor_keeps_freed_heap_memory_for_the_next_call():
    """glibc: temporaries freed at the end of one call are reused by the next, without page faults.

    Without the executor's malloc settings, whether they are given back to the OS and faulted in
    again (~1,300 faults per round here) depends on what the process freed before (glibc's dynamic
    thresholds), so only the promised behaviour is checked."""
    pytest.importorskip("torch")
    from rlgraph.graphs.pytorch_executor import keep_freed_heap_memory
    if not keep_freed_heap_memory():
        pytest.skip(reason="the C library is not glibc: the executor leaves malloc's settings alone")
    result = subprocess.run([sys.executable, "-c", _HEAP_SCRIPT.format(tests=TESTS)], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert int(result.stdout.strip().splitlines()[-1]) < 200  # 20 rounds: a few stray faults at most.
