"""The original RLgraph's module path of `SACAgent`; the class lives in `rlgraph.agents.sac.agent`."""
from rlgraph.agents.sac.agent import SACAgent

__all__ = ["SACAgent"]
