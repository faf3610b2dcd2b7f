"""Atari throughput: PPO on Pong end to end, rlgraph (sync and async envs) against Stable-Baselines3.

Runs rlgraph.benchmarks.atari: `python -m benchmarks.atari [--quick] [--help]`.
"""
from rlgraph.benchmarks.atari import main

if __name__ == "__main__":
    main()
