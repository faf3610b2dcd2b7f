"""Agents: the python front ends of the algorithms. Import neither TensorFlow nor PyTorch."""
from rlgraph.agents.actor_critic_agent import ActorCriticAgent
from rlgraph.agents.agent import Agent
from rlgraph.agents.apex_agent import ApexAgent
from rlgraph.agents.ddpg_agent import DDPGAgent
from rlgraph.agents.dqfd_agent import DQFDAgent
from rlgraph.agents.dqn_agent import DQNAgent
from rlgraph.agents.impala_agent import IMPALAAgent, SingleIMPALAAgent
from rlgraph.agents.ppo_agent import PPOAgent
from rlgraph.agents.random_agent import RandomAgent
from rlgraph.agents.sac_agent import SACAgent

Agent.__lookup_classes__ = {
    "sac": SACAgent, "sac-agent": SACAgent, "SACAgent": SACAgent,
    "dqn": DQNAgent, "dqn-agent": DQNAgent, "DQNAgent": DQNAgent,
    "dqfd": DQFDAgent, "dqfd-agent": DQFDAgent, "DQFDAgent": DQFDAgent,
    "ddpg": DDPGAgent, "ddpg-agent": DDPGAgent, "DDPGAgent": DDPGAgent,
    "apex": ApexAgent, "apex-agent": ApexAgent, "ApexAgent": ApexAgent,
    "impala": IMPALAAgent, "impala-agent": IMPALAAgent, "IMPALAAgent": IMPALAAgent,
    "single-impala": SingleIMPALAAgent, "single-impala-agent": SingleIMPALAAgent,
    "SingleIMPALAAgent": SingleIMPALAAgent,
    "ppo": PPOAgent, "ppo-agent": PPOAgent, "PPOAgent": PPOAgent,
    "actor-critic": ActorCriticAgent, "actor_critic": ActorCriticAgent, "actor-critic-agent": ActorCriticAgent,
    "a2c": ActorCriticAgent, "ActorCriticAgent": ActorCriticAgent,
    "random": RandomAgent, "random-agent": RandomAgent, "RandomAgent": RandomAgent,
}

__all__ = ["ActorCriticAgent", "Agent", "DDPGAgent", "PPOAgent", "RandomAgent", "SACAgent", "ApexAgent", "DQNAgent", "DQFDAgent", "IMPALAAgent", "SingleIMPALAAgent"]
