"""`TensorFlowExecutor`: one `tf.function` per root API method, variables in a `tf.Module`."""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import random
import threading
import time
from typing import Any, Optional

import numpy as np

from rlgraph.backend_system import backend_scope
from rlgraph.graphs.compilation import is_xla_compile_error, xla_refusal
from rlgraph.graphs.graph_executor import GraphExecutor, numpy_structure
from rlgraph.graphs.placement import Placement, refuse_variables_elsewhere
from rlgraph.spaces import Dict, Space, Tuple
from rlgraph.utils.decorators import tracing
from rlgraph.utils.devices import tf_device
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphError
from rlgraph.utils.util import convert_dtype


logger = logging.getLogger(__name__)


def tensor_spec(space: Space):
    """The `tf.TensorSpec` (nested for containers) of a space; batch/time ranks are None."""
    import tensorflow as tf
    return _map_leaves(space, lambda leaf: tf.TensorSpec(
        shape=leaf.get_shape(with_batch_rank=True, with_time_rank=True), dtype=convert_dtype(leaf.dtype, to="tf")))


def _map_leaves(space: Space, fn) -> Any:
    """fn(leaf space) for each leaf of `space`, nested like the space (dicts and tuples)."""
    if isinstance(space, Dict):
        return {k: _map_leaves(c, fn) for k, c in space._children()}
    if isinstance(space, Tuple):
        return tuple(_map_leaves(c, fn) for _, c in space._children())
    return fn(space)


