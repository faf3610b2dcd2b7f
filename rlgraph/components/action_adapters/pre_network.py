"""An action adapter's pre-network: layers between the policy network's output and the action layer."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, List, Optional

from rlgraph.components.component import Component
from rlgraph.components.neural_networks.neural_network import NeuralNetwork
from rlgraph.components.neural_networks.stack import Stack
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphSpecError

PRE_NETWORK_SCOPE = "pre-network"
_FORMS = ('a list of layer specs, e.g. [{"type": "dense", "units": 64, "activation": "relu"}], one layer spec, '
          '{"layers": [...]}, a NeuralNetwork, or null')


def make_pre_network(pre_network_spec: Any, where: str) -> Optional[Stack]:
    """The pre-network that `pre_network_spec` describes, scoped "pre-network"; None for none.

    The original RLgraph's action adapters ran their `pre_network_spec` on the policy network's
    output before the action layer; so do the adapters here (and DDPG's actor head). Forms:

    - None or []: no pre-network (the action layer reads the network output directly).
    - A list of layer specs or layer components (the JSON form of configs).
    - One layer spec (a dict whose "type" is a layer), or one layer component.
    - A network spec: {"layers": [...]} or {"type": "neural-network", "layers": [...]}.
    - A `NeuralNetwork` / `Stack` component (used as it is, with its own scope).

    The pre-network must be feed-forward with one output: it sits inside an adapter that has no
    internal states to pass.

    Args:
        pre_network_spec: The spec (see above).
        where: The argument in errors, e.g. "ActionAdapter(pre_network_spec)".

    Returns:
        The network (a `Stack` whose `apply` returns {"output": ...}), or None.

    Raises:
        RLGraphSpecError: For another form, a layer that cannot be built (the message carries the
            layer's own error), or a recurrent or multi-output network.

    >>> net = make_pre_network([{"type": "dense", "units": 4, "activation": "relu"}], "ActionAdapter(pre_network_spec)")
    >>> net.scope, [layer.scope for layer in net.layers]
    ('pre-network', ['dense'])
    >>> make_pre_network([], "ActionAdapter(pre_network_spec)") is None
    True
    """
    if pre_network_spec is None or (isinstance(pre_network_spec, (list, tuple)) and len(pre_network_spec) == 0):
        return None
    try:
        network = _network(pre_network_spec, where)
    except RLGraphSpecError as error:
        if error.where == where:
            raise
        raise RLGraphSpecError(f"bad pre_network_spec: {error.message}", where=where,
                               expected=error.expected, received=error.received,
                               hint=error.hint or f"give {_FORMS}.") from error
    except RLGraphError as error:
        raise RLGraphSpecError(f"bad pre_network_spec: {error}", where=where, received=repr(pre_network_spec),
                               hint=f"give {_FORMS}.") from error
    if any(getattr(layer, "is_recurrent", False) for layer in network.get_all_sub_components()):
        raise RLGraphSpecError("a pre_network_spec cannot hold recurrent layers", where=where,
                               received=repr(pre_network_spec),
                               hint="put LSTM layers into the policy's network_spec, whose internal states the "
                                    "policy passes on.")
    if len(getattr(network, "keras_outputs", None) or ()) > 1:
        raise RLGraphSpecError("a pre-network must have one output (the action layer's input)", where=where,
                               received=f"{len(network.keras_outputs)} outputs")
    return network


def _network(spec: Any, where: str) -> Stack:
    if isinstance(spec, Stack):
        return spec
    if isinstance(spec, Component):
        return NeuralNetwork(spec, scope=PRE_NETWORK_SCOPE)
    if isinstance(spec, (list, tuple)):
        return NeuralNetwork(*spec, scope=PRE_NETWORK_SCOPE)
    if isinstance(spec, dict):
        if "layers" in spec:
            return NeuralNetwork.from_spec({"scope": PRE_NETWORK_SCOPE, **spec})
        if "type" in spec:
            if issubclass(Component.resolve_type(spec["type"]), Stack):
                return NeuralNetwork.from_spec({"scope": PRE_NETWORK_SCOPE, **spec})
            return NeuralNetwork(spec, scope=PRE_NETWORK_SCOPE)
    raise RLGraphSpecError("cannot make a pre-network of this", where=where, expected=_FORMS,
                           received=repr(spec)[:200])


def leaf_adapter_spec(action_adapter_spec: dict, leaf_keys: List[str], index: int) -> dict:
    """The adapter arguments of action leaf `index`: `action_adapter_spec` without its entries keyed
    by action names, updated with the entry of this leaf (the original RLgraph's per-action form,
    {"turn": {...}, "forward": {...}} for a Dict action space).

    Args:
        action_adapter_spec: The spec shared by all leaves, with optional per-action entries.
        leaf_keys: The flat keys of the action space (`space.flatten()`'s, e.g. "/turn"; "" for a
            primitive space).
        index: The leaf's position in `leaf_keys`.
    """
    keys = [key.lstrip("/") for key in leaf_keys]
    keyed = {k for k, v in action_adapter_spec.items() if k in keys and k and isinstance(v, dict)}
    spec = {k: v for k, v in action_adapter_spec.items() if k not in keyed}
    spec.update(action_adapter_spec[keys[index]] if keys[index] in keyed else {})
    return spec


@contextmanager
def adapter_spec_errors(owner: str, leaf_key: str) -> Iterator[None]:
    """Re-raises an `RLGraphSpecError` of building one leaf's adapter with the leaf named in `where`
    (with per-action specs, the user needs to know which action's entry is wrong)."""
    try:
        yield
    except RLGraphSpecError as error:
        leaf = f"action '{leaf_key.lstrip('/')}'" if leaf_key else "the action"
        raise RLGraphSpecError(error.message, where=f"{owner}(action_adapter_spec) for {leaf}: {error.where}",
                               expected=error.expected, received=error.received, hint=error.hint) from error
