"""Environment adapters. Imports neither TensorFlow nor PyTorch, nor (until used) gymnasium, ale-py or OpenCV."""
from rlgraph.environments.action_repeat import ActionRepeatEnv
from rlgraph.environments.async_vector_env import AsyncVectorEnv
from rlgraph.environments.atari import AtariEnv
from rlgraph.environments.deepmind_lab import DeepmindLabEnv
from rlgraph.environments.env_utils import RLGraphMissingDependencyError, allow_env_module_import
from rlgraph.environments.envpool_env import EnvPoolVectorEnv
from rlgraph.environments.environment import Environment
from rlgraph.environments.grid_world import GridWorld
from rlgraph.environments.openai_gym import OpenAIGymEnv
from rlgraph.environments.random_env import RandomEnv
from rlgraph.environments.vector_env import SequentialVectorEnv, VectorEnv
from rlgraph.utils.environment_maker import register_environment_maker

# Names usable as "type" in environment specs (matched case- and punctuation-insensitively, so
# "grid-world", "grid_world" and "GridWorld" are the same); the first name of each class is canonical.
Environment.__lookup_classes__ = {
    "openai-gym": OpenAIGymEnv, "openai": OpenAIGymEnv, "gym": OpenAIGymEnv, "gymnasium": OpenAIGymEnv,
    "openai-gym-env": OpenAIGymEnv,
    "grid-world": GridWorld, "gridworld": GridWorld, "grid_world": GridWorld,
    "random-env": RandomEnv, "random": RandomEnv,
    "sequential-vector-env": SequentialVectorEnv, "vector-env": SequentialVectorEnv,
    "async-vector-env": AsyncVectorEnv,
    "atari": AtariEnv, "atari-env": AtariEnv, "ale": AtariEnv,
    "deepmind-lab": DeepmindLabEnv, "deepmind_lab": DeepmindLabEnv, "dm-lab": DeepmindLabEnv,
    "deepmind-lab-env": DeepmindLabEnv,
    "action-repeat": ActionRepeatEnv, "action-repeat-env": ActionRepeatEnv,
    # The original RLgraph's spellings.
    "grid-world-env": GridWorld, "sequential-vector": SequentialVectorEnv,
}
# Environment types of the original RLgraph that are not here -> why, and what to use instead.
_TEST_ENV = "the original's test environment is not ported; use GridWorld or RandomEnv"
_UNITY = ("Unity ML-Agents' Python API has changed since; wrap the Unity environment as a gym(nasium) env (ML-Agents "
          "has a gym wrapper) and pass that object to OpenAIGymEnv(gym_env=...)")
Environment.__unsupported_types__ = {
    "deterministic": _TEST_ENV, "deterministic-env": _TEST_ENV, "gaussian-density": _TEST_ENV,
    "gaussian-density-as-reward": _TEST_ENV, "gaussian-density-as-reward-env": _TEST_ENV,
    "mlagents": _UNITY, "mlagents-env": _UNITY, "ml-agents": _UNITY,
}

# Components sit below this package and never import it; `EnvironmentStepper` resolves its
# environment spec through the maker registered here (see rlgraph/utils/environment_maker.py).
register_environment_maker(Environment.from_spec)

__all__ = ["Environment", "OpenAIGymEnv", "GridWorld", "RandomEnv", "VectorEnv", "SequentialVectorEnv",
           "AsyncVectorEnv", "EnvPoolVectorEnv", "AtariEnv", "DeepmindLabEnv", "ActionRepeatEnv", "RLGraphMissingDependencyError",
           "allow_env_module_import"]
