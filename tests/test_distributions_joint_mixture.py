"""JointCumulativeDistribution, MixtureDistribution and ContainerLossFunction: worked numbers and the
numpy reference (`rlgraph/utils/numpy/distributions.py`), on both backends."""
import math

import numpy as np
import pytest
from scipy import stats

from rlgraph.components import Component
from rlgraph.components.distributions import (Categorical, JointCumulativeDistribution, MixtureDistribution,
                                              MultivariateNormal, Normal)
from rlgraph.components.loss_functions import ContainerLossFunction, EuclideanDistanceLoss
from rlgraph.spaces import Dict, FloatBox, IntBox, Tuple
from rlgraph.tests import ComponentTest
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError

F32 = np.float32
N = 20000
LOG_N01_AT_MEAN = -0.5 * math.log(2.0 * math.pi)  # log N(0; 0, 1) = -0.9189385


def _pair(shape=(), time=False):
    return Tuple(FloatBox(shape=shape), FloatBox(shape=shape), add_batch_rank=True, add_time_rank=time)


# --- JointCumulativeDistribution -------------------------------------------------------------------
JOINT_PARAMS = Dict(a=FloatBox(shape=(3,)), b=Tuple(FloatBox(shape=(2,)), FloatBox(shape=(2,))), add_batch_rank=True)
JOINT_VALUES = Dict(a=IntBox(3), b=FloatBox(shape=(2,)), add_batch_rank=True)
P = {"a": np.array([[0.0, 0.0, 0.0], [1.0, -0.5, 2.0]], F32),
     "b": (np.array([[0.0, 0.0], [0.5, -1.0]], F32), np.array([[0.0, 0.0], [-0.3, 0.4]], F32))}
Q = {"a": np.array([[0.2, 0.0, -0.1], [0.0, 0.0, 0.0]], F32),
     "b": (np.array([[1.0, 0.0], [0.0, 0.0]], F32), np.array([[0.5, 0.0], [0.0, 0.0]], F32))}
ACTIONS = {"a": np.array([1, 2]), "b": np.array([[0.0, 0.0], [1.0, -2.0]], F32)}


def _joint(backend, **spaces):
    dist = JointCumulativeDistribution({"/a": Categorical(), "b": "normal"})
    return ComponentTest(dist, input_spaces=dict(parameters=JOINT_PARAMS, **spaces), backend=backend)


def test_joint_log_prob_entropy_kl(backend):
    test = _joint(backend, values=JOINT_VALUES, other_parameters=JOINT_PARAMS)
    log_prob = test.test(("log_prob", [P, ACTIONS]))
    # Row 0 by hand: a uniform category, log(1/3); two standard normals at their mean, 2 log N(0; 0, 1).
    assert log_prob.shape == (2,)
    np.testing.assert_allclose(log_prob[0], math.log(1 / 3) + 2 * LOG_N01_AT_MEAN, rtol=1e-6)
    expected = rnp.joint_log_prob([rnp.categorical_log_prob(P["a"], ACTIONS["a"]),
                                   rnp.normal_log_prob(*P["b"], ACTIONS["b"])])
    np.testing.assert_allclose(log_prob, expected, rtol=1e-5)
    # Entropy of independent parts: the sum. Row 0: log 3 + 2 (0.5 + 0.5 log 2 pi) = 3.9364887.
    entropy = test.test(("entropy", P))
    np.testing.assert_allclose(entropy[0], math.log(3) + 2 * (0.5 - LOG_N01_AT_MEAN), rtol=1e-6)
    np.testing.assert_allclose(entropy, rnp.categorical_entropy(P["a"]) + rnp.sum_event(rnp.normal_entropy(P["b"][1])),
                               rtol=1e-5)
    # KL of independent parts: the sum (scipy for both parts).
    p_a, q_a = rnp.softmax(P["a"].astype(float)), rnp.softmax(Q["a"].astype(float))
    m1, s1, m2, s2 = P["b"][0], np.exp(P["b"][1]), Q["b"][0], np.exp(Q["b"][1])
    kl_b = np.log(s2 / s1) + (s1 ** 2 + (m1 - m2) ** 2) / (2 * s2 ** 2) - 0.5
    np.testing.assert_allclose(test.test(("kl_divergence", [P, Q])), stats.entropy(p_a, q_a, axis=-1) + kl_b.sum(-1),
                               rtol=1e-4)


