"""DQfD (Hester et al. 2017, https://arxiv.org/abs/1704.03732): DQN with a large-margin loss on
demonstrations kept in their own memory. The loss is `rlgraph.components.loss_functions.DQFDLossFunction`."""
from rlgraph.agents.dqfd.agent import DQFDAgent
from rlgraph.agents.dqfd.core import DQFDCore

__all__ = ["DQFDAgent", "DQFDCore"]
