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
"""
from __future__ import annotations

import contextlib
import copy
import json
import os
import secrets
import shutil
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from rlgraph.backend_system import backend_scope, is_backend_installed
from rlgraph.spaces import Space
from rlgraph.utils.nest import flatten_op, unflatten_op
from rlgraph.utils.rlgraph_errors import RLGraphBackendUnavailableError, RLGraphExportError

#: Export format -> the backend that writes it.
POLICY_FORMATS: Dict[str, str] = {"torchscript": "pytorch", "onnx": "pytorch", "savedmodel": "tf"}
#: The name of the JSON description stored with every export (inputs, outputs, spaces, source).
METADATA_NAME = "rlgraph_policy.json"
METADATA_VERSION = 1
#: States sampled to check an export (two batches: one row, and the rest).
VERIFY_STATES = 256
_VERIFY_SEED = 20261125
_TRACE_ROWS = 3  # The example batch the PyTorch exporters trace with (not a verification batch size).
_FLOAT_TOLERANCE = 1e-5
_ONNX_OPSET = 18

#: A function (inside the writing backend's graph) from the outputs of the agent's greedy API
#: method to its greedy actions (nested like the action space).
Select = Callable[[Any], Any]


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
    metadata = _metadata(agent, format, preprocessing, in_space)
    parent, name = os.path.split(path)
    os.makedirs(parent, exist_ok=True)
    temporary = os.path.join(parent, f".{name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        api, select = policy if writer is agent else _policy_of(writer, preprocessing, where)
        _WRITERS[format](writer, api, select, in_space, temporary, metadata, where)
        _verify(agent, format, temporary, in_space, preprocessing, where)
        _put_in_place(temporary, path, where)
    finally:
        if os.path.isdir(temporary):
            shutil.rmtree(temporary, ignore_errors=True)
        elif os.path.lexists(temporary):
            os.remove(temporary)
        if writer is not agent:
            writer.terminate()
    return path


def input_names(space: Space) -> List[str]:
    """The names of an export's inputs (or outputs) for `space`: ["states"] for a plain space,
    else its flat keys without the leading slash."""
    keys = list(space.flatten().keys())
    return ["states"] if keys == [""] else [k.lstrip("/") for k in keys]


def read_metadata(path: str) -> dict:
    """The JSON description stored with an export (any format), without loading its model.

    Raises:
        RLGraphExportError: If `path` holds no rlgraph export description.
    """
    where = "read_metadata"
    text = None
    if os.path.isdir(path):
        candidate = os.path.join(path, "assets.extra", METADATA_NAME)
        if os.path.isfile(candidate):
            with open(candidate, encoding="utf-8") as handle:
                text = handle.read(1 << 20)
    elif os.path.isfile(path):
        import zipfile
        if zipfile.is_zipfile(path):  # TorchScript: a zip archive with extra files.
            with zipfile.ZipFile(path) as archive:
                found = [n for n in archive.namelist() if n.endswith(f"/extra/{METADATA_NAME}")]
                if found and archive.getinfo(found[0]).file_size <= 1 << 20:
                    text = archive.read(found[0]).decode("utf-8")
        else:
            try:
                import onnx
                model = onnx.load(path, load_external_data=False)
                text = next((p.value for p in model.metadata_props if p.key == METADATA_NAME), None)
            except Exception:  # noqa: BLE001 - not an ONNX file either.
                text = None
    if text is None:
        raise RLGraphExportError("no rlgraph policy export found", where=where, received=path,
                                 expected="a file or directory written by export_policy")
    return json.loads(text)


# --- What is exported ----------------------------------------------------------------------------------
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


def _variable_scopes(agent: Any) -> List[str]:
    scopes = [agent.policy_scope() + "/"]
    preprocessor = getattr(agent.root_component, "preprocessor", None)
    if preprocessor is not None:
        scopes.append(preprocessor.global_scope + "/")
    return scopes


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
    scopes = _variable_scopes(agent)
    weights = {k: v for k, v in agent.graph_executor.get_weights().items() if k.startswith(tuple(scopes))}
    wanted = {k for k in twin.graph_executor.get_weights() if k.startswith(tuple(scopes))}
    if set(weights) != wanted:
        twin.terminate()
        raise RLGraphExportError(f"the {backend} twin of the agent has other variables than the agent",
                                 where=where, expected=sorted(set(weights)), received=sorted(wanted))
    twin.set_weights(weights)
    in_space = agent.state_space if preprocessing else agent.preprocessed_state_space
    states = _sample(in_space, 64)
    mismatch = _compare(agent.get_action(states, use_exploration=False, apply_preprocessing=preprocessing),
                        twin.get_action(states, use_exploration=False, apply_preprocessing=preprocessing),
                        agent.action_space)
    if mismatch:
        twin.terminate()
        raise RLGraphExportError(f"the {backend} twin of the agent does not act like it ({mismatch})", where=where)
    return twin


def _metadata(agent: Any, format: str, preprocessing: bool, in_space: Space) -> dict:  # noqa: A002
    import rlgraph

    def describe(space: Space) -> Dict[str, Any]:
        names = input_names(space)
        leaves = list(space.flatten().values())
        return {n: {"shape": [None, *leaf.shape], "dtype": str(np.dtype(leaf.dtype))} for n, leaf in zip(names, leaves)}
    return {"format": "rlgraph-policy", "version": METADATA_VERSION, "export_format": format,
            "rlgraph_version": rlgraph.__version__, "agent": type(agent).__name__, "agent_backend": agent.backend,
            "preprocessing": preprocessing, "inputs": describe(in_space),
            "outputs": {("actions" if n == "states" else n): v for n, v in describe(agent.action_space).items()},
            "state_space": repr(in_space), "action_space": repr(agent.action_space)}


# --- Writers ---------------------------------------------------------------------------------------------
def _scoped_variables(agent: Any) -> List[Tuple[str, Any]]:
    scopes = tuple(_variable_scopes(agent))
    return [(k, r.variable) for k, r in agent.root_component.variable_records_of_tree().items()
            if k.startswith(scopes)]


def _torch_module(agent: Any, api: str, select: Select, in_space: Space, positional: bool):
    """An `nn.Module` running the greedy API's call plan: forward(states) -> actions, inputs and
    outputs flat (see the module docstring); `positional`: one argument per input leaf and a
    tuple of outputs (ONNX)."""
    import torch
    plan = agent.graph_executor.graph_builder.plans[api]
    in_keys = list(in_space.flatten().keys())
    out_keys = list(agent.action_space.flatten().keys())
    names = input_names(in_space)

    class GreedyPolicy(torch.nn.Module):
        def __init__(self):
            super().__init__()
            # The agent's own tensors (the call plan reads them), so the exporters record them as the
            # module's parameters and buffers.
            for index, (_, variable) in enumerate(_scoped_variables(agent)):
                if isinstance(variable, torch.nn.Parameter):
                    self.register_parameter(f"v{index}", variable)
                else:
                    self.register_buffer(f"v{index}", variable)

        def forward(self, *inputs):
            if positional:
                flat = dict(zip(in_keys, inputs))
            else:
                given = inputs[0]
                flat = {"": given} if in_keys == [""] else {"/" + n: given[n] for n in names}
            states = flat[""] if in_keys == [""] else unflatten_op(flat)
            with backend_scope("pytorch"):
                actions = select(plan.run([states]))
            flat_actions = flatten_op(actions)
            if positional:
                return tuple(flat_actions[k] for k in out_keys)
            if out_keys == [""]:
                return flat_actions[""]
            return {k.lstrip("/"): flat_actions[k] for k in out_keys}
    return GreedyPolicy().eval()


@contextlib.contextmanager
def _torch_tracing():
    import torch
    with torch.no_grad(), warnings.catch_warnings():
        # Python-side shape checks become constants of the trace; the export is verified on other
        # batch sizes afterwards, which catches a trace that does not generalize.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")
        yield


def _torch_examples(in_space: Space) -> List[Any]:
    import torch
    return [torch.from_numpy(np.ascontiguousarray(v)) for v in flatten_op(_sample(in_space, _TRACE_ROWS, 7)).values()]


def _write_torchscript(agent: Any, api: str, select: Select, in_space: Space, path: str, metadata: dict,
                       where: str) -> None:
    import torch
    module = _torch_module(agent, api, select, in_space, positional=False)
    examples = _torch_examples(in_space)
    example = examples[0] if len(examples) == 1 else dict(zip(input_names(in_space), examples))
    try:
        with _torch_tracing():
            traced = torch.jit.trace(module, (example,), check_trace=False, strict=False)
            torch.jit.save(traced, path, _extra_files={METADATA_NAME: json.dumps(metadata)})
    except Exception as error:  # noqa: BLE001 - the tracer raises many types.
        raise RLGraphExportError(f"TorchScript cannot trace the greedy policy ({type(error).__name__}: "
                                 f"{str(error)[:300]})", where=where) from error


def _write_onnx(agent: Any, api: str, select: Select, in_space: Space, path: str, metadata: dict,
                where: str) -> None:
    import onnx
    import torch
    module = _torch_module(agent, api, select, in_space, positional=True)
    examples = _torch_examples(in_space)
    batch = torch.export.Dim("batch")
    out_names = [("actions" if n == "states" else n) for n in input_names(agent.action_space)]
    try:
        with _torch_tracing(), _quiet():
            program = torch.onnx.export(module, tuple(examples), dynamo=True, verbose=False,
                                        input_names=input_names(in_space), output_names=out_names,
                                        dynamic_shapes=(tuple({0: batch} for _ in examples),), opset_version=_ONNX_OPSET)
        model = program.model_proto
    except Exception as error:  # noqa: BLE001 - torch.export and the ONNX translation raise many types.
        raise RLGraphExportError(f"the ONNX exporter cannot translate the greedy policy ({type(error).__name__}: "
                                 f"{str(error)[:300]})", where=where) from error
    entry = model.metadata_props.add()
    entry.key, entry.value = METADATA_NAME, json.dumps(metadata)
    onnx.save(model, path)


def _write_savedmodel(agent: Any, api: str, select: Select, in_space: Space, path: str, metadata: dict,
                      where: str) -> None:
    import tensorflow as tf
    from rlgraph.graphs.tensorflow_executor import tensor_spec
    plan = agent.graph_executor.graph_builder.plans[api]
    in_keys = list(in_space.flatten().keys())
    names = input_names(in_space)
    out_keys = list(agent.action_space.flatten().keys())
    specs = flatten_op(tensor_spec(in_space.with_batch_rank()))
    signature = specs[""] if in_keys == [""] else {n: specs[k] for n, k in zip(names, in_keys)}

    def greedy_actions(states):
        flat = {"": states} if in_keys == [""] else {"/" + n: states[n] for n in names}
        nested = flat[""] if in_keys == [""] else unflatten_op(flat)
        with backend_scope("tf"):
            actions = flatten_op(select(plan.run([nested])))
        if out_keys == [""]:
            return actions[""]
        return {k.lstrip("/"): actions[k] for k in out_keys}

    function = tf.function(greedy_actions, input_signature=[signature], autograph=False)
    module = tf.Module(name="rlgraph_greedy_policy")
    try:
        concrete = function.get_concrete_function(signature)
        module.greedy_actions = function
        module.policy_variables = list(concrete.variables)

        def serve(**feeds):
            out = function(feeds["states"] if in_keys == [""] else feeds)
            return {"actions": out} if out_keys == [""] else out
        serving = tf.function(serve, input_signature=None, autograph=False).get_concrete_function(
            **({"states": signature} if in_keys == [""] else signature))
        tf.saved_model.save(module, path, signatures={"serving_default": serving})
    except Exception as error:  # noqa: BLE001 - TF raises many types.
        raise RLGraphExportError(f"TensorFlow cannot save the greedy policy ({type(error).__name__}: "
                                 f"{str(error)[:300]})", where=where) from error
    os.makedirs(os.path.join(path, "assets.extra"), exist_ok=True)
    with open(os.path.join(path, "assets.extra", METADATA_NAME), "w", encoding="utf-8") as handle:
        json.dump(metadata, handle, indent=1)


_WRITERS = {"torchscript": _write_torchscript, "onnx": _write_onnx, "savedmodel": _write_savedmodel}


# --- Checking -------------------------------------------------------------------------------------------
def _sample(space: Space, rows: int, seed: int = _VERIFY_SEED) -> Any:
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
        with torch.no_grad():
            inputs = {n: torch.from_numpy(v) for n, v in feeds.items()}
            out = module(inputs["states"] if names == ["states"] else inputs)
        return out.numpy() if hasattr(out, "numpy") else {k: v.numpy() for k, v in out.items()}
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


def _compare(expected: Any, received: Any, action_space: Space) -> Optional[str]:
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


def _verify(agent: Any, format: str, path: str, in_space: Space, preprocessing: bool, where: str) -> None:  # noqa: A002
    states = _sample(in_space, VERIFY_STATES)
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
    mismatch = _compare(expected, received, agent.action_space)
    if mismatch:
        raise RLGraphExportError(f"the exported {format} policy does not reproduce the agent's greedy actions "
                                 f"({mismatch}); nothing was written", where=where)


def _concatenate(parts: List[Any]) -> Any:
    if isinstance(parts[0], dict):
        return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return np.concatenate(parts)


# --- Files ----------------------------------------------------------------------------------------------
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


@contextlib.contextmanager
def _quiet():
    """Silences the progress lines that torch.onnx.export prints to stdout and its logged notes
    (e.g. that torchvision's operators are not registered)."""
    import logging
    onnx_logger = logging.getLogger("torch.onnx")
    level = onnx_logger.level
    onnx_logger.setLevel(logging.ERROR)
    try:
        with open(os.devnull, "w") as sink, contextlib.redirect_stdout(sink):
            yield
    finally:
        onnx_logger.setLevel(level)
