"""Cheap checks of the data that enters an agent: observed transitions, imported records, losses.

`Agent.observe` hands each call's values to `DataChecks` before it touches a buffer or a
counter, so a call that is refused changes nothing. Per leaf of the (preprocessed) state space
and of the action space:

- the shape: the leaf's shape for one transition, [B] + shape for a batch of B;
- the dtype kind: IntBox leaves take integers, FloatBox leaves integers or floats, BoolBox
  leaves bools, TextBox leaves strings;
- IntBox actions: low <= a < high (what the Q-value gather of the loss indexes with);
- rewards: real numbers ([B] for a batch); terminals: bools (or 0/1);
- unless `execution_spec.nan_check` is "off": float states, next states and rewards are
  finite ("raise": `RLGraphNonFiniteError`; "warn": one log line per field, then go on), also
  after the cast to the dtype they are stored in (float32 for rewards and FloatBox states): a
  float64 1e39, or a python int too large for a float, would become inf there;
- `truncated`: one bool (or 0/1).

`loss` checks an update's loss, which comes back to python anyway.
"""
from __future__ import annotations

import logging
import math
from typing import Any, Dict, List, Optional

import numpy as np

from rlgraph.agents.observe_buffers import Transition
from rlgraph.spaces import BoolBox, ContainerSpace, FloatBox, IntBox, Space, TextBox
from rlgraph.utils.nest import flatten_op
from rlgraph.utils.rlgraph_errors import RLGraphNonFiniteError, RLGraphSpaceError

logger = logging.getLogger(__name__)

FIELDS = ("states", "actions", "rewards", "terminals", "next_states")  # The record's fields (records.py).
# `observe`'s argument of each field.
OBSERVE_ARGS = {"states": "preprocessed_states", "actions": "actions", "rewards": "rewards",
                "terminals": "terminals", "next_states": "next_states"}
_INT_SCALARS = frozenset({int, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64})
_REAL_SCALARS = (int, float, np.integer, np.floating)
F32_MAX = float(np.finfo(np.float32).max)  # Rewards are stored as float32 (records.py).
_NAN_HINT = ("check the environment (or its wrapper) for NaN/inf; execution_spec.nan_check \"warn\" logs such "
             "values and goes on, \"off\" skips the test.")


class _Leaf:
    """What a value of one primitive space is checked against (computed once per space)."""
    __slots__ = ("key", "space", "shape", "kinds", "low", "high", "scalar_bounds", "dtype", "float_max")

    def __init__(self, key: str, space: Space, check_range: bool):
        self.key, self.space, self.shape = key, space, tuple(space.shape)
        self.kinds = _kinds(space)
        # A float leaf is stored in its space's dtype: wider floats must fit it (1e39 is inf in float32).
        self.dtype = np.dtype(space.dtype) if isinstance(space, FloatBox) else None
        self.float_max = float(np.finfo(self.dtype).max) if self.dtype is not None else None
        self.low = self.high = None
        self.scalar_bounds = False
        if check_range and isinstance(space, IntBox):
            bounds = space.global_bounds
            if bounds is False:
                self.low, self.high = space.low, space.high
            elif space.num_categories:  # (0: an IntBox without bounds, any value of its dtype.)
                self.low, self.high, self.scalar_bounds = int(bounds[0]), int(bounds[1]), True


def _kinds(space: Space) -> str:
    """The numpy dtype kinds a value of `space` may have."""
    if isinstance(space, IntBox):
        return "iu"
    if isinstance(space, BoolBox):
        return "b"
    if isinstance(space, FloatBox):
        return "iuf"
    if isinstance(space, TextBox):
        return "US"
    return "biufUS"


def all_finite(array: np.ndarray) -> bool:
    """Whether every element of a float array is finite.

    For a few elements (a CartPole state: 4) the python sum of the elements decides first: it
    is finite only if every element is (a NaN makes it NaN, an inf makes it inf or NaN), and it
    takes ~0.25 us against ~2 us for `np.isfinite(x).all()`. Only a sum that is not finite (a
    NaN or inf, or an overflow of the total) and larger arrays go to the exact elementwise test.
    """
    if array.size <= 16:
        if math.isfinite(sum(array.tolist() if array.ndim == 1 else array.ravel().tolist())):
            return True
    return bool(np.isfinite(array).all())


def _first_index(mask: np.ndarray) -> tuple:
    return tuple(int(i) for i in np.argwhere(mask)[0])


