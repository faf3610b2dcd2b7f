"""Ape-X on Ray: the executor, its sample workers, replay shards and learner thread."""
from rlgraph.execution.ray.apex.apex_executor import ApexExecutor
from rlgraph.execution.ray.apex.learner import LearnerThread
from rlgraph.execution.ray.apex.replay_shard import ReplayShard
from rlgraph.execution.ray.apex.sample_worker import ApexSampleWorker

__all__ = ["ApexExecutor", "ApexSampleWorker", "LearnerThread", "ReplayShard"]
