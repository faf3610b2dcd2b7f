"""Exporting an agent's greedy policy as a file that runs without rlgraph.

`export_policy(agent, path, format)` (also `Agent.export_policy`) writes the greedy policy,
preprocessing + network + action selection, in one of three formats:

| format          | written by | loads with                                                      |
|-----------------|------------|-----------------------------------------------------------------|
| `"torchscript"` | PyTorch    | `torch.jit.load(path)`; call `policy(states)`                   |
| `"onnx"`        | PyTorch    | `onnxruntime.InferenceSession(path)`; `session.run(None, feeds)` |
| `"savedmodel"`  | TensorFlow | `tf.saved_model.load(path)`; call `policy.greedy_actions(states)` |

An agent on the other backend is exported through a twin: the same spec built on the writing
backend, given the agent's policy and preprocessor weights (and checked to act like the agent
before anything is written). So every backend writes every format, as long as both backends are
installed and the agent was made from a spec (`Agent.from_spec`).

Inputs and outputs, the same in every format: a plain state space is one tensor `states`
[batch, ...]; a container state space is a flat mapping from the space's flat keys without the
leading slash (`{"camera": ..., "nav/x": ...}`; tuple positions are `_T0_`, `_T1_`, ...) to
tensors. Actions come back the same way (`actions`, or the action space's flat keys). The batch
dimension is free. ONNX names its inputs and outputs by these keys.

Every export is checked before it is put in place: the file is loaded with its own runtime and
must give the agent's greedy actions (`get_action(use_exploration=False)`) on sampled states:
equal for discrete actions, within 1e-5 (relative and absolute) for continuous ones. It is then
moved into place atomically; a failed export leaves whatever was at `path` untouched.

This module drives an export; the file format (names, the JSON description) is in
`policy_export_format.py`, the three writers in `policy_export_writers.py` and the check in
`policy_export_checks.py`.
"""
from __future__ import annotations

import copy
import os
import secrets
import shutil
from typing import Any, Dict, Tuple

from rlgraph.agents.policy_export_checks import (VERIFY_STATES, compare_actions, load_and_run, sample_states,
                                                 verify_export)
from rlgraph.agents.policy_export_format import (METADATA_NAME, METADATA_VERSION, input_names, policy_metadata,
                                                 read_metadata)
from rlgraph.agents.policy_export_writers import WRITERS, Select, policy_variable_scopes
from rlgraph.backend_system import is_backend_installed
from rlgraph.utils.rlgraph_errors import RLGraphBackendUnavailableError, RLGraphExportError

# The names this module has always offered, wherever they live now.
__all__ = ["POLICY_FORMATS", "METADATA_NAME", "METADATA_VERSION", "VERIFY_STATES", "Select", "export_policy",
           "input_names", "load_and_run", "read_metadata"]

#: Export format -> the backend that writes it.
POLICY_FORMATS: Dict[str, str] = {"torchscript": "pytorch", "onnx": "pytorch", "savedmodel": "tf"}