def test_joint_samples(backend):
    test = _joint(backend, max_likelihood=bool, values=JOINT_VALUES)
    mode = test.test(("sample_deterministic", P))
    np.testing.assert_array_equal(mode["a"], [0, 2])
    np.testing.assert_array_equal(mode["b"], P["b"][0])
    drawn = test.test(("draw", [P, True]))
    np.testing.assert_array_equal(drawn["a"], mode["a"])
    action, log_prob = test.test(("sample_and_log_prob", [P, False]))
    np.testing.assert_allclose(log_prob, test.test(("log_prob", [P, action])), rtol=1e-5)
    # Stochastic samples: each part follows its own distribution.
    rows = {"a": np.repeat(P["a"][1:], N, 0), "b": (np.repeat(P["b"][0][1:], N, 0), np.repeat(P["b"][1][1:], N, 0))}
    samples = test.test(("sample_stochastic", rows))
    counts = np.bincount(samples["a"], minlength=3)
    assert stats.chisquare(counts, N * rnp.softmax(P["a"][1].astype(float))).pvalue > 1e-3
    np.testing.assert_allclose(samples["b"].mean(0), P["b"][0][1], atol=5 * np.exp(0.4) / math.sqrt(N))
    np.testing.assert_allclose(samples["b"].std(0), np.exp(P["b"][1][1]), rtol=0.03)


def test_joint_over_a_tuple_with_time_rank(backend):
    # Auto-keys of a Tuple; a time rank stays in the results: [B, T].
    dist = JointCumulativeDistribution({"/_T0_": "categorical", "/_T1_": "multivariate-normal"})
    params = Tuple(FloatBox(shape=(2,)), Tuple(FloatBox(shape=(2,)), FloatBox(shape=(2,))), add_batch_rank=True,
                   add_time_rank=True)
    values = Tuple(IntBox(2), FloatBox(shape=(2,)), add_batch_rank=True, add_time_rank=True)
    test = ComponentTest(dist, input_spaces=dict(parameters=params, values=values), backend=backend)
    logits = np.zeros((1, 2, 2), F32)
    mean, log_std = np.zeros((1, 2, 2), F32), np.zeros((1, 2, 2), F32)
    x = np.zeros((1, 2, 2), F32)
    log_prob = test.test(("log_prob", [(logits, (mean, log_std)), (np.array([[0, 1]]), x)]))
    np.testing.assert_allclose(log_prob, np.full((1, 2), math.log(0.5) + 2 * LOG_N01_AT_MEAN), rtol=1e-6)


@pytest.mark.parametrize("spaces, message", [
    (dict(parameters=FloatBox(shape=(3,), add_batch_rank=True)), "container"),
    (dict(parameters=Dict(a=FloatBox(shape=(3,)), add_batch_rank=True)), "key '/b'"),
    (dict(parameters=JOINT_PARAMS, values=Dict(a=IntBox(3), b=FloatBox(shape=(5,)), add_batch_rank=True)),
     "values"),
])
def test_joint_bad_spaces(backend, spaces, message):
    dist = JointCumulativeDistribution({"a": "categorical", "b": "normal"})
    with pytest.raises(RLGraphSpaceError, match=message):
        ComponentTest(dist, input_spaces=spaces, backend=backend)


def test_joint_specs():
    for name in ("joint-cumulative", "jointcumulativedistribution", "JointCumulativeDistribution"):
        dist = Component.from_spec({"type": name, "distribution_specs": {"a": {"type": "beta"}}})
        assert isinstance(dist, JointCumulativeDistribution)
        assert dist.flattened_sub_distributions["/a"].scope == "sub-distribution-0"
    with pytest.raises(RLGraphSpecError):
        JointCumulativeDistribution({})
    with pytest.raises(RLGraphSpecError):
        JointCumulativeDistribution({"a": "nonsense-distribution"})


