"""OpenAIGymEnv on gymnasium (frameskip, no-op starts, episodic life, FIRE reset, time limits, seeding),
the environment registry, the DeepMind Lab adapter without DM Lab, and the docs/environments.md snippets."""
import importlib.util
import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

gymnasium = pytest.importorskip("gymnasium", reason="OpenAIGymEnv needs gymnasium (a core dependency)")

from rlgraph.environments import (AtariEnv, DeepmindLabEnv, Environment, GridWorld, OpenAIGymEnv,  # noqa: E402
                                  RandomEnv, SequentialVectorEnv)
from rlgraph.environments.deepmind_lab import (DEFAULT_ACTION_SET, RLGraphDeepmindLabMissingError,  # noqa: E402
                                               build_action_vectors)
from rlgraph.spaces import Dict, FloatBox, IntBox, TextBox  # noqa: E402
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError  # noqa: E402


class ToyGame(gymnasium.Env):
    """Observation = frames since reset; reward 1 per frame; a life lost every `life_every` frames,
    game over after `lives * life_every` frames. Records actions and resets."""

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(self, lives=3, life_every=4, fire=False, render_mode=None):
        self.observation_space = gymnasium.spaces.Box(0, 1000, shape=(), dtype=np.int64)
        self.action_space = gymnasium.spaces.Discrete(4)
        self.max_lives, self.life_every, self.fire, self.render_mode = lives, life_every, fire, render_mode
        self.actions, self.resets, self.seeds = [], 0, []

    def get_action_meanings(self):
        return ["NOOP", "FIRE", "RIGHT", "LEFT"] if self.fire else ["NOOP", "UP", "RIGHT", "LEFT"]

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.frame, self.resets = 0, self.resets + 1
        self.seeds.append(seed)
        return np.array(0), {"lives": self.max_lives}

    def step(self, action):
        self.actions.append(int(action))
        self.frame += 1
        lives = self.max_lives - self.frame // self.life_every
        return np.array(self.frame), 1.0, lives <= 0, False, {"lives": lives}

    def render(self):
        return np.full((2, 3, 3), self.frame, dtype=np.uint8)


gymnasium.register("RLGraphTest/ToyGame-v0", entry_point=ToyGame)


def test_registry_names_resolve_to_classes():
    expected = {OpenAIGymEnv: ["openai-gym", "openai", "gym", "gymnasium", "OpenAIGymEnv"],
                GridWorld: ["grid-world", "gridworld", "grid_world", "GridWorld"],
                RandomEnv: ["random-env", "random"],
                SequentialVectorEnv: ["sequential-vector-env", "vector-env"],
                AtariEnv: ["atari"], DeepmindLabEnv: ["deepmind-lab", "deepmind_lab", "dm-lab"]}
    for cls, names in expected.items():
        for name in names:
            assert Environment.resolve_type(name) is cls, name


def test_cartpole_from_spec_spaces_and_step_info():
    env = Environment.from_spec({"type": "gym", "gym_env": "CartPole-v1", "seed": 1})
    assert isinstance(env, OpenAIGymEnv) and str(env) == "OpenAIGymEnv(CartPole-v1)"
    assert env.action_space == IntBox(2, dtype="int64") and not env.action_space.has_batch_rank
    assert env.state_space.shape == (4,) and isinstance(env.state_space, FloatBox)
    state = env.reset()
    assert env.state_space.contains(state)
    state, reward, terminal, info = env.step(np.array(1))
    assert reward == 1.0 and terminal is False and info == {"terminated": False, "truncated": False}
    env.terminate()


def test_own_time_limit_and_gym_time_limit_set_truncated():
    env = OpenAIGymEnv("CartPole-v1", max_episode_steps=4, seed=0)
    env.reset()
    results = [env.step(i % 2)[2:] for i in range(4)]
    assert [terminal for terminal, _ in results] == [False, False, False, True]
    assert results[-1][1]["truncated"] is True and results[-1][1]["terminated"] is False
    env.reset()
    assert env.step(0)[2] is False  # The counter restarts on reset.
    # A time limit of the gym env itself (here made by the user) is reported the same way.
    env = OpenAIGymEnv(gymnasium.make("CartPole-v1", max_episode_steps=2), seed=0)
    env.reset()
    assert env.step(0)[2] is False
    _, _, terminal, info = env.step(1)
    assert terminal and info["truncated"] and not info["terminated"]


