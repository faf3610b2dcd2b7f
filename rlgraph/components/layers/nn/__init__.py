"""Neural-network layers."""
from rlgraph.components.layers.nn.activation_functions import get_activation_function
from rlgraph.components.layers.nn.concat_layer import ConcatLayer
from rlgraph.components.layers.nn.conv2d_layer import Conv2DLayer
from rlgraph.components.layers.nn.dense_layer import DenseLayer
from rlgraph.components.layers.nn.local_response_normalization_layer import LocalResponseNormalizationLayer
from rlgraph.components.layers.nn.lstm_layer import LSTMLayer
from rlgraph.components.layers.nn.maxpool2d_layer import MaxPool2DLayer
from rlgraph.components.layers.nn.multi_lstm_layer import MultiLSTMLayer
from rlgraph.components.layers.nn.nn_layer import NNLayer
from rlgraph.components.layers.nn.residual_layer import ResidualLayer

__all__ = ["get_activation_function", "NNLayer", "DenseLayer", "Conv2DLayer", "MaxPool2DLayer", "ConcatLayer",
           "ResidualLayer", "LSTMLayer", "MultiLSTMLayer", "LocalResponseNormalizationLayer"]