def export_policy(agent: Any, path: str, format: str, preprocessing: bool = True) -> str:  # noqa: A002 - the format's name
    """Writes `agent`'s greedy policy to `path` in `format` (see the module docstring).

    Args:
        agent: A built agent whose class defines `greedy_policy_graph`.
        path: The file (TorchScript, ONNX) or directory (SavedModel) to write; an existing one
            of the same kind is replaced atomically, anything else is refused.
        format: "torchscript", "onnx" or "savedmodel".
        preprocessing: Include the agent's preprocessor (the export then takes raw states, as
            `get_action` does). False exports the policy on preprocessed states; needed for a
            preprocessor that keeps state between calls (frame stacks, running statistics).

    Returns:
        The path written.

    Raises:
        RLGraphExportError: An unknown format, a policy the export cannot express (internal
            states, a stateful preprocessor), a missing exporter package, an agent on the other
            backend without a spec, or an export that does not reproduce the agent's actions.
        RLGraphBackendUnavailableError: The format's backend is not installed.
    """
    where = f"{getattr(agent, 'name', type(agent).__name__)}.export_policy"
    if format not in POLICY_FORMATS:
        raise RLGraphExportError(f"unknown export format {format!r}", where=f"{where}(format)",
                                 expected=sorted(POLICY_FORMATS), received=repr(format))
    if not isinstance(preprocessing, bool):
        raise RLGraphExportError("preprocessing must be True or False", where=f"{where}(preprocessing)",
                                 received=repr(preprocessing))
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise RLGraphExportError("path must be a file or directory name", where=f"{where}(path)",
                                 received=repr(path))
    path = os.path.abspath(os.path.expanduser(str(path)))
    _check_target(path, format, where)
    _check_packages(format, where)
    policy = _policy_of(agent, preprocessing, where)
    writer_backend = POLICY_FORMATS[format]
    writer = agent if agent.backend == writer_backend else _twin(agent, writer_backend, preprocessing, where)
    in_space = agent.state_space if preprocessing else agent.preprocessed_state_space
    metadata = policy_metadata(agent, format, preprocessing, in_space)
    parent, name = os.path.split(path)
    os.makedirs(parent, exist_ok=True)
    temporary = os.path.join(parent, f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        api, select = policy if writer is agent else _policy_of(writer, preprocessing, where)
        WRITERS[format](writer, api, select, in_space, temporary, metadata, where)
        verify_export(agent, format, temporary, in_space, preprocessing, where)
        _put_in_place(temporary, path, where)
    finally:
        if os.path.isdir(temporary):
            shutil.rmtree(temporary, ignore_errors=True)
        elif os.path.lexists(temporary):
            os.remove(temporary)
        if writer is not agent:
            writer.terminate()
    return path


def _policy_of(agent: Any, preprocessing: bool, where: str) -> Tuple[str, Select]:
    graph = getattr(agent, "greedy_policy_graph", None)
    if graph is None:
        raise RLGraphExportError(f"{type(agent).__name__} has no greedy policy to export", where=where)
    if agent.graph_executor is None:
        raise RLGraphExportError("the agent is not built", where=where, hint="call agent.build() first.")
    if preprocessing:
        preprocessor = getattr(agent.root_component, "preprocessor", None)
        if preprocessor is not None and preprocessor.is_stateful:
            raise RLGraphExportError(
                "the agent's preprocessor keeps state between calls (a frame stack or running statistics), "
                "which an exported function cannot carry", where=f"{where}(preprocessing)",
                hint="export with preprocessing=False and preprocess the states before calling the export.")
    return graph(preprocessing)


def _twin(agent: Any, backend: str, preprocessing: bool, where: str) -> Any:
    """The agent built from its spec on `backend`, with the agent's policy and preprocessor weights."""
    if not is_backend_installed(backend):
        raise RLGraphBackendUnavailableError(
            backend, f"the format needs backend '{backend}' to write it, which is not installed", where=where)
    if agent.spec is None:
        raise RLGraphExportError(
            f"exporting this format from a {agent.backend} agent builds a {backend} twin from the agent's spec, "
            "and this agent was not made by Agent.from_spec", where=where,
            hint="create the agent with Agent.from_spec(...), or build it on the format's backend.")
    spec = copy.deepcopy(agent.spec)
    twin = type(agent).from_spec(spec, state_space=agent.state_space, action_space=agent.action_space,
                                 backend=backend)
    scopes = policy_variable_scopes(agent)
    weights = {k: v for k, v in agent.graph_executor.get_weights().items() if k.startswith(tuple(scopes))}
    wanted = {k for k in twin.graph_executor.get_weights() if k.startswith(tuple(scopes))}
    if set(weights) != wanted:
        twin.terminate()
        raise RLGraphExportError(f"the {backend} twin of the agent has other variables than the agent",
                                 where=where, expected=sorted(set(weights)), received=sorted(wanted))
    twin.set_weights(weights)
    in_space = agent.state_space if preprocessing else agent.preprocessed_state_space
    states = sample_states(in_space, 64)
    mismatch = compare_actions(agent.get_action(states, use_exploration=False, apply_preprocessing=preprocessing),
                        twin.get_action(states, use_exploration=False, apply_preprocessing=preprocessing),
                        agent.action_space)
    if mismatch:
        twin.terminate()
        raise RLGraphExportError(f"the {backend} twin of the agent does not act like it ({mismatch})", where=where)
    return twin


def _check_target(path: str, format: str, where: str) -> None:  # noqa: A002
    """An existing `path` may only be an earlier rlgraph export of the same kind (file or directory),
    or an empty directory for a SavedModel: an export never replaces anything else."""
    if not os.path.lexists(path):
        return
    wanted_directory = format == "savedmodel"
    kind = "directory" if wanted_directory else "file"
    if os.path.islink(path) or os.path.isdir(path) != wanted_directory:
        raise RLGraphExportError(f"the export path exists and is not a {kind}", where=f"{where}(path)",
                                 expected=f"a new path or an earlier {format} export to replace", received=path)
    if wanted_directory and not os.listdir(path):
        return
    try:
        read_metadata(path)
    except (RLGraphExportError, OSError, ValueError):
        raise RLGraphExportError(f"the export path holds a {kind} that is not an rlgraph policy export: an export "
                                 "would replace it", where=f"{where}(path)",
                                 expected=f"a new path or an earlier {format} export to replace", received=path,
                                 hint="choose another path.") from None


def _put_in_place(temporary: str, path: str, where: str) -> None:
    from rlgraph.utils.checkpoint_dir import fsync_tree, replace_directory
    fsync_tree(temporary)
    if os.path.isdir(temporary):
        if os.path.isdir(path):
            replace_directory(temporary, path)  # `temporary` now holds the old export: the caller removes it.
        else:
            os.rename(temporary, path)
    else:
        os.replace(temporary, path)
    fsync_tree(os.path.dirname(path), files=False)


def _check_packages(format: str, where: str) -> None:  # noqa: A002
    needed = {"onnx": ["onnx", "onnxscript", "onnxruntime"]}.get(format, [])
    import importlib.util
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        raise RLGraphExportError(f"the {format} export needs the package(s) {', '.join(missing)}", where=where,
                                 hint="install them with `pip install -c constraints.txt -e \".[export]\"`.")
