"""DQNLossFunction and IMPALALossFunction on both backends: hand-worked numbers and numpy references."""
import numpy as np
import pytest

from rlgraph.backend_system import backend_scope
from rlgraph.components.loss_functions.dqn_loss_function import DQNLossFunction
from rlgraph.components.loss_functions.impala_loss_function import IMPALALossFunction
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

# --- DQN ------------------------------------------------------------------------------------------------------------

Q_SPACE = FloatBox(shape=(3,), add_batch_rank=True)
DQN_SPACES = dict(q_values_s=Q_SPACE, actions=IntBox(3, add_batch_rank=True), rewards=FloatBox(add_batch_rank=True),
                  terminals=BoolBox(add_batch_rank=True), qt_values_sp=Q_SPACE, q_values_sp=Q_SPACE)
W_SPACE = FloatBox(add_batch_rank=True)

# A batch of 3 transitions with 3 actions; discount 0.9 and n_step 2 bootstrap with 0.9**2 = 0.81.
Q_S = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 2.0], [0.0, 0.0, 1.0]], np.float32)
ACTIONS = np.array([0, 2, 1])                       # Q(s, a) = [1, 2, 0]
REWARDS = np.array([1.0, -0.5, 2.0], np.float32)
TERMINALS = np.array([False, False, True])
Q_SP = np.array([[0.0, 5.0, 1.0], [3.0, 1.0, 2.0], [1.0, 0.0, 0.0]], np.float32)    # a* = [1, 0, 0]
QT_SP = np.array([[2.0, 1.0, 10.0], [0.5, 4.0, -1.0], [7.0, 7.0, 7.0]], np.float32)  # Qt(s', a*) = [1, 0.5, 7]
WEIGHTS = np.array([0.5, 2.0, 1.0], np.float32)
DQN_ARGS = [Q_S, ACTIONS, REWARDS, TERMINALS, QT_SP, Q_SP]

# Double Q targets: [1 + 0.81 * 1, -0.5 + 0.81 * 0.5, 2 + 0 (terminal)] = [1.81, -0.095, 2.0].
DOUBLE_TD = [0.81, -2.095, 2.0]
# Plain targets use max_a Qt(s', a) = [10, 4, 7]: [9.1, 2.74, 2.0].
PLAIN_TD = [8.1, 0.74, 2.0]


def _dqn_test(backend, importance=False, **kwargs):
    loss_fn = DQNLossFunction(discount=0.9, n_step=2, importance_weights=importance, **kwargs)
    spaces = dict(DQN_SPACES, importance_weights=W_SPACE) if importance else DQN_SPACES
    return ComponentTest(loss_fn, input_spaces=spaces, backend=backend)


def test_dqn_n_step_double_q_by_hand(backend):
    test = _dqn_test(backend, double_q=True)
    np.testing.assert_allclose(test.test(("get_td_error", DQN_ARGS)), DOUBLE_TD, rtol=1e-5)
    total, per_item = test.test(("loss", DQN_ARGS))
    # 0.5 * td**2
    np.testing.assert_allclose(per_item, [0.32805, 2.1945125, 2.0], rtol=1e-5)
    np.testing.assert_allclose(total, (0.32805 + 2.1945125 + 2.0) / 3, rtol=1e-5)
    np.testing.assert_allclose(test.test(("loss_per_item", DQN_ARGS)), per_item, rtol=1e-6)
    total_2, per_item_2, td = test.test(("loss_and_td_error", DQN_ARGS))
    np.testing.assert_allclose(td, DOUBLE_TD, rtol=1e-5)
    np.testing.assert_allclose(per_item_2, per_item, rtol=1e-6)
    np.testing.assert_allclose(total_2, total, rtol=1e-6)


def test_dqn_plain_max_target_and_numpy_reference(backend):
    test = _dqn_test(backend)
    np.testing.assert_allclose(test.test(("get_td_error", DQN_ARGS)), PLAIN_TD, rtol=1e-5)
    expected, _ = rnp.dqn_loss_per_item(Q_S, ACTIONS, REWARDS, TERMINALS, QT_SP, discount=0.9, n_step=2)
    np.testing.assert_allclose(test.test(("loss", DQN_ARGS))[1], expected, rtol=1e-5)


