"""Checking a policy export: running it with its own runtime and comparing its actions with the agent's."""
from __future__ import annotations

import copy
import warnings
from typing import Any, List, Optional

import numpy as np

from rlgraph.agents.policy_export_format import input_names
from rlgraph.spaces import Space
from rlgraph.utils.nest import flatten_op, unflatten_op
from rlgraph.utils.rlgraph_errors import RLGraphExportError

#: States sampled to check an export (two batches: one row, and the rest).
VERIFY_STATES = 256
_VERIFY_SEED = 20261125
_FLOAT_TOLERANCE = 1e-5


def sample_states(space: Space, rows: int, seed: int = _VERIFY_SEED) -> Any:
    """`rows` states of `space` (a batch), the same ones for the same seed; `space` is not reseeded."""
    space = copy.deepcopy(space)
    space.seed(seed)
    return space.with_batch_rank().sample(rows) if not space.has_batch_rank else space.sample(rows)


def load_and_run(format: str, path: str, states: Any, space: Space) -> Any:  # noqa: A002
    """Loads an export with its own runtime (no rlgraph code runs it) and returns its actions for
    a batch of `states` (nested like `space`) as numpy, nested like the action space's flat keys
    (a plain array for a plain action space)."""
    flat = flatten_op(states)
    names = input_names(space)
    feeds = dict(zip(names, (np.ascontiguousarray(v) for v in flat.values())))
    if format == "torchscript":
        import torch
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning)  # (TorchScript's own notice.)
            module = torch.jit.load(path)
        # (An export of an agent on a GPU holds its tensors there: the states go where they are.)
        device = next(iter(module.parameters()), next(iter(module.buffers()), torch.empty(0))).device
        with torch.no_grad():
            inputs = {n: torch.from_numpy(v).to(device) for n, v in feeds.items()}
            out = module(inputs["states"] if names == ["states"] else inputs)
        return out.cpu().numpy() if hasattr(out, "numpy") else {k: v.cpu().numpy() for k, v in out.items()}
    if format == "onnx":
        import onnxruntime
        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        outputs = session.run(None, feeds)
        out_names = [o.name for o in session.get_outputs()]
        return outputs[0] if out_names == ["actions"] else dict(zip(out_names, outputs))
    import tensorflow as tf
    module = tf.saved_model.load(path)
    out = module.greedy_actions(feeds["states"] if names == ["states"] else feeds)
    return out.numpy() if hasattr(out, "numpy") else {k: v.numpy() for k, v in out.items()}


def compare_actions(expected: Any, received: Any, action_space: Space) -> Optional[str]:
    """None if `received` (flat keys without slashes, or a plain array) gives `expected`'s actions;
    else what differs."""
    expected_flat = flatten_op(expected)
    received_flat = flatten_op(received) if not isinstance(received, dict) else \
        {("/" + k if k else k): v for k, v in received.items()}
    if isinstance(received, dict) and set(received_flat) != set(expected_flat):
        return f"action keys {sorted(received_flat)} instead of {sorted(expected_flat)}"
    for key, want in expected_flat.items():
        got = np.asarray(received_flat.get(key))
        want = np.asarray(want)
        label = key.lstrip("/") or "actions"
        if got.shape != want.shape or got.dtype != want.dtype:
            return f"'{label}': {got.dtype} {got.shape} instead of {want.dtype} {want.shape}"
        if want.dtype.kind == "f":
            bad = ~np.isclose(got, want, rtol=_FLOAT_TOLERANCE, atol=_FLOAT_TOLERANCE)
        else:
            bad = got != want
        if bad.any():
            rows = np.unique(np.nonzero(bad)[0]) if bad.ndim else np.array([0])
            return f"'{label}' differs in {len(rows)} of {len(want)} states"
    return None


def verify_export(agent: Any, format: str, path: str, in_space: Space, preprocessing: bool, where: str) -> None:  # noqa: A002
    """Checks that the export at `path` gives the agent's greedy actions on `VERIFY_STATES` sampled
    states, fed as one row and then as the rest (so that a batch size fixed by tracing shows).

    Raises:
        RLGraphExportError: If the export cannot be loaded and run, or its actions differ.
    """
    states = sample_states(in_space, VERIFY_STATES)
    expected = agent.get_action(states, use_exploration=False, apply_preprocessing=preprocessing)
    one = flatten_op(states)
    first = unflatten_op({k: v[:1] for k, v in one.items()}) if list(one) != [""] else one[""][:1]
    rest = unflatten_op({k: v[1:] for k, v in one.items()}) if list(one) != [""] else one[""][1:]
    try:
        outputs = [load_and_run(format, path, part, in_space) for part in (first, rest)]
    except Exception as error:  # noqa: BLE001 - each runtime raises its own types.
        raise RLGraphExportError(f"the exported {format} file cannot be loaded and run "
                                 f"({type(error).__name__}: {str(error)[:300]})", where=where) from error
    received = _concatenate(outputs)
    mismatch = compare_actions(expected, received, agent.action_space)
    if mismatch:
        raise RLGraphExportError(f"the exported {format} policy does not reproduce the agent's greedy actions "
                                 f"({mismatch}); nothing was written", where=where)


def _concatenate(parts: List[Any]) -> Any:
    if isinstance(parts[0], dict):
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return np.concatenate(parts)
