"""`DDPGLossFunction`: the keyed `loss_from_record` against the numpy reference (tests/ddpg_reference.py)
and the positional API on the same values, the parts, gradient inverting and the record-key errors.

Every test body runs on both backends (the `backend` fixture); batches of 4, seeded.
"""
import numpy as np
import pytest

import ddpg_reference as ref
from rlgraph.backend_system import backend_scope
from rlgraph.components import Component
from rlgraph.components.loss_functions import DDPGLossFunction
from rlgraph.spaces import BoolBox, Dict, FloatBox
from rlgraph.tests import ComponentTest
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError

F = FloatBox(add_batch_rank=True)
SPACES = dict(q_values=F, qt_values_sp=F, rewards=F, terminals=BoolBox(add_batch_rank=True), q_values_mu=F,
              importance_weights=F, critic_weights_l2=FloatBox(), actions_mu=FloatBox(shape=(2,), add_batch_rank=True))
POSITIONAL = ("q_values", "qt_values_sp", "rewards", "terminals", "q_values_mu", "importance_weights")


def _values(seed=0):
    rng = np.random.RandomState(seed)
    f = lambda *shape: rng.normal(scale=2.0, size=shape or (4,)).astype(np.float32)  # noqa: E731
    return dict(q_values=f(), qt_values_sp=f(), rewards=f(), terminals=np.array([False, True, False, False]),
                q_values_mu=f(), importance_weights=rng.uniform(0.2, 1.0, size=4).astype(np.float32),
                critic_weights_l2=np.float32(3.5), actions_mu=f(4, 2))


def _record_test(loss, keys, backend):
    space = Dict({k: SPACES[k] for k in keys})  # (The children carry their batch ranks; the l2 has none.)
    return ComponentTest(loss, input_spaces=dict(record=space), backend=backend)


