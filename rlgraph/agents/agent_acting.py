"""`AgentActing`: `get_action` and `preprocess_states` of every agent (a base class of `Agent`)."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator, List, Optional, Tuple

import numpy as np

from rlgraph.spaces import Dict as DictSpace, Space
from rlgraph.utils.nest import add_batch_rank, first_row, flatten_op
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpaceError, RLGraphSpecError


class AgentActing:
    """Acting on single states or batches; `Agent` inherits it. It reads the agent's spaces
    (`state_space`, `preprocessed_state_space`), `greedy_apis`, `time_percentage()` and the
    executor, and tells a single state from a batch for the other front-end methods (`_batch`)."""

    def _is_single(self, states: Any, space: Space, api: str = "observe(preprocessed_states)") -> bool:
        """Whether `states` is one item of `space` (not a batch).

        Raises:
            RLGraphSpaceError: If `states` cannot be data of `space` (a dict for a space that is
                no Dict, an empty structure, ragged lists); `api` names the method and argument.
        """
        rank = self._leaf_ranks.get(id(space))
        if rank is None:
            rank = self._leaf_ranks[id(space)] = len(next(iter(space.flatten().values())).shape)
        # Only the structure and the rank are looked at here; the executor checks shapes and dtypes.
        try:
            if isinstance(states, (dict, tuple)):
                if isinstance(states, dict) and not isinstance(space, DictSpace):
                    raise TypeError("a dict")
                first = next(iter(flatten_op(states).values()))
            else:
                first = states
            return np.ndim(first) == rank
        except (TypeError, ValueError, StopIteration, RLGraphError) as error:
            raise RLGraphSpaceError(space, "the states do not fit the state space", where=f"{self.name}.{api}",
                                    expected=f"one state or a batch of states of {space}",
                                    received=_describe(states) + (" (ragged)" if isinstance(error, ValueError) else ""),
                                    hint="pass a numpy array (a dict of them for a Dict space).") from error

    def _batch(self, states: Any, space: Space, api: str = "observe(preprocessed_states)") -> Tuple[Any, bool]:
        """(states with a batch rank, whether a single state was given)."""
        single = self._is_single(states, space, api)
        return (add_batch_rank(states) if single else states), single

    def get_action(self, states: Any, internals: Any = None, use_exploration: bool = True,
                   apply_preprocessing: bool = True, extra_returns: Any = None,
                   time_percentage: Optional[float] = None) -> Any:
        """Actions for one state or a batch of states.

        Args:
            states: One state (shaped like `state_space`) or a batch of them.
            internals: Internal (RNN) states; agents without them ignore it.
            use_exploration: False: no exploration noise or epsilon (greedy actions).
            apply_preprocessing: False if `states` are already preprocessed.
            extra_returns: "preprocessed_states" (or a set of names) to also return those.
            time_percentage: Overrides `time_percentage()` for the schedules.

        Returns:
            The action(s) (no batch rank for a single state); with extra_returns a tuple
            (actions, preprocessed_states).
        """
        extras = self._check_extra_returns(extra_returns)
        space = self.state_space if apply_preprocessing else self.preprocessed_state_space
        batch, single = self._batch(states, space, "get_action(states)")
        if not use_exploration and self.greedy_apis is not None:
            api, inputs = self.greedy_apis[bool(apply_preprocessing)], [batch]
        else:
            tp = self._time_percentage_arg(time_percentage, "get_action")
            api = "get_actions" if apply_preprocessing else "get_actions_from_preprocessed_states"
            inputs = [batch, tp, bool(use_exploration)]
        try:
            if not extras:
                actions = self._executor().execute((api, inputs, 1))
                return first_row(actions) if single else actions
            preprocessed, actions = self._executor().execute((api, inputs))
        except RLGraphSpaceError as error:  # States of a wrong shape or dtype (checked by the executor).
            raise RLGraphSpaceError(error.space, f"{error.message} (in {error.where})",
                                    where=f"{self.name}.get_action(states)", expected=error.expected,
                                    received=error.received, hint=error.hint) from error
        if single:
            actions, preprocessed = first_row(actions), first_row(preprocessed)
        return actions, preprocessed

    def _check_extra_returns(self, extra_returns: Any) -> List[str]:
        if extra_returns is None:
            return []
        try:
            names = [extra_returns] if isinstance(extra_returns, str) else sorted(extra_returns)
        except TypeError:  # Not a string or a collection of strings.
            names = [extra_returns]
        unknown = [n for n in names if not (isinstance(n, str) and n == "preprocessed_states")]
        if unknown:
            raise RLGraphSpecError(f"unknown extra_returns {unknown}", where=f"{self.name}.get_action",
                                   expected=["preprocessed_states"], received=names)
        return names

    @contextlib.contextmanager
    def preprocessor_state_kept(self) -> Iterator[None]:
        """Puts the variables of the agent's preprocessor (frame stacks, running statistics) back as
        they were when the block started: greedy evaluations between training steps
        (`SingleThreadedWorker.evaluate`) leave the training episodes' stacks, and statistics that
        run over the whole training (`moving-standardize` with `per_episode` false, as SB3's
        VecNormalize keeps them), as they were.

        >>> from rlgraph.agents import Agent
        >>> agent = Agent.from_spec({"type": "dqn", "backend": "pytorch", "network_spec": [
        ...     {"type": "dense", "units": 4}], "preprocessing_spec": [{"type": "moving-standardize",
        ...     "per_episode": False}]}, state_space={"type": "float-box", "shape": (2,)},
        ...     action_space={"type": "int-box", "high": 2})
        >>> _ = agent.get_action(np.ones(2, np.float32))
        >>> with agent.preprocessor_state_kept():
        ...     _ = agent.get_action(np.zeros((5, 2), np.float32), use_exploration=False)
        >>> [float(v) for k, v in agent.graph_executor.get_weights().items() if k.endswith("/count")]
        [1.0]
        """
        preprocessor = getattr(self.root_component, "preprocessor", None)
        # (Only the preprocessor's variables are read: never all of them, which may hold a replay memory.)
        records = self.root_component.variable_records_of_tree() if preprocessor is not None else {}
        names = [name for name in (preprocessor.variable_registry if preprocessor is not None else ())
                 if name in records and not records[name].local]
        before = self.graph_executor.get_weights(names) if names else {}
        try:
            yield
        finally:
            if before:
                self.graph_executor.set_weights(before)

    def preprocess_states(self, states: Any) -> Any:
        """The states after the agent's preprocessor (identity without one); single or batched."""
        batch, single = self._batch(states, self.state_space, "preprocess_states(states)")
        out = self._executor().execute(("get_preprocessed_states", [batch]))
        return first_row(out) if single else out


def _describe(value: Any) -> str:
    """A short description of API input for error messages (type, and shape where it has one)."""
    if isinstance(value, dict):
        return f"a dict with keys {sorted(map(str, value))}"
    if isinstance(value, (list, tuple)):
        return f"a {type(value).__name__} of {len(value)}"
    shape = getattr(value, "shape", None)
    return f"{type(value).__name__} of shape {tuple(shape)}" if shape is not None else repr(value)[:80]
