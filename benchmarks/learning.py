"""Learning quality over many seeds against Stable-Baselines3 (IQM, bootstrap CIs).

Runs rlgraph.benchmarks.learning: `python -m benchmarks.learning [--quick] [--help]`.
"""
from rlgraph.benchmarks.learning import main

if __name__ == "__main__":
    main()
