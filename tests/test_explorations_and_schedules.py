"""Schedules (time-dependent parameters), epsilon-greedy exploration and action noise."""
import numpy as np
import pytest

from rlgraph.components.common.time_dependent_parameters import (Constant, ExponentialDecay, LinearDecay,
                                                                 PolynomialDecay, TimeDependentParameter)
from rlgraph.components.explorations.epsilon_exploration import EpsilonExploration
from rlgraph.components.explorations.exploration import Exploration
from rlgraph.components.explorations.noise.constant_noise import ConstantNoise
from rlgraph.components.explorations.noise.gaussian_noise import GaussianNoise
from rlgraph.components.explorations.noise.noise import Noise
from rlgraph.components.explorations.noise.ornstein_uhlenbeck_noise import OrnsteinUhlenbeckNoise
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError

T = np.array([-0.5, 0.0, 0.1, 0.2, 0.25, 0.5, 0.75, 1.0, 1.5], dtype=np.float32)

# (spec, expected class, values at T), worked by hand.
SCHEDULES = [
    (0.3, Constant, [0.3] * 9),
    (["constant", 0.7], Constant, [0.7] * 9),
    # 1.0 + (0.05 - 1.0) * t
    (["linear", 1.0, 0.05], LinearDecay, [1.0, 1.0, 0.905, 0.81, 0.7625, 0.525, 0.2875, 0.05, 0.05]),
    # The original RLgraph's bare [from, to]: the same linear decay.
    ([1.0, 0.05], LinearDecay, [1.0, 1.0, 0.905, 0.81, 0.7625, 0.525, 0.2875, 0.05, 0.05]),
    # progress p = (t - 0.2) / 0.4, value 1 - p
    ({"type": "linear-decay", "from": 1.0, "to": 0.0, "start_percentage": 0.2, "stop_percentage": 0.6},
     LinearDecay, [1.0, 1.0, 1.0, 1.0, 0.875, 0.25, 0.0, 0.0, 0.0]),
    # (1 - t) ** 2
    (["polynomial", 1.0, 0.0, 2.0], PolynomialDecay, [1.0, 1.0, 0.81, 0.64, 0.5625, 0.25, 0.0625, 0.0, 0.0]),
    # 0.5 + 1.5 * (1 - t) ** 3
    ({"type": "polynomial-decay", "from": 2.0, "to": 0.5, "power": 3.0}, PolynomialDecay,
     [2.0, 2.0, 1.5935, 1.268, 1.1328125, 0.6875, 0.5234375, 0.5, 0.5]),
    # 0.01 + 0.99 * 0.5 ** (t / 0.1)
    (["exponential", 1.0, 0.01], ExponentialDecay,
     [1.0, 1.0, 0.505, 0.2575, 0.01 + 0.99 * 2 ** -2.5, 0.01 + 0.99 / 32, 0.01 + 0.99 * 2 ** -7.5,
      0.01 + 0.99 / 1024, 0.01 + 0.99 / 1024]),
    # 0.5 ** ((t - 0.5) / 0.5 / 0.25) after t = 0.5
    ({"type": "exponential", "from": 1.0, "to": 0.0, "half_life": 0.25, "start_percentage": 0.5}, ExponentialDecay,
     [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.25, 0.0625, 0.0625]),
]


@pytest.mark.parametrize("spec, cls, expected", SCHEDULES, ids=[str(s[0]) for s in SCHEDULES])
def test_schedule_value_at(spec, cls, expected):
    schedule = TimeDependentParameter.from_spec(spec)
    assert type(schedule) is cls
    np.testing.assert_allclose(schedule.value_at(T), expected, rtol=1e-5, atol=1e-6)
    assert schedule.value_at(0.5) == pytest.approx(expected[5], rel=1e-5)


