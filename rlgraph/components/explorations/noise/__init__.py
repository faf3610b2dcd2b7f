"""Noise components for continuous-action exploration."""
from rlgraph.components.explorations.noise.constant_noise import ConstantNoise
from rlgraph.components.explorations.noise.gaussian_noise import GaussianNoise
from rlgraph.components.explorations.noise.noise import Noise
from rlgraph.components.explorations.noise.ornstein_uhlenbeck_noise import OrnsteinUhlenbeckNoise

# `Noise.from_spec` names: {"type": "gaussian", "stddev": 0.2}, "constant", "ornstein-uhlenbeck" (or "ou").
Noise.__lookup_classes__ = {"gaussian": GaussianNoise, "gaussian-noise": GaussianNoise, "constant": ConstantNoise,
                            "constant-noise": ConstantNoise, "ornstein-uhlenbeck": OrnsteinUhlenbeckNoise,
                            "ornstein-uhlenbeck-noise": OrnsteinUhlenbeckNoise, "ou": OrnsteinUhlenbeckNoise}

__all__ = ["Noise", "GaussianNoise", "ConstantNoise", "OrnsteinUhlenbeckNoise"]