# --- MixtureDistribution ---------------------------------------------------------------------------
def _mixture_space(n, shape=(1,)):
    return Dict(categorical=FloatBox(shape=(n,)),
                **{f"parameters{k}": Tuple(FloatBox(shape=shape), FloatBox(shape=shape)) for k in range(n)},
                add_batch_rank=True)


def _mixture_params(weights, means, log_stds):
    """Rows of [B] mixtures: weights [B, n], means/log_stds: n arrays [B, ...]."""
    params = {"categorical": np.log(np.asarray(weights, F32))}
    for k, (mean, log_std) in enumerate(zip(means, log_stds)):
        params[f"parameters{k}"] = (np.asarray(mean, F32), np.asarray(log_std, F32))
    return params


def test_mixture_log_prob_and_mean_worked(backend):
    test = ComponentTest(MixtureDistribution("normal", num_experts=2),
                         input_spaces=dict(parameters=_mixture_space(2),
                                           values=FloatBox(shape=(1,), add_batch_rank=True)),
                         backend=backend)
    params = _mixture_params([[0.25, 0.75]], [[[-2.0]], [[2.0]]], [[[0.0]], [[0.0]]])
    # At x = 0 both experts have density N(2; 0, 1), so p(0) = N(2; 0, 1): log = -2 - 0.5 log(2 pi).
    np.testing.assert_allclose(test.test(("log_prob", [params, np.zeros((1, 1), F32)])), [-2.0 + LOG_N01_AT_MEAN],
                               rtol=1e-6)
    # At x = 2: log(0.25 N(4) + 0.75 N(0)) for standard normal densities N.
    expected = math.log(0.25 * stats.norm.pdf(4.0) + 0.75 * stats.norm.pdf(0.0))
    np.testing.assert_allclose(test.test(("log_prob", [params, np.full((1, 1), 2.0, F32)])), [expected], rtol=1e-6)
    np.testing.assert_allclose(test.test(("sample_deterministic", params)), [[0.25 * -2.0 + 0.75 * 2.0]], rtol=1e-6)


def test_mixture_against_numpy_reference(backend):
    # Three bivariate experts of three spec kinds (as the original's test wrote them).
    mixture = MixtureDistribution(MultivariateNormal(), "multi-variate-normal", "multivariate_normal")
    values = FloatBox(shape=(2,), add_batch_rank=True)
    test = ComponentTest(mixture, input_spaces=dict(parameters=_mixture_space(3, (2,)), values=values),
                         backend=backend)
    rng = np.random.RandomState(0)
    params = {"categorical": rng.randn(4, 3).astype(F32)}
    for k in range(3):
        params[f"parameters{k}"] = (rng.randn(4, 2).astype(F32), (0.3 * rng.randn(4, 2)).astype(F32))
    x = rng.randn(4, 2).astype(F32)
    expert = np.stack([rnp.sum_event(rnp.normal_log_prob(*params[f"parameters{k}"], x)) for k in range(3)], -1)
    np.testing.assert_allclose(test.test(("log_prob", [params, x])),
                               rnp.mixture_log_prob(params["categorical"], expert), rtol=1e-5)
    means = [params[f"parameters{k}"][0] for k in range(3)]
    np.testing.assert_allclose(test.test(("sample_deterministic", params)),
                               rnp.mixture_mean(params["categorical"], means), rtol=1e-5, atol=1e-6)
    entropies = np.stack([rnp.sum_event(rnp.normal_entropy(params[f"parameters{k}"][1])) for k in range(3)], -1)
    np.testing.assert_allclose(test.test(("entropy", params)),
                               rnp.mixture_entropy_upper_bound(params["categorical"], entropies), rtol=1e-5)


