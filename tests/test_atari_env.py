"""AtariEnv on the real ALE (Pong, Breakout): preprocessing, frame stacking, max-pooling, seeding,
no-op and FIRE resets, episodic life; and the errors without the atari extra."""
import sys

import numpy as np
import pytest

from rlgraph.environments import AtariEnv, Environment, OpenAIGymEnv, RLGraphMissingDependencyError
from rlgraph.spaces import IntBox

EXTRA = "the atari extra is not installed: pip install -c constraints.txt -e \".[atari]\""


@pytest.fixture
def cv2():
    pytest.importorskip("ale_py", reason=EXTRA)
    return pytest.importorskip("cv2", reason=EXTRA)


def record_raw_frames(env):
    """Makes `env` keep every raw ALE observation it steps through."""
    frames, step = [], env._env_step

    def recording_step(action):
        result = step(action)
        frames.append(result[0])
        return result

    env._env_step = recording_step
    return frames


def test_game_ids():
    assert AtariEnv.game_id("Pong") == AtariEnv.game_id("pong") == "ALE/Pong-v5"
    assert AtariEnv.game_id("space_invaders") == AtariEnv.game_id("SpaceInvaders") == "ALE/SpaceInvaders-v5"
    assert AtariEnv.game_id("BreakoutNoFrameskip-v4") == "BreakoutNoFrameskip-v4"


@pytest.mark.parametrize("module, package", [("ale_py", "ale-py"), ("cv2", "opencv-python-headless")])
def test_missing_atari_packages_name_the_package_and_the_extra(monkeypatch, module, package):
    if module == "cv2":
        pytest.importorskip("ale_py", reason=EXTRA)  # ale-py is checked first.
    monkeypatch.setitem(sys.modules, module, None)  # Makes `import <module>` fail.
    with pytest.raises(RLGraphMissingDependencyError, match=package) as info:
        AtariEnv("Pong")
    assert '.[atari]' in str(info.value) and "constraints.txt" in str(info.value)


def test_spaces_reset_and_frame_stack_shifting(cv2):
    env = Environment.from_spec({"type": "atari", "game": "Pong", "seed": 0, "max_num_noops": 0})
    assert env.state_space == IntBox(0, 256, shape=(84, 84, 4), dtype="uint8")
    assert env.action_space == IntBox(6, dtype="int64") and env.frameskip == 4
    state = env.reset()
    assert state.dtype == np.uint8 and env.state_space.contains(state)
    assert all(np.array_equal(state[..., 0], state[..., i]) for i in range(1, 4))
    frames = record_raw_frames(env)
    for _ in range(5):
        previous = state
        state, reward, terminal, info = env.step(env.action_space.sample())
        np.testing.assert_array_equal(state[..., :3], previous[..., 1:])
    assert len(frames) == 20 and set(info) >= {"terminated", "truncated", "lives", "life_loss"}
    # The newest frame: the max of the last two raw grayscale frames, resized with area interpolation.
    expected = cv2.resize(np.maximum(frames[-2], frames[-1]), (84, 84), interpolation=cv2.INTER_AREA)
    np.testing.assert_array_equal(state[..., 3], expected)


def test_rgb_frames_without_pooling(cv2):
    env = AtariEnv("Pong", frame_size=(42, 32), frame_stack=2, grayscale=False, frameskip=2, max_pool_frames=False,
                   max_num_noops=0, seed=0)
    assert env.state_space.shape == (42, 32, 6)
    env.reset()
    frames = record_raw_frames(env)
    state = env.step(0)[0]
    expected = cv2.resize(frames[-1], (32, 42), interpolation=cv2.INTER_AREA)
    np.testing.assert_array_equal(state[..., 3:], expected)


def test_same_seed_same_trajectory_with_clipped_rewards(cv2):
    def rollout(env, steps=150):
        states, rewards = [env.reset()], []
        for _ in range(steps):
            state, reward, terminal, info = env.step(env.action_space.sample())
            states.append(state)
            rewards.append((reward, info["raw_reward"]))
        return np.stack(states), rewards

    first, second = (AtariEnv("Pong", clip_rewards=True, seed=3) for _ in range(2))
    states, rewards = rollout(first)
    other_states, other_rewards = rollout(second)
    np.testing.assert_array_equal(states, other_states)
    assert rewards == other_rewards and any(raw != 0.0 for _, raw in rewards)
    assert all(clipped == np.sign(raw) for clipped, raw in rewards)
    assert not np.array_equal(rollout(AtariEnv("Pong", clip_rewards=True, seed=4))[0], states)


