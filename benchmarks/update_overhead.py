"""agent.update overhead against a raw DQN training step.

Runs rlgraph.benchmarks.update_overhead: `python -m benchmarks.update_overhead [--quick] [--help]`.
"""
from rlgraph.benchmarks.update_overhead import main

if __name__ == "__main__":
    main()