@pytest.mark.parametrize("index", [2, 3, 5, 7])
def test_schedule_get_matches_value_at(backend, index):
    spec, _, expected = SCHEDULES[index]
    schedule = TimeDependentParameter.from_spec(spec)
    test = ComponentTest(schedule, input_spaces=dict(time_percentage=FloatBox(add_batch_rank=True)), backend=backend)
    out = test.test(("get", T))
    assert out.dtype == np.float32 and out.shape == T.shape
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(out, schedule.value_at(T), rtol=1e-6)


def test_schedule_get_scalar(backend):
    schedule = Constant(value=0.25)
    test = ComponentTest(schedule, input_spaces=dict(time_percentage=float), backend=backend)
    assert float(test.test(("get", 0.6))) == 0.25
    schedule = ExponentialDecay(from_=1.0, to_=0.0, half_life=0.5)
    test = ComponentTest(schedule, input_spaces=dict(time_percentage=float), backend=backend)
    assert float(test.test(("get", 0.5))) == pytest.approx(0.5)


def test_schedule_specs_and_time_steps():
    assert TimeDependentParameter.from_spec({"from": 2.0, "to": 1.0}).value_at(0.5) == 1.5  # no type: linear
    assert type(PolynomialDecay.from_spec({"from": 1.0})) is PolynomialDecay
    same = LinearDecay()
    assert TimeDependentParameter.from_spec(same) is same
    assert TimeDependentParameter.from_spec("exponential").half_life == 0.1
    decay = LinearDecay(from_=1.0, to_=0.0, max_time_steps=200)
    assert decay.value_at_time_step(50) == 0.75
    np.testing.assert_allclose(decay.value_at_time_step([0, 100, 400]), [1.0, 0.5, 0.0])


@pytest.mark.parametrize("spec, text", [
    (["lineer", 1.0, 0.0], "did you mean"),
    ([1.0, 0.0, 0.5], "must start with a type name"),
    ([], "must start with a type name"),
    (["linear", 1.0, 0.0, 0.1, 0.5, 0.7], "too many values"),
    ({"type": "linear", "from": 1.0, "from_": 2.0}, "both given"),
    ({"type": "linear", "form": 1.0}, "did you mean 'from_'"),
    ({"type": "linear", "start_percentage": 0.5, "stop_percentage": 0.5}, "greater than start_percentage"),
    ({"type": "linear", "stop_percentage": 1.5}, "stop_percentage"),
    (["polynomial", 1.0, 0.0, 0.0], "power"),
    ({"type": "exponential", "half_life": -1.0}, "half_life"),
    (["linear", float("nan"), 0.0], "from_"),
    (["linear", "1.0", 0.0], "from_"),
    ({"type": "constant", "value": True}, "value"),
    ({"type": "linear", "max_time_steps": 0}, "max_time_steps"),
])
def test_schedule_spec_errors(spec, text):
    with pytest.raises(RLGraphSpecError, match=text):
        TimeDependentParameter.from_spec(spec)


def test_schedule_misuse_errors(backend):
    with pytest.raises(RLGraphSpecError, match="max_time_steps"):
        LinearDecay().value_at_time_step(10)
    with pytest.raises(RLGraphSpaceError, match="time_percentage"):
        ComponentTest(LinearDecay(), input_spaces=dict(time_percentage=FloatBox(shape=(2,))), backend=backend)


# --- Epsilon exploration ---------------------------------------------------------------------------
def test_epsilon_exploration_fraction(backend):
    explore = EpsilonExploration(decay_spec=["linear", 1.0, 0.0])
    test = ComponentTest(explore, input_spaces=dict(sample=IntBox(3, add_batch_rank=True), time_percentage=float),
                         backend=backend)
    sample = np.zeros(20000, dtype=np.int32)
    for t, epsilon in [(0.0, 1.0), (0.25, 0.75), (0.5, 0.5), (0.9, 0.1), (1.0, 0.0)]:
        assert float(test.test(("get_epsilon", t))) == pytest.approx(epsilon)
        decisions = test.test(("do_explore", [sample, t]))
        assert decisions.dtype == bool and decisions.shape == (20000,)
        assert decisions.mean() == pytest.approx(epsilon, abs=0.015)


