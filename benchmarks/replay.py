"""Prioritized replay throughput.

Runs rlgraph.benchmarks.replay: `python -m benchmarks.replay [--quick] [--help]`.
"""
from rlgraph.benchmarks.replay import main

if __name__ == "__main__":
    main()
