"""The original RLgraph's module path of `PPOAgent`; the class lives in `rlgraph.agents.pg.ppo_agent`."""
from rlgraph.agents.pg.ppo_agent import PPOAgent

__all__ = ["PPOAgent"]
