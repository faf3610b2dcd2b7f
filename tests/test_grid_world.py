"""GridWorld: maps, worked trajectories with hand-computed returns, walls, holes, fire, state representations,
the forward/turn/jump actions, save modes, the step contract and seeding."""
import re

import numpy as np
import pytest

from rlgraph.environments import Environment, GridWorld
from rlgraph.environments.grid_world import MAPS
from rlgraph.spaces import BoolBox, Dict, IntBox
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
    # Not in the reference's MAPS listing; these two are the original RLgraph's maps.
    "long-chain": [" S G"],
    "4-room": [" W ", " H W ", " G ", " W ", " W ", "W WWWW ", " WWW WW", " W F ", " S W ", " ", " W "],
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


# --- The long chain and the four rooms ----------------------------------------------------------
def test_long_chain_start_goal_and_walking_back_and_forth():
    env = GridWorld("long-chain")
    assert (env.n_row, env.n_col) == (1, 68)
    assert env.reset() == 33 and env.get_dist_to_goal() == 34
    assert env.step(UP)[:3] == (33, 0.0, False) and env.step(DOWN)[:3] == (33, 0.0, False)
    for x in range(33, 40):  # Right, left, right: one field further each round.
        assert env.step(RIGHT)[:3] == (x + 1, 0.0, False)
        assert env.step(LEFT)[:3] == (x, 0.0, False)
        assert env.step(RIGHT)[:3] == (x + 1, 0.0, False)
    env.reset()
    states, total, terminal = run(env, [LEFT] * 34)  # The left end is no goal: the agent stays at 0.
    assert states[-2:] == [0, 0] and total == 0.0 and not terminal
    rich = GridWorld("long-chain", reward_function="rich")
    rich.reset()
    states, total, terminal = run(rich, [RIGHT] * 34)
    assert states[-1] == 67 and terminal and total == pytest.approx(1.0 - 34 * 0.1)


def test_four_rooms_through_the_upper_left_room():
    env = GridWorld("4-room")
    assert (env.n_row, env.n_col) == (11, 11)
    assert env.reset() == 8 * 11 + 2 and env.get_dist_to_goal() == 14
    # Up to the door in row 5 (column 1), up into row 2, then right through the door in column 5 to the goal.
    states, total, terminal = run(env, [UP, UP, LEFT, UP, UP, UP, UP] + [RIGHT] * 7)
    assert states == [79, 68, 67, 56, 45, 34, 23, 24, 25, 26, 27, 28, 29, 30]
    assert total == 1.0 and terminal and env.get_dist_to_goal() == 0


def test_four_rooms_walls_hole_and_fire():
    env = GridWorld("4-room")
    env.reset()
    assert run(env, [UP])[0] == [79]
    assert run(env, [RIGHT, RIGHT, RIGHT]) == ([80, 81, 81], 0.0, False)  # (7, 5) is a wall.
    env.reset()
    # Down, right through the lower door (9, 5), up into the lower right room, right onto the fire (7, 7).
    states, total, terminal = run(env, [DOWN, RIGHT, RIGHT, RIGHT, RIGHT, UP, UP, RIGHT])
    assert states == [101, 102, 103, 104, 105, 94, 83, 84] and total == -0.5 and not terminal
    env.reset()
    states, total, terminal = run(env, [UP, UP, LEFT, UP, UP, UP, UP, UP])  # Into the hole (1, 1).
    assert states[-1] == 12 and total == -1.0 and terminal


def test_save_mode_fire_turns_holes_into_fire_and_unknown_modes_are_refused():
    env = GridWorld("4x4", save_mode="fire")
    env.reset()
    env.step(DOWN)
    state, reward, terminal, info = env.step(RIGHT)
    assert (state, reward, terminal, info["field"]) == (5, -0.5, False, "F")
    assert GridWorld("4x4", save_mode="wall").render() == GridWorld("4x4", save_mode=True).render() == \
        "X   \n W W\n   W\nW  G"
    rooms = GridWorld("4-room", save_mode="fire", reward_function="rich")
    rooms.reset()
    _, total, terminal = run(rooms, [UP, UP, LEFT, UP, UP, UP, UP, UP])
    assert total == pytest.approx(-0.5 - 8 * 0.1) and not terminal
    with pytest.raises(RLGraphError, match="unknown save mode"):
        GridWorld(save_mode="lava")