class DataChecks:
    """The checks of one agent's data (see the module docstring).

    Args:
        state_space: The preprocessed state space (without batch rank).
        action_space: The action space (without batch rank).
        nan_check: "raise", "warn" or "off" (`execution_spec.nan_check`).
        owner: The agent's name (errors say "<owner>.observe(actions)").
    """

    def __init__(self, state_space: Space, action_space: Space, nan_check: str, owner: str):
        self.nan_check = nan_check
        self.finite = nan_check != "off"
        self.owner = owner
        self.spaces = {"states": state_space, "actions": action_space, "next_states": state_space}
        self.leaves = {field: self._leaves(space, field == "actions") for field, space in self.spaces.items()}
        self.containers = {field: isinstance(space, ContainerSpace) for field, space in self.spaces.items()}
        # Field -> (head, tail) of where a value came from; a container's leaf key goes in between.
        self.observe_where = {field: (f"{owner}.observe({arg}", ")") for field, arg in OBSERVE_ARGS.items()}
        self._warned = set()
        # `transition`'s fast path: a plain numeric state [n <= 16] (finite if the python sum of
        # its elements is, see `all_finite`) and one discrete action.
        state = None if self.containers["states"] else self.leaves["states"][0]
        action = None if self.containers["actions"] else self.leaves["actions"][0]
        # (Its state dtypes are those whose values fit the space's dtype: no float64 into float32.)
        self._fast = (state.shape, _fitting_dtypes(state), action.low, action.high) if (
            state is not None and state.kinds in ("iu", "iuf") and len(state.shape) == 1 and state.shape[0] <= 16
            and action is not None and action.scalar_bounds and action.shape == ()) else None

    @staticmethod
    def _leaves(space: Space, check_range: bool) -> List[_Leaf]:
        return [_Leaf(key, leaf, check_range) for key, leaf in space.flatten().items()]

    # --- Entry points ---------------------------------------------------------------------------
    def transition(self, states: Any, actions: Any, rewards: Any, terminals: Any, next_states: Any,
                   timestep: int) -> Transition:
        """Checks one transition (no batch rank), observed as step `timestep`.

        Returns:
            The transition to store: r_t as a float, d_t as a bool, and a (non-container) state
            or action that came as a list as an array.

        Raises:
            RLGraphSpaceError: A value that does not fit its space (the error names the argument).
            RLGraphNonFiniteError: A NaN or inf (with nan_check "raise").
        """
        fast = self._fast
        # The worker's per-step call (CartPole: two float32 [4] arrays, a numpy int action, a
        # bool) passes in one expression: ~1.9 us per call against ~2.7 us for the leaf-by-leaf
        # checks below (timeit; inside a DQN training loop ~7.8 against ~9.7 us). What does not
        # pass goes the long way, which tests the same and says what is wrong.
        if fast is not None and type(states) is np.ndarray and type(next_states) is np.ndarray and \
                states.shape == fast[0] and next_states.shape == fast[0] and states.dtype in fast[1] and \
                next_states.dtype in fast[1] and type(actions) in _INT_SCALARS and \
                fast[2] <= actions < fast[3] and (terminals is True or terminals is False) and \
                isinstance(rewards, _REAL_SCALARS) and -F32_MAX <= rewards <= F32_MAX:
            reward = float(rewards)
            # A sum is finite only if every term is (see `all_finite`).
            if not self.finite or math.isfinite(sum(states.tolist()) + sum(next_states.tolist()) + reward):
                return Transition(states, actions, reward, terminals, next_states)
        where = self.observe_where
        states = self._values("states", states, where["states"], None, timestep)
        next_states = self._values("next_states", next_states, where["next_states"], None, timestep)
        actions = self._values("actions", actions, where["actions"], None, timestep)
        terminal = self._terminal(terminals, where["terminals"])
        if type(rewards) is float or isinstance(rewards, _REAL_SCALARS):
            reward = _as_float(rewards)
        else:
            array = _array(rewards, where["rewards"], "a real number")
            if array.shape != () or array.dtype.kind not in "biuf":
                raise RLGraphSpaceError(FloatBox(), "rewards must be one real number for one transition",
                                        where=_name(where["rewards"]), expected="a float (or int)",
                                        received=f"shape {array.shape}, dtype {array.dtype}")
            reward = _as_float(array[()])
        if self.finite and not math.isfinite(reward):
            too_large = type(rewards) is int  # (A python int beyond a float's range, e.g. 10**400.)
            self._non_finite("rewards", where["rewards"], (
                "reward too large for a float" if too_large else f"non-finite reward {reward}")
                + f" at timestep {timestep}", f"an int of {len(str(abs(rewards)))} digits" if too_large else reward)
        elif self.finite and abs(reward) > F32_MAX:
            self._non_finite("rewards", where["rewards"], f"reward {reward} at timestep {timestep} overflows float32 "
                             "(rewards are stored as float32: it would be inf)", reward)
        return Transition(states, actions, reward, terminal, next_states)

    def batch(self, batch: Dict[str, Any], timestep: Optional[int] = None,
              where: Optional[Dict[str, tuple]] = None) -> Dict[str, Any]:
        """Checks a batch of transitions: a dict with the record's fields, each batched [B, ...].

        Args:
            batch: {"states", "actions", "rewards", "terminals", "next_states"}.
            timestep: The timestep of the first transition (observe), None for records.
            where: Field -> (head, tail) of where it came from (default: observe's arguments).

        Returns:
            The record to store: rewards [B] float32, terminals [B] bool, and (non-container)
            states and actions that came as lists as arrays.

        Raises:
            RLGraphSpaceError, RLGraphNonFiniteError: As `transition`.
        """
        where = where or self.observe_where
        rewards = _array(batch["rewards"], where["rewards"], "real numbers [B]")
        rewards = rewards.reshape(1) if rewards.ndim == 0 else rewards
        if rewards.ndim != 1 or rewards.dtype.kind not in "biuf":
            raise RLGraphSpaceError(FloatBox(), "rewards must be real numbers, one per transition",
                                    where=_name(where["rewards"]), expected="shape [B], a float (or int) dtype",
                                    received=f"shape {rewards.shape}, dtype {rewards.dtype}")
        count = len(rewards)
        terminals = _array(batch["terminals"], where["terminals"], "bools [B]")
        terminals = terminals.reshape(1) if terminals.ndim == 0 else terminals
        if terminals.shape != (count,):
            raise RLGraphSpaceError(BoolBox(), "terminals and rewards differ in length",
                                    where=_name(where["terminals"]), expected=f"shape ({count},) (one per reward)",
                                    received=f"shape {terminals.shape}")
        if terminals.dtype.kind != "b" and not _zeros_and_ones(terminals):
            raise _terminal_error(terminals, where["terminals"])
        record = {field: self._values(field, batch[field], where[field], count, timestep)
                  for field in ("states", "actions", "next_states")}
        if self.finite and rewards.dtype.kind == "f" and not all_finite(rewards):
            index = _first_index(~np.isfinite(rewards))[0]
            self._non_finite("rewards", where["rewards"], f"non-finite reward at index {index}"
                             + _at(timestep, index), rewards[index].item())
        elif self.finite and rewards.dtype.itemsize > 4 and count and np.abs(rewards).max() > F32_MAX:
            index = _first_index(np.abs(rewards) > F32_MAX)[0]
            self._non_finite("rewards", where["rewards"], f"reward at index {index} overflows float32 (rewards are "
                             "stored as float32: it would be inf)" + _at(timestep, index), rewards[index].item())
        return {"states": record["states"], "actions": record["actions"], "rewards": rewards.astype(np.float32),
                "terminals": terminals.astype(bool), "next_states": record["next_states"]}

    def loss(self, loss: Any, update: int, method: str) -> None:
        """Checks update number `update`'s loss (1 is the agent's first update); `method` names
        the agent method that ran the update ("update")."""
        if not self.finite:
            return
        if isinstance(loss, _REAL_SCALARS) or getattr(loss, "ndim", None) == 0:  # (PyTorch's: a 0-d array.)
            finite = math.isfinite(loss)
        else:
            finite = bool(np.isfinite(np.asarray(loss, dtype=np.float64)).all())
        if not finite:
            self._non_finite("loss", (f"{self.owner}.{method}", ""), f"update #{update} gave a non-finite loss", loss,
                             hint="this update's optimizer step has already been applied, so the weights may "
                                  "hold NaN now: restore a checkpoint (load_model). Causes: huge rewards or "
                                  "states, a learning rate too high (clip gradients: optimizer_spec "
                                  "clip_grad_norm). execution_spec.nan_check \"warn\" or \"off\" lets a run go on.")

    # --- Leaves ---------------------------------------------------------------------------------
    def _values(self, field: str, value: Any, where: tuple, batch: Optional[int], timestep: Optional[int]) -> Any:
        """Checks the value(s) of `field`; returns what to store (a plain leaf as an array)."""
        leaves = self.leaves[field]
        if not self.containers[field]:
            return self._leaf(leaves[0], value, field, where, "", batch, timestep)
        flat = flatten_op(value) if isinstance(value, (dict, tuple, list)) else None
        if flat is None or len(flat) != len(leaves) or any(leaf.key not in flat for leaf in leaves):
            raise RLGraphSpaceError(self.spaces[field], f"{field} do not have the structure of their space",
                                    where=_name(where), expected=f"leaves {[leaf.key for leaf in leaves]}",
                                    received=f"leaves {list(flat)}" if flat is not None else type(value).__name__)
        for leaf in leaves:
            self._leaf(leaf, flat[leaf.key], field, where, leaf.key, batch, timestep)
        return value

    def _leaf(self, leaf: _Leaf, value: Any, field: str, where: tuple, key: str, batch: Optional[int],
              timestep: Optional[int]) -> Any:
        if batch is None and leaf.scalar_bounds and type(value) in _INT_SCALARS and leaf.shape == ():
            # The per-step action of a discrete agent, without making an array of it.
            if not leaf.low <= value < leaf.high:
                raise _range_error(leaf, np.asarray(value), _name(where, key), batch, timestep)
            return value
        array = value if type(value) is np.ndarray else _array(value, where, str(leaf.space), key)
        shape = leaf.shape if batch is None else (batch,) + leaf.shape
        if array.shape != shape or array.dtype.kind not in leaf.kinds:
            raise _space_error(leaf, array, _name(where, key), batch)
        if leaf.low is not None and _out_of_range(leaf, array):
            raise _range_error(leaf, array, _name(where, key), batch, timestep)
        if self.finite and array.dtype.kind == "f":
            if not all_finite(array):
                index = _first_index(~np.isfinite(array))
                self._non_finite(field, where, f"non-finite value at index {index}"
                                 + _at(timestep, index[0] if batch is not None else 0), array[index].item(), key=key)
            elif leaf.float_max is not None and array.dtype.itemsize > leaf.dtype.itemsize and array.size and \
                    np.abs(array).max() > leaf.float_max:
                index = _first_index(np.abs(array) > leaf.float_max)
                self._non_finite(field, where, f"value at index {index} overflows {leaf.dtype.name} (the space's "
                                 f"dtype: it would be inf)" + _at(timestep, index[0] if batch is not None else 0),
                                 array[index].item(), key=key)
        return array

    def _terminal(self, terminals: Any, where: tuple) -> bool:
        if terminals is True or terminals is False or type(terminals) is np.bool_:
            return bool(terminals)
        array = _array(terminals, where, "a bool")
        if array.shape != () or (array.dtype.kind != "b" and not _zeros_and_ones(array)):
            raise _terminal_error(array, where)
        return bool(array)

    def truncated(self, truncated: Any) -> bool:
        """`observe`'s `truncated` argument as a bool: one bool (or 0/1) for the call, whether the
        episode ended after its (last) transition without a terminal state."""
        if truncated is True or truncated is False:
            return truncated
        array = _array(truncated, (f"{self.owner}.observe(truncated", ")"), "a bool")
        if array.shape != () or (array.dtype.kind != "b" and not _zeros_and_ones(array)):
            raise RLGraphSpaceError(BoolBox(), "truncated must be one bool (or 0/1) per observe call",
                                    where=f"{self.owner}.observe(truncated)",
                                    expected="a bool: whether the episode ended after the (last) transition",
                                    received=f"shape {array.shape}, dtype {array.dtype}",
                                    hint="observe one environment's transitions per call (see env_id).")
        return bool(array)

    def _non_finite(self, field: str, where: tuple, message: str, received: Any, hint: str = _NAN_HINT,
                    key: str = "") -> None:
        if self.nan_check == "raise":
            raise RLGraphNonFiniteError(message, where=_name(where, key), received=received, hint=hint)
        if field not in self._warned:  # "warn": once per field, so a run full of NaN does not flood the log.
            self._warned.add(field)
            logger.warning("%s: %s (received %s). execution_spec.nan_check is \"warn\": going on; further "
                           "non-finite %s are not logged.", _name(where, key), message, received, field)


