"""Names and forms of the original RLgraph that rlgraph accepts: `call` as an alias of `apply`, the
original's `Stack(api_methods=...)` forms, `switched_off_apis`, the test tooling (`read_params`,
`get_variable_values`, `config_from_path`, `root_logger`, `SMALL_NUMBER`) and unbounded
`FloatBox.sample()`."""
import json
import logging
import math
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

from rlgraph.components import (Categorical, Component, DenseLayer, Layer, Multiply, NeuralNetwork, PreprocessorStack,
                                Stack)
from rlgraph.components.api_aliases import ApiAlias, resolve_api_name
from rlgraph.spaces import FloatBox
from rlgraph.tests import ComponentTest
from rlgraph.tests.test_util import config_from_path
from rlgraph.utils import numpy as rnp
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError
from rlgraph.utils.specifiable import load_spec_file

F32 = np.float32
X = np.array([[1.0, 2.0], [-1.0, 0.5]], F32)
SPACES = dict(inputs=FloatBox(shape=(2,), add_batch_rank=True))
CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


# --- `call` as an alias of `apply` -------------------------------------------------------------------
class TimesTwo(Layer):
    """The original's style: the graph function thin-wrapped as the API method."""

    @rlgraph_api
    def _graph_fn_call(self, inputs):
        return inputs * 2.0


class PlusOne(Layer):
    """An API method `call` and a graph function `_graph_fn_call`."""

    @rlgraph_api
    def call(self, inputs):
        return self._graph_fn_call(inputs)

    @graph_fn
    def _graph_fn_call(self, inputs):
        return inputs + 1.0


class MinusOne(Layer):
    """Only the graph function, under the old name (the inherited `apply` runs it)."""

    @graph_fn
    def _graph_fn_call(self, *inputs):
        return inputs[0] - 1.0


class PlusOneThenHalf(PlusOne):
    @rlgraph_api
    def call(self, inputs):
        return self._graph_fn_half(super().call(inputs))

    @graph_fn
    def _graph_fn_half(self, x):
        return x * 0.5


@pytest.mark.parametrize("cls, expected", [(TimesTwo, X * 2.0), (PlusOne, X + 1.0), (MinusOne, X - 1.0),
                                           (PlusOneThenHalf, (X + 1.0) * 0.5)])
def test_subclass_defining_call_defines_apply(backend, cls, expected):
    layer = cls(scope="layer")
    assert list(layer.api_methods) == ["apply"] and "_graph_fn_call" not in layer.graph_fns
    test = ComponentTest(layer, input_spaces=SPACES, backend=backend)
    np.testing.assert_allclose(test.test(("call", X)), expected)
    np.testing.assert_allclose(test.test(("apply", X)), expected)
    # One root API method and one plan: the alias is resolved before the build.
    assert list(test.graph_executor.graph_builder.plans) == ["apply"]


def test_call_on_library_layers_and_inside_api_methods(backend):
    class Net(Component):
        def __init__(self):
            super().__init__(scope="net")
            self.dense = DenseLayer(units=1, weights_spec=1.0, biases_spec=0.5, scope="dense")
            self.scale = Multiply(factor=2.0)
            self.add_components(self.dense, self.scale)

        @rlgraph_api
        def run(self, inputs):
            return self.scale.call(self.dense.call(inputs))

    net = Net()
    test = ComponentTest(net, input_spaces=SPACES, backend=backend)
    # (x0 + x1 + 0.5) * 2 by hand: (1 + 2 + 0.5) * 2 = 7 and (-1 + 0.5 + 0.5) * 2 = 0.
    np.testing.assert_allclose(test.test(("run", X)), [[7.0], [0.0]])
    parent = Component(scope="parent")
    parent.add_components(DenseLayer(units=1, weights_spec=2.0, scope="exposed"), expose_apis=["call"])
    test = ComponentTest(parent, input_spaces=SPACES, backend=backend)
    np.testing.assert_allclose(test.test(("call", X)), [[6.0], [-1.0]])  # The exposed layer: 2 (x0 + x1).
    assert net.dense.call == net.dense.apply
    assert resolve_api_name(net.dense, "call") == "apply" and resolve_api_name(net, "run") == "run"


