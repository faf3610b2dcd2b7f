"""Components: the building blocks of every model (layers, networks, memories, helpers, losses).

`Component.from_spec` resolves every component class listed in `COMPONENT_NAMES` (matched
regardless of case, "-" and "_"), so layer specs such as {"type": "dense", "units": 64} work.
"""
from rlgraph.components.component import Component
from rlgraph.components.layers import *  # noqa: F401,F403
from rlgraph.components.layers import __all__ as _layers_all
from rlgraph.components.action_adapters import *  # noqa: F401,F403
from rlgraph.components.action_adapters import __all__ as _adapters_all
from rlgraph.components.common import *  # noqa: F401,F403
from rlgraph.components.common import __all__ as _common_all
from rlgraph.components.distributions import *  # noqa: F401,F403
from rlgraph.components.distributions import __all__ as _distributions_all
from rlgraph.components.explorations import *  # noqa: F401,F403
from rlgraph.components.explorations import __all__ as _explorations_all
from rlgraph.components.helpers import *  # noqa: F401,F403
from rlgraph.components.helpers import __all__ as _helpers_all
from rlgraph.components.loss_functions import *  # noqa: F401,F403
from rlgraph.components.loss_functions import __all__ as _losses_all
from rlgraph.components.memories import *  # noqa: F401,F403
from rlgraph.components.memories import __all__ as _memories_all
from rlgraph.components.optimizers import *  # noqa: F401,F403
from rlgraph.components.optimizers import __all__ as _optimizers_all
from rlgraph.components.policies import *  # noqa: F401,F403
from rlgraph.components.policies import __all__ as _policies_all
from rlgraph.components.neural_networks import *  # noqa: F401,F403
from rlgraph.components.neural_networks import __all__ as _nn_all

_namespace = globals()

