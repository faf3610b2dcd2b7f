"""The on-policy rollout of `PolicyGradientAgent`: time-ordered fragments of transitions, and GAE over them."""
from __future__ import annotations

import logging
import os
from typing import Any, List, Optional, Tuple

import numpy as np

from rlgraph.agents.agent_state import read_transitions, transition_specs
from rlgraph.agents.observe_buffers import stack_transitions
from rlgraph.agents.records import record_space
from rlgraph.components.memories.memory import write_npz
from rlgraph.utils.checkpoint_dir import write_json
from rlgraph.utils.checkpoint_values import INT64_MAX, MT19937_ARRAY, check_mt19937
from rlgraph.utils.nest import flatten_op, map_structure
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError
from rlgraph.utils.safe_npz import ArraySpec

logger = logging.getLogger(__name__)


class RolloutStorage:
    """The transitions observed since the last update, as records (`rlgraph/agents/records.py`).

    Each record is one time-ordered fragment of one environment, as the observe buffers hand them
    over: it ends at an episode end or where a buffer was flushed (full, or at an update). GAE
    runs per fragment, bootstrapping from the fragment's last next state.

    With a capacity the storage is a ring: a rollout longer than `capacity` transitions keeps the
    newest `capacity` of them (the oldest fragments go first; a fragment cut at its start still
    bootstraps from its own last next state, so GAE over what is kept stays exact). `observed`
    counts every transition added since the last `take`, dropped ones included: the agent's
    update schedule reads it.

    Args:
        capacity: The most transitions a rollout holds (None: no bound).
        where: The agent method named in errors.
    """

    def __init__(self, capacity: Optional[int], where: str):
        self.capacity = capacity
        self.where = where
        self.fragments: List[dict] = []
        self.rows = 0
        self.observed = 0  # Transitions added since the last take (dropped ones included).
        self.dropped = 0  # Transitions dropped since the last take (the ring was full).
        self.episodes = 0  # Episodes that ended in the rollout (counted by the agent's observe).

    def add(self, record: dict) -> None:
        count = len(record["rewards"])
        self.fragments.append(record)
        self.rows += count
        self.observed += count
        if self.capacity is not None and self.rows > self.capacity:
            self._drop_oldest(self.rows - self.capacity)

    def _drop_oldest(self, excess: int) -> None:
        if self.dropped == 0:
            logger.warning("%s: the rollout holds at most %d transitions (memory_spec.capacity): the oldest are "
                           "dropped until the next update, which learns from the newest %d.", self.where,
                           self.capacity, self.capacity)
        self.dropped += excess
        self.rows -= excess
        while excess > 0:
            length = len(self.fragments[0]["rewards"])
            if length <= excess:
                self.fragments.pop(0)
                excess -= length
            else:
                self.fragments[0] = map_structure(lambda leaf, cut=excess: leaf[cut:], self.fragments[0])
                excess = 0

    def take(self) -> List[dict]:
        """The fragments, in the order they came; the storage is empty afterwards."""
        fragments, self.fragments, self.rows, self.episodes = self.fragments, [], 0, 0
        self.observed = self.dropped = 0
        return fragments


def gae_advantages(rewards: np.ndarray, values: np.ndarray, next_values: np.ndarray, terminals: np.ndarray,
                   fragment_ends: np.ndarray, discount: float, gae_lambda: float) -> np.ndarray:
    """GAE (Schulman et al. 2015, https://arxiv.org/abs/1506.02438) over concatenated fragments.

    With v(s_{t+1}) of each transition's own next state (so that truncated episodes and fragment
    ends bootstrap correctly):

        delta_t = r_t + gamma * (1 - d_t) * v(s_{t+1}) - v(s_t)
        A_t = delta_t + gamma * lambda * (1 - d_t) * (1 - e_t) * A_{t+1}

    with e_t true at the last step of a fragment. Per fragment this equals the numpy reference
    `rlgraph.utils.numpy.gae(r, v, bootstrap_value=v(s_T), d, gamma, lambda)`.

    Args:
        rewards: [N] floats, r_t.
        values: [N] floats, v(s_t).
        next_values: [N] floats, v(s_{t+1}).
        terminals: [N] bools, d_t.
        fragment_ends: [N] bools, e_t.
        discount: gamma.
        gae_lambda: lambda.

    Returns:
        [N] float32 advantages.

    >>> r, v = np.array([1.0, 1.0, 1.0]), np.zeros(3)
    >>> v_next = np.array([0.0, 5.0, 2.0])  # v(s_1) = v_1; after the terminal: not read; the bootstrap v(s_3).
    >>> gae_advantages(r, v, v_next, np.array([False, True, False]), np.array([False, True, True]),
    ...                0.5, 1.0).tolist()   # [1 + 0.5 * 1, 1, 1 + 0.5 * 2]
    [1.5, 1.0, 2.0]
    """
    r_t = np.asarray(rewards, np.float64)
    not_done = 1.0 - np.asarray(terminals, np.float64)
    delta = r_t + discount * not_done * np.asarray(next_values, np.float64) - np.asarray(values, np.float64)
    carry = discount * gae_lambda * not_done * (1.0 - np.asarray(fragment_ends, np.float64))
    advantages = np.empty_like(delta)
    a = 0.0
    for t in range(len(delta) - 1, -1, -1):
        a = delta[t] + carry[t] * a
        advantages[t] = a
    return advantages.astype(np.float32)