def test_continuous_actions_are_clipped_to_the_bounds_before_the_gym_env_steps():
    """MountainCarContinuous charges 0.1 a^2 for the action it is given, while its physics uses the
    action clipped to [-1, 1]: an action of 3 costs what an action of 1 costs (0.1), as under SB3."""
    rewards = {}
    for action in (1.0, 3.0):
        env = OpenAIGymEnv("MountainCarContinuous-v0", seed=7)
        env.reset()
        states, rewards[action] = [], []
        for _ in range(3):
            state, reward, _, _ = env.step(np.array([action], np.float32))
            states.append(state)
            rewards[action].append(reward)
        rewards[action] = (np.array(rewards[action]), np.array(states))
        env.terminate()
    np.testing.assert_allclose(rewards[3.0][0], [-0.1] * 3, rtol=1e-6)
    np.testing.assert_array_equal(rewards[3.0][0], rewards[1.0][0])
    np.testing.assert_array_equal(rewards[3.0][1], rewards[1.0][1])
    # Inside the bounds nothing changes: a = 0.5 costs 0.025.
    env = OpenAIGymEnv("MountainCarContinuous-v0", seed=7)
    env.reset()
    assert env.step(np.array([0.5], np.float32))[1] == pytest.approx(-0.025)
    env.terminate()


def test_same_seed_same_trajectory_and_reseeding_repeats_it():
    def rollout(env, steps=40):
        out = [env.reset()]
        for _ in range(steps):
            state, reward, terminal, _ = env.step(env.action_space.sample())
            out.append(state)
            if terminal:
                out.append(env.reset())
        return np.concatenate([np.ravel(s) for s in out])

    first, second = (OpenAIGymEnv("CartPole-v1", max_num_noops=3, seed=11) for _ in range(2))
    a = rollout(first)
    np.testing.assert_array_equal(a, rollout(second))
    assert first.seed(11) == 11
    np.testing.assert_array_equal(rollout(first), a)
    other = OpenAIGymEnv("CartPole-v1", max_num_noops=3, seed=12)
    assert not np.array_equal(rollout(other), a)


def test_frameskip_repeats_sums_rewards_and_stops_at_episode_end():
    env = OpenAIGymEnv(ToyGame(lives=1, life_every=7), frameskip=3)
    assert env.reset() == 0
    assert env.step(2)[:3] == (3, 3.0, False)
    assert env.step(2)[:3] == (6, 3.0, False)
    state, reward, terminal, info = env.step(2)  # Game over after frame 7: one repeat only.
    assert (state, reward, terminal, info["terminated"]) == (7, 1.0, True, True)
    assert env.gym_env.actions == [2] * 7


def test_noop_starts_are_seeded_within_bounds_and_survive_episode_ends():
    counts = []
    for seed in range(6):
        env = OpenAIGymEnv(ToyGame(lives=100), max_num_noops=5, noop_action=3, seed=seed)
        counts.append(int(env.reset()))
        assert env.gym_env.actions == [3] * counts[-1]
    assert all(1 <= c <= 5 for c in counts) and len(set(counts)) > 1
    again = OpenAIGymEnv(ToyGame(lives=100), max_num_noops=5, noop_action=3, seed=0)
    assert again.reset() == counts[0]
    # Episodes of 2 frames end during 30 no-ops: the game is reset again instead of returning a dead state.
    short = OpenAIGymEnv(ToyGame(lives=1, life_every=2), max_num_noops=30, seed=1)
    assert short.reset() in (0, 1) and short.gym_env.resets > 1


def test_episodic_life_continues_the_game_until_it_is_over():
    env = OpenAIGymEnv("RLGraphTest/ToyGame-v0", episodic_life=True, lives=2, life_every=3)
    env.reset()
    steps = [env.step(2) for _ in range(3)]
    assert [s[2] for s in steps] == [False, False, True]
    assert steps[-1][3] == {"lives": 1, "terminated": True, "truncated": False, "life_loss": True}
    # The next reset only takes one no-op step: frame 4 of the same game, no true reset.
    assert env.reset() == 4 and env.gym_env.unwrapped.resets == 1 and env.gym_env.unwrapped.actions[-1] == 0
    _, _, terminal, info = env.step(2)
    assert (terminal, info["lives"]) == (False, 1)
    _, _, terminal, info = env.step(2)  # Frame 6: no lives left = game over, a true end.
    assert terminal and info["terminated"] and not info["life_loss"]
    assert env.reset() == 0 and env.gym_env.unwrapped.resets == 2


