"""Runners of rlgraph's benchmarks from a checkout: `python -m benchmarks.NAME [options]`."""
