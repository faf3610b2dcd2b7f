"""PyTorch graph functions that make tensors of numpy results (an env's step, hashed strings) make
them on the device whose context they run under: the executor's GPU, or a placed component's device.
On the first GPU run they were made on the host and the builds failed ("Expected all tensors to be on
the same device"). The meta device stands in for the GPU on a CPU-only machine."""
import numpy as np
import pytest

torch = pytest.importorskip("torch")

from rlgraph.backend_system import backend_scope  # noqa: E402
from rlgraph.components.common.environment_stepper import _call_numpy  # noqa: E402
from rlgraph.components.layers.strings.string_to_hash_bucket import StringToHashBucket  # noqa: E402


def test_numpy_results_inside_a_graph_function_are_made_on_the_current_device():
    def env_step(actions):
        return [actions * 2, np.ones(len(actions), dtype=bool)]

    actions, specs = torch.tensor([1, 2, 3]), [("int64", (None,)), ("bool", (None,))]
    with backend_scope("pytorch"):
        with torch.device("meta"):
            outs = _call_numpy(env_step, [actions], specs)
        on_host = _call_numpy(env_step, [actions], specs)
    assert [out.device.type for out in outs] == ["meta", "meta"]
    assert [out.dtype for out in outs] == [torch.int64, torch.bool]
    np.testing.assert_array_equal(on_host[0].numpy(), [2, 4, 6])


def test_hash_buckets_are_made_where_the_embedding_lookup_runs():
    layer = StringToHashBucket(num_hash_buckets=10)
    body = getattr(StringToHashBucket._graph_fn_apply, "__wrapped__", StringToHashBucket._graph_fn_apply)
    text = np.array(["a b", "c"])
    with backend_scope("pytorch"):
        with torch.device("meta"):
            buckets, lengths = body(layer, text)
        host_buckets, host_lengths = body(layer, text)
    assert buckets.device.type == "meta" and lengths.device.type == "meta"
    assert host_buckets.device.type == "cpu" and host_lengths.numpy().tolist() == [2, 1]