def test_fire_reset_presses_fire_then_two_only_where_fire_exists():
    with_fire = OpenAIGymEnv(ToyGame(fire=True, lives=100), fire_reset=True)
    assert with_fire.reset() == 2 and with_fire.gym_env.actions == [1, 2]
    without = OpenAIGymEnv(ToyGame(fire=False, lives=100), fire_reset=True)
    assert without.reset() == 0 and without.gym_env.actions == []


def test_seed_goes_to_the_next_reset_only():
    env = OpenAIGymEnv(ToyGame(lives=100), seed=9)
    env.reset()
    env.reset()
    assert env.gym_env.seeds == [9, None]


def test_render_returns_rgb_array_with_visualize_and_none_without():
    env = OpenAIGymEnv("RLGraphTest/ToyGame-v0", visualize=True, lives=100)
    env.reset()
    env.step(1)
    image = env.render()
    assert image.shape == (2, 3, 3) and image.dtype == np.uint8 and image[0, 0, 0] == 1
    assert OpenAIGymEnv("RLGraphTest/ToyGame-v0").render() is None


def test_translate_space_and_dtype_override():
    spaces = gymnasium.spaces
    assert OpenAIGymEnv.translate_space(spaces.Discrete(3)) == IntBox(3, dtype="int64")
    image = spaces.Box(0, 255, shape=(2, 2), dtype=np.uint8)
    assert OpenAIGymEnv.translate_space(image) == IntBox(0, 256, shape=(2, 2), dtype="uint8")
    as_float = OpenAIGymEnv.translate_space(image, dtype="float32")
    assert as_float == FloatBox(0.0, 255.0, shape=(2, 2))
    nested = OpenAIGymEnv.translate_space(spaces.Dict(a=spaces.Discrete(2), b=spaces.Text(5)))
    assert nested == Dict(a=IntBox(2, dtype="int64"), b=TextBox())


def test_invalid_arguments_raise_rlgraph_errors():
    with pytest.raises(RLGraphError, match="gym cannot make"):
        OpenAIGymEnv("NoSuchEnv-v0")
    with pytest.raises(RLGraphError, match="frameskip"):
        OpenAIGymEnv("CartPole-v1", frameskip=0)
    with pytest.raises(RLGraphSpecError, match="rejected the arguments.*foo"):
        OpenAIGymEnv("CartPole-v1", foo=1)
    with pytest.raises(RLGraphError, match="need an env id"):
        OpenAIGymEnv(ToyGame(), lives=3)


# --- DeepMind Lab (the package is not installable from PyPI; tests use no real DM Lab) ---------------------
def test_deepmind_lab_missing_package_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "deepmind_lab", None)  # Makes `import deepmind_lab` fail.
    with pytest.raises(RLGraphDeepmindLabMissingError, match="deepmind_lab.*Bazel") as info:
        Environment.from_spec({"type": "dm-lab", "level_id": "seekavoid_arena_01"})
    assert isinstance(info.value, RLGraphError) and isinstance(info.value, ImportError)


def test_deepmind_lab_action_set_mapping():
    vectors = build_action_vectors(DEFAULT_ACTION_SET)
    assert vectors.shape == (9, 7) and vectors.dtype == np.int32
    assert vectors[0].tolist() == [0, 0, 0, 1, 0, 0, 0]  # forward
    assert vectors[4].tolist() == [-20, 0, 0, 0, 0, 0, 0]  # look left
    assert vectors[7].tolist() == [20, 0, 0, 1, 0, 0, 0]  # forward + look right
    assert vectors[8].tolist() == [0, 0, 0, 0, 1, 0, 0]  # fire
    reordered = build_action_vectors({"jump": {"JUMP": 1}}, action_names=["JUMP", "FIRE"])
    assert reordered.tolist() == [[1, 0]]
    with pytest.raises(RLGraphError, match="unknown DM Lab action"):
        build_action_vectors({"dance": {"DANCE": 1}})


