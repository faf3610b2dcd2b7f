"""The packed host<->device transfers of the PyTorch executor (rlgraph/graphs/torch_transfers.py).

On a GPU an API call's input leaves move in one transfer and its results come back in one. The
packing is the part that can go wrong (offsets, alignment, dtypes, scalars, empty and strided
arrays); it is the same code whatever the target device, so it is checked here on the CPU always and on
the GPU where torch sees one: every leaf must come back with its dtype, shape and bytes.
"""
import collections

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="the transfers are PyTorch's (the '.[torch]' extra)")

from rlgraph.graphs.torch_transfers import ALIGNMENT, move_to, numpy_dtype, to_device, to_host  # noqa: E402

Pair = collections.namedtuple("Pair", ["left", "right"])
DTYPES = [np.bool_, np.uint8, np.int8, np.int16, np.int32, np.int64, np.float16, np.float32, np.float64]


def _arrays(seed):
    """One array per dtype of odd byte sizes (so that leaves need padding), a scalar, an empty array
    and two strided ones (a transpose and a slice with a step)."""
    rng = np.random.default_rng(seed)
    arrays = [(rng.standard_normal((3, 5)) * 100).astype(dtype) for dtype in DTYPES]
    arrays[0] = rng.random((3, 5)) > 0.5
    arrays.append(np.asarray(rng.standard_normal(), np.float32))  # A 0-d value.
    arrays.append(np.zeros((0, 4), np.float32))
    arrays.append(rng.standard_normal((4, 3)).T)
    arrays.append(np.arange(21, dtype=np.int64)[::4])
    arrays.append(np.array([np.nan, np.inf, -np.inf, 1e-45], np.float32))  # Exact bits, non-finite too.
    return [np.asarray(a) for a in arrays]


def _nest(leaves):
    """The leaves in a nest of every container the executor sees: dicts, tuples, named tuples, lists."""
    return {"a": leaves[0], "b": (leaves[1], [leaves[2], leaves[3]]), "c": Pair(leaves[4], {"d": leaves[5]}),
            "rest": list(leaves[6:]), "none": None}


def _same(received, expected):
    """Same dtype, shape and bytes (so NaN payloads, -0.0 and subnormals count too)."""
    assert received.dtype == expected.dtype and received.shape == expected.shape
    assert received.tobytes() == expected.tobytes()


@pytest.fixture(params=["cpu", "cuda"])
def device(request):
    """The CPU always; the first GPU where torch sees one (the case is skipped with that reason elsewhere)."""
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip(reason="torch sees no GPU on this machine (the CPU case runs)")
    return request.param


def _target(device):
    return torch.device("cuda:0" if device == "cuda" else "cpu")


def test_inputs_move_in_one_buffer_with_every_byte_in_place(device):
    arrays = _arrays(seed=1)
    text = np.array(["text stays numpy"])
    moved = to_device(dict(_nest([torch.from_numpy(a) for a in arrays]), text=text), _target(device),
                      pin=device == "cuda")
    assert moved["text"] is text and moved["none"] is None
    assert isinstance(moved["c"], Pair) and isinstance(moved["b"][1], list)
    leaves = [moved["a"], moved["b"][0], *moved["b"][1], moved["c"].left, moved["c"].right["d"], *moved["rest"]]
    assert all(leaf.device.type == _target(device).type for leaf in leaves)
    for leaf, array in zip(leaves, arrays):
        _same(leaf.cpu().numpy(), array)
    # One transfer: the non-empty leaves are views of a single device buffer, each at an aligned offset.
    storages = {leaf.untyped_storage().data_ptr() for leaf in leaves if leaf.numel()}
    assert len(storages) == 1
    assert all((leaf.storage_offset() * leaf.element_size()) % ALIGNMENT == 0 for leaf in leaves if leaf.numel())


def test_results_come_back_as_owning_arrays_with_every_byte_in_place(device):
    arrays = _arrays(seed=2)
    target = _target(device)
    weights = torch.ones(3, requires_grad=True)
    tensors = [torch.from_numpy(a.copy(order="C")).to(target) for a in arrays]
    tensors[3] = tensors[3].t()  # A strided result.
    expected = list(arrays)
    expected[3] = arrays[3].copy(order="C").T
    output = dict(_nest(tensors), grad=weights * 2.0, text=np.array(["x"]), number=3)
    result = to_host(output, target, lambda v: v.detach().numpy().copy() if isinstance(v, torch.Tensor) else v)
    leaves = [result["a"], result["b"][0], *result["b"][1], result["c"].left, result["c"].right["d"], *result["rest"]]
    for leaf, array in zip(leaves, expected):
        assert isinstance(leaf, np.ndarray) and leaf.base is None  # Not a view of the packed buffer.
        _same(leaf, array)
    np.testing.assert_array_equal(result["grad"], [2.0, 2.0, 2.0])
    assert result["text"].tolist() == ["x"] and result["number"] == 3 and result["none"] is None
    assert isinstance(result["c"], Pair)


