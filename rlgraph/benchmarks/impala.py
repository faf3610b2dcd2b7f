"""IMPALA: env frames/s over actors (threads in one process, Ray actors), and RLlib's IMPALA as the peer.

Every run learns while it acts (the learner updates whenever `batch_size` rollout rows are queued)
with configs/impala_cartpole.json's agent (`--config` for another), changed only in the number of
actors, a seed, one backend thread and 0.25 logical Ray CPUs per actor. Runs, side by side:

1. **single-impala** (`SingleIMPALAAgent`: actor threads filling the FIFO queue, `agent.update()`
   in a loop) with 1, 2 and 4 actors.
2. **IMPALAExecutor** (actors on Ray, learner in the driver) with 1, 2 and 4 actors
   (`--mode inline`: plain objects, no Ray, for tests).
3. **RLlib IMPALA** (`rlgraph.benchmarks.rllib_impala`, when its dependencies are installed: the
   `bench` extra) with the same actors, rollout length, batch size and hidden layer width.

each on CartPole-v1 and on `SleepyCartPole` (CartPole-v1 whose step sleeps 2 ms: latency-bound,
as remote simulators are). Target: 4 actors >= 3.0x 1 actor on the latency-bound env. `--learning`
adds the wall time and env steps to a mean training return of 450 on CartPole-v1 for rlgraph's
executor and RLlib. Build and start-up are not timed (each run warms up first).

Each contender runs in a spawned process of its own, one after another (`common.run_isolated`):
single-impala's runs of a backend in one, the executor's in another (with its own Ray in mode
"ray"), each RLlib run in its own (RLlib starts and stops a Ray of its own). A contender or run
that fails is a row with its error in the table (and {"error": ...} in the results); the others
are measured as usual. Run:

    rlgraph benchmark impala [--backend pytorch tf] [--actors 1 2 4] [--timesteps 4000] [--learning] [--quick]
"""
from __future__ import annotations

import copy
import os
import time
from typing import Any, Dict, List, Optional

from rlgraph.benchmarks.apex import sleepy_env_spec, start_ray
from rlgraph.benchmarks.common import (failed, format_table, guarded_call, load_agent_spec, make_parser, run_isolated,
                                       select_backends, write_results)
from rlgraph.utils.rlgraph_errors import RLGraphError

CONFIG_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           "configs", "impala_cartpole.json")
# configs/impala_cartpole.json's agent, for an installation without the checkout's configs/.
IMPALA_CARTPOLE_SPEC = {
    "type": "impala", "discount": 0.99, "worker_sample_size": 50, "fifo_queue_spec": {"capacity": 64},
    "network_spec": [{"type": "dense", "units": 64, "activation": "tanh", "scope": "hidden-1"},
                     {"type": "dense", "units": 64, "activation": "tanh", "scope": "hidden-2"}],
    "weight_pg": 1.0, "weight_baseline": 0.5, "weight_entropy": 0.01, "reward_clipping": None,
    "update_spec": {"batch_size": 8},
    "optimizer_spec": {"type": "adam", "learning_rate": 0.001, "clip_grad_norm": 40.0},
    "execution_spec": {"torch_num_threads": 1, "ray_spec": {
        "executor_spec": {"num_sample_workers": 2, "num_cpus_per_worker": 0.5, "weight_sync_steps": 50,
                          "env_interaction_task_depth": 1},
        "worker_spec": {"num_worker_environments": 1}}},
}
PLAIN_ENV = {"type": "openai-gym", "gym_env": "CartPole-v1"}
ACTOR_CPUS = 0.25
SEED = 1
TARGET_RETURN = 450.0
SCALING_TARGET = 3.0


def impala_config(spec: dict, backend: str, mode: str, actors: int) -> dict:
    """`spec` with the benchmark's settings (backend, seed, one backend thread, `actors` actors)."""
    config = copy.deepcopy(spec)
    config["backend"] = backend
    execution = config.setdefault("execution_spec", {})
    # On the CPU, as RLlib's learner runs here (num_gpus_per_learner=0).
    execution.update(seed=SEED, torch_num_threads=1, tf_num_threads=1, device="cpu")
    executor = execution.setdefault("ray_spec", {}).setdefault("executor_spec", {})
    executor.update(mode=mode, num_sample_workers=actors, num_cpus_per_worker=ACTOR_CPUS)
    return config


