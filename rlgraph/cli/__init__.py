"""The `rlgraph` command line tool."""
