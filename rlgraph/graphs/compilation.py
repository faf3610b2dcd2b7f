"""Compiled root API methods (`execution_spec.compile`, checked in `rlgraph/utils/compile_spec.py`).

A root API method's call plan (`plans.py`) is everything it runs, which is what a compiler needs:

- **PyTorch**: `TorchCompiledRun` compiles the plan with `torch.compile(fullgraph=True)` (Inductor;
  CUDA graphs with mode "reduce-overhead" on a GPU). One graph or nothing: a plan that cannot be
  compiled whole (a graph break, e.g. python maths on a tensor's value, or a compiler failure) runs
  uncompiled, with one warning that names the reason. Compilation fails before the compiled code
  runs, so the call that found out runs uncompiled once, exactly as without `compile`. Random ops
  draw from torch's own generator (Inductor's `fallback_random`): the same numbers as uncompiled.
- **TensorFlow**: XLA (`tf.function(jit_compile=True)`). XLA would change two things, so a method
  whose traced graph has such ops stays uncompiled (one warning naming them): random ops (XLA has
  its own generator: other numbers from the same seed) and assertions (XLA drops them, so an in-graph
  check would stop refusing bad input). Ops XLA cannot compile fail at the first call, before any
  op runs: that method then runs uncompiled (one warning).

Either way a compiled method's results equal the uncompiled ones within float tolerance (fused
kernels round differently). `CompileStatus` (the executor's `compile_status`, also
`build_stats["compile"]`) says per method whether it runs compiled, why not, and the seconds its
first compiled call took (compilation included).
"""
from __future__ import annotations

import logging
import re
import time
import types
from typing import Any, Optional

logger = logging.getLogger(__name__)

# Where in the graph functions' code Dynamo stopped: its "Caused by" note ("# path.py:N in f") or
# else its user-code traceback ('File "path.py", line N, in f', innermost last).
_CAUSED_BY = re.compile(r"# (\S+\.py):(\d+) in (\w+)")
_TRACEBACK_LINE = re.compile(r'File "([^"]+\.py)", line (\d+), in (\w+)')
_PLAN_RUN = "rlgraph/graphs/plans.py"


class CompileStatus(dict):
    """Root API method -> {"compiled": True | False | None (not called yet), "reason": why not (or
    None), "seconds": its first compiled call (compilation included), or None}."""

    def add(self, api: str) -> dict:
        entry = self[api] = {"compiled": None, "reason": None, "seconds": None}
        return entry

    def refuse(self, api: str, reason: str, where: str) -> None:
        """Marks `api` as running uncompiled, with one warning naming `reason`."""
        entry = self[api]
        entry.update(compiled=False, reason=reason)
        logger.warning("%s runs uncompiled (execution_spec.compile): %s", where, reason)


def own_code_run(plan: Any, api: str):
    """fn(tensors): `plan.run` with a code object of its own. torch.compile keeps its compiled code
    and its recompile budget (8) per code object: without this every API method of every agent in
    the process would share `CallPlan.run`'s."""
    function = type(plan).run
    code = function.__code__.replace(co_name=f"run_{api}", co_qualname=f"CallPlan.run_{api}")
    return types.MethodType(types.FunctionType(code, function.__globals__, f"run_{api}"), plan)


class TorchCompiledRun:
    """A root API method's plan run compiled by `torch.compile`, or uncompiled once compilation failed.

    Args:
        run: The plan's bound `CallPlan.run` (fn(tensors) -> output).
        api: The root API method's name.
        mode: torch.compile's mode (None: "reduce-overhead" on a GPU, else "default").
        on_gpu: Whether the executor's device is a GPU.
        status: The executor's `CompileStatus` (this method's entry is added).
        where: "<root scope>.<api>", for the warning.
    """

    __slots__ = ("eager", "compiled", "entry", "status", "api", "where", "_config", "_errors")

    def __init__(self, run: Any, api: str, mode: Optional[str], on_gpu: bool, status: CompileStatus, where: str):
        import torch
        import torch._dynamo
        from torch._inductor import list_mode_options
        self.eager, self.api, self.status, self.where = run, api, status, where
        self.entry = status.add(api)
        options = dict(list_mode_options(mode or ("reduce-overhead" if on_gpu else "default")))
        # Random ops draw from torch's generator as uncompiled code does (Inductor's own differs).
        options["fallback_random"] = True
        self.compiled = torch.compile(own_code_run(run.__self__, api), fullgraph=True, options=options)
        # Updates differentiate with torch.autograd.grad, which Dynamo traces only when asked; set for
        # these calls alone, not for the process.
        self._config = lambda: torch._dynamo.config.patch(trace_autograd_ops=True)
        # A method that Dynamo recompiles again and again (a guard on a python value that keeps
        # changing) fails at the recompile limit with FailOnRecompileLimitHit (fullgraph), which is no
        # TorchDynamoException: it runs uncompiled from then on, with the warning.
        self._errors = (torch._dynamo.exc.TorchDynamoException, torch._dynamo.exc.FailOnRecompileLimitHit)

    def __call__(self, tensors: list) -> Any:
        compiled = self.compiled
        if compiled is not None:
            try:
                with self._config():
                    if self.entry["compiled"]:
                        return compiled(tensors)
                    start = time.perf_counter()
                    output = compiled(tensors)
                    self.entry.update(compiled=True, seconds=time.perf_counter() - start)
                    return output
            except self._errors as error:
                # Dynamo and Inductor fail while compiling, before the compiled code runs: nothing
                # of this call has happened yet, so it runs uncompiled below, as it would without.
                self.compiled = None
                self.status.refuse(self.api, torch_failure_reason(error), self.where)
        return self.eager(tensors)


