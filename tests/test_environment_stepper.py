"""EnvironmentStepper: trajectories against a hand loop over the same environment, on both backends."""
import copy
import functools
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from rlgraph.backend_system import is_backend_installed
from rlgraph.components import Component
from rlgraph.components.common.environment_stepper import EnvironmentStepper
from rlgraph.environments import Environment, GridWorld
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.tests import ComponentTest, recursive_assert_almost_equal
from rlgraph.utils import nest
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphSpecError

GRID = {"type": "grid-world", "world": "2x2"}  # S H / . G: 0 start, 1 hole, 2 free, 3 goal.
GREEDY = {"epsilon_spec": {"decay_spec": ["constant", 0.0]}}
RANDOM = {"epsilon_spec": {"decay_spec": ["constant", 1.0]}}
ONE_HOT = [{"type": "reshape", "flatten": True, "flatten_categories": 4}]
# Logits = one_hot(s) @ eye(4) @ LOGITS: 2 (down) in the start state, 1 (right) in the free one.
LOGITS = np.array([[0.0, 0.0, 2.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]],
                  np.float32)
POLICY = "environment-stepper/actor-component/policy"


def _grid_actor(exploration=GREEDY):
    return {"preprocessor_spec": ONE_HOT, "exploration_spec": exploration,
            "policy_spec": {"network_spec": [{"type": "dense", "units": 4, "weights_spec": np.eye(4, dtype=np.float32),
                                              "biases_spec": False}],
                            "action_space": IntBox(4),
                            "action_adapter_spec": {"weights_spec": LOGITS, "biases_spec": False}}}


def _cartpole_actor():
    return {"preprocessor_spec": None, "exploration_spec": GREEDY,
            "policy_spec": {"network_spec": [{"type": "dense", "units": 8, "activation": "tanh"}],
                            "action_space": IntBox(2)}}


def _replay(environment_spec, trajectories):
    """Steps a new environment made from `environment_spec` with the actions of the stepper's
    trajectories (consecutive `step` calls) and checks every state, reward, terminal and return."""
    env = Environment.from_spec(copy.deepcopy(environment_spec))
    state, episode_return = env.reset(), 0.0
    for out in trajectories:
        recursive_assert_almost_equal(_row(out["states"], 0), state)  # The call goes on where the last one ended.
        for t in range(len(out["rewards"])):
            state, reward, terminal, _ = env.step(_row(out["actions"], t))
            episode_return += reward
            assert out["rewards"][t] == np.float32(reward) and out["terminals"][t] == terminal
            assert out["episode_returns"][t] == pytest.approx(episode_return, abs=1e-5)
            if terminal:
                state, episode_return = env.reset(), 0.0
            recursive_assert_almost_equal(_row(out["states"], t + 1), state)


def _row(nested, t):
    return nest.map_structure(lambda x: x[t], nested)


