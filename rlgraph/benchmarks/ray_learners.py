"""IMPALA's learner on Ray: update samples/s of 1 learner in the driver and of N learner actors.

Three contenders update an IMPALA agent (CartPole shapes, 2 x 64 tanh, V-trace, Adam) on the same
kind of batch: `rows` rollout rows of 20 steps.
- "driver": the executor's own agent (a whole learner, as with `num_learners` 1), the whole batch per
  update, timed while the learner actors are idle;
- "ray": `IMPALAExecutor` with `num_learners` N: each update ships N shards from the driver to N
  learner actors, which average their gradients (`rlgraph/execution/ray/learner_group.py`);
- "processes": the same N learners as plain processes, each updating on its own shard already in
  its memory (the group's collectives, no Ray dispatch and no batch transport): the bound the Ray
  group can reach.
Samples/s = rows * 20 * updates / seconds; "scaling" is over the driver's figure; "ray / processes"
is what Ray's dispatch and shard transport leave of the bound. Run:

    python -m benchmarks.ray_learners [--learners 2] [--backends pytorch tf] [--rows 32] [--updates 200] [--quick]
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

import numpy as np

from rlgraph.benchmarks.common import format_table, make_parser, select_backends, write_results
from rlgraph.utils import learner_group

T = 20
WARMUP = 5
CARTPOLE = {"type": "openai-gym", "gym_env": "CartPole-v1"}


def impala_config(backend: str, rows: int, learners: int) -> dict:
    return {"type": "impala", "backend": backend, "discount": 0.99, "worker_sample_size": T,
            "fifo_queue_spec": {"capacity": rows}, "reward_clipping": None,
            "network_spec": [{"type": "dense", "units": 64, "activation": "tanh"}] * 2,
            "update_spec": {"batch_size": rows}, "optimizer_spec": {"type": "adam", "learning_rate": 0.0005},
            "execution_spec": {"seed": 1, "max_timesteps": 10**6, "torch_num_threads": 1, "tf_num_threads": 1,
                               "num_learners": learners,
                               "ray_spec": {"executor_spec": {"num_sample_workers": 1, "num_cpus_per_worker": 0.1,
                                                              "num_cpus_per_learner": 0.5}}}}


def rollout(rows: int, seed: int) -> dict:
    rng = np.random.RandomState(seed)
    return dict(states=rng.normal(size=(rows, T, 4)).astype(np.float32),
                bootstrap_states=rng.normal(size=(rows, 4)).astype(np.float32),
                actions=rng.randint(0, 2, size=(rows, T)),
                action_probs=rng.dirichlet(np.ones(2), size=(rows, T)).astype(np.float32),
                rewards=rng.uniform(-1, 1, size=(rows, T)).astype(np.float32),
                terminals=rng.uniform(size=(rows, T)) < 0.05)


def _timed(step, updates: int) -> float:
    for _ in range(WARMUP):
        step()
    start = time.perf_counter()
    for _ in range(updates):
        step()
    return time.perf_counter() - start


def time_ray(backend: str, rows: int, learners: int, updates: int) -> tuple:
    """Seconds of `updates` updates through one `IMPALAExecutor` with `learners` learner actors:
    (on its own agent, the whole batch in the driver; through its learner group)."""
    import ray

    from rlgraph.execution.ray import IMPALAExecutor
    temp_dir = tempfile.mkdtemp(prefix="r", dir="/tmp")  # (Ray's socket paths have a length limit.)
    ray.init(num_cpus=max(2, learners), include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir)
    try:
        with IMPALAExecutor(CARTPOLE, impala_config(backend, rows, learners)) as executor:
            batch = rollout(rows, 0)
            # (The executor's agent is a whole learner: with the learners idle, it is the 1-learner run.)
            driver = _timed(lambda: executor.local_agent.update(batch), updates)
            return driver, _timed(lambda: executor.learner_group.update(batch), updates)
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


def time_processes(backend: str, rows: int, learners: int, updates: int) -> float:
    """Seconds of the slowest of `learners` plain processes (`worker`) updating on their shards."""
    addresses = ",".join(learner_group.free_local_addresses(learners))
    with tempfile.TemporaryDirectory(prefix="rlgraph-ray-learners-") as scratch:
        outs = [os.path.join(scratch, f"rank-{r}.json") for r in range(learners)]
        procs = [subprocess.Popen([sys.executable, "-m", "rlgraph.benchmarks.ray_learners", "--worker", backend,
                                   str(r), str(learners), addresses, str(rows), str(updates), outs[r]],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
                 for r in range(learners)]
        errors = [p.communicate()[1] for p in procs]
        if any(p.returncode for p in procs):
            raise RuntimeError(f"processes {backend} x{learners} failed:\n" + "\n".join(e[-2000:] for e in errors))
        return max(json.load(open(out))["seconds"] for out in outs)


def worker(backend: str, rank: int, size: int, addresses: str, rows: int, updates: int, out: str) -> None:
    """One learner of `time_processes`: joins the group, times updates on its shard."""
    from rlgraph.agents import Agent
    from rlgraph.execution.learner_sync import broadcast_weights
    from rlgraph.spaces import FloatBox, IntBox
    group = learner_group.join(rank, size, backend, addresses.split(","))
    config = impala_config(backend, rows, size)
    config["execution_spec"].pop("ray_spec")
    agent = Agent.from_spec(config, state_space=FloatBox(shape=(4,)), action_space=IntBox(2))
    broadcast_weights(agent, group)
    shard = {k: v[rank * rows // size:(rank + 1) * rows // size] for k, v in rollout(rows, 0).items()}
    seconds = _timed(lambda: agent.update(shard), updates)
    with open(out, "w") as f:
        json.dump({"seconds": seconds}, f)
    learner_group.leave()


def main(argv: Optional[List[str]] = None) -> dict:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--worker":
        backend, rank, size, addresses, rows, updates, out = argv[1:8]
        worker(backend, int(rank), int(size), addresses, int(rows), int(updates), out)
        return {}
    parser = make_parser("ray-learners", __doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=None, help="tf and/or pytorch (default: all installed)")
    parser.add_argument("--learners", type=int, default=2, help="learners of the group, >= 2 (default: 2)")
    parser.add_argument("--rows", type=int, default=32, help="rollout rows per update (default: 32)")
    parser.add_argument("--updates", type=int, default=None, help="timed updates (default 200)")
    args = parser.parse_args(argv)
    if args.learners < 2:
        parser.error("--learners must be >= 2 (the 1-learner figure is the driver's)")
    updates = args.updates or (10 if args.quick else 200)
    backends = select_backends(args.backends, "rlgraph benchmark ray-learners (--backends)")
    samples = args.rows * T * updates
    result: Dict[str, object] = {"updates": updates, "rows": args.rows, "rollout_length": T,
                                 "learners": args.learners, "cpu_count": os.cpu_count(), "runs": []}
    rows = []
    for backend in backends:
        driver, on_ray = (samples / seconds for seconds in time_ray(backend, args.rows, args.learners, updates))
        plain = samples / time_processes(backend, args.rows, args.learners, updates)
        result["runs"].append({"backend": backend, "driver_samples_per_s": driver, "ray_samples_per_s": on_ray,
                               "processes_samples_per_s": plain})
        rows.append([backend, f"{driver:.0f}", f"{on_ray:.0f}", f"{on_ray / driver:.2f}x", f"{plain:.0f}",
                     f"{plain / driver:.2f}x", f"{on_ray / plain:.2f}x"])
    print(f"IMPALA update samples/s ({args.rows} rows x {T} steps per update, {updates} updates, "
          f"{args.learners} learners, {os.cpu_count()} CPUs)")
    print(format_table(["backend", "driver (1)", "ray group", "ray scaling", "processes", "processes scaling",
                        "ray / processes"], rows))
    path = write_results(result, args.out)
    if path:
        print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
