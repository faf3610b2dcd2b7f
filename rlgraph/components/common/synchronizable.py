"""`Synchronizable`: copies (or Polyak-averages) a component's variables from a twin component."""
from __future__ import annotations

from typing import Any, Dict, Optional

import numpy as np

from rlgraph.backend_system import get_backend
from rlgraph.components.component import Component
from rlgraph.utils.decorators import rlgraph_api, tracing
from rlgraph.utils.nest import flatten_op
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError


class Synchronizable(Component):
    """Added to a component C (e.g. a target Q-network), lets C's variables be synced from a twin.

    The synced variables are all non-local variables of C's sub-tree (trainable or not, so that a
    frozen target network built with `trainable=False` syncs too), except the counters of
    `Synchronizable` components. They are named relative to C's global scope, so that two twins
    with different scopes ("online", "target") use the same names.

    `get_sync_values()` returns their current values as a nested dict following the scopes below
    C: the variable "<C>/dense/kernel" is `values["dense"]["kernel"]` (its auto-key "/dense/kernel"
    is the relative name). `sync(values)` writes such a dict, coming from the twin's own
    `Synchronizable`, into C's variables:

        w <- tau * w_source + (1 - tau) * w

    a hard copy for tau = 1, the soft ("Polyak") target update of DDPG otherwise
    (https://arxiv.org/abs/1509.02971); non-float variables are always copied. With
    `sync_every_n_calls` n > 1 only the n-th, 2n-th, ... call of `sync` writes anything (an int
    counter variable "<scope>/sync_counter" keeps track).

    The component must have a parent, and its API methods wait until the parent and all the
    parent's sub-components have created their variables (`check_variable_completeness` covers
    the parent's sub-tree).

    Args:
        sync_tau: tau in (0, 1]: 1.0 copies, smaller values average.
        sync_every_n_calls: Only every n-th call of `sync` syncs (n >= 1).
        scope: Default "synchronizable".

    Raises:
        RLGraphSpecError: For tau outside (0, 1] or n < 1.

    >>> from rlgraph.components import Component
    >>> from rlgraph.components.layers.nn.dense_layer import DenseLayer
    >>> from rlgraph.spaces import FloatBox
    >>> from rlgraph.tests import ComponentTest
    >>> from rlgraph.utils.decorators import rlgraph_api, tracing
    >>> online = DenseLayer(units=2, weights_spec=1.0, biases_spec=0.0, scope="online")
    >>> target = DenseLayer(units=2, weights_spec=3.0, biases_spec=1.0, scope="target")
    >>> online.add_components(Synchronizable())
    >>> target.add_components(Synchronizable(sync_tau=0.5))
    >>> root = Component(online, target, scope="root")
    >>> @rlgraph_api(component=root)
    ... def apply(self, x):
    ...     return online.apply(x), target.apply(x)
    >>> @rlgraph_api(component=root)
    ... def sync(self):
    ...     target.sub_components["synchronizable"].sync(
    ...         online.sub_components["synchronizable"].get_sync_values())
    >>> test = ComponentTest(root, input_spaces=dict(x=FloatBox(shape=(1,), add_batch_rank=True)),
    ...                      backend="pytorch")
    >>> test.test("sync")
    >>> test.read_variable_values("root/target/kernel").tolist()  # 0.5 * 1.0 + 0.5 * 3.0
    [[2.0, 2.0]]
    """

    def __init__(self, sync_tau: float = 1.0, sync_every_n_calls: int = 1, scope: str = "synchronizable",
                 **kwargs):
        super().__init__(scope=scope, **kwargs)
        where = f"{type(self).__name__}({self.scope})"
        if isinstance(sync_tau, bool) or not isinstance(sync_tau, (int, float, np.number)) or \
                not 0.0 < float(sync_tau) <= 1.0:
            raise RLGraphSpecError("sync_tau must be a number in (0, 1]", where=f"{where}.sync_tau",
                                   expected="0 < tau <= 1 (1: hard copy)", received=repr(sync_tau))
        if isinstance(sync_every_n_calls, bool) or not isinstance(sync_every_n_calls, (int, np.integer)) or \
                sync_every_n_calls < 1:
            raise RLGraphSpecError("sync_every_n_calls must be a positive int", where=f"{where}.sync_every_n_calls",
                                   received=repr(sync_every_n_calls))
        self.sync_tau = float(sync_tau)
        self.sync_every_n_calls = int(sync_every_n_calls)
        self.sync_counter = None
        self._synced = None  # Relative name -> variable, collected once the parent is complete.

    # --- Build --------------------------------------------------------------------------------------
    def check_input_spaces(self, input_spaces, action_space=None):
        if self.parent_component is None:
            raise RLGraphError("a Synchronizable needs a parent component whose variables it syncs",
                               where=self.global_scope,
                               hint="add it to the component to sync: net.add_components(Synchronizable()).")

    def create_variables(self, input_spaces, action_space=None):
        if self.sync_every_n_calls > 1:
            self.sync_counter = self.get_variable("sync_counter", dtype="int", initializer=0, trainable=False)

    def _reset_build_state(self) -> None:
        super()._reset_build_state()
        self._synced = None

    def synced_variables(self) -> Dict[str, Any]:
        """Relative variable name ("dense/kernel") -> variable, for every variable that `sync` writes."""
        if self._synced is None:
            parent = self.parent_component
            prefix = parent.global_scope + "/"
            synced = {}
            for component in parent.get_all_sub_components():
                if isinstance(component, Synchronizable):
                    continue
                for name, record in component.variable_records.items():
                    if not record.local:
                        synced[name[len(prefix):]] = record.variable
            self._synced = dict(sorted(synced.items()))
        return self._synced

    # --- API ----------------------------------------------------------------------------------------
    @rlgraph_api(returns=1, requires_variable_completeness="parent")
    def _graph_fn_get_sync_values(self):
        """The parent's variable values as a nested dict ({"dense": {"kernel": [in, units], ...}})."""
        values = {}
        for name, variable in self.synced_variables().items():
            if get_backend() == "tf":
                value = variable.read_value()
            else:
                value = variable.detach().clone()
            _nest_into(values, name, value, self.global_scope)
        return values

    @rlgraph_api(must_be_complete=False, requires_variable_completeness="parent")
    def _graph_fn_sync(self, values):
        """Writes `values` (as `get_sync_values` of a twin returns them) into the parent's variables.

        Raises:
            RLGraphError: (While building.) If the names or shapes of `values` differ from the
                parent's variables.
        """
        targets = self.synced_variables()
        sources = self._check_values(values, targets)
        if tracing.tracer is not None:
            # The build's trace run only needs the checks above; its writes would be undone at the end
            # of the build anyway (and on PyTorch they leaked into the restored initial values).
            return None
        if get_backend() == "tf":
            self._sync_tf(sources, targets)
        else:
            self._sync_torch(sources, targets)
        return None

    # --- Helpers ------------------------------------------------------------------------------------
    def _check_values(self, values: Any, targets: Dict[str, Any]) -> Dict[str, Any]:
        where = f"{self.global_scope}.sync(values)"
        if not isinstance(values, dict):
            raise RLGraphError("values must be a dict as returned by another Synchronizable's get_sync_values()",
                               where=where, received=type(values).__name__)
        sources = flatten_op(values, scope_separator_at_start=False)
        missing = sorted(set(targets) - set(sources))
        extra = sorted(set(sources) - set(targets))
        if missing or extra:
            raise RLGraphError(f"the values do not match the variables of '{self.parent_component.global_scope}' "
                               f"(missing: {missing or 'none'}; unexpected: {extra or 'none'})", where=where,
                               expected=list(targets), received=sorted(sources),
                               hint="sync only between components of the same structure (same layers and "
                                    "sub-component scopes).")
        wrong = {name: (_shape(sources[name]), _shape(targets[name])) for name in targets
                 if _shape(sources[name]) != _shape(targets[name])}
        if wrong:
            raise RLGraphError("the values have the wrong shapes", where=where,
                               expected={n: s[1] for n, s in wrong.items()},
                               received={n: s[0] for n, s in wrong.items()},
                               hint="the source and target components must have the same layer sizes.")
        return sources

    def _sync_tf(self, sources: Dict[str, Any], targets: Dict[str, Any]) -> None:
        import tensorflow as tf
        tau = self.sync_tau

        def assign_all():
            for name, variable in targets.items():
                source = tf.cast(sources[name], variable.dtype)
                if tau == 1.0 or not variable.dtype.is_floating:
                    variable.assign(source)
                else:
                    variable.assign(tau * source + (1.0 - tau) * variable.read_value())
            return tf.constant(True)

        if self.sync_every_n_calls == 1:
            assign_all()
            return
        count = (self.sync_counter.read_value() + 1) % self.sync_every_n_calls
        self.sync_counter.assign(count)
        tf.cond(tf.equal(count, 0), assign_all, lambda: tf.constant(False))

    def _sync_torch(self, sources: Dict[str, Any], targets: Dict[str, Any]) -> None:
        import torch
        tau = self.sync_tau
        with torch.no_grad():
            if self.sync_every_n_calls > 1:
                count = (int(self.sync_counter) + 1) % self.sync_every_n_calls
                self.sync_counter.fill_(count)
                if count != 0:
                    return
            for name, variable in targets.items():
                source = torch.as_tensor(sources[name]).to(device=variable.device, dtype=variable.dtype)
                if tau == 1.0 or not variable.is_floating_point():
                    variable.copy_(source)
                else:
                    variable.mul_(1.0 - tau).add_(source, alpha=tau)


def _nest_into(nested: dict, name: str, value: Any, where: str) -> None:
    """Puts `value` at path `name` ("a/b/c") into `nested`; a path that is both leaf and node is an error."""
    *path, leaf = name.split("/")
    node = nested
    for part in path:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise RLGraphError(f"variable name '{name}' clashes with another variable named like its scope",
                               where=where, hint="rename the variable or the sub-component.")
    if leaf in node:
        raise RLGraphError(f"variable name '{name}' clashes with a sub-component scope of the same name",
                           where=where, hint="rename the variable or the sub-component.")
    node[leaf] = value


def _shape(value: Any) -> Optional[tuple]:
    shape = getattr(value, "shape", None)
    if shape is None:
        return tuple(np.shape(value))
    return tuple(None if d is None else int(d) for d in shape)
