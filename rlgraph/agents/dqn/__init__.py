"""DQN (Mnih et al. 2015, https://arxiv.org/abs/1312.5602) with double Q, dueling heads, n-step returns,
Huber loss and prioritized replay: the agent (`agent.py`) and its root component (`core.py`). The loss is
`rlgraph.components.loss_functions.DQNLossFunction`."""
from rlgraph.agents.dqn.agent import DQNAgent
from rlgraph.agents.dqn.core import DQNCore

__all__ = ["DQNAgent", "DQNCore"]
