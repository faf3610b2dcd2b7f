"""Helper components (V-trace, GAE, sequence helper, softmax, clipping) against numpy, on both backends."""
import numpy as np
import pytest

from rlgraph.components.helpers.clipping import Clipping
from rlgraph.components.helpers.generalized_advantage_estimation import GeneralizedAdvantageEstimation
from rlgraph.components.helpers.sequence_helper import SequenceHelper
from rlgraph.components.helpers.softmax import SoftMax
from rlgraph.components.helpers.v_trace_function import VTraceFunction
from rlgraph.spaces import BoolBox, Dict, FloatBox, Tuple
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphSpaceError, RLGraphSpecError

SEQ = FloatBox(add_batch_rank=True, add_time_rank=True)
SEQ_TM = FloatBox(add_batch_rank=True, add_time_rank=True, time_major=True)
FLAT = FloatBox(add_batch_rank=True)
FLAGS = BoolBox(add_batch_rank=True)


# --- V-trace -----------------------------------------------------------------------------------
def _v_trace_test(backend, time_major=False, bootstrap_space=FloatBox(add_batch_rank=True), **kwargs):
    seq = SEQ_TM if time_major else SEQ
    return ComponentTest(VTraceFunction(time_major=time_major, **kwargs), input_spaces=dict(
        log_is_weights=seq, discounts=seq, rewards=seq, values=seq, bootstrapped_values=bootstrap_space),
        backend=backend)


def _v_trace_inputs(batch, steps, seed):
    rng = np.random.RandomState(seed)
    log_rhos = rng.uniform(-1.5, 1.5, size=(batch, steps)).astype(np.float32)  # Both clips are active.
    discounts = (0.9 * (rng.uniform(size=(batch, steps)) > 0.2)).astype(np.float32)
    rewards = rng.normal(size=(batch, steps)).astype(np.float32)
    values = rng.normal(size=(batch, steps)).astype(np.float32)
    bootstrap = rng.normal(size=(batch,)).astype(np.float32)
    return log_rhos, discounts, rewards, values, bootstrap


def _paper_recursion(log_rhos, discounts, rewards, values, bootstrap, rho_bar, rho_bar_pg, c_bar):
    """Remark 1 of the paper, one batch item and one step at a time (batch-major, float64)."""
    batch, steps = values.shape
    vs, pg = np.zeros((batch, steps)), np.zeros((batch, steps))
    for b in range(batch):
        v_next_target = v_next = float(bootstrap[b])
        for s in reversed(range(steps)):
            ratio = float(np.exp(log_rhos[b, s]))
            delta = min(rho_bar, ratio) * (rewards[b, s] + discounts[b, s] * v_next - values[b, s])
            vs[b, s] = values[b, s] + delta + discounts[b, s] * min(c_bar, ratio) * (v_next_target - v_next)
            pg[b, s] = min(rho_bar_pg, ratio) * (rewards[b, s] + discounts[b, s] * v_next_target - values[b, s])
            v_next_target, v_next = vs[b, s], float(values[b, s])
    return vs, pg


def _paper_sum_formula(log_rhos, discounts, rewards, values, bootstrap, rho_bar, c_bar):
    """Eq. (1): v_s = V_s + sum_t (prod_{i<t} gamma_i c_i) delta_t, batch-major, float64."""
    rhos = np.exp(log_rhos.astype(np.float64))
    v_tp1 = np.concatenate([values[:, 1:], bootstrap[:, None]], axis=1)
    delta = np.minimum(rho_bar, rhos) * (rewards + discounts * v_tp1 - values)
    gamma_c = discounts * np.minimum(c_bar, rhos)
    steps = values.shape[1]
    vs = values.astype(np.float64).copy()
    for s in range(steps):
        coefficient = np.ones(values.shape[0])
        for t in range(s, steps):
            vs[:, s] += coefficient * delta[:, t]
            coefficient = coefficient * gamma_c[:, t]
    return vs