def test_call_on_stacks_networks_and_preprocessors(backend):
    class MyNetwork(NeuralNetwork):
        """The original's custom network: overrides `call`."""

        @rlgraph_api
        def call(self, inputs):
            out = inputs
            for layer in self.layers:
                out = layer.call(out)
            return dict(output=out)

    network = MyNetwork(DenseLayer(units=2, weights_spec=1.0), DenseLayer(units=1, weights_spec=0.5))
    test = ComponentTest(network, input_spaces=SPACES, backend=backend)
    # [x0 + x1] * 2 * 0.5.
    np.testing.assert_allclose(test.test(("call", X))["output"], [[3.0], [-0.5]])
    stack = Stack(Multiply(factor=3.0), api_methods={"call"})
    assert list(stack.api_methods) == ["apply"]
    np.testing.assert_allclose(ComponentTest(stack, input_spaces=SPACES, backend=backend).test(("call", X)), X * 3.0)
    preprocessor = PreprocessorStack(Multiply(factor=2.0), api_methods={("preprocess", "call")})
    test = ComponentTest(preprocessor, input_spaces=SPACES, backend=backend)
    np.testing.assert_allclose(test.test(("preprocess", X)), X * 2.0)


def test_alias_errors():
    with pytest.raises(RLGraphError, match="both 'call' and 'apply'"):
        class Both(Layer):  # noqa: F841
            @rlgraph_api
            def apply(self, inputs):
                return inputs

            @rlgraph_api
            def call(self, inputs):
                return inputs
    assert isinstance(Layer.__dict__["call"], ApiAlias) and isinstance(PlusOne.__dict__["call"], ApiAlias)
    stack = PreprocessorStack(Multiply(factor=2.0))  # Offers `preprocess`, not `apply`.
    with pytest.raises(AttributeError, match="no API method 'apply'"):
        stack.call(X)


def test_unknown_root_api_method_names_the_valid_ones(backend):
    test = ComponentTest(DenseLayer(units=1), input_spaces=SPACES, backend=backend)
    with pytest.raises(RLGraphError, match="no root API method 'cal'.*did you mean 'apply'"):
        test.test(("cal", X))


def test_alias_layers_copy_and_pickle(backend):
    layer = pickle.loads(pickle.dumps(PlusOne(scope="p").copy(scope="q")))
    np.testing.assert_allclose(ComponentTest(layer, input_spaces=SPACES, backend=backend).test(("call", X)), X + 1.0)


# --- Stack(api_methods=...) in the original's forms ------------------------------------------------
class AddConst(Component):
    def __init__(self, value=1.0, **kwargs):
        super().__init__(**kwargs)
        self.value = value

    @rlgraph_api
    def _graph_fn_run(self, inputs):
        return inputs + self.value


def _consts(*values):
    return [AddConst(v, scope=f"c{i}") for i, v in enumerate(values)]


B = dict(inputs=FloatBox(add_batch_rank=True))
BT = dict(inputs=FloatBox(add_batch_rank=True, add_time_rank=True))


@pytest.mark.parametrize("api_methods, api", [({"run"}, "run"), ({("stack_run", "run")}, "stack_run"),
                                              ([("stack_run", "run")], "stack_run"), ({"go": "run"}, "go"),
                                              ([dict(api="stack_run", component_api="run")], "stack_run")])
def test_stack_api_method_forms(backend, api_methods, api):
    stack = Stack(*_consts(3.0, 1.0), api_methods=api_methods)
    test = ComponentTest(stack, input_spaces=B, backend=backend)
    np.testing.assert_allclose(test.test((api, np.array([4.5, 0.0], F32))), [8.5, 4.0])


def test_stack_custom_function(backend):
    def twice_then_chain(self, inputs):
        x = self.sub_components["c0"].run(inputs)
        return self.sub_components["c1"].run(self.sub_components["c1"].run(x))

    stack = Stack(*_consts(3.0, 1.0), api_methods=[("custom", twice_then_chain)])
    assert stack.chained_api_methods == {"custom": "custom"}
    np.testing.assert_allclose(ComponentTest(stack, input_spaces=B, backend=backend).test(("custom", np.zeros(1, F32))),
                               [5.0])


def test_stack_custom_function_next_to_the_chained_apply(backend):
    """Regression: `apply(*inputs)` next to a function taking `inputs` by name (one input space
    for both) built `apply` without its input."""
    def hidden(stack, inputs):
        return stack.sub_components["d0"].apply(inputs)

    stack = Stack(DenseLayer(units=2, scope="d0", weights_spec=0.5, biases_spec=False), api_methods=["apply", ("hidden", hidden)])
    test = ComponentTest(stack, input_spaces=dict(inputs=FloatBox(shape=(3,), add_batch_rank=True)), backend=backend)
    x = np.array([[1.0, 2.0, 3.0]], F32)
    np.testing.assert_allclose(test.test(("apply", x)), [[3.0, 3.0]])
    np.testing.assert_allclose(test.test(("hidden", x)), [[3.0, 3.0]])


