"""RandomEnv (seeding, determinism, terminal probability) and SequentialVectorEnv (batching, seeds, no auto-reset)."""
import numpy as np
import pytest

from rlgraph.environments import Environment, GridWorld, RandomEnv, SequentialVectorEnv
from rlgraph.spaces import Dict, FloatBox, IntBox
from rlgraph.utils.rlgraph_errors import RLGraphError


def episode(env, steps=8):
    out = [env.reset()]
    for _ in range(steps):
        state, reward, terminal, _ = env.step(None)
        out.append((state, reward, terminal))
    return out


def flat(trajectory):
    return np.concatenate([np.ravel(np.asarray(item, dtype=np.float64)) for s in trajectory
                           for item in (s if isinstance(s, tuple) else (s,))])


def test_random_env_samples_from_its_spaces_and_reproduces_with_a_seed():
    env = RandomEnv(FloatBox(-1.0, 1.0, shape=(3,)), IntBox(2), reward_space=FloatBox(0.0, 0.5), seed=5)
    state = env.reset()
    assert env.state_space.contains(state)
    state, reward, terminal, info = env.step(1)
    assert env.state_space.contains(state) and 0.0 <= reward <= 0.5 and isinstance(reward, float)
    assert info == {"terminated": terminal, "truncated": False}
    a = flat(episode(RandomEnv(FloatBox(shape=(2,)), IntBox(2), seed=7)))
    np.testing.assert_array_equal(a, flat(episode(RandomEnv(FloatBox(shape=(2,)), IntBox(2), seed=7))))
    assert not np.array_equal(a, flat(episode(RandomEnv(FloatBox(shape=(2,)), IntBox(2), seed=8))))


def test_random_env_deterministic_repeats_after_reset():
    env = RandomEnv({"type": "int-box", "low": 0, "high": 100, "shape": (2,)}, IntBox(3), deterministic=True)
    first = flat(episode(env))
    np.testing.assert_array_equal(flat(episode(env)), first)
    plain = RandomEnv(FloatBox(shape=(2,)), IntBox(2), seed=1)
    assert not np.array_equal(flat(episode(plain)), flat(episode(plain)))


def test_random_env_terminal_probability():
    never = RandomEnv(FloatBox(), IntBox(2), terminal_prob=0.0, seed=0)
    always = RandomEnv(FloatBox(), IntBox(2), terminal_prob=1.0, seed=0)
    assert not any(never.step(0)[2] for _ in range(50)) and all(always.step(0)[2] for _ in range(5))
    half = RandomEnv(FloatBox(), IntBox(2), terminal_prob=0.5, seed=0)
    assert 400 < sum(half.step(0)[2] for _ in range(1000)) < 600
    with pytest.raises(RLGraphError, match="terminal_prob"):
        RandomEnv(FloatBox(), IntBox(2), terminal_prob=1.5)


def test_vector_env_batches_grid_worlds_without_auto_reset():
    envs = Environment.from_spec({"type": "vector-env", "num_environments": 3,
                                  "env_spec": {"type": "grid-world", "world": "2x2"}})
    assert isinstance(envs, SequentialVectorEnv) and envs.state_space == IntBox(4) and envs.action_space == IntBox(4)
    np.testing.assert_array_equal(envs.reset_all(), [0, 0, 0])
    states, rewards, terminals, infos = envs.step(np.array([1, 2, 0]))  # right (hole), down, up (border)
    assert states.tolist() == [1, 2, 0] and rewards.tolist() == [-1.0, 0.0, 0.0]
    assert terminals.dtype == bool and terminals.tolist() == [True, False, False]
    assert [info["field"] for info in infos] == ["H", " ", "S"]
    # A list of per-env actions works too. Env 0 is still in the hole (no auto-reset): blocked, still terminal.
    states, rewards, terminals, _ = envs.step([0, 1, 2])
    assert states.tolist() == [1, 3, 2] and terminals.tolist() == [True, True, False]
    assert envs.reset(1) == 0 and envs.get_env(1).x == 0 and envs.get_env(0).y == 1  # Only env 1 was reset.


def test_vector_env_seeds_each_env_with_seed_plus_index():
    envs = SequentialVectorEnv(3, {"type": "random-env", "state_space": FloatBox(shape=(2,)),
                                   "action_space": IntBox(2)}, seed=10)
    states = envs.reset_all()
    assert states.shape == (3, 2)
    for index in range(3):
        alone = RandomEnv(FloatBox(shape=(2,)), IntBox(2), seed=10 + index)
        np.testing.assert_array_equal(states[index], alone.reset())
    assert envs.seed(10) == 10
    np.testing.assert_array_equal(envs.reset_all(), states)
    from_spec_seed = SequentialVectorEnv(3, {"type": "random", "state_space": FloatBox(shape=(2,)),
                                             "action_space": IntBox(2), "seed": 10})
    np.testing.assert_array_equal(from_spec_seed.reset_all(), states)


def test_vector_env_batches_container_states_and_actions():
    state_space = Dict(pos=FloatBox(shape=(2,)), flag=IntBox(2))
    envs = SequentialVectorEnv(2, lambda: RandomEnv(state_space, Dict(a=IntBox(3), b=FloatBox())), seed=0)
    states = envs.reset_all()
    assert states["pos"].shape == (2, 2) and states["flag"].shape == (2,)
    states, rewards, terminals, infos = envs.step({"a": np.array([0, 2]), "b": np.array([0.5, -0.5])})
    assert states["pos"].shape == (2, 2) and rewards.shape == (2,) and len(infos) == 2
    assert envs.state_space == state_space and not envs.state_space.has_batch_rank


def test_vector_env_spec_errors():
    with pytest.raises(RLGraphError, match="one Environment object"):
        SequentialVectorEnv(2, GridWorld())
    single = SequentialVectorEnv(1, GridWorld("2x2"))
    assert single.reset_all().tolist() == [0]
    with pytest.raises(RLGraphError, match="does not give an Environment"):
        SequentialVectorEnv(2, lambda: "not an env")
    with pytest.raises(RLGraphError, match="number of environments"):
        SequentialVectorEnv(0, {"type": "grid-world"})
    with pytest.raises(RLGraphError, match="one action per environment"):
        single.step([0, 1])