# --- Forward, turn, jump --------------------------------------------------------------------------
def ftj(turn=1, forward=1, jump=0):
    return {"turn": turn, "forward": forward, "jump": jump}


def test_ftj_action_space_and_the_heading_in_the_state():
    env = GridWorld("4x4", action_type="ftj", state_representation="xy+orientation")
    assert env.action_space == Dict(forward=IntBox(3), turn=IntBox(3), jump=IntBox(2))
    assert GridWorld(action_type="ftjb").action_space == Dict(forward=IntBox(3), turn=IntBox(3), jump=BoolBox())
    np.testing.assert_array_equal(env.reset(), [0, 0, 0])  # Facing up.
    headings = [int(env.step(ftj(turn=2))[0][2]) for _ in range(5)]
    assert headings == [1, 2, 3, 0, 1]
    assert [int(env.step(ftj(turn=0))[0][2]) for _ in range(2)] == [0, 3]
    assert env.render() == "<   \n H H\n   H\nH  G"


def test_ftj_turn_and_walk_into_a_hole():
    env = GridWorld("4x4", action_type="ftj", state_representation="xy+orientation")
    env.reset()
    steps = [env.step(a) for a in (ftj(turn=2, forward=2), ftj(turn=2), ftj(forward=2))]
    assert [s[0].tolist() for s in steps] == [[0, 1, 1], [0, 1, 2], [1, 1, 2]]
    assert [(s[1], s[2]) for s in steps] == [(0.0, False), (0.0, False), (-1.0, True)]
    assert steps[-1][3] == {"terminated": True, "truncated": False, "field": "H"}


def test_ftj_jumps_and_backward_steps_reach_the_goal():
    env = GridWorld("4x4", action_type="ftj", state_representation="xy+orientation", reward_function="rich")
    env.reset()
    actions = [ftj(turn=2),                       # face right
               ftj(jump=1),                       # (0, 0) -> (0, 2)
               ftj(turn=2, forward=2),            # face down, (1, 2)
               ftj(forward=2, jump=1),            # (2, 2), jump: (3, 2), then the border stops it
               ftj(turn=2, forward=0)]            # face left, step backwards onto the goal (3, 3)
    steps = [env.step(a) for a in actions]
    assert [s[0].tolist() for s in steps] == [[0, 0, 1], [0, 2, 1], [1, 2, 2], [3, 2, 2], [3, 3, 3]]
    assert [s[2] for s in steps] == [False] * 4 + [True]
    assert sum(s[1] for s in steps) == pytest.approx(1.0 - 5 * 0.1)


def test_ftj_border_blocks_and_a_jump_passes_a_hole():
    env = GridWorld("4x4", action_type="ftj", state_representation="xy+orientation")
    env.reset()
    assert env.step(ftj(forward=0))[0].tolist() == [1, 0, 0]  # Backwards while facing up: down.
    assert env.step(ftj(turn=0, forward=2))[0].tolist() == [1, 0, 3]  # Facing left at the border.
    env.step(ftj(turn=2))
    env.step(ftj(turn=2))
    state, reward, terminal, info = env.step(ftj(jump=1))  # Over the hole (1, 1) onto (1, 2).
    assert (state.tolist(), reward, terminal, info["field"]) == ([1, 2, 1], 0.0, False, " ")


