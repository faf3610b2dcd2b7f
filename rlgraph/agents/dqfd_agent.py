"""The original RLgraph's module path of `DQFDAgent`; the class lives in `rlgraph.agents.dqfd.agent`."""
from rlgraph.agents.dqfd.agent import DQFDAgent

__all__ = ["DQFDAgent"]
