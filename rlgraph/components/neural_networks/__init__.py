"""Neural networks and stacks: Stack, NeuralNetwork, PreprocessorStack, DictPreprocessorStack,
MultiInputStreamNeuralNetwork, ActorComponent, VariationalAutoEncoder."""
from rlgraph.components.neural_networks.actor_component import ActorComponent
from rlgraph.components.neural_networks.dict_preprocessor_stack import DictPreprocessorStack
from rlgraph.components.neural_networks.multi_input_stream_neural_network import MultiInputStreamNeuralNetwork
from rlgraph.components.neural_networks.neural_network import NeuralNetwork
from rlgraph.components.neural_networks.preprocessor_stack import PreprocessorStack
from rlgraph.components.neural_networks.stack import Stack, force_tuple
from rlgraph.components.neural_networks.variational_auto_encoder import VariationalAutoEncoder

__all__ = ["Stack", "force_tuple", "NeuralNetwork", "PreprocessorStack", "DictPreprocessorStack",
           "MultiInputStreamNeuralNetwork", "ActorComponent",
           "VariationalAutoEncoder"]
