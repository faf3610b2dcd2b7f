"""Parallel environments: AsyncVectorEnv against SequentialVectorEnv.

Runs rlgraph.benchmarks.async_envs: `python -m benchmarks.async_envs [--quick] [--help]`.
"""
from rlgraph.benchmarks.async_envs import main

if __name__ == "__main__":
    main()