class TensorFlowExecutor(GraphExecutor):
    """Serves each root API method through a `tf.function` of its call plan (see `plans.py`) whose
    input signature comes from the root's input spaces (batch/time ranks None), so it is traced
    once: at its first call, or at build for every method with `execution_spec.tf_trace_at_build`
    (the build's own trace has checked every method either way). Variables are tracked in a
    `tf.Module`: `store_model` writes a `tf.train.Checkpoint`, `export_graph` a SavedModel."""

    backend = "tf"
    graph_export_formats = ("savedmodel",)
    default_graph_export_format = "savedmodel"
    _trace_seed: Optional[int] = None  # The graph seed of the traces (`execution_spec.seed`, or `seed()`'s).

    def _configure_backend(self) -> None:
        """`tf_num_threads` sizes both of TF's thread pools: the intra-op pool (threads inside one op)
        and the inter-op pool (independent ops at once), which otherwise has a thread per core, so that
        N threads means N cores at most (e.g. one per seed process)."""
        import tensorflow as tf
        threads = self.execution_spec.get("tf_num_threads")
        if not threads:
            return
        pools = tf.config.threading
        for name, get, set_ in (("intra-op", pools.get_intra_op_parallelism_threads,
                                 pools.set_intra_op_parallelism_threads),
                                ("inter-op", pools.get_inter_op_parallelism_threads,
                                 pools.set_inter_op_parallelism_threads)):
            if get() == int(threads):
                continue
            try:
                set_(int(threads))
            except RuntimeError:
                # TF fixes its thread pools when its runtime starts (e.g. a second agent in one process).
                logger.warning("tf_num_threads=%s ignored: TensorFlow's runtime is already initialized with %s "
                               "%s threads in this process.", threads, get() or "default", name)

    def _resolve_device(self, name: str) -> Any:
        return tf_device(name, type(self).__name__)

    def _device_scope(self) -> Any:
        # Variables are created, and functions traced, under it (a trace fixes its ops' placement).
        import tensorflow as tf
        return tf.device(self.device)

    def _resolve_component_device(self, name: str, owner: str) -> Any:
        return tf_device(name, owner, key="device")

    def _placement(self, name: str, device: Any, home: bool) -> Placement:
        import tensorflow as tf
        wanted = tf.DeviceSpec.from_string(device)

        def elsewhere(value, _):
            if isinstance(value, tf.Variable):
                spec = tf.DeviceSpec.from_string(value.device)
                if (spec.device_type, spec.device_index or 0) != (wanted.device_type, wanted.device_index or 0):
                    return value.device
            return None

        def call(body, component, args, kwargs):
            if tracing.tracer is not None:  # (At build: the arguments' variables checked once.)
                refuse_variables_elsewhere(component, device, (args, kwargs), elsewhere)
            with tf.device(device):  # (TF inserts the copies between devices.)
                return body(component, *args, **kwargs)
        return Placement(name, device, lambda: tf.device(device), call, home=home)

    def _after_build(self) -> None:
        import tensorflow as tf
        self.module = tf.Module(name="rlgraph_model")
        with tf.init_scope():
            self.module.model_variables = {k: r.variable for k, r in self._records().items()}
        self.functions = {}
        self.trace_times = {}  # Root API method -> seconds its tf.function took to trace.
        self._signatures = {}
        # Calls go to each function's one concrete function (its signature is fixed): that skips the
        # polymorphic dispatch, about 40% of a small function's call cost.
        self._concrete = {}
        self._flat_call = {}  # Root API method -> whether calls may go to its flat inputs directly.
        self._tf = tf
        self._trace_lock = threading.Lock()
        # Methods traced as XLA functions (execution_spec.compile), until one proves uncompilable, and
        # those of them whose first call (XLA compiles at it) has not been timed yet.
        self._xla = set(self.compiled_apis)
        self._xla_untimed = set(self.compiled_apis)
        for api, args in self.graph_builder.api_signatures.items():
            self._signatures[api] = [tensor_spec(space) for _, space in args]
            if api in self._xla:
                self.compile_status.add(api)
                if self.placements:  # (XLA compiles for one device and refuses variables elsewhere.)
                    self._xla.discard(api)
                    self._xla_untimed.discard(api)
                    self.compile_status.refuse(api, f"XLA compiles for one device, and components live on "
                                                    f"others ({', '.join(sorted(self.placements))})",
                                               f"{self._where()}.{api}")
            self.functions[api] = self._function(api)
        self.module.api_functions = dict(self.functions)
        self._checkpoint = tf.train.Checkpoint(model=self.module)
        if self.execution_spec.get("tf_trace_at_build"):
            for api in self.functions:
                self._concrete_function(api)

    def _function(self, api: str) -> Any:
        """The `tf.function` of root API method `api`'s call plan (with XLA while `api` is in `_xla`)."""
        return self._tf.function(_api_body(self.graph_builder.plans[api], api), input_signature=self._signatures[api],
                                 autograph=False, jit_compile=api in self._xla)

    def _run_uncompiled(self, api: str, reason: str) -> None:
        """Serves `api` from an uncompiled `tf.function` from now on (one warning naming `reason`)."""
        self._xla.discard(api)
        self._xla_untimed.discard(api)
        self.compile_status.refuse(api, reason, f"{self._where()}.{api}")
        self.functions[api] = self.module.api_functions[api] = self._function(api)
        self._concrete.pop(api, None)

    def _concrete_function(self, api: str) -> Any:
        """The traced function of root API method `api` (traced by the first caller; one trace per
        method even when threads call at once)."""
        concrete = self._concrete.get(api)
        if concrete is None:
            with self._trace_lock:
                concrete = self._concrete.get(api)
                if concrete is None:
                    start = time.perf_counter()
                    with backend_scope("tf"), _graph_seed(self._trace_seed), self._device_scope():
                        concrete = self.functions[api].get_concrete_function(*self._signatures[api])
                    if api in self._xla:
                        refusal = xla_refusal(concrete)
                        if refusal:
                            self._run_uncompiled(api, f"XLA would change its results: {refusal}")
                            with backend_scope("tf"), _graph_seed(self._trace_seed), \
                                    self._device_scope():
                                concrete = self.functions[api].get_concrete_function(*self._signatures[api])
                    self.trace_times[api] = time.perf_counter() - start
                    spaces = [space for _, space in self.graph_builder.api_signatures[api]]
                    self._flat_call[api] = _takes_flat_inputs(concrete, self._signatures[api], spaces)
                    self._concrete[api] = concrete
        return concrete

    def _to_tensor(self, array: np.ndarray) -> Any:
        # The converters have checked the array against the space and cast it to the space's dtype,
        # which is the input signature's dtype (see _takes_flat_inputs).
        return self._tf.constant(array)

    def _call_api(self, name: str, tensors: list) -> Any:
        tf = self._tf
        concrete = self._concrete.get(name) or self._concrete_function(name)
        try:
            if name in self._xla_untimed:
                return self._first_xla_call(name, concrete, tensors)
            if self._flat_call[name]:
                # What `concrete(*tensors)` runs once it has matched the arguments to the signature:
                # the inputs are eager tensors of the signature's dtypes and shapes already, so the
                # matching (about half of a small call's cost) is skipped.
                return concrete._call_flat(tf.nest.flatten(tensors), concrete.captured_inputs)
            return concrete(*tensors)
        except tf.errors.OpError as error:
            if name in self._xla and is_xla_compile_error(error):
                # XLA compiles (for each new input shape) before any op runs: nothing of this call has
                # happened, so it runs uncompiled, as it would without execution_spec.compile.
                self._run_uncompiled(name, f"XLA cannot compile it: {_first_line(error.message)}")
                return self._call_api(name, tensors)
            if not isinstance(error, tf.errors.InvalidArgumentError):
                raise
            # In-graph checks (tf.debugging asserts, e.g. a memory asked for more records than it
            # holds) surface as the same RLGraphError that the PyTorch executor raises.
            raise RLGraphError(f"API method '{name}' rejected its input: {_assertion_text(error.message)}",
                               where=f"{self._where()}.{name}") from None

    def _first_xla_call(self, name: str, concrete: Any, tensors: list) -> Any:
        """The first call of an XLA method: timed (compilation included) into `compile_status`."""
        start = time.perf_counter()
        output = concrete(*tensors)
        self._xla_untimed.discard(name)
        self.compile_status[name].update(compiled=True, seconds=time.perf_counter() - start)
        return output

    def _to_numpy(self, output: Any) -> Any:
        return numpy_structure(output, _tf_to_numpy)

    def _read(self, variable: Any) -> np.ndarray:
        return np.array(variable.numpy(), copy=True)

    def _assign(self, variable: Any, value: np.ndarray) -> None:
        variable.assign(value)

    def _seed_backend(self, seed: int) -> None:
        # A traced function's random ops take their seeds from the graph seed at its trace
        # (`_graph_seed`) and keep their state with the function, so each agent has streams of its
        # own. `tf.random.set_seed` is not called: it clears TF's kernel caches, which restarts the
        # random ops of every agent in the process. To restart this agent's streams, its functions
        # that are traced already are traced anew (new functions, new random state).
        self._trace_seed = seed
        traced = list(getattr(self, "_concrete", None) or ())
        for api in traced:
            self.functions[api] = self.module.api_functions[api] = self._function(api)
            del self._concrete[api]
        for api in traced:
            self._concrete_function(api)

    def _save(self, path: str, exclude: frozenset = frozenset()) -> str:
        import tensorflow as tf
        try:
            return self._write_checkpoint(path, exclude)
        except tf.errors.OpError as error:  # TF reports a full disk as an op error that quotes strerror.
            full = [code for code in (errno.ENOSPC, getattr(errno, "EDQUOT", None))
                    if code is not None and os.strerror(code) in str(error)]
            if not full:
                raise
            raise OSError(full[0], os.strerror(full[0]), path) from error

    def _write_checkpoint(self, path: str, exclude: frozenset) -> str:
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)
        if not exclude:
            return self._checkpoint.write(path)
        import tensorflow as tf
        # The same checkpoint keys ("model/model_variables/<name>") without the excluded variables.
        module = tf.Module(name="rlgraph_model")
        with tf.init_scope():
            module.model_variables = {k: v for k, v in self.module.model_variables.items() if k not in exclude}
        return tf.train.Checkpoint(model=module).write(path)

    def _read_checkpoint(self, path: str) -> dict:
        import tensorflow as tf
        if not tf.io.gfile.exists(path + ".index"):
            raise RLGraphCheckpointError(f"no TF checkpoint at '{path}'", where=f"{self._where()}.load_model",
                                         expected=f"{path}.index and data files (written by store_model)")
        try:
            reader = tf.train.load_checkpoint(path)
            stored = reader.get_variable_to_shape_map()
            keys = {f"model/model_variables/{_escape(k)}/.ATTRIBUTES/VARIABLE_VALUE": k
                    for k in self.module.model_variables}
            return {name: np.asarray(reader.get_tensor(key)) for key, name in keys.items() if key in stored}
        except Exception as error:  # noqa: BLE001 - TF raises several types for damaged files.
            raise RLGraphCheckpointError(f"cannot read the checkpoint '{path}' ({type(error).__name__})",
                                         where=f"{self._where()}.load_model") from error

    def _read_checkpoint_files(self, files: Any, name: str) -> dict:
        # TF reads checkpoints by path: from a private copy of the verified bytes, so that what is
        # parsed is what was verified (the checkpoint directory may change meanwhile).
        files.read(name + ".index")  # (Refuses a checkpoint whose manifest does not list the model.)
        names = [n for n in files.names() if n.startswith(name + ".")]
        with files.materialized(names) as root:
            return self._read_checkpoint(os.path.join(root, name))

    def _export(self, path: str) -> str:
        import tensorflow as tf
        for api in self.functions:  # The SavedModel keeps the traces the calls use (same seeds).
            self._concrete_function(api)
        tf.saved_model.save(self.module, path)
        return path


