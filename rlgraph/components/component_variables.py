"""Variables of a component: creation, registries, reading and writing (a mixin of `Component`)."""
from __future__ import annotations

import contextlib
import math
import re
from typing import Any, Dict, Iterator, Optional

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.spaces import BoolBox, FloatBox, IntBox, Space, TextBox
from rlgraph.spaces import variables as space_variables
from rlgraph.utils.ops import FlattenedDataOp
from rlgraph.utils.rlgraph_errors import RLGraphError
from rlgraph.utils.util import convert_dtype


class VariableRecord:
    """A registered variable and how to restore its initial value."""
    __slots__ = ("variable", "initial", "trainable", "local")

    def __init__(self, variable, initial, trainable, local):
        self.variable, self.initial, self.trainable, self.local = variable, initial, trainable, local


class ComponentVariablesMixin:
    """Variable methods of `Component`. Variables are registered under "<global scope>/<name>"."""

    def _init_variable_state(self) -> None:
        self.variables: Dict[str, Any] = {}            # local name -> variable (own variables)
        self.variable_registry: Dict[str, Any] = {}    # global name -> variable (own + sub-tree)
        self.variable_records: Dict[str, VariableRecord] = {}  # global name -> record (own)
        self.variables_created = False
        self.summaries: Dict[str, tuple] = {}

    # --- Creation -------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _variable_creation_scope(self) -> Iterator[None]:
        """While active, every backend variable created in this thread (also by
        `Space.get_variable`) is registered with this component."""
        with space_variables.creation_context(self):
            yield

    def adjust_trainable(self, trainable: bool) -> bool:
        return bool(trainable) if self.trainable is None else bool(self.trainable)

    def on_variable_created(self, name: str, variable: Any, initial: Any, trainable: bool, local: bool) -> None:
        """Registers a freshly created backend variable (called by the creation context)."""
        local_name = name
        index = 1
        while local_name in self.variables:
            local_name = f"{name}_{index}"
            index += 1
        self.variables[local_name] = variable
        global_name = f"{self.global_scope}/{local_name}"
        self.variable_records[global_name] = VariableRecord(variable, initial, trainable, local)
        self.variable_registry[global_name] = variable
        self.propagate_variables([global_name])

    def get_variable(self, name: str = "", shape: Optional[tuple] = None, dtype: Any = "float",
                     initializer: Any = None, trainable: bool = True, from_space: Any = None,
                     add_batch_rank: Any = False, add_time_rank: Any = False, time_major: bool = False,
                     flatten: bool = False, local: bool = False, use_resource: bool = False) -> Any:
        """Creates a backend variable, registered as "<global scope>/<name>".

        Args:
            name: The variable's local name.
            shape: Its shape (default: scalar). Ignored with `from_space`.
            dtype: "float", "int", "bool", "str" or any numpy/backend dtype.
            initializer: None (zeros), a number, an array, fn(shape, np_dtype) -> array, or a named
                spec such as "xavier" or {"type": "truncated_normal", "stddev": 0.1} (see `get_initializer`).
            trainable: Whether optimizers train it (overridden by the component's `trainable`).
            from_space: A Space, or the name of an API argument whose space to use.
            add_batch_rank: With `from_space`: add a batch rank (True: the space's; int: size).
            add_time_rank: With `from_space`: add a time rank likewise.
            time_major: Time rank before batch rank.
            flatten: For container spaces: return a `FlattenedDataOp` auto-key -> variable.
            local: A worker-local variable (never trainable, never synchronized).
            use_resource: Accepted for compatibility; TF2 variables are always resource variables.

        Returns:
            The variable, or a nested dict/tuple (or flat dict) of variables for containers.
        """
        if not name:
            raise RLGraphError("a variable needs a name", where=f"{self.global_scope}.get_variable")
        if f"{self.global_scope}/{name}" in self.variable_records:
            raise RLGraphError(f"variable '{name}' exists already", where=self.global_scope,
                               hint="use another name, or get_variables() to look it up.")
        if from_space is not None:
            space = self._space_for_variable(from_space, name)
            extra = dict(add_batch_rank=add_batch_rank, add_time_rank=add_time_rank, time_major=time_major)
        else:
            space = _space_from_dtype(dtype, shape, f"{self.global_scope}.get_variable({name!r})")
            extra = {}
        with self._variable_creation_scope():
            variable = space.get_variable(name, trainable=trainable, initializer=initializer, local=local, **extra)
        if flatten and isinstance(variable, (dict, tuple)):
            from rlgraph.utils.nest import flatten_op
            return FlattenedDataOp(flatten_op(variable))
        return variable

    def _space_for_variable(self, from_space: Any, name: str) -> Space:
        if isinstance(from_space, str):
            space = self.api_method_inputs.get(from_space)
            if space is None:
                raise RLGraphError(f"no space known for argument '{from_space}'",
                                   where=f"{self.global_scope}.get_variable({name!r})",
                                   expected=sorted(k for k, v in self.api_method_inputs.items() if v is not None))
            return space
        return Space.from_spec(from_space)

    def register_variables(self, *variables: Any) -> None:
        """Adds variables created elsewhere (by backend code) to the registries."""
        for index, variable in enumerate(variables):
            raw = getattr(variable, "name", None)
            name = raw.split(":")[0].split("/")[-1] if isinstance(raw, str) else f"registered_{len(self.variables)}"
            self.on_variable_created(name, variable, _snapshot(variable), _is_trainable(variable), False)

    def propagate_variables(self, keys: Optional[list] = None) -> None:
        """Copies registry entries (all, or `keys`) up into every parent's registry."""
        keys = list(self.variable_registry) if keys is None else keys
        for parent in self.get_parents():
            for key in keys:
                parent.variable_registry[key] = self.variable_registry[key]

    def _all_variable_objects(self) -> list:
        return [record.variable for record in self.variable_records.values()]

    def restore_initial_values(self) -> None:
        """Sets every own variable back to the value it was created with."""
        restore_initial_values([self])

    # --- Lookup ---------------------------------------------------------------------------------
    def get_variables(self, *names: str, global_scope: bool = False, custom_scope_separator: str = "/",
                      trainable_only: bool = False, **kwargs) -> Dict[str, Any]:
        """Variables of this sub-tree by name.

        Args:
            *names: Names relative to this component ("dense/kernel") or global; none: all.
            global_scope: Key the result by global names instead of names relative to this component.
            custom_scope_separator: Separator used in the returned keys.
            trainable_only: Only trainable variables.

        Raises:
            RLGraphError: If a requested name matches no variable.
        """
        if kwargs.pop("collections", None) is not None:
            trainable_only = True
        if kwargs:
            raise RLGraphError(f"unknown argument(s) {sorted(kwargs)}", where=f"{self.global_scope}.get_variables")
        prefix = self.global_scope + "/"
        registry = self.variable_registry
        if trainable_only:
            records = self.variable_records_of_tree()
            registry = {k: v for k, v in registry.items() if records[k].trainable}
        if names and len(names) == 1 and isinstance(names[0], (list, tuple)):
            names = tuple(names[0])
        if not names:
            selected = list(registry)
        else:
            selected = []
            for name in names:
                key = name if name in registry else prefix + name
                if key not in registry:
                    raise RLGraphError(f"no variable named '{name}'", where=self.global_scope,
                                       expected=sorted(k[len(prefix):] for k in registry))
                selected.append(key)

        def out_key(key):
            short = key if global_scope or not key.startswith(prefix) else key[len(prefix):]
            return short.replace("/", custom_scope_separator) if custom_scope_separator != "/" else short
        return {out_key(k): registry[k] for k in selected}

    def get_variables_by_name(self, *names: str, **kwargs) -> Dict[str, Any]:
        """Like `get_variables`, but at least one name is required."""
        if not names:
            raise RLGraphError("no names given", where=f"{self.global_scope}.get_variables_by_name")
        return self.get_variables(*names, **kwargs)

    def check_restored_variables(self, values: Dict[str, Any], where: str) -> None:
        """Checks values about to be restored into this component's variables (local name ->
        numpy array, shapes already checked) before anything is written; components whose
        variables must stay in a range (a memory's positions) raise `RLGraphCheckpointError`.
        The default accepts every value of the right shape."""

    def variable_records_of_tree(self) -> Dict[str, VariableRecord]:
        """Global name -> record for every variable of this sub-tree."""
        out = {}
        for component in self.get_all_sub_components():
            out.update(component.variable_records)
        return out

    # --- Reading and writing (inside graph functions) -------------------------------------------
    @staticmethod
    def assign_variable(ref: Any, value: Any) -> Any:
        """Assigns `value` to variable `ref`. TF: returns the assign op; PyTorch: None."""
        if get_backend() == "tf":
            return ref.assign(value)
        import torch
        with torch.no_grad():
            ref.copy_(torch.as_tensor(value, dtype=ref.dtype))
        return None

    @staticmethod
    def read_variable(variable: Any, indices: Any = None) -> Any:
        """The variable's value (rows `indices` only, if given): a snapshot on both backends,
        which later writes to the variable do not change."""
        if get_backend() == "tf":
            import tensorflow as tf
            return variable.read_value() if indices is None else tf.gather(variable, indices)
        return variable.clone() if indices is None else variable[indices]

    @staticmethod
    def scatter_update_variable(variable: Any, indices: Any, updates: Any) -> Any:
        """Writes `updates` into rows `indices` of `variable`. TF: returns the op; PyTorch: None."""
        if get_backend() == "tf":
            import tensorflow as tf
            return variable.scatter_update(tf.IndexedSlices(tf.convert_to_tensor(updates, variable.dtype),
                                                            tf.cast(indices, tf.int64)))
        import torch
        index = torch.as_tensor(indices, dtype=torch.long)
        with torch.no_grad():
            variable[index] = torch.as_tensor(updates, dtype=variable.dtype)
        return None

    # --- Summaries ------------------------------------------------------------------------------
    def create_summary(self, name: str, values: Any, type_: str = "histogram") -> None:
        """Records a summary "summary/<global scope>/<name>" if it matches `summary_regexp`.

        TF writes it through `tf.summary` when a default writer is set (`tf.summary.create_file_writer`);
        both backends keep the latest value in `self.summaries` for loggers.
        """
        if type_ not in ("histogram", "scalar", "text"):
            raise RLGraphError(f"unknown summary type '{type_}'", where=f"{self.global_scope}.create_summary",
                               expected="histogram, scalar or text")
        full_name = f"{self.global_scope}/{name}"
        if self.summary_regexp is None or not re.search(self.summary_regexp, full_name):
            return
        self.summaries[full_name] = (type_, values)
        if get_backend() == "tf":
            import tensorflow as tf
            step = tf.summary.experimental.get_step()
            if step is not None:
                getattr(tf.summary, type_)("summary/" + full_name, values, step=step)