class FakeLab:
    """Stands in for deepmind_lab.Lab: an episode of 3 steps; the reward is the action's FIRE entry + 1."""

    def __init__(self, level, observations, config=None, renderer=None, level_cache=None):
        self.level, self.config, self.frame, self.running = level, config, 0, False

    def action_spec(self):
        return [{"name": name, "min": -1, "max": 1} for name in
                ("LOOK_LEFT_RIGHT_PIXELS_PER_FRAME", "LOOK_DOWN_UP_PIXELS_PER_FRAME", "STRAFE_LEFT_RIGHT",
                 "MOVE_BACK_FORWARD", "FIRE", "JUMP", "CROUCH")]

    def observation_spec(self):
        return [{"name": "RGB_INTERLEAVED", "shape": (4, 5, 3), "dtype": np.uint8},
                {"name": "INSTR", "shape": (), "dtype": str}]

    def reset(self, seed=None):
        self.frame, self.running, self.seed = 0, True, seed

    def step(self, action, num_steps=1):
        self.frame += 1
        self.running = self.frame < 3
        return float(action[4] + num_steps)

    def is_running(self):
        return self.running

    def observations(self):
        return {"RGB_INTERLEAVED": np.full((4, 5, 3), self.frame, dtype=np.uint8), "INSTR": b"blue ladder"}

    def close(self):
        self.running = False


def test_deepmind_lab_adapter_with_a_fake_lab(monkeypatch):
    monkeypatch.setitem(sys.modules, "deepmind_lab", types.SimpleNamespace(Lab=FakeLab))
    env = DeepmindLabEnv("seekavoid_arena_01", observations=["RGB_INTERLEAVED", "INSTR"], frameskip=2, seed=4)
    assert env.state_space == Dict(RGB_INTERLEAVED=IntBox(0, 256, shape=(4, 5, 3), dtype="uint8"), INSTR=TextBox())
    assert env.action_space == IntBox(9) and env.lab.config == {"width": "96", "height": "72"}
    state = env.reset()
    assert state["INSTR"] == "blue ladder" and state["RGB_INTERLEAVED"].sum() == 0
    assert env.state_space.contains(state)
    assert env.step(8)[1:3] == (3.0, False)  # fire: 1 + frameskip 2
    state, reward, terminal, info = env.step(0)
    assert (reward, terminal, int(state["RGB_INTERLEAVED"][0, 0, 0])) == (2.0, False, 2)
    state, _, terminal, info = env.step(0)
    assert terminal and info == {"terminated": True, "truncated": False} and state["RGB_INTERLEAVED"][0, 0, 0] == 2
    single = DeepmindLabEnv("x", observations="RGB_INTERLEAVED")
    assert single.state_space == IntBox(0, 256, shape=(4, 5, 3), dtype="uint8")
    assert single.reset().shape == (4, 5, 3) and single.render().shape == (4, 5, 3)
    with pytest.raises(RLGraphError, match="unknown observation items"):
        DeepmindLabEnv("x", observations=["DEPTH"])


# --- docs/environments.md -----------------------------------------------------------------------------------
DOC = Path(__file__).resolve().parent.parent / "docs" / "environments.md"


def test_environments_doc_snippets_run(monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 7
    have_atari = all(importlib.util.find_spec(module) for module in ("ale_py", "cv2"))
    monkeypatch.setitem(sys.modules, "deepmind_lab", types.SimpleNamespace(Lab=FakeLab))
    for block in blocks:
        if "AtariEnv" in block and not have_atari:
            continue  # The atari extra is not installed; tests/test_atari_env.py says so with a skip.
        namespace = {"__name__": "doc_snippet"}
        exec(compile(block, str(DOC), "exec"), namespace)  # noqa: S102 - our own documentation


def test_environments_doc_grid_world_ftj_snippet():
    """The forward/turn/jump snippet of "Grid worlds" ends on the goal, facing left."""
    blocks = [b for b in re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S) if 'action_type="ftj"' in b]
    assert len(blocks) == 1
    namespace = {"__name__": "doc_snippet"}
    exec(compile(blocks[0], str(DOC), "exec"), namespace)  # noqa: S102 - our own documentation
    assert namespace["state"].tolist() == [3, 3, 3] and namespace["reward"] == 1.0 and namespace["terminal"]
    assert namespace["start"] == 90 and namespace["rooms"].get_dist_to_goal() == 14