# Spec name -> class. Each class is also reachable under its class name.
COMPONENT_NAMES = {
    "component": "Component", "layer": "Layer", "nn-layer": "NNLayer", "dense": "DenseLayer",
    "dense-layer": "DenseLayer", "conv2d": "Conv2DLayer", "conv2d-layer": "Conv2DLayer",
    "maxpool2d": "MaxPool2DLayer", "max-pool2d": "MaxPool2DLayer", "concat": "ConcatLayer",
    "concat-layer": "ConcatLayer", "residual": "ResidualLayer", "residual-layer": "ResidualLayer",
    "lstm": "LSTMLayer", "lstm-layer": "LSTMLayer", "multi-lstm": "MultiLSTMLayer",
    "multi-lstm-layer": "MultiLSTMLayer",
    "preprocess-layer": "PreprocessLayer", "grayscale": "GrayScale", "gray-scale": "GrayScale",
    "image-resize": "ImageResize", "image-crop": "ImageCrop", "image-binary": "ImageBinary",
    "normalize": "Normalize", "moving-standardize": "MovingStandardize", "clip": "Clip", "multiply": "Multiply",
    "divide": "Divide", "convert-type": "ConvertType", "reshape": "ReShape", "transpose": "Transpose",
    "sequence": "Sequence", "rank-reinterpreter": "RankReinterpreter",
    "string-layer": "StringLayer", "string-to-hash-bucket": "StringToHashBucket",
    "str-hash-bucket": "StringToHashBucket", "embedding-lookup": "EmbeddingLookup", "embedding": "EmbeddingLookup",
    "stack": "Stack", "neural-network": "NeuralNetwork", "preprocessor-stack": "PreprocessorStack",
    "dict-preprocessor-stack": "DictPreprocessorStack",
    "multi-input-stream-neural-network": "MultiInputStreamNeuralNetwork",
    "multi-input-stream-nn": "MultiInputStreamNeuralNetwork",
    "memory": "Memory", "replay-memory": "ReplayMemory", "replay": "ReplayMemory", "ring-buffer": "RingBuffer",
    "prioritized-replay": "PrioritizedReplay", "fifo-queue": "FIFOQueue",
    "v-trace-function": "VTraceFunction", "v-trace": "VTraceFunction",
    "generalized-advantage-estimation": "GeneralizedAdvantageEstimation", "gae": "GeneralizedAdvantageEstimation",
    "sequence-helper": "SequenceHelper", "softmax-component": "SoftMax", "clipping": "Clipping",
    "loss-function": "LossFunction", "dqn-loss-function": "DQNLossFunction", "dqn-loss": "DQNLossFunction",
    "dqfd-loss-function": "DQFDLossFunction", "dqfd-loss": "DQFDLossFunction",
    "impala-loss-function": "IMPALALossFunction", "impala-loss": "IMPALALossFunction",
    "ppo-loss-function": "PPOLossFunction", "ppo-loss": "PPOLossFunction",
    "actor-critic-loss-function": "ActorCriticLossFunction", "actor-critic-loss": "ActorCriticLossFunction",
    "sac-loss-function": "SACLossFunction", "sac-loss": "SACLossFunction",
    "ddpg-loss-function": "DDPGLossFunction", "ddpg-loss": "DDPGLossFunction",
    "euclidean-distance-loss": "EuclideanDistanceLoss", "categorical-cross-entropy-loss": "CategoricalCrossEntropyLoss",
    "cross-entropy-loss": "CategoricalCrossEntropyLoss",
    "container-loss": "ContainerLossFunction", "container-loss-function": "ContainerLossFunction",
    "synchronizable": "Synchronizable",
    "container-merger": "ContainerMerger", "container-splitter": "ContainerSplitter", "slice": "Slice",
    "batch-apply": "BatchApply", "batch-splitter": "BatchSplitter", "sampler": "Sampler",
    "local-response-normalization": "LocalResponseNormalizationLayer",
    "local-response-normalization-layer": "LocalResponseNormalizationLayer", "lrn": "LocalResponseNormalizationLayer",
    "distribution": "Distribution", "categorical": "Categorical", "normal": "Normal", "gaussian": "Normal",
    "multivariate-normal": "MultivariateNormal", "bernoulli": "Bernoulli", "beta": "Beta",
    "squashed-normal": "SquashedNormal", "gumbel-softmax": "GumbelSoftmax",
    "joint-cumulative": "JointCumulativeDistribution", "joint-cumulative-distribution": "JointCumulativeDistribution",
    "mixture": "MixtureDistribution", "mixture-distribution": "MixtureDistribution",
    "exploration": "Exploration", "epsilon-exploration": "EpsilonExploration", "noise": "Noise",
    "gaussian-noise": "GaussianNoise", "constant-noise": "ConstantNoise",
    "ornstein-uhlenbeck-noise": "OrnsteinUhlenbeckNoise", "ou-noise": "OrnsteinUhlenbeckNoise",
    "time-dependent-parameter": "TimeDependentParameter", "constant-parameter": "Constant",
    "linear-decay": "LinearDecay", "polynomial-decay": "PolynomialDecay", "exponential-decay": "ExponentialDecay",
    "action-adapter": "ActionAdapter", "dueling-action-adapter": "DuelingActionAdapter",
    "baseline-action-adapter": "BaselineActionAdapter", "policy": "Policy", "dueling-policy": "DuelingPolicy",
    "shared-value-function-policy": "SharedValueFunctionPolicy", "actor-component": "ActorComponent",
    "environment-stepper": "EnvironmentStepper", "variational-auto-encoder": "VariationalAutoEncoder",
    "vae": "VariationalAutoEncoder",
    "optimizer": "Optimizer", "local-optimizer": "LocalOptimizer", "gradient-descent": "GradientDescentOptimizer",
    "gradient-descent-optimizer": "GradientDescentOptimizer", "sgd": "SGDOptimizer", "sgd-optimizer": "SGDOptimizer",
    "adam": "AdamOptimizer", "adam-optimizer": "AdamOptimizer", "nadam": "NadamOptimizer",
    "nadam-optimizer": "NadamOptimizer", "adagrad": "AdagradOptimizer", "adagrad-optimizer": "AdagradOptimizer",
    "adadelta": "AdadeltaOptimizer", "adadelta-optimizer": "AdadeltaOptimizer", "rmsprop": "RMSPropOptimizer",
    "rms-prop": "RMSPropOptimizer", "rmsprop-optimizer": "RMSPropOptimizer",
    "horovod": "HorovodOptimizer", "horovod-optimizer": "HorovodOptimizer",
    "data-parallel-optimizer": "HorovodOptimizer",
    # The original RLgraph's spellings (docs/migrating.md).
    "replay-buffer": "ReplayMemory", "prioritized": "PrioritizedReplay",
    "prioritized-replay-buffer": "PrioritizedReplay", "fifo": "FIFOQueue", "fc": "DenseLayer", "fc-layer": "DenseLayer", "constant-decay": "Constant",
    "ornstein-uhlenbeck": "OrnsteinUhlenbeckNoise", "categorical-distribution": "Categorical",
    "normal-distribution": "Normal", "gaussian-distribution": "Normal", "bernoulli-distribution": "Bernoulli",
    "beta-distribution": "Beta", "gumbel-softmax-distribution": "GumbelSoftmax", "squashed": "SquashedNormal",
    "squashed-normal-distribution": "SquashedNormal", "multivariate-gaussian": "MultivariateNormal",
    "categorical-cross-entropy": "CategoricalCrossEntropyLoss", "euclidian-distance": "EuclideanDistanceLoss",
    "euclidian-distance-loss": "EuclideanDistanceLoss",
}

