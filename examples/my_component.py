"""The custom component of the reference tutorial, with a PyTorch branch next to the TF code.

Run: python examples/my_component.py  (builds and tests it on every installed backend)
"""
from rlgraph.backend_system import get_backend, is_backend_installed
from rlgraph.components.component import Component
from rlgraph.spaces import ContainerSpace, FloatBox
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError


class MyComponent(Component):
    """A memory holding one value: `set_value`, `get_value`, `get_value_plus_n`."""

    def __init__(self, initial_value=1.0, scope="my-component", **kwargs):
        super(MyComponent, self).__init__(scope, **kwargs)
        self.initial_value = initial_value
        self.value = None  # Created in create_variables.

    @rlgraph_api
    def get_value(self):
        return self._graph_fn_get()

    @rlgraph_api
    def set_value(self, value):
        return self._graph_fn_set(value)

    @rlgraph_api
    def get_value_plus_n(self, n):
        return self._graph_fn_get_value_plus_n(n)

    def check_input_spaces(self, input_spaces, action_space=None):
        in_space = input_spaces["value"]
        if isinstance(in_space, ContainerSpace):
            raise RLGraphSpaceError(in_space, "no container spaces allowed", where=f"{self.global_scope}(value)")

    def create_variables(self, input_spaces, action_space=None):
        in_space = input_spaces["value"]
        self.value = in_space.get_variable(trainable=False, initializer=self.initial_value)

    @graph_fn
    def _graph_fn_get(self):
        if get_backend() == "tf":
            return self.value.read_value()
        return self.value.clone()

    @graph_fn
    def _graph_fn_set(self, value):
        assign_op = self.assign_variable(self.value, value)
        if get_backend() == "tf":
            import tensorflow as tf
            with tf.control_dependencies([assign_op]):
                return tf.no_op()
        return None

    @graph_fn
    def _graph_fn_get_value_plus_n(self, n):
        if get_backend() == "tf":
            import tensorflow as tf
            return tf.add(self.value, n)
        return self.value + n


def main():
    from rlgraph.tests import ComponentTest
    for backend in ("tf", "pytorch"):
        if not is_backend_installed(backend):
            continue
        test = ComponentTest(MyComponent(initial_value=2.0), input_spaces=dict(value=FloatBox(), n=FloatBox()),
                             backend=backend)
        test.test("get_value", expected_outputs=2.0)
        test.test(("set_value", 5.0), expected_outputs=None)
        test.test("get_value", expected_outputs=5.0)
        test.test(("get_value_plus_n", 3.0), expected_outputs=8.0)
        print(f"{backend}: MyComponent works; build took {test.build_stats.total_build_time * 1000:.1f} ms")


if __name__ == "__main__":
    main()