@pytest.mark.parametrize("huber_delta, regularization", [(None, 0.0), (1.5, 0.01)])
def test_loss_from_record_matches_numpy_and_the_positional_api(backend, huber_delta, regularization):
    discount = 0.9 ** 3  # (An n-step bootstrap discount.)
    values = _values()
    keys = list(POSITIONAL) + (["critic_weights_l2"] if regularization else [])
    record = {k: values[k] for k in keys}
    loss = DDPGLossFunction(discount=discount, huber_delta=huber_delta, critic_regularization=regularization)
    out = _record_test(loss, keys, backend).test(("loss_from_record", record))
    critic_loss, per_item, td, _, actor_loss = ref.losses(
        values["q_values"], values["qt_values_sp"], values["rewards"], values["terminals"], values["q_values_mu"],
        discount, huber_delta, values["importance_weights"], float(values["critic_weights_l2"]), regularization)
    if huber_delta is not None:
        assert np.any(np.abs(td) > huber_delta) and np.any(np.abs(td) < huber_delta)  # Both branches.
    assert sorted(out) == ["actor_loss", "actor_surrogate", "actor_surrogate_per_item", "critic_loss",
                           "critic_loss_per_item", "td_errors"]
    np.testing.assert_allclose(out["critic_loss"], critic_loss, rtol=1e-5)
    np.testing.assert_allclose(out["critic_loss_per_item"], per_item, rtol=1e-5)
    np.testing.assert_allclose(out["td_errors"], td, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose([out["actor_loss"], out["actor_surrogate"]], [actor_loss, actor_loss], rtol=1e-6)
    np.testing.assert_allclose(out["actor_surrogate_per_item"], -values["q_values_mu"], rtol=1e-6)

    # The positional API, same instance settings, same values.
    spaces = {k: SPACES[k] for k in POSITIONAL + ("critic_weights_l2",)}
    test = ComponentTest(DDPGLossFunction(discount=discount, huber_delta=huber_delta,
                                          critic_regularization=regularization), input_spaces=spaces, backend=backend)
    critic_args = [values[k] for k in ("q_values", "qt_values_sp", "rewards", "terminals", "importance_weights",
                                       "critic_weights_l2")]
    positional = test.test(("critic_loss", critic_args))
    np.testing.assert_allclose(positional[0], out["critic_loss"], rtol=1e-6)
    np.testing.assert_allclose(positional[1], out["critic_loss_per_item"], rtol=1e-6)
    np.testing.assert_allclose(positional[2], out["td_errors"], rtol=1e-6)
    for positional, keyed in zip(test.test(("actor_loss", [values["q_values_mu"]])),
                                 [out["actor_loss"], out["actor_surrogate"], out["actor_surrogate_per_item"]]):
        np.testing.assert_allclose(positional, keyed, rtol=1e-6)
    total, total_per_item = test.test(("loss", [values[k] for k in POSITIONAL]))
    np.testing.assert_allclose(total_per_item, per_item - values["q_values_mu"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(total, (per_item - values["q_values_mu"]).mean(), rtol=1e-5, atol=1e-6)


def test_a_loss_of_one_part_reads_only_that_part(backend):
    values = _values(1)
    critic_keys = ["q_values", "qt_values_sp", "rewards", "terminals", "importance_weights"]
    critic = _record_test(DDPGLossFunction(discount=0.5, parts=("critic",)), critic_keys, backend)
    out = critic.test(("loss_from_record", {k: values[k] for k in critic_keys}))
    assert sorted(out) == ["critic_loss", "critic_loss_per_item", "td_errors"]
    np.testing.assert_allclose(out["td_errors"], ref.losses(*(values[k] for k in POSITIONAL[:5]), 0.5)[2],
                               rtol=1e-5, atol=1e-6)
    actor = _record_test(DDPGLossFunction(parts=("actor",)), ["q_values_mu"], backend)
    out = actor.test(("loss_from_record", {"q_values_mu": values["q_values_mu"]}))
    assert sorted(out) == ["actor_loss", "actor_surrogate", "actor_surrogate_per_item"]
    np.testing.assert_allclose(out["actor_loss"], -values["q_values_mu"].mean(), rtol=1e-6)
    # Without importance weights the critic loss is unweighted.
    out = _record_test(DDPGLossFunction(discount=0.5, parts=("critic",)), critic_keys[:4], backend).test(
        ("loss_from_record", {k: values[k] for k in critic_keys[:4]}))
    np.testing.assert_allclose(out["critic_loss"], ref.losses(*(values[k] for k in POSITIONAL[:5]), 0.5)[0],
                               rtol=1e-5)


@pytest.mark.parametrize("loss_args, keys, missing_or_unknown", [
    (dict(), ["q_values", "qt_values_sp", "rewards", "q_values_mu"], "terminals"),  # Missing.
    (dict(), list(POSITIONAL) + ["q_value_mu"], "q_value_mu"),  # Unknown (a typo).
    (dict(parts=("critic",)), ["q_values", "qt_values_sp", "rewards", "terminals", "q_values_mu"], "q_values_mu"),
    (dict(critic_regularization=0.1), list(POSITIONAL), "critic_weights_l2"),
    (dict(inverter_bounds=(np.zeros(2), np.ones(2))), list(POSITIONAL), "actions_mu"),
])
def test_a_record_with_a_missing_or_unknown_key_is_an_error(backend, loss_args, keys, missing_or_unknown):
    spaces = dict(SPACES, q_value_mu=F)
    space = Dict({k: spaces[k] for k in keys})
    with pytest.raises(RLGraphError) as info:
        ComponentTest(DDPGLossFunction(**loss_args), input_spaces=dict(record=space), backend=backend)
    message = str(info.value)
    assert "ddpg-loss-function.loss_from_record(record)" in message and f"'{missing_or_unknown}'" in message, message


def test_gradient_inverting_of_the_surrogate(backend):
    """Q(s, a) = sum_k c_k a_k, so dQ/da = c: the surrogate per item is -sum_k invert(c, mu)_k mu_k."""
    loss = DDPGLossFunction(inverter_bounds=(np.array([-1.0, 0.0]), np.array([1.0, 2.0])))
    mu = np.array([[0.5, 1.5], [-0.9, 2.5], [1.2, 0.1]], np.float32)  # Inside, below/above, above/inside.
    c = np.array([2.0, -1.0], np.float32)
    expected_g = ref.invert(np.tile(c, (3, 1)).astype(np.float64), mu, np.array([-1.0, 0.0]), np.array([1.0, 2.0]))
    with backend_scope(backend):
        if backend == "tf":
            import tensorflow as tf
            from rlgraph.components.loss_functions.ddpg_loss_function import _actor_tf
            # (In a tf.function: the inverting differentiates Q in the graph.)
            out = tf.function(lambda a: _actor_tf(loss, tf.reduce_sum(a * c, axis=1), a))(tf.constant(mu))
            actor_loss, surrogate, per_item = (x.numpy() for x in out)
        else:
            import torch
            from rlgraph.components.loss_functions.ddpg_loss_function import _actor_torch
            a = torch.tensor(mu, requires_grad=True)
            actor_loss, surrogate, per_item = (x.detach().numpy() for x in
                                               _actor_torch(loss, (a * torch.tensor(c)).sum(dim=1), a))
    np.testing.assert_allclose(per_item, -(expected_g * mu).sum(axis=1), rtol=1e-5)
    np.testing.assert_allclose(surrogate, per_item.mean(), rtol=1e-5)
    np.testing.assert_allclose(actor_loss, -(mu @ c).mean(), rtol=1e-5)


def test_spec_errors_and_from_spec():
    assert isinstance(Component.from_spec({"type": "ddpg-loss", "discount": 0.5}), DDPGLossFunction)
    for kwargs, argument in ((dict(huber_delta=0.0), "huber_delta"), (dict(critic_regularization=-1.0),
                                                                     "critic_regularization"),
                             (dict(parts=("critic", "value")), "parts"), (dict(parts="critic"), "parts"),
                             (dict(inverter_bounds=(np.ones(2), np.zeros(2))), "inverter_bounds")):
        with pytest.raises(RLGraphSpecError, match=rf"DDPGLossFunction\({argument}\)"):
            DDPGLossFunction(**kwargs)
