"""The python-side part of an agent checkpoint: counters, observe buffers, random generator states.

Stored as data, never pickled: "agent_state.json" (format version, agent type, backend,
counters, the buffers' env ids and lengths, the scalar parts of the random states) and
"agent_state.npz" (the buffered transitions, flattened leaf by leaf, and the generator state
arrays), read with `allow_pickle=False`. Every value is checked against the agent (types,
ranges, the spaces of the buffered states and actions) before anything is restored.

TensorFlow's stateful random ops cannot be captured, so on TF a resumed run draws different
random numbers (PyTorch and numpy resume exactly).
"""
from __future__ import annotations

import os
from typing import Any, Dict, Hashable, List, Tuple

import numpy as np

from rlgraph.agents.observe_buffers import Transition
from rlgraph.agents.records import record_space
from rlgraph.spaces import IntBox
from rlgraph.utils.checkpoint_dir import write_json
from rlgraph.utils.checkpoint_values import MT19937_ARRAY, check_counter, check_mt19937
from rlgraph.utils.nest import batch_row, flatten_op, map_structure, unflatten_op
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError
from rlgraph.utils.safe_npz import ArraySpec

STATE_FILE = "agent_state.json"
ARRAYS_FILE = "agent_state.npz"
FORMAT_VERSION = 3  # 1 and 2 were pickles, which are never read (see `read_checkpoint`).
COUNTERS = ("timesteps", "num_updates", "last_sync_timestep")
_FIELDS = ("states", "actions", "next_states")


def save_agent_state(directory: str, agent: Any) -> None:
    """Writes `agent`'s counters, observe buffers and random generator states into `directory`.

    Raises:
        RLGraphCheckpointError: If a buffered value cannot be stored as plain data (an object
            array) or an env id is not a None, bool, int, str or a tuple of them.
    """
    where = f"{agent.name}.store_model"
    rng = agent.graph_executor.get_rng_state()
    kind, keys, pos, has_gauss, cached = rng["numpy"]
    arrays = {"rng/numpy_keys": np.asarray(keys, np.uint32)}
    if rng.get("backend") is not None:
        arrays["rng/backend"] = np.asarray(rng["backend"])
    buffers = []
    for i, (env_id, transitions) in enumerate(agent.buffers.buffers.items()):
        buffers.append({"env_id": _encode_env_id(env_id, where), "length": len(transitions)})
        if not transitions:
            continue
        states, actions, rewards, terminals, next_states = zip(*transitions)
        arrays[f"buffers/{i}/rewards"] = np.asarray(rewards, np.float64)
        arrays[f"buffers/{i}/terminals"] = np.asarray(terminals, bool)
        for field, items in (("states", states), ("actions", actions), ("next_states", next_states)):
            stacked = map_structure(lambda *xs: np.stack([np.asarray(x) for x in xs]), *items) \
                if isinstance(items[0], (dict, tuple, list)) else np.stack([np.asarray(x) for x in items])
            for key, value in flatten_op(stacked).items():
                arrays[f"buffers/{i}/{field}{key}"] = value
    for name, value in arrays.items():
        if value.dtype.hasobject:
            raise RLGraphCheckpointError(f"'{name}' holds python objects, which a checkpoint does not store",
                                         where=where, hint="observe numpy arrays of the state space's dtype.")
    state = {"format_version": FORMAT_VERSION, "agent_type": type(agent).__name__, "backend": agent.backend,
             "counters": {key: int(getattr(agent, key)) for key in COUNTERS},
             "max_timesteps": None if agent.max_timesteps is None else int(agent.max_timesteps),
             "buffers": buffers,
             "rng": {"numpy": {"kind": kind, "pos": int(pos), "has_gauss": int(has_gauss),
                               "cached_gaussian": float(cached)},
                     "backend": "rng/backend" in arrays}}
    if agent.reward_scaler is not None:
        state["reward_scaler"] = agent.reward_scaler.state(lambda env_id: _encode_env_id(env_id, where))
    if getattr(agent, "sde_sample_freq", None) is not None:  # gSDE: exploring steps since the last noise draw.
        state["sde_steps"] = int(agent._sde_steps)
    write_json(os.path.join(directory, STATE_FILE), state)
    with open(os.path.join(directory, ARRAYS_FILE), "wb") as handle:
        np.savez(handle, **arrays)