def torch_failure_reason(error: BaseException) -> str:
    """One line of why torch.compile could not compile a plan, with the rlgraph source line where
    that is named."""
    if type(error).__name__ == "FailOnRecompileLimitHit":
        import torch._dynamo
        return (f"recompiled {torch._dynamo.config.recompile_limit} times (torch._dynamo's recompile_limit): "
                "a guard keeps failing, e.g. a graph function reads a python value that changes between calls")
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    head = lines[0] if lines else ""
    if head.endswith("raised:") and len(lines) > 1:  # BackendCompilerFailed: the backend's own error follows.
        head = f"{head} {lines[1]}"
    if len(head) > 240:
        head = head[:237] + "..."
    text = f"{type(error).__name__}: {head}"
    message = str(error)
    locations = _CAUSED_BY.findall(message) or \
        [m for m in _TRACEBACK_LINE.findall(message) if not m[0].endswith(_PLAN_RUN)]
    if not locations:
        return text
    path, line, function = locations[-1]
    if "/rlgraph/" in f"/{path}":  # rlgraph's own files by their package path, others as given.
        path = "rlgraph/" + f"/{path}".rsplit("/rlgraph/", 1)[1]
    return f"{text} (at {path}:{line} in {function})"


# Op types whose XLA kernels would change a result: random ops (XLA's generator draws other numbers
# than TF's kernels from the same seeds), stateless and stateful ones, and assertions (XLA compiles
# them away). Not control flow and calls (StatelessIf, StatelessWhile, StatefulPartitionedCall).
_XLA_CHANGED = re.compile(r"Random|Multinomial|TruncatedNormal|StandardNormal|^StatefulUniform|^StatelessShuffle"
                          r"|^Assert$")


def xla_changed_ops(op_types: Any) -> list:
    """The op types among `op_types` whose results XLA would change, sorted.

    >>> xla_changed_ops(["MatMul", "RandomUniform", "StatelessIf", "StatefulPartitionedCall", "Assert",
    ...                  "StatelessRandomUniformV2", "StatefulStandardNormalV2", "StatelessWhile"])
    ['Assert', 'RandomUniform', 'StatefulStandardNormalV2', 'StatelessRandomUniformV2']
    """
    return sorted(t for t in set(op_types) if _XLA_CHANGED.search(t))


def xla_refusal(concrete: Any) -> Optional[str]:
    """Why XLA must not compile traced function `concrete` (None: it may): the op types in its graph,
    nested functions included, whose results XLA would change."""
    graph_def = concrete.graph.as_graph_def()
    op_types = {node.op for node in graph_def.node}
    for function in graph_def.library.function:
        op_types.update(node.op for node in function.node_def)
    changed = xla_changed_ops(op_types)
    if not changed:
        return None
    randoms = [t for t in changed if t != "Assert"]
    parts = []
    if randoms:
        parts.append(f"random ops ({', '.join(randoms)}) would draw other numbers from XLA's generator")
    if "Assert" in changed:
        parts.append("in-graph assertions (Assert) would be compiled away")
    return "; ".join(parts)


def is_xla_compile_error(error: BaseException) -> bool:
    """Whether a TF error comes from XLA failing to compile a jit_compile function (raised before any
    of its ops runs)."""
    message = str(getattr(error, "message", error))
    return "_XlaMustCompile" in message or "XLA_CPU_JIT" in message or "XLA_GPU_JIT" in message or \
        "tf2xla conversion failed" in message
