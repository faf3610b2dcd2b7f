"""Ape-X (Horgan et al. 2018, https://arxiv.org/abs/1803.00933): the DQN learner fed by distributed sample
workers. The agent is here; its Ray executor is `rlgraph.execution.ray.apex`."""
from rlgraph.agents.apex.agent import ApexAgent

__all__ = ["ApexAgent"]