def test_v_trace_2x5_matches_the_paper_recursion(backend):
    inputs = _v_trace_inputs(2, 5, seed=3)
    test = _v_trace_test(backend)
    vs, pg = test.test(("calc_v_trace_values", list(inputs)))
    assert vs.shape == (2, 5) and pg.shape == (2, 5)
    expected = _paper_recursion(*inputs, rho_bar=1.0, rho_bar_pg=1.0, c_bar=1.0)
    recursive_assert_almost_equal((vs, pg), expected, decimals=5)
    # And the numpy reference (time-major) agrees.
    swapped = [np.swapaxes(x, 0, 1) for x in inputs[:4]]
    ref_vs, ref_pg = rnp.vtrace(*swapped, inputs[4])
    recursive_assert_almost_equal((vs, pg), (ref_vs.T, ref_pg.T), decimals=5)


def test_v_trace_clipping_thresholds_and_c_bar(backend):
    inputs = _v_trace_inputs(3, 6, seed=4)
    test = _v_trace_test(backend, rho_bar=0.8, rho_bar_pg=1.5, c_bar=0.6)
    vs, pg = test.test(("calc_v_trace_values", list(inputs)))
    recursive_assert_almost_equal(vs, _paper_sum_formula(*inputs, rho_bar=0.8, c_bar=0.6), decimals=5)
    swapped = [np.swapaxes(x, 0, 1) for x in inputs[:4]]
    ref_vs, ref_pg = rnp.vtrace(*swapped, inputs[4], clip_rho_threshold=0.8, clip_pg_rho_threshold=1.5,
                                clip_c_threshold=0.6)
    recursive_assert_almost_equal((vs, pg), (ref_vs.T, ref_pg.T), decimals=5)
    # The clips matter on these inputs: c_bar = 1 gives other targets.
    assert not np.allclose(vs, _paper_sum_formula(*inputs, rho_bar=0.8, c_bar=1.0), atol=1e-3)


def test_v_trace_time_major_and_trailing_axis(backend):
    log_rhos, discounts, rewards, values, bootstrap = _v_trace_inputs(2, 4, seed=5)
    ref_vs, ref_pg = rnp.vtrace(log_rhos.T, discounts.T, rewards.T, values.T, bootstrap, clip_c_threshold=None)
    test = _v_trace_test(backend, time_major=True, c_bar=None)
    out = test.test(("calc_v_trace_values", [log_rhos.T, discounts.T, rewards.T, values.T, bootstrap]))
    recursive_assert_almost_equal(out, (ref_vs, ref_pg), decimals=5)
    # [B, T, 1] inputs with a [B, 1] bootstrap keep their trailing axis.
    seq = FloatBox(shape=(1,), add_batch_rank=True, add_time_rank=True)
    test = ComponentTest(VTraceFunction(), input_spaces=dict(
        log_is_weights=seq, discounts=seq, rewards=seq, values=seq,
        bootstrapped_values=FloatBox(shape=(1,), add_batch_rank=True)), backend=backend)
    vs, pg = test.test(("calc_v_trace_values", [x[..., None] for x in (log_rhos, discounts, rewards, values,
                                                                        bootstrap)]))
    ref_vs, ref_pg = rnp.vtrace(log_rhos.T, discounts.T, rewards.T, values.T, bootstrap)
    recursive_assert_almost_equal((vs, pg), (ref_vs.T[..., None], ref_pg.T[..., None]), decimals=5)


def test_v_trace_errors():
    with pytest.raises(RLGraphSpecError, match="c_bar must be a positive number"):
        VTraceFunction(c_bar=0.0)
    with pytest.raises(RLGraphSpecError, match="rho_bar must be a positive number"):
        VTraceFunction(rho_bar="1")
    with pytest.raises(RLGraphSpecError, match="time_major must be a bool"):
        VTraceFunction(time_major=1)
    with pytest.raises(RLGraphSpaceError, match="time-major"):
        _v_trace_test("pytorch", time_major=False, bootstrap_space=FloatBox(add_batch_rank=True)).component \
            .check_input_spaces(dict(values=SEQ_TM))
    with pytest.raises(RLGraphSpaceError, match="bootstrapped_values"):
        _v_trace_test("pytorch", bootstrap_space=FloatBox(shape=(3,), add_batch_rank=True))


