"""String layers: FarmHash parity with TensorFlow, StringToHashBucket, EmbeddingLookup (both backends)."""
import numpy as np
import pytest

from rlgraph.components import Component
from rlgraph.components.layers.strings.embedding_lookup import EmbeddingLookup
from rlgraph.components.layers.strings.string_layer import StringLayer
from rlgraph.components.layers.strings.string_to_hash_bucket import StringToHashBucket
from rlgraph.spaces import FloatBox, IntBox, TextBox
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal
from rlgraph.utils.decorators import rlgraph_api
from rlgraph.utils.farmhash import fingerprint64
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

TEXT = TextBox(add_batch_rank=True)
SENTENCES = np.array(["go left now", "stop", "", "a  b", "héllo wörld", " lead and trail "])


class TextEmbedder(Component):
    """StringToHashBucket -> EmbeddingLookup: text [B] -> (embeddings [B, max_tokens, D], lengths [B])."""

    def __init__(self, num_buckets=7, embed_dim=3, max_norm=None, **kwargs):
        super().__init__(StringToHashBucket(num_hash_buckets=num_buckets),
                         EmbeddingLookup(embed_dim=embed_dim, vocab_size=num_buckets, max_norm=max_norm),
                         scope="text-embedder", **kwargs)

    @rlgraph_api
    def embed(self, text):
        buckets, lengths = self.get_sub_component_by_name("str-hash-bucket").apply(text)
        return self.get_sub_component_by_name("embedding-lookup").apply(buckets), buckets, lengths


def _random_strings(rng, lengths):
    """Random byte strings (all byte values) and unicode strings, of the given byte/char lengths."""
    out = [bytes(rng.randint(0, 256, n).astype(np.uint8)) for n in lengths]
    chars = np.array(list("abcXYZ 019_-äöé€漢"))
    out += ["".join(rng.choice(chars, n)) for n in lengths]
    return out


def _reference_buckets(texts, num_buckets, delimiter=" "):
    """Hand-built expectation: python str.split + fingerprint64, right-padded with 0."""
    rows = [[fingerprint64(t) % num_buckets for t in s.split(delimiter)] for s in texts]
    width = max(len(r) for r in rows)
    return np.array([r + [0] * (width - len(r)) for r in rows]), np.array([len(r) for r in rows])


def test_fingerprint64_matches_tf_on_all_length_branches():
    tf = pytest.importorskip("tensorflow")
    rng = np.random.RandomState(3)
    # Every length 0..100 once, plus random lengths: covers 0-16, 17-32, 33-64 and >64 bytes (1-2 loop blocks).
    lengths = list(range(101)) + rng.randint(0, 101, 200).tolist() + [128, 129, 200]
    strings = _random_strings(rng, lengths)
    assert len(strings) > 600
    encoded = [s.encode("utf-8") if isinstance(s, str) else s for s in strings]
    # Two large coprime moduli: together they pin down (almost) the whole 64-bit fingerprint.
    for num_buckets in (2 ** 63 - 1, 2 ** 62 + 7, 1000):
        expected = tf.strings.to_hash_bucket_fast(tf.constant(encoded), num_buckets).numpy()
        ours = np.array([fingerprint64(s) % num_buckets for s in strings], dtype=np.int64)
        mismatches = [len(e) for e, a, b in zip(encoded, expected, ours) if a != b]
        assert not mismatches, f"byte lengths that differ from TF: {sorted(set(mismatches))}"
    assert fingerprint64("") == 0x9AE16A3B2F90404F  # The empty string hashes to the constant k2.


def test_string_to_hash_bucket(backend):
    layer = StringToHashBucket(num_hash_buckets=50)
    test = ComponentTest(layer, input_spaces=dict(inputs=TEXT), backend=backend)
    buckets, lengths = test.test(("apply", SENTENCES))
    expected_buckets, expected_lengths = _reference_buckets(SENTENCES.tolist(), 50)
    assert buckets.dtype == np.int64 and lengths.dtype == np.int64
    # "" is one empty token; "a  b" has an empty token between the two spaces; leading and
    # trailing delimiters give empty tokens at the ends.
    assert lengths.tolist() == [3, 1, 1, 3, 2, 5] == expected_lengths.tolist()
    assert buckets.shape == (6, 5)
    np.testing.assert_array_equal(buckets, expected_buckets)
    assert buckets[1, 1:].tolist() == [0, 0, 0, 0]  # Right padding.
    # The padded width follows the longest row of each batch.
    buckets, lengths = test.test(("apply", np.array(["one", "two"])))
    assert buckets.shape == (2, 1) and lengths.tolist() == [1, 1]


def test_string_to_hash_bucket_delimiter_and_int32(backend):
    layer = StringToHashBucket(delimiter="<>", dtype="int32", num_hash_buckets=1 << 20)
    test = ComponentTest(layer, input_spaces=dict(inputs=TEXT), backend=backend)
    texts = ["a<>b<>", "c d", "<>"]
    buckets, lengths = test.test(("apply", np.array(texts)))
    expected_buckets, expected_lengths = _reference_buckets(texts, 1 << 20, delimiter="<>")
    assert buckets.dtype == np.int32 and lengths.dtype == np.int32
    np.testing.assert_array_equal(buckets, expected_buckets)
    np.testing.assert_array_equal(lengths, expected_lengths)


