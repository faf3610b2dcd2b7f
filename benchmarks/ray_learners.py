"""IMPALA's learner on Ray: update samples/s of 1 learner in the driver and of N learner actors.

Runs rlgraph.benchmarks.ray_learners: `python -m benchmarks.ray_learners [--quick] [--help]`.
"""
from rlgraph.benchmarks.ray_learners import main

if __name__ == "__main__":
    main()
