"""Stateless preprocessors (images, scaling, clipping, casting) against numpy on both backends."""
import numpy as np
import pytest

from rlgraph.components.layers.preprocessing.clip import Clip
from rlgraph.components.layers.preprocessing.convert_type import ConvertType
from rlgraph.components.layers.preprocessing.divide import Divide
from rlgraph.components.layers.preprocessing.grayscale import GrayScale
from rlgraph.components.layers.preprocessing.image_binary import ImageBinary
from rlgraph.components.layers.preprocessing.image_crop import ImageCrop
from rlgraph.components.layers.preprocessing.image_resize import ImageResize
from rlgraph.components.layers.preprocessing.multiply import Multiply
from rlgraph.components.layers.preprocessing.normalize import Normalize
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError

IMAGE_SPACE = IntBox(256, shape=(8, 6, 3), dtype="uint8", add_batch_rank=True)


def uint8_images(shape=(2, 8, 6, 3), seed=0):
    return np.random.RandomState(seed).randint(0, 256, size=shape).astype(np.uint8)


def float_images(shape=(2, 8, 6, 3), seed=1):
    return np.random.RandomState(seed).uniform(-2.0, 3.0, size=shape).astype(np.float32)


def run(layer, space, x, backend):
    """Builds `layer` for `space`, applies it to `x`, and checks the output against the layer's space."""
    out = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend).test(("apply", x))
    assert_matches_space(layer.get_preprocessed_space(space), out)
    return out


def assert_matches_space(space, out):
    if isinstance(space, Dict):
        assert set(out) == set(space)
        for key in space:
            assert_matches_space(space[key], out[key])
    else:
        assert out.dtype == space.dtype, (out.dtype, space.dtype)
        extra = int(space.has_batch_rank) + int(space.has_time_rank)
        assert out.ndim == extra + space.rank and out.shape[extra:] == space.shape, (out.shape, space)
    assert space.contains(out), (space, out.min(), out.max())


# --- GrayScale -------------------------------------------------------------------------------------------------------

def test_grayscale_uint8_rounds_back_to_uint8(backend):
    x = uint8_images()
    out = run(GrayScale(), IMAGE_SPACE, x, backend)
    expected = np.round(rnp.grayscale(x))
    assert out.shape == (2, 8, 6)
    # Float32 sums may land on the other side of a .5 than the float64 reference: at most 1 apart.
    assert np.abs(out.astype(np.int64) - expected).max() <= 1 and np.mean(out == expected) > 0.95


def test_grayscale_float_custom_weights_keep_rank(backend):
    x = float_images(shape=(2, 8, 6, 2))
    space = FloatBox(-2.0, 3.0, shape=(8, 6, 2), add_batch_rank=True)
    layer = GrayScale(weights=(0.5, -1.0), keep_rank=True)
    out = run(layer, space, x, backend)
    np.testing.assert_allclose(out, rnp.grayscale(x, (0.5, -1.0), keep_rank=True), rtol=1e-5, atol=1e-5)
    pre = layer.get_preprocessed_space(space)
    assert pre.shape == (8, 6, 1) and pre.dtype == np.float32
    assert pre.global_bounds == (-4.0, 3.5)  # 0.5 * [-2, 3] - [-2, 3].


def test_grayscale_int32_gives_float32(backend):
    x = np.arange(2 * 2 * 3, dtype=np.int32).reshape((1, 2, 2, 3))
    out = run(GrayScale(), IntBox(20, shape=(2, 2, 3), add_batch_rank=True), x, backend)
    np.testing.assert_allclose(out, rnp.grayscale(x), rtol=1e-6)


# --- ImageResize -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("interpolation", ["bilinear", "nearest", "area"])
def test_resize_float_against_numpy(backend, interpolation):
    x = float_images()
    space = FloatBox(-2.0, 3.0, shape=(8, 6, 3), add_batch_rank=True)
    for height, width in ((4, 3), (5, 9)):
        out = run(ImageResize(width=width, height=height, interpolation=interpolation), space, x, backend)
        assert out.shape == (2, height, width, 3)
        np.testing.assert_allclose(out, rnp.resize_images(x, height, width, interpolation), atol=1e-5)


