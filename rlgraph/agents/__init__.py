"""Agents: the python front ends of the algorithms. Import neither TensorFlow nor PyTorch."""
from rlgraph.agents.agent import Agent
from rlgraph.agents.apex_agent import ApexAgent
from rlgraph.agents.dqn_agent import DQNAgent
from rlgraph.agents.impala_agent import IMPALAAgent, SingleIMPALAAgent

Agent.__lookup_classes__ = {
    "dqn": DQNAgent, "dqn-agent": DQNAgent, "DQNAgent": DQNAgent,
    "apex": ApexAgent, "apex-agent": ApexAgent, "ApexAgent": ApexAgent,
    "impala": IMPALAAgent, "impala-agent": IMPALAAgent, "IMPALAAgent": IMPALAAgent,
    "single-impala": SingleIMPALAAgent, "single-impala-agent": SingleIMPALAAgent,
    "SingleIMPALAAgent": SingleIMPALAAgent,
}

__all__ = ["Agent", "ApexAgent", "DQNAgent", "IMPALAAgent", "SingleIMPALAAgent"]