# --- Checkpoints --------------------------------------------------------------------------------------
ROLLOUT_FILE = "rollout.json"
ROLLOUT_ARRAYS = "rollout.npz"


def save_rollout(directory: str, storage: RolloutStorage, rng: np.random.RandomState, gradient_steps: int) -> None:
    """Writes the unfinished rollout and the minibatch generator's state into a checkpoint
    directory (JSON + npz, nothing pickled)."""
    _, keys, pos, has_gauss, cached = rng.get_state()
    arrays = {"rng/keys": np.asarray(keys, np.uint32)}
    for i, fragment in enumerate(storage.fragments):
        for field, value in fragment.items():
            for key, leaf in flatten_op(value).items():
                arrays[f"rollout/{i}/{field}{key}"] = np.asarray(leaf)
    write_json(os.path.join(directory, ROLLOUT_FILE),
               {"lengths": [len(f["rewards"]) for f in storage.fragments], "episodes": storage.episodes,
                "observed": int(storage.observed), "dropped": int(storage.dropped),
                "rng": [int(pos), int(has_gauss), float(cached)], "gradient_steps": int(gradient_steps)})
    write_npz(os.path.join(directory, ROLLOUT_ARRAYS), arrays)


def read_rollout(files: Any, agent: Any, where: str) -> Tuple[List[dict], int, tuple, int, int, int]:
    """(fragments, episodes, generator state, gradient steps, observed, dropped) of a checkpoint's
    rollout, parsed from the verified `CheckpointFiles` and checked against `agent`'s spaces
    (`observed`/`dropped`: see `RolloutStorage`); every array is bounded by the lengths (at most the
    memory's capacity) and the spaces before it is decompressed.

    Raises:
        RLGraphCheckpointError: For missing or damaged files, or values that do not fit the spaces.
    """
    info = files.json(ROLLOUT_FILE)
    lengths = info.get("lengths") if isinstance(info, dict) else None
    episodes = info.get("episodes") if isinstance(info, dict) else None
    steps = info.get("gradient_steps") if isinstance(info, dict) else None
    valid = isinstance(lengths, list) and all(isinstance(n, int) and not isinstance(n, bool) and 0 < n <= INT64_MAX
                                              for n in lengths) and all(
        isinstance(n, int) and not isinstance(n, bool) and 0 <= n <= INT64_MAX for n in (episodes, steps))
    if not valid:
        raise RLGraphCheckpointError(f"'{ROLLOUT_FILE}' is damaged", where=where,
                                     expected="{lengths: [ints > 0], episodes: int >= 0, gradient_steps: int >= 0, "
                                              "rng}", received=repr(info)[:200])
    observed, dropped = info.get("observed", sum(lengths)), info.get("dropped", 0)
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (observed, dropped)) or \
            not 0 <= dropped <= INT64_MAX or observed != sum(lengths) + dropped or observed > INT64_MAX:
        raise RLGraphCheckpointError(f"'{ROLLOUT_FILE}' is damaged", where=where,
                                     expected="observed = sum(lengths) + dropped, dropped >= 0",
                                     received=f"observed {observed!r}, dropped {dropped!r}, lengths {sum(lengths)}")
    capacity = agent.rollouts.capacity
    if capacity is not None and sum(lengths) > capacity:
        raise RLGraphCheckpointError("the checkpoint's rollout exceeds memory_spec.capacity", where=where,
                                     expected=f"at most {capacity} transitions", received=sum(lengths))
    space = record_space(agent.preprocessed_state_space, agent.action_space)
    leaves = {field: dict(space[field].flatten()) for field in ("states", "actions", "next_states")}
    expected = {"rng/keys": ArraySpec(MT19937_ARRAY, "u", np.uint32)}
    for i, n in enumerate(lengths):
        expected.update(transition_specs(f"rollout/{i}", n, leaves))
    # Without a capacity the lengths bound nothing: then the file's own size bounds the arrays.
    arrays = files.npz(ROLLOUT_ARRAYS, expected) if capacity is not None else \
        files.npz(ROLLOUT_ARRAYS, expected, max_bytes=len(files.read(ROLLOUT_ARRAYS)))
    rng = info.get("rng")
    if not (isinstance(rng, list) and len(rng) == 3):
        raise RLGraphCheckpointError("the rollout's random generator state is damaged", where=where,
                                     expected="an MT19937 state", received=repr(rng)[:100])
    rng_state = check_mt19937(arrays.get("rng/keys"), rng[0], rng[1], rng[2], "rollout rng/keys", where)
    fragments = [stack_transitions(read_transitions(arrays, f"rollout/{i}", n, leaves, space, where))
                 for i, n in enumerate(lengths)]
    return fragments, episodes, rng_state, steps, observed, dropped
