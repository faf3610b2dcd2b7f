"""Parallel environments: env frames/s of `AsyncVectorEnv` and `EnvPoolVectorEnv` against `SequentialVectorEnv` on Pong.

Both vector envs hold `--envs` copies (default 4) of the environment of configs/dqn_pong.json
(`AtariEnv` Pong: frameskip 4, 84x84 grayscale frames, 4 stacked, no-op starts, episodic life),
seeded alike, and, where envpool is installed (the envpool extra) and the env is an Atari game,
`EnvPoolVectorEnv` with the same settings (the games in EnvPool's C++ thread pool, one thread per
env up to the cores). Two measurements, side by side in one run:

1. **Random actions, no agent**: `step` with a uniformly random action per env, finished envs
   reset with `reset(i)` as the worker does. This is the speed-up the subprocesses can give.
   The same on `SleepyCartPole` (CartPole-v1 whose step sleeps `--step-sleep`, 2 ms; see the
   `apex` benchmark), a latency-bound env: its subprocesses mostly sleep, so they overlap on
   any number of cores and show the cost of the pipes apart from the cores.
2. **DQN acting** (`--agent`): a `SingleThreadedWorker` with the DQN agent of configs/dqn_pong.json
   (one backend thread, exploring, not learning; its replay memory shrunk to 1,000 records, which
   stay empty) steps each vector env, so that the agent's
   `get_action` runs between the env steps, as in a training run without its updates.

A frame here is one env step (the agent's frame: 4 emulator frames with frameskip 4), as in the
worker's `env_frames_per_second`. Subprocess start-up, env construction and the agent's build
are not timed; each contender runs an untimed warm-up first. The contenders alternate in
`--rounds` blocks of `--steps` env steps over all envs; the table shows medians. With N envs on
C cores the async envs can at best be min(N, C) times faster, less the cost of sending states
through pipes; on a 2-core machine expect at most ~2x. Run:

    rlgraph benchmark async-envs [--envs 4] [--steps 2000] [--rounds 3] [--agent] [--backend pytorch]
                                 [--step-sleep 0.002] [--start-method spawn] [--quick]
"""
from __future__ import annotations

import copy
import os
import statistics
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from rlgraph.benchmarks.common import format_table, make_parser, select_backends, single_thread, write_results
from rlgraph.utils.rlgraph_errors import RLGraphError

SEED = 1
CONFIG_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           "configs", "dqn_pong.json")
# configs/dqn_pong.json's environment_spec (a test keeps the two equal), for an installation
# without the checkout's configs/.
PONG_ENV_SPEC = {"type": "atari", "game": "Pong", "protocol": "dqn-nature", "frameskip": 4, "frame_stack": 4,
                 "max_num_noops": 30, "episodic_life": True, "fire_reset": True}


def load_config(path: Optional[str] = None) -> tuple:
    """(config dict or None, environment spec, source): from `path`, else configs/dqn_pong.json,
    else `PONG_ENV_SPEC` without an agent."""
    path = path or (CONFIG_FILE if os.path.isfile(CONFIG_FILE) else None)
    if path is None:
        return None, copy.deepcopy(PONG_ENV_SPEC), "built-in PONG_ENV_SPEC"
    from rlgraph.utils.specifiable import load_spec_file
    config = load_spec_file(path)
    return config, config["environment_spec"], path


def make_envs(num_environments: int, env_spec: dict, start_method: str) -> Dict[str, Any]:
    """The contenders, seeded alike: {"sequential": SequentialVectorEnv, "async": AsyncVectorEnv} and,
    for an Atari spec with envpool installed, "envpool": EnvPoolVectorEnv."""
    import importlib.util
    from rlgraph.environments import AsyncVectorEnv, SequentialVectorEnv
    envs = {"sequential": SequentialVectorEnv(num_environments, env_spec, seed=SEED),
            "async": AsyncVectorEnv(num_environments, env_spec, seed=SEED, start_method=start_method)}
    if isinstance(env_spec, dict) and env_spec.get("type") == "atari" and importlib.util.find_spec("envpool"):
        from rlgraph.environments import EnvPoolVectorEnv
        envs["envpool"] = EnvPoolVectorEnv(num_environments, env_spec, seed=SEED)
    return envs


