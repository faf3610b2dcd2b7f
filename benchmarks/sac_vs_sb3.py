"""SAC on Pendulum-v1 against Stable-Baselines3.

Runs rlgraph.benchmarks.sac_vs_sb3: `python -m benchmarks.sac_vs_sb3 [--quick] [--help]`.
"""
from rlgraph.benchmarks.sac_vs_sb3 import main

if __name__ == "__main__":
    main()
