"""`Synchronizable`: hard and soft (Polyak) syncs between an online and a target network."""
import numpy as np
import pytest

from rlgraph.components.common.synchronizable import Synchronizable
from rlgraph.components.component import Component
from rlgraph.components.neural_networks.neural_network import NeuralNetwork
from rlgraph.spaces import FloatBox
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError

X = FloatBox(shape=(2,), add_batch_rank=True)


class QNet(Component):
    """A NeuralNetwork plus a Synchronizable exporting/receiving the network's variables."""

    def __init__(self, scope, units=(3, 2), sync_tau=1.0, sync_every_n_calls=1):
        net = NeuralNetwork.from_spec([{"type": "dense", "units": u, "activation": "tanh"} for u in units],
                                      scope="net")
        super().__init__(net, Synchronizable(sync_tau=sync_tau, sync_every_n_calls=sync_every_n_calls),
                         scope=scope)

    @rlgraph_api
    def apply(self, x):
        return self.sub_components["net"].apply(x)["output"]


class OnlineTarget(Component):
    """Root: `online_apply(x)`, `target_apply(x)`, `sync()` (target <- online), `online_values()`."""

    def __init__(self, online, target):
        super().__init__(online, target, scope="root")
        self.online, self.target = online, target

    @rlgraph_api
    def online_apply(self, x):
        return self.online.apply(x)

    @rlgraph_api
    def target_apply(self, x):
        return self.target.apply(x)

    @rlgraph_api
    def sync(self):
        self.target.sub_components["synchronizable"].sync(
            self.online.sub_components["synchronizable"].get_sync_values())

    @rlgraph_api
    def online_values(self):
        return self.online.sub_components["synchronizable"].get_sync_values()


NAMES = ["net/dense/bias", "net/dense/kernel", "net/dense-1/bias", "net/dense-1/kernel"]


def build(backend, **target_kwargs):
    root = OnlineTarget(QNet("online"), QNet("target", **target_kwargs))
    test = ComponentTest(root, input_spaces=dict(x=X), backend=backend)
    return root, test


def weights(test, scope):
    return {n: test.read_variable_values(f"root/{scope}/{n}") for n in NAMES}


def test_hard_sync_copies_weights_and_outputs(backend):
    _, test = build(backend)
    x = np.random.RandomState(0).normal(size=(4, 2)).astype(np.float32)
    online = weights(test, "online")
    assert not np.allclose(test.test(("online_apply", x)), test.test(("target_apply", x)))
    assert test.test("sync") is None
    recursive_assert_almost_equal(weights(test, "target"), online)
    recursive_assert_almost_equal(weights(test, "online"), online)  # The source stays untouched.
    recursive_assert_almost_equal(test.test(("target_apply", x)), test.test(("online_apply", x)), decimals=6)


def test_get_sync_values_nests_relative_names(backend):
    _, test = build(backend)
    values = test.test("online_values")
    assert sorted(values) == ["net"]
    assert sorted(values["net"]) == ["dense", "dense-1"]
    online = weights(test, "online")
    for name in NAMES:
        _, layer, var = name.split("/")
        recursive_assert_almost_equal(values["net"][layer][var], online[name])


def test_soft_sync_is_polyak_average(backend):
    _, test = build(backend, sync_tau=0.3)
    online, target = weights(test, "online"), weights(test, "target")
    test.test("sync")
    expected = {n: 0.3 * online[n] + 0.7 * target[n] for n in NAMES}
    recursive_assert_almost_equal(weights(test, "target"), expected, decimals=6)
    test.test("sync")
    expected = {n: 0.3 * online[n] + 0.7 * expected[n] for n in NAMES}
    recursive_assert_almost_equal(weights(test, "target"), expected, decimals=6)


def test_sync_every_n_calls(backend):
    _, test = build(backend, sync_tau=0.5, sync_every_n_calls=2)
    online, target = weights(test, "online"), weights(test, "target")
    counter = "root/target/synchronizable/sync_counter"
    test.test("sync")  # 1st call: no sync.
    recursive_assert_almost_equal(weights(test, "target"), target)
    assert int(test.read_variable_values(counter)) == 1
    test.test("sync")  # 2nd call: sync.
    expected = {n: 0.5 * online[n] + 0.5 * target[n] for n in NAMES}
    recursive_assert_almost_equal(weights(test, "target"), expected, decimals=6)
    assert int(test.read_variable_values(counter)) == 0
    test.test("sync")  # 3rd call: no sync.
    recursive_assert_almost_equal(weights(test, "target"), expected, decimals=6)
    test.test("sync")  # 4th call: sync.
    expected = {n: 0.5 * online[n] + 0.5 * expected[n] for n in NAMES}
    recursive_assert_almost_equal(weights(test, "target"), expected, decimals=6)


def test_frozen_copy_as_target(backend):
    online = QNet("online")
    target = online.copy(scope="target", trainable=False)
    test = ComponentTest(OnlineTarget(online, target), input_spaces=dict(x=X), backend=backend)
    assert set(test.graph_executor.get_weights(trainable_only=True)) == {f"root/online/{n}" for n in NAMES}
    test.test("sync")
    recursive_assert_almost_equal(weights(test, "target"), weights(test, "online"))


def test_mismatched_shapes_raise(backend):
    root = OnlineTarget(QNet("online", units=(3, 2)), QNet("target", units=(4, 2)))
    with pytest.raises(RLGraphError, match="wrong shapes") as info:
        ComponentTest(root, input_spaces=dict(x=X), backend=backend)
    assert "root/target/synchronizable.sync(values)" in str(info.value)
    assert "net/dense/kernel" in str(info.value)


def test_mismatched_structure_names_missing_and_extra_keys(backend):
    root = OnlineTarget(QNet("online", units=(3, 2)), QNet("target", units=(3, 2, 2)))
    with pytest.raises(RLGraphError, match=r"missing: \['net/dense-2/bias', 'net/dense-2/kernel'\]; "
                                           r"unexpected: none"):
        ComponentTest(root, input_spaces=dict(x=X), backend=backend)


def test_without_parent_raises(backend):
    with pytest.raises(RLGraphError, match="needs a parent"):
        ComponentTest(Synchronizable(), input_spaces={}, backend=backend)


def test_directly_inside_neural_network(backend):
    def net(scope):
        network = NeuralNetwork.from_spec([{"type": "dense", "units": 2}], scope=scope)
        network.add_components(Synchronizable())
        return network

    root = Component(net("online"), net("target"), scope="root")

    @rlgraph_api(component=root)
    def sync(self):
        self.sub_components["target"].sub_components["synchronizable"].sync(
            self.sub_components["online"].sub_components["synchronizable"].get_sync_values())

    @rlgraph_api(component=root)
    def apply(self, x):
        return self.sub_components["online"].apply(x)["output"], self.sub_components["target"].apply(x)["output"]

    test = ComponentTest(root, input_spaces=dict(x=X), backend=backend)
    test.test("sync")
    out = test.test(("apply", np.ones((1, 2), np.float32)))
    recursive_assert_almost_equal(out[0], out[1])


@pytest.mark.parametrize("kwargs", [dict(sync_tau=0.0), dict(sync_tau=1.5), dict(sync_tau="1"),
                                    dict(sync_every_n_calls=0), dict(sync_every_n_calls=1.5),
                                    dict(sync_every_n_calls=True)])
def test_invalid_constructor_args(kwargs):
    with pytest.raises(RLGraphSpecError):
        Synchronizable(**kwargs)
