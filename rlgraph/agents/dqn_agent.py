"""The original RLgraph's module path of `DQNAgent`; the class lives in `rlgraph.agents.dqn.agent`."""
from rlgraph.agents.dqn.agent import DQNAgent

__all__ = ["DQNAgent"]
