"""agent.get_action overhead against a raw forward pass.

Runs rlgraph.benchmarks.act_overhead: `python -m benchmarks.act_overhead [--quick] [--help]`.
"""
from rlgraph.benchmarks.act_overhead import main

if __name__ == "__main__":
    main()