def load_agent_state(files: Any, agent: Any) -> Dict[str, Any]:
    """Parses and checks a checkpoint's agent state against `agent`, without changing the agent.

    Args:
        files: The verified checkpoint (`CheckpointFiles`).
        agent: The agent to load into.

    Returns:
        {"counters", "max_timesteps", "buffers" (env id -> [Transition]), "rng", "backend",
        "reward_scaler" (its checked state, or None), "sde_steps" (gSDE agents: exploring steps
        since the last noise draw, or None)}.

    Raises:
        RLGraphCheckpointError: A missing or damaged file, a state of another agent type, or a
            value out of range (counters outside [0, 2**63 - 1], a degenerate random state,
            buffered actions outside the action space, states of another shape, ...).
    """
    where = f"{type(agent).__name__}.load_model"
    state = files.json(STATE_FILE)
    if not isinstance(state, dict) or state.get("format_version") != FORMAT_VERSION:
        raise RLGraphCheckpointError(f"'{STATE_FILE}' is not an rlgraph agent state of this version", where=where,
                                     expected=f"format_version {FORMAT_VERSION}",
                                     received=repr(state.get("format_version") if isinstance(state, dict)
                                                   else type(state).__name__)[:100])
    if state.get("agent_type") != type(agent).__name__:
        raise RLGraphCheckpointError("the checkpoint was written by another agent type", where=where,
                                     expected=type(agent).__name__, received=repr(state.get("agent_type"))[:100])
    counters = state.get("counters")
    if not isinstance(counters, dict) or sorted(counters) != sorted(COUNTERS):
        raise RLGraphCheckpointError("the agent state's counters are incomplete", where=where,
                                     expected=list(COUNTERS), received=repr(counters)[:200])
    for key in COUNTERS:
        check_counter(counters[key], f"counters.{key}", where)
    if counters["last_sync_timestep"] > counters["timesteps"]:
        raise RLGraphCheckpointError("the last target sync lies after the last step", where=where,
                                     expected=f"last_sync_timestep <= timesteps ({counters['timesteps']})",
                                     received=counters["last_sync_timestep"])
    max_timesteps = state.get("max_timesteps")
    if max_timesteps is not None:
        check_counter(max_timesteps, "max_timesteps", where, minimum=1)
    rng_info = state.get("rng") if isinstance(state.get("rng"), dict) else {}
    entries = _buffer_entries(state.get("buffers"), agent, where)
    space = record_space(agent.preprocessed_state_space, agent.action_space)
    leaves = {field: dict(space[field].flatten()) for field in _FIELDS}
    expected = {"rng/numpy_keys": ArraySpec(MT19937_ARRAY, "u", np.uint32)}
    if rng_info.get("backend"):
        expected["rng/backend"] = ArraySpec((None,), "u", np.uint8)
    for i, (_, length) in enumerate(entries):
        if length:
            expected.update(transition_specs(f"buffers/{i}", length, leaves))
    arrays = files.npz(ARRAYS_FILE, expected)
    rng = _check_rng(rng_info, arrays, agent, state.get("backend"), where)
    buffers = {env_id: read_transitions(arrays, f"buffers/{i}", length, leaves, space, where) if length else []
               for i, (env_id, length) in enumerate(entries)}
    scaler = None
    if agent.reward_scaler is not None and "reward_scaler" in state:  # (Older checkpoints: it starts afresh.)
        scaler = agent.reward_scaler.checked_state(state["reward_scaler"], _decode_env_id, where)
    sde_steps = state.get("sde_steps")
    if sde_steps is not None:
        check_counter(sde_steps, "sde_steps", where)
    return {"counters": counters, "max_timesteps": max_timesteps, "buffers": buffers, "rng": rng,
            "backend": state.get("backend"), "reward_scaler": scaler, "sde_steps": sde_steps}


def restore_rng(payload: dict, executor: Any) -> None:
    """Restores the random generator states; the backend's only from a checkpoint of the same backend."""
    rng = payload["rng"]
    if payload.get("backend") == executor.backend:
        executor.set_rng_state(rng)
    else:
        executor.set_rng_state({"numpy": rng["numpy"], "backend": None})


def transition_specs(prefix: str, length: int, leaves: Dict[str, dict]) -> Dict[str, ArraySpec]:
    """The npz members `read_transitions` reads for `length` transitions under `prefix`, as `ArraySpec`s
    (so that a member is bounded by the spaces before it is decompressed)."""
    specs = {f"{prefix}/rewards": ArraySpec((length,), "f"), f"{prefix}/terminals": ArraySpec((length,), "b")}
    for field, flat in leaves.items():
        for key, leaf in flat.items():
            specs[f"{prefix}/{field}{key}"] = ArraySpec((length,) + tuple(leaf.shape), _dtype_kinds(leaf.dtype))
    return specs


# --- Checks -------------------------------------------------------------------------------------------
def _check_rng(rng: Dict[str, Any], arrays: Dict[str, np.ndarray], agent: Any, backend_name: Any,
               where: str) -> Dict[str, Any]:
    numpy_state = rng.get("numpy")
    if not isinstance(numpy_state, dict) or numpy_state.get("kind") != "MT19937":
        raise RLGraphCheckpointError("the agent state's random generator state is damaged", where=where,
                                     expected="an MT19937 state (624 uint32 keys)", received=repr(numpy_state)[:200])
    numpy_rng = check_mt19937(arrays.get("rng/numpy_keys"), numpy_state.get("pos"), numpy_state.get("has_gauss"),
                              numpy_state.get("cached_gaussian"), "rng/numpy_keys", where)
    backend = None
    if rng.get("backend"):
        backend = arrays.get("rng/backend")
        if backend is None:
            raise RLGraphCheckpointError("the agent state's backend random state is missing", where=where)
        if backend_name == agent.graph_executor.backend:  # (`restore_rng` sets only such a state.)
            agent.graph_executor.check_backend_rng_state(backend, where)
    return {"numpy": numpy_rng, "backend": backend}


