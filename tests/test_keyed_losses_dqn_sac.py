"""The keyed API `loss_from_record(record)` of DQNLossFunction, DQFDLossFunction and SACLossFunction:
the same values as the positional API and the numpy reference, clear errors for a record with a
missing or an unknown key, and the agent cores (DQNCore, DQFDCore, SACCore) handing their loss one
record with the documented keys.

Every test body runs on both backends (the `backend` fixture). Batches of 3 or 4 items, 3 actions,
fixed seeds.
"""
import re

import numpy as np
import pytest

from agent_helpers import _agent as _dqn_agent
from rlgraph.agents import DQFDAgent, SACAgent
from rlgraph.components.loss_functions.dqfd_loss_function import DQFDLossFunction
from rlgraph.components.loss_functions.dqn_loss_function import DQNLossFunction
from rlgraph.components.loss_functions.sac_loss_function import SACLossFunction
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox, Tuple
from rlgraph.tests import ComponentTest
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphError

F = FloatBox(add_batch_rank=True)
BOOLS = BoolBox(add_batch_rank=True)
Q = FloatBox(shape=(3,), add_batch_rank=True)


def _keyed_test(loss_fn, spaces, record_keys, backend, extra=None):
    """A ComponentTest of `loss_fn` with the positional APIs' argument `spaces` and a `record`
    argument holding the spaces of `record_keys` (plus `extra`: key -> space)."""
    record = Dict(dict({key: spaces[key] for key in record_keys}, **(extra or {})))
    return ComponentTest(loss_fn, input_spaces=dict(spaces, record=record), backend=backend)


def _record_error(loss_fn, spaces, record_keys, backend, pattern, extra=None):
    """Building with such a record raises an RLGraphError naming the component, the API and `pattern`."""
    where = re.escape(f"{loss_fn.global_scope}.loss_from_record(record): the record of {type(loss_fn).__name__} ")
    with pytest.raises(RLGraphError, match=where + pattern):
        _keyed_test(loss_fn, spaces, record_keys, backend, extra)


# --- DQN and DQfD ---------------------------------------------------------------------------------------------------

DQN_SPACES = dict(q_values_s=Q, actions=IntBox(3, add_batch_rank=True), rewards=F, terminals=BOOLS, qt_values_sp=Q,
                  q_values_sp=Q)
DQN_ORDER = ("q_values_s", "actions", "rewards", "terminals", "qt_values_sp", "q_values_sp", "importance_weights",
             "expert_mask")
REQUIRED = DQN_ORDER[:5]


def _dqn_record(seed=0, batch=4):
    """A record with every DQN(fD) key; terminals and the expert mask mix True and False."""
    rng = np.random.RandomState(seed)
    q = lambda: rng.normal(size=(batch, 3)).astype(np.float32)  # noqa: E731
    item = lambda low, high: rng.uniform(low, high, size=batch).astype(np.float32)  # noqa: E731
    return dict(q_values_s=q(), actions=rng.randint(0, 3, size=batch), rewards=item(-2.0, 2.0),
                terminals=np.arange(batch) % 2 == 1, qt_values_sp=q(), q_values_sp=q(),
                importance_weights=item(0.2, 2.0), expert_mask=np.arange(batch) < 2)


def _positional(record, keys):
    """The positional arguments (in the API's order) for `keys`; q_values_sp is always passed, as
    the positional API needs it before `importance_weights`."""
    return [record[key] for key in DQN_ORDER if key in keys or key == "q_values_sp"]


@pytest.mark.parametrize("double_q, huber_loss, importance", [(True, True, True), (False, False, False),
                                                              (False, True, True), (True, False, False)])