def test_epsilon_exploration_per_item_time(backend):
    explore = EpsilonExploration(decay_spec=["linear", 1.0, 0.0])
    test = ComponentTest(explore, input_spaces=dict(sample=IntBox(3, add_batch_rank=True),
                                                    time_percentage=FloatBox(add_batch_rank=True)), backend=backend)
    t = np.repeat(np.array([0.0, 0.8], np.float32), 10000)  # epsilon 1.0, then 0.2
    decisions = test.test(("do_explore", [np.zeros(20000, np.int32), t]))
    assert decisions[:10000].all()
    assert decisions[10000:].mean() == pytest.approx(0.2, abs=0.02)


def test_exploration_replaces_discrete_actions(backend):
    exploration = Exploration(epsilon_spec=dict(decay_spec=["linear", 1.0, 0.0]))
    test = ComponentTest(exploration, input_spaces=dict(actions=IntBox(10, add_batch_rank=True), time_percentage=float,
                                                        use_exploration=bool), backend=backend)
    actions = np.full(20000, 3, dtype=np.int32)
    for t in (0.0, 0.4, 1.0):
        out = test.test(("get_action", [actions, t, True]))
        assert out.dtype == np.int32 and out.shape == (20000,)
        # Items explore with prob epsilon = 1 - t; a random action differs from 3 with prob 0.9.
        assert (out != 3).mean() == pytest.approx((1.0 - t) * 0.9, abs=0.015)
    counts = np.bincount(test.test(("get_action", [actions, 0.0, True])), minlength=10)
    np.testing.assert_allclose(counts / 20000, 0.1, atol=0.01)
    np.testing.assert_array_equal(test.test(("get_action", [actions, 0.0, False])), actions)


def test_exploration_container_discrete_actions(backend):
    space = Dict(a=IntBox(3), b=IntBox(low=[0, 5], high=[2, 10]), add_batch_rank=True)
    exploration = Exploration(epsilon_spec=dict(decay_spec=0.5))
    test = ComponentTest(exploration, input_spaces=dict(actions=space, time_percentage=float), backend=backend)
    n = 20000
    actions = dict(a=np.zeros(n, np.int32), b=np.tile(np.array([[0, 5]], np.int32), (n, 1)))
    out = test.test(("get_action", [actions, 0.3]))
    assert out["a"].shape == (n,) and out["b"].shape == (n, 2)
    assert out["a"].min() >= 0 and out["a"].max() <= 2
    assert set(np.unique(out["b"][:, 0])) == {0, 1} and set(np.unique(out["b"][:, 1])) == {5, 6, 7, 8, 9}
    a_changed, b_changed = out["a"] != 0, (out["b"] != [0, 5]).any(axis=1)
    # One decision per item shared by all leaves: P(a and b changed) = 0.5 * 2/3 * (1 - 1/2 * 1/5) = 0.3
    # (independent decisions would give 0.15).
    assert a_changed.mean() == pytest.approx(0.5 * 2 / 3, abs=0.015)
    assert (a_changed & b_changed).mean() == pytest.approx(0.3, abs=0.015)


# --- Continuous actions and noise -------------------------------------------------------------------
def test_exploration_gaussian_noise_statistics(backend):
    exploration = Exploration(noise_spec=dict(type="gaussian", mean=0.1, stddev=0.2))
    test = ComponentTest(exploration, input_spaces=dict(actions=FloatBox(shape=(1000,), add_batch_rank=True),
                                                        time_percentage=float), backend=backend)
    actions = np.full((2, 1000), 1.0, np.float32)
    noise = np.stack([test.test(("get_action", [actions, 0.5])) - 1.0 for _ in range(5)])
    assert noise.shape == (5, 2, 1000)
    np.testing.assert_allclose(noise[:, 0], noise[:, 1])  # One draw per call, shared by the batch.
    assert noise.mean() == pytest.approx(0.1, abs=0.01)
    assert noise[:, 0].std() == pytest.approx(0.2, rel=0.05)


