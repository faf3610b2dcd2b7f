"""The writers of a policy export: TorchScript and ONNX (from PyTorch) and SavedModel (from TensorFlow)."""
from __future__ import annotations

import contextlib
import json
import os
import warnings
from typing import Any, Callable, List, Tuple

import numpy as np

from rlgraph.agents.policy_export_checks import sample_states
from rlgraph.agents.policy_export_format import METADATA_NAME, input_names
from rlgraph.backend_system import backend_scope
from rlgraph.spaces import Space
from rlgraph.utils.nest import flatten_op, unflatten_op
from rlgraph.utils.rlgraph_errors import RLGraphExportError

_TRACE_ROWS = 3  # The example batch the PyTorch exporters trace with (not a verification batch size).
_ONNX_OPSET = 18

#: A function (inside the writing backend's graph) from the outputs of the agent's greedy API
#: method to its greedy actions (nested like the action space).
Select = Callable[[Any], Any]


def policy_variable_scopes(agent: Any) -> List[str]:
    """The scopes (with a trailing "/") of the variables an export carries: the agent's policy and
    its preprocessor, if it has one."""
    scopes = [agent.policy_scope() + "/"]
    preprocessor = getattr(agent.root_component, "preprocessor", None)
    if preprocessor is not None:
        scopes.append(preprocessor.global_scope + "/")
    return scopes


def _scoped_variables(agent: Any) -> List[Tuple[str, Any]]:
    scopes = tuple(policy_variable_scopes(agent))
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
def _torch_tracing(device: Any):
    """Tracing on `device`, the agent's: its graph functions make their tensors where its variables
    are, as in the agent's own calls (a GPU agent's export runs on that GPU; see `_torch_examples`)."""
    import torch
    on_device = contextlib.nullcontext() if device.type == "cpu" else device  # (The CPU needs no context.)
    with torch.no_grad(), warnings.catch_warnings(), on_device:
        # Python-side shape checks become constants of the trace; the export is verified on other
        # batch sizes afterwards, which catches a trace that does not generalize.
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=FutureWarning)
        warnings.filterwarnings("ignore", category=UserWarning, module=r"torch\.onnx")
        yield


def _torch_examples(in_space: Space, device: Any) -> List[Any]:
    """The example batch to trace with, on `device` (the agent's: its variables are there)."""
    import torch
    examples = flatten_op(sample_states(in_space, _TRACE_ROWS, 7))
    return [torch.from_numpy(np.ascontiguousarray(v)).to(device) for v in examples.values()]


def _write_torchscript(agent: Any, api: str, select: Select, in_space: Space, path: str, metadata: dict,
                       where: str) -> None:
    import torch
    module = _torch_module(agent, api, select, in_space, positional=False)
    device = agent.graph_executor.device
    examples = _torch_examples(in_space, device)
    example = examples[0] if len(examples) == 1 else dict(zip(input_names(in_space), examples))
    try:
        with _torch_tracing(device):
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
    device = agent.graph_executor.device
    examples = _torch_examples(in_space, device)
    batch = torch.export.Dim("batch")
    out_names = [("actions" if n == "states" else n) for n in input_names(agent.action_space)]
    try:
        with _torch_tracing(device), _quiet():
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


WRITERS = {"torchscript": _write_torchscript, "onnx": _write_onnx, "savedmodel": _write_savedmodel}