# --- Flat batches of fragments: SequenceHelper and GAE -------------------------------------------
# Fragments of 3, 1 and 4 steps: the second ends its episode, the third has a terminal inside and no end flag.
SEQUENCE_INDICES = np.array([False, False, True, True, False, False, False, False])
TERMINALS = np.array([False, False, False, True, False, True, False, False])
FRAGMENTS = [slice(0, 3), slice(3, 4), slice(4, 8)]


def _per_fragment(fn, *arrays):
    return np.concatenate([fn(*(a[f] for a in arrays)) for f in FRAGMENTS])


def test_sequence_lengths_and_decays(backend):
    test = ComponentTest(SequenceHelper(), input_spaces=dict(sequence_indices=FLAGS, decay=float), backend=backend)
    test.test(("calc_sequence_lengths", SEQUENCE_INDICES), expected_outputs=np.array([3, 1, 4]))
    # The batch's last step ends a fragment even when its flag is False.
    test.test(("calc_sequence_lengths", np.array([True, False, False])), expected_outputs=np.array([1, 2]))
    decays = test.test(("calc_sequence_decays", [SEQUENCE_INDICES, 0.5]))
    recursive_assert_almost_equal(decays, [1.0, 0.5, 0.25, 1.0, 1.0, 0.5, 0.25, 0.125])


def test_sequence_reverse_decays_and_bootstrap(backend):
    rng = np.random.RandomState(6)
    rewards = rng.normal(size=8).astype(np.float32)
    values = rng.normal(size=8).astype(np.float32)
    test = ComponentTest(SequenceHelper(), input_spaces=dict(values=FLAT, sequence_indices=FLAGS, decay=float,
                                                             rewards=FLAT, terminals=FLAGS, discount=float),
                         backend=backend)
    # Hand-worked: [1, 2, 3 | 4] with decay 0.5 -> [2.75, 3.5, 3 | 4].
    x = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    test.test(("reverse_apply_decays_to_sequence", [x, np.array([False, False, True, False]), 0.5]),
              expected_outputs=np.array([2.75, 3.5, 3.0, 4.0]), decimals=6)
    out = test.test(("reverse_apply_decays_to_sequence", [rewards, SEQUENCE_INDICES, 0.9]))
    expected = _per_fragment(lambda r: rnp.discounted_returns(r, np.zeros_like(r), 0.9), rewards)
    recursive_assert_almost_equal(out, expected, decimals=5)

    out = test.test(("bootstrap_values", [rewards, values, TERMINALS, SEQUENCE_INDICES, 0.9]))
    expected = _per_fragment(lambda r, v, d: rnp.discounted_returns(r, d, 0.9, bootstrap_value=v[-1]),
                             rewards, values, TERMINALS)
    recursive_assert_almost_equal(out, expected, decimals=5)
    # Hand-worked: the truncated fragment [r=1, r=1], v_last = 10, gamma 0.5 -> [1 + 0.5 * 6, 1 + 0.5 * 10].
    test.test(("bootstrap_values", [np.ones(2, np.float32), np.array([0.0, 10.0], np.float32),
                                    np.zeros(2, bool), np.zeros(2, bool), 0.5]),
              expected_outputs=np.array([4.0, 6.0]), decimals=6)


def _gae_test(backend, **kwargs):
    return ComponentTest(GeneralizedAdvantageEstimation(**kwargs), input_spaces=dict(
        baseline_values=FLAT, rewards=FLAT, terminals=FLAGS, sequence_indices=FLAGS), backend=backend)


