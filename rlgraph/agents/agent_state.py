"""The python-side part of an agent checkpoint: counters, observe buffers, random generator states.

Written next to the executor's "model" file as "agent_state.pkl". TensorFlow's stateful random
ops cannot be captured, so on TF a resumed run draws different random numbers (PyTorch and
numpy resume exactly).
"""
from __future__ import annotations

import os
import pickle
from typing import Any

from rlgraph.agents.observe_buffers import Transition
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError

STATE_FILE = "agent_state.pkl"
# 2: buffered transitions are `Transition`s in record order (s, a, r, d, s'); version 1 held
# plain tuples (s, a, r, s', d), which `load_agent_state` still reads.
FORMAT_VERSION = 2
# What every agent's `_python_state` holds (subclasses may add more).
REQUIRED_KEYS = ("agent_type", "timesteps", "num_updates", "last_sync_timestep", "max_timesteps", "buffers")


def save_agent_state(path: str, state: dict, executor: Any) -> str:
    """Pickles `state` plus the executor's random generator states into `path`/agent_state.pkl."""
    payload = {"format_version": FORMAT_VERSION, "state": state, "rng": executor.get_rng_state(),
               "backend": executor.backend}
    filename = os.path.join(path, STATE_FILE)
    tmp = filename + ".tmp"
    with open(tmp, "wb") as handle:
        pickle.dump(payload, handle, protocol=pickle.HIGHEST_PROTOCOL)
    os.replace(tmp, filename)  # No half-written checkpoint on a crash.
    return filename


def load_agent_state(path: str, agent_type: str) -> dict:
    """Reads and checks `path`/agent_state.pkl.

    Raises:
        RLGraphCheckpointError: If it is missing, unreadable, or written by another agent type.
    """
    filename = os.path.join(path, STATE_FILE)
    if not os.path.isfile(filename):
        raise RLGraphCheckpointError(f"no agent checkpoint in '{path}'", where=f"{agent_type}.load_model",
                                     expected=f"a directory written by store_model (with {STATE_FILE})")
    try:
        with open(filename, "rb") as handle:
            payload = pickle.load(handle)
    except Exception as error:  # noqa: BLE001 - a damaged pickle raises many types.
        raise RLGraphCheckpointError(f"cannot read '{filename}' ({type(error).__name__}: {error})",
                                     where=f"{agent_type}.load_model") from error
    if not isinstance(payload, dict) or payload.get("format_version") not in (1, FORMAT_VERSION):
        raise RLGraphCheckpointError(f"'{filename}' is not an rlgraph agent state", where=f"{agent_type}.load_model",
                                     expected=f"format_version 1 or {FORMAT_VERSION}")
    missing = sorted(set(REQUIRED_KEYS) - set(payload.get("state") or {})) if isinstance(payload.get("state"), dict) \
        else list(REQUIRED_KEYS)
    if missing or "rng" not in payload:
        raise RLGraphCheckpointError(f"'{filename}' is incomplete", where=f"{agent_type}.load_model",
                                     expected=list(REQUIRED_KEYS) + ["rng"], received=f"missing {missing}")
    stored_type = payload["state"].get("agent_type")
    if stored_type != agent_type:
        raise RLGraphCheckpointError("the checkpoint was written by another agent type",
                                     where=f"{agent_type}.load_model", expected=agent_type, received=stored_type)
    if payload["format_version"] == 1:
        payload["state"]["buffers"] = {env_id: [Transition(s, a, r, d, s_tp1) for s, a, r, s_tp1, d in buffer]
                                       for env_id, buffer in payload["state"]["buffers"].items()}
    return payload


def restore_rng(payload: dict, executor: Any) -> None:
    """Restores the random generator states when the checkpoint comes from the same backend."""
    if payload.get("backend") == executor.backend:
        executor.set_rng_state(payload["rng"])
    else:
        executor.set_rng_state({"numpy": payload["rng"]["numpy"], "backend": None})
