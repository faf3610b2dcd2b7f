"""Component core and build system on both backends: nesting, containers, completeness, copies."""
import importlib.util
import os

import numpy as np
import pytest

from components_for_tests import (Chain, Containers, Memory, MemoryUser, Middle, Scale, Top, UsesUnused,
                                  chain_reference)
from rlgraph.components import Component
from rlgraph.graphs import component_graph_to_dot
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox, Tuple
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphInputIncompleteError, RLGraphSpaceError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load_example():
    spec = importlib.util.spec_from_file_location("my_component_example", os.path.join(ROOT, "examples",
                                                                                        "my_component.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_tutorial_component(backend):
    module = _load_example()
    test = ComponentTest(module.MyComponent(initial_value=1.0), input_spaces=dict(value=float, n=float),
                         backend=backend)
    test.test("get_value", expected_outputs=1.0)
    test.test(("set_value", 4.5), expected_outputs=None)
    test.test("get_value", expected_outputs=4.5)
    test.test(("get_value_plus_n", 2.25), expected_outputs=6.75)
    assert list(test.component.variable_registry) == ["my-component/variable"]
    test.variable_test(test.component.value, 4.5)


def test_tutorial_component_rejects_container_space(backend):
    module = _load_example()
    with pytest.raises(RLGraphSpaceError, match="no container spaces"):
        ComponentTest(module.MyComponent(), input_spaces=dict(value=Dict(a=float), n=float), backend=backend)


def test_nested_apis_three_levels(backend):
    # run(x) = sum((x*w+b)*w+b - x) with w=2, b=0.5 -> per element 3x + 1.5.
    top = Top(scope="top")
    test = ComponentTest(top, input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)), backend=backend)
    x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.0, 0.5]], dtype=np.float32)
    test.test(("run", x), expected_outputs=(3 * x + 1.5).sum(-1), decimals=5)
    test.test(("twice", x), expected_outputs=3 * x + 1.5, decimals=5)  # exposed from Middle
    assert sorted(top.variable_registry) == ["top/middle/inner/b", "top/middle/inner/w"]
    assert top.get_sub_component_by_global_scope("top/middle/inner").global_scope == "top/middle/inner"
    inner = top.get_sub_component_by_name("middle").get_sub_component_by_name("inner")
    assert inner.get_parents() == [top.get_sub_component_by_name("middle"), top]
    assert [c.scope for c in top.get_all_sub_components()] == ["inner", "middle", "top"]
    # Output spaces were inferred with the batch rank: the inner call saw a batched input.
    assert inner.api_method_inputs["x"] == FloatBox(shape=(3,), add_batch_rank=True)


def test_containers_flatten_split_and_auto_keys(backend):
    space = Dict(a=FloatBox(shape=(2,)), b=Tuple(FloatBox(shape=(2,)), FloatBox(shape=(2,))), add_batch_rank=True)
    test = ComponentTest(Containers(), input_spaces=dict(data=space, factor=float), backend=backend)
    data = {"a": np.array([[1.0, 2.0]], np.float32),
            "b": (np.array([[3.0, 4.0]], np.float32), np.array([[5.0, 6.0]], np.float32))}
    out = test.test(("add_one", [data]))
    recursive_assert_almost_equal(out, {"a": [[2.0, 3.0]], "b": ([[4.0, 5.0]], [[6.0, 7.0]])})
    assert isinstance(out["b"], tuple)
    out = test.test(("keyed", [data, 10.0]))
    recursive_assert_almost_equal(out, {"a": [[10.0, 20.0]], "b": ([[-3.0, -4.0]], [[-5.0, -6.0]])})
    out = test.test(("keys_of", [data]))
    recursive_assert_almost_equal(out, {"a": [3.0], "b-_T0_": [7.0], "b-_T1_": [11.0]})
    doubled, first = test.test(("pair", [data]))
    recursive_assert_almost_equal(doubled, [[2.0, 4.0]])
    recursive_assert_almost_equal(first, [[3.0, 4.0]])
    # return_keys pick from dict and tuple results.
    assert test.test(("pair", [data], 1)).tolist() == [[3.0, 4.0]]
    recursive_assert_almost_equal(test.test(("add_one", [data], ["a"])), [[[2.0, 3.0]]])


