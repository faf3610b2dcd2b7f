"""`GridWorld`: small deterministic grid worlds with walls, holes, fire and goals."""
from __future__ import annotations

from collections import deque
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np

from rlgraph.environments.environment import Environment
from rlgraph.environments.grid_world_maps import FIELD_TYPES, MAPS
from rlgraph.spaces import BoolBox, Dict, IntBox, Space
from rlgraph.utils.rlgraph_errors import RLGraphError

# Rewards for entering a field; "rich" adds STEP_PENALTY to every step.
FIELD_REWARDS = {"G": 1.0, "H": -1.0, "F": -0.5}
STEP_PENALTY = -0.1
REWARD_FUNCTIONS = ("sparse", "rich")
ACTION_TYPES = ("udlr", "ftj", "ftjb")
# What `save_mode` turns holes into: walls (True or "wall") or fire ("fire").
SAVE_MODES = {"wall": "W", "fire": "F"}
STATE_REPRESENTATIONS = ("discr", "xy", "xy+orientation", "camera")
# Camera channels (one-hot per cell): the agent, then one channel per field type.
CAMERA_CHANNELS = ("agent", "W", "H", "F", "G")
# (row, column) deltas of the actions 0 up, 1 right, 2 down, 3 left (also the "ftj" headings).
MOVES = ((-1, 0), (0, 1), (1, 0), (0, -1))
FTJ_KEYS = ("forward", "turn", "jump")
# The agent in a text rendering of an "ftj" world shows its heading (up, right, down, left).
_HEADING_SYMBOLS = "^>v<"
_COLORS = {" ": (255, 255, 255), "S": (220, 220, 220), "W": (60, 60, 60), "H": (20, 20, 120),
           "F": (230, 60, 30), "G": (40, 180, 60)}
_AGENT_COLOR = (250, 200, 0)


