"""Neural-network layers."""
from rlgraph.components.layers.nn.activation_functions import get_activation_function
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.components.layers.nn.nn_layer import NNLayer

__all__ = ["get_activation_function", "NNLayer", "DenseLayer"]
