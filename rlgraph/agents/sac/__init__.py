"""Soft actor-critic (Haarnoja et al. 2018, https://arxiv.org/abs/1812.05905): the agent, its root
component and its critic networks. The loss is `rlgraph.components.loss_functions.SACLossFunction`."""
from rlgraph.agents.sac.agent import SACAgent
from rlgraph.agents.sac.core import SACCore
from rlgraph.agents.sac.networks import SACCritic

__all__ = ["SACAgent", "SACCore", "SACCritic"]
