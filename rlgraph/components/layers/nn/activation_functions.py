"""Activation functions by name, for the backend that is active right now.

>>> import rlgraph
>>> with rlgraph.backend_system.backend_scope("pytorch"):
...     import torch
...     fn = get_activation_function("leaky_relu", 0.1)
...     fn(torch.tensor([-1.0, 2.0])).tolist()
[-0.10000000149011612, 2.0]
"""
from __future__ import annotations

from typing import Any, Callable, Optional

from rlgraph.backend_system import get_backend
from rlgraph.utils.rlgraph_errors import RLGraphSpecError
from rlgraph.utils.specifiable import normalize_type_name

# Canonical name -> accepted aliases (normalized: lower case, no "-", "_", ".").
_ALIASES = {
    "linear": ("linear", "identity", "none"), "relu": ("relu",), "tanh": ("tanh",), "sigmoid": ("sigmoid",),
    "elu": ("elu",), "selu": ("selu",), "leakyrelu": ("leakyrelu", "lrelu"), "softplus": ("softplus",),
    "softmax": ("softmax",), "swish": ("swish", "silu"),
}
_CANONICAL = {alias: name for name, aliases in _ALIASES.items() for alias in aliases}
ACTIVATION_NAMES = ("linear", "relu", "tanh", "sigmoid", "elu", "selu", "leaky_relu", "softplus", "softmax", "swish")


def _tf_activation(name: str, params: tuple) -> Callable:
    import tensorflow as tf
    if name == "leakyrelu":
        alpha = float(params[0]) if params else 0.2
        return lambda x: tf.nn.leaky_relu(x, alpha=alpha)
    if name == "elu" and params:
        alpha = float(params[0])
        return lambda x: tf.where(x > 0, x, alpha * (tf.exp(x) - 1.0))
    return {"relu": tf.nn.relu, "tanh": tf.tanh, "sigmoid": tf.sigmoid, "elu": tf.nn.elu, "selu": tf.nn.selu,
            "softplus": tf.nn.softplus, "softmax": tf.nn.softmax, "swish": tf.nn.silu}[name]


def _torch_activation(name: str, params: tuple) -> Callable:
    import torch
    import torch.nn.functional as F
    if name == "leakyrelu":
        alpha = float(params[0]) if params else 0.2
        return lambda x: F.leaky_relu(x, negative_slope=alpha)
    if name == "elu":
        alpha = float(params[0]) if params else 1.0
        return lambda x: F.elu(x, alpha=alpha)
    if name == "softmax":
        return lambda x: torch.softmax(x, dim=-1)
    return {"relu": torch.relu, "tanh": torch.tanh, "sigmoid": torch.sigmoid, "selu": torch.selu,
            "softplus": F.softplus, "swish": F.silu}[name]


def get_activation_function(activation_function: Optional[Any] = None, *other_parameters: Any) -> Optional[Callable]:
    """The activation function (a callable on backend tensors) for the active backend.

    Args:
        activation_function: A callable (returned as is), a name (relu, tanh, sigmoid, elu,
            selu, leaky_relu / lrelu, softplus, softmax, swish, linear), or None for linear.
        *other_parameters: Extra parameters: the negative slope of leaky_relu (default 0.2),
            the alpha of elu (default 1.0).

    Returns:
        The callable, or None for the linear (identity) activation.

    Raises:
        RLGraphSpecError: For an unknown name.
    """
    if activation_function is None or callable(activation_function):
        return activation_function
    key = normalize_type_name(activation_function)
    if key not in _CANONICAL:
        raise RLGraphSpecError(f"unknown activation function {activation_function!r}",
                               where="get_activation_function", expected=", ".join(ACTIVATION_NAMES))
    name = _CANONICAL[key]
    if name == "linear":
        return None
    if get_backend() == "tf":
        return _tf_activation(name, other_parameters)
    return _torch_activation(name, other_parameters)


def check_activation_name(activation_function: Optional[Any], where: str) -> None:
    """Raises RLGraphSpecError early (at construction) for an unknown activation name."""
    if activation_function is None or callable(activation_function):
        return
    if normalize_type_name(activation_function) not in _CANONICAL:
        raise RLGraphSpecError(f"unknown activation function {activation_function!r}", where=where,
                               expected=", ".join(ACTIVATION_NAMES))
