"""DDPG (Lillicrap et al. 2015, https://arxiv.org/abs/1509.02971): the agent, its root component, the
deterministic actor and the Q critic, and its spec helpers."""
from rlgraph.agents.ddpg.agent import DDPGAgent
from rlgraph.agents.ddpg.core import DDPGCore
from rlgraph.agents.ddpg.networks import DeterministicActor, QCritic

__all__ = ["DDPGAgent", "DDPGCore", "DeterministicActor", "QCritic"]