def test_returns_lets_a_read_come_before_the_first_insert(backend):
    rows = FloatBox(shape=(2,), add_batch_rank=True)
    test = ComponentTest(MemoryUser(), input_spaces=dict(rows=rows, indices=IntBox(3, add_batch_rank=True)),
                         backend=backend)
    assert test.build_stats["passes"] == 2
    before = test.test(("read_then_insert", [np.array([[1, 2], [3, 4]], np.float32), np.array([2, 0])]))
    recursive_assert_almost_equal(before, np.zeros((3, 2)))  # trace writes were rolled back
    recursive_assert_almost_equal(test.test(("read", np.array([0, 1, 2]))), [[3, 4], [0, 0], [1, 2]])
    again = test.test(("read_then_insert", [np.array([[9, 9]], np.float32), np.array([1])]))
    recursive_assert_almost_equal(again, [[3, 4], [0, 0], [1, 2]])


def test_input_incomplete_error_names_component_api_and_argument(backend):
    with pytest.raises(RLGraphInputIncompleteError) as info:
        ComponentTest(UsesUnused(scope="root"), input_spaces=dict(x=float), backend=backend)
    text = str(info.value)
    assert "'root/helper' (Unused)" in text and "never_called" in text and "argument(s) y" in text


def test_missing_root_space_and_unknown_root_space(backend):
    with pytest.raises(RLGraphInputIncompleteError, match="get_value_plus_n.*argument\\(s\\) n"):
        ComponentTest(_load_example().MyComponent(), input_spaces=dict(value=float), backend=backend)
    with pytest.raises(RLGraphError, match="unknown argument.*'nn'"):
        ComponentTest(_load_example().MyComponent(), input_spaces=dict(value=float, n=float, nn=float),
                      backend=backend)


def test_must_be_complete_false_allows_an_unused_api(backend):
    class Lenient(Component):
        @rlgraph_api
        def used(self, x):
            return self._graph_fn_neg(x)

        @rlgraph_api(must_be_complete=False)
        def optional(self, y):
            return self._graph_fn_neg(y)

        @graph_fn
        def _graph_fn_neg(self, x):
            return -x

    test = ComponentTest(Lenient(), input_spaces=dict(x=float), backend=backend)
    test.test(("used", 2.0), expected_outputs=-2.0)
    with pytest.raises(RLGraphError, match="no root API method 'optional'"):
        test.test(("optional", 1.0))


class TwoCalls(Component):
    """Calls the same sub-API twice with equivalent spaces and shares arg names across APIs."""

    def __init__(self, **kwargs):
        super().__init__(Scale(w_init=3.0, b_init=0.0, scope="scale"), **kwargs)

    @rlgraph_api
    def both(self, x, z):
        scale = self.get_sub_component_by_name("scale")
        return scale.apply(x), scale.apply(z)

    @rlgraph_api
    def first(self, x):
        return self.get_sub_component_by_name("scale").apply(x)


def test_same_api_twice_with_equivalent_spaces_and_shared_names(backend):
    spaces = dict(x=FloatBox(shape=(2,), add_batch_rank=True), z=FloatBox(shape=(2,), low=-1, high=1,
                                                                            add_batch_rank=True))
    test = ComponentTest(TwoCalls(), input_spaces=spaces, backend=backend)
    a, b = test.test(("both", [np.ones((1, 2)), np.full((2, 2), 2.0)]))
    recursive_assert_almost_equal(a, [[3.0, 3.0]])
    recursive_assert_almost_equal(b, np.full((2, 2), 6.0))
    recursive_assert_almost_equal(test.test(("first", np.ones((1, 2)))), [[3.0, 3.0]])


