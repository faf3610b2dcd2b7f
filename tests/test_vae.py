"""VariationalAutoEncoder: outputs against the numpy reference, the KL by hand, seeded noise that is the
same on both backends, and a short training run, on both backends."""
import math

import numpy as np
import pytest

from rlgraph.backend_system import is_backend_installed
from rlgraph.components import Component
from rlgraph.components.neural_networks import VariationalAutoEncoder
from rlgraph.components.optimizers.adam_optimizer import AdamOptimizer
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal
from rlgraph.utils import numpy as rnp
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError

X_SPACE = FloatBox(shape=(3,), add_batch_rank=True)
Z_SPACE = FloatBox(shape=(2,), add_batch_rank=True)
X = np.array([[0.1, 0.2, 0.3], [1.0, 2.0, 3.0], [-1.0, 0.5, 0.0], [0.0, 0.0, 0.0]], np.float32)
SCOPE = "variational-auto-encoder"


def _vae(seed=7, **kwargs):
    return VariationalAutoEncoder(2, [{"type": "dense", "units": 4, "activation": "tanh", "scope": "hidden"}],
                                  [{"type": "dense", "units": 3, "scope": "out"}], seed=seed, **kwargs)


def _numpy_encode(w, x, seed, num_calls):
    h = np.tanh(rnp.dense_layer(x, w[f"{SCOPE}/encoder-network/hidden/kernel"],
                                w[f"{SCOPE}/encoder-network/hidden/bias"]))
    mean = rnp.dense_layer(h, w[f"{SCOPE}/mean-layer/kernel"], w[f"{SCOPE}/mean-layer/bias"])
    stddev = np.exp(rnp.dense_layer(h, w[f"{SCOPE}/log-stddev-layer/kernel"], w[f"{SCOPE}/log-stddev-layer/bias"]))
    z = mean + stddev * rnp.hashed_standard_normal(seed, num_calls, mean.shape)
    return mean, stddev, z


def _numpy_decode(w, z):
    return rnp.dense_layer(z, w[f"{SCOPE}/decoder-network/out/kernel"], w[f"{SCOPE}/decoder-network/out/bias"])


def test_encode_decode_and_call_against_numpy(backend):
    vae = _vae()
    test = ComponentTest(vae, input_spaces=dict(input_=X_SPACE, z_vector=Z_SPACE), backend=backend)
    w = test.read_variable_values()
    assert w[f"{SCOPE}/seed"] == 7
    for k in range(2):  # Each call draws the next noise of the stream.
        out = test.test(("encode", X))
        mean, stddev, z = _numpy_encode(w, X, 7, k)
        assert out["z_sample"].shape == (4, 2) and out["z_sample"].dtype == np.float32
        recursive_assert_almost_equal(out, dict(mean=mean, stddev=stddev, z_sample=z), decimals=5)
    z = np.array([[0.5, -1.0], [0.0, 2.0]], np.float32)
    recursive_assert_almost_equal(test.test(("decode", z)), _numpy_decode(w, z), decimals=5)
    recursive_assert_almost_equal(test.test(("call", X)), _numpy_decode(w, _numpy_encode(w, X, 7, 2)[2]), decimals=5)
    assert test.read_variable_values(f"{SCOPE}/num_calls") == 3


def test_loss_pieces_against_the_closed_form(backend):
    vae = _vae(kl_weight=0.5)
    test = ComponentTest(vae, input_spaces=dict(input_=X_SPACE), backend=backend)
    weights = test.graph_executor.get_weights()
    # Zero kernels: mean = (1, 0), log stddev = (0, -1) and reconstruction = (1, 2, 3) for every input.
    fixed = {k: np.zeros_like(v) for k, v in weights.items()}
    fixed[f"{SCOPE}/mean-layer/bias"] = np.array([1.0, 0.0], np.float32)
    fixed[f"{SCOPE}/log-stddev-layer/bias"] = np.array([0.0, -1.0], np.float32)
    fixed[f"{SCOPE}/decoder-network/out/bias"] = np.array([1.0, 2.0, 3.0], np.float32)
    test.graph_executor.set_weights(fixed)
    out = test.test(("loss", X))
    # KL(N(m, s^2) || N(0, 1)) = 0.5 (m^2 + s^2 - 1) - log s per unit: 0.5 for (1, 1), 0.5 e^-2 - 0.5 + 1 for (0, e^-1).
    kl = 0.5 + (0.5 * math.exp(-2.0) + 0.5)
    recursive_assert_almost_equal(out["kl_divergence"], np.full(4, kl), decimals=5)
    recursive_assert_almost_equal(rnp.gaussian_kl_to_standard_normal(np.array([[1.0, 0.0]]),
                                                                     np.array([[1.0, math.exp(-1.0)]])), [kl])
    reconstruction = 0.5 * np.array([0.81 + 3.24 + 7.29, 0.0, 4.0 + 2.25 + 9.0, 1.0 + 4.0 + 9.0])
    recursive_assert_almost_equal(out["reconstruction_loss"], reconstruction, decimals=5)
    recursive_assert_almost_equal(out["loss_per_item"], reconstruction + 0.5 * kl, decimals=5)
    assert out["loss"] == pytest.approx(np.mean(reconstruction + 0.5 * kl), abs=1e-5)
    # With the test's own weights: the numpy reference of the whole loss (the second noise draw, k = 1).
    test.graph_executor.set_weights(weights)
    w = test.read_variable_values()
    mean, stddev, z = _numpy_encode(w, X, 7, 1)
    loss, per_item = rnp.vae_loss(X, _numpy_decode(w, z), mean, stddev, kl_weight=0.5)
    out = test.test(("loss", X))
    recursive_assert_almost_equal(out["loss_per_item"], per_item, decimals=4)
    assert out["loss"] == pytest.approx(loss, abs=1e-4)


