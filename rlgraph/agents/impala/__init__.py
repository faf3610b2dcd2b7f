"""IMPALA (Espeholt et al. 2018, https://arxiv.org/abs/1802.01561): the agent, its root component, the
reference networks, the rollout record and the in-process actors of the single-machine agent. The loss is
`rlgraph.components.loss_functions.IMPALALossFunction` (V-trace in `rlgraph.components.helpers`); the Ray
executor is `rlgraph.execution.ray.impala`."""
from rlgraph.agents.impala.actor import IMPALAActor, actor_agent_config
from rlgraph.agents.impala.actor_pool import ActorPool
from rlgraph.agents.impala.agent import IMPALAAgent, SingleIMPALAAgent
from rlgraph.agents.impala.core import IMPALACore

__all__ = ["ActorPool", "IMPALAActor", "IMPALAAgent", "IMPALACore", "SingleIMPALAAgent", "actor_agent_config"]