def run_single(spec: dict, env_spec: dict, actors: int, timesteps: int) -> dict:
    """frames/s of a single-impala agent with `actors` actor threads while it learns."""
    from rlgraph.agents import Agent
    from rlgraph.environments import Environment
    config = copy.deepcopy(spec)
    config["execution_spec"].pop("ray_spec", None)
    config.update(type="single-impala", num_workers=actors, environment_spec=env_spec)
    probe = Environment.from_spec(env_spec)
    agent = Agent.from_spec(config, state_space=probe.state_space, action_space=probe.action_space)
    probe.terminate()
    try:
        for _ in range(2):
            agent.update()  # Warm-up (the first calls trace).
        start_steps, start = agent.actor_statistics()["timesteps"], time.perf_counter()
        while agent.actor_statistics()["timesteps"] - start_steps < timesteps:
            agent.update()
        seconds = time.perf_counter() - start
        stats = agent.actor_statistics()
        return {"frames_per_s": (stats["timesteps"] - start_steps) / seconds, "updates": agent.num_updates,
                "mean_policy_lag": stats["mean_policy_lag"]}
    finally:
        agent.terminate()


def run_executor(spec: dict, env_spec: dict, timesteps: int) -> dict:
    """frames/s of `IMPALAExecutor` while it learns."""
    from rlgraph.execution.ray import IMPALAExecutor
    executor = IMPALAExecutor(env_spec, spec)
    try:
        executor.execute_workload({"num_timesteps": 500})  # Warm-up.
        result = executor.execute_workload({"num_timesteps": timesteps, "report_interval": timesteps})
        return {"frames_per_s": result["env_frames_per_second"], "updates": result["updates"],
                "mean_policy_lag": result["mean_policy_lag"]}
    finally:
        executor.terminate()


def run_rllib(spec: dict, actors: int, timesteps: int, sleepy: bool, learning: bool) -> Optional[dict]:
    """RLlib IMPALA with the same actors, rollout length, batch size and hidden width (None if missing)."""
    try:
        from rlgraph.benchmarks.rllib_impala import run_rllib_impala
    except ImportError:
        return None
    kwargs = dict(num_actors=actors, rollout_length=spec["worker_sample_size"], batch_size=spec["update_spec"]
                  ["batch_size"], hidden_units=[layer["units"] for layer in spec["network_spec"]],
                  num_timesteps=timesteps, seed=SEED, learning_rate=spec["optimizer_spec"]["learning_rate"],
                  entropy_coeff=spec.get("weight_entropy") or 0.00025)
    if sleepy:
        from rlgraph.benchmarks.apex import STEP_SLEEP
        kwargs["env_creator"] = _sleepy_gym_factory(STEP_SLEEP)
    if learning:
        kwargs["target_return"] = TARGET_RETURN
    try:
        return run_rllib_impala(**kwargs)
    except RLGraphError as error:
        print(f"RLlib skipped: {error}")
        return None


def _sleepy_gym_factory(step_sleep: float):
    from rlgraph.benchmarks.sleepy_gym import SleepyGymCartPole
    return lambda: SleepyGymCartPole(step_sleep)


def run_learning(spec: dict, backend: str, mode: str, max_steps: int) -> dict:
    """Env steps and wall time of `IMPALAExecutor` to a mean training return of 450 (last 100 episodes)."""
    from collections import deque
    from rlgraph.execution.ray import IMPALAExecutor
    executor = IMPALAExecutor(PLAIN_ENV, impala_config(spec, backend, mode, 2))
    returns: deque = deque(maxlen=100)
    steps, start = 0, time.perf_counter()
    try:
        while steps < max_steps:
            result = executor.execute_workload({"num_timesteps": 2000, "report_interval": 2000})
            steps += result["timesteps_executed"]
            returns.extend(result["episode_returns"])
            if len(returns) >= 20 and sum(returns) / len(returns) >= TARGET_RETURN:
                return {"steps_to_target": steps, "time_to_target_s": time.perf_counter() - start}
        return {"steps_to_target": None, "time_to_target_s": None, "steps": steps}
    finally:
        executor.terminate()