def test_dqn_huber_vs_squared(backend):
    test = _dqn_test(backend, double_q=True, huber_loss=True)
    # |0.81| <= 1 stays quadratic (0.32805); 2.095 - 0.5 = 1.595; 2.0 - 0.5 = 1.5.
    np.testing.assert_allclose(test.test(("loss_per_item", DQN_ARGS)), [0.32805, 1.595, 1.5], rtol=1e-5)
    test = _dqn_test(backend, double_q=True, huber_loss=True, huber_delta=3.0)
    np.testing.assert_allclose(test.test(("loss_per_item", DQN_ARGS)), [0.32805, 2.1945125, 2.0], rtol=1e-5)


def test_dqn_importance_weights(backend):
    test = _dqn_test(backend, importance=True, double_q=True, huber_loss=True)
    total, per_item = test.test(("loss", DQN_ARGS + [WEIGHTS]))
    np.testing.assert_allclose(per_item, [0.164025, 3.19, 1.5], rtol=1e-5)
    np.testing.assert_allclose(total, 4.854025 / 3, rtol=1e-5)
    expected, _ = rnp.dqn_loss_per_item(Q_S, ACTIONS, REWARDS, TERMINALS, QT_SP, 0.9, q_t=Q_SP, n_step=2,
                                        huber_delta=1.0, weights=WEIGHTS)
    np.testing.assert_allclose(per_item, expected, rtol=1e-5)


def test_dqn_terminals_cut_bootstrapping(backend):
    test = _dqn_test(backend)
    args = [Q_S, ACTIONS, REWARDS, np.array([True, True, True]), QT_SP * 100.0, Q_SP]
    # td = r - Q(s, a) = [1 - 1, -0.5 - 2, 2 - 0], whatever Qt(s') holds.
    np.testing.assert_allclose(test.test(("get_td_error", args)), [0.0, -2.5, 2.0], rtol=1e-6)


def test_dqn_no_gradient_into_target(backend):
    loss_fn = DQNLossFunction(discount=0.9, n_step=2, double_q=True)
    with backend_scope(backend):
        if backend == "tf":
            import tensorflow as tf
            q_s, qt_sp, q_sp = (tf.Variable(x) for x in (Q_S, QT_SP, Q_SP))
            with tf.GradientTape(persistent=True) as tape:
                total, _ = loss_fn.loss(q_s, tf.constant(ACTIONS), tf.constant(REWARDS), tf.constant(TERMINALS),
                                        qt_sp, q_sp)
            grads = [tape.gradient(total, v) for v in (q_s, qt_sp, q_sp)]
            grads[0] = grads[0].numpy()
        else:
            import torch
            q_s, qt_sp, q_sp = (torch.tensor(x, requires_grad=True) for x in (Q_S, QT_SP, Q_SP))
            total, _ = loss_fn.loss(q_s, torch.tensor(ACTIONS), torch.tensor(REWARDS), torch.tensor(TERMINALS),
                                    qt_sp, q_sp)
            total.backward()
            grads = [q_s.grad.numpy(), qt_sp.grad, q_sp.grad]
    assert grads[1] is None and grads[2] is None
    # d/dQ(s, a) of mean(0.5 * td**2) = -td / B at the taken actions only.
    expected = np.zeros((3, 3), np.float32)
    expected[np.arange(3), ACTIONS] = -np.array(DOUBLE_TD) / 3
    np.testing.assert_allclose(grads[0], expected, rtol=1e-5, atol=1e-7)


def test_dqn_errors(backend):
    with pytest.raises(RLGraphSpaceError, match="importance_weights"):
        ComponentTest(DQNLossFunction(importance_weights=True), input_spaces=DQN_SPACES, backend=backend)
    with pytest.raises(RLGraphSpaceError, match="q_values_sp"):
        spaces = {k: v for k, v in DQN_SPACES.items() if k != "q_values_sp"}
        ComponentTest(DQNLossFunction(double_q=True), input_spaces=spaces, backend=backend)
    with pytest.raises(RLGraphSpaceError, match="importance_weights=False"):
        ComponentTest(DQNLossFunction(), input_spaces=dict(DQN_SPACES, importance_weights=W_SPACE), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="container action spaces"):
        actions = Dict(a=IntBox(3), b=IntBox(3), add_batch_rank=True)
        ComponentTest(DQNLossFunction(), input_spaces=dict(DQN_SPACES, actions=actions), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="Q-values"):
        ComponentTest(DQNLossFunction(), input_spaces=dict(DQN_SPACES, actions=IntBox(4, add_batch_rank=True)),
                      backend=backend)
    for bad in (dict(n_step=0), dict(huber_delta=0.0), dict(double_q="yes"), dict(discount=1.5)):
        with pytest.raises(RLGraphSpecError):
            DQNLossFunction(**bad)


