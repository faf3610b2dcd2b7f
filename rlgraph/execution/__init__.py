"""Execution: workers that run agents on environments in this process; `rlgraph.execution.ray`
holds the distributed executors (Ape-X). Imports neither TensorFlow, PyTorch nor Ray."""
from rlgraph.execution.hooks import EpisodeReturnsHook, Hook, StepData
from rlgraph.execution.single_threaded_worker import SingleThreadedWorker

__all__ = ["EpisodeReturnsHook", "Hook", "SingleThreadedWorker", "StepData"]