def test_network_with_a_custom_call_function(backend):
    # The original's form: a network whose `call` is a function given in api_methods.
    def custom_call(self, input_, scale):
        return self.get_sub_component_by_name("d1").call(self.get_sub_component_by_name("d0").call(input_)), scale

    network = NeuralNetwork(DenseLayer(units=2, weights_spec=1.0, scope="d0"),
                            DenseLayer(units=1, weights_spec=0.5, scope="d1"), api_methods={("call", custom_call)})
    test = ComponentTest(network, input_spaces=dict(input_=SPACES["inputs"], scale=FloatBox(add_batch_rank=True)),
                         backend=backend)
    out, scale = test.test(("call", [X, np.array([1.0, 2.0], F32)]))
    np.testing.assert_allclose(out, [[3.0], [-0.5]])  # (x0 + x1) * 2 * 0.5.
    np.testing.assert_allclose(scale, [1.0, 2.0])


def test_stack_time_rank_folding_and_unfolding(backend):
    x = np.array([[4.5, 5.0], [1.0, 2.0]], F32)  # [B=2, T=2]
    fold = Stack(*_consts(3.0, 1.0), api_methods=[dict(api="run", fold_time_rank=True)])
    np.testing.assert_allclose(ComponentTest(fold, input_spaces=BT, backend=backend).test(("run", x)),
                               [8.5, 9.0, 5.0, 6.0])
    both = Stack(*_consts(3.0, 1.0), api_methods=[dict(api="run", fold_time_rank=True, unfold_time_rank=True)])
    np.testing.assert_allclose(ComponentTest(both, input_spaces=BT, backend=backend).test(("run", x)), x + 4.0)
    assert [c.scope for c in both.layers] == ["c0", "c1"]
    # Unfolding alone: the second input is the original, unfolded data.
    unfold = Stack(*_consts(3.0, 1.0), api_methods=[dict(api="run", unfold_time_rank=True)])
    spaces = dict(inputs=[FloatBox(add_batch_rank=True), FloatBox(add_batch_rank=True, add_time_rank=True)])
    test = ComponentTest(unfold, input_spaces=spaces, backend=backend)
    np.testing.assert_allclose(test.test(("run", [x.reshape(-1), x])), x + 4.0)


def test_stack_keeps_api_methods_of_its_class_and_rejects_bad_entries(backend):
    network = NeuralNetwork(DenseLayer(units=1, weights_spec=1.0), api_methods={"apply"})
    out = ComponentTest(network, input_spaces=SPACES, backend=backend).test(("apply", X))
    assert isinstance(out, dict)  # NeuralNetwork's own `apply`, not a plain chain.
    with pytest.raises(RLGraphSpecError, match="defines 'apply' itself"):
        NeuralNetwork(DenseLayer(units=1), api_methods=[dict(api="call", fold_time_rank=True)])
    with pytest.raises(RLGraphSpecError, match="invalid api_methods entry"):
        Stack(*_consts(1.0), api_methods=[("a", "b", "c")])
    with pytest.raises(RLGraphSpecError, match="unknown key"):
        Stack(*_consts(1.0), api_methods=[dict(api="run", fold=True)])
    with pytest.raises(RLGraphError, match="second argument"):
        ComponentTest(Stack(*_consts(1.0), api_methods=[dict(api="run", unfold_time_rank=True)]), input_spaces=B,
                      backend=backend)


# --- switched_off_apis -------------------------------------------------------------------------------
class TwoApis(Component):
    @rlgraph_api
    def _graph_fn_double(self, x):
        return x * 2.0

    @rlgraph_api
    def _graph_fn_negate(self, y):
        return -y