# --- IMPALA ---------------------------------------------------------------------------------------------------------

SEQ = dict(add_batch_rank=True, add_time_rank=True)
IMPALA_SPACES = dict(logits_actions_pi=FloatBox(shape=(3,), **SEQ), action_probs_mu=FloatBox(shape=(3,), **SEQ),
                     values=FloatBox(**SEQ), actions=IntBox(3, **SEQ), rewards=FloatBox(**SEQ),
                     terminals=BoolBox(**SEQ), bootstrapped_values=FloatBox(add_batch_rank=True))


def _impala_batch(batch=2, time=5, seed=3):
    rng = np.random.RandomState(seed)
    logits = rng.normal(size=(batch, time, 3)).astype(np.float32)
    mu = rnp.softmax(rng.normal(size=(batch, time, 3))).astype(np.float32)
    values = rng.normal(size=(batch, time)).astype(np.float32)
    actions = rng.randint(0, 3, size=(batch, time))
    rewards = (3.0 * rng.normal(size=(batch, time))).astype(np.float32)  # Large enough for clipping to matter.
    terminals = np.zeros((batch, time), bool)
    terminals[0, 2] = True
    bootstrap = rng.normal(size=(batch,)).astype(np.float32)
    return [logits, mu, values, actions, rewards, terminals, bootstrap]