@pytest.mark.parametrize("interpolation", ["bilinear", "area"])
def test_resize_uint8_rounds(backend, interpolation):
    x = uint8_images()
    out = run(ImageResize(width=4, height=5, interpolation=interpolation), IMAGE_SPACE, x, backend)
    expected = np.round(rnp.resize_images(x, 5, 4, interpolation))
    assert out.dtype == np.uint8 and np.abs(out.astype(np.int64) - expected).max() <= 1


def test_resize_without_channel_axis_and_with_time_rank(backend):
    x = float_images(shape=(2, 3, 8, 6))
    space = FloatBox(shape=(8, 6), add_batch_rank=True, add_time_rank=True)
    out = run(ImageResize(width=4, height=3), space, x, backend)
    assert out.shape == (2, 3, 3, 4)
    np.testing.assert_allclose(out, rnp.resize_images(x, 3, 4, has_channels=False), atol=1e-5)


@pytest.mark.parametrize("interpolation", ["bilinear", "nearest", "area"])
def test_resize_parity_between_backends_and_with_library_ops(interpolation):
    tf = pytest.importorskip("tensorflow")
    torch = pytest.importorskip("torch")
    x = float_images(shape=(2, 13, 11, 3)) * 50.0
    space = FloatBox(shape=(13, 11, 3), add_batch_rank=True)
    for height, width in ((5, 4), (20, 17), (13, 11)):
        outs = [ComponentTest(ImageResize(width, height, interpolation), input_spaces=dict(inputs=space),
                              backend=b).test(("apply", x)) for b in ("tf", "pytorch")]
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-4)
        library = tf.image.resize(x, (height, width), method=interpolation, antialias=False).numpy()
        np.testing.assert_allclose(outs[0], library, rtol=1e-4, atol=1e-3)
        if interpolation != "area":  # torch's "area" is adaptive average pooling: another definition.
            mode = dict(bilinear="bilinear", nearest="nearest-exact")[interpolation]
            options = dict(align_corners=False, antialias=False) if interpolation == "bilinear" else {}
            nchw = torch.nn.functional.interpolate(torch.as_tensor(x).permute(0, 3, 1, 2), size=(height, width),
                                                   mode=mode, **options)
            np.testing.assert_allclose(outs[1], nchw.permute(0, 2, 3, 1).numpy(), rtol=1e-4, atol=1e-3)


def test_resize_bad_specs_and_inputs():
    with pytest.raises(RLGraphSpecError):
        ImageResize(width=0, height=4)
    with pytest.raises(RLGraphSpecError):
        ImageResize(width=4, height=4, interpolation="bicubic")
    with pytest.raises(RLGraphSpaceError):
        ImageResize(4, 4).get_preprocessed_space(FloatBox(shape=(5,), add_batch_rank=True))
    with pytest.raises(RLGraphSpaceError):
        ImageResize(4, 4).get_preprocessed_space(BoolBox(shape=(5, 5), add_batch_rank=True))


# --- ImageCrop -------------------------------------------------------------------------------------------------------

def test_crop_against_numpy(backend):
    x = uint8_images()
    layer = ImageCrop(x=1, y=2, width=4, height=5)
    out = run(layer, IMAGE_SPACE, x, backend)
    np.testing.assert_array_equal(out, x[:, 2:7, 1:5, :])
    assert layer.get_preprocessed_space(IMAGE_SPACE) == IntBox(256, shape=(5, 4, 3), dtype="uint8",
                                                               add_batch_rank=True)


def test_crop_without_channel_axis(backend):
    x = float_images(shape=(2, 8, 6))
    out = run(ImageCrop(x=0, y=7, width=6, height=1), FloatBox(shape=(8, 6), add_batch_rank=True), x, backend)
    np.testing.assert_array_equal(out, x[:, 7:8, 0:6])