def _space_from_dtype(dtype: Any, shape: Optional[tuple], where: str) -> Space:
    shape = tuple(shape or ())
    if isinstance(dtype, str) and dtype in ("float", "int", "bool", "str"):
        dtype = {"float": np.float32, "int": np.int32, "bool": np.bool_, "str": np.str_}[dtype]
    np_dtype = convert_dtype(dtype, to="np")
    kind = np.dtype(np_dtype).kind
    if kind == "f":
        return FloatBox(shape=shape, dtype=np_dtype)
    if kind in "iu":
        return IntBox(shape=shape, dtype=np_dtype)
    if kind == "b":
        return BoolBox(shape=shape)
    if kind in "US":
        return TextBox(shape=shape)
    raise RLGraphError("unsupported variable dtype", where=where, received=repr(dtype))


def _snapshot(variable: Any) -> np.ndarray:
    value = variable.numpy() if hasattr(variable, "numpy") and not hasattr(variable, "detach") else \
        variable.detach().cpu().numpy()
    return np.array(value, copy=True)


def _is_trainable(variable: Any) -> bool:
    if hasattr(variable, "requires_grad"):
        return bool(variable.requires_grad)
    return bool(getattr(variable, "trainable", False))


def _restore_tf(record: VariableRecord) -> None:
    import tensorflow as tf
    variable = record.variable
    value = np.broadcast_to(np.asarray(record.initial, dtype=variable.dtype.as_numpy_dtype), variable.shape)
    variable.assign(tf.constant(value))


