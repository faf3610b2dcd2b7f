"""The RLGraphError family: hierarchy, composed messages, pickling."""
import pickle

import pytest

from rlgraph.spaces import FloatBox
from rlgraph.utils import (RLGraphBackendUnavailableError, RLGraphCheckpointError, RLGraphError,
                           RLGraphInputIncompleteError, RLGraphObsoletedError, RLGraphSpaceError, RLGraphSpecError)


def test_hierarchy():
    for cls in (RLGraphSpaceError, RLGraphSpecError, RLGraphInputIncompleteError, RLGraphObsoletedError,
                RLGraphBackendUnavailableError, RLGraphCheckpointError):
        assert issubclass(cls, RLGraphError)
    assert issubclass(RLGraphSpecError, ValueError)
    assert issubclass(RLGraphBackendUnavailableError, ImportError)


def test_message_names_where_expected_received_and_hint():
    error = RLGraphError("wrong shape", where="policy/dense", expected="(None, 4)", received="(None, 3)",
                         hint="check the state space.")
    assert str(error) == ("policy/dense: wrong shape. Expected (None, 4); received (None, 3). "
                          "Hint: check the state space.")
    assert (error.where, error.expected, error.received) == ("policy/dense", "(None, 4)", "(None, 3)")


def test_plain_message():
    assert str(RLGraphError("something")) == "something"


def test_space_error_carries_the_space():
    space = FloatBox(shape=(2,))
    error = RLGraphSpaceError(space, "no containers allowed", where="my-component", expected="a box space")
    assert error.space is space
    assert "received FloatBox(shape=(2,)" in str(error)


def test_input_incomplete_error_uses_the_component_scope():
    class Component:
        global_scope = "agent/policy"

    error = RLGraphInputIncompleteError(Component(), "argument 'nn_input' has no space")
    assert str(error).startswith("agent/policy: argument 'nn_input' has no space")


def test_obsoleted_error():
    error = RLGraphObsoletedError("API method", "get_action_and_log_prob", "get_action")
    assert "get_action_and_log_prob" in str(error) and "use 'get_action' instead" in str(error)


@pytest.mark.parametrize("error", [
    RLGraphError("x", where="w", expected="e", received="r", hint="h"),
    RLGraphSpaceError(FloatBox(), "bad", where="w"),
    RLGraphSpecError("bad key", where="IntBox", expected="low, high"),
    RLGraphObsoletedError("spec key", "old", "new"),
    RLGraphBackendUnavailableError("tf"),
    RLGraphCheckpointError("no checkpoint at 'x'", where="root.load_model"),
])
def test_errors_pickle(error):
    clone = pickle.loads(pickle.dumps(error))
    assert type(clone) is type(error) and str(clone) == str(error)
