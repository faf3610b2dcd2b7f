"""ActorComponent: preprocessing, policy and exploration in one pipeline, on both backends."""
import numpy as np

from rlgraph.components.neural_networks import ActorComponent
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal
from rlgraph.utils import numpy as rnp

STATES = FloatBox(shape=(3,), add_batch_rank=True)


def _actor(epsilon_decay):
    return ActorComponent([{"type": "multiply", "factor": 2.0}],
                          {"network_spec": [{"type": "dense", "units": 4, "activation": "tanh"}],
                           "action_space": IntBox(3)},
                          {"epsilon_spec": {"decay_spec": epsilon_decay}})


def test_greedy_actions_follow_the_preprocessed_q_values(backend):
    actor = _actor(["constant", 0.0])
    test = ComponentTest(actor, input_spaces=dict(states=STATES, time_percentage=float, use_exploration=bool),
                         action_space=IntBox(3), backend=backend)
    w = test.read_variable_values(actor.variable_registry)
    x = np.random.RandomState(0).normal(size=(6, 3)).astype(np.float32)
    preprocessed, actions = test.test(("get_preprocessed_state_and_action", [x, 0.3]))
    recursive_assert_almost_equal(preprocessed, 2.0 * x, decimals=6)
    scope = "actor-component/policy"
    hidden = np.tanh(rnp.dense_layer(2.0 * x, w[f"{scope}/neural-network/dense/kernel"],
                                     w[f"{scope}/neural-network/dense/bias"]))
    logits = rnp.dense_layer(hidden, w[f"{scope}/action-adapter-0/action-layer/kernel"],
                             w[f"{scope}/action-adapter-0/action-layer/bias"])
    np.testing.assert_array_equal(actions, np.argmax(logits, axis=-1))
    _, _, (out_logits, probs, log_probs) = test.test(("get_preprocessed_state_action_and_action_probs", [x, 0.3]))
    recursive_assert_almost_equal(out_logits, logits, decimals=5)
    recursive_assert_almost_equal(probs, rnp.softmax(logits), decimals=5)


def test_full_exploration_gives_uniform_random_actions(backend):
    actor = _actor(["constant", 1.0])
    test = ComponentTest(actor, input_spaces=dict(states=STATES, time_percentage=float, use_exploration=bool),
                         action_space=IntBox(3), backend=backend, seed=5)
    x = np.zeros((3000, 3), dtype=np.float32)
    _, actions = test.test(("get_preprocessed_state_and_action", [x, 0.0]))
    counts = np.bincount(actions, minlength=3) / len(actions)
    assert np.all(np.abs(counts - 1.0 / 3.0) < 0.04), counts
    _, greedy = test.test(("get_preprocessed_state_and_action", [x, 0.0, False]))
    assert len(set(greedy.tolist())) == 1  # Same state everywhere, no exploration: one action.
