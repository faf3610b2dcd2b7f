"""Per-environment observation buffers for `Agent.observe`, with n-step return folding."""
from __future__ import annotations

from typing import Any, Dict, Hashable, List, NamedTuple, Optional

import numpy as np

from rlgraph.utils.nest import map_structure
from rlgraph.utils.rlgraph_errors import RLGraphSpecError


# What an env id may be: what a checkpoint can store (agent_state.py) and compare after loading.
ENV_ID_TYPES = "None, a bool, an int, a str or a tuple of them"
MAX_ENV_ID_NESTING = 8


def check_buffer_env_id(env_id: Any) -> None:
    """Raises an `RLGraphSpecError` unless `env_id` is one of `ENV_ID_TYPES` (numpy ints count as
    ints; tuples nest at most `MAX_ENV_ID_NESTING` levels).

    Other hashable values (an `object()`, a float, a frozenset) would be accepted by a dict but
    make every later `store_model` fail; a float NaN is not even equal to itself.
    """
    stack = [(env_id, 0)]
    while stack:
        part, depth = stack.pop()
        if isinstance(part, tuple) and depth < MAX_ENV_ID_NESTING:
            stack.extend((item, depth + 1) for item in part)
        elif not (part is None or isinstance(part, (bool, int, str, np.integer))):
            raise RLGraphSpecError("env_id is of a type that checkpoints cannot store",
                                   where="observe(env_id)", expected=ENV_ID_TYPES,
                                   received=f"{type(env_id).__name__} {env_id!r}"[:120],
                                   hint="env ids are stored in checkpoints; use e.g. the environment's index.")


class Transition(NamedTuple):
    """One transition, in the field order of a record (`rlgraph/agents/records.py`)."""
    state: Any  # Preprocessed.
    action: Any
    reward: float
    terminal: bool
    next_state: Any


class ObserveBuffers:
    """Collects transitions per `env_id` and hands them out in order, as n-step transitions.

    A buffer is flushed when its episode ends (terminal or truncated) or when it holds
    `buffer_size` transitions. With `n_step` n > 1 transition i becomes

        (s_i, a_i, r_i + g r_{i+1} + ... + g^(n-1) r_{i+n-1}, d_{i+n-1}, s_{i+n})

    with fewer rewards if the episode terminates earlier (the bootstrap is then cut by the
    terminal flag, so the discount exponent of the loss, g^n, is not used). The last n - 1
    transitions of a buffer that is flushed because it is full wait for the rewards that follow.
    When an episode is truncated (a time limit, not a terminal state) its last n - 1
    transitions are dropped: their bootstrap would need g^k with k < n.

    Args:
        buffer_size: Transitions per env_id before a flush (>= n_step).
        n_step: n of the n-step returns.
        discount: gamma.
    """

    def __init__(self, buffer_size: int, n_step: int = 1, discount: float = 0.99):
        self.buffer_size = max(int(buffer_size), int(n_step))
        self.n_step = int(n_step)
        self.discount = float(discount)
        self.buffers: Dict[Hashable, List[Transition]] = {}

    def add(self, env_id: Hashable, transitions: List[Transition], episode_end: bool = False) -> List[Transition]:
        """Appends `transitions` (in time order) for `env_id`.

        Args:
            env_id: The environment the transitions come from.
            transitions: New transitions; a terminal may only be the last one.
            episode_end: Whether the episode ends after the last transition (terminal or truncated).

        Returns:
            The transitions ready for the memory (possibly none).
        """
        try:
            buffer = self.buffers.get(env_id)
        except (TypeError, RecursionError) as error:  # An unhashable env_id (a list, a dict, an array).
            raise RLGraphSpecError("env_id must be hashable", where="observe(env_id)", expected=ENV_ID_TYPES,
                                   received=f"{type(env_id).__name__} {env_id!r}"[:120]) from error
        if buffer is None:  # (A new env id: checked once, then looked up like any other.)
            check_buffer_env_id(env_id)
            buffer = self.buffers[env_id] = []
        buffer.extend(transitions)
        if episode_end or transitions and transitions[-1].terminal:
            return self._flush(env_id, episode_over=True)
        if len(buffer) >= self.buffer_size:
            return self._flush(env_id, episode_over=False)
        return []

    def _flush(self, env_id: Hashable, episode_over: bool) -> List[Transition]:
        buffer = self.buffers[env_id]
        if self.n_step == 1:
            self.buffers[env_id] = []
            return buffer
        ready, n, count = [], self.n_step, len(buffer)
        terminal = bool(buffer[-1].terminal) if buffer else False
        for i in range(count):
            end = min(i + n, count)
            if end - i < n and not (episode_over and terminal):
                break  # Needs rewards that have not come in yet (or, when truncated, is dropped).
            rewards = np.array([t.reward for t in buffer[i:end]], dtype=np.float64)
            n_step_return = float(np.sum(rewards * self.discount ** np.arange(end - i)))
            last = buffer[end - 1]
            ready.append(Transition(buffer[i].state, buffer[i].action, n_step_return, last.terminal, last.next_state))
        self.buffers[env_id] = [] if episode_over else buffer[len(ready):]
        return ready

    def flush(self, env_id: Hashable) -> List[Transition]:
        """Hands out `env_id`'s complete transitions now (n-step ones keep waiting for rewards)."""
        return self._flush(env_id, episode_over=False) if env_id in self.buffers else []

    def reset(self, env_id: Optional[Hashable] = None) -> None:
        """Drops the pending transitions of `env_id` (None: of every env)."""
        if env_id is None:
            self.buffers.clear()
        else:
            self.buffers.pop(env_id, None)

    def pending(self) -> int:
        """The number of buffered transitions over all envs."""
        return sum(len(b) for b in self.buffers.values())


def stack_transitions(transitions: List[Transition]) -> dict:
    """Stacks transitions into a record: {"states", "actions", "rewards" float32, "terminals" bool,
    "next_states"}, each batched [B, ...] (see `rlgraph/agents/records.py`)."""
    states, actions, rewards, terminals, next_states = zip(*transitions)
    return {"states": _stack(states), "actions": _stack(actions), "rewards": np.array(rewards, dtype=np.float32),
            "terminals": np.array(terminals, dtype=bool), "next_states": _stack(next_states)}


def _stack(items: list) -> Any:
    if not isinstance(items[0], (dict, tuple, list)):
        return np.stack(items)  # Plain arrays (the common case).
    return map_structure(lambda *xs: np.stack(xs), *items)
