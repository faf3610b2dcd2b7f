"""Ape-X on Ray: sample-worker scaling and the executor's sampling overhead.

Runs rlgraph.benchmarks.apex: `python -m benchmarks.apex [--backend pytorch tf] [--quick] [--help]`.
"""
from rlgraph.benchmarks.apex import main

if __name__ == "__main__":
    main()