def test_non_equivalent_spaces_for_one_argument_name_fail(backend):
    spaces = dict(x=FloatBox(shape=(2,), add_batch_rank=True), z=FloatBox(shape=(3,), add_batch_rank=True))
    with pytest.raises(RLGraphSpaceError) as info:
        ComponentTest(TwoCalls(), input_spaces=spaces, backend=backend)
    text = str(info.value)
    assert "twocalls/scale.apply(x)" in text.replace("two-calls", "twocalls")
    assert "shape=(2,)" in text and "shape=(3,)" in text


def test_wrong_input_at_execution_is_an_rlgraph_error(backend):
    test = ComponentTest(Top(), input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)), backend=backend)
    with pytest.raises(RLGraphSpaceError, match=r"top.run\(x\): input shape does not fit.*\(None, 3\)"):
        test.test(("run", np.ones((2, 4), np.float32)))
    with pytest.raises(RLGraphSpaceError, match="input shape"):
        test.test(("run", np.ones((3,), np.float32)))  # batch rank missing
    with pytest.raises(RLGraphSpaceError, match="dtype"):
        test.test(("run", np.array([["a", "b", "c"]])))
    with pytest.raises(RLGraphError, match="wrong number of inputs"):
        test.test(("run", [np.ones((1, 3)), np.ones((1, 3))]))
    with pytest.raises(RLGraphError, match="did you mean 'run'"):
        test.test(("rnu", np.ones((1, 3))))


def test_copy_has_independent_variables(backend):
    original = Middle(scope="net")
    target = original.copy(scope="target", trainable=False)
    assert target.parent_component is None and target.scope == "target"
    holder = Component(scope="holder")
    holder.add_components(original, target)

    @rlgraph_api(component=holder)
    def both(self, x):
        return original.twice(x), target.twice(x)

    test = ComponentTest(holder, input_spaces=dict(x=FloatBox(shape=(1,), add_batch_rank=True)), backend=backend)
    names = sorted(holder.variable_registry)
    assert names == ["holder/net/inner/b", "holder/net/inner/w", "holder/target/inner/b", "holder/target/inner/w"]
    records = holder.variable_records_of_tree()
    assert records["holder/net/inner/w"].trainable and not records["holder/target/inner/w"].trainable
    weights = test.graph_executor.get_weights()
    test.graph_executor.set_weights({"holder/net/inner/w": weights["holder/net/inner/w"] * 0 + 1.0})
    a, b = test.test(("both", np.array([[1.0]], np.float32)))
    recursive_assert_almost_equal(a, [[1.0]])    # (1*1+.5)*1+.5 - 1
    recursive_assert_almost_equal(b, [[4.5]])    # (1*2+.5)*2+.5 - 1
    # Exposed APIs of a copy call the copy's own sub-components.
    top_copy = Top(scope="top").copy(scope="top2")
    copied = ComponentTest(top_copy, input_spaces=dict(x=FloatBox(shape=(1,), add_batch_rank=True)),
                           backend=backend)
    assert sorted(top_copy.variable_registry) == ["top2/middle/inner/b", "top2/middle/inner/w"]
    recursive_assert_almost_equal(copied.test(("twice", np.array([[1.0]]))), [[4.5]])
    # Copying a built component gives an unbuilt one.
    again = original.copy(scope="again")
    assert not again.variables_created and again.variable_registry == {}