def test_crop_outside_the_image_fails(backend):
    with pytest.raises(RLGraphSpaceError, match="outside the image"):
        ComponentTest(ImageCrop(x=3, y=0, width=4, height=2), input_spaces=dict(inputs=IMAGE_SPACE), backend=backend)
    with pytest.raises(RLGraphSpecError):
        ImageCrop(x=-1, y=0, width=2, height=2)
    with pytest.raises(RLGraphSpecError):
        ImageCrop(x=0, y=0, width=0, height=2)


# --- ImageBinary -----------------------------------------------------------------------------------------------------

def test_binary_against_numpy(backend):
    x = uint8_images()
    out = run(ImageBinary(threshold=200), IMAGE_SPACE, x, backend)
    np.testing.assert_array_equal(out, np.any(x > 200, axis=-1).astype(np.uint8))
    xf = float_images()
    space = FloatBox(shape=(8, 6, 3), add_batch_rank=True)
    out = run(ImageBinary(threshold=2.5, keep_rank=True), space, xf, backend)
    np.testing.assert_array_equal(out, np.any(xf > 2.5, axis=-1, keepdims=True).astype(np.float32))


def test_binary_needs_a_channel_axis():
    with pytest.raises(RLGraphSpaceError, match="rank"):
        ImageBinary().get_preprocessed_space(FloatBox(shape=(8, 6), add_batch_rank=True))
    with pytest.raises(RLGraphSpecError):
        ImageBinary(threshold="high")


# --- Normalize -------------------------------------------------------------------------------------------------------

def test_normalize_against_numpy(backend):
    x = uint8_images()
    out = run(Normalize(), IMAGE_SPACE, x, backend)
    np.testing.assert_allclose(out, rnp.min_max_normalize(x, sample_rank=3), rtol=1e-5, atol=1e-6)
    assert out.min() == 0.0 and out.max() == 1.0