def test_noop_and_fire_reset_frame_counts(cv2):
    for seed in (1, 2):
        env = AtariEnv("Pong", max_num_noops=30, seed=seed)
        env.reset()
        noops = int(np.random.default_rng(seed).integers(1, 31))
        # ALE runs with frameskip=1: the no-ops plus FIRE and action 2 are one frame each.
        assert env.gym_env.unwrapped.ale.getEpisodeFrameNumber() == noops + 2
    plain = AtariEnv("Pong", max_num_noops=0, fire_reset=False, seed=0)
    plain.reset()
    assert plain.gym_env.unwrapped.ale.getEpisodeFrameNumber() == 0


def test_breakout_life_loss_continues_the_game(cv2):
    env = AtariEnv("Breakout", seed=0)
    env.reset()
    ale = env.gym_env.unwrapped.ale
    for _ in range(500):
        _, _, terminal, info = env.step(env.action_space.sample())
        if terminal:
            break
    assert info["life_loss"] and info["terminated"] and info["lives"] == 4
    frame = ale.getEpisodeFrameNumber()
    env.reset()
    assert ale.getEpisodeFrameNumber() == frame + 1 and ale.lives() == 4  # One no-op, same game.


def test_openai_gym_env_hands_frameskip_to_ale(cv2):
    env = OpenAIGymEnv("ALE/Pong-v5", frameskip=3, repeat_action_probability=0.0, seed=0)
    assert env.frameskip == 1 and env.state_space == IntBox(0, 256, shape=(210, 160, 3), dtype="uint8")
    env.reset()
    env.step(0)
    assert env.gym_env.unwrapped.ale.getEpisodeFrameNumber() == 3


def test_protocols_of_record_and_explicit_overrides(cv2):
    from rlgraph.environments.atari import PROTOCOLS
    from rlgraph.utils.rlgraph_errors import RLGraphSpecError
    nature = AtariEnv("Pong", protocol="dqn-nature", seed=0)
    assert nature.settings == PROTOCOLS["dqn-nature"] and nature.clip_rewards and nature.episodic_life
    assert nature.gym_env.unwrapped.ale.getFloat("repeat_action_probability") == 0.0
    assert (nature.max_num_noops, nature.max_episode_steps) == (30, 27000)  # 108,000 frames at frameskip 4.
    machado = AtariEnv("Pong", protocol="machado2018", seed=0)
    assert machado.gym_env.unwrapped.ale.getFloat("repeat_action_probability") == pytest.approx(0.25)
    assert not machado.episodic_life and machado.max_num_noops == 0 and machado.clip_rewards
    machado.reset()
    assert machado.gym_env.unwrapped.ale.getEpisodeFrameNumber() == 0  # No no-op starts, no FIRE.
    # An argument given explicitly wins over the protocol's value.
    mine = AtariEnv("Pong", protocol="machado2018", repeat_action_probability=0.1, clip_rewards=False, seed=0)
    assert mine.gym_env.unwrapped.ale.getFloat("repeat_action_probability") == pytest.approx(0.1)
    assert not mine.clip_rewards and mine.settings["max_num_noops"] == 0
    with pytest.raises(RLGraphSpecError, match="unknown Atari protocol"):
        AtariEnv("Pong", protocol="nature")
    with pytest.raises(RLGraphSpecError, match=r"AtariEnv\(repeat_action_probability\)"):
        AtariEnv("Pong", repeat_action_probability=1.0)


def test_evaluations_score_full_games_with_raw_rewards(cv2):
    from rlgraph.execution.env_ids import evaluation_env_spec
    training = {"type": "atari", "game": "Breakout", "protocol": "dqn-nature", "seed": 3}
    env = Environment.from_spec(evaluation_env_spec(training))
    assert not env.episodic_life and not env.clip_rewards
    env.reset()
    lives_seen = set()
    for _ in range(5000):
        _, reward, terminal, info = env.step(env.action_space.sample())
        lives_seen.add(info["lives"])
        if terminal:
            break
    # The evaluation's episode is the whole game: it ends with the last life, not the first.
    assert terminal and info["lives"] == 0 and {5, 1} <= lives_seen
    assert Environment.from_spec(training).episodic_life  # (Training keeps its setting.)