def test_component_structure_errors():
    parent = Component(scope="parent")
    child = Scale(scope="child")
    parent.add_components(child)
    with pytest.raises(RLGraphError, match="already has a parent"):
        Component(scope="other").add_components(child)
    with pytest.raises(RLGraphError, match="exists already"):
        parent.add_components(Scale(scope="child"))
    with pytest.raises(RLGraphError, match="no sub-component named 'chld'"):
        parent.get_sub_component_by_name("chld")
    assert parent.remove_sub_component_by_name("child") is child
    assert child.parent_component is None and child.global_scope == "child"
    with pytest.raises(RLGraphError, match="unknown constructor argument"):
        Scale(scop="x")
    with pytest.raises(RLGraphError, match="cannot expose unknown API method 'aply'"):
        Component(scope="p").add_components(Scale(), expose_apis={"aply"})
    built = Component.from_spec({"type": "component", "scope": "from-spec"})
    assert type(built) is Component and built.scope == "from-spec"
    dotted = Component.from_spec({"type": "components_for_tests.Scale", "w_init": 3.0})
    assert isinstance(dotted, Scale) and dotted.w_init == 3.0 and dotted.scope == "scale"


def test_decorator_registry_is_keyed_by_class():
    # Two classes with the same name and qualified name: each keeps its own API methods.
    def make(api_name):
        def body(self, x):
            return x
        body.__name__ = body.__qualname__ = api_name
        return type("Same", (Component,), {api_name: rlgraph_api(body), "__qualname__": "Same"})

    first, second = make("one"), make("two")
    assert first.__qualname__ == second.__qualname__ and first.__module__ == second.__module__
    assert set(first().api_methods) == {"one"} and set(second().api_methods) == {"two"}
    with pytest.raises(RLGraphError, match="not a `_graph_fn_` method"):
        rlgraph_api(flatten_ops=True)(lambda self, x: x)


def test_instance_level_api_and_graph_fn(backend):
    root = Component(scope="root")

    @graph_fn(component=root)
    def _graph_fn_square(self, x):
        return x * x

    @rlgraph_api(component=root)
    def square_plus(self, x, y):
        return self._graph_fn_add(self._graph_fn_square(x), y)

    @graph_fn(component=root)
    def _graph_fn_add(self, a, b):
        return a + b

    test = ComponentTest(root, input_spaces=dict(x=float, y=float), backend=backend)
    test.test(("square_plus", [3.0, 1.0]), expected_outputs=10.0)
    with pytest.raises(RLGraphError, match="already defined"):
        @rlgraph_api(component=root)
        def square_plus(self, x):  # noqa: F811 - redefinition is the point
            return x


def test_variables_api(backend):
    class Vars(Component):
        def create_variables(self, input_spaces, action_space=None):
            self.a = self.get_variable("a", shape=(2, 3), dtype="int", initializer=7, trainable=False)
            self.b = self.get_variable("b", from_space="x", add_batch_rank=4, initializer=np.arange(4)[:, None])
            self.c = self.get_variable("c", from_space=Dict(p=FloatBox(), q=BoolBox()), flatten=True,
                                       trainable=False)
            self.d = self.get_variable("d", local=True)

        @rlgraph_api
        def _graph_fn_read_b(self, x):
            return self.read_variable(self.b, np.array([3, 1])) + x

    vars_ = Vars(scope="v")
    test = ComponentTest(vars_, input_spaces=dict(x=FloatBox(shape=(2,))), backend=backend)
    recursive_assert_almost_equal(test.test(("read_b", np.array([0.5, 0.5]))), [[3.5, 3.5], [1.5, 1.5]])
    values = test.read_variable_values(vars_.variable_registry)
    assert sorted(values) == ["v/a", "v/b", "v/c/p", "v/c/q", "v/d"]
    recursive_assert_almost_equal(values["v/a"], np.full((2, 3), 7))
    assert values["v/a"].dtype == np.int32 and values["v/c/q"].dtype == np.bool_
    assert list(vars_.c.keys()) == ["/p", "/q"]
    assert sorted(vars_.get_variables()) == ["a", "b", "c/p", "c/q", "d"]
    assert list(vars_.get_variables("a", global_scope=True)) == ["v/a"]
    assert list(vars_.get_variables_by_name("c/p", custom_scope_separator="-")) == ["c-p"]
    assert sorted(vars_.get_variables(trainable_only=True)) == ["b"]
    assert "v/d" not in test.graph_executor.get_weights()  # local variables are never synchronized
    with pytest.raises(RLGraphError, match="no variable named 'e'"):
        vars_.get_variables("e")


