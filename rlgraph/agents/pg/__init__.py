"""Policy gradients on rollouts: PPO (Schulman et al. 2017, https://arxiv.org/abs/1707.06347) and the
advantage actor-critic (A2C, Mnih et al. 2016, https://arxiv.org/abs/1602.01783), with their shared base agent,
root component and rollout storage (GAE). The losses are `PPOLossFunction` and `ActorCriticLossFunction` in
`rlgraph.components.loss_functions`."""
from rlgraph.agents.pg.actor_critic_agent import ActorCriticAgent
from rlgraph.agents.pg.agent import PolicyGradientAgent
from rlgraph.agents.pg.core import PolicyGradientCore
from rlgraph.agents.pg.ppo_agent import PPOAgent

__all__ = ["ActorCriticAgent", "PPOAgent", "PolicyGradientAgent", "PolicyGradientCore"]