def test_mixture_sampling(backend):
    test = ComponentTest(MixtureDistribution("normal", "normal"), input_spaces=dict(parameters=_mixture_space(2)),
                         backend=backend, seed=3)
    w, mu, sigma = np.array([0.3, 0.7]), np.array([-10.0, 10.0]), np.array([1.0, 2.0])
    params = _mixture_params(np.tile(w, (N, 1)), [np.full((N, 1), m) for m in mu],
                             [np.full((N, 1), math.log(s)) for s in sigma])
    samples = test.test(("sample_stochastic", params))[:, 0].astype(np.float64)
    # The experts are 20 apart: the sign tells which one was drawn.
    assert stats.binomtest(int((samples > 0).sum()), N, 0.7).pvalue > 1e-3
    mean = (w * mu).sum()
    var = (w * (sigma ** 2 + mu ** 2)).sum() - mean ** 2
    np.testing.assert_allclose(samples.mean(), mean, atol=5 * math.sqrt(var / N))
    np.testing.assert_allclose(samples.var(), var, rtol=0.05)
    np.testing.assert_allclose(samples[samples > 0].std(), 2.0, rtol=0.05)
    # Same seed, same samples.
    again = ComponentTest(MixtureDistribution("normal", "normal"), input_spaces=dict(parameters=_mixture_space(2)),
                          backend=backend, seed=3)
    np.testing.assert_array_equal(again.test(("sample_stochastic", params))[:, 0], samples.astype(F32))


def test_mixture_entropy_is_an_upper_bound(backend):
    space = _mixture_space(2)
    test = ComponentTest(MixtureDistribution("normal", num_experts=2),
                         input_spaces=dict(parameters=space, values=FloatBox(shape=(1,), add_batch_rank=True)),
                         backend=backend)
    for gap, exact in ((0.5, False), (40.0, True)):
        params = _mixture_params([[0.4, 0.6]], [[[-gap / 2]], [[gap / 2]]], [[[0.0]], [[0.0]]])
        bound = test.test(("entropy", params))[0]
        h_w = -(0.4 * math.log(0.4) + 0.6 * math.log(0.6))
        np.testing.assert_allclose(bound, h_w + 0.5 - LOG_N01_AT_MEAN, rtol=1e-6)
        # Monte-Carlo estimate of the true entropy -E[log p(x)], x drawn from the mixture.
        rng = np.random.RandomState(1)
        x = np.where(rng.rand(N) < 0.4, -gap / 2, gap / 2) + rng.randn(N)
        log_p = test.test(("log_prob", [{k: (np.repeat(v[0], N, 0), np.repeat(v[1], N, 0)) if isinstance(v, tuple)
                                         else np.repeat(v, N, 0) for k, v in params.items()},
                                        x[:, None].astype(F32)]))
        true_entropy, error = -log_p.mean(), 5 * log_p.std() / math.sqrt(N)
        if exact:  # Experts that do not overlap: the bound is the entropy.
            np.testing.assert_allclose(bound, true_entropy, atol=error)
        else:  # Overlapping experts: too high by H(k | x), at most H(w).
            assert true_entropy + error < bound < true_entropy + h_w


def test_mixture_kl_divergence_has_no_closed_form(backend):
    space = _mixture_space(2)
    with pytest.raises(RLGraphError, match="no closed form"):
        ComponentTest(MixtureDistribution("normal", num_experts=2),
                      input_spaces=dict(parameters=space, other_parameters=space), backend=backend)
    # Switched off, it is not built (the original's form); its argument then names no root argument.
    mixture = MixtureDistribution("normal", num_experts=2, switched_off_apis={"kl_divergence"})
    with pytest.raises(RLGraphError, match="unknown argument"):
        ComponentTest(mixture, input_spaces=dict(parameters=space, other_parameters=space), backend=backend)
    test = ComponentTest(mixture.copy(), input_spaces=dict(parameters=space), backend=backend)
    assert "kl_divergence" not in test.component.api_methods


@pytest.mark.parametrize("spaces, message", [
    (dict(parameters=Dict(categorical=FloatBox(shape=(2,)), parameters0=_pair((1,)), add_batch_rank=True)),
     "keys"),
    (dict(parameters=Dict(categorical=FloatBox(shape=(3,)), parameters0=Tuple(FloatBox(shape=(1,)),
                                                                            FloatBox(shape=(1,))),
                          parameters1=Tuple(FloatBox(shape=(1,)), FloatBox(shape=(1,))), add_batch_rank=True)),
     "one mixture logit per expert"),
    (dict(parameters=_mixture_space(2), values=IntBox(3, add_batch_rank=True)), "floats"),
])
def test_mixture_bad_spaces(backend, spaces, message):
    with pytest.raises(RLGraphSpaceError, match=message):
        ComponentTest(MixtureDistribution("normal", num_experts=2), input_spaces=spaces, backend=backend)