def test_greedy_grid_world_trajectories_match_the_hand_loop(backend):
    stepper = EnvironmentStepper(GRID, _grid_actor(), num_steps=5, add_action_probs=True)
    test = ComponentTest(stepper, backend=backend)
    first, second = test.test("step"), test.test("step")
    # By hand: down from the start (0 -> 2), right into the goal (reward 1, terminal, back to 0).
    np.testing.assert_array_equal(first["states"], [0, 2, 0, 2, 0, 2])
    np.testing.assert_array_equal(first["actions"], [2, 1, 2, 1, 2])
    np.testing.assert_array_equal(first["terminals"], [False, True, False, True, False])
    np.testing.assert_array_equal(first["rewards"], [0.0, 1.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(second["states"], [2, 0, 2, 0, 2, 0])
    np.testing.assert_array_equal(second["episode_returns"], [1.0, 0.0, 1.0, 0.0, 1.0])
    probs = rnp.softmax(LOGITS[first["states"][:-1]])
    recursive_assert_almost_equal(first["action_probs"], probs, decimals=6)
    recursive_assert_almost_equal(first["action_log_probs"], np.log(probs[np.arange(5), first["actions"]]),
                                  decimals=6)
    _replay(GRID, [first, second])
    assert test.read_variable_values("environment-stepper/time-step") == 10


def test_random_actions_are_the_ones_the_environment_received(backend):
    stepper = EnvironmentStepper(GRID, _grid_actor(RANDOM), num_steps=12)
    test = ComponentTest(stepper, backend=backend, seed=4)
    outs = [test.test("step") for _ in range(3)]
    actions = np.concatenate([out["actions"] for out in outs])
    assert set(actions.tolist()) == {0, 1, 2, 3}
    assert -1.0 in np.concatenate([out["rewards"] for out in outs])  # Fell into the hole at least once.
    _replay(GRID, outs)


def test_cartpole_matches_the_hand_loop_and_a_numpy_policy(backend):
    spec = {"type": "openai-gym", "gym_env": "CartPole-v1", "seed": 3}
    stepper = EnvironmentStepper(spec, _cartpole_actor(), num_steps=10)
    test = ComponentTest(stepper, backend=backend, seed=5)
    outs = [test.test("step") for _ in range(4)]
    assert outs[0]["states"].dtype == np.float32 and outs[0]["states"].shape == (11, 4)
    assert any(out["terminals"].any() for out in outs)  # At least one new episode within the 40 steps.
    _replay(spec, outs)
    w = test.read_variable_values()
    for out in outs:
        hidden = np.tanh(rnp.dense_layer(out["states"][:-1], w[f"{POLICY}/neural-network/dense/kernel"],
                                         w[f"{POLICY}/neural-network/dense/bias"]))
        logits = rnp.dense_layer(hidden, w[f"{POLICY}/action-adapter-0/action-layer/kernel"],
                                 w[f"{POLICY}/action-adapter-0/action-layer/bias"])
        np.testing.assert_array_equal(out["actions"], np.argmax(logits, axis=-1))


@pytest.mark.skipif(not (is_backend_installed("tf") and is_backend_installed("pytorch")),
                    reason="needs both backends")
def test_same_weights_give_the_same_trajectories_on_both_backends():
    spec = {"type": "openai-gym", "gym_env": "CartPole-v1", "seed": 11}
    tests = {backend: ComponentTest(EnvironmentStepper(spec, _cartpole_actor(), num_steps=8), backend=backend,
                                    seed=2) for backend in ("tf", "pytorch")}
    weights = tests["tf"].graph_executor.get_weights()
    tests["pytorch"].graph_executor.set_weights(weights)
    for _ in range(4):
        recursive_assert_almost_equal(tests["pytorch"].test("step"), tests["tf"].test("step"), decimals=6)


def test_container_states_and_actions(backend):
    # Dict states of a seeded random env through a multi-stream network; Dict actions in an "ftj" grid world.
    spec = {"type": "random-env", "state_space": Dict(a=FloatBox(shape=(2,)), b=IntBox(3)),
            "action_space": IntBox(2), "terminal_prob": 0.3, "seed": 7}
    network = {"type": "multi-input-stream-nn", "input_network_specs": {"a": [], "b": []},
               "post_network_spec": [{"type": "dense", "units": 3}]}
    stepper = EnvironmentStepper(spec, {"preprocessor_spec": None, "exploration_spec": RANDOM,
                                        "policy_spec": {"network_spec": network, "action_space": IntBox(2)}},
                                 num_steps=6)
    outs = [ComponentTest(stepper, backend=backend).test("step")]
    assert outs[0]["states"]["a"].shape == (7, 2) and outs[0]["states"]["b"].dtype == np.int32
    _replay(spec, outs)

    ftj = {"type": "grid-world", "world": "4x4", "action_type": "ftj"}
    actions = GridWorld(world="4x4", action_type="ftj").action_space
    stepper = EnvironmentStepper(ftj, {"preprocessor_spec": [{"type": "reshape", "flatten": True,
                                                              "flatten_categories": 16}],
                                       "exploration_spec": RANDOM,
                                       "policy_spec": {"network_spec": [{"type": "dense", "units": 4}],
                                                       "action_space": actions}}, num_steps=6)
    test = ComponentTest(stepper, backend=backend)
    outs = [test.test("step"), test.test("step")]
    assert sorted(outs[0]["actions"]) == ["forward", "jump", "turn"] and outs[0]["actions"]["turn"].shape == (6,)
    _replay(ftj, outs)


def test_time_percentage_follows_the_time_step(backend):
    # Epsilon decays from 1 to 0 over max_timesteps=8: the second call (steps 8..15) acts greedily.
    exploration = {"epsilon_spec": {"decay_spec": ["linear", 1.0, 0.0]}}
    stepper = EnvironmentStepper(GRID, _grid_actor(exploration), num_steps=8, max_timesteps=8)
    test = ComponentTest(stepper, backend=backend, seed=1)
    test.test("step")
    second = test.test("step")
    greedy = np.argmax(LOGITS[second["states"][:-1]], axis=-1)
    np.testing.assert_array_equal(second["actions"], greedy)


def test_copies_and_rebuilds_start_a_fresh_seeded_environment(backend):
    spec = {"type": "openai-gym", "gym_env": "CartPole-v1", "seed": 5}
    stepper = EnvironmentStepper(spec, _cartpole_actor(), num_steps=6)
    test = ComponentTest(stepper, backend=backend, seed=3)
    first = test.test("step")
    test.test("step")
    clone = ComponentTest(stepper.copy(scope="clone"), backend=backend, seed=3)
    recursive_assert_almost_equal(clone.test("step"), first)  # Same seeds: same weights, same episode.
    stepper.terminate()  # A closed environment is made anew (and reset) by the next call.
    np.testing.assert_array_equal(test.test("step")["states"][0], first["states"][0])


def test_from_spec_and_errors():
    stepper = Component.from_spec({"type": "environment-stepper", "environment_spec": GRID,
                                   "actor_component_spec": _grid_actor(), "num_steps": 2})
    assert isinstance(stepper, EnvironmentStepper) and stepper.state_space == IntBox(4)
    with pytest.raises(RLGraphSpecError, match="not an Environment object"):
        EnvironmentStepper(GridWorld("2x2"), _grid_actor())
    with pytest.raises(RLGraphSpecError, match="num_steps must be an int >= 1"):
        EnvironmentStepper(GRID, _grid_actor(), num_steps=0)
    with pytest.raises(RLGraphSpecError, match="max_timesteps"):
        EnvironmentStepper(GRID, _grid_actor(), max_timesteps=-1)
    with pytest.raises(RLGraphSpecError, match="single discrete action"):
        EnvironmentStepper({"type": "grid-world", "world": "2x2", "action_type": "ftj"}, _grid_actor(),
                           add_action_probs=True)
    with pytest.raises(RLGraphSpecError, match="action_probs_space"):
        EnvironmentStepper(GRID, _grid_actor(), add_action_probs=True, action_probs_space=FloatBox(shape=(3,)))
    lstm = dict(_grid_actor(), policy_spec={"network_spec": [{"type": "lstm", "units": 2}], "action_space": IntBox(4)})
    with pytest.raises(RLGraphSpecError, match="recurrent"):
        EnvironmentStepper(GRID, lstm)


# --- The environment as a factory (`environment=`): no spec lookup ------------------------------------------------

class _CountingFactory:
    """A zero-argument factory of 2x2 grid worlds that keeps every environment it made."""

    def __init__(self):
        self.made = []

    def __call__(self):
        self.made.append(GridWorld("2x2"))
        return self.made[-1]


def test_a_factory_gives_the_hand_computed_trajectories(backend):
    factory = _CountingFactory()
    stepper = EnvironmentStepper(environment=factory, actor_component_spec=_grid_actor(), num_steps=5,
                                 add_action_probs=True)
    test = ComponentTest(stepper, backend=backend)
    first, second = test.test("step"), test.test("step")
    # The same numbers as from the spec (test_greedy_grid_world_trajectories_match_the_hand_loop).
    np.testing.assert_array_equal(first["states"], [0, 2, 0, 2, 0, 2])
    np.testing.assert_array_equal(first["actions"], [2, 1, 2, 1, 2])
    np.testing.assert_array_equal(first["rewards"], [0.0, 1.0, 0.0, 1.0, 0.0])
    np.testing.assert_array_equal(second["states"], [2, 0, 2, 0, 2, 0])
    np.testing.assert_array_equal(second["episode_returns"], [1.0, 0.0, 1.0, 0.0, 1.0])
    recursive_assert_almost_equal(first["action_probs"], rnp.softmax(LOGITS[first["states"][:-1]]), decimals=6)
    _replay(GRID, [first, second])
    # Every environment it made is a new one; a closed one is replaced by a new call of the factory.
    made = len(factory.made)
    assert len({id(env) for env in factory.made}) == made
    stepper.terminate()
    np.testing.assert_array_equal(test.test("step")["states"], [0, 2, 0, 2, 0, 2])
    assert len(factory.made) == made + 1
    clone = ComponentTest(stepper.copy(scope="clone"), backend=backend)
    np.testing.assert_array_equal(clone.test("step")["actions"], [2, 1, 2, 1, 2])
    assert len(factory.made) > made + 1  # The copy made its own environment.


def test_a_seeded_factory_and_the_spec_give_the_same_trajectories(backend):
    spec = {"type": "openai-gym", "gym_env": "CartPole-v1", "seed": 3}
    from_spec = ComponentTest(EnvironmentStepper(spec, _cartpole_actor(), num_steps=10), backend=backend, seed=5)
    stepper = EnvironmentStepper(environment=functools.partial(Environment.from_spec, spec),
                                 actor_component_spec=_cartpole_actor(), num_steps=10)
    from_factory = ComponentTest(stepper, backend=backend, seed=5)
    assert stepper.state_space.shape == (4,) and stepper.action_space.num_categories == 2  # From a probe.
    outs = [from_factory.test("step") for _ in range(3)]
    for out in outs:
        recursive_assert_almost_equal(out, from_spec.test("step"))
    _replay(spec, outs)


def test_environment_argument_errors():
    with pytest.raises(RLGraphSpecError, match="environment_spec and environment both given"):
        EnvironmentStepper(GRID, _grid_actor(), environment=_CountingFactory())
    with pytest.raises(RLGraphSpecError, match="no environment given"):
        EnvironmentStepper(actor_component_spec=_grid_actor())
    with pytest.raises(RLGraphSpecError, match="zero-argument factory, not an Environment object"):
        EnvironmentStepper(environment=GridWorld("2x2"), actor_component_spec=_grid_actor())
    with pytest.raises(RLGraphSpecError, match="the environment factory made no environment"):
        EnvironmentStepper(environment=lambda: GRID, actor_component_spec=_grid_actor())
    with pytest.raises(RLGraphSpecError, match="actor_component_spec is missing"):
        EnvironmentStepper(environment=_CountingFactory())


def test_specs_resolve_through_the_maker_the_package_face_registers():
    # The package face (the composition root) imports rlgraph.environments, which registers its maker: in a fresh
    # interpreter that imports only the stepper, a spec resolves, while the stepper's own modules import no
    # environment module (tests/test_architecture.py checks the imports).
    code = textwrap.dedent("""
        import sys
        from rlgraph.components.common.environment_stepper import EnvironmentStepper
        from rlgraph.spaces import IntBox
        actor = {"preprocessor_spec": [{"type": "reshape", "flatten": True, "flatten_categories": 4}],
                 "policy_spec": {"network_spec": [{"type": "dense", "units": 4}], "action_space": IntBox(4)}}
        stepper = EnvironmentStepper({"type": "grid-world", "world": "2x2"}, actor, num_steps=3)
        print(stepper.num_steps, stepper.state_space, "rlgraph.environments" in sys.modules)
    """)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1].startswith("3 IntBox") and result.stdout.strip().endswith("True")


def test_a_spec_without_a_registered_maker_is_a_clear_error_and_a_factory_needs_none(monkeypatch):
    from rlgraph.utils import environment_maker
    monkeypatch.setattr(environment_maker, "_maker", None)
    with pytest.raises(RLGraphSpecError, match="import rlgraph.environments"):
        EnvironmentStepper({"type": "grid-world", "world": "2x2"}, _grid_actor())
    stepper = EnvironmentStepper(environment=lambda: GridWorld("2x2"), actor_component_spec=_grid_actor(), num_steps=3)
    assert stepper.num_steps == 3
