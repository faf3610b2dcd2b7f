"""Data-parallel update throughput of 1 and N learners against raw PyTorch DDP.

Runs rlgraph.benchmarks.learner_scaling: `python -m benchmarks.learner_scaling [--quick] [--help]`.
"""
from rlgraph.benchmarks.learner_scaling import main

if __name__ == "__main__":
    main()
