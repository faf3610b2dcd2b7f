"""PPO on CartPole-v1 against Stable-Baselines3.

Runs rlgraph.benchmarks.ppo_vs_sb3: `python -m benchmarks.ppo_vs_sb3 [--quick] [--help]`.
"""
from rlgraph.benchmarks.ppo_vs_sb3 import main

if __name__ == "__main__":
    main()
