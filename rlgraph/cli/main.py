"""`rlgraph` command: `info`, and `train` / `evaluate` / `visualize` / `benchmark` as they become available.

The command imports no backend at start-up; each sub-command imports what it needs.
"""
from __future__ import annotations

import argparse
import sys
from typing import List, Optional

import rlgraph
from rlgraph.backend_system import BACKENDS, default_backend, is_backend_installed
from rlgraph.utils.rlgraph_errors import RLGraphError
from rlgraph.utils.specifiable import load_spec_file

# Exit status of a sub-command whose machinery this version of rlgraph does not ship yet.
EXIT_UNAVAILABLE = 3

# Sub-command -> the part of the framework it needs and that is still missing in this version.
_PENDING = {
    "train": "agents (DQN first) and the SingleThreadedWorker",
    "evaluate": "agents and checkpoints",
    "visualize": "the component build system",
    "benchmark": "agents and the benchmark suite",
}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rlgraph", description="Build, train and inspect rlgraph agents.")
    parser.add_argument("--version", action="version", version=f"rlgraph {rlgraph.__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("info", help="show the version and the installed backends")
    train = commands.add_parser("train", help="train an agent from a JSON/YAML config")
    train.add_argument("config", help="agent config file (e.g. configs/dqn_cartpole.json)")
    train.add_argument("--env", help="environment id (default: from the config)")
    train.add_argument("--backend", choices=["tf", "pytorch", "torch"], help="backend (default: rlgraph's default)")
    train.add_argument("--steps", type=int, help="number of environment steps")
    train.add_argument("--seed", type=int, help="random seed")
    train.add_argument("--set", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a config value")
    evaluate = commands.add_parser("evaluate", help="evaluate a saved agent")
    evaluate.add_argument("checkpoint")
    visualize = commands.add_parser("visualize", help="render an agent's component graph")
    visualize.add_argument("config")
    benchmark = commands.add_parser("benchmark", help="run a benchmark from benchmarks/")
    benchmark.add_argument("name")
    return parser


def _info() -> int:
    print(f"rlgraph {rlgraph.__version__}")
    for name in BACKENDS:
        print(f"backend {name:8s} {'installed' if is_backend_installed(name) else 'not installed'}")
    try:
        print(f"default backend: {default_backend()}")
    except RLGraphError as error:
        print(f"default backend: none ({error})")
    print(f"distributed backend: {rlgraph.get_distributed_backend()}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of the `rlgraph` console script; returns the exit status."""
    args = _parser().parse_args(argv)
    if args.command == "info":
        return _info()
    try:
        if args.command in ("train", "visualize"):
            config = load_spec_file(args.config)
            print(f"rlgraph {args.command}: read {args.config} (agent type {config.get('type', '?')!r}).")
    except RLGraphError as error:
        print(f"rlgraph {args.command}: {error}", file=sys.stderr)
        return 2
    print(f"rlgraph {args.command}: not available yet in rlgraph {rlgraph.__version__}: it needs "
          f"{_PENDING[args.command]}, which have not landed yet. Nothing was run.", file=sys.stderr)
    return EXIT_UNAVAILABLE


if __name__ == "__main__":
    sys.exit(main())
