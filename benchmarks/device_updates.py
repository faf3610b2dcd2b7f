"""Gradient steps per second on one device (DQN Nature CNN, SAC) against Stable-Baselines3, compiled and not.

Runs rlgraph.benchmarks.device_updates: `python -m benchmarks.device_updates [--device cuda] [--quick] [--help]`.
"""
from rlgraph.benchmarks.device_updates import main

if __name__ == "__main__":
    main()
