"""Ape-X on Ray: env frames/s over sample workers, and the executor's sampling cost against one process.

`ApexExecutor` (Horgan et al. 2018, https://arxiv.org/abs/1803.00933) with the config of
configs/apex_cartpole.json (its network, replay, batch, weight-sync and task settings; `--config`
for another), changed only where the benchmark needs it: the number of sample workers and their
envs, 0.25 logical CPUs per actor (so that 4 workers and a shard fit on a Ray of `--ray-cpus`
logical CPUs on a 2-core machine), when the learner starts, a seed and one backend thread per
process. Two measurements, side by side in one run:

1. **Scaling** (target >= 0.75 x workers, i.e. 3.0x for 4): env frames/s with `--workers`
   sample workers against 1 worker on `SleepyCartPole`, CartPole-v1 whose step sleeps 2 ms (a
   latency-bound env, as remote simulators are; the workers mostly sleep, so they scale on few
   cores). The learner runs (the replay holds 1,000 records before the timed part); on Ray it
   learns as fast as it can up to the config's cap (one update per `update_interval` env
   steps), in this process, so on a small machine it takes CPU time from the workers.
   `--learner-idle` adds both runs with the learner idle, for comparison (no target).
2. **Overhead** (target >= 0.8x): env frames/s of the executor with 1 sample worker on plain
   CartPole-v1 against the same agent config acting in `SingleThreadedWorker` in this process.
   Both act with exploration on the same number of envs and observe every transition (the
   executor's worker into its record buffer, then |TD| priorities and a replay-shard insert;
   the in-process agent into a prioritized replay of the shard's capacity); neither learns (the
   executor's learner idles: `update_spec.do_updates` false).

Build and actor start-up are not timed: each executor runs a warm-up workload after it is built,
and an untimed workload of two sample tasks per worker before every timed one, so that each timed
workload starts with its pipelines full, as in the middle of a long run (a sample task that
finished while another contender ran would otherwise count as free frames). The contenders alternate in
`--rounds` blocks; the table shows medians. Run:

    rlgraph benchmark apex [--backend pytorch tf] [--workers 4] [--timesteps 2000] [--rounds 3]
                           [--learner-idle] [--mode inline] [--quick]
"""
from __future__ import annotations

import copy
import os
import statistics
import time
from typing import Any, Dict, List, Optional

from rlgraph.benchmarks.common import (format_table, load_agent_spec, make_parser, select_backends, single_thread,
                                      write_results)
from rlgraph.environments import OpenAIGymEnv
from rlgraph.utils.rlgraph_errors import RLGraphError

STEP_SLEEP = 0.002
SCALING_EFFICIENCY = 0.75  # target frames/s ratio per worker: 3.0x for 4 workers
OVERHEAD_TARGET = 0.8
ACTOR_CPUS = 0.25          # Ray's logical CPUs per sample worker and replay shard
LEARNER_START = 1_000      # records in the replay before the learner starts (scaling runs)
LEARNER_IDLE = None        # min_replay for runs whose learner idles (update_spec.do_updates false)
SEED = 1
LOCAL_WARMUP = 200         # untimed env steps of the in-process worker after its build
BUSY_LOAD = 0.5            # a 1-minute load average above this before the start gets a note

PLAIN_ENV = {"type": "openai-gym", "gym_env": "CartPole-v1"}
CONFIG_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           "configs", "apex_cartpole.json")

# configs/apex_cartpole.json without its run sections (a test keeps the two equal), for an
# installation without the checkout's configs/.
APEX_CARTPOLE_SPEC = {
    "type": "apex", "discount": 0.99, "double_q": True, "dueling_q": True, "huber_loss": True, "n_step": 3,
    "network_spec": [{"type": "dense", "units": 128, "activation": "relu", "scope": "hidden-1"},
                     {"type": "dense", "units": 128, "activation": "relu", "scope": "hidden-2"}],
    "exploration_spec": {"epsilon_spec": {"decay_spec": {"type": "linear-decay", "from": 1.0, "to": 0.02,
                                                         "start_percentage": 0.0, "stop_percentage": 0.1}}},
    "update_spec": {"batch_size": 128, "sync_interval": 500, "update_interval": 4, "update_steps": 1},
    "optimizer_spec": {"type": "adam", "learning_rate": 0.001, "clip_grad_norm": 10},
    "execution_spec": {"torch_num_threads": 1, "ray_spec": {
        "executor_spec": {"num_sample_workers": 2, "num_replay_workers": 1, "num_cpus_per_worker": 0.5,
                          "num_cpus_per_replay_actor": 0.5, "num_worker_samples": 50, "weight_sync_steps": 100,
                          "replay_sampling_task_depth": 2, "learn_queue_size": 2},
        "worker_spec": {"num_worker_environments": 1},
        "apex_replay_spec": {"memory_spec": {"capacity": 50000, "alpha": 0.6, "beta": 0.4},
                             "min_sample_memory_size": 1000}}},
}