def test_between_devices_data_moves_packed_gradients_flow_and_variables_stay(device):
    """`move_to` (arguments of a component on another device, rlgraph/graphs/placement.py). On the CPU
    the target is torch's `meta` device (shapes and dtypes only: it holds no values); with a GPU the
    values go there and back, every byte in place."""
    arrays = _arrays(seed=3)
    target = torch.device("meta") if device == "cpu" else _target(device)
    weights = torch.nn.Parameter(torch.ones(3))
    scaled = weights * 2.0  # Carries gradients back to `weights`.
    already = torch.zeros(2, device=target)
    nest = dict(_nest([torch.from_numpy(a) for a in arrays]), grad=scaled, variable=weights, there=already,
                text=np.array(["t"]))
    moved = move_to(nest, target)
    assert moved["variable"] is weights and moved["there"] is already and moved["text"] is nest["text"]
    assert moved["grad"].device.type == target.type and moved["grad"].grad_fn is not None  # (Tensor.to, differentiable.)
    leaves = [moved["a"], moved["b"][0], *moved["b"][1], moved["c"].left, moved["c"].right["d"], *moved["rest"]]
    assert [(leaf.dtype, tuple(leaf.shape), leaf.device.type) for leaf in leaves] == \
        [(torch.from_numpy(a).dtype, a.shape, target.type) for a in arrays]
    if device == "cuda":
        for leaf, array in zip(move_to(leaves, torch.device("cpu")), arrays):
            _same(leaf.numpy(), array)
        moved["grad"].sum().backward()
        np.testing.assert_array_equal(weights.grad.numpy(), [2.0, 2.0, 2.0])


def test_nests_without_tensors_pass_through():
    nest = {"x": np.arange(3), "y": (None, "name")}
    assert to_device(nest, torch.device("cpu"), pin=False) is nest
    assert to_host(nest, torch.device("cpu"), lambda v: v) == nest


def test_numpy_dtypes_of_torch_dtypes():
    assert [numpy_dtype(getattr(torch, n)) for n in ("bool", "uint8", "int64", "float16", "float32")] == \
        [np.dtype(t) for t in (np.bool_, np.uint8, np.int64, np.float16, np.float32)]


def test_an_executor_on_the_transfer_path_gives_what_the_host_path_gives():
    """The PyTorch executor's GPU path (packed inputs, packed results) run on the CPU: two DQN agents
    from one seed, one of them told its device is not the host, act, observe and update alike, to the
    bit (actions, losses, TD errors, weights)."""
    from rlgraph.agents import Agent
    from rlgraph.spaces import FloatBox, IntBox
    spec = dict(type="dqn", state_space=FloatBox(shape=(4,)), action_space=IntBox(3), backend="pytorch",
                network_spec=[{"type": "dense", "units": 16, "activation": "relu"}],
                memory_spec={"type": "replay-memory", "capacity": 64}, observe_spec={"buffer_size": 8},
                update_spec={"batch_size": 8}, execution_spec={"seed": 5, "device": "cpu"})
    rng = np.random.default_rng(6)
    states = rng.standard_normal((32, 4)).astype(np.float32)
    results = []
    for on_host in (True, False):
        agent = Agent.from_spec(dict(spec))
        agent.graph_executor._on_host = on_host  # (False moves every call through to_device/to_host.)
        out = [agent.get_action(states, use_exploration=False), agent.get_action(states)]
        for i in range(24):
            agent.observe(states[i], int(i % 3), None, float(i), states[i + 1], i % 7 == 6)
        out.append(agent.update())
        batch = dict(states=states[:8], actions=np.arange(8) % 3, rewards=np.ones(8, np.float32),
                     terminals=np.arange(8) % 2 == 0, next_states=states[8:16])
        out += [agent.update(batch), agent.get_td_loss(batch), agent.get_weights()]
        results.append(out)
    host, packed = ([leaf for leaf in _leaves(result)] for result in results)
    assert len(host) == len(packed) > 10
    for received, expected in zip(packed, host):
        _same(np.asarray(received), np.asarray(expected))


def _leaves(nest):
    if isinstance(nest, dict):
        for key in sorted(nest):
            yield from _leaves(nest[key])
    elif isinstance(nest, (tuple, list)):
        for item in nest:
            yield from _leaves(item)
    else:
        yield nest


def test_staging_stays_on_the_host_under_another_devices_context():
    """A placed component's call moves its host arguments while its GPU's device context is current
    (the default device of torch.empty): the staging buffer is still made on the host. The meta
    device stands in for the GPU on a CPU-only machine."""
    values = [torch.arange(6, dtype=torch.float32).reshape(2, 3), torch.tensor([True, False])]
    with torch.device("meta"):
        moved = to_device(values, torch.device("cpu", 0), pin=False)
    for value, copy in zip(values, moved):
        assert copy.device.type == "cpu" and torch.equal(copy, value)


def test_trace_inputs_are_made_on_the_device_the_build_runs_under():
    """The build traces under the executor's device context, where the variables are made: its zero
    inputs must be made there too (on a GPU they were made on the host, and every PyTorch agent
    failed to build with "Expected all tensors to be on the same device")."""
    from rlgraph.graphs.trace_data import TraceBackend
    from rlgraph.spaces import FloatBox, IntBox
    trace = TraceBackend("pytorch")
    with torch.device("meta"):
        records = [trace.zero_records(FloatBox(shape=(3,), add_batch_rank=True)),
                   trace.zero_records(IntBox(4, shape=(2,), add_batch_rank=True))]
    for record in records:
        assert record.value.device.type == "meta" and record.alt.device.type == "meta"
    on_host = trace.zero_records(FloatBox(shape=(3,), add_batch_rank=True))
    assert on_host.value.device.type == "cpu" and torch.equal(on_host.value, torch.zeros(on_host.value.shape))


def test_results_that_are_slices_come_back_whole():
    """Results that are strided views of one tensor (a dueling head's value and advantage columns,
    `x[:, :1]` and `x[:, 1:]`) are packed as their elements, not their storage (on a GPU the byte view
    of such a slice failed)."""
    x = torch.arange(12, dtype=torch.float32).reshape(4, 3)
    structure = {"value": x[:, :1], "advantages": x[:, 1:], "transposed": x.t(), "scalar": x[1, 2]}
    arrays = to_host(structure, torch.device("cpu"), lambda v: v)
    for key, view in structure.items():
        _same(arrays[key], view.numpy().copy())
