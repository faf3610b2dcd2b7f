"""Agents: the python front ends of the algorithms. Import neither TensorFlow nor PyTorch.

One package per algorithm family (`dqn`, `apex`, `dqfd`, `impala`, `pg`, `sac`, `ddpg`, `td3`) holds its agent, its
root component (`core`), its networks and its record/rollout helpers; this package itself holds only what they
all share (the `Agent` base, records, observe buffers, replay access, data checks, checkpoints, export). The
original RLgraph's module paths (`rlgraph.agents.dqn_agent`, ...) still import. See docs/architecture.md.
"""
from rlgraph.agents.agent import Agent
from rlgraph.agents.apex import ApexAgent
from rlgraph.agents.ddpg import DDPGAgent
from rlgraph.agents.dqfd import DQFDAgent
from rlgraph.agents.dqn import DQNAgent
from rlgraph.agents.impala import IMPALAAgent, SingleIMPALAAgent
from rlgraph.agents.pg import ActorCriticAgent, PPOAgent
from rlgraph.agents.random_agent import RandomAgent
from rlgraph.agents.sac import SACAgent
from rlgraph.agents.td3 import TD3Agent

Agent.__lookup_classes__ = {
    "sac": SACAgent, "sac-agent": SACAgent, "SACAgent": SACAgent,
    "dqn": DQNAgent, "dqn-agent": DQNAgent, "DQNAgent": DQNAgent,
    "dqfd": DQFDAgent, "dqfd-agent": DQFDAgent, "DQFDAgent": DQFDAgent,
    "ddpg": DDPGAgent, "ddpg-agent": DDPGAgent, "DDPGAgent": DDPGAgent,
    "td3": TD3Agent, "td3-agent": TD3Agent, "TD3Agent": TD3Agent,
    "apex": ApexAgent, "apex-agent": ApexAgent, "ApexAgent": ApexAgent,
    "impala": IMPALAAgent, "impala-agent": IMPALAAgent, "IMPALAAgent": IMPALAAgent,
    "single-impala": SingleIMPALAAgent, "single-impala-agent": SingleIMPALAAgent,
    "SingleIMPALAAgent": SingleIMPALAAgent,
    "ppo": PPOAgent, "ppo-agent": PPOAgent, "PPOAgent": PPOAgent,
    "actor-critic": ActorCriticAgent, "actor_critic": ActorCriticAgent, "actor-critic-agent": ActorCriticAgent,
    "a2c": ActorCriticAgent, "ActorCriticAgent": ActorCriticAgent,
    "random": RandomAgent, "random-agent": RandomAgent, "RandomAgent": RandomAgent,
}

__all__ = ["ActorCriticAgent", "Agent", "DDPGAgent", "PPOAgent", "RandomAgent", "SACAgent", "ApexAgent", "DQNAgent",
           "DQFDAgent", "IMPALAAgent", "SingleIMPALAAgent", "TD3Agent"]
