"""The original RLgraph's module path of `ActorCriticAgent`; the class lives in `rlgraph.agents.pg.actor_critic_agent`."""
from rlgraph.agents.pg.actor_critic_agent import ActorCriticAgent

__all__ = ["ActorCriticAgent"]
