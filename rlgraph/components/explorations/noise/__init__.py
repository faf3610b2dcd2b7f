"""Noise components for continuous-action exploration."""
from rlgraph.components.explorations.noise.constant_noise import ConstantNoise
from rlgraph.components.explorations.noise.gaussian_noise import GaussianNoise
from rlgraph.components.explorations.noise.noise import Noise
from rlgraph.components.explorations.noise.ornstein_uhlenbeck_noise import OrnsteinUhlenbeckNoise

__all__ = ["Noise", "GaussianNoise", "ConstantNoise", "OrnsteinUhlenbeckNoise"]
