"""The keyed API of the PPO, actor-critic and IMPALA losses: `loss_from_record(record)` against the
numpy references and against the positional API on the same values, and its key checks."""
import numpy as np
import pytest

from rlgraph.components.loss_functions.actor_critic_loss_function import ActorCriticLossFunction
from rlgraph.components.loss_functions.impala_loss_function import IMPALALossFunction
from rlgraph.components.loss_functions.ppo_loss_function import PPOLossFunction
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox
from rlgraph.tests import ComponentTest
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphError

F = FloatBox(add_batch_rank=True)
BOOLS = BoolBox(add_batch_rank=True)
SEQ = dict(add_batch_rank=True, add_time_rank=True)
SCALAR = FloatBox()
PPO_KEYS = ("log_probs", "prev_log_probs", "advantages", "entropy", "values", "prev_values", "value_targets")


def close(actual, expected, rtol=1e-5, atol=1e-6):
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol)


def keyed_test(loss_fn, positional, record, backend):
    """A ComponentTest of `loss_fn` with the positional spaces (the root needs them for `loss`) and
    the record's Dict space."""
    return ComponentTest(loss_fn, input_spaces=dict(positional, record=Dict(record)), backend=backend)


# --- PPO -------------------------------------------------------------------------------------------------------------

def ppo_values(seed=0, n=6):
    rng = np.random.RandomState(seed)
    prev = -rng.uniform(0.2, 2.0, size=n).astype(np.float32)
    # Ratios between exp(-0.6) and exp(0.6): some inside, some outside clip(rho, 0.8, 1.2).
    values = dict(log_probs=prev + rng.uniform(-0.6, 0.6, size=n).astype(np.float32), prev_log_probs=prev,
                  advantages=rng.normal(size=n).astype(np.float32), entropy=rng.uniform(0, 1, n).astype(np.float32),
                  values=rng.normal(size=n).astype(np.float32), prev_values=rng.normal(size=n).astype(np.float32),
                  value_targets=rng.normal(size=n).astype(np.float32))
    return values


@pytest.mark.parametrize("schedules", [False, True])
def test_ppo_loss_from_record_matches_numpy_and_positional(backend, schedules):
    loss_fn = PPOLossFunction(clip_ratio=0.2, value_function_clipping=0.5, weight_entropy=0.1, weight_vf=0.5)
    positional = {key: F for key in PPO_KEYS}
    settings = dict(clip_ratio=np.float32(0.1), weight_entropy=np.float32(0.3)) if schedules else {}
    extra = {key: SCALAR for key in settings}
    test = keyed_test(loss_fn, dict(positional, **extra), dict(positional, **extra), backend)
    values = ppo_values()
    total, per_item, policy, value = test.test(("loss_from_record", dict(values, **settings)))
    ref_policy, ref_value, ref_per_item = rnp.ppo_loss(
        *(values[key] for key in PPO_KEYS), clip_ratio=float(settings.get("clip_ratio", 0.2)),
        value_function_clipping=0.5, weight_entropy=float(settings.get("weight_entropy", 0.1)), weight_vf=0.5)
    close(per_item, ref_per_item)
    close(policy, ref_policy)
    close(value, ref_value)
    close(total, ref_per_item.mean())
    # The positional API on the same values gives the same numbers.
    args = [values[key] for key in PPO_KEYS]
    pos_policy, pos_value = test.test(("loss_components_per_item", args + list(settings.values())))
    close(policy, pos_policy, rtol=1e-6, atol=0)
    close(value, pos_value, rtol=1e-6, atol=0)
    if not schedules:
        pos_total, pos_per_item = test.test(("loss", args))
        close(per_item, pos_per_item, rtol=1e-6, atol=0)
        close(total, pos_total, rtol=1e-6, atol=0)


# --- Actor-critic ----------------------------------------------------------------------------------------------------

def a2c_values(shape=(2, 3), seed=1):
    rng = np.random.RandomState(seed)
    values = dict(log_probs=-rng.uniform(0.1, 2.0, size=shape).astype(np.float32),
                  values=rng.normal(size=shape).astype(np.float32),
                  rewards=(2.0 * rng.normal(size=shape)).astype(np.float32),
                  terminals=np.zeros(shape, bool), entropy=rng.uniform(0.0, 1.0, size=shape).astype(np.float32),
                  bootstrapped_value=rng.normal(size=shape[:1]).astype(np.float32))
    values["terminals"][0, 1] = True
    return values


A2C_ARGS = ("log_probs", "values", "rewards", "terminals", "entropy", "bootstrapped_value")