def test_soft_set_weights(backend):
    test = ComponentTest(Scale(scope="s"), input_spaces=dict(x=FloatBox(shape=(2,))), backend=backend)
    test.graph_executor.set_weights({"s/w": np.array([4.0, 0.0])}, rate=0.25)
    recursive_assert_almost_equal(test.graph_executor.get_weights()["s/w"], [2.5, 1.5])  # .25*new + .75*2
    with pytest.raises(RLGraphError, match="wrong shape"):
        test.graph_executor.set_weights({"s/w": np.zeros(3)})
    with pytest.raises(RLGraphError, match="did you mean 's/w'"):
        test.graph_executor.set_weights({"s/ww": np.zeros(2)})


def test_synthetic_50_component_build(backend):
    chain = Chain(width=10, depth=5, scope="chain")
    test = ComponentTest(chain, input_spaces=dict(x=FloatBox(shape=(4,), add_batch_rank=True)), backend=backend)
    stats = test.build_stats
    assert stats["component_count"] == 51 and stats["variable_count"] == 100
    assert 0 < stats["build_overhead"] < stats["total_build_time"]
    x = np.random.RandomState(0).randn(3, 4).astype(np.float32)
    test.test(("run", x), expected_outputs=chain_reference(x, 10, 5), decimals=5)


def test_dot_export():
    # The DOT export reads only the component tree and the traced calls, which are the same on
    # both backends, so one installed backend suffices.
    test = ComponentTest(Top(scope="top"), input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend="pytorch" if importlib.util.find_spec("torch") else "tf")
    dot = component_graph_to_dot(test.component, test.graph_executor.graph_builder.edges)
    assert dot.startswith("digraph rlgraph {")
    assert '"top.run" -> "top/middle.twice"' in dot
    assert '"top/middle.twice" -> "top/middle/inner.apply"' in dot
    assert '"top/middle/inner.apply" -> "top/middle/inner._graph_fn_apply()"' in dot


def test_summaries_follow_the_regexp(backend):
    class Summarized(Component):
        @rlgraph_api
        def _graph_fn_go(self, x):
            self.create_summary("mean_x", x, type_="scalar")
            self.create_summary("other", x, type_="scalar")
            return x

    component = Summarized(scope="s", summary_regexp="mean")
    ComponentTest(component, input_spaces=dict(x=float), backend=backend)
    assert list(component.summaries) == ["s/mean_x"]
    with pytest.raises(RLGraphError, match="unknown summary type"):
        component.create_summary("mean_y", 1.0, type_="image")


class RankUser(Component):
    """Feeds a reduction (no batch rank) and a batch+time tensor into sub-components."""

    def __init__(self, **kwargs):
        super().__init__(Scale(scope="seq"), Scale(scope="total"), **kwargs)

    @rlgraph_api
    def go(self, x):
        seq = self.get_sub_component_by_name("seq").apply(x)
        return self.get_sub_component_by_name("total").apply(self._graph_fn_mean(seq))

    @graph_fn
    def _graph_fn_mean(self, y):
        from rlgraph.backend_system import get_backend
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.reduce_mean(y, axis=(0, 1))
        return y.mean(dim=(0, 1))