def test_switched_off_api_is_not_built_and_refuses_calls(backend):
    # `negate` would need a space for `y`; switched off, the component is input-complete without it.
    component = TwoApis(scope="two", switched_off_apis={"negate"})
    assert sorted(component.api_methods) == ["double"] and component.switched_off_apis == {"negate"}
    test = ComponentTest(component, input_spaces=dict(x=FloatBox(add_batch_rank=True)), backend=backend)
    np.testing.assert_allclose(test.test(("double", np.array([1.5], F32))), [3.0])
    with pytest.raises(RLGraphError, match="'negate' is switched off"):
        test.test(("negate", np.array([1.5], F32)))
    with pytest.raises(RLGraphError, match=r"two\.negate.*switched off"):
        component.negate(1.0)
    # Copies and pickles keep it switched off.
    for clone in (component.copy(scope="c"), pickle.loads(pickle.dumps(TwoApis(switched_off_apis=["negate"])))):
        assert "negate" not in clone.api_methods
        with pytest.raises(RLGraphError, match="switched off"):
            clone.negate(1.0)


def test_switched_off_api_called_by_a_parent_fails_at_build(backend):
    class Parent(Component):
        def __init__(self):
            super().__init__(scope="parent")
            self.child = TwoApis(scope="child", switched_off_apis={"negate"})
            self.add_components(self.child)

        @rlgraph_api
        def run(self, x):
            return self.child.negate(self.child.double(x))

    with pytest.raises(RLGraphError, match=r"parent/child\.negate.*switched off"):
        ComponentTest(Parent(), input_spaces=dict(x=FloatBox(add_batch_rank=True)), backend=backend)


def test_switched_off_apis_of_distributions_aliases_and_stacks(backend):
    # The original's test form.
    categorical = Categorical(switched_off_apis={"kl_divergence"})
    test = ComponentTest(categorical, input_spaces=dict(parameters=FloatBox(shape=(2,), add_batch_rank=True)),
                         backend=backend)
    np.testing.assert_array_equal(test.test(("sample_deterministic", np.array([[0.0, 1.0]], F32))), [1])
    assert "kl_divergence" not in categorical.api_methods
    layer = DenseLayer(units=1, switched_off_apis={"call"})  # An alias names its API method.
    assert "apply" not in layer.api_methods
    with pytest.raises(RLGraphError, match="switched off"):
        layer.call(X)
    stack = Stack(DenseLayer(units=1), api_methods={"apply", ("other", "apply")}, switched_off_apis={"other"})
    assert sorted(stack.api_methods) == ["apply"]
    with pytest.raises(RLGraphError, match="switched off"):
        stack.other(X)


def test_unknown_switched_off_api_fails_at_build(backend):
    with pytest.raises(RLGraphError, match="unknown API method.*'negat'.*did you mean 'negate'"):
        ComponentTest(TwoApis(switched_off_apis={"negat"}), input_spaces=dict(x=float, y=float), backend=backend)
    with pytest.raises(RLGraphError, match="must be API method names"):
        TwoApis(switched_off_apis=[3])


# --- Test tooling ------------------------------------------------------------------------------------
def test_read_params_and_variable_values(backend):
    layer = DenseLayer(units=2, weights_spec="glorot_uniform", biases_spec=0.25, scope="dense-layer")
    test = ComponentTest(layer, input_spaces=SPACES, backend=backend)
    params = test.read_variable_values(layer.variable_registry)
    assert sorted(params) == ["dense-layer/bias", "dense-layer/kernel"]
    assert test.read_variable_values().keys() == params.keys()  # No names: all, by global name.
    kernel = test.read_params("dense-layer/kernel", params)
    assert kernel.shape == (2, 2)  # [in, units] on both backends: nothing to transpose.
    np.testing.assert_array_equal(test.read_params("dense-layer/ker", params), kernel)  # A prefix.
    np.testing.assert_array_equal(test.read_params("dense-layer/dense/kernel", params), kernel)  # The original's name.
    nested = {"net/d0/kernel": 0, "net/d1/kernel": 1, "net/lstm/kernel": 2}
    assert ComponentTest.read_params("net/d1/dense/kernel", nested) == 1
    with pytest.raises(RLGraphError):
        ComponentTest.read_params("net/dense/kernel", nested)  # Ambiguous: no guess.
    np.testing.assert_array_equal(test.read_params("dense-layer/bias", params, transpose_torch_params=False),
                                  [0.25, 0.25])
    np.testing.assert_allclose(test.test(("call", X)), rnp.dense_layer(X, kernel, params["dense-layer/bias"]),
                               rtol=1e-6)
    with pytest.raises(RLGraphError, match="no value for variable 'dense-layer/weights'"):
        test.read_params("dense-layer/weights", params)
    local = test.get_variable_values(layer, ["kernel", "bias"])
    assert sorted(local) == ["bias", "kernel"]
    np.testing.assert_array_equal(local["kernel"], kernel)
    assert sorted(test.get_variable_values()) == ["bias", "kernel"]
    np.testing.assert_array_equal(test.get_variable_values(layer, "bias")["bias"], [0.25, 0.25])