def load_apex_spec(path: Optional[str] = None) -> tuple:
    """(Ape-X config without run sections, source): from `path`, else configs/apex_cartpole.json,
    else `APEX_CARTPOLE_SPEC`."""
    return load_agent_spec(path, CONFIG_FILE, APEX_CARTPOLE_SPEC, "APEX_CARTPOLE_SPEC")


class SleepyCartPole(OpenAIGymEnv):
    """CartPole-v1 whose `step` sleeps `step_sleep` seconds first: a latency-bound environment.

    Defined at module level so that Ray's worker processes can import it; its spec is
    `{"type": "rlgraph.benchmarks.apex.SleepyCartPole"}`.

    Args:
        step_sleep: Seconds each `step` sleeps.
        **kwargs: `OpenAIGymEnv` arguments (e.g. `seed`).
    """

    def __init__(self, step_sleep: float = STEP_SLEEP, **kwargs):
        super().__init__("CartPole-v1", **kwargs)
        self.step_sleep = float(step_sleep)

    def step(self, actions: Any) -> tuple:
        time.sleep(self.step_sleep)
        return super().step(actions)


def sleepy_env_spec(step_sleep: float) -> dict:
    return {"type": f"{__name__}.{SleepyCartPole.__name__}", "step_sleep": step_sleep}


def apex_config(spec: dict, backend: str, mode: str, num_workers: int, num_envs: int,
                min_replay: Optional[int]) -> dict:
    """`spec` (an Ape-X config) with the benchmark's settings: backend, seed, one backend thread,
    `num_workers` sample workers of `num_envs` envs, `ACTOR_CPUS` per actor, and the learner
    starting at `min_replay` records (`LEARNER_IDLE`: no updates; `rlgraph.execution.ray.specs` has the
    ray_spec keys)."""
    config = copy.deepcopy(spec)
    config["backend"] = backend
    execution = config.setdefault("execution_spec", {})
    execution.setdefault("seed", SEED)
    execution.update(torch_num_threads=1, tf_num_threads=1)
    ray_spec = execution.setdefault("ray_spec", {})
    ray_spec.setdefault("executor_spec", {}).update(mode=mode, num_sample_workers=num_workers,
                                                    num_cpus_per_worker=ACTOR_CPUS,
                                                    num_cpus_per_replay_actor=ACTOR_CPUS)
    ray_spec.setdefault("worker_spec", {})["num_worker_environments"] = num_envs
    if min_replay is LEARNER_IDLE:
        config["update_spec"] = dict(config.get("update_spec") or {}, do_updates=False)
    else:
        ray_spec.setdefault("apex_replay_spec", {})["min_sample_memory_size"] = min_replay
    return config


def local_agent_config(config: dict) -> dict:
    """`config` for one process: no ray_spec, the shard's prioritized replay, no updates."""
    from rlgraph.components.memories.frame_replay import FRAME_MEMORY_TYPES
    from rlgraph.execution.ray.specs import split_ray_spec
    agent_config, ray_spec = split_ray_spec(config)
    memory_spec = ray_spec["apex_replay_spec"]["memory_spec"]
    frames = str(memory_spec.get("type", "")).replace("_", "-").lower() in FRAME_MEMORY_TYPES
    agent_config["memory_spec"] = dict(memory_spec, type="frame-replay" if frames else "mem-prioritized-replay")
    agent_config["update_spec"] = dict(agent_config.get("update_spec") or {}, do_updates=False)
    return agent_config