def test_exploration_noise_clipping(backend):
    space = FloatBox(low=-0.5, high=0.5, shape=(1000,), add_batch_rank=True)
    exploration = Exploration(noise_spec=dict(type="gaussian", stddev=1.0))
    test = ComponentTest(exploration, input_spaces=dict(actions=space, time_percentage=float,
                                                        use_exploration=bool), backend=backend)
    actions = np.full((1, 1000), 0.4, np.float32)
    out = test.test(("get_action", [actions, 0.0, True]))
    assert out.min() >= -0.5 and out.max() <= 0.5
    # P(0.4 + n >= 0.5) = P(n >= 0.1) = 0.46; P(0.4 + n <= -0.5) = P(n <= -0.9) = 0.184.
    assert (out == 0.5).mean() == pytest.approx(0.46, abs=0.05)
    assert (out == -0.5).mean() == pytest.approx(0.184, abs=0.04)
    np.testing.assert_array_equal(test.test(("get_action", [actions, 0.0, False])), actions)


def test_exploration_constant_noise_bounds_from_action_space(backend):
    # Unbounded actions in, bounds from the build's action space (per element).
    exploration = Exploration(noise_spec=dict(type="constant", value=0.3))
    test = ComponentTest(exploration, input_spaces=dict(actions=FloatBox(shape=(3,), add_batch_rank=True),
                                                        time_percentage=float),
                         action_space=FloatBox(low=[-1.0, -1.0, 0.0], high=[1.0, 0.2, 0.5]), backend=backend)
    out = test.test(("get_action", [np.array([[0.5, 0.1, 0.4], [-0.5, -2.0, 0.0]], np.float32), 0.0]))
    np.testing.assert_allclose(out, [[0.8, 0.2, 0.5], [-0.2, -1.0, 0.3]], rtol=1e-6)


def test_exploration_mixed_container(backend):
    space = Dict(discrete=IntBox(4), continuous=FloatBox(shape=(2,)), add_batch_rank=True)
    exploration = Exploration(epsilon_spec=dict(decay_spec=0.0), noise_spec=dict(type="ou", sigma=0.0, mu=0.25))
    test = ComponentTest(exploration, input_spaces=dict(actions=space, time_percentage=float), backend=backend)
    actions = dict(discrete=np.array([1, 2, 3], np.int32), continuous=np.zeros((3, 2), np.float32))
    out = test.test(("get_action", [actions, 0.5]))
    np.testing.assert_array_equal(out["discrete"], [1, 2, 3])  # epsilon 0
    np.testing.assert_allclose(out["continuous"], 0.25)  # sigma 0: the OU state stays at mu


def test_ornstein_uhlenbeck_statistics_and_reset(backend):
    sigma, mu, theta = 0.3, 0.5, 0.15
    noise = OrnsteinUhlenbeckNoise(sigma=sigma, mu=mu, theta=theta, action_space=FloatBox(shape=(1000,)))
    test = ComponentTest(noise, input_spaces={}, backend=backend)
    xs = np.stack([test.test("get_noise") for _ in range(150)])  # [time, dims]
    # The recurrence: eps_t = (x_{t+1} - x_t - theta (mu - x_t)) / sigma must be i.i.d. N(0, 1).
    eps = (xs[1:] - xs[:-1] - theta * (mu - xs[:-1])) / sigma
    assert eps.mean() == pytest.approx(0.0, abs=0.01) and eps.std() == pytest.approx(1.0, rel=0.02)
    assert np.corrcoef(eps[1:].ravel(), eps[:-1].ravel())[0, 1] == pytest.approx(0.0, abs=0.02)
    stationary = xs[50:]  # (1 - theta)**100 of the start remains: nothing.
    var = sigma ** 2 / (1.0 - (1.0 - theta) ** 2)  # AR(1): 0.09 / 0.2775 = 0.3243
    assert stationary.mean() == pytest.approx(mu, abs=0.03)
    assert stationary.var() == pytest.approx(var, rel=0.06)
    lag1 = np.corrcoef(stationary[1:].ravel() - mu, stationary[:-1].ravel() - mu)[0, 1]
    assert lag1 == pytest.approx(1.0 - theta, abs=0.02)
    test.test("reset")
    np.testing.assert_array_equal(test.read_variable_values(noise.ou_state), np.full(1000, mu, np.float32))


