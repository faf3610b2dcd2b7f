"""Build time and build overhead of the CartPole DQN agent.

Runs rlgraph.benchmarks.build_time: `python -m benchmarks.build_time [--quick] [--help]`.
"""
from rlgraph.benchmarks.build_time import main

if __name__ == "__main__":
    main()