def test_dqn_loss_from_record_is_the_positional_loss_and_the_numpy_reference(backend, double_q, huber_loss,
                                                                              importance):
    loss_fn = DQNLossFunction(discount=0.9, n_step=2, double_q=double_q, huber_loss=huber_loss,
                              importance_weights=importance)
    keys = REQUIRED + (("q_values_sp",) if double_q else ()) + (("importance_weights",) if importance else ())
    spaces = dict(DQN_SPACES, importance_weights=F) if importance else DQN_SPACES
    test = _keyed_test(loss_fn, spaces, keys, backend)
    full = _dqn_record(seed=1)
    record = {key: full[key] for key in keys}
    total, per_item, td = test.test(("loss_from_record", [record]))

    expected, expected_td = rnp.dqn_loss_per_item(
        full["q_values_s"], full["actions"], full["rewards"], full["terminals"], full["qt_values_sp"], discount=0.9,
        q_t=full["q_values_sp"] if double_q else None, n_step=2, huber_delta=1.0 if huber_loss else None,
        weights=full["importance_weights"] if importance else None)
    np.testing.assert_allclose(per_item, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(td, expected_td, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(total, expected.mean(), rtol=1e-5, atol=1e-6)
    positional = test.test(("loss_and_td_error", _positional(full, keys)))
    for keyed, reference in zip((total, per_item, td), positional):
        np.testing.assert_allclose(keyed, reference, rtol=1e-6, atol=1e-7)


def test_dqn_loss_from_record_by_hand(backend):
    # One transition, discount 0.5: td = 1 + 0.5 * max(4, 0) - Q(s, 1) = 1 + 2 - 2 = 1; 0.5 * td^2 = 0.5.
    keys = REQUIRED
    test = _keyed_test(DQNLossFunction(discount=0.5), DQN_SPACES, keys, backend)
    record = dict(q_values_s=np.array([[1.0, 2.0, 0.0]], np.float32), actions=np.array([1]),
                  rewards=np.array([1.0], np.float32), terminals=np.array([False]),
                  qt_values_sp=np.array([[4.0, 0.0, -1.0]], np.float32))
    total, per_item, td = test.test(("loss_from_record", [record]))
    assert float(total) == pytest.approx(0.5) and per_item.tolist() == [0.5] and td.tolist() == [1.0]


@pytest.mark.parametrize("with_mask", [True, False])
def test_dqfd_loss_from_record_is_the_positional_loss_and_the_numpy_reference(backend, with_mask):
    loss_fn = DQFDLossFunction(discount=0.9, n_step=2, double_q=True, huber_loss=True, importance_weights=True,
                               expert_margin=0.8, supervised_weight=0.5)
    keys = REQUIRED + ("q_values_sp", "importance_weights") + (("expert_mask",) if with_mask else ())
    spaces = dict(DQN_SPACES, importance_weights=F, **({"expert_mask": BOOLS} if with_mask else {}))
    test = _keyed_test(loss_fn, spaces, keys, backend)
    full = _dqn_record(seed=2)
    total, per_item, td = test.test(("loss_from_record", [{key: full[key] for key in keys}]))

    mask = full["expert_mask"] if with_mask else np.zeros(4, bool)
    expected, expected_td = rnp.dqfd_loss_per_item(
        full["q_values_s"], full["actions"], full["rewards"], full["terminals"], full["qt_values_sp"], 0.9,
        expert_mask=mask, expert_margin=0.8, supervised_weight=0.5, q_t=full["q_values_sp"], n_step=2,
        huber_delta=1.0, weights=full["importance_weights"])
    np.testing.assert_allclose(per_item, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(td, expected_td, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(total, expected.mean(), rtol=1e-5, atol=1e-6)
    positional = test.test(("loss_and_td_error", [full[key] for key in keys]))
    for keyed, reference in zip((total, per_item, td), positional):
        np.testing.assert_allclose(keyed, reference, rtol=1e-6, atol=1e-7)
    if with_mask:  # The expert items carry the large-margin loss on top of the TD loss.
        assert (per_item[:2] > positional[1][:2] - 1e-6).all()


@pytest.mark.parametrize("keys, extra, pattern", [
    (REQUIRED[:3] + REQUIRED[4:], None, r"lacks \['terminals'\]"),
    (REQUIRED, {"states": FloatBox(shape=(4,), add_batch_rank=True)}, r"has unknown key\(s\) \['states'\]"),
    (REQUIRED[1:], {"q_value_s": Q},
     r"lacks \['q_values_s'\] and has unknown key\(s\) \['q_value_s'\].*did you mean 'q_values_s'"),
])
def test_dqn_record_with_a_missing_or_unknown_key(backend, keys, extra, pattern):
    _record_error(DQNLossFunction(), DQN_SPACES, keys, backend, pattern, extra)


def test_dqn_and_dqfd_records_need_what_their_configuration_reads(backend):
    # double_q and importance_weights make their keys required; the DQfD key is unknown to DQN.
    _record_error(DQNLossFunction(double_q=True), DQN_SPACES, REQUIRED, backend, r"lacks \['q_values_sp'\]")
    spaces = dict(DQN_SPACES, importance_weights=F)
    _record_error(DQNLossFunction(importance_weights=True), spaces, REQUIRED, backend,
                  r"lacks \['importance_weights'\]")
    _record_error(DQNLossFunction(), DQN_SPACES, REQUIRED, backend, r"has unknown key\(s\) \['expert_mask'\]",
                  extra={"expert_mask": BOOLS})
    _record_error(DQFDLossFunction(), DQN_SPACES, REQUIRED, backend,
                  r"has unknown key\(s\) \['expert_masks'\].*did you mean 'expert_mask'", extra={"expert_masks": BOOLS})


# --- SAC ------------------------------------------------------------------------------------------------------------

SAC_KEYS = ("alpha", "log_probs_next_sampled", "q_values_next_sampled", "q_values", "log_probs_sampled",
            "q_values_sampled", "rewards", "terminals")


def _sac_spaces(q, weighted=True):
    return dict(alpha=float, log_probs_next_sampled=F, q_values_next_sampled=q, q_values=q, log_probs_sampled=F,
                q_values_sampled=q, rewards=F, terminals=BOOLS, **({"importance_weights": F} if weighted else {}))


def _sac_record(twin, seed=0, batch=3):
    rng = np.random.RandomState(seed)
    item = lambda: rng.normal(size=batch).astype(np.float32)  # noqa: E731
    # Twin heads [B] each, or one head [B, 1] (the loss drops the trailing 1).
    q = lambda: (item(), item()) if twin else item()[:, None]  # noqa: E731
    return dict(alpha=np.float32(0.3), log_probs_next_sampled=item(), q_values_next_sampled=q(), q_values=q(),
                log_probs_sampled=item(), q_values_sampled=q(), rewards=item(),
                terminals=np.array([False, True, False]),
                importance_weights=rng.uniform(0.2, 2.0, size=batch).astype(np.float32))


@pytest.mark.parametrize("twin, weighted", [(True, True), (False, False)])
def test_sac_loss_from_record_is_the_positional_loss_and_the_numpy_reference(backend, twin, weighted):
    q = Tuple(F, F) if twin else FloatBox(shape=(1,), add_batch_rank=True)
    keys = SAC_KEYS + (("importance_weights",) if weighted else ())
    spaces = _sac_spaces(q, weighted)
    test = _keyed_test(SACLossFunction(target_entropy=-1.0, discount=0.9), spaces, keys, backend)
    full = _sac_record(twin, seed=3)
    record = {key: full[key] for key in keys}
    actor, critic, alpha_loss, td = test.test(("loss_from_record", [record]))

    squeeze = lambda x: tuple(squeeze(h) for h in x) if isinstance(x, tuple) else x.reshape(-1)  # noqa: E731
    args = [0.3] + [squeeze(full[key]) for key in SAC_KEYS[1:]]
    weights = full["importance_weights"] if weighted else None
    reference = rnp.sac_losses(*args, discount=0.9, target_entropy=-1.0, importance_weights=weights)
    np.testing.assert_allclose([actor, critic, alpha_loss], [r.mean() for r in reference], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(td, rnp.sac_td_errors(*args[:4], *args[6:], discount=0.9), rtol=1e-5, atol=1e-6)
    positional = test.test(("loss_components_and_td_errors", [record[key] for key in keys]))
    for keyed, value in zip((actor, critic, alpha_loss, td), positional):
        np.testing.assert_allclose(keyed, value, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("keys, extra, pattern", [
    (SAC_KEYS[1:], None, r"lacks \['alpha'\]"),
    (SAC_KEYS[:4] + SAC_KEYS[5:], {"log_prob_sampled": F},
     r"lacks \['log_probs_sampled'\] and has unknown key\(s\) \['log_prob_sampled'\].*"
     r"did you mean 'log_probs_sampled'"),
    (SAC_KEYS, {"next_states": FloatBox(shape=(2,), add_batch_rank=True)}, r"has unknown key\(s\) \['next_states'\]"),
])
def test_sac_record_with_a_missing_or_unknown_key(backend, keys, extra, pattern):
    _record_error(SACLossFunction(), _sac_spaces(Tuple(F, F)), keys, backend, pattern, extra)


# --- The agent cores hand their loss one keyed record ---------------------------------------------------------------


def _record_keys(loss_fn):
    return sorted(loss_fn.api_method_inputs["record"].keys())


def test_dqn_and_dqfd_cores_call_the_keyed_loss(backend):
    agent = _dqn_agent(backend, double_q=False)
    assert _record_keys(agent.root_component.loss_functions[""]) == sorted(REQUIRED + ("importance_weights",))
    agent = DQFDAgent(state_space=FloatBox(shape=(4,)), action_space=IntBox(3),
                      network_spec=[{"type": "dense", "units": 5}], dueling_q=False,
                      memory_spec={"type": "replay-memory", "capacity": 8},
                      demo_memory_spec={"type": "replay-memory", "capacity": 8}, update_spec={"batch_size": 4},
                      execution_spec={"seed": 1}, backend=backend)
    assert _record_keys(agent.root_component.loss_functions[""]) == sorted(DQN_ORDER)


def test_sac_core_calls_the_keyed_loss(backend):
    agent = SACAgent(state_space=FloatBox(shape=(2,)), action_space=FloatBox(low=-1.0, high=1.0, shape=(1,)),
                     network_spec=[{"type": "dense", "units": 3, "activation": "tanh"}],
                     memory_spec={"type": "replay-memory", "capacity": 8}, update_spec={"batch_size": 4},
                     execution_spec={"seed": 1}, backend=backend)
    assert _record_keys(agent.root_component.loss_function) == sorted(SAC_KEYS + ("importance_weights",))
    q_values = agent.root_component.loss_function.api_method_inputs["record"]["q_values"]
    assert isinstance(q_values, Tuple) and len(q_values) == 2  # The twin critics' heads.