def test_read_params_of_torch_tensors():
    torch = pytest.importorskip("torch")
    value = ComponentTest.read_params("a/b", {"a/b": torch.ones(2, 3, requires_grad=True)})
    assert isinstance(value, np.ndarray) and value.shape == (2, 3)


def test_config_from_path(tmp_path, monkeypatch):
    shipped = load_spec_file(os.path.join(CHECKOUT, "configs", "dqn_cartpole.json"))
    monkeypatch.chdir(tmp_path)  # Shipped configs do not depend on the working directory.
    assert config_from_path("configs/dqn_cartpole.json") == shipped
    assert config_from_path("dqn_cartpole.json") == shipped
    (tmp_path / "mine.json").write_text(json.dumps({"type": "dqn", "discount": 0.5}))
    assert config_from_path("mine.json")["discount"] == 0.5  # Else the working directory.
    assert config_from_path("mine.json", root=str(tmp_path)) == {"type": "dqn", "discount": 0.5}
    assert config_from_path(str(tmp_path / "mine.json"))["type"] == "dqn"
    with pytest.raises(RLGraphSpecError, match="config file not found"):
        config_from_path("dqn_cartpole.json", root=str(tmp_path))  # With a root: only there.
    (tmp_path / "evil.yaml").write_text("!!python/object/apply:os.system ['echo hacked']\n")
    with pytest.raises(RLGraphSpecError):
        config_from_path("evil.yaml")


def test_root_logger_and_small_number():
    from rlgraph.utils import SMALL_NUMBER, root_logger
    from rlgraph.utils.util import SMALL_NUMBER as SMALL_NUMBER_UTIL
    assert SMALL_NUMBER == SMALL_NUMBER_UTIL == 1e-6
    assert isinstance(root_logger, logging.Logger) and root_logger.name == "rlgraph"
    assert logging.getLogger("rlgraph.agents.agent").parent in (root_logger, logging.getLogger("rlgraph.agents"))
    level = root_logger.level
    try:
        ComponentTest(DenseLayer(units=1), input_spaces=SPACES, backend="pytorch", logging_level=logging.DEBUG)
        assert root_logger.level == logging.DEBUG
    finally:
        root_logger.setLevel(level)
    # Importing rlgraph leaves python's root logger alone (the original added a handler and set INFO).
    code = ("import logging; root = logging.getLogger(); before = (list(root.handlers), root.level); "
            "from rlgraph.utils import root_logger; assert (list(root.handlers), root.level) == before")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=CHECKOUT)


# --- FloatBox.sample() of unbounded boxes ------------------------------------------------------------
def _samples(space, seed, n=20000):
    space.seed(seed)
    return space.sample(n).astype(np.float64)


def test_unbounded_float_box_samples_are_standard_normal_and_seeded():
    space = FloatBox(shape=(2,))
    a, b = _samples(space, 7), _samples(FloatBox(shape=(2,)), 7)
    np.testing.assert_array_equal(a, b)  # Same seed, same samples.
    assert not np.array_equal(a, _samples(space, 8))
    n = a.shape[0]
    np.testing.assert_allclose(a.mean(0), 0.0, atol=5 / math.sqrt(n))
    np.testing.assert_allclose(a.std(0), 1.0, rtol=0.03)
    assert (a < 0).mean() == pytest.approx(0.5, abs=0.02)  # Not the original's uniform [0, 1).
    # Unseeded spaces draw from numpy's global generator.
    np.random.seed(3)
    first = FloatBox().sample(5)
    np.random.seed(3)
    np.testing.assert_array_equal(FloatBox().sample(5), first)


@pytest.mark.parametrize("low, high, mean, std", [(2.0, None, 3.0, 1.0), (None, -1.0, -2.0, 1.0),
                                                  (-1.0, 3.0, 1.0, 4.0 / math.sqrt(12.0))])
def test_half_bounded_and_bounded_float_box_samples(low, high, mean, std):
    samples = _samples(FloatBox(low=low, high=high), 11)
    n = samples.shape[0]
    np.testing.assert_allclose(samples.mean(), mean, atol=5 * std / math.sqrt(n))
    np.testing.assert_allclose(samples.std(), std, rtol=0.03)
    assert (low is None or samples.min() >= low) and (high is None or samples.max() <= high)
