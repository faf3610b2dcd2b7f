"""Distributed execution: executors whose actors run on Ray (or inline, in this process).

Importing this package does not import Ray (an executor imports it when it starts in mode
"ray"), TensorFlow or PyTorch.
"""
from rlgraph.execution.ray.apex import ApexExecutor, ApexSampleWorker, ReplayShard
from rlgraph.execution.ray.impala import IMPALAExecutor
from rlgraph.execution.ray.ray_executor import RayExecutor, RLGraphDistributedError

__all__ = ["ApexExecutor", "ApexSampleWorker", "IMPALAExecutor", "RayExecutor", "ReplayShard", "RLGraphDistributedError"]
