"""`VariationalAutoEncoder`: encoder, Gaussian latent with the reparameterisation trick, decoder."""
from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.api_aliases import ApiAlias
from rlgraph.components.common.sampler import _hash32_tf, _hash32_torch
from rlgraph.components.component import Component
from rlgraph.components.distributions._backend_maths import backend_maths
from rlgraph.components.distributions.normal import Normal
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.components.neural_networks.neural_network import NeuralNetwork
from rlgraph.spaces import FloatBox
from rlgraph.utils.decorators import graph_fn, rlgraph_api
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

TWO_POW_32 = float(2 ** 32)


class VariationalAutoEncoder(Component):
    """A variational auto-encoder ([Kingma & Welling 2013](https://arxiv.org/abs/1312.6114)).

    encode: h = encoder(x); mean = dense(h); log_stddev = dense(h); z = mean + exp(log_stddev) * eps
    with eps ~ N(0, I) (the reparameterisation trick: z is differentiable in mean and stddev).
    decode: reconstruction = decoder(z). loss: per item 0.5 * ||x - reconstruction||^2 (the negative
    log-likelihood of x under N(reconstruction, I), without its constant) + kl_weight *
    KL(N(mean, stddev^2) || N(0, I)) (with `Normal`'s maths), and its batch mean: the negative ELBO.

    The noise eps does not come from TF's or PyTorch's random generators (which differ), but from
    the counter-based hash that `Sampler` uses, turned into normals by Box-Muller: call k draws
    `rlgraph.utils.numpy.hashed_standard_normal(seed, k, shape)`. So the same `seed` and weights give
    the same samples on both backends. `seed` and the call counter k are the worker-local variables
    "<scope>/seed" and "<scope>/num_calls" (saved with the model); `seed=None` draws the seed from
    numpy's global generator when the variables are made (which executors seed).

    Args:
        z_units: Size Z of the latent vector.
        encoder_network_spec: A `NeuralNetwork` or its spec (a list of layer specs), input x -> h.
        decoder_network_spec: A `NeuralNetwork` or its spec, z -> reconstruction (shaped like x).
        kl_weight: Weight of the KL term (1.0: the ELBO; other values: a beta-VAE,
            [Higgins et al. 2017](https://openreview.net/forum?id=Sy2fzU9gl)).
        seed: The noise stream's seed in [0, 2**31), or None (see above).
        scope: Default "variational-auto-encoder".

    Raises:
        RLGraphSpecError: For a bad `z_units`, `kl_weight` or `seed`.
        RLGraphSpaceError: At build, for a non-float `input_` without batch rank (or with a time
            rank), a `z_vector` that is no FloatBox((z_units,)), or a reconstruction not shaped like x.

    API:
        encode(input_) -> {"z_sample", "mean", "stddev"}, each [B, Z].
        decode(z_vector) -> the decoder's output [B, ...].
        apply(input_) (alias `call`) -> decode(encode(input_)["z_sample"]).
        loss(input_) -> {"loss": [] (batch mean), "loss_per_item": [B], "reconstruction_loss": [B],
            "kl_divergence": [B]}.

    >>> from rlgraph.tests import ComponentTest
    >>> vae = VariationalAutoEncoder(2, [{"type": "dense", "units": 4, "activation": "relu"}],
    ...                              [{"type": "dense", "units": 3}], seed=1)
    >>> test = ComponentTest(vae, input_spaces=dict(input_=FloatBox(shape=(3,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> out = test.test(("encode", np.ones((5, 3), np.float32)))
    >>> out["z_sample"].shape, test.test(("call", np.ones((5, 3), np.float32))).shape
    ((5, 2), (5, 3))
    """

    call = ApiAlias("apply")

    def __init__(self, z_units: int, encoder_network_spec: Any, decoder_network_spec: Any, kl_weight: float = 1.0,
                 seed: Optional[int] = None, scope: str = "variational-auto-encoder", **kwargs):
        super().__init__(scope=scope, **kwargs)
        name = type(self).__name__
        if isinstance(z_units, bool) or not isinstance(z_units, (int, np.integer)) or z_units < 1:
            raise RLGraphSpecError("z_units must be an int >= 1", where=f"{name}(z_units)", received=repr(z_units))
        if isinstance(kl_weight, bool) or not isinstance(kl_weight, (int, float)) or not kl_weight >= 0 or \
                not math.isfinite(kl_weight):
            raise RLGraphSpecError("kl_weight must be a finite number >= 0", where=f"{name}(kl_weight)",
                                   received=repr(kl_weight))
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or
                                 not 0 <= seed < 2 ** 31):
            raise RLGraphSpecError("seed must be None or an int in [0, 2**31)", where=f"{name}(seed)",
                                   received=repr(seed))
        self.z_units = int(z_units)
        self.kl_weight = float(kl_weight)
        self.seed = None if seed is None else int(seed)
        self.encoder_network = _network(encoder_network_spec, "encoder-network")
        self.decoder_network = _network(decoder_network_spec, "decoder-network")
        self.mean_layer = DenseLayer(units=self.z_units, scope="mean-layer")
        self.log_stddev_layer = DenseLayer(units=self.z_units, scope="log-stddev-layer")
        # Used inside graph functions only (no variables): the KL term's maths.
        self.z_distribution = Normal(scope="z-distribution")
        self.add_components(self.encoder_network, self.decoder_network, self.mean_layer, self.log_stddev_layer)
        self.seed_variable = None
        self.num_calls = None

    def check_input_spaces(self, input_spaces, action_space=None):
        x = input_spaces.get("input_")
        if x is not None and (not isinstance(x, FloatBox) or not x.has_batch_rank or x.has_time_rank):
            raise RLGraphSpaceError(x, "the input must be a float batch", where=f"{self.global_scope}.encode(input_)",
                                    expected="FloatBox(shape=(...), add_batch_rank=True) without time rank")
        z = input_spaces.get("z_vector")
        if z is not None and (not isinstance(z, FloatBox) or tuple(z.shape) != (self.z_units,)):
            raise RLGraphSpaceError(z, "z_vector does not fit the latent size", where=f"{self.global_scope}.decode("
                                    "z_vector)", expected=f"FloatBox(shape=({self.z_units},), add_batch_rank=True)")

    def create_variables(self, input_spaces, action_space=None):
        seed = self.seed if self.seed is not None else int(np.random.randint(0, 2 ** 31))
        self.seed_variable = self.get_variable("seed", dtype="int64", initializer=seed, trainable=False, local=True)
        self.num_calls = self.get_variable("num_calls", dtype="int64", initializer=0, trainable=False, local=True)

    # --- API ------------------------------------------------------------------------------------
    @rlgraph_api
    def encode(self, input_):
        """{"z_sample", "mean", "stddev"} of the latent Gaussian of `input_` [B, ...], each [B, Z]."""
        mean, _, stddev, z = self._encode(input_)
        return dict(z_sample=z, mean=mean, stddev=stddev)

    @rlgraph_api(must_be_complete=False)
    def decode(self, z_vector):
        """The decoder's output for latent vectors `z_vector` [B, Z]."""
        return self.decoder_network.apply(z_vector)["output"]

    @rlgraph_api
    def apply(self, input_):
        """decode(encode(input_)["z_sample"])."""
        return self.decode(self.encode(input_)["z_sample"])

    @rlgraph_api
    def loss(self, input_):
        """The negative ELBO and its pieces for `input_` [B, ...] (see the class docstring)."""
        mean, log_stddev, _, z = self._encode(input_)
        return self._graph_fn_negative_elbo(input_, self.decode(z), mean, log_stddev)

    def _encode(self, input_):
        h = self.encoder_network.apply(input_)["output"]
        mean, log_stddev = self.mean_layer.apply(h), self.log_stddev_layer.apply(h)
        stddev, z = self._graph_fn_sample_z(mean, log_stddev)
        return mean, log_stddev, stddev, z

    # --- Graph functions --------------------------------------------------------------------------
    @graph_fn(returns=2)
    def _graph_fn_sample_z(self, mean, log_stddev):
        """(stddev, z = mean + stddev * eps), eps the hashed N(0, 1) noise of this call."""
        k = self.read_variable(self.num_calls)
        if get_backend() == "tf":
            eps = _hashed_normal_tf(self.read_variable(self.seed_variable), k, mean)
        else:
            eps = _hashed_normal_torch(self.read_variable(self.seed_variable), k, mean)
        self.assign_variable(self.num_calls, k + 1)
        stddev = backend_maths().exp(log_stddev)
        return stddev, mean + stddev * eps

    @graph_fn
    def _graph_fn_negative_elbo(self, input_, reconstruction, mean, log_stddev):
        m = backend_maths()
        if tuple(input_.shape[1:]) != tuple(reconstruction.shape[1:]):
            raise RLGraphSpaceError(None, "the decoder's output is not shaped like the input",
                                    where=f"{self.global_scope}.loss(input_)",
                                    expected=f"[B, {', '.join(str(d) for d in input_.shape[1:])}]",
                                    received=f"[B, {', '.join(str(d) for d in reconstruction.shape[1:])}]",
                                    hint="end the decoder network with a layer of the input's size.")
        diff = m.float_like(input_, reconstruction) - reconstruction
        reconstruction_loss = 0.5 * m.sum_from(diff * diff, 1)
        posterior = self.z_distribution.get_distribution((mean, log_stddev))
        prior = self.z_distribution.get_distribution((m.zeros_like(mean), m.zeros_like(mean)))
        kl = m.sum_last(posterior.kl_divergence(prior))
        loss_per_item = reconstruction_loss + self.kl_weight * kl
        mean_loss = loss_per_item.mean() if get_backend() == "pytorch" else _tf().reduce_mean(loss_per_item)
        return dict(loss=mean_loss, loss_per_item=loss_per_item, reconstruction_loss=reconstruction_loss,
                    kl_divergence=kl)


