"""Agents: the python front ends of the algorithms. Import neither TensorFlow nor PyTorch."""
from rlgraph.agents.agent import Agent
from rlgraph.agents.dqn_agent import DQNAgent

Agent.__lookup_classes__ = {
    "dqn": DQNAgent, "dqn-agent": DQNAgent, "DQNAgent": DQNAgent,
}

__all__ = ["Agent", "DQNAgent"]