def test_output_spaces_keep_batch_and_time_ranks(backend):
    space = FloatBox(shape=(2,), add_batch_rank=True, add_time_rank=True)
    component = RankUser(scope="r")
    test = ComponentTest(component, input_spaces=dict(x=space), backend=backend)
    assert component.get_sub_component_by_name("seq").api_method_inputs["x"] == space
    # The mean over batch and time has neither rank.
    assert component.get_sub_component_by_name("total").api_method_inputs["x"] == FloatBox(shape=(2,))
    x = np.arange(12, dtype=np.float32).reshape((3, 2, 2))
    # total(mean(seq(x))) = (mean(2x + .5)) * 2 + .5
    test.test(("go", x), expected_outputs=(2 * x + 0.5).mean(axis=(0, 1)) * 2 + 0.5, decimals=5)


def test_var_positional_root_api(backend):
    class Summer(Component):
        @rlgraph_api
        def _graph_fn_total(self, *values):
            out = values[0]
            for v in values[1:]:
                out = out + v
            return out

    test = ComponentTest(Summer(), input_spaces={"values[0]": float, "values[1]": float, "values[2]": float},
                         backend=backend)
    test.test(("total", [1.0, 2.0, 3.5]), expected_outputs=6.5)
    with pytest.raises(RLGraphError, match="unknown argument.*'value\\[0\\]'"):
        ComponentTest(Summer(), input_spaces={"value[0]": float}, backend=backend)


class TextLength(Component):
    @rlgraph_api
    def _graph_fn_length(self, text):
        from rlgraph.backend_system import get_backend
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.strings.length(text)
        # PyTorch has no string tensors: text arrives as a numpy string array.
        assert isinstance(text, np.ndarray) and text.dtype.kind == "U", (type(text), getattr(text, "dtype", None))
        import torch
        return torch.from_numpy(np.char.str_len(text).astype(np.int32))

    @rlgraph_api
    def _graph_fn_echo(self, text):
        return text  # TF: a string tensor; PyTorch: the numpy string array, passed through to the output.


class TorchOpOnText(Component):
    @rlgraph_api
    def _graph_fn_negate(self, text):
        import torch
        return torch.neg(text)


def test_text_inputs_reach_graph_fns_on_both_backends(backend):
    from rlgraph.spaces import TextBox
    spaces = dict(text=TextBox(add_batch_rank=True))
    test = ComponentTest(TextLength(), input_spaces=spaces, backend=backend)
    recursive_assert_almost_equal(test.test(("length", np.array(["ab", "", "rlgraph"]))), [2, 0, 7])
    echoed = test.test(("echo", np.array(["ab", "", "rlgraph"])))
    assert [t.decode() if isinstance(t, bytes) else t for t in echoed.tolist()] == ["ab", "", "rlgraph"]
    if backend == "pytorch":
        # A torch op on text fails at build time, naming the component and graph function.
        with pytest.raises(RLGraphError, match="_graph_fn_negate.*numpy.ndarray"):
            ComponentTest(TorchOpOnText(), input_spaces=spaces, backend=backend)


def test_writes_during_the_build_trace_do_not_change_random_initial_weights(backend):
    """The trace runs every graph function once; a write it makes must not survive the build, also
    for variables with a random (array) initializer, whose initial array is kept for restoring."""
    from rlgraph.components.layers import DenseLayer

    class Overwriter(DenseLayer):
        @rlgraph_api
        def _graph_fn_overwrite(self, value):
            self.assign_variable(self.kernel, value * 0.0 + 7.0)
            return value

    layer = Overwriter(units=2, weights_spec="glorot_uniform")
    test = ComponentTest(layer, input_spaces=dict(inputs=FloatBox(shape=(2,), add_batch_rank=True),
                                                  value=FloatBox(shape=(2, 2))), backend=backend, seed=3)
    kernel = test.read_variable_values(layer.variable_registry)["dense/kernel"]
    assert not np.any(kernel == 7.0)
    np.random.seed(3)
    limit = np.sqrt(6.0 / (2 + 2))  # Glorot uniform for a [2, 2] kernel, drawn first after seeding.
    expected = np.random.uniform(-limit, limit, size=(2, 2))
    recursive_assert_almost_equal(kernel, expected.astype(np.float32), decimals=6)