def single_contender(job: dict) -> dict:
    """single-impala's runs of one backend (a contender's process): {"runs": {name: figures or {"error"}}}."""
    return {"runs": {name: guarded_call(run_single, impala_config(job["spec"], job["backend"], job["mode"], actors),
                                        env_spec, actors, timesteps)
                     for name, env_spec, actors, timesteps in job["runs"]}}


def executor_contender(job: dict) -> dict:
    """`IMPALAExecutor`'s runs of one backend (a contender's process, with its own Ray in mode "ray"):
    {"runs": {name: figures or {"error"}}, "learning": ... (with `learning_steps`)}."""
    owns_ray = job["mode"] == "ray" and start_ray(job["ray_cpus"])
    try:
        out: Dict[str, Any] = {"runs": {
            name: guarded_call(run_executor, impala_config(job["spec"], job["backend"], job["mode"], actors),
                               env_spec, timesteps)
            for name, env_spec, actors, timesteps in job["runs"]}}
        if job["learning_steps"]:
            out["learning"] = guarded_call(run_learning, job["spec"], job["backend"], job["mode"],
                                           job["learning_steps"])
        return out
    finally:
        if owns_ray:
            import ray
            ray.shutdown()


def rllib_contender(job: dict) -> Optional[dict]:
    """One RLlib run (a contender's process): its figures, or None without RLlib."""
    return run_rllib(job["spec"], job["actors"], job["timesteps"], job["sleepy"], job["learning"])


# Contender -> the function its process runs (module-level, so that a spawned process finds it).
CONTENDERS = {"single": single_contender, "executor": executor_contender, "rllib": rllib_contender}


def run_contender(kind: str, job: dict) -> dict:
    """The rlgraph contender `kind`'s runs of `job` in a process of its own; if the contender
    failed as a whole (its process died, Ray did not start), each of its runs carries that error."""
    outcome = run_isolated(CONTENDERS[kind], job)
    error = failed(outcome)
    if error is not None:
        outcome = {"runs": {name: {"error": error} for name, *_ in job["runs"]}, "learning": {"error": error}}
    return outcome


def _cell(run: dict, key: str) -> Any:
    error = failed(run)
    return f"failed: {error}" if error is not None else run[key]


def _scaling(first: dict, last: dict) -> Optional[float]:
    if failed(first) is not None or failed(last) is not None or not first["frames_per_s"]:
        return None
    return last["frames_per_s"] / first["frames_per_s"]


def print_peer(result: dict, peer: dict, actors: List[int]) -> None:
    """RLlib's frames/s next to rlgraph's (PyTorch runs, when measured) and the ratios; a failed
    RLlib run is a row with its error."""
    runs = (result["backends"].get("pytorch") or {}).get("runs", {})
    rows = []
    for name, item in peer.items():
        if name == "learning" or item is None:
            continue
        ours = runs.get(name, {})
        best = max((ours[k]["frames_per_s"] for k in ("single", "executor") if k in ours and not failed(ours[k])),
                   default=None)
        if failed(item) is not None:
            rows.append([name, f"failed: {failed(item)}", "-", best if best is not None else "-", "-"])
            continue
        # rlgraph's figures exclude the warm-up, so the ratio uses RLlib's rate after its warm-up.
        steady = item.get("steady_frames_per_second") or item["frames_per_second"]
        rows.append([name, item["frames_per_second"], steady, best if best is not None else "-",
                     f"{best / steady:.2f}x" if best else "-"])
    print("RLlib IMPALA (same actors, rollout length, batch, hidden layers, learning rate, entropy weight), "
          "env frames/s")
    print(format_table(["env-actors", "RLlib", "RLlib after warm-up", "rlgraph (best of the two)",
                        "rlgraph / RLlib after warm-up"],
                       rows))
    if peer.get("learning"):
        print(f"RLlib to a mean return of {TARGET_RETURN:g}: {peer['learning']}")


