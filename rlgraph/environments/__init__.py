"""Environment adapters. Imports neither TensorFlow nor PyTorch, nor (until used) gymnasium, ale-py or OpenCV."""
from rlgraph.environments.action_repeat import ActionRepeatEnv
from rlgraph.environments.atari import AtariEnv
from rlgraph.environments.deepmind_lab import DeepmindLabEnv
from rlgraph.environments.env_utils import RLGraphMissingDependencyError
from rlgraph.environments.environment import Environment
from rlgraph.environments.grid_world import GridWorld
from rlgraph.environments.openai_gym import OpenAIGymEnv
from rlgraph.environments.random_env import RandomEnv
from rlgraph.environments.vector_env import SequentialVectorEnv, VectorEnv

# Names usable as "type" in environment specs (matched case- and punctuation-insensitively, so
# "grid-world", "grid_world" and "GridWorld" are the same); the first name of each class is canonical.
Environment.__lookup_classes__ = {
    "openai-gym": OpenAIGymEnv, "openai": OpenAIGymEnv, "gym": OpenAIGymEnv, "gymnasium": OpenAIGymEnv,
    "openai-gym-env": OpenAIGymEnv,
    "grid-world": GridWorld, "gridworld": GridWorld, "grid_world": GridWorld,
    "random-env": RandomEnv, "random": RandomEnv,
    "sequential-vector-env": SequentialVectorEnv, "vector-env": SequentialVectorEnv,
    "atari": AtariEnv, "atari-env": AtariEnv, "ale": AtariEnv,
    "deepmind-lab": DeepmindLabEnv, "deepmind_lab": DeepmindLabEnv, "dm-lab": DeepmindLabEnv,
    "deepmind-lab-env": DeepmindLabEnv,
    "action-repeat": ActionRepeatEnv, "action-repeat-env": ActionRepeatEnv,
}

__all__ = ["Environment", "OpenAIGymEnv", "GridWorld", "RandomEnv", "VectorEnv", "SequentialVectorEnv", "AtariEnv",
           "DeepmindLabEnv", "ActionRepeatEnv", "RLGraphMissingDependencyError"]