class GridWorld(Environment):
    """A grid world in which the agent moves up, right, down or left (or forward, turns and jumps);
    transitions are deterministic.

    Fields: 'S' start, ' ' free, 'W' wall (blocks, like the border), 'H' hole (ends the episode;
    a wall or fire in `save_mode`), 'F' fire (a negative reward, the episode goes on), 'G' goal
    (ends the episode). Positions are (x, y) = (row, column), (0, 0) the upper left corner; the
    discrete position is row-major, ``x * num_columns + y``.

    Actions ("action_type"):
        "udlr": IntBox(4): 0 up, 1 right, 2 down, 3 left.
        "ftj": Dict(forward=IntBox(3), turn=IntBox(3), jump=IntBox(2)); the agent has a heading
            (0 up, 1 right, 2 down, 3 left; up after a reset). A step first turns (turn 0 left,
            1 not, 2 right), then moves one field (forward 0 backwards, 1 not, 2 forwards), then,
            with jump 1 and unless the move ended on a hole or goal, moves two fields along the
            heading. The jumped-over field has no effect (a hole, fire or goal there is passed);
            walls and the border block each one-field move (the agent stays where it was blocked).
            Only the field where the step ends gives reward and termination. Also accepted: a
            dict missing some keys (turn 1, forward 1, jump 0 then) and one int in [0, 18),
            ``turn * 6 + forward * 2 + jump``.
        "ftjb": as "ftj" with jump=BoolBox().

    Rewards for entering a field: goal +1.0, hole -1.0, fire -0.5, anything else 0.0 ("sparse");
    "rich" adds -0.1 to every step (so reaching the goal in n steps returns 1.0 - 0.1 * n).

    States ("state_representation"):
        "discr": the discrete position (a Python int), IntBox(num_cells).
        "xy": [x, y], IntBox with high [num_rows, num_columns].
        "xy+orientation": [x, y, o] with o the last action ("udlr"), or the heading ("ftj"); 0 after
            a reset; high [..., 4]. ("discr", "xy" and "camera" do not show the heading.)
        "camera": uint8 one-hot image (num_rows, num_columns, 5) with the channels agent, wall, hole,
            fire, goal.

    Args:
        world: A map name (see `MAPS`: "2x2", "4x4", "8x8", "8x16", "16x16", "chain", "long-chain",
            "4-room") or a list of equally long row strings made of the field letters (exactly one 'S').
        save_mode: False (holes stay), True or "wall" (holes become walls), "fire" (holes become
            fire: they cost but do not end the episode, as in the original RLgraph's code).
        reward_function: "sparse" or "rich".
        state_representation: "discr", "xy", "xy+orientation" or "camera".
        max_episode_steps: Optional time limit; reaching it gives info["truncated"] = True.
        seed: Seed for random starting positions (`reset(randomize=True)`).
        action_type: "udlr", "ftj" or "ftjb" (see above).

    >>> env = GridWorld("4x4")
    >>> env.reset(), env.step(1)[:3]
    (0, (1, 0.0, False))
    """

    MAPS = MAPS

    def __init__(self, world: Union[str, Sequence[str]] = "4x4", save_mode: Union[bool, str] = False,
                 reward_function: str = "sparse", state_representation: str = "discr",
                 max_episode_steps: Optional[int] = None, seed: Optional[int] = None, action_type: str = "udlr"):
        self.world = self._parse_world(world)
        self.save_mode = self._save_mode(save_mode)
        if self.save_mode:
            self.world[self.world == "H"] = SAVE_MODES[self.save_mode]
        self.n_row, self.n_col = self.world.shape
        self.reward_function = self._choose(reward_function, REWARD_FUNCTIONS, "reward_function")
        self.state_representation = self._choose(state_representation, STATE_REPRESENTATIONS, "state_representation")
        self.action_type = self._choose(action_type, ACTION_TYPES, "action_type")
        if max_episode_steps is not None and (not isinstance(max_episode_steps, (int, np.integer))
                                              or isinstance(max_episode_steps, bool) or max_episode_steps < 1):
            raise RLGraphError("invalid time limit", where="GridWorld(max_episode_steps)",
                               expected="an int >= 1 or None", received=repr(max_episode_steps))
        self.max_episode_steps = max_episode_steps
        self.start_pos = tuple(int(v) for v in np.argwhere(self.world == "S")[0])
        super().__init__(self._state_space(), self._action_space(), seed=seed)
        self._goal_distances = self._compute_goal_distances()
        self._x, self._y = self.start_pos
        self.orientation = 0
        self._steps = 0

    # --- Construction --------------------------------------------------------------------------
    @staticmethod
    def _parse_world(world: Union[str, Sequence[str]]) -> np.ndarray:
        if isinstance(world, str):
            if world not in MAPS:
                raise RLGraphError("unknown map", where="GridWorld(world)",
                                   expected="one of " + ", ".join(MAPS) + " or a list of row strings",
                                   received=repr(world))
            world = MAPS[world]
        rows = list(world) if isinstance(world, (list, tuple)) else []
        ok = rows and all(isinstance(r, str) and r and len(r) == len(rows[0]) for r in rows)
        ok = ok and set("".join(rows)) <= set(FIELD_TYPES) and "".join(rows).count("S") == 1
        if not ok:
            raise RLGraphError("invalid map", where="GridWorld(world)",
                               expected=f"equally long, non-empty row strings of the letters {FIELD_TYPES!r} "
                                        "with exactly one 'S'", received=repr(world))
        return np.array([list(row) for row in rows])

    @staticmethod
    def _save_mode(save_mode: Union[bool, str]) -> Union[bool, str]:
        """False, "wall" or "fire"."""
        if save_mode is True:
            return "wall"
        if save_mode is False or save_mode is None:
            return False
        if isinstance(save_mode, str) and save_mode in SAVE_MODES:
            return save_mode
        raise RLGraphError("unknown save mode", where="GridWorld(save_mode)",
                           expected='False, True, "wall" or "fire"', received=repr(save_mode))

    @staticmethod
    def _choose(value: str, options: Tuple[str, ...], name: str) -> str:
        if not isinstance(value, str) or value not in options:
            raise RLGraphError(f"unknown {name.replace('_', ' ')}", where=f"GridWorld({name})",
                               expected="one of " + ", ".join(repr(o) for o in options), received=repr(value))
        return value

    def _state_space(self) -> Space:
        if self.state_representation == "discr":
            return IntBox(self.n_row * self.n_col)
        if self.state_representation == "xy":
            return IntBox(0, np.array([self.n_row, self.n_col]))
        if self.state_representation == "xy+orientation":
            return IntBox(0, np.array([self.n_row, self.n_col, 4]))
        return IntBox(0, 2, shape=(self.n_row, self.n_col, len(CAMERA_CHANNELS)), dtype="uint8")

    def _action_space(self) -> Space:
        if self.action_type == "udlr":
            return IntBox(4)
        jump = BoolBox() if self.action_type == "ftjb" else IntBox(2)
        return Dict(forward=IntBox(3), turn=IntBox(3), jump=jump)

    def _compute_goal_distances(self) -> np.ndarray:
        """Shortest number of "udlr" steps from each cell to the nearest goal (-1: unreachable); holes block."""
        dist = np.full(self.world.shape, -1, dtype=np.int64)
        queue = deque()
        for x, y in np.argwhere(self.world == "G"):
            dist[x, y] = 0
            queue.append((int(x), int(y)))
        while queue:
            x, y = queue.popleft()
            for dx, dy in MOVES:
                nx, ny = x + dx, y + dy
                if 0 <= nx < self.n_row and 0 <= ny < self.n_col and dist[nx, ny] < 0 \
                        and self.world[nx, ny] not in "WHG":
                    dist[nx, ny] = dist[x, y] + 1
                    queue.append((nx, ny))
        return dist

    # --- Positions -----------------------------------------------------------------------------
    @property
    def x(self) -> int:
        """The agent's row (0 = top)."""
        return self._x

    @property
    def y(self) -> int:
        """The agent's column (0 = left)."""
        return self._y

    @property
    def num_cells(self) -> int:
        return self.n_row * self.n_col

    def get_discrete_pos(self, x: int, y: int) -> int:
        """The row-major index of (x, y): rows are walked first, ``x * num_columns + y``.

        Args:
            x: The row.
            y: The column.

        Returns:
            The discrete position.
        """
        return int(x) * self.n_col + int(y)

    def _xy(self, discrete_pos: Any) -> Tuple[int, int]:
        pos = int(np.asarray(discrete_pos))
        if not 0 <= pos < self.num_cells:
            raise RLGraphError("position outside the grid", where="GridWorld(discrete_pos)",
                               expected=f"an int in [0, {self.num_cells})", received=repr(discrete_pos))
        return divmod(pos, self.n_col)

    def _move(self, x: int, y: int, action: int) -> Tuple[int, int]:
        dx, dy = MOVES[action]
        nx, ny = x + dx, y + dy
        if 0 <= nx < self.n_row and 0 <= ny < self.n_col and self.world[nx, ny] != "W":
            return nx, ny
        return x, y

    def get_possible_next_positions(self, discrete_pos: int, action: int) -> List[Tuple[int, float]]:
        """The next discrete positions with their probabilities (deterministic: one, with 1.0).

        Args:
            discrete_pos: The position to act from.
            action: 0 up, 1 right, 2 down, 3 left.

        Returns:
            [(next_discrete_pos, 1.0)].
        """
        x, y = self._xy(discrete_pos)
        return [(self.get_discrete_pos(*self._move(x, y, self._check_action(action))), 1.0)]

    def get_dist_to_goal(self) -> Optional[int]:
        """"udlr" steps on a shortest path from the agent to the nearest goal (avoiding holes, without
        jumps); None if unreachable."""
        dist = int(self._goal_distances[self._x, self._y])
        return None if dist < 0 else dist

    # --- Environment API -----------------------------------------------------------------------
    def reset(self, randomize: bool = False) -> Any:
        """Puts the agent on the start field (or, if `randomize`, on a random free, start or fire field).

        Returns:
            The state.
        """
        if randomize:
            cells = np.argwhere(np.isin(self.world, [" ", "S", "F"]))
            self._x, self._y = (int(v) for v in cells[self.rng.integers(len(cells))])
        else:
            self._x, self._y = self.start_pos
        self.orientation = 0
        self._steps = 0
        return self.refresh_state()

    def _check_action(self, actions: Any) -> int:
        action = np.asarray(actions)
        if action.shape != () or action.dtype.kind not in "iu" or not 0 <= int(action) < 4:
            raise RLGraphError("invalid action", where="GridWorld.step(actions)",
                               expected="an int in 0..3 (up, right, down, left)", received=repr(actions))
        return int(action)

    def _check_ftj_action(self, actions: Any) -> Tuple[int, int, bool]:
        """(turn, forward, jump) of an "ftj"/"ftjb" action: a dict or one int in [0, 18)."""
        expected = ("a dict with 'forward' (0 back, 1 stay, 2 forward), 'turn' (0 left, 1 none, 2 right) "
                    "and 'jump' (0/1 or a bool), or one int in 0..17 = turn * 6 + forward * 2 + jump")
        if isinstance(actions, dict):
            unknown = sorted(set(map(str, actions)) - set(FTJ_KEYS))
            if unknown:
                raise RLGraphError(f"unknown action key(s) {unknown}", where="GridWorld.step(actions)",
                                   expected=expected, received=repr(actions))
            values = [np.asarray(actions.get(key, default)) for key, default in (("turn", 1), ("forward", 1),
                                                                                   ("jump", 0))]
        else:
            code = np.asarray(actions)
            if code.shape not in ((), (1,)) or code.dtype.kind not in "iu" or not 0 <= int(code.reshape(())) < 18:
                raise RLGraphError("invalid action", where="GridWorld.step(actions)", expected=expected,
                                   received=repr(actions))
            code = int(code.reshape(()))
            values = [np.asarray(code // 6), np.asarray(code // 2 % 3), np.asarray(code % 2)]
        ok = all(v.shape == () for v in values) and all(v.dtype.kind in "iu" and 0 <= int(v) < 3 for v in values[:2])
        ok = ok and values[2].dtype.kind in "iub" and int(values[2]) in (0, 1)
        if not ok:
            raise RLGraphError("invalid action", where="GridWorld.step(actions)", expected=expected,
                               received=repr(actions))
        return int(values[0]), int(values[1]), bool(values[2])

    def _move_ftj(self, turn: int, forward: int, jump: bool) -> None:
        self.orientation = (self.orientation + turn - 1) % 4
        if forward != 1:
            direction = self.orientation if forward == 2 else (self.orientation + 2) % 4
            self._x, self._y = self._move(self._x, self._y, direction)
        if jump and self.world[self._x, self._y] not in "HG":
            # Two one-field moves; only the landing field counts (`step` reads it).
            for _ in range(2):
                self._x, self._y = self._move(self._x, self._y, self.orientation)

    def step(self, actions: Any, set_discrete_pos: Optional[int] = None) -> tuple:
        """Moves the agent; walls and the border block (the agent stays).

        Args:
            actions: "udlr": 0 up, 1 right, 2 down, 3 left. "ftj"/"ftjb": a dict with "forward",
                "turn" and "jump" (see the class docstring).
            set_discrete_pos: Optional position to put the agent on before acting.

        Returns:
            (state, reward, terminal, info); info holds "terminated", "truncated" and the entered "field".
        """
        if self.action_type == "udlr":
            action = self._check_action(actions)
        else:
            turn, forward, jump = self._check_ftj_action(actions)
        if set_discrete_pos is not None:
            self._x, self._y = self._xy(set_discrete_pos)
        if self.action_type == "udlr":
            self._x, self._y = self._move(self._x, self._y, action)
            self.orientation = action
        else:
            self._move_ftj(turn, forward, jump)
        self._steps += 1
        field = str(self.world[self._x, self._y])
        reward = FIELD_REWARDS.get(field, 0.0) + (STEP_PENALTY if self.reward_function == "rich" else 0.0)
        terminated = field in ("H", "G")
        truncated = self.max_episode_steps is not None and self._steps >= self.max_episode_steps
        info = {"terminated": terminated, "truncated": bool(truncated), "field": field}
        return self.refresh_state(), float(reward), bool(terminated or truncated), info

    def refresh_state(self) -> Any:
        """The state of the current position in the chosen representation."""
        if self.state_representation == "discr":
            return self.get_discrete_pos(self._x, self._y)
        if self.state_representation == "xy":
            return np.array([self._x, self._y], dtype=np.int32)
        if self.state_representation == "xy+orientation":
            return np.array([self._x, self._y, self.orientation], dtype=np.int32)
        camera = np.zeros((self.n_row, self.n_col, len(CAMERA_CHANNELS)), dtype=np.uint8)
        camera[self._x, self._y, 0] = 1
        for channel, field in enumerate(CAMERA_CHANNELS[1:], start=1):
            camera[..., channel] = self.world == field
        return camera

    def render(self, mode: str = "text", cell_size: int = 8) -> Any:
        """Draws the grid with the agent as 'X' (in "ftj" worlds its heading: '^', '>', 'v' or '<').

        Args:
            mode: "text" (returns the rows joined by newlines), "human" (prints and returns them)
                or "rgb_array" (returns a uint8 image (rows * cell_size, columns * cell_size, 3)).
            cell_size: Pixels per cell for "rgb_array".
        """
        if mode == "rgb_array":
            image = np.array([[_COLORS[f] for f in row] for row in self.world], dtype=np.uint8)
            image[self._x, self._y] = _AGENT_COLOR
            return np.repeat(np.repeat(image, cell_size, axis=0), cell_size, axis=1)
        if mode not in ("text", "human"):
            raise RLGraphError("unknown render mode", where="GridWorld.render(mode)",
                               expected="'text', 'human' or 'rgb_array'", received=repr(mode))
        rows = self.world.copy()
        rows[self._x, self._y] = "X" if self.action_type == "udlr" else _HEADING_SYMBOLS[self.orientation]
        text = "\n".join("".join(row) for row in rows)
        if mode == "human":
            print(text)
        return text

    def __str__(self) -> str:
        actions = "" if self.action_type == "udlr" else f", actions={self.action_type!r}"
        return f"GridWorld({self.n_row}x{self.n_col}, state={self.state_representation!r}{actions})"
