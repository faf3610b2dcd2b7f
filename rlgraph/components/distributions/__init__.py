"""Distributions over actions, with the same maths on TensorFlow and PyTorch."""
from rlgraph.components.distributions.bernoulli import Bernoulli
from rlgraph.components.distributions.beta import Beta
from rlgraph.components.distributions.categorical import Categorical
from rlgraph.components.distributions.distribution import Distribution
from rlgraph.components.distributions.gumbel_softmax import GumbelSoftmax
from rlgraph.components.distributions.joint_cumulative_distribution import JointCumulativeDistribution
from rlgraph.components.distributions.mixture_distribution import MixtureDistribution
from rlgraph.components.distributions.multivariate_normal import MultivariateNormal
from rlgraph.components.distributions.normal import Normal
from rlgraph.components.distributions.squashed_normal import SquashedNormal

__all__ = ["Distribution", "Categorical", "Normal", "MultivariateNormal", "Bernoulli", "Beta", "SquashedNormal",
           "GumbelSoftmax", "JointCumulativeDistribution", "MixtureDistribution"]