def test_noise_from_spec_and_standalone(backend):
    assert type(Noise.from_spec("ornstein-uhlenbeck")) is OrnsteinUhlenbeckNoise
    assert type(Noise.from_spec({"type": "ou", "sigma": 0.1})) is OrnsteinUhlenbeckNoise
    assert type(Noise.from_spec({"type": "gaussian"})) is GaussianNoise
    noise = ConstantNoise(value=-1.5)
    # The action space from the build; the container's single FloatBox is the one that gets noise.
    test = ComponentTest(noise, input_spaces={}, action_space=Dict(a=IntBox(2), b=FloatBox(shape=(2,))),
                         backend=backend)
    np.testing.assert_array_equal(test.test("get_noise"), [-1.5, -1.5])


@pytest.mark.parametrize("spec, text", [
    ({"type": "gaussian", "stddev": -1.0}, "stddev"),
    ({"type": "ou", "theta": 1.5}, "theta"),
    ({"type": "ou", "sigma": float("inf")}, "sigma"),
    ({"type": "gausian"}, "did you mean"),
])
def test_noise_spec_errors(spec, text):
    with pytest.raises(RLGraphSpecError, match=text):
        Noise.from_spec(spec)


def test_noise_space_errors(backend):
    with pytest.raises(RLGraphSpaceError, match="exactly one continuous"):
        GaussianNoise(action_space=Dict(a=FloatBox(), b=FloatBox()))
    with pytest.raises(RLGraphSpaceError, match="exactly one continuous"):
        GaussianNoise(action_space=IntBox(3))
    with pytest.raises(RLGraphError, match="action_space"):  # No action space anywhere: the build is stuck.
        ComponentTest(GaussianNoise(), input_spaces={}, backend=backend)


@pytest.mark.parametrize("kwargs, actions, action_space, text", [
    ({}, IntBox(3), None, "batch rank"),
    ({"noise_spec": {"type": "gaussian"}}, IntBox(3, add_batch_rank=True), None, "no epsilon-greedy"),
    ({"noise_spec": {"type": "gaussian"}}, Dict(a=FloatBox(), b=FloatBox(), add_batch_rank=True), None,
     "exactly one continuous"),
    ({}, IntBox(add_batch_rank=True), None, "bounds"),
    ({}, IntBox(3, add_batch_rank=True), Dict(a=IntBox(3)), "do not match"),
    ({}, IntBox(3, add_batch_rank=True), FloatBox(), "do not match"),
])
def test_exploration_space_errors(kwargs, actions, action_space, text, backend):
    with pytest.raises(RLGraphSpaceError, match=text):
        ComponentTest(Exploration(**kwargs), input_spaces=dict(actions=actions, time_percentage=float),
                      action_space=action_space, backend=backend)


def test_exploration_spec_errors():
    with pytest.raises(RLGraphSpecError, match="epsilon must lie in"):
        Exploration(epsilon_spec=dict(decay_spec=["linear", 2.0, 0.1]))
    with pytest.raises(RLGraphSpecError, match="did you mean"):
        EpsilonExploration(decay_spec=["exponentail", 1.0, 0.1])
    with pytest.raises(RLGraphSpecError):
        Exploration(epsilon_spec=dict(decay=0.1))
    default = Exploration()
    assert default.noise is None and isinstance(default.epsilon_exploration.decay, LinearDecay)
    assert (default.epsilon_exploration.decay.from_, default.epsilon_exploration.decay.to_) == (1.0, 0.1)
    assert Exploration(noise_spec={"type": "ou"}).epsilon_exploration is None