# --- Helpers (errors are built only when one is raised) ----------------------------------------------
def _name(where: tuple, key: str = "") -> str:
    """"agent.observe(preprocessed_states/a)" from ("agent.observe(preprocessed_states", ")") and "/a"."""
    return where[0] + key + where[1]


def _array(value: Any, where: tuple, expected: str, key: str = "") -> np.ndarray:
    try:
        return np.asarray(value)
    except (ValueError, TypeError) as error:  # A ragged list, for one.
        raise RLGraphSpaceError(None, "the value cannot be made an array", where=_name(where, key), expected=expected,
                                received=f"{type(value).__name__} ({error})") from None


def _as_float(value: Any) -> float:
    """`float(value)`, with +-inf for an integer too large for a float (10**400): the finiteness
    check then refuses it as it refuses a float inf."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _fitting_dtypes(leaf: _Leaf) -> frozenset:
    """The dtypes of arrays that `DataChecks.transition`'s fast path takes for `leaf` (integer or
    float states whose values fit the leaf's dtype without overflowing)."""
    ints = [np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)]
    if leaf.dtype is None:
        return frozenset(ints)
    floats = [np.dtype(t) for t in (np.float16, np.float32, np.float64) if np.dtype(t).itemsize <= leaf.dtype.itemsize]
    return frozenset(ints + floats)