@pytest.mark.parametrize("gae_lambda", [0.0, 0.95, 1.0])
def test_gae_matches_numpy_per_fragment(backend, gae_lambda):
    rng = np.random.RandomState(7)
    rewards = rng.normal(size=8).astype(np.float32)
    values = rng.normal(size=8).astype(np.float32)
    test = _gae_test(backend, gae_lambda=gae_lambda, discount=0.9)
    out = test.test(("calc_gae_values", [values, rewards, TERMINALS, SEQUENCE_INDICES]))
    expected = _per_fragment(lambda r, v, d: rnp.gae(r, v, v[-1], d, 0.9, gae_lambda), rewards, values, TERMINALS)
    recursive_assert_almost_equal(out, expected, decimals=5)
    deltas = test.test(("calc_td_errors", [values, rewards, TERMINALS, SEQUENCE_INDICES]))
    expected = _per_fragment(lambda r, v, d: rnp.gae(r, v, v[-1], d, 0.9, 0.0), rewards, values, TERMINALS)
    recursive_assert_almost_equal(deltas, expected, decimals=5)


def test_gae_clips_rewards(backend):
    rewards = np.array([5.0, -3.0, 0.5], np.float32)
    values = np.array([0.2, -0.1, 0.3], np.float32)
    done = np.array([False, False, True])
    test = _gae_test(backend, gae_lambda=0.9, discount=0.99, clip_rewards=1.0)
    out = test.test(("calc_gae_values", [values, rewards, done, done]))
    expected = rnp.gae(np.clip(rewards, -1.0, 1.0), values, 0.0, done, 0.99, 0.9)
    recursive_assert_almost_equal(out, expected, decimals=5)


def test_sequence_and_gae_errors():
    with pytest.raises(RLGraphSpecError, match="gae_lambda must be a number in"):
        GeneralizedAdvantageEstimation(gae_lambda=1.5)
    with pytest.raises(RLGraphSpecError, match="discount must be a number in"):
        GeneralizedAdvantageEstimation(discount=-0.1)
    with pytest.raises(RLGraphSpecError, match="clip_rewards must be a number >= 0"):
        GeneralizedAdvantageEstimation(clip_rewards=-1.0)


# --- SoftMax and Clipping ------------------------------------------------------------------------
def test_softmax_is_stable_for_large_logits(backend):
    logits = np.array([[1000.0, 0.0, -1000.0], [1.0, 2.0, 3.0]], np.float32)
    test = ComponentTest(SoftMax(), input_spaces=dict(logits=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend=backend)
    probs, log_probs = test.test(("get_probabilities_and_log_probs", logits))
    assert np.all(np.isfinite(probs)) and np.all(np.isfinite(log_probs))
    recursive_assert_almost_equal(probs, rnp.softmax(logits), decimals=5)
    recursive_assert_almost_equal(log_probs, rnp.log_softmax(logits), decimals=4)
    assert log_probs[0, 2] == pytest.approx(-2000.0)


def test_softmax_on_container_logits(backend):
    space = Dict(a=FloatBox(shape=(2,)), b=Tuple(FloatBox(shape=(3,))), add_batch_rank=True)
    logits = {"a": np.array([[0.0, 1.0]], np.float32), "b": (np.array([[3.0, -1.0, 0.5]], np.float32),)}
    test = ComponentTest(SoftMax(), input_spaces=dict(logits=space), backend=backend)
    probs, log_probs = test.test(("get_probabilities_and_log_probs", logits))
    recursive_assert_almost_equal(probs, {"a": rnp.softmax(logits["a"]), "b": (rnp.softmax(logits["b"][0]),)},
                                  decimals=5)
    recursive_assert_almost_equal(log_probs["b"][0], rnp.log_softmax(logits["b"][0]), decimals=5)


def test_clipping(backend):
    values = np.array([-3.0, -0.5, 0.0, 2.5], np.float32)
    for clip_value, expected in [(1.0, np.clip(values, -1.0, 1.0)), (0.0, values)]:
        test = ComponentTest(Clipping(clip_value=clip_value), input_spaces=dict(values=FLAT), backend=backend)
        test.test(("clip_if_needed", values), expected_outputs=expected)
    with pytest.raises(RLGraphSpecError, match="clip_value must be a number >= 0"):
        Clipping(clip_value=-1.0)
    with pytest.raises(RLGraphSpecError, match="clip_value"):
        Clipping(clip_value=None)
