"""Shared helpers of the benchmarks: timing, tables, JSON results, machine information."""
from __future__ import annotations

import argparse
import copy
import json
import multiprocessing
import os
import platform
import statistics
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np

from rlgraph.backend_system import BACKENDS, is_backend_installed, normalize_backend
from rlgraph.utils.rlgraph_errors import RLGraphBackendUnavailableError

DEFAULT_RESULTS_DIR = os.path.join("benchmarks", "results")

CONFIG_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           "configs", "dqn_cartpole.json")

# The agent part of configs/dqn_cartpole.json (a test keeps the two equal).
DQN_CARTPOLE_SPEC = {
    "type": "dqn", "discount": 0.99, "double_q": True, "dueling_q": False, "huber_loss": True, "n_step": 1,
    "memory_spec": {"type": "replay-memory", "capacity": 50000},
    "network_spec": [{"type": "dense", "units": 256, "activation": "relu", "weights_spec": "fan_in_uniform",
                      "biases_spec": "fan_in_uniform", "scope": "hidden-1"},
                     {"type": "dense", "units": 256, "activation": "relu", "weights_spec": "fan_in_uniform",
                      "biases_spec": "fan_in_uniform", "scope": "hidden-2"}],
    "action_adapter_spec": {"weights_spec": "fan_in_uniform", "biases_spec": "fan_in_uniform"},
    "exploration_spec": {"epsilon_spec": {"decay_spec": {"type": "linear-decay", "from": 1.0, "to": 0.04,
                                                         "start_percentage": 0.0, "stop_percentage": 0.16}}},
    "observe_spec": {"buffer_size": 32},
    "update_spec": {"update_interval": 256, "steps_before_update": 1000, "batch_size": 64, "sync_interval": 10,
                    "update_steps": 128},
    "optimizer_spec": {"type": "adam", "learning_rate": 0.0023},
    "execution_spec": {"max_timesteps": 50000, "torch_num_threads": 1},
}


def select_backends(requested: Optional[Sequence[str]], where: str) -> List[str]:
    """The canonical names of `requested` (default: every installed backend).

    Raises:
        RLGraphBackendUnavailableError: A requested backend is not installed, or none is.
    """
    if requested:
        backends = list(dict.fromkeys(normalize_backend(name, where) for name in requested))
        for backend in backends:
            if not is_backend_installed(backend):
                raise RLGraphBackendUnavailableError(backend, where=where)
        return backends
    backends = [backend for backend in BACKENDS if is_backend_installed(backend)]
    if not backends:
        raise RLGraphBackendUnavailableError(BACKENDS[0], "neither TensorFlow nor PyTorch is installed", where=where)
    return backends


def single_thread(backend: str) -> None:
    """One intra-op (and inter-op) thread for `backend`, where its runtime still allows it."""
    if backend == "pytorch":
        import torch
        torch.set_num_threads(1)
        return
    import tensorflow as tf
    for setter in (tf.config.threading.set_intra_op_parallelism_threads,
                   tf.config.threading.set_inter_op_parallelism_threads):
        try:
            setter(1)
        except RuntimeError:  # TF's runtime started already (it fixes its pools then).
            pass


def load_agent_spec(path: Optional[str] = None, config_file: str = CONFIG_FILE, builtin: Optional[dict] = None,
                    builtin_name: str = "DQN_CARTPOLE_SPEC") -> tuple:
    """(agent spec dict without run sections, source): from `path`, else `config_file` (default
    configs/dqn_cartpole.json), else the built-in spec `builtin` (default `DQN_CARTPOLE_SPEC`)."""
    from rlgraph.agents.agent import RUN_SECTIONS
    path = path or (config_file if os.path.isfile(config_file) else None)
    if path is None:
        return copy.deepcopy(DQN_CARTPOLE_SPEC if builtin is None else builtin), f"built-in {builtin_name}"
    from rlgraph.utils.rlgraph_errors import RLGraphSpecError
    from rlgraph.utils.specifiable import load_spec_file
    spec = load_spec_file(path)  # Within the spec-file limits (size, depth, YAML aliases).
    if not isinstance(spec, dict):
        raise RLGraphSpecError("a config must be a mapping", where=f"benchmark config {path!r}",
                               expected="a JSON object or YAML mapping", received=type(spec).__name__)
    return {k: v for k, v in spec.items() if k not in RUN_SECTIONS}, path