def test_normalize_each_time_step_and_constant_samples(backend):
    x = float_images(shape=(2, 3, 4))
    x[1, 2] = 7.0
    space = FloatBox(shape=(4,), add_batch_rank=True, add_time_rank=True)
    out = run(Normalize(), space, x, backend)
    np.testing.assert_allclose(out, rnp.min_max_normalize(x, sample_rank=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out[1, 2], np.zeros(4))


# --- Clip, Multiply, Divide ------------------------------------------------------------------------------------------

CONTAINER_SPACE = Dict(a=FloatBox(-4.0, 4.0, shape=(3,)), b=IntBox(-5, 5, shape=(2, 2)), add_batch_rank=True)


def container_sample():
    rng = np.random.RandomState(3)
    return dict(a=rng.uniform(-4.0, 4.0, size=(2, 3)).astype(np.float32),
                b=rng.randint(-5, 5, size=(2, 2, 2)).astype(np.int32))


def test_clip_float_uint8_and_container(backend):
    xf = float_images()
    out = run(Clip(min=-1.0, max=1.0), FloatBox(-2.0, 3.0, shape=(8, 6, 3), add_batch_rank=True), xf, backend)
    np.testing.assert_array_equal(out, np.clip(xf, -1.0, 1.0))
    x = uint8_images()
    out = run(Clip(min=-1.0, max=100.5), IMAGE_SPACE, x, backend)  # uint8: the integers 0..100.
    np.testing.assert_array_equal(out, np.clip(x, 0, 100))
    sample = container_sample()
    layer = Clip(min=-1.5, max=2.0)
    out = run(layer, CONTAINER_SPACE, sample, backend)
    np.testing.assert_array_equal(out["a"], np.clip(sample["a"], -1.5, 2.0))
    np.testing.assert_array_equal(out["b"], np.clip(sample["b"], -1, 2))
    pre = layer.get_preprocessed_space(CONTAINER_SPACE)
    assert isinstance(pre, Dict) and pre.has_batch_rank
    assert pre["a"].global_bounds == (-1.5, 2.0) and pre["b"] == IntBox(-1, 3, shape=(2, 2), add_batch_rank=True)


def test_clip_int64_with_an_open_end(backend):
    x = np.array([[-2 ** 40, 3, 2 ** 40]], dtype=np.int64)
    out = run(Clip(min=-7, max=float("inf")), IntBox(shape=(3,), dtype="int64", add_batch_rank=True), x, backend)
    np.testing.assert_array_equal(out, [[-7, 3, 2 ** 40]])


def test_clip_bad_specs():
    with pytest.raises(RLGraphSpecError):
        Clip(min=1.0, max=-1.0)
    with pytest.raises(RLGraphSpecError):
        Clip(min=None)
    with pytest.raises(RLGraphSpaceError, match="no int32 value"):
        Clip(min=0.2, max=0.8).get_preprocessed_space(IntBox(5, add_batch_rank=True))


def test_multiply_container(backend):
    sample = container_sample()
    layer = Multiply(factor=-0.5)
    out = run(layer, CONTAINER_SPACE, sample, backend)
    np.testing.assert_allclose(out["a"], sample["a"] * -0.5, rtol=1e-6)
    np.testing.assert_allclose(out["b"], sample["b"] * -0.5, rtol=1e-6)
    pre = layer.get_preprocessed_space(CONTAINER_SPACE)
    assert pre["a"].global_bounds == (-2.0, 2.0) and pre["b"].global_bounds == (-2.0, 2.5)
    assert pre["b"].dtype == np.float32
    with pytest.raises(RLGraphSpecError):
        Multiply(factor=float("inf"))


def test_divide_uint8_images(backend):
    x = uint8_images()
    layer = Divide(divisor=255.0)
    out = run(layer, IMAGE_SPACE, x, backend)
    np.testing.assert_allclose(out, x.astype(np.float32) / np.float32(255.0), rtol=1e-6)
    assert layer.get_preprocessed_space(IMAGE_SPACE) == FloatBox(0.0, 1.0, shape=(8, 6, 3), add_batch_rank=True)
    with pytest.raises(RLGraphSpecError):
        Divide(divisor=0)


# --- ConvertType -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("to_dtype, box, np_dtype", [("float", FloatBox, np.float32), ("int", IntBox, np.int32),
                                                      ("bool", BoolBox, np.bool_), ("uint8", IntBox, np.uint8),
                                                      ("float64", FloatBox, np.float64)])
def test_convert_type(backend, to_dtype, box, np_dtype):
    x = np.array([[0.0, 1.7, 9.2], [3.5, 0.4, 255.0]], dtype=np.float32)
    space = FloatBox(0.0, 255.0, shape=(3,), add_batch_rank=True)
    layer = ConvertType(to_dtype)
    out = run(layer, space, x, backend)
    np.testing.assert_array_equal(out, x.astype(np_dtype))
    assert type(layer.get_preprocessed_space(space)) is box


def test_convert_type_spaces_and_errors():
    assert ConvertType("float").get_preprocessed_space(IMAGE_SPACE) == FloatBox(0.0, 255.0, shape=(8, 6, 3),
                                                                                add_batch_rank=True)
    assert ConvertType("int").get_preprocessed_space(BoolBox(shape=(2,))) == IntBox(2, shape=(2,))
    assert ConvertType("uint8").get_preprocessed_space(FloatBox(shape=(2,))) == IntBox(shape=(2,), dtype="uint8")
    for bad in ("complex64", "text", None):
        with pytest.raises(RLGraphSpecError):
            ConvertType(bad)


def test_container_input_with_a_bad_leaf_names_the_key():
    space = Dict(img=FloatBox(shape=(4, 4, 3)), flag=BoolBox(), add_batch_rank=True)
    with pytest.raises(RLGraphError, match="/flag"):
        ImageResize(2, 2).get_preprocessed_space(space)