def test_mixture_specs():
    for name in ("mixture", "mixture-distribution", "MixtureDistribution"):
        mixture = Component.from_spec({"type": name, "_args": ["normal", {"type": "normal"}]})
        assert isinstance(mixture, MixtureDistribution) and mixture.num_experts == 2
        assert all(isinstance(d, Normal) for d in mixture.sub_distributions)
    assert MixtureDistribution("normal", num_experts=4).num_experts == 4
    with pytest.raises(RLGraphSpecError, match="num_experts"):
        MixtureDistribution("normal", "beta", num_experts=3)
    with pytest.raises(RLGraphSpecError):
        MixtureDistribution()
    with pytest.raises(RLGraphSpecError):
        MixtureDistribution("normal", num_experts=0)


# --- ContainerLossFunction -------------------------------------------------------------------------
def test_container_loss_dict_weighted_sum(backend):
    loss = ContainerLossFunction({"a": "euclidean-distance-loss", "b": {"type": "categorical-cross-entropy-loss",
                                                                        "weight": 2.0}},
                                 weights=None)
    predictions = Dict(a=FloatBox(shape=(2,)), b=FloatBox(shape=(3,)), add_batch_rank=True)
    labels = Dict(a=FloatBox(shape=(2,)), b=IntBox(3), add_batch_rank=True)
    test = ComponentTest(loss, input_spaces=dict(predictions=predictions, labels=labels), backend=backend)
    pred = {"a": np.array([[3.0, 4.0], [1.0, 1.0]], F32), "b": np.array([[0.0, 0.0, 0.0], [2.0, 0.0, -1.0]], F32)}
    lab = {"a": np.zeros((2, 2), F32), "b": np.array([0, 2])}
    total, per_item = test.test(("loss", [pred, lab]))
    # Row 0 by hand: |(3, 4)| = 5, plus 2 * log 3 (a uniform 3-way cross-entropy).
    np.testing.assert_allclose(per_item[0], 5.0 + 2.0 * math.log(3.0), rtol=1e-6)
    expected = rnp.euclidean_distance(pred["a"], lab["a"]) + 2.0 * rnp.categorical_cross_entropy(pred["b"], lab["b"])
    np.testing.assert_allclose(per_item, expected, rtol=1e-5)
    np.testing.assert_allclose(total, expected.mean(), rtol=1e-5)
    assert [c.scope for c in loss.sub_components.values()] == ["loss-function-0", "loss-function-1"]


def test_container_loss_tuple_with_weights(backend):
    loss = ContainerLossFunction([EuclideanDistanceLoss(), "euclidean-distance-loss"], weights=[0.5, 3.0])
    space = Tuple(FloatBox(shape=(1,)), FloatBox(shape=(1,)), add_batch_rank=True)
    test = ComponentTest(loss, input_spaces=dict(predictions=space, labels=space), backend=backend)
    per_item = test.test(("loss_per_item", [(np.array([[2.0]], F32), np.array([[-1.0]], F32)),
                                            (np.zeros((1, 1), F32), np.zeros((1, 1), F32))]))
    np.testing.assert_allclose(per_item, [0.5 * 2.0 + 3.0 * 1.0], rtol=1e-6)


def test_container_loss_errors(backend):
    with pytest.raises(RLGraphSpecError, match="unknown key"):
        ContainerLossFunction({"a": "euclidean-distance-loss"}, weights={"b": 1.0})
    with pytest.raises(RLGraphSpecError):
        ContainerLossFunction("euclidean-distance-loss")
    with pytest.raises(RLGraphSpecError, match="number"):
        ContainerLossFunction({"a": {"type": "euclidean-distance-loss", "weight": "heavy"}})
    loss = ContainerLossFunction({"a": "euclidean-distance-loss", "b": "euclidean-distance-loss"})
    space = Dict(a=FloatBox(shape=(1,)), add_batch_rank=True)
    with pytest.raises(RLGraphSpaceError, match="item per loss"):
        ComponentTest(loss, input_spaces=dict(predictions=space, labels=space), backend=backend)
    assert Component.from_spec({"type": "container-loss", "loss_functions_spec": ["euclidean-distance-loss"]})