@pytest.mark.parametrize("clipping", ["clamp_one", "soft_asymmetric", None])
def test_impala_loss_matches_numpy_vtrace(backend, clipping):
    args = _impala_batch()
    loss_fn = IMPALALossFunction(discount=0.9, reward_clipping=clipping, weight_entropy=0.1)
    test = ComponentTest(loss_fn, input_spaces=IMPALA_SPACES, backend=backend)
    total, per_item = test.test(("loss", args))
    expected = rnp.impala_loss_per_item(*[a.astype(np.float64) if a.dtype == np.float32 else a for a in args],
                                        discount=0.9, reward_clipping=clipping, weight_entropy=0.1)
    assert per_item.shape == (2,)
    np.testing.assert_allclose(per_item, expected, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(total, expected.mean(), rtol=1e-4, atol=1e-5)


def test_impala_numpy_reference_by_hand():
    # One row of two steps, pi = mu (rho = 1), no clipping needed, discount 0.5, V = 0, bootstrap 4:
    # vs_1 = 1 + 0.5 * 4 = 3, vs_0 = 1 + 0.5 * 3 = 2.5; pg_adv = vs; log pi(a) = log(1/2).
    logits = np.zeros((1, 2, 2))
    out = rnp.impala_loss_per_item(logits, np.full((1, 2, 2), 0.5), np.zeros((1, 2)), np.zeros((1, 2), int),
                                   np.ones((1, 2)), np.zeros((1, 2), bool), np.array([4.0]), discount=0.5,
                                   weight_entropy=1.0)
    expected = np.log(2.0) * (2.5 + 3.0) + 0.5 * 0.5 * (2.5 ** 2 + 3.0 ** 2) - 2 * np.log(2.0)
    np.testing.assert_allclose(out, [expected])


def test_soft_asymmetric_clipping_gives_the_published_numbers():
    """IMPALA's DMLab clipping (Espeholt et al. 2018): squeezed = tanh(r / 5), clipped = 5 * squeezed,
    times 0.3 for r < 0. By hand: 5 * tanh(0.4) = 1.8997, -5 * 0.3 * tanh(0.4) = -0.5699,
    5 * tanh(0.1) = 0.4983, 5 * tanh(0.6) = 2.6852; bounded by (-1.5, 5)."""
    clipped = rnp.clip_rewards(np.array([2.0, -2.0, 0.5, 3.0, 0.0, 1e6, -1e6]), "soft_asymmetric")
    np.testing.assert_allclose(clipped, [1.8997448, -0.5699234, 0.4983400, 2.6852478, 0.0, 5.0, -1.5], rtol=1e-6)


@pytest.mark.parametrize("reward, expected", [(2.0, 1.8997448), (-2.0, -0.5699234)])
def test_impala_loss_clips_soft_asymmetric_as_published(backend, reward, expected):
    """One step, pi = mu, V = 0, terminal (no bootstrap): vs = pg_adv = clipped r, so the loss is
    -log(1/3) * c + 0.5 * 0.5 * c^2 (weight_baseline 0.5, entropy weight 0) with c the published
    clipped reward."""
    loss_fn = IMPALALossFunction(discount=0.9, reward_clipping="soft_asymmetric", weight_entropy=0.0)
    test = ComponentTest(loss_fn, input_spaces=IMPALA_SPACES, backend=backend)
    f = np.float32
    args = [np.zeros((1, 1, 3), f), np.full((1, 1, 3), 1.0 / 3.0, f), np.zeros((1, 1), f), np.zeros((1, 1), np.int32),
            np.full((1, 1), reward, f), np.ones((1, 1), bool), np.zeros((1,), f)]
    _, per_item = test.test(("loss", args))
    np.testing.assert_allclose(per_item, [np.log(3.0) * expected + 0.25 * expected ** 2], rtol=1e-5)


def test_impala_gradients_reach_logits_and_values_only(backend):
    args = _impala_batch(seed=5)
    loss_fn = IMPALALossFunction(discount=0.9, weight_baseline=0.5)
    with backend_scope(backend):
        if backend == "tf":
            import tensorflow as tf
            tensors = [tf.Variable(a) if a.dtype == np.float32 else tf.constant(a) for a in args]
            with tf.GradientTape(persistent=True) as tape:
                total, _ = loss_fn.loss(*tensors)
            grads = [tape.gradient(total, tensors[i]) for i in (0, 1, 2, 6)]
            grads = [None if g is None else g.numpy() for g in grads]
        else:
            import torch
            tensors = [torch.tensor(a, requires_grad=a.dtype == np.float32) for a in args]
            total, _ = loss_fn.loss(*tensors)
            total.backward()
            grads = [tensors[i].grad for i in (0, 1, 2, 6)]
            grads = [None if g is None else g.numpy() for g in grads]
    logits_grad, mu_grad, values_grad, bootstrap_grad = grads
    assert mu_grad is None and bootstrap_grad is None
    assert np.abs(logits_grad).sum() > 0
    # dL/dV_t = -weight_baseline * (vs_t - V_t) / B, with vs from the numpy V-trace.
    log_pi_a = np.take_along_axis(rnp.log_softmax(args[0]), args[3][..., None], -1)[..., 0]
    log_mu_a = np.log(np.take_along_axis(args[1], args[3][..., None], -1)[..., 0])
    vs, _ = rnp.vtrace((log_pi_a - log_mu_a).T, (0.9 * (1.0 - args[5])).T, rnp.clip_rewards(args[4], "clamp_one").T,
                       args[2].T, args[6])
    np.testing.assert_allclose(values_grad, -0.5 * (vs.T - args[2]) / 2, rtol=1e-4, atol=1e-6)


def test_impala_errors(backend):
    with pytest.raises(RLGraphSpecError, match="reward_clipping"):
        IMPALALossFunction(reward_clipping="clip_all")
    with pytest.raises(RLGraphSpecError, match="weight_entropy"):
        IMPALALossFunction(weight_entropy=-1.0)
    with pytest.raises(RLGraphSpaceError, match="batch-major"):
        spaces = dict(IMPALA_SPACES, rewards=FloatBox(add_batch_rank=True, add_time_rank=True, time_major=True))
        ComponentTest(IMPALALossFunction(), input_spaces=spaces, backend=backend)
    with pytest.raises(RLGraphSpaceError, match="nested like the actions"):
        actions = Dict(a=IntBox(3), add_batch_rank=True, add_time_rank=True)
        ComponentTest(IMPALALossFunction(), input_spaces=dict(IMPALA_SPACES, actions=actions), backend=backend)
    with pytest.raises(RLGraphSpaceError, match="categories"):
        spaces = dict(IMPALA_SPACES, actions=IntBox(4, **SEQ))
        ComponentTest(IMPALALossFunction(), input_spaces=spaces, backend=backend)
