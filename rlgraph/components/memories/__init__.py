"""Memories: replay memories, prioritized replay (in-graph and numpy, plain or frame-deduplicating), ring buffer,
FIFO queue."""
from rlgraph.components.memories.fifo_queue import FIFOQueue
from rlgraph.components.memories.frame_replay import FrameReplay
from rlgraph.components.memories.mem_prioritized_replay import MemPrioritizedReplay
from rlgraph.components.memories.memory import Memory
from rlgraph.components.memories.prioritized_replay import PrioritizedReplay
from rlgraph.components.memories.replay_memory import ReplayMemory
from rlgraph.components.memories.ring_buffer import RingBuffer

__all__ = ["Memory", "ReplayMemory", "RingBuffer", "PrioritizedReplay", "MemPrioritizedReplay", "FrameReplay",
           "FIFOQueue"]
