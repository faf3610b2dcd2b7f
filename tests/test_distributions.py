"""Distribution components against scipy closed forms and sampling statistics, on both backends."""
import numpy as np
import pytest
from scipy import integrate, stats

from rlgraph.backend_system import backend_scope
from rlgraph.components.distributions.bernoulli import Bernoulli
from rlgraph.components.distributions.beta import Beta
from rlgraph.components.distributions.categorical import Categorical
from rlgraph.components.distributions.gumbel_softmax import GumbelSoftmax
from rlgraph.components.distributions.multivariate_normal import MultivariateNormal
from rlgraph.components.distributions.normal import Normal
from rlgraph.components.distributions.squashed_normal import SquashedNormal
from rlgraph.spaces import BoolBox, FloatBox, IntBox, Tuple
from rlgraph.tests import ComponentTest
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

N = 20000  # Rows of the sampling-statistics tests.
F32 = np.float32


def _box(shape=(), time=False, dtype=FloatBox):
    return dtype(shape=shape, add_batch_rank=True, add_time_rank=time)


def _pair(shape=()):
    return Tuple(_box(shape), _box(shape))


def _build(dist, backend, parameters, values, seed=10):
    """All API methods: parameters, values, other_parameters and max_likelihood get spaces."""
    return ComponentTest(dist, input_spaces=dict(parameters=parameters, values=values, other_parameters=parameters,
                                                 max_likelihood=bool), backend=backend, seed=seed)


def _repeat(x, n=N):
    return np.repeat(np.asarray(x, F32)[None], n, axis=0)


def _check_mean_var(samples, mean, var, axis=0):
    """Sample mean within 5 standard errors, sample variance within 5%."""
    samples = samples.astype(np.float64)
    np.testing.assert_allclose(samples.mean(axis), mean, atol=5 * np.sqrt(np.max(var) / samples.shape[axis]))
    np.testing.assert_allclose(samples.var(axis), var, rtol=0.05)


# --- Categorical / Gumbel-softmax ----------------------------------------------------------------
LOGITS = np.array([[0.5, -1.0, 2.0], [0.0, 0.0, 0.0], [3.0, 1.0, -2.0], [-0.3, 0.7, 0.1]], F32)
LOGITS_Q = np.array([[0.0, 1.0, 0.0], [1.0, -1.0, 0.5], [2.0, 2.0, -1.0], [0.3, 0.2, 0.1]], F32)