def main(argv: Optional[List[str]] = None) -> dict:
    parser = make_parser("impala", __doc__.splitlines()[0])
    parser.add_argument("--config", default=None, help="an IMPALA config (default: configs/impala_cartpole.json)")
    parser.add_argument("--backend", nargs="+", default=["pytorch"], choices=["pytorch", "tf"])
    parser.add_argument("--mode", default="ray", choices=["ray", "inline"])
    parser.add_argument("--actors", type=int, nargs="+", default=None, help="actor counts (default 1 2 4)")
    parser.add_argument("--timesteps", type=int, default=None, help="timed env steps per actor (default 4000)")
    parser.add_argument("--learning", action="store_true", help="also the time to a mean return of 450")
    parser.add_argument("--learning-steps", type=int, default=500_000)
    parser.add_argument("--no-rllib", action="store_true", help="skip the RLlib peer")
    parser.add_argument("--ray-cpus", type=int, default=4)
    args = parser.parse_args(argv)
    actors = args.actors or ([1, 2] if args.quick else [1, 2, 4])
    per_actor = args.timesteps or (200 if args.quick else 4000)
    spec, source = load_agent_spec(args.config, CONFIG_FILE, IMPALA_CARTPOLE_SPEC, "IMPALA_CARTPOLE_SPEC")
    result: Dict[str, Any] = {"benchmark": "impala", "config": source, "mode": args.mode, "quick": args.quick,
                              "actors": actors, "timesteps_per_actor": per_actor, "backends": {}}
    envs = (("CartPole-v1", PLAIN_ENV), ("SleepyCartPole", sleepy_env_spec(0.002)))
    for backend in select_backends(args.backend, "rlgraph benchmark impala (--backend)"):
        job = {"spec": spec, "backend": backend, "mode": args.mode, "ray_cpus": args.ray_cpus,
               "learning_steps": args.learning_steps if args.learning else None,
               "runs": [(f"{env_name}-{n}", env_spec, n, per_actor * n) for env_name, env_spec in envs for n in actors]}
        outcomes = {kind: run_contender(kind, job) for kind in ("single", "executor")}
        runs, rows = {}, []
        for name, _, n, _ in job["runs"]:
            runs[name] = {kind: outcomes[kind]["runs"][name] for kind in ("single", "executor")}
            single, executor = runs[name]["single"], runs[name]["executor"]
            rows.append([name.rsplit("-", 1)[0], n, _cell(single, "frames_per_s"), _cell(executor, "frames_per_s"),
                         "-" if failed(single) else f"{single['mean_policy_lag']:.1f}",
                         "-" if failed(executor) else f"{executor['mean_policy_lag']:.1f}"])
        measured: Dict[str, Any] = {"runs": runs}
        first, last = actors[0], actors[-1]
        for kind in ("single", "executor"):
            measured[f"scaling_{kind}"] = _scaling(runs[f"SleepyCartPole-{first}"][kind],
                                                   runs[f"SleepyCartPole-{last}"][kind])
        if args.learning:
            measured["learning"] = outcomes["executor"].get("learning")
        result["backends"][backend] = measured
        print(f"IMPALA, {backend}: env frames/s while learning ({args.mode} executor)")
        print(format_table(["env", "actors", "single-impala (threads)", "IMPALAExecutor", "lag (single)",
                            "lag (executor)"], rows))
        scaling = {kind: "-" if measured[f"scaling_{kind}"] is None else f"{measured[f'scaling_{kind}']:.2f}x"
                   for kind in ("single", "executor")}
        print(f"SleepyCartPole {last} / {first} actors: single-impala {scaling['single']}, "
              f"IMPALAExecutor {scaling['executor']} (target >= {SCALING_TARGET:.1f}x for 4 / 1)")
        if "learning" in measured:
            print(f"to mean return {TARGET_RETURN:g}: {measured['learning']}")
    if not args.no_rllib and args.mode == "ray":
        peer = {f"{env}-{n}": run_isolated(CONTENDERS["rllib"], {"spec": spec, "actors": n, "timesteps": per_actor * n,
                                                                 "sleepy": env == "SleepyCartPole", "learning": False})
                for env, _ in envs for n in actors}
        if args.learning:
            peer["learning"] = run_isolated(CONTENDERS["rllib"], {"spec": spec, "actors": 2, "sleepy": False,
                                                                  "timesteps": args.learning_steps, "learning": True})
        result["rllib"] = peer
        print_peer(result, peer, actors)
    path = write_results(result, args.out)
    if path:
        print(f"wrote {path}")
    return result