def test_seeded_noise_repeats_and_differs_by_seed(backend):
    def z_samples(seed, executor_seed):
        test = ComponentTest(_vae(seed=seed), input_spaces=dict(input_=X_SPACE), backend=backend, seed=executor_seed)
        zero = {k: np.zeros_like(v) for k, v in test.graph_executor.get_weights().items()}
        test.graph_executor.set_weights(zero)  # mean 0, stddev 1: z is the noise itself.
        return [test.test(("encode", X))["z_sample"] for _ in range(2)]

    first = z_samples(7, 1)
    recursive_assert_almost_equal(first, z_samples(7, 2))  # The VAE's seed decides, not the executor's.
    recursive_assert_almost_equal(first[1], rnp.hashed_standard_normal(7, 1, (4, 2)))
    recursive_assert_almost_equal(first[0], first[1], false=True)
    recursive_assert_almost_equal(first[0], z_samples(8, 1)[0], false=True)
    noise = rnp.hashed_standard_normal(3, 0, (100000,)).astype(np.float64)
    assert abs(noise.mean()) < 0.01 and abs(noise.std() - 1.0) < 0.01


class _Trainer(Component):
    """Root: one Adam step on the VAE's loss per `update`."""

    def __init__(self, vae, learning_rate=0.01):
        super().__init__(scope="trainer")
        self.vae, self.optimizer = vae, AdamOptimizer(learning_rate=learning_rate)
        self.add_components(self.vae, self.optimizer)

    @rlgraph_api
    def update(self, input_):
        out = self.vae.loss(input_)  # First: the VAE creates its variables here.
        return self.optimizer.step(self._graph_fn_variables(), out["loss"], out["loss_per_item"])

    @graph_fn
    def _graph_fn_variables(self):
        return self.vae.get_variables(custom_scope_separator="-", trainable_only=True)


def _toy_data():
    rng = np.random.RandomState(0)  # 6-d points near a 2-d plane.
    plane = rng.normal(size=(2, 6))
    return (rng.normal(size=(64, 2)) @ plane + 0.05 * rng.normal(size=(64, 6))).astype(np.float32)


def _train(backend, steps):
    vae = VariationalAutoEncoder(2, [{"type": "dense", "units": 16, "activation": "tanh"}],
                                 [{"type": "dense", "units": 16, "activation": "tanh"}, {"type": "dense", "units": 6}],
                                 seed=3)
    test = ComponentTest(_Trainer(vae), input_spaces=dict(input_=FloatBox(shape=(6,), add_batch_rank=True)),
                         backend=backend, seed=1)
    x = _toy_data()
    return np.array([float(test.test(("update", x))[0]) for _ in range(steps)])


@pytest.mark.learning
def test_adam_training_lowers_the_loss(backend):
    losses = _train(backend, 300)
    assert losses[-10:].mean() < 0.25 * losses[0], (losses[0], losses[-10:].mean())


@pytest.mark.skipif(not (is_backend_installed("tf") and is_backend_installed("pytorch")),
                    reason="needs both backends")
def test_same_weights_and_seed_give_the_same_samples_and_training_on_both_backends():
    tests = {b: ComponentTest(_vae(seed=5), input_spaces=dict(input_=X_SPACE), backend=b) for b in ("tf", "pytorch")}
    tests["pytorch"].graph_executor.set_weights(tests["tf"].graph_executor.get_weights())
    for api in ("encode", "call", "loss"):
        recursive_assert_almost_equal(tests["pytorch"].test((api, X)), tests["tf"].test((api, X)), decimals=5)
    # (Same executor seed: same initial weights.) The loss curves agree step by step.
    np.testing.assert_allclose(_train("pytorch", 30), _train("tf", 30), rtol=1e-4)


def test_from_spec_and_errors(backend):
    vae = Component.from_spec({"type": "vae", "z_units": 2, "encoder_network_spec": [{"type": "dense", "units": 3}],
                               "decoder_network_spec": [{"type": "dense", "units": 3}]})
    assert isinstance(vae, VariationalAutoEncoder) and vae.seed is None
    for kwargs, pattern in (({"z_units": 0}, "z_units"), ({"seed": -1}, "seed"), ({"kl_weight": -1.0}, "kl_weight")):
        with pytest.raises(RLGraphSpecError, match=pattern):
            VariationalAutoEncoder(**dict(dict(z_units=2, encoder_network_spec=[], decoder_network_spec=[]), **kwargs))
    with pytest.raises(RLGraphSpaceError, match="float batch"):
        ComponentTest(_vae(), input_spaces=dict(input_=IntBox(3, shape=(3,), add_batch_rank=True)), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="latent size"):
        ComponentTest(_vae(), input_spaces=dict(input_=X_SPACE, z_vector=FloatBox(shape=(3,), add_batch_rank=True)),
                      backend=backend)
    wrong_decoder = VariationalAutoEncoder(2, [{"type": "dense", "units": 3}], [{"type": "dense", "units": 4}])
    with pytest.raises(RLGraphError, match="not shaped like the input"):
        ComponentTest(wrong_decoder, input_spaces=dict(input_=X_SPACE), backend=backend)
