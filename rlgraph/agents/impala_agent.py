"""The original RLgraph's module path of `IMPALAAgent` and `SingleIMPALAAgent`; the classes live in
`rlgraph.agents.impala.agent`."""
from rlgraph.agents.impala.agent import IMPALAAgent, SingleIMPALAAgent

__all__ = ["IMPALAAgent", "SingleIMPALAAgent"]