def test_actor_critic_record_with_rewards_matches_numpy_and_positional(backend):
    loss_fn = ActorCriticLossFunction(discount=0.9, reward_clipping="clamp_one", weight_pg=1.0, weight_baseline=0.5,
                                      weight_entropy=0.05)
    ft = FloatBox(**SEQ)
    positional = dict(log_probs=ft, values=ft, rewards=ft, terminals=BoolBox(**SEQ), entropy=ft,
                      bootstrapped_value=F)
    test = keyed_test(loss_fn, positional, positional, backend)
    values = a2c_values()
    total, per_item, policy, value = test.test(("loss_from_record", values))
    args = [values[key] for key in A2C_ARGS]
    expected = rnp.actor_critic_loss(*args, discount=0.9, reward_clipping="clamp_one", weight_entropy=0.05)
    close(per_item, expected.mean(axis=1))
    close(total, expected.mean())
    close(policy + 0.5 * value, per_item)
    pos_total, pos_per_item = test.test(("loss", args))
    close(per_item, pos_per_item, rtol=1e-6, atol=0)
    close(total, pos_total, rtol=1e-6, atol=0)
    pos_policy, pos_value = test.test(("loss_components_per_item", args))
    close(policy, pos_policy, rtol=1e-6, atol=0)
    close(value, pos_value, rtol=1e-6, atol=0)


def test_actor_critic_record_with_advantages_matches_numpy_and_positional(backend):
    # The PG core's record: flat [B] steps with GAE advantages and targets, and this update's entropy weight.
    loss_fn = ActorCriticLossFunction(reward_clipping=None, weight_pg=0.8, weight_baseline=0.25)
    positional = dict(log_probs=F, values=F, rewards=F, terminals=BOOLS, entropy=F, bootstrapped_value=SCALAR,
                      advantages=F, value_targets=F, weight_entropy=SCALAR)
    record = {key: positional[key] for key in ("log_probs", "values", "entropy", "advantages", "value_targets",
                                               "weight_entropy")}
    test = keyed_test(loss_fn, positional, record, backend)
    rng = np.random.RandomState(2)
    values = {key: rng.normal(size=5).astype(np.float32) for key in record if key != "weight_entropy"}
    values["weight_entropy"] = np.float32(0.2)
    total, per_item, policy, value = test.test(("loss_from_record", values))
    ref_policy, ref_value = rnp.actor_critic_terms(values["log_probs"], values["values"], values["entropy"],
                                                   values["advantages"], values["value_targets"], weight_pg=0.8,
                                                   weight_entropy=0.2)
    close(policy, ref_policy)
    close(value, ref_value)
    close(per_item, ref_policy + 0.25 * ref_value)
    close(total, (ref_policy + 0.25 * ref_value).mean())
    args = [values[key] for key in record]
    pos_policy, pos_value = test.test(("loss_components_from_advantages", args))
    close(policy, pos_policy, rtol=1e-6, atol=0)
    close(value, pos_value, rtol=1e-6, atol=0)


@pytest.mark.parametrize("targets", [("rewards",), ("rewards", "terminals", "bootstrapped_value", "advantages",
                                                    "value_targets")])
def test_actor_critic_record_needs_exactly_one_set_of_targets(backend, targets):
    spaces = dict(log_probs=F, values=F, rewards=F, terminals=BOOLS, entropy=F, bootstrapped_value=SCALAR,
                  advantages=F, value_targets=F)
    record = {key: spaces[key] for key in ("log_probs", "values", "entropy") + targets}
    positional = {key: spaces[key] for key in A2C_ARGS}
    with pytest.raises(RLGraphError) as error:
        keyed_test(ActorCriticLossFunction(), positional, record, backend)
    message = str(error.value)
    assert "actor-critic-loss-function.loss_from_record(record)" in message
    assert "['rewards', 'terminals', 'bootstrapped_value']" in message and "['advantages', 'value_targets']" in message


# --- IMPALA ----------------------------------------------------------------------------------------------------------

IMPALA_ARGS = ("logits_actions_pi", "action_probs_mu", "values", "actions", "rewards", "terminals",
               "bootstrapped_values")
IMPALA_SPACES = dict(logits_actions_pi=FloatBox(shape=(3,), **SEQ), action_probs_mu=FloatBox(shape=(3,), **SEQ),
                     values=FloatBox(**SEQ), actions=IntBox(3, **SEQ), rewards=FloatBox(**SEQ),
                     terminals=BoolBox(**SEQ), bootstrapped_values=F)


def impala_record_spaces():
    spaces = dict(IMPALA_SPACES)
    spaces["action_probs"] = spaces.pop("action_probs_mu")  # The rollout's name for mu.
    return spaces


