"""PreprocessorStack and DictPreprocessorStack on both backends."""
import numpy as np
import pytest

from rlgraph.components.layers import DenseLayer
from rlgraph.components.neural_networks import DictPreprocessorStack, PreprocessorStack
from rlgraph.spaces import Dict, FloatBox, IntBox, Tuple
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


def test_stack_of_value_preprocessors_matches_numpy(backend):
    stack = PreprocessorStack({"type": "convert-type", "to_dtype": "float32"}, {"type": "divide", "divisor": 4.0},
                              {"type": "clip", "min": 0.0, "max": 1.5})
    space = IntBox(10, shape=(3,), add_batch_rank=True)
    assert not stack.is_stateful
    out_space = stack.get_preprocessed_space(space)
    assert out_space.shape == (3,) and np.dtype(out_space.dtype) == np.float32
    test = ComponentTest(stack, input_spaces=dict(inputs=space), backend=backend)
    x = np.array([[0, 3, 9], [8, 1, 5]])
    out = test.test(("preprocess", x), expected_outputs=np.clip(x / 4.0, 0.0, 1.5))
    assert out.dtype == np.float32
    test.test("reset")  # Stateless: resetting is harmless.
    test.test(("preprocess", x), expected_outputs=np.clip(x / 4.0, 0.0, 1.5))


def test_image_stack_with_frame_stacking_resets_per_episode(backend):
    stack = PreprocessorStack({"type": "grayscale"}, {"type": "convert-type", "to_dtype": "float32"},
                              {"type": "sequence", "sequence_length": 2, "batch_size": 1, "add_rank": True})
    assert stack.is_stateful
    image = IntBox(256, shape=(4, 3, 3), dtype="uint8", add_batch_rank=True)
    out_space = stack.get_preprocessed_space(image)
    assert out_space.shape == (4, 3, 2)
    test = ComponentTest(stack, input_spaces=dict(inputs=image), backend=backend)
    frames = [image.sample(1) for _ in range(3)]
    # uint8 images stay uint8 through GrayScale (rounded).
    gray = [np.clip(np.round(rnp.grayscale(f)), 0, 255).astype(np.float32) for f in frames]
    test.test("reset")
    first = test.test(("preprocess", frames[0]))
    recursive_assert_almost_equal(first, np.stack([gray[0], gray[0]], axis=-1), decimals=4)
    second = test.test(("preprocess", frames[1]))
    recursive_assert_almost_equal(second, np.stack([gray[0], gray[1]], axis=-1), decimals=4)
    test.test("reset")
    after_reset = test.test(("preprocess", frames[2]))
    recursive_assert_almost_equal(after_reset, np.stack([gray[2], gray[2]], axis=-1), decimals=4)


def test_empty_stack_passes_inputs_through(backend):
    stack = PreprocessorStack()
    space = FloatBox(shape=(2,), add_batch_rank=True)
    assert stack.get_preprocessed_space(space) == space
    test = ComponentTest(stack, input_spaces=dict(inputs=space), backend=backend)
    test.test(("preprocess", np.array([[1.0, -2.0]])), expected_outputs=np.array([[1.0, -2.0]]))


def test_dict_and_tuple_preprocessor_stacks(backend):
    stack = DictPreprocessorStack({"img": [{"type": "divide", "divisor": 255.0}],
                                   "vec": [{"type": "multiply", "factor": -1.0}]})
    space = Dict(img=IntBox(256, shape=(2, 2), dtype="uint8"), vec=FloatBox(shape=(3,)), raw=IntBox(4),
                 add_batch_rank=True)
    out_space = stack.get_preprocessed_space(space)
    assert np.dtype(out_space["img"].dtype) == np.float32 and out_space["raw"] == space["raw"]
    test = ComponentTest(stack, input_spaces=dict(inputs=space), backend=backend)
    sample = space.sample(3)
    expected = {"img": sample["img"] / 255.0, "vec": -sample["vec"], "raw": sample["raw"]}
    recursive_assert_almost_equal(test.test(("preprocess", sample)), expected, decimals=5)

    tuple_stack = DictPreprocessorStack({1: [{"type": "clip", "min": 0.0, "max": 1.0}]})
    space = Tuple(FloatBox(shape=(2,)), FloatBox(shape=(2,)), add_batch_rank=True)
    test = ComponentTest(tuple_stack, input_spaces=dict(inputs=space), backend=backend)
    x = (np.array([[-3.0, 3.0]]), np.array([[-3.0, 0.5]]))
    recursive_assert_almost_equal(test.test(("preprocess", x)), (x[0], np.array([[0.0, 0.5]])))


def test_preprocessor_stack_errors():
    with pytest.raises(RLGraphSpecError, match="holds only preprocessing layers.*DenseLayer"):
        PreprocessorStack(DenseLayer(units=2))
    with pytest.raises(RLGraphSpecError, match="preprocessors must be a dict"):
        DictPreprocessorStack([{"type": "clip"}])
