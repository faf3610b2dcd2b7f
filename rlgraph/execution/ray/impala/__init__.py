"""IMPALA on Ray: `IMPALAExecutor`."""
from rlgraph.execution.ray.impala.impala_executor import IMPALAExecutor

__all__ = ["IMPALAExecutor"]
