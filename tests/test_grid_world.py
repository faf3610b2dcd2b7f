"""GridWorld: maps, worked trajectories with hand-computed returns, walls, holes, fire, state representations."""
import re

import numpy as np
import pytest

from rlgraph.environments import Environment, GridWorld
from rlgraph.environments.grid_world import MAPS
from rlgraph.spaces import IntBox
from rlgraph.utils.rlgraph_errors import RLGraphError

UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3

# The maps as the reference lists them (runs of blanks collapsed to one).
REFERENCE_ROWS = {
    "2x2": ["SH", " G"], "4x4": ["S ", " H H", " H", "H G"],
    "8x8": ["S ", " ", " H ", " H ", " H ", " HH H ", " H H H ", " H G"],
    "8x16": ["S H ", " H HH ", " FF WWWWWWW", " H W ", " FF W H ", " W ", " FF W ", " H H G"],
    "16x16": ["S H ", " HH ", " FF W W", " W ", "WWW FF H ", " W ", " FFFF W ", " H H ", " H ", " H HH ",
              "WWWW WWWWWWW", " H W W ", " FF W H W ", "WWWW WW W ", " FF W ", " H H G"],
    "chain": ["G S F G"],
}


def run(env, actions):
    """Steps `actions`; returns the states, the return and the last terminal flag."""
    states, total, terminal = [], 0.0, False
    for action in actions:
        state, reward, terminal, _ = env.step(action)
        states.append(state)
        total += reward
    return states, total, terminal


@pytest.mark.parametrize("name", sorted(MAPS))
def test_maps_have_the_named_size_keep_the_reference_symbols_and_a_reachable_goal(name):
    env = GridWorld(name)
    if "x" in name:
        assert (env.n_row, env.n_col) == tuple(int(n) for n in name.split("x"))
    assert [re.sub(" +", " ", row) for row in MAPS[name]] == REFERENCE_ROWS[name]
    env.reset()
    assert env.get_dist_to_goal() is not None and env.get_dist_to_goal() > 0


def test_4x4_optimal_path_sparse_and_rich_returns():
    env = GridWorld("4x4")
    assert env.reset() == 0 and env.get_dist_to_goal() == 6
    states, total, terminal = run(env, [RIGHT, RIGHT, DOWN, DOWN, DOWN, RIGHT])
    assert states == [1, 2, 6, 10, 14, 15] and total == 1.0 and terminal
    rich = GridWorld("4x4", reward_function="rich")
    rich.reset()
    _, total, terminal = run(rich, [RIGHT, RIGHT, DOWN, DOWN, DOWN, RIGHT])
    assert total == pytest.approx(1.0 - 6 * 0.1) and terminal


def test_borders_and_walls_block():
    env = GridWorld(["SW", "  "], reward_function="rich")
    env.reset()
    for action in (UP, LEFT, RIGHT):
        state, reward, terminal, info = env.step(action)
        assert (state, reward, terminal) == (0, pytest.approx(-0.1), False)
    assert env.step(DOWN)[0] == 2 and env.step(RIGHT)[0] == 3 and env.step(UP)[0] == 3
    assert env.get_possible_next_positions(0, RIGHT) == [(0, 1.0)]
    assert env.get_possible_next_positions(0, DOWN) == [(2, 1.0)]


def test_hole_terminates_and_save_mode_turns_it_into_a_wall():
    env = GridWorld("4x4")
    env.reset()
    assert env.step(DOWN)[:3] == (4, 0.0, False)
    state, reward, terminal, info = env.step(RIGHT)
    assert (state, reward, terminal) == (5, -1.0, True)
    assert info == {"terminated": True, "truncated": False, "field": "H"}
    save = GridWorld("4x4", save_mode=True)
    save.reset()
    save.step(DOWN)
    assert save.step(RIGHT)[:3] == (4, 0.0, False)


def test_fire_costs_but_does_not_terminate():
    env = GridWorld(["SFG"])
    env.reset()
    assert env.step(RIGHT)[:3] == (1, -0.5, False)
    assert env.step(RIGHT)[:3] == (2, 1.0, True)


def test_chain_world_both_goals():
    env = Environment.from_spec({"type": "grid-world", "world": "chain"})
    assert env.reset() == 4 and env.get_dist_to_goal() == 4
    states, total, terminal = run(env, [LEFT] * 4)
    assert states == [3, 2, 1, 0] and total == 1.0 and terminal
    env.reset()
    states, total, terminal = run(env, [RIGHT] * 5)  # Through the fire at column 7.
    assert states == [5, 6, 7, 8, 9] and total == pytest.approx(0.5) and terminal


def test_state_representations():
    xy = GridWorld("4x4", state_representation="xy")
    assert xy.state_space == IntBox(0, np.array([4, 4]))
    np.testing.assert_array_equal(xy.reset(), [0, 0])
    state = xy.step(DOWN)[0]
    np.testing.assert_array_equal(state, [1, 0])
    assert xy.state_space.contains(state) and (xy.x, xy.y) == (1, 0)
    orient = GridWorld("4x4", state_representation="xy+orientation")
    orient.reset()
    np.testing.assert_array_equal(orient.step(RIGHT)[0], [0, 1, RIGHT])
    np.testing.assert_array_equal(orient.step(RIGHT)[0], [0, 2, RIGHT])
    camera = GridWorld("4x4", state_representation="camera")
    image = camera.reset()
    assert image.shape == (4, 4, 5) and image.dtype == np.uint8 and camera.state_space.contains(image)
    assert image[0, 0, 0] == 1 and image[..., 0].sum() == 1  # agent
    assert image[..., 1].sum() == 0 and image[..., 2].sum() == 4 and image[3, 3, 4] == 1  # walls, holes, goal
    assert camera.step(RIGHT)[0][0, 1, 0] == 1


def test_set_discrete_pos_and_discrete_index():
    env = GridWorld("4x4")
    env.reset()
    assert env.get_discrete_pos(3, 2) == 14
    assert env.step(RIGHT, set_discrete_pos=14)[:3] == (15, 1.0, True)
    with pytest.raises(RLGraphError, match="outside the grid"):
        env.step(RIGHT, set_discrete_pos=16)


def test_random_starts_are_seeded_and_on_allowed_fields():
    def starts(seed):
        env = GridWorld("8x16", seed=seed)
        return [env.reset(randomize=True) for _ in range(20)]

    first = starts(3)
    assert first == starts(3) and len(set(first)) > 5
    flat = "".join(MAPS["8x16"])
    assert all(flat[pos] in " SF" for pos in first)


def test_time_limit_truncates():
    env = GridWorld("4x4", max_episode_steps=2)
    env.reset()
    assert env.step(UP)[2] is False
    _, _, terminal, info = env.step(UP)
    assert terminal and info["truncated"] and not info["terminated"]


def test_render_text_and_rgb():
    env = GridWorld("4x4")
    env.reset()
    env.step(RIGHT)
    assert env.render() == "SX  \n H H\n   H\nH  G"
    image = env.render("rgb_array")
    assert image.shape == (32, 32, 3) and image.dtype == np.uint8
    assert image[0, 8].tolist() == [250, 200, 0] and image[0, 0].tolist() == [220, 220, 220]


def test_invalid_arguments():
    with pytest.raises(RLGraphError, match="unknown map"):
        GridWorld("5x5")
    with pytest.raises(RLGraphError, match="invalid map"):
        GridWorld(["SS", "  "])
    with pytest.raises(RLGraphError, match="unknown reward function"):
        GridWorld(reward_function="dense")
    with pytest.raises(RLGraphError, match="invalid action"):
        GridWorld().step(4)