def _workload(num_timesteps: int) -> dict:
    return {"num_timesteps": num_timesteps, "report_interval": num_timesteps, "report_interval_min_seconds": 0.0}


class ExecutorRun:
    """An `ApexExecutor`, built and warmed up; `measure` runs one timed workload."""

    def __init__(self, env_spec: Any, config: dict, first_warmup: int):
        from rlgraph.execution.ray import ApexExecutor
        self.executor = ApexExecutor(env_spec, config)
        spec = self.executor.executor_spec
        self.warmup = 2 * spec["num_worker_samples"] * spec["num_sample_workers"]
        try:
            self.executor.execute_workload(_workload(max(first_warmup, self.warmup)))
        except BaseException:
            self.executor.terminate()
            raise

    def measure(self, num_timesteps: int) -> dict:
        # Takes the task that finished while other contenders ran, then fills the pipeline again.
        self.executor.execute_workload(_workload(self.warmup))
        r = self.executor.execute_workload(_workload(num_timesteps))
        return {"frames_per_s": r["env_frames_per_second"], "timesteps": r["timesteps_executed"],
                "seconds": r["runtime"], "updates_per_s": r["updates_per_second"],
                "mean_policy_lag": r["mean_policy_lag"], "learner_updates": r["learner_updates"]}

    def terminate(self) -> None:
        self.executor.terminate()


class LocalRun:
    """The same agent config acting (and observing) in a `SingleThreadedWorker` in this process."""

    def __init__(self, env_spec: Any, config: dict, num_envs: int, first_warmup: int):
        from rlgraph.agents import Agent
        from rlgraph.environments import Environment
        from rlgraph.execution import SingleThreadedWorker
        env = Environment.from_spec(env_spec)
        self.agent = Agent.from_spec(local_agent_config(config), state_space=env.state_space,
                                     action_space=env.action_space)
        env.terminate()
        self.worker = SingleThreadedWorker(self.agent, env_spec, num_environments=num_envs, seed=SEED * 1000)
        self.worker.execute_timesteps(first_warmup, reset=True)

    def measure(self, num_timesteps: int) -> dict:
        stats = self.worker.execute_timesteps(num_timesteps, reset=False)
        return {"frames_per_s": stats["env_frames_per_second"], "timesteps": stats["timesteps_executed"],
                "seconds": stats["runtime"], "act_time": stats["act_time"], "env_time": stats["env_time"]}

    def terminate(self) -> None:
        self.worker.terminate()
        self.agent.terminate()


def start_ray(num_cpus: int) -> bool:
    """Starts Ray here unless this process has one; returns whether it started one.

    Raises:
        RLGraphError: Ray is not installed.
    """
    try:
        import ray
    except ImportError:
        raise RLGraphError("Ray is not installed", where="rlgraph benchmark apex (--mode ray)",
                           hint='install it with `pip install -c constraints.txt -e ".[ray]"`, or run '
                                "`--mode inline` (no Ray; its frames/s do not scale).") from None
    if ray.is_initialized():
        return False
    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    return True


