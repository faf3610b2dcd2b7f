"""IMPALA's actors: `IMPALAActor` (an acting agent copy stepping envs into rollouts) and
`ActorPool` (a single-impala agent's in-process actor threads). `IMPALAExecutor` (Ray) lives in
`rlgraph.execution.ray.impala`. Importing this imports neither Ray nor a backend."""
from rlgraph.execution.impala.actor import IMPALAActor, actor_agent_config
from rlgraph.execution.impala.actor_pool import ActorPool

__all__ = ["ActorPool", "IMPALAActor", "actor_agent_config"]
