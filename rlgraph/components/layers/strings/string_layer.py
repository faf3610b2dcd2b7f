"""`StringLayer`: the base of the layers that take text (TextBox) inputs."""
from __future__ import annotations

from rlgraph.components.layers.layer import Layer
from rlgraph.spaces import TextBox
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError


class StringLayer(Layer):
    """A layer whose `apply` inputs are batches of text.

    On TensorFlow, text arrives in graph functions as `tf.string` tensors; on PyTorch (which
    has no string tensors) as numpy arrays of `str`. Subclasses map text to numbers, e.g.
    `StringToHashBucket`. Used as is, a `StringLayer` returns its input unchanged.

    Args:
        scope: Default "string-layer".

    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.spaces import TextBox
    >>> test = ComponentTest(StringLayer(), input_spaces=dict(inputs=TextBox(add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test(("apply", np.array(["a b", "c"]))).tolist()
    ['a b', 'c']
    """

    def __init__(self, scope: str = "string-layer", **kwargs):
        super().__init__(scope=scope, **kwargs)

    def check_input_spaces(self, input_spaces, action_space=None):
        """Every input of `apply` must be a TextBox with a batch rank."""
        for key, space in sorted(input_spaces.items()):
            if not key.startswith("inputs[") or space is None:
                continue
            where = f"{self.global_scope}.apply({key})"
            if not isinstance(space, TextBox):
                raise RLGraphSpaceError(space, f"{type(self).__name__} takes text inputs", where=where,
                                        expected="a TextBox with add_batch_rank=True",
                                        hint="feed strings (a TextBox space), not numbers.")
            if not space.has_batch_rank:
                raise RLGraphSpaceError(space, "the text input needs a batch rank", where=where,
                                        expected="a TextBox with add_batch_rank=True")
