"""The original RLgraph's module path of `ApexAgent`; the class lives in `rlgraph.agents.apex.agent`."""
from rlgraph.agents.apex.agent import ApexAgent

__all__ = ["ApexAgent"]
