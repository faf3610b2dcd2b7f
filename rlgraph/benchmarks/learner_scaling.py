"""Data-parallel update throughput: samples/s of 1 and N learner processes, against raw PyTorch DDP.

Each learner is a process with one backend thread that holds the CartPole DQN agent of
configs/dqn_cartpole.json and times `agent.update(batch)` on its own batch of 64 (so N learners
learn from N * 64 samples per step, their gradients averaged: `rlgraph.utils.learner_group`). The
peer is hand-written PyTorch: the same double-DQN Adam step (`update_overhead.raw_torch_step`)
with the online network wrapped in `torch.nn.parallel.DistributedDataParallel` on gloo, in
the same number of processes. Samples/s = learners * 64 * updates / the slowest learner's seconds;
"scaling" is samples/s over the 1-learner figure of the same contender (ideal: N). Run:

    python -m benchmarks.learner_scaling [--learners 1 2] [--backends tf pytorch] [--updates 1000] [--quick]
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

from rlgraph.benchmarks.common import format_table, make_parser, select_backends, write_results
from rlgraph.utils import learner_group

BATCH_SIZE = 64
WARMUP = 20


def run_group(contender: str, backend: str, learners: int, updates: int) -> Dict[str, float]:
    """Starts `learners` processes of `worker`; returns samples/s and seconds of the slowest."""
    addresses = ",".join(learner_group.free_local_addresses(learners))
    with tempfile.TemporaryDirectory(prefix="rlgraph-scaling-") as scratch:
        outs = [os.path.join(scratch, f"rank-{r}.json") for r in range(learners)]
        procs = [subprocess.Popen([sys.executable, "-m", "rlgraph.benchmarks.learner_scaling", "--worker", contender,
                                   backend, str(r), str(learners), addresses, str(updates), outs[r]],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for r in range(learners)]
        errors = [p.communicate()[1] for p in procs]
        if any(p.returncode for p in procs):
            raise RuntimeError(f"{contender} {backend} x{learners} failed:\n" + "\n".join(e[-2000:] for e in errors))
        seconds = max(json.load(open(out))["seconds"] for out in outs)
    return {"seconds": seconds, "samples_per_s": learners * BATCH_SIZE * updates / seconds}


def worker(contender: str, backend: str, rank: int, size: int, addresses: str, updates: int, out: str) -> None:
    """One timed learner (run in its own process by `run_group`)."""
    from rlgraph.benchmarks.act_overhead import make_agent, policy_layers
    from rlgraph.benchmarks.update_overhead import make_batch
    from rlgraph.utils import learner_group
    if contender == "rlgraph" and size > 1:
        learner_group.join(rank, size, backend, addresses.split(","))
    agent, state_space, action_space = make_agent(backend)
    batch = make_batch(int(state_space.shape[0]), int(action_space.num_categories), seed=rank)
    if contender == "rlgraph":
        step = lambda: agent.update(batch)  # noqa: E731
    else:
        step = _raw_ddp_step(policy_layers(agent), policy_layers(agent, "target_policy"), batch, agent.discount,
                             float(agent.optimizer_spec["learning_rate"]), rank, size, addresses.split(",")[0])
    for _ in range(WARMUP):
        step()
    start = time.perf_counter()
    for _ in range(updates):
        step()
    seconds = time.perf_counter() - start
    with open(out, "w") as f:
        json.dump({"seconds": seconds}, f)
    learner_group.leave()


def _raw_ddp_step(online_layers, target_layers, batch, discount, learning_rate, rank, size, address):
    """fn(): `update_overhead.raw_torch_step` (hand-written double-DQN Adam step) with the online
    network in PyTorch's `DistributedDataParallel` (gloo) when there are several learners."""
    from rlgraph.benchmarks.update_overhead import raw_torch_step
    wrap = None
    if size > 1:
        import torch
        import torch.distributed as dist
        dist.init_process_group("gloo", init_method=f"tcp://{address}", rank=rank, world_size=size)
        wrap = torch.nn.parallel.DistributedDataParallel
    return raw_torch_step(online_layers, target_layers, batch, discount, learning_rate, wrap_online=wrap)


def main(argv: Optional[List[str]] = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--worker":
        contender, backend, rank, size, addresses, updates, out = argv[1:8]
        worker(contender, backend, int(rank), int(size), addresses, int(updates), out)
        return {}
    parser = make_parser("learners", __doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=None, help="tf and/or pytorch (default: all installed)")
    parser.add_argument("--learners", nargs="+", type=int, default=[1, 2], help="group sizes (default: 1 2)")
    parser.add_argument("--updates", type=int, default=None, help="timed updates per learner (default 1000)")
    args = parser.parse_args(argv)
    updates = args.updates or (30 if args.quick else 1000)
    backends = select_backends(args.backends, "rlgraph benchmark learners (--backends)")
    result = {"updates": updates, "batch_size": BATCH_SIZE, "cpu_count": os.cpu_count(), "runs": []}
    rows = []
    for backend in backends:
        contenders = ["rlgraph", "raw-ddp"] if backend == "pytorch" else ["rlgraph"]
        base = {}
        for learners in sorted(args.learners):
            for contender in contenders:
                m = run_group(contender, backend, learners, updates)
                base.setdefault(contender, m["samples_per_s"])
                m.update(backend=backend, contender=contender, learners=learners,
                         scaling=m["samples_per_s"] / base[contender])
                result["runs"].append(m)
            ours = [r for r in result["runs"] if (r["backend"], r["learners"]) == (backend, learners)]
            raw = next((r for r in ours if r["contender"] == "raw-ddp"), None)
            mine = next(r for r in ours if r["contender"] == "rlgraph")
            rows.append([backend, learners, f"{mine['samples_per_s']:.0f}", f"{mine['scaling']:.2f}x",
                         f"{raw['samples_per_s']:.0f}" if raw else "-", f"{raw['scaling']:.2f}x" if raw else "-",
                         f"{raw['samples_per_s'] / mine['samples_per_s']:.2f}x" if raw else "-"])
    print(f"DQN update throughput (batch {BATCH_SIZE} per learner, {updates} updates, one thread per learner, "
          f"{os.cpu_count()} CPUs)")
    print(format_table(["backend", "learners", "rlgraph samples/s", "scaling", "raw DDP samples/s", "raw scaling",
                        "raw / rlgraph"], rows))
    path = write_results(result, args.out)
    if path:
        print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