def test_string_to_hash_bucket_cross_backend_parity():
    pytest.importorskip("tensorflow")
    pytest.importorskip("torch")
    rng = np.random.RandomState(5)
    words = _random_strings(rng, rng.randint(0, 90, 40))[40:]  # The unicode half.
    texts = np.array([" ".join(rng.choice(words, rng.randint(1, 5))) for _ in range(30)])
    results = [ComponentTest(StringToHashBucket(num_hash_buckets=997), input_spaces=dict(inputs=TEXT),
                             backend=backend).test(("apply", texts)) for backend in ("tf", "pytorch")]
    np.testing.assert_array_equal(results[0][0], results[1][0])
    np.testing.assert_array_equal(results[0][1], results[1][1])


@pytest.mark.parametrize("max_norm", [None, 0.05])
def test_hash_bucket_into_embedding_lookup(backend, max_norm):
    component = TextEmbedder(num_buckets=7, embed_dim=3, max_norm=max_norm)
    test = ComponentTest(component, input_spaces=dict(text=TEXT), backend=backend, seed=4)
    embedded, buckets, lengths = test.test(("embed", SENTENCES))
    embeddings = test.read_variable_values(component.variable_registry)["text-embedder/embedding-lookup/embeddings"]
    assert embeddings.shape == (7, 3)
    expected_buckets, expected_lengths = _reference_buckets(SENTENCES.tolist(), 7)
    np.testing.assert_array_equal(buckets, expected_buckets)
    np.testing.assert_array_equal(lengths, expected_lengths)
    expected = embeddings[expected_buckets]  # [B, max_tokens, 3]; padding looks up row 0.
    if max_norm is not None:
        norms = np.linalg.norm(expected, axis=-1, keepdims=True)
        assert np.any(norms > max_norm)  # The clipping is exercised.
        expected = expected * max_norm / np.maximum(norms, max_norm)
    assert embedded.shape == (6, 5, 3)
    recursive_assert_almost_equal(embedded, expected, decimals=5)


def test_embedding_lookup_any_id_shape_and_parity():
    pytest.importorskip("tensorflow")
    pytest.importorskip("torch")
    ids = np.array([[[0, 4], [2, 2]], [[1, 3], [4, 0]]])  # [B=2, T=2, 2]
    space = IntBox(5, shape=(2,), add_batch_rank=True, add_time_rank=True)
    outs = []
    for backend in ("tf", "pytorch"):
        layer = EmbeddingLookup(embed_dim=4, vocab_size=5, max_norm=1.0)
        test = ComponentTest(layer, input_spaces=dict(inputs=space), backend=backend, seed=11)
        weights = test.read_variable_values(layer.variable_registry)["embedding-lookup/embeddings"]
        out = test.test(("apply", ids))
        assert out.shape == (2, 2, 2, 4)
        norms = np.linalg.norm(weights[ids], axis=-1, keepdims=True)
        np.testing.assert_allclose(out, weights[ids] / np.maximum(norms, 1.0), atol=1e-6)
        outs.append(out)
    np.testing.assert_allclose(outs[0], outs[1], atol=1e-5)
    assert EmbeddingLookup(embed_dim=4, vocab_size=5).get_preprocessed_space(space) == \
        FloatBox(shape=(2, 4), add_batch_rank=True, add_time_rank=True)


def test_string_layers_reject_non_text_input(backend):
    with pytest.raises(RLGraphSpaceError, match=r"str-hash-bucket\.apply\(inputs\[0\]\)") as info:
        ComponentTest(StringToHashBucket(), input_spaces=dict(inputs=FloatBox(add_batch_rank=True)), backend=backend)
    assert "text inputs" in str(info.value)
    with pytest.raises(RLGraphSpaceError, match="needs a batch rank"):
        ComponentTest(StringLayer(), input_spaces=dict(inputs=TextBox()), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="batch of single strings"):
        ComponentTest(StringToHashBucket(), input_spaces=dict(inputs=TextBox(shape=(2,), add_batch_rank=True)),
                      backend=backend)
    with pytest.raises(RLGraphSpaceError, match=r"embedding-lookup\.apply\(inputs\).*integer ids"):
        ComponentTest(EmbeddingLookup(2, 5), input_spaces=dict(inputs=TEXT), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="exceed the vocabulary"):
        ComponentTest(EmbeddingLookup(2, 5), input_spaces=dict(inputs=IntBox(6, add_batch_rank=True)),
                      backend=backend)


@pytest.mark.parametrize("kwargs", [dict(hash_function="strong"), dict(delimiter=""), dict(num_hash_buckets=0),
                                    dict(dtype="float32"), dict(dtype="int32", num_hash_buckets=2 ** 40)])
def test_string_to_hash_bucket_bad_args(kwargs):
    with pytest.raises(RLGraphSpecError, match=r"StringToHashBucket\("):
        StringToHashBucket(**kwargs)


@pytest.mark.parametrize("kwargs", [dict(embed_dim=0), dict(vocab_size=1.5), dict(partition_strategy="x"),
                                    dict(max_norm=-1.0)])
def test_embedding_lookup_bad_args(kwargs):
    with pytest.raises(RLGraphSpecError, match=r"EmbeddingLookup\("):
        EmbeddingLookup(**{**dict(embed_dim=2, vocab_size=3), **kwargs})