def _buffer_entries(entries: Any, agent: Any, where: str) -> List[Tuple[Hashable, int]]:
    if not isinstance(entries, list):
        raise RLGraphCheckpointError("the agent state's buffers are damaged", where=where,
                                     expected="a list of {env_id, length}", received=type(entries).__name__)
    capacity = agent.buffers.buffer_size
    checked, seen = [], set()
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or sorted(entry) != ["env_id", "length"]:
            raise RLGraphCheckpointError(f"buffer {i} of the agent state is damaged", where=where,
                                         received=repr(entry)[:200])
        env_id = _decode_env_id(entry["env_id"], where)
        # A buffer holds at most buffer_size transitions (it is flushed when it gets there).
        length = check_counter(entry["length"], f"buffers[{i}].length", where)
        if length > capacity:
            raise RLGraphCheckpointError(f"buffer {i} holds more transitions than observe_spec allows", where=where,
                                         expected=f"at most {capacity}", received=length)
        if env_id in seen:
            raise RLGraphCheckpointError(f"env id {env_id!r} appears twice in the agent state", where=where)
        seen.add(env_id)
        checked.append((env_id, length))
    return checked


def read_transitions(arrays: Dict[str, np.ndarray], prefix: str, length: int, leaves: Dict[str, dict],
                     space: Any, where: str) -> List[Transition]:
    """The `length` transitions stored under `prefix` ("<prefix>/rewards", "<prefix>/states/a", ...),
    each array checked for its shape, dtype kind and range first."""
    def take(name: str, shape: Tuple[int, ...], kinds: str) -> np.ndarray:
        value = arrays.get(f"{prefix}/{name}")
        if value is None or value.shape != shape or value.dtype.kind not in kinds:
            raise RLGraphCheckpointError(f"'{prefix}/{name}' of the agent state is missing or damaged", where=where,
                                         expected=f"shape {shape}, dtype kind in '{kinds}'",
                                         received=None if value is None else f"{value.shape} {value.dtype}")
        return value

    rewards = take("rewards", (length,), "f")
    terminals = take("terminals", (length,), "b")
    if not np.all(np.isfinite(rewards)):
        raise RLGraphCheckpointError(f"'{prefix}/rewards' of the agent state holds non-finite values", where=where)
    fields = {}
    for field, flat in leaves.items():
        values = {}
        for key, leaf in flat.items():
            value = take(field + key, (length,) + tuple(leaf.shape), _dtype_kinds(leaf.dtype))
            if isinstance(leaf, IntBox) and not leaf.contains(value):
                raise RLGraphCheckpointError(f"'{prefix}/{field}{key}' of the agent state lies outside its space",
                                             where=where, expected=leaf, received=f"[{value.min()}, {value.max()}]")
            values[key] = value
        fields[field] = unflatten_op(values) if list(values) != [""] else values[""]
    return [Transition(batch_row(fields["states"], t), batch_row(fields["actions"], t), float(rewards[t]),
                       bool(terminals[t]), batch_row(fields["next_states"], t)) for t in range(length)]


def _dtype_kinds(dtype: Any) -> str:
    kind = np.dtype(dtype).kind if not isinstance(dtype, str) or dtype not in ("str", "string") else "U"
    return {"f": "fiu", "i": "iub", "u": "iub", "b": "b", "U": "US", "S": "US"}.get(kind, kind)


# --- Env ids ------------------------------------------------------------------------------------------
def _encode_env_id(env_id: Hashable, where: str) -> Any:
    if env_id is None or isinstance(env_id, (bool, str)):
        return {"value": env_id}
    if isinstance(env_id, (int, np.integer)):
        return {"int": int(env_id)}
    if isinstance(env_id, tuple):
        return {"tuple": [_encode_env_id(part, where) for part in env_id]}
    raise RLGraphCheckpointError("an env id of the observe buffers cannot be stored", where=where,
                                 expected="None, a bool, int, str or a tuple of them", received=repr(env_id)[:100])


def _decode_env_id(encoded: Any, where: str) -> Hashable:
    if isinstance(encoded, dict) and len(encoded) == 1:
        (kind, value), = encoded.items()
        if kind == "value" and (value is None or isinstance(value, (bool, str))):
            return value
        if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
            return value
        if kind == "tuple" and isinstance(value, list):
            return tuple(_decode_env_id(part, where) for part in value)
    raise RLGraphCheckpointError("an env id of the agent state is damaged", where=where, received=repr(encoded)[:100])
