"""Execution: workers that run agents on environments (single process now; Ray later).
Imports neither TensorFlow nor PyTorch."""
from rlgraph.execution.hooks import EpisodeReturnsHook, Hook, StepData
from rlgraph.execution.single_threaded_worker import SingleThreadedWorker

__all__ = ["EpisodeReturnsHook", "Hook", "SingleThreadedWorker", "StepData"]
