"""rl-baselines3-zoo's benchmark table rerun for rlgraph and Stable-Baselines3 (IQM, bootstrap CIs).

Runs rlgraph.benchmarks.zoo: `python -m benchmarks.zoo [--quick] [--list] [--help]`.
"""
from rlgraph.benchmarks.zoo import main

if __name__ == "__main__":
    main()