def _takes_flat_inputs(concrete: Any, signature: list, spaces: list) -> bool:
    """Whether `concrete` can be called with its flat inputs (`_call_flat`): the TF version has that
    method, the traced graph's inputs are the signature's leaves (nest order, same dtypes) plus its
    captures, and the tensors `_to_tensor` makes of the converters' arrays (cast to each space's
    numpy dtype) have the signature's dtypes; else calls go through the public `concrete(*tensors)`."""
    import tensorflow as tf
    try:
        leaves = tf.nest.flatten(signature)
        numpy_dtypes = tf.nest.flatten([_map_leaves(space, lambda leaf: np.dtype(leaf.dtype)) for space in spaces])
        made = [tf.constant(np.zeros((0,), dtype)).dtype for dtype in numpy_dtypes]
        inputs = concrete.inputs
        return callable(getattr(concrete, "_call_flat", None)) and len(made) == len(leaves) and \
            len(inputs) == len(leaves) + len(concrete.captured_inputs) and \
            all(spec.dtype == tensor.dtype == dtype for spec, tensor, dtype in zip(leaves, inputs, made))
    except Exception:  # noqa: BLE001 - another TF's internals: use the public call.
        return False


@contextlib.contextmanager
def _graph_seed(seed: Any):
    """Traces under the executor's seed: a `tf.function`'s graph takes TF's global seed at trace time
    as its graph-level seed (its random ops' seeds follow from it), so a method traced at its first
    call draws the same numbers as one traced at build, whatever other agents did in between. The
    global seed is swapped on the context alone (`tf.random.set_seed` would also reset eager random
    ops and clear kernel caches) and restored after the trace."""
    from tensorflow.python.eager import context
    ctx = context.context()
    if seed is None or not hasattr(ctx, "_seed"):
        yield
        return
    if not hasattr(ctx, "_rng"):
        # What an eager random op reads for its op seed while a global seed is set (tf.random.set_seed
        # creates it; rlgraph never calls that): another thread's eager op during this trace needs it.
        ctx._rng = random.Random(seed)
    saved = ctx._seed
    ctx._seed = seed
    try:
        yield
    finally:
        ctx._seed = saved


