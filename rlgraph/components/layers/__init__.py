"""Layers: neural-network, preprocessing and string layers."""
from rlgraph.components.layers.layer import Layer
from rlgraph.components.layers.nn import *  # noqa: F401,F403
from rlgraph.components.layers.nn import __all__ as _nn_all
from rlgraph.components.layers.preprocessing import *  # noqa: F401,F403
from rlgraph.components.layers.preprocessing import __all__ as _pre_all
from rlgraph.components.layers.strings import *  # noqa: F401,F403
from rlgraph.components.layers.strings import __all__ as _str_all

__all__ = ["Layer"] + _nn_all + _pre_all + _str_all