def measure(spec: dict, backend: str, mode: str, workers: int, envs: int, step_sleep: float, timesteps: int,
            overhead_timesteps: int, rounds: int, min_replay: int, learner_idle: bool = False) -> Dict[str, dict]:
    """{run name: {"frames_per_s": median, "rounds": [per-round figures], ...}} of the four runs (six with
    `learner_idle`: the scaling runs again with the learner idle)."""
    sleepy = sleepy_env_spec(step_sleep)

    def config(num_workers: int, min_size: int) -> dict:
        return apex_config(spec, backend, mode, num_workers, envs, min_size)
    # (name, what it runs, its timed env steps per round, a maker)
    plan = [
        ("scaling-1", "SleepyCartPole", 1, timesteps,
         lambda: ExecutorRun(sleepy, config(1, min_replay), min_replay)),
        (f"scaling-{workers}", "SleepyCartPole", workers, timesteps * workers,
         lambda: ExecutorRun(sleepy, config(workers, min_replay), min_replay)),
        ("overhead-executor", "CartPole-v1", 1, overhead_timesteps,
         lambda: ExecutorRun(PLAIN_ENV, config(1, LEARNER_IDLE), 0)),
        ("overhead-local", "CartPole-v1", 0, overhead_timesteps,
         lambda: LocalRun(PLAIN_ENV, config(1, LEARNER_IDLE), envs, LOCAL_WARMUP)),
    ]
    if learner_idle:
        plan[2:2] = [(f"idle-scaling-{n}", "SleepyCartPole", n, timesteps * n,
                      lambda n=n: ExecutorRun(sleepy, config(n, LEARNER_IDLE), 0))
                     for n in (1, workers)]
    runs, contenders = {}, {}
    try:
        for name, env, num_workers, steps, make in plan:
            start = time.perf_counter()
            contenders[name] = make()
            runs[name] = {"env": env, "workers": num_workers, "envs_per_worker": envs, "timed_steps": steps,
                          "setup_s": time.perf_counter() - start, "rounds": []}
        for _ in range(rounds):
            for name, _, _, steps, _ in plan:
                runs[name]["rounds"].append(contenders[name].measure(steps))
    finally:
        for contender in contenders.values():
            contender.terminate()
    for run in runs.values():
        for key in ("frames_per_s", "updates_per_s", "mean_policy_lag"):
            if key in run["rounds"][0]:
                run[key] = statistics.median(r[key] for r in run["rounds"])
    return runs


def ratios(runs: Dict[str, dict], workers: int) -> Dict[str, dict]:
    """{"scaling", "overhead"[, "scaling_learner_idle"]: {"value"[, "target", "meets_target"]}} of `runs`."""
    scaling = runs[f"scaling-{workers}"]["frames_per_s"] / runs["scaling-1"]["frames_per_s"]
    overhead = runs["overhead-executor"]["frames_per_s"] / runs["overhead-local"]["frames_per_s"]
    out = {"scaling": {"value": scaling, "target": SCALING_EFFICIENCY * workers},
           "overhead": {"value": overhead, "target": OVERHEAD_TARGET}}
    for entry in out.values():
        entry["meets_target"] = entry["value"] >= entry["target"]
    if "idle-scaling-1" in runs:  # Informational: what the learner's share of the CPUs costs the scaling.
        out["scaling_learner_idle"] = {"value": runs[f"idle-scaling-{workers}"]["frames_per_s"] /
                                       runs["idle-scaling-1"]["frames_per_s"]}
    return out


def print_table(backend: str, r: dict, mode: str, rounds: int, step_sleep: float) -> None:
    runs, workers = r["runs"], r["workers"]
    labels = {"scaling-1": "ApexExecutor, 1 worker", f"scaling-{workers}": f"ApexExecutor, {workers} workers",
              "idle-scaling-1": "ApexExecutor, 1 worker, learner idle",
              f"idle-scaling-{workers}": f"ApexExecutor, {workers} workers, learner idle",
              "overhead-executor": "ApexExecutor, 1 worker, learner idle",
              "overhead-local": "SingleThreadedWorker, this process"}
    rows = []
    for name, run in runs.items():
        frames = [x["frames_per_s"] for x in run["rounds"]]
        lag = run.get("mean_policy_lag")
        rows.append([labels[name], run["env"], run["envs_per_worker"], run["frames_per_s"],
                     f"{min(frames):,.0f}-{max(frames):,.0f}",
                     run["updates_per_s"] if "updates_per_s" in run else "-",
                     "-" if lag is None or lag != lag else f"{lag:.1f}"])
    print(f"Ape-X, {backend}, mode {mode}: env frames/s, median of {rounds} round(s) "
          f"(SleepyCartPole sleeps {step_sleep * 1e3:g} ms per step)")
    print(format_table(["run", "env", "envs", "frames/s", "range", "updates/s", "policy lag"], rows))
    scaling, overhead = r["ratios"]["scaling"], r["ratios"]["overhead"]
    rows = [[f"{workers} workers / 1 worker (SleepyCartPole)", f"{scaling['value']:.2f}x",
             f">= {scaling['target']:.2f}x", "yes" if scaling["meets_target"] else "NO"],
            ["executor / SingleThreadedWorker (CartPole-v1)", f"{overhead['value']:.2f}x",
             f">= {overhead['target']:.2f}x", "yes" if overhead["meets_target"] else "NO"]]
    if "scaling_learner_idle" in r["ratios"]:
        idle = r["ratios"]["scaling_learner_idle"]["value"]
        rows.insert(1, [f"{workers} workers / 1 worker, learner idle", f"{idle:.2f}x", "-", "-"])
    print(format_table(["ratio", "measured", "target", "met"], rows))