def _api_body(plan, api: str):
    """The python `tf.function` traces for root API method `api`: its call plan from the build (the
    graph functions only; the API methods' python ran once, at build, as on PyTorch)."""
    def body(*args):
        with backend_scope("tf"):
            return _clean_outputs(plan.run(list(args)))
    body.__name__ = api
    return body


def _clean_outputs(output: Any) -> Any:
    """tf.function results: operations become None, variables their value."""
    if isinstance(output, dict):
        return {k: _clean_outputs(v) for k, v in output.items()}
    if isinstance(output, (tuple, list)):
        return type(output)(_clean_outputs(v) for v in output)
    if type(output).__name__ == "Operation" and hasattr(output, "node_def"):
        return None
    if hasattr(output, "read_value") and hasattr(output, "assign"):
        return output.read_value()
    return output


def _tf_to_numpy(value: Any) -> Any:
    return value.numpy() if hasattr(value, "numpy") else value


def _escape(name: str) -> str:
    """How tf.train.Checkpoint writes a dict key into a checkpoint key."""
    return name.replace(".", "..").replace("/", ".S")


def _first_line(message: str) -> str:
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    line = lines[0] if lines else message
    return line if len(line) <= 240 else line[:237] + "..."


def _assertion_text(message: str) -> str:
    """The useful part of a TF run-time error: the assertion's own message and values."""
    for line in message.splitlines():
        line = line.strip()
        if line.startswith("assertion failed:"):
            return line[len("assertion failed:"):].strip()
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    return lines[-1] if lines else message