def random_stepper(envs: Any, seed: int) -> Callable[[int], float]:
    """A function that steps `envs` for at least `num_steps` env steps with random actions
    (resetting finished envs) and returns the seconds it took."""
    rng = np.random.default_rng(seed)
    num_actions = int(envs.action_space.num_categories)
    envs.reset_all()

    def run(num_steps: int) -> float:
        start = time.perf_counter()
        for _ in range(-(-num_steps // envs.num_environments)):
            _, _, terminals, _ = envs.step(rng.integers(0, num_actions, size=envs.num_environments))
            for i in np.flatnonzero(terminals):
                envs.reset(i)
        return time.perf_counter() - start
    return run


def agent_stepper(agent: Any, envs: Any) -> Callable[[int], float]:
    """A function that lets `agent` act (exploring, not learning) on `envs` in a worker for
    `num_steps` env steps and returns the seconds it took."""
    from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
    worker = SingleThreadedWorker(agent, envs, seed=SEED)
    started = []

    def run(num_steps: int) -> float:
        start = time.perf_counter()
        worker.execute_timesteps(num_steps, learn=False, reset=not started)
        started.append(True)
        return time.perf_counter() - start
    return run


def measure(steppers: Dict[str, Callable[[int], float]], num_steps: int, rounds: int, warmup: int) -> Dict:
    """Env frames/s of each stepper: the median over `rounds` alternating blocks of `num_steps`."""
    for run in steppers.values():
        run(warmup)
    rates: Dict[str, List[float]] = {name: [] for name in steppers}
    for _ in range(rounds):
        for name, run in steppers.items():
            rates[name].append(num_steps / run(num_steps))
    return {name: {"frames_per_s": statistics.median(values), "rounds": values} for name, values in rates.items()}


def make_agent(config: dict, backend: str, envs: Any) -> Any:
    """The agent of `config` for the spaces of `envs`, seeded, with one backend thread."""
    from rlgraph.agents import Agent
    from rlgraph.agents.agent import RUN_SECTIONS
    spec = {k: v for k, v in config.items() if k not in RUN_SECTIONS}
    spec["execution_spec"] = dict(spec.get("execution_spec") or {}, seed=SEED, torch_num_threads=1)
    # The agent only acts: a small memory (it stays empty) instead of 50,000 stacked frames.
    spec["memory_spec"] = dict(spec.get("memory_spec") or {}, capacity=1000)
    return Agent.from_spec(spec, state_space=envs.state_space, action_space=envs.action_space, backend=backend)


def main(argv: Optional[List[str]] = None) -> Dict:
    """Runs the benchmark; returns the results (also written as JSON)."""
    from rlgraph.benchmarks.apex import STEP_SLEEP, sleepy_env_spec
    parser = make_parser("async-envs", __doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=4, help="environments per vector env (default %(default)s)")
    parser.add_argument("--steps", type=int, help="env steps (over all envs) per timed block (default 2000, "
                                                  "--quick 40)")
    parser.add_argument("--rounds", type=int, help="alternating timed blocks per contender (default 3, --quick 1)")
    parser.add_argument("--agent", action="store_true", help="also measure with the DQN agent acting")
    parser.add_argument("--backend", help="the agent's backend (default: pytorch if installed, else tf)")
    parser.add_argument("--config", help="a config whose environment_spec (and agent) to use "
                                         "(default: configs/dqn_pong.json)")
    parser.add_argument("--step-sleep", type=float, default=STEP_SLEEP,
                        help="seconds each SleepyCartPole step sleeps (default %(default)s; 0: no such run)")
    parser.add_argument("--start-method", default="spawn", choices=["spawn", "forkserver"],
                        help="how AsyncVectorEnv starts its subprocesses (default %(default)s)")
    args = parser.parse_args(argv)
    num_steps = args.steps or (40 if args.quick else 2000)
    rounds = args.rounds or (1 if args.quick else 3)
    warmup = max(args.envs, num_steps // 10)
    config, env_spec, source = load_config(args.config)

    label = str(env_spec.get("game") or env_spec.get("gym_env") or env_spec.get("type")) \
        if isinstance(env_spec, dict) else str(env_spec)
    envs = make_envs(args.envs, env_spec, args.start_method)
    runs, agents = {}, []
    try:
        runs[f"{label}, random actions"] = measure({name: random_stepper(e, SEED) for name, e in envs.items()},
                                               num_steps, rounds, warmup)
        if args.step_sleep > 0:
            sleepy = make_envs(args.envs, sleepy_env_spec(args.step_sleep), args.start_method)
            try:
                runs[f"CartPole + {args.step_sleep * 1e3:g} ms sleep, random actions"] = measure(
                    {name: random_stepper(e, SEED) for name, e in sleepy.items()}, num_steps, rounds, warmup)
            finally:
                for e in sleepy.values():
                    e.terminate()
        if args.agent:
            if config is None:
                raise RLGraphError("no agent to act", where="rlgraph benchmark async-envs (--agent)",
                                   hint="give --config with a DQN config (configs/dqn_pong.json in a checkout).")
            backends = select_backends([args.backend] if args.backend else None,
                                       "rlgraph benchmark async-envs (--backend)")
            backend = "pytorch" if "pytorch" in backends else backends[0]
            single_thread(backend)
            agents = [make_agent(config, backend, envs["sequential"]) for _ in envs]
            steppers = {name: agent_stepper(agent, e) for agent, (name, e) in zip(agents, envs.items())}
            runs[f"{label}, {str(config.get('type', 'agent')).upper()} acting ({backend})"] = measure(steppers, num_steps, rounds, warmup)
    finally:
        for e in envs.values():
            e.terminate()
        for agent in agents:
            agent.terminate()

    rows = []
    for run, figures in runs.items():
        seq, asy = figures["sequential"]["frames_per_s"], figures["async"]["frames_per_s"]
        figures["speed_up"] = asy / seq
        pool = figures.get("envpool", {}).get("frames_per_s")
        if pool is not None:
            figures["envpool_speed_up"] = pool / seq
        rows.append([run, seq, asy, f"{asy / seq:.2f}x", "-" if pool is None else pool,
                     "-" if pool is None else f"{pool / seq:.2f}x"])
    print(f"{args.envs} envs each, {label} from {source}, {num_steps} env steps per block, {rounds} rounds, "
          f"{os.cpu_count()} CPUs, start method {args.start_method} (env frames/s, medians)")
    print(format_table(["run", "SequentialVectorEnv", "AsyncVectorEnv", "speed-up", "EnvPoolVectorEnv", "speed-up"],
                       rows))
    result = {"benchmark": "async-envs", "env_spec": env_spec, "config": source, "num_environments": args.envs,
              "steps_per_round": num_steps, "rounds": rounds, "start_method": args.start_method, "runs": runs}
    path = write_results(result, args.out)
    if path:
        print(f"wrote {path}")
    return result