def _network(spec: Any, scope: str) -> Component:
    return spec if isinstance(spec, Component) else NeuralNetwork.from_spec(spec, scope=scope)


def _tf():
    import tensorflow as tf
    return tf


# The noise of `rlgraph.utils.numpy.hashed_standard_normal`, shaped like `like` (float64 maths, then its dtype).
def _hashed_normal_tf(seed, k, like):
    tf = _tf()
    shape = tf.shape(like, out_type=tf.int64)
    stream = _hash32_tf(tf.bitwise.bitwise_xor(seed, _hash32_tf(k)))
    i = stream + 2 * tf.range(tf.reduce_prod(shape), dtype=tf.int64)
    u1 = (tf.cast(_hash32_tf(i), tf.float64) + 1.0) / TWO_POW_32
    u2 = tf.cast(_hash32_tf(i + 1), tf.float64) / TWO_POW_32
    eps = tf.sqrt(-2.0 * tf.math.log(u1)) * tf.cos(2.0 * math.pi * u2)
    return tf.reshape(tf.cast(eps, like.dtype), shape)


def _hashed_normal_torch(seed, k, like):
    import torch
    stream = _hash32_torch(seed ^ _hash32_torch(k))
    i = stream + 2 * torch.arange(like.numel(), dtype=torch.int64, device=stream.device)
    u1 = (_hash32_torch(i).to(torch.float64) + 1.0) / TWO_POW_32
    u2 = _hash32_torch(i + 1).to(torch.float64) / TWO_POW_32
    eps = torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(2.0 * math.pi * u2)
    return eps.to(like.dtype).reshape(like.shape).to(like.device)