def main(argv: Optional[List[str]] = None) -> dict:
    parser = make_parser("apex", __doc__.splitlines()[0])
    parser.add_argument("--config", default=None,
                        help="an Ape-X config (default: configs/apex_cartpole.json, else the built-in copy)")
    parser.add_argument("--backend", nargs="+", default=["pytorch"], choices=["pytorch", "tf"],
                        help="pytorch and/or tf, one after the other (default: pytorch)")
    parser.add_argument("--mode", default="ray", choices=["ray", "inline"],
                        help='"inline": the actors as plain objects in this process, one after another (tests; '
                             "its frames/s do not scale). Default: %(default)s")
    parser.add_argument("--workers", type=int, default=None, help="sample workers of the scaling run (default 4)")
    parser.add_argument("--envs", type=int, default=1,
                        help="envs per sample worker, and of the in-process worker (default 1)")
    parser.add_argument("--timesteps", type=int, default=None,
                        help="timed env steps per sample worker and round of the scaling runs (default 2000)")
    parser.add_argument("--overhead-timesteps", type=int, default=None,
                        help="timed env steps per round of the overhead runs (default 10000)")
    parser.add_argument("--rounds", type=int, default=None, help="alternating blocks (default 3)")
    parser.add_argument("--step-sleep", type=float, default=STEP_SLEEP,
                        help="seconds per SleepyCartPole step (default %(default)s)")
    parser.add_argument("--learner-idle", action="store_true",
                        help="also run the scaling runs with the learner idle (informational)")
    parser.add_argument("--ray-cpus", type=int, default=4, help="logical CPUs of the Ray started here (default 4)")
    args = parser.parse_args(argv)
    quick = args.quick
    workers = args.workers or (2 if quick else 4)
    timesteps = args.timesteps or (200 if quick else 2000)
    overhead_timesteps = args.overhead_timesteps or (400 if quick else 10000)
    rounds = args.rounds or (1 if quick else 3)
    min_replay = 200 if quick else LEARNER_START
    if workers < 2 or args.envs < 1 or rounds < 1:
        parser.error("--workers must be >= 2, --envs and --rounds >= 1")
    backends = select_backends(args.backend, "rlgraph benchmark apex (--backend)")
    spec, source = load_apex_spec(args.config)
    result = {"benchmark": "apex", "config": source, "mode": args.mode, "quick": quick, "workers": workers,
              "envs_per_worker": args.envs, "step_sleep": args.step_sleep, "rounds": rounds,
              "timesteps_per_worker": timesteps, "overhead_timesteps": overhead_timesteps,
              "actor_cpus": ACTOR_CPUS, "ray_cpus": args.ray_cpus if args.mode == "ray" else None, "backends": {}}
    result["load_before"] = os.getloadavg()[0]
    if result["load_before"] >= BUSY_LOAD:
        print(f"note: the 1-minute load average is {result['load_before']:.2f} before the start: other work on this "
              "machine moves these figures (close it, or rerun when the machine is idle).")
    owns_ray = args.mode == "ray" and start_ray(args.ray_cpus)
    if args.mode == "ray":
        from importlib import metadata
        result["ray"] = metadata.version("ray")
    try:
        for backend in backends:
            single_thread(backend)
            runs = measure(spec, backend, args.mode, workers, args.envs, args.step_sleep, timesteps, overhead_timesteps,
                           rounds, min_replay, args.learner_idle)
            measured = {"workers": workers, "runs": runs, "ratios": ratios(runs, workers),
                        "agent_config": apex_config(spec, backend, args.mode, workers, args.envs, min_replay)}
            result["backends"][backend] = measured
            print_table(backend, measured, args.mode, rounds, args.step_sleep)
    finally:
        if owns_ray:
            import ray
            ray.shutdown()
    path = write_results(result, args.out)
    if path:
        print(f"wrote {path}")
    return result
