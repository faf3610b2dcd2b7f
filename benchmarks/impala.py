"""IMPALA: env frames/s over actors (threads, Ray actors), RLlib's IMPALA as the peer, time to a return of 450.

Runs rlgraph.benchmarks.impala: `python -m benchmarks.impala [--backend pytorch tf] [--learning] [--quick] [--help]`.
"""
from rlgraph.benchmarks.impala import main

if __name__ == "__main__":
    main()