def _out_of_range(leaf: _Leaf, array: np.ndarray) -> bool:
    if not leaf.scalar_bounds:
        return bool(np.any(array < leaf.low) or np.any(array >= leaf.high))
    if array.ndim == 0:
        return not leaf.low <= int(array) < leaf.high
    return bool(array.size) and bool(array.min() < leaf.low or array.max() >= leaf.high)


def _zeros_and_ones(array: np.ndarray) -> bool:
    return array.dtype.kind in "iuf" and bool(np.all((array == 0) | (array == 1)))


def _terminal_error(array: np.ndarray, where: tuple) -> RLGraphSpaceError:
    values = f", values {np.unique(array)[:5].tolist()}" if array.dtype.kind in "iuf" else ""
    return RLGraphSpaceError(BoolBox(), "terminals must be bools (or 0/1), one per transition", where=_name(where),
                             expected="a bool for one transition, [B] bools for a batch",
                             received=f"shape {array.shape}, dtype {array.dtype}{values}")


def _space_error(leaf: _Leaf, array: np.ndarray, where: str, batch: Optional[int]) -> RLGraphSpaceError:
    expected_shape = leaf.shape if batch is None else (batch,) + leaf.shape
    if array.shape != expected_shape:
        problem = "wrong shape"
        hint = ("observe takes one transition (each value shaped like its space) or a time-ordered batch with "
                "the same leading size B for every argument.")
    else:
        problem = f"wrong dtype ({array.dtype.name})"
        hint = ("discrete (IntBox) values must be integers: convert them, e.g. int(a) or a.astype(np.int64)."
                if isinstance(leaf.space, IntBox) else None)
    kinds = {"iu": "integers", "iuf": "numbers", "b": "bools", "US": "strings"}.get(leaf.kinds, leaf.kinds)
    return RLGraphSpaceError(leaf.space, problem, where=where,
                             expected=f"{leaf.space}: {kinds} of shape {expected_shape}",
                             received=f"shape {array.shape}, dtype {array.dtype.name}", hint=hint)


def _range_error(leaf: _Leaf, array: np.ndarray, where: str, batch: Optional[int],
                 timestep: Optional[int]) -> RLGraphSpaceError:
    if array.ndim == 0:
        index, value = (), array.item()
    else:
        index = _first_index((array < leaf.low) | (array >= leaf.high))
        value = array[index].item()
    row = index[0] if batch is not None else 0
    at = f" at index {index}" if index else ""
    return RLGraphSpaceError(leaf.space, f"value {value}{at} is outside the space" + _at(timestep, row),
                             where=where, expected=f"{leaf.space}: low <= value < high", received=value,
                             hint="an action must lie in the action space (a DQN indexes its Q-values with it): "
                                  "pass what get_action returned.")


def record_where(where: str) -> Dict[str, tuple]:
    """Field -> where a record's field came from, for `DataChecks.batch`: with `where`
    "agent.import_observations(observations)", errors name "...(observations)['actions']"."""
    return {field: (f"{where}[{field!r}]", "") for field in FIELDS}


def _at(timestep: Optional[int], row: int) -> str:
    return "" if timestep is None else f" (timestep {timestep + row})"