def test_ftj_jump_edge_cases():
    # A wall behind the jumped-over hole stops the jump in the hole.
    env = GridWorld(["SHWG"], action_type="ftj")
    env.reset()
    assert env.step(ftj(turn=2, jump=1))[:3] == (1, -1.0, True)
    # A jump passes over the goal: only the landing field counts.
    env = GridWorld(["SG  "], action_type="ftj")
    env.reset()
    assert env.step(ftj(turn=2, jump=1))[:3] == (2, 0.0, False)
    # A wall right ahead blocks the jump altogether; fire is passed without cost.
    env = GridWorld(["SW", "F ", "  "], action_type="ftj", state_representation="xy+orientation")
    env.reset()
    assert env.step(ftj(turn=2, jump=1))[0].tolist() == [0, 0, 1]
    state, reward, _, _ = env.step(ftj(turn=2, jump=1))
    assert state.tolist() == [2, 0, 2] and reward == 0.0
    # A step that walks into a hole or onto the goal ends there; its jump is not taken.
    env = GridWorld(["SH  "], action_type="ftj")
    env.reset()
    assert env.step(ftj(turn=2, forward=2, jump=1))[:3] == (1, -1.0, True)


def test_ftj_int_codes_partial_dicts_bool_jumps_and_invalid_actions():
    env = GridWorld(["S   "], action_type="ftj", state_representation="xy+orientation")
    env.reset()
    assert env.step(17)[0].tolist() == [0, 3, 1]  # 17 = turn 2 * 6 + forward 2 * 2 + jump 1.
    assert env.step(np.array([8]))[0].tolist() == [0, 3, 1]  # 8: no turn, no move, no jump.
    assert env.step({"turn": np.int64(0)})[0].tolist() == [0, 3, 0]
    boolean = GridWorld(["S   "], action_type="ftjb")
    boolean.reset()
    assert boolean.step({"turn": 2, "forward": 1, "jump": np.bool_(True)})[0] == 2
    for bad, message in (({"run": 1}, "unknown action key"), (ftj(turn=3), "invalid action"),
                         (ftj(jump=2), "invalid action"), (18, "invalid action"), (1.0, "invalid action"),
                         (ftj(forward=np.array([1, 1])), "invalid action")):
        with pytest.raises(RLGraphError, match=message):
            env.step(bad)
    with pytest.raises(RLGraphError, match="unknown action type"):
        GridWorld(action_type="wasd")


# --- Contract and seeding -----------------------------------------------------------------------
@pytest.mark.parametrize("world, action_type, representation", [
    ("long-chain", "udlr", "discr"), ("4-room", "udlr", "camera"), ("4-room", "ftj", "xy+orientation"),
    ("4x4", "ftjb", "xy"), ("2x2", "ftj", "discr")])
def test_step_contract_on_random_rollouts(world, action_type, representation):
    env = Environment.from_spec({"type": "grid-world", "world": world, "action_type": action_type,
                                 "state_representation": representation, "max_episode_steps": 30, "seed": 4})
    state = env.reset()
    assert env.state_space.contains(state)
    episodes = 0
    for _ in range(200):
        action = env.action_space.sample()
        assert env.action_space.contains(action)
        state, reward, terminal, info = env.step(action)
        assert env.state_space.contains(state) and type(reward) is float and type(terminal) is bool
        assert set(info) == {"terminated", "truncated", "field"} and terminal == (info["terminated"] or
                                                                                 info["truncated"])
        if representation == "discr":
            assert type(state) is int
        if terminal:
            episodes += 1
            state = env.reset()
    assert episodes >= 200 // 30


def test_seeded_rollouts_repeat_and_reseeding_repeats_them():
    def rollout(env):
        out = [env.reset(randomize=True)]
        for _ in range(60):
            state, reward, terminal, _ = env.step(env.action_space.sample())
            out += [state, reward]
            if terminal:
                out.append(env.reset(randomize=True))
        return out

    first = GridWorld("4-room", action_type="ftj", seed=9)
    trajectory = rollout(first)
    assert rollout(GridWorld("4-room", action_type="ftj", seed=9)) == trajectory
    assert first.seed(9) == 9 and rollout(first) == trajectory
    assert rollout(GridWorld("4-room", action_type="ftj", seed=10)) != trajectory