def impala_values(seed=4, batch=2, time=4):
    rng = np.random.RandomState(seed)
    terminals = np.zeros((batch, time), bool)
    terminals[1, 1] = True
    return dict(logits_actions_pi=rng.normal(size=(batch, time, 3)).astype(np.float32),
                action_probs=rnp.softmax(rng.normal(size=(batch, time, 3))).astype(np.float32),
                values=rng.normal(size=(batch, time)).astype(np.float32), actions=rng.randint(0, 3, (batch, time)),
                rewards=(2.0 * rng.normal(size=(batch, time))).astype(np.float32), terminals=terminals,
                bootstrapped_values=rng.normal(size=batch).astype(np.float32))


def test_impala_loss_from_record_matches_numpy_and_positional(backend):
    loss_fn = IMPALALossFunction(discount=0.9, reward_clipping="soft_asymmetric", weight_entropy=0.1)
    test = keyed_test(loss_fn, IMPALA_SPACES, impala_record_spaces(), backend)
    values = impala_values()
    total, per_item = test.test(("loss_from_record", values))
    args = [values["action_probs" if key == "action_probs_mu" else key] for key in IMPALA_ARGS]
    expected = rnp.impala_loss_per_item(*[a.astype(np.float64) if a.dtype == np.float32 else a for a in args],
                                        discount=0.9, reward_clipping="soft_asymmetric", weight_entropy=0.1)
    close(per_item, expected, rtol=1e-4, atol=1e-5)
    close(total, expected.mean(), rtol=1e-4, atol=1e-5)
    pos_total, pos_per_item = test.test(("loss", args))
    close(per_item, pos_per_item, rtol=1e-6, atol=0)
    close(total, pos_total, rtol=1e-6, atol=0)


# --- Key checks, every loss alike ------------------------------------------------------------------------------------

def _ppo_case():
    spaces = {key: F for key in PPO_KEYS}
    return PPOLossFunction(), spaces, dict(spaces)


def _a2c_case():
    spaces = dict(log_probs=F, values=F, rewards=F, terminals=BOOLS, entropy=F, bootstrapped_value=SCALAR)
    return ActorCriticLossFunction(), spaces, dict(spaces)


def _impala_case():
    return IMPALALossFunction(), IMPALA_SPACES, impala_record_spaces()


@pytest.mark.parametrize("case", [_ppo_case, _a2c_case, _impala_case], ids=["ppo", "a2c", "impala"])
def test_record_with_a_missing_or_an_unknown_key_is_refused(backend, case):
    loss_fn, positional, record = case()
    scope = loss_fn.global_scope
    missing = {key: space for key, space in record.items() if key != "values"}
    with pytest.raises(RLGraphError) as error:
        keyed_test(loss_fn, positional, missing, backend)
    message = str(error.value)
    assert f"{scope}.loss_from_record(record)" in message and "lacks ['values']" in message
    loss_fn, positional, record = case()
    with pytest.raises(RLGraphError) as error:
        keyed_test(loss_fn, positional, dict(record, valeus=F), backend)
    message = str(error.value)
    assert f"{scope}.loss_from_record(record)" in message and "unknown key(s) ['valeus']" in message
    assert "did you mean 'values'?" in message
    # Each loss lists its keys (the docstring documents them all).
    doc = type(loss_fn).__doc__
    assert "Record keys" in doc and all(f"{key}:" in doc for key in loss_fn.record_keys)


# --- The agents' cores call the keyed API only -----------------------------------------------------------------------

def _calls_into(agent, loss_function):
    """The API methods and graph functions of `loss_function` that the agent's core calls directly."""
    scope = loss_function.global_scope
    edges = agent.graph_executor.graph_builder.edges
    return sorted({callee[len(scope) + 1:] for caller, callee in edges
                   if callee.startswith(scope + ".") and not caller.startswith(scope + ".")})


@pytest.mark.parametrize("kind", ["ppo", "a2c"])
def test_policy_gradient_core_calls_only_loss_from_record(backend, kind):
    from pg_helpers import _a2c, _ppo
    agent = (_ppo if kind == "ppo" else _a2c)(backend)
    loss_function = agent.root_component.loss_function
    assert isinstance(loss_function, PPOLossFunction if kind == "ppo" else ActorCriticLossFunction)
    assert _calls_into(agent, loss_function) == ["loss_from_record"]


def test_impala_core_calls_only_loss_from_record(backend):
    from rlgraph.agents import IMPALAAgent
    agent = IMPALAAgent(state_space=FloatBox(shape=(4,)), action_space=IntBox(2),
                        network_spec=[{"type": "dense", "units": 3, "activation": "tanh"}], worker_sample_size=3,
                        execution_spec={"seed": 1}, backend=backend)
    assert _calls_into(agent, agent.root_component.loss_function) == ["loss_from_record"]
