"""`AgentObserving`: `observe`, its per-environment buffers and `import_observations` (a base of `Agent`)."""
from __future__ import annotations

import functools
from typing import Any, Hashable, Optional

import numpy as np

from rlgraph.agents.data_checks import DataChecks
from rlgraph.agents.observe_buffers import Transition, stack_transitions
from rlgraph.agents.records import to_record
from rlgraph.utils.nest import add_batch_rank, batch_row


class AgentObserving:
    """Taking in transitions: checked (`rlgraph/agents/data_checks.py`), buffered per environment
    (`rlgraph/agents/observe_buffers.py`) and handed to the subclass's `_observe_graph`; `Agent`
    inherits it."""

    @functools.cached_property
    def _data_checks(self) -> DataChecks:
        """The checks of observed and imported data and of losses (made at first use, after
        `_create_root` has set `preprocessed_state_space`)."""
        return DataChecks(self.preprocessed_state_space, self.action_space, self.execution_spec["nan_check"],
                          self.name)

    def _check_loss(self, loss: Any, method: str) -> None:
        """Stops (or warns, see `execution_spec.nan_check`) when update number `num_updates` gave a
        NaN or inf loss; `method` names the agent method that ran it."""
        self._data_checks.loss(loss, self.num_updates, method)

    def observe(self, preprocessed_states: Any, actions: Any, internals: Any, rewards: Any, next_states: Any,
                terminals: Any, env_id: Optional[Hashable] = None, truncated: Any = False) -> None:
        """Observes one transition or a time-ordered batch of transitions of one environment.

        Transitions wait in a buffer per `env_id` (see `observe_spec`) and go into the memory
        when the episode ends or the buffer is full (n-step returns are folded in on the way).

        Args:
            preprocessed_states: s_t (preprocessed), single or batched.
            actions: a_t.
            internals: Internal states (unused by feed-forward agents; may be None or []).
            rewards: r_t.
            next_states: s_{t+1} (preprocessed).
            terminals: Whether s_{t+1} is terminal (no bootstrapping from it).
            env_id: The environment the transitions come from (vectorized workers pass one per env):
                None, a bool, an int, a str or a tuple of them (what a checkpoint can store).
            truncated: Whether the episode ended after the (last) transition without a terminal
                state, e.g. a time limit; the buffer is flushed then. One bool (or 0/1).

        With `observe_spec.normalize_rewards` the rewards are stored scaled (`reward_scaling.py`).

        Raises:
            RLGraphSpaceError: If a value does not fit its space (shape, dtype kind, an action
                outside the action space, rewards that are no numbers, terminals that are no
                bools); the error names the argument. Nothing is stored then.
            RLGraphNonFiniteError: For a NaN or inf in the states, next states or rewards, also
                after the cast to the dtype they are stored in (with `execution_spec.nan_check`
                "raise"); nothing is stored then.
            RLGraphSpecError: For an `env_id` of another type; `RLGraphSpaceError` for a
                `truncated` that is not one bool.
        """
        # Every value is checked (`rlgraph/agents/data_checks.py`) before a buffer or counter changes.
        checks = self._data_checks
        truncated = checks.truncated(truncated)
        buffered = self.observe_spec["buffer_enabled"] or self.buffers.n_step > 1
        if buffered and self._is_single(preprocessed_states, self.preprocessed_state_space):
            # The worker's per-step call: one transition straight into its env's buffer.
            transition = checks.transition(preprocessed_states, actions, rewards, terminals, next_states,
                                           self.timesteps)
            if self.reward_scaler is not None:
                scaled = self.reward_scaler.scale(env_id, np.array([transition.reward]),
                                                  np.array([transition.terminal or truncated]))
                transition = transition._replace(reward=float(scaled[0]))
            ready = self.buffers.add(env_id, [transition], episode_end=transition.terminal or truncated)
            self.timesteps += 1  # (After `add`, which refuses an unhashable env_id.)
            if ready:
                self._observe_graph(stack_transitions(ready))
            return
        states, single = self._batch(preprocessed_states, self.preprocessed_state_space)
        if single:
            actions, next_states = add_batch_rank(actions), add_batch_rank(next_states)
        record = checks.batch({"states": states, "actions": actions, "rewards": rewards, "terminals": terminals,
                               "next_states": next_states}, self.timesteps)
        count = len(record["rewards"])
        if self.reward_scaler is not None:
            ends = np.asarray(record["terminals"], bool).reshape(-1).copy()
            ends[-1] |= truncated
            record["rewards"] = self.reward_scaler.scale(env_id, np.asarray(record["rewards"]), ends)
        if not buffered:
            self._observe_graph(record)
            self.timesteps += count
            return
        self.timesteps += count
        states, actions, next_states = record["states"], record["actions"], record["next_states"]
        rewards, terminals = record["rewards"], record["terminals"]
        # (Without buffering, n-step returns still need the next n - 1 rewards: buffers of size n.)
        rows = [Transition(batch_row(states, i), batch_row(actions, i), float(rewards[i]), bool(terminals[i]),
                           batch_row(next_states, i)) for i in range(count)]
        # A batch may span several episodes: hand it over episode by episode.
        start = 0
        for i in range(count):
            if terminals[i] or i == count - 1:
                end_of_episode = bool(terminals[i]) or (i == count - 1 and truncated)
                ready = self.buffers.add(env_id, rows[start:i + 1], episode_end=end_of_episode)
                if ready:
                    self._observe_graph(stack_transitions(ready))
                start = i + 1

    def reset_env_buffers(self, env_id: Optional[Hashable] = None) -> None:
        """Drops the buffered transitions of `env_id` (None: of every env)."""
        self.buffers.reset(env_id)

    def flush_buffers(self) -> None:
        """Writes every env's buffered (complete) transitions into the memory now."""
        for env_id in list(self.buffers.buffers):
            ready = self.buffers.flush(env_id)
            if ready:
                self._observe_graph(stack_transitions(ready))

    def import_observations(self, observations: Any) -> None:
        """Writes observations straight into the memory (e.g. demonstrations for pre-training).

        Args:
            observations: A record, a dict with "states", "actions", "rewards", "terminals" and
                "next_states" (batched, states preprocessed), or a list of records.

        Raises:
            RLGraphError: If a record lacks a key or has another, `RLGraphSpaceError` if a value
                does not fit its space, `RLGraphNonFiniteError` for a NaN or inf (as `observe`
                checks them); then none is written.
        """
        where = f"{self.name}.import_observations(observations)"
        batches = observations if isinstance(observations, list) else [observations]
        records = [to_record(obs, where, checks=self._data_checks) for obs in batches]  # All checked first.
        for record in records:
            self._observe_graph(record)
