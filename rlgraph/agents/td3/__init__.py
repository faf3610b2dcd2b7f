"""TD3, twin delayed deep deterministic policy gradients (Fujimoto et al. 2018,
https://arxiv.org/abs/1802.09477): DDPG with twin critics, target policy smoothing and delayed actor
and target updates. The agent and its core are DDPG's with TD3's settings (`rlgraph/agents/ddpg/`)."""
from rlgraph.agents.td3.agent import TD3Agent
from rlgraph.agents.td3.core import TD3Core

__all__ = ["TD3Agent", "TD3Core"]