Component.__lookup_classes__ = {}
for _name, _cls_name in COMPONENT_NAMES.items():
    if _cls_name in _namespace:
        Component.__lookup_classes__[_name] = _namespace[_cls_name]
        Component.__lookup_classes__[_cls_name] = _namespace[_cls_name]

# Component types of the original RLgraph that are not here -> why, and what to use instead.
_TF1_ONLY = "TF1 multi-GPU towers are gone; distributed training runs on Ray (docs/distributed.md)"
_TYPED_ADAPTER = ("one ActionAdapter serves every action leaf, chosen by its space; pick the distribution with the "
                  "policy's distributions_spec")
_NOT_PORTED = "not ported: no agent here uses it"
Component.__unsupported_types__ = {
    "decay": 'the original\'s DecayComponent became the time-dependent parameters, e.g. "linear-decay"',
    "conv2d-transpose": _NOT_PORTED, "conv2d-transpose-layer": _NOT_PORTED,
    "negative-log-likelihood": _NOT_PORTED, "negative-log-likelihood-loss": _NOT_PORTED,
    "neg-log-likelihood": _NOT_PORTED, "neg-log-likelihood-loss": _NOT_PORTED,
    "multi-gpu-synchronizer": _TF1_ONLY,
    "staging-area": _TF1_ONLY,
    "sac-value-function": "SAC builds its Q-networks from value_function_spec (a list of layers)",
    "mem-prioritized-replay": "a numpy memory kept next to the graph, not a component: DQN and Ape-X agents take "
                              "it as their memory_spec type",
    "frame-replay": "a numpy memory (stacked frames stored once) kept next to the graph, not a component: DQN, SAC, "
                    "DDPG and Ape-X take it as their memory_spec type",
    "categorical-distribution-adapter": _TYPED_ADAPTER, "bernoulli-distribution-adapter": _TYPED_ADAPTER,
    "normal-distribution-adapter": _TYPED_ADAPTER, "beta-distribution-adapter": _TYPED_ADAPTER,
    "squashed-normal-adapter": _TYPED_ADAPTER, "squashed-normal-distribution-adapter": _TYPED_ADAPTER,
    "gumbel-softmax-adapter": _TYPED_ADAPTER, "gumbel-softmax-distribution-adapter": _TYPED_ADAPTER,
}

__all__ = (["Component", "COMPONENT_NAMES"] + _layers_all + _nn_all + _memories_all +
           _helpers_all + _losses_all + _common_all + _distributions_all +
           _explorations_all + _adapters_all + _policies_all +
           _optimizers_all)