def test_categorical_against_scipy(backend):
    test = _build(Categorical(), backend, _box((3,)), IntBox(3, add_batch_rank=True))
    p, q = rnp.softmax(LOGITS.astype(np.float64)), rnp.softmax(LOGITS_Q.astype(np.float64))
    actions = np.array([2, 0, 1, 1])
    expected = [stats.multinomial(1, p[i]).logpmf(np.eye(3)[actions[i]]) for i in range(4)]
    np.testing.assert_allclose(test.test(("log_prob", [LOGITS, actions])), expected, rtol=1e-5)
    np.testing.assert_allclose(test.test(("entropy", LOGITS)), stats.entropy(p, axis=-1), rtol=1e-5)
    np.testing.assert_allclose(test.test(("kl_divergence", [LOGITS, LOGITS_Q])), stats.entropy(p, q, axis=-1),
                               rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(test.test(("sample_deterministic", LOGITS)), [2, 0, 0, 1])
    np.testing.assert_array_equal(test.test(("draw", [LOGITS, True])), [2, 0, 0, 1])
    action, log_prob = test.test(("sample_and_log_prob", [LOGITS, False]))
    assert action.dtype == np.int32 and action.shape == (4,)
    np.testing.assert_allclose(log_prob, np.log(p[np.arange(4), action]), rtol=1e-5)
    # A -inf logit masks its category: entropy and KL stay finite.
    masked = np.array([[0.0, -np.inf, 0.0]], F32)
    np.testing.assert_allclose(test.test(("entropy", masked)), [np.log(2.0)], rtol=1e-6)
    assert np.isfinite(test.test(("kl_divergence", [masked, LOGITS[:1]]))).all()


def test_categorical_sampling_frequencies(backend):
    test = ComponentTest(Categorical(), input_spaces=dict(parameters=_box((4,)), max_likelihood=bool),
                         backend=backend)
    probs = np.array([0.1, 0.2, 0.3, 0.4])
    samples = test.test(("draw", [_repeat(np.log(probs)), False]))
    assert samples.dtype == np.int32 and samples.shape == (N,)
    counts = np.bincount(samples, minlength=4)
    assert stats.chisquare(counts, N * probs).pvalue > 1e-3


def test_categorical_with_time_rank(backend):
    test = ComponentTest(Categorical(), input_spaces=dict(parameters=_box((3,), time=True),
                                                          values=_box(time=True, dtype=IntBox)), backend=backend)
    logits = np.stack([LOGITS, LOGITS_Q], axis=1)  # [B=4, T=2, 3]
    actions = np.array([[0, 1], [2, 0], [1, 1], [0, 2]])
    log_p = np.log(rnp.softmax(logits.astype(np.float64)))
    expected = np.take_along_axis(log_p, actions[..., None], axis=-1)[..., 0]
    np.testing.assert_allclose(test.test(("log_prob", [logits, actions])), expected, rtol=1e-5)
    assert test.test(("sample_stochastic", logits)).shape == (4, 2)


def test_gumbel_softmax(backend):
    test = _build(GumbelSoftmax(temperature=0.5), backend, _box((3,)), _box((3,)))
    np.testing.assert_array_equal(test.test(("sample_deterministic", LOGITS)), np.eye(3, dtype=F32)[[2, 0, 0, 1]])
    probs = np.array([0.2, 0.5, 0.3])
    samples = test.test(("sample_stochastic", _repeat(np.log(probs))))
    assert samples.shape == (N, 3) and (samples >= 0).all()
    np.testing.assert_allclose(samples.sum(-1), 1.0, rtol=1e-5)
    # argmax of a relaxed sample is the Gumbel-max categorical sample, at any temperature.
    assert stats.chisquare(np.bincount(samples.argmax(-1), minlength=3), N * probs).pvalue > 1e-3
    p = rnp.softmax(LOGITS.astype(np.float64))
    relaxed = np.array([[0.1, 0.2, 0.7], [0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.0, 1.0, 0.0]], F32)
    np.testing.assert_allclose(test.test(("log_prob", [LOGITS, relaxed])), np.log(p[np.arange(4), [2, 0, 1, 1]]),
                               rtol=1e-5)
    np.testing.assert_allclose(test.test(("entropy", LOGITS)), stats.entropy(p, axis=-1), rtol=1e-5)


# --- Normal / MultivariateNormal -------------------------------------------------------------------
MEAN = np.array([[0.0, 1.5], [-2.0, 0.3]], F32)
LOG_STD = np.array([[0.0, -0.5], [0.7, 0.2]], F32)
MEAN_Q = np.array([[0.5, 1.0], [-1.0, 0.0]], F32)
LOG_STD_Q = np.array([[0.3, -0.2], [0.1, 0.4]], F32)
X = np.array([[0.4, 1.2], [-3.0, 2.0]], F32)


def _gauss_kl_by_quadrature(m1, s1, m2, s2):
    p, q = stats.norm(m1, s1), stats.norm(m2, s2)
    return integrate.quad(lambda x: p.pdf(x) * (p.logpdf(x) - q.logpdf(x)), -np.inf, np.inf)[0]


def test_normal_against_scipy(backend):
    test = _build(Normal(), backend, _pair((2,)), _box((2,)))
    ref = stats.norm(MEAN.astype(np.float64), np.exp(LOG_STD.astype(np.float64)))
    np.testing.assert_allclose(test.test(("log_prob", [(MEAN, LOG_STD), X])), ref.logpdf(X), rtol=1e-5)
    np.testing.assert_allclose(test.test(("entropy", [(MEAN, LOG_STD)])), ref.entropy(), rtol=1e-5)
    kl = test.test(("kl_divergence", [(MEAN, LOG_STD), (MEAN_Q, LOG_STD_Q)]))
    assert kl.shape == (2, 2)
    expected = [[_gauss_kl_by_quadrature(MEAN[i, j], np.exp(LOG_STD[i, j]), MEAN_Q[i, j], np.exp(LOG_STD_Q[i, j]))
                 for j in range(2)] for i in range(2)]
    np.testing.assert_allclose(kl, expected, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(test.test(("draw", [(MEAN, LOG_STD), True])), MEAN)
    action, log_prob = test.test(("sample_and_log_prob", [(MEAN, LOG_STD), True]))
    np.testing.assert_allclose(log_prob, ref.logpdf(MEAN), rtol=1e-5)
    samples = test.test(("sample_stochastic", [(_repeat(MEAN[0]), _repeat(LOG_STD[0]))]))
    _check_mean_var(samples, MEAN[0], np.exp(2 * LOG_STD[0]))


def test_multivariate_normal_against_scipy(backend):
    test = _build(MultivariateNormal(), backend, _pair((2,)), _box((2,)))
    std, std_q = np.exp(LOG_STD.astype(np.float64)), np.exp(LOG_STD_Q.astype(np.float64))
    refs = [stats.multivariate_normal(MEAN[i], np.diag(std[i] ** 2)) for i in range(2)]
    np.testing.assert_allclose(test.test(("log_prob", [(MEAN, LOG_STD), X])),
                               [refs[i].logpdf(X[i]) for i in range(2)], rtol=1e-5)
    np.testing.assert_allclose(test.test(("entropy", [(MEAN, LOG_STD)])), [r.entropy() for r in refs], rtol=1e-5)
    # KL(N1 || N2) = 0.5 (tr(S2^-1 S1) + (m2 - m1)^T S2^-1 (m2 - m1) - d + log(det S2 / det S1)).
    expected = [0.5 * (np.sum(std[i] ** 2 / std_q[i] ** 2) + np.sum((MEAN_Q[i] - MEAN[i]) ** 2 / std_q[i] ** 2) -
                       2 + np.log(np.prod(std_q[i] ** 2) / np.prod(std[i] ** 2))) for i in range(2)]
    np.testing.assert_allclose(test.test(("kl_divergence", [(MEAN, LOG_STD), (MEAN_Q, LOG_STD_Q)])), expected,
                               rtol=1e-4)
    action, log_prob = test.test(("sample_and_log_prob", [(MEAN, LOG_STD), False]))
    assert action.shape == (2, 2) and log_prob.shape == (2,)
    np.testing.assert_allclose(log_prob, [refs[i].logpdf(action[i]) for i in range(2)], rtol=1e-4)


# --- Bernoulli -----------------------------------------------------------------------------------
def test_bernoulli_against_scipy(backend):
    test = _build(Bernoulli(), backend, _box((3,)), _box((3,), dtype=BoolBox))
    logits = np.array([[0.0, 2.0, -1.5], [4.0, -0.2, 0.7]], F32)
    logits_q = np.array([[1.0, 0.5, -0.5], [-1.0, 0.3, 2.0]], F32)
    values = np.array([[True, False, True], [True, True, False]])
    p, q = 1 / (1 + np.exp(-logits.astype(np.float64))), 1 / (1 + np.exp(-logits_q.astype(np.float64)))
    np.testing.assert_allclose(test.test(("log_prob", [logits, values])), stats.bernoulli(p).logpmf(values),
                               rtol=1e-5)
    np.testing.assert_allclose(test.test(("entropy", logits)), stats.bernoulli(p).entropy(), rtol=1e-5)
    np.testing.assert_allclose(test.test(("kl_divergence", [logits, logits_q])),
                               stats.entropy(np.stack([p, 1 - p]), np.stack([q, 1 - q]), axis=0), rtol=1e-4)
    np.testing.assert_array_equal(test.test(("sample_deterministic", logits)), logits > 0)
    samples = test.test(("draw", [_repeat(logits[0]), False]))
    assert samples.dtype == np.bool_ and samples.shape == (N, 3)
    _check_mean_var(samples, p[0], p[0] * (1 - p[0]))


# --- Beta ------------------------------------------------------------------------------------------
def test_beta_against_scipy(backend):
    low, high = -2.0, 1.0
    test = _build(Beta(low=low, high=high), backend, _pair((2,)), _box((2,)))
    alpha = np.array([[2.0, 0.7], [5.0, 1.5]], F32)
    beta = np.array([[3.0, 0.9], [1.2, 1.5]], F32)
    values = np.array([[-1.0, 0.5], [0.9, -1.9]], F32)
    ref = stats.beta(alpha.astype(np.float64), beta.astype(np.float64), loc=low, scale=high - low)
    np.testing.assert_allclose(test.test(("log_prob", [(alpha, beta), values])), ref.logpdf(values), rtol=1e-4)
    np.testing.assert_allclose(test.test(("entropy", [(alpha, beta)])), ref.entropy(), rtol=1e-4, atol=1e-5)
    deterministic = test.test(("sample_deterministic", [(alpha, beta)]))
    np.testing.assert_allclose(deterministic, [[low + 3 * (1 / 3), low + 3 * 0.7 / 1.6], [low + 3 * 4 / 4.2, -0.5]],
                               rtol=1e-5)
    # KL(Beta(2, 3) || q) for two q's, against quadrature (the common scaling does not change it).
    alpha_q, beta_q = np.array([[1.5, 2.0]], F32), np.array([[2.5, 1.5]], F32)
    p = stats.beta(2.0, 3.0)
    expected = [integrate.quad(lambda x: p.pdf(x) * (p.logpdf(x) - q.logpdf(x)), 0, 1)[0]
                for q in (stats.beta(1.5, 2.5), stats.beta(2.0, 1.5))]
    out = test.test(("kl_divergence", [(np.full((1, 2), 2.0, F32), np.full((1, 2), 3.0, F32)), (alpha_q, beta_q)]))
    np.testing.assert_allclose(out[0], expected, rtol=1e-4)
    # Values on the bounds give finite log-probs (clipped to 1e-6 inside).
    assert np.isfinite(test.test(("log_prob", [(alpha, beta), np.full((2, 2), high, F32)]))).all()
    samples = test.test(("sample_stochastic", [(_repeat(alpha[0]), _repeat(beta[0]))]))
    assert (samples >= low).all() and (samples <= high).all()
    _check_mean_var(samples, ref.mean()[0], ref.var()[0])


# --- SquashedNormal --------------------------------------------------------------------------------
def _squashed_log_prob_by_change_of_variables(a, mean, std, low, high):
    """log p(a) = log N(u) - log |da/du| at u = squash^-1(a), the derivative by central differences."""
    a, mean, std = (np.asarray(v, np.float64) for v in (a, mean, std))
    squash = lambda u: low + (high - low) * (np.tanh(u) + 1) / 2  # noqa: E731
    u = np.arctanh(2 * (a - low) / (high - low) - 1)
    h = 1e-5
    return stats.norm(mean, std).logpdf(u) - np.log((squash(u + h) - squash(u - h)) / (2 * h))


def test_squashed_normal_log_prob(backend):
    low, high = 0.0, 4.0
    test = _build(SquashedNormal(low=low, high=high), backend, _pair((2,)), _box((2,)))
    values = np.array([[0.5, 3.9], [2.0, 1.0]], F32)
    expected = _squashed_log_prob_by_change_of_variables(values, MEAN, np.exp(LOG_STD), low, high)
    np.testing.assert_allclose(test.test(("log_prob", [(MEAN, LOG_STD), values])), expected, rtol=1e-4)
    # sample_and_log_prob computes from u directly; log_prob(values) goes through atanh: they agree.
    for max_likelihood in (True, False):
        action, log_prob = test.test(("sample_and_log_prob", [(MEAN, LOG_STD), max_likelihood]))
        np.testing.assert_allclose(log_prob, test.test(("log_prob", [(MEAN, LOG_STD), action])), rtol=1e-3)
    np.testing.assert_allclose(test.test(("sample_deterministic", [(MEAN, LOG_STD)])),
                               low + (high - low) * (np.tanh(MEAN) + 1) / 2, rtol=1e-6)
    # The stable log(1 - tanh(u)^2) keeps far-saturated draws finite; bound values are clipped.
    far = (np.array([[30.0, -30.0]], F32), np.zeros((1, 2), F32))
    assert np.isfinite(test.test(("sample_and_log_prob", [far, True]))[1]).all()
    assert np.isfinite(test.test(("log_prob", [far, np.array([[high, low]], F32)]))).all()
    # KL is that of the Gaussians (the squashing is a bijection).
    np.testing.assert_allclose(test.test(("kl_divergence", [(MEAN, LOG_STD), (MEAN_Q, LOG_STD_Q)])),
                               _build(Normal(), backend, _pair((2,)), _box((2,))).test(
                                   ("kl_divergence", [(MEAN, LOG_STD), (MEAN_Q, LOG_STD_Q)])), rtol=1e-6)


def test_squashed_normal_sampling_and_entropy_estimate(backend):
    low, high, mean, std = -1.0, 1.0, 0.3, 0.8
    test = ComponentTest(SquashedNormal(low=low, high=high), input_spaces=dict(parameters=_pair()), backend=backend)
    params = (np.full(N, mean, F32), np.full(N, np.log(std), F32))
    samples = test.test(("sample_stochastic", [params]))
    assert (samples >= low).all() and (samples <= high).all()
    _check_mean_var(np.arctanh(np.clip(samples.astype(np.float64), -1 + 1e-7, 1 - 1e-7)), mean, std ** 2)
    # H(a) = H(u) + E[log(1 - tanh(u)^2)], by quadrature over u.
    u = np.linspace(mean - 10 * std, mean + 10 * std, 20001)
    gauss = stats.norm(mean, std)
    entropy = gauss.entropy() + np.trapezoid(gauss.pdf(u) * np.log1p(-np.tanh(u) ** 2), u)
    estimates = test.test(("entropy", [params]))
    np.testing.assert_allclose(estimates.mean(), entropy, atol=5 * estimates.std() / np.sqrt(N))


# --- Seeds, gradients, errors ----------------------------------------------------------------------
def test_seeded_sampling_is_reproducible(backend):
    def samples(seed):
        test = ComponentTest(Normal(), input_spaces=dict(parameters=_pair((3,))), backend=backend, seed=seed)
        params = (np.zeros((4, 3), F32), np.zeros((4, 3), F32))
        return test.test(("sample_stochastic", [params])), test.test(("sample_stochastic", [params]))

    first, second = samples(7)
    again_first, again_second = samples(7)
    np.testing.assert_array_equal(first, again_first)
    np.testing.assert_array_equal(second, again_second)
    assert not np.array_equal(first, second)
    assert not np.array_equal(first, samples(8)[0])


@pytest.mark.parametrize("dist, params", [
    (Normal, (np.array([0.5, -1.0]), np.array([0.1, 0.2]))),
    (SquashedNormal, (np.array([0.5, -1.0]), np.array([0.1, 0.2]))),
    (Beta, (np.array([2.0, 3.0]), np.array([1.5, 4.0]))),
    (GumbelSoftmax, np.array([0.5, -1.0])),
])
def test_reparameterised_samples_are_differentiable(backend, dist, params):
    dist = dist()
    params = tuple(np.asarray(p, F32) for p in params) if isinstance(params, tuple) else np.asarray(params, F32)
    leaves = list(params) if isinstance(params, tuple) else [params]
    with backend_scope(backend):
        if backend == "tf":
            import tensorflow as tf
            variables = [tf.Variable(p) for p in leaves]
            with tf.GradientTape() as tape:
                sample = dist.sample_stochastic(tuple(variables) if isinstance(params, tuple) else variables[0])
                target = tf.reduce_sum(sample * tf.range(1.0, 1.0 + sample.shape[-1]))
            grads = [g.numpy() for g in tape.gradient(target, variables)]
        else:
            import torch
            tensors = [torch.tensor(p, requires_grad=True) for p in leaves]
            sample = dist.sample_stochastic(tuple(tensors) if isinstance(params, tuple) else tensors[0])
            (sample * torch.arange(1.0, 1.0 + sample.shape[-1])).sum().backward()
            grads = [t.grad.numpy() for t in tensors]
    assert all(np.isfinite(g).all() and np.abs(g).sum() > 0 for g in grads)


@pytest.mark.parametrize("dist, spaces, arg", [
    (Normal, dict(parameters=_box((2,))), "parameters"),  # Not a (mean, log_std) tuple.
    (Normal, dict(parameters=Tuple(_box((2,)), _box((3,)))), "parameters"),
    (MultivariateNormal, dict(parameters=_pair()), "parameters"),  # No d axis.
    (Categorical, dict(parameters=_box()), "parameters"),  # Logits need a category axis.
    (Categorical, dict(parameters=_box((3,), dtype=IntBox)), "parameters"),
    (Categorical, dict(parameters=_box((3,)), values=_box((3,), dtype=IntBox)), "values"),
    (Categorical, dict(parameters=_box((3,)), other_parameters=_box((4,))), "other_parameters"),
    (GumbelSoftmax, dict(parameters=_box((3,)), values=_box((2,))), "values"),
    (Bernoulli, dict(parameters=_box((2,)), values=_box((3,), dtype=BoolBox)), "values"),
    (Beta, dict(parameters=_pair((2,)), values=_box()), "values"),
    (Normal, dict(parameters=_pair(), max_likelihood=BoolBox(add_batch_rank=True)), "max_likelihood"),
])
def test_bad_spaces_fail_at_build(backend, dist, spaces, arg):
    with pytest.raises(RLGraphSpaceError, match=rf"\({arg}\)"):
        ComponentTest(dist(), input_spaces=spaces, backend=backend)


@pytest.mark.parametrize("make", [
    lambda: Beta(low=1.0, high=1.0), lambda: Beta(low="0"), lambda: SquashedNormal(low=0.0, high=-1.0),
    lambda: SquashedNormal(high=float("inf")), lambda: GumbelSoftmax(temperature=0.0),
    lambda: GumbelSoftmax(temperature=True),
])
def test_bad_constructor_arguments(make):
    with pytest.raises(RLGraphSpecError):
        make()


def test_get_distribution_inside_a_graph_function(backend):
    """A bound distribution gives the same numbers as the API methods, inside another graph function."""
    from rlgraph.components import Component
    from rlgraph.components.distributions import Categorical as CategoricalDist
    from rlgraph.utils.decorators import rlgraph_api as api

    class LogProbAndEntropy(Component):
        def __init__(self):
            super().__init__(scope="user")
            self.dist = CategoricalDist()  # Maths only: no sub-component needed (it has no variables).

        @api
        def _graph_fn_stats(self, logits, actions):
            bound = self.dist.get_distribution(logits)
            return bound.log_prob(actions), bound.entropy(), bound.sample(deterministic=True)

    logits = np.array([[0.0, 1.0, 2.0], [3.0, 0.5, -1.0]], dtype=np.float32)
    actions = np.array([2, 1], dtype=np.int32)
    test = ComponentTest(LogProbAndEntropy(), input_spaces=dict(
        logits=FloatBox(shape=(3,), add_batch_rank=True), actions=IntBox(3, add_batch_rank=True)), backend=backend)
    log_p, entropy, mode = test.test(("stats", [logits, actions]))
    log_softmax = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    np.testing.assert_allclose(log_p, log_softmax[[0, 1], actions], rtol=1e-5)
    np.testing.assert_allclose(entropy, -(np.exp(log_softmax) * log_softmax).sum(-1), rtol=1e-5)
    np.testing.assert_array_equal(mode, [2, 0])