def restore_initial_values(components: list) -> None:
    """Sets every variable of `components` back to the value it was created with (the build
    undoes its trace runs' writes with this). PyTorch variables are restored in a few batched
    calls (one `_foreach_zero_` for all zero-initialized ones).

    Every variable, written or not: skipping those whose in-place version counter had not moved,
    and restoring only the rows a memory's trace wrote, saved ~0.1 ms of a CartPole DQN build and
    nothing measurable of a Pong DQN build with a 2.8 GB replay (1.3-2.5 s either way: creating
    that storage dominates), so the build keeps no such log.
    """
    written = []
    for component in components:
        for record in component.variable_records.values():
            if hasattr(record.variable, "assign"):
                _restore_tf(record)
            else:
                written.append(record)
    if not written:
        return
    import torch
    zero, copy_to, copy_from = {}, {}, {}  # device -> variables to zero / copy into, sources
    with torch.no_grad():
        for record in written:
            variable, initial = record.variable, record.initial
            if _is_zero(initial):
                zero.setdefault(variable.device, []).append(variable)
            elif type(initial) is not np.ndarray and np.ndim(initial) == 0:
                variable.fill_(torch.as_tensor(np.asarray(initial)).to(variable.dtype))
            else:
                device = variable.device
                copy_to.setdefault(device, []).append(variable)
                copy_from.setdefault(device, []).append(_torch_initial(torch, initial, variable))
        for variables in zero.values():
            torch._foreach_zero_(variables)
        for device, variables in copy_to.items():
            torch._foreach_copy_(variables, copy_from[device])


def _torch_initial(torch: Any, initial: Any, variable: Any) -> Any:
    """The initial value as a tensor of the variable's dtype and shape (a view where possible)."""
    source = torch.as_tensor(np.asarray(initial))
    if source.dtype != variable.dtype:
        source = source.to(variable.dtype)
    return source if source.shape == variable.shape else source.expand_as(variable)


def _is_zero(value: Any) -> bool:
    """Whether a constant initial value is a plain zero (+0.0, 0, False), which `zero_()` writes."""
    kind = type(value)
    if kind is int or kind is bool:
        return value == 0
    if kind is float:
        return value == 0.0 and math.copysign(1.0, value) > 0
    return np.ndim(value) == 0 and value == 0 and not np.signbit(value)
