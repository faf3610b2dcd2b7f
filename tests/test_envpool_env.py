"""`EnvPoolVectorEnv` (training_spec.vectorization "envpool"): the vector-env contract on EnvPool's Atari
games (spaces, batches, seeding, per-env resets, episodic life, clipped rewards), the refusals, and
`rlgraph train` with it. EnvPool's frames are not AtariEnv's (it bundles its own ALE build), so these
tests check the contract and the settings, not pixels against AtariEnv."""
import numpy as np
import pytest

pytest.importorskip("envpool", reason="the envpool extra (in the test extra)")

from rlgraph.environments import AtariEnv, EnvPoolVectorEnv  # noqa: E402
from rlgraph.execution.training import train  # noqa: E402
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError  # noqa: E402

PONG = {"type": "atari", "game": "Pong"}


def _trajectory(env, steps=40, seed=0):
    rng = np.random.RandomState(seed)
    states = [env.reset_all()]
    for _ in range(steps):
        states.append(env.step(rng.randint(0, env.action_space.num_categories, size=env.num_environments))[0])
    return np.stack(states)


def test_spaces_batches_and_infos_are_atari_envs():
    env = EnvPoolVectorEnv(3, dict(PONG, protocol="dqn-nature"), seed=1)
    atari = AtariEnv("Pong", protocol="dqn-nature")
    try:
        assert env.state_space == atari.state_space and env.action_space == atari.action_space
        states = env.reset_all()
        assert states.shape == (3, 84, 84, 4) and states.dtype == np.uint8
        # A reset fills the stack with the first frame, as AtariEnv's does.
        assert all(np.array_equal(states[:, :, :, 0], states[:, :, :, k]) for k in range(1, 4))
        states, rewards, terminals, infos = env.step(np.array([0, 1, 2]))
        assert states.shape == (3, 84, 84, 4) and rewards.dtype == np.float32 and terminals.dtype == bool
        assert len(infos) == 3 and set(infos[0]) == {"terminated", "truncated", "lives", "life_loss", "raw_reward"}
        assert "EnvPoolVectorEnv(3 x ALE/Pong-v5)" == str(env) and env.get_env(2) is env
    finally:
        env.terminate()
        atari.terminate()


def test_clipped_rewards_are_the_sign_of_the_raw_ones():
    env = EnvPoolVectorEnv(4, dict(PONG, clip_rewards=True), seed=2)
    rng, seen = np.random.RandomState(1), []
    try:
        env.reset_all()
        for _ in range(400):
            _, rewards, terminals, infos = env.step(rng.randint(0, 6, size=4))
            seen += [(float(r), info["raw_reward"]) for r, info in zip(rewards, infos) if info["raw_reward"] != 0]
            for i in np.flatnonzero(terminals):
                env.reset(i)
    finally:
        env.terminate()
    assert seen and all(r == np.sign(raw) for r, raw in seen)


def test_same_seed_same_games_another_seed_others_and_seed_repeats():
    first, second, other = (EnvPoolVectorEnv(2, PONG, seed=s) for s in (7, 7, 8))
    try:
        a, b, c = _trajectory(first), _trajectory(second), _trajectory(other)
        assert np.array_equal(a, b) and not np.array_equal(a, c)
        assert first.seed(8) == 8 and np.array_equal(_trajectory(first), c)
        # Game i is seeded with seed + i: game 1 of seed 7 starts as game 0 of seed 8.
        solo = EnvPoolVectorEnv(1, PONG, seed=8)
        assert np.array_equal(solo.reset_all()[0], a[0, 1])
        solo.terminate()
    finally:
        for env in (first, second, other):
            env.terminate()


def test_resetting_one_game_leaves_the_others_as_they_are():
    plain, reset = (EnvPoolVectorEnv(2, PONG, seed=3) for _ in range(2))
    try:
        actions = np.random.RandomState(4).randint(0, 6, size=(30, 2))
        for env in (plain, reset):
            env.reset_all()
        for t, pair in enumerate(actions):
            expected = plain.step(pair)[0]
            got = reset.step(pair)[0]
            assert np.array_equal(got[1], expected[1]), t
            if t == 10:
                fresh = reset.reset(0)  # Game 0 starts anew; game 1 goes on undisturbed.
                assert np.array_equal(fresh[..., 0], fresh[..., 3])
    finally:
        plain.terminate()
        reset.terminate()


def test_a_lost_life_ends_the_episode_and_reset_continues_the_game():
    """Breakout with FIRE: the ball is lost every 24 steps (probed); each loss is a terminal with
    info["life_loss"], the reset goes on with the lives left, the last one resets the game."""
    env = EnvPoolVectorEnv(1, {"type": "atari", "game": "Breakout", "episodic_life": True, "max_num_noops": 0},
                           seed=5)
    lives = []
    try:
        env.reset_all()
        for _ in range(400):
            _, _, terminals, infos = env.step(np.array([1]))
            if terminals[0]:
                lives.append((infos[0]["lives"], infos[0]["life_loss"], infos[0]["terminated"]))
                env.reset(0)
                if infos[0]["lives"] == 0:
                    break
        assert [entry[0] for entry in lives] == [4, 3, 2, 1, 0]
        assert [entry[1] for entry in lives] == [True, True, True, True, False]  # The last: game over.
        assert all(entry[2] for entry in lives)  # A lost life is terminal for learning (no bootstrap).
        assert env._lives[0] == 5  # The game over's reset started a new game.
    finally:
        env.terminate()


@pytest.mark.parametrize("spec, match", [
    ({"type": "openai-gym", "gym_env": "CartPole-v1"}, "must be an Atari spec"),
    ({"type": "grid-world", "game": "Pong"}, "runs Atari games only"),
    (dict(PONG, visualize=True), r"does not take \['visualize'\]"),
    (dict(PONG, max_pool_frames=False), "always max-pools"),
    ({"type": "atari", "game": "PongNoFrameskip-v4"}, "no such Atari game"),
    (dict(PONG, protocol="nature"), "unknown Atari protocol"),
])
def test_specs_envpool_cannot_run_are_refused(spec, match):
    with pytest.raises(RLGraphSpecError, match=match):
        EnvPoolVectorEnv(2, spec, seed=1)


def test_bad_indices_and_render_are_refused():
    env = EnvPoolVectorEnv(2, PONG, seed=1)
    try:
        env.reset_all()
        for index in (2, -1, True, "0"):
            with pytest.raises(RLGraphError, match="no such environment"):
                env.reset(index)
        with pytest.raises(RLGraphError, match="do not render"):
            env.render(0)
    finally:
        env.terminate()


def test_rlgraph_train_steps_pong_in_envpool(tmp_path):
    # (PyTorch only: the vectorization is the worker's, below any backend; both backends act through the
    # same `get_action`, tested elsewhere.)
    summary = train("configs/ppo_pong.json", backend="pytorch", seed=1, num_timesteps=64, progress=False,
                    overrides=["training_spec.vectorization=envpool", "training_spec.num_environments=2",
                               "training_spec.evaluation_interval=0", "training_spec.log_interval=32"])
    assert summary["timesteps"] >= 64