def make_parser(name: str, description: str) -> argparse.ArgumentParser:
    """An argument parser with the options every benchmark has: --quick and --out."""
    parser = argparse.ArgumentParser(prog=f"rlgraph benchmark {name}", description=description)
    parser.add_argument("--quick", action="store_true", help="a tiny run (smoke test; numbers are not meaningful)")
    parser.add_argument("--out", default=os.path.join(DEFAULT_RESULTS_DIR, f"{name}.json"),
                        help="where to write the JSON results (default: %(default)s)")
    return parser


def time_calls(fn: Callable[[], object], calls: int) -> List[float]:
    """Seconds per call of `fn`, one entry per call."""
    times = []
    clock = time.perf_counter
    for _ in range(calls):
        start = clock()
        fn()
        times.append(clock() - start)
    return times


def interleaved_medians(fns: Dict[str, Callable[[], object]], calls: int, rounds: int = 5,
                        warmup: int = 100) -> Dict[str, float]:
    """Median seconds per call of each function, measured in `rounds` alternating blocks.

    Alternating the contenders block by block spreads slow phases of a shared machine over all
    of them, so that their ratio holds even when absolute times drift.
    """
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    samples: Dict[str, List[float]] = {name: [] for name in fns}
    per_round = max(1, calls // rounds)
    for _ in range(rounds):
        for name, fn in fns.items():
            samples[name].extend(time_calls(fn, per_round))
    return {name: statistics.median(values) for name, values in samples.items()}


def format_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table; floats get 3 significant decimals, ratios are strings already."""
    def cell(value):
        if isinstance(value, float):
            return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3g}"
        return str(value)
    table = [[str(h) for h in headers]] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(headers))]
    lines = ["  ".join(text.ljust(widths[i]) if i == 0 else text.rjust(widths[i]) for i, text in enumerate(row))
             for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def environment_info() -> dict:
    """Versions and machine facts that a result depends on."""
    info = {"python": platform.python_version(), "numpy": np.__version__, "machine": platform.machine(),
            "cpus": os.cpu_count(), "time": time.strftime("%Y-%m-%d %H:%M:%S")}
    from importlib import metadata
    for package in ("torch", "tensorflow-cpu", "tensorflow", "stable-baselines3", "gymnasium"):
        try:
            info[package] = metadata.version(package)  # (Without importing the package.)
        except metadata.PackageNotFoundError:
            continue
    return info


def guarded_call(fn: Callable[..., Any], *args: Any) -> Any:
    """`fn(*args)`, or {"error": "<exception type>: <message>"} if it raises (one failed run of a
    benchmark is a row with its error, not the end of the benchmark)."""
    try:
        return fn(*args)
    except Exception as error:  # noqa: BLE001 - any failure of a contender is reported, not raised
        return {"error": f"{type(error).__name__}: {error}"}


def run_isolated(fn: Callable[..., Any], *args: Any) -> Any:
    """`guarded_call(fn, *args)` in a new spawned process (one at a time: timed runs never overlap).

    Each benchmark contender runs in a process of its own, as the learning study's runs do: what
    one leaves behind (a Ray it started and stopped, threads, a backend's global settings) cannot
    break the next, and a crash ends only its own process. `fn` and `args` must pickle (`fn` a
    module-level function).

    Returns:
        What `fn` returned, or {"error": ...} if it raised or its process died.
    """
    try:
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            return pool.submit(guarded_call, fn, *args).result()
    except BrokenProcessPool as error:
        return {"error": f"the process died ({error})"}
    except Exception as error:  # noqa: BLE001 - e.g. a result or argument that does not pickle
        return {"error": f"{type(error).__name__}: {error}"}


def failed(value: Any) -> Optional[str]:
    """The error of a `guarded_call` / `run_isolated` result, or None."""
    return value.get("error") if isinstance(value, dict) else None


def write_results(result: dict, out: Optional[str]) -> Optional[str]:
    """Writes `result` (plus `environment_info()`) as JSON to `out`; returns the path."""
    if not out:
        return None
    result = dict(result, environment=environment_info())
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as handle:
        json.dump(result, handle, indent=2, default=_jsonable)
    return out


def _jsonable(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"not JSON serializable: {type(value).__name__}")
