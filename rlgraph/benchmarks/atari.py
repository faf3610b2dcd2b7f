"""Atari throughput: env steps/s of PPO and DQN on Pong, end to end (acting and learning), rlgraph
against Stable-Baselines3 with the same hyperparameters and the same number of envs, in one run.

Both libraries' networks run on `--device` (default the CPU; "cuda" on a GPU machine).

PPO contenders (each in a process of its own, one after another, `run_isolated`):

- `rlgraph-sync`: the PPO of configs/ppo_pong.json (8 envs x 128 steps, 4 epochs of 256-row
  minibatches, the Nature CNN; PyTorch) with `training_spec.vectorization` "sync": the worker
  steps its 8 `AtariEnv`s in turn in its own process (`SequentialVectorEnv`);
- `rlgraph-async`: the same with "async": the envs in subprocesses (`AsyncVectorEnv`);
- `rlgraph-envpool`: the same with "envpool": the games in EnvPool's C++ thread pool
  (`EnvPoolVectorEnv`, the envpool extra);
- `sb3-dummy`: SB3's `PPO("CnnPolicy")` with the same hyperparameters on `make_atari_env`
  ("PongNoFrameskip-v4" with SB3's `AtariWrapper`: no-op starts, frame skip 4 with max-pooling,
  episodic life, FIRE reset, 84x84 grayscale, clipped rewards) and `VecFrameStack(4)`, its envs in
  a `DummyVecEnv` (in turn, in its process);
- `sb3-subproc`: the same in a `SubprocVecEnv` (subprocesses).

DQN contenders (`--algos dqn`), one env each, as SB3's DQN runs: the DQN of configs/dqn_pong.json
made the DQN SB3 has (`DQN_AS_SB3`: no dueling, double Q or n-step, a uniform replay of
`DQN_BUFFER` records, Huber loss, Adam 1e-4, a batch of 32 every 4 steps, target sync every 1,000,
learning from step `DQN_LEARNING_STARTS` so that a short run is mostly learning), `dqn-rlgraph`,
against SB3's `DQN("CnnPolicy")` with the same settings, `dqn-sb3`.

Each contender builds its agent and envs untimed, then trains `--steps` env steps (over all envs;
one env step = 4 emulator frames); the table shows env steps/s, the time in updates, and each
contender's ratio against `sb3-dummy`. The backend runs `--threads` intra-op threads (default 1, as
SB3's run). On a 2-core machine the subprocess envs can at best overlap stepping with the learner;
the target of issue 37 (the fastest rlgraph >= 2x SB3's frames/s) is for a many-core machine. Run:

    rlgraph benchmark atari [--algos ppo dqn] [--steps 10240] [--dqn-steps 5000] [--threads 1]
                            [--contenders rlgraph-sync sb3-dummy dqn-rlgraph dqn-sb3 ...] [--quick]
"""
from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Optional

from rlgraph.benchmarks.common import failed, format_table, make_parser, run_isolated, write_results
from rlgraph.utils.devices import check_device
from rlgraph.utils.rlgraph_errors import RLGraphError

SEED = 1
CONFIG_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                           "configs", "ppo_pong.json")
SB3_ENV_ID = "PongNoFrameskip-v4"
DQN_CONFIG_FILE = os.path.join(os.path.dirname(CONFIG_FILE), "dqn_pong.json")
PPO_CONTENDERS = ("rlgraph-sync", "rlgraph-async", "rlgraph-envpool", "sb3-dummy", "sb3-subproc")
DQN_CONTENDERS = ("dqn-rlgraph", "dqn-sb3")
CONTENDERS = PPO_CONTENDERS + DQN_CONTENDERS
BASELINES = {"ppo": "sb3-dummy", "dqn": "dqn-sb3"}
DQN_BUFFER, DQN_LEARNING_STARTS = 10_000, 1_000
# configs/dqn_pong.json made the DQN of SB3 (whose DQN has no dueling, double Q, n-step or prioritized
# replay), learning early: the settings both libraries get.
DQN_AS_SB3 = {"dueling_q": False, "double_q": False, "n_step": 1, "huber_loss": True,
              "memory_spec": {"type": "replay-memory", "capacity": DQN_BUFFER},
              "update_spec": {"update_interval": 4, "steps_before_update": DQN_LEARNING_STARTS, "batch_size": 32,
                              "sync_interval": 1000, "update_steps": 1},
              "optimizer_spec": {"type": "adam", "learning_rate": 0.0001}}


def ppo_hyperparameters(config: dict) -> Dict[str, Any]:
    """The SB3 arguments that equal `config`'s PPO (configs/ppo_pong.json): envs, rollout, minibatch,
    epochs, discount, GAE, clip ranges, loss weights, learning rate (annealed linearly to 0 in
    both), Adam's epsilon and the gradient norm."""
    update, training, optimizer = config["update_spec"], config["training_spec"], config["optimizer_spec"]
    n_envs = training["num_environments"]
    learning_rate = optimizer["learning_rate"]
    if not (isinstance(learning_rate, list) and learning_rate[0] == "linear" and learning_rate[2] == 0.0):
        raise RLGraphError("the Atari benchmark expects a learning rate annealed linearly to 0",
                           where="benchmark atari", received=repr(learning_rate))
    return {"n_envs": n_envs, "n_steps": update["batch_size"] // n_envs, "batch_size": update["sample_size"],
            "n_epochs": update["num_epochs"], "gamma": config["discount"], "gae_lambda": config["gae_lambda"],
            "clip_range": config["clip_ratio"], "clip_range_vf": config["value_function_clipping"],
            "ent_coef": config["weight_entropy"], "vf_coef": config["weight_vf"],
            "learning_rate": learning_rate[1], "adam_epsilon": optimizer["epsilon"],
            "max_grad_norm": optimizer["clip_grad_norm"]}


def _row(name: str, steps: int, wall: float, update_s: float, updates: int) -> dict:
    return {"contender": name, "env_steps": steps, "wall_s": wall, "steps_per_s": steps / wall,
            "update_s": update_s, "num_updates": updates}


def run_rlgraph(config_path: str, vectorization: str, steps: int, threads: int, device: str = "cpu") -> dict:
    """Builds the agent and its envs (untimed), then times the worker's `execute_timesteps(steps + n_envs)`:
    each env's last transition of a rollout is observed after the next step (see `PPOAgent`), so
    the update of the k-th rollout comes n_envs steps after SB3's; both then do the same updates."""
    from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
    from rlgraph.execution.training import make_agent_and_env, resolve_config, training_envs
    config = resolve_config(config_path, backend="pytorch", num_timesteps=steps, seed=SEED, overrides=[
        f'training_spec.vectorization="{vectorization}"', f"execution_spec.torch_num_threads={threads}",
        f'execution_spec.device="{device}"'])  # (SB3's PPO runs on the same device.)
    spec = config["training_spec"]
    agent, env_spec = make_agent_and_env(config)
    worker = SingleThreadedWorker(agent, training_envs(env_spec, spec, SEED),
                                  num_environments=spec["num_environments"], seed=SEED)
    try:
        wall = time.perf_counter()
        stats = worker.execute_timesteps(steps + spec["num_environments"])
        wall = time.perf_counter() - wall
    finally:
        worker.terminate()
    row = _row(f"rlgraph-{vectorization}", int(stats["timesteps_executed"]), wall, stats["update_time"],
               int(agent.num_gradient_steps))
    agent.terminate()
    return row


def make_sb3_pong(**kwargs: Any) -> Any:
    """SB3's Atari env before its wrappers (a module-level function: `SubprocVecEnv`'s processes make
    it too, and they must register ALE's ids first)."""
    import ale_py
    import gymnasium as gym
    gym.register_envs(ale_py)
    return gym.make(SB3_ENV_ID, **kwargs)


def run_sb3(config_path: str, vec_env: str, steps: int, threads: int, device: str = "cpu") -> dict:
    """SB3's PPO with `config`'s hyperparameters (`ppo_hyperparameters`) on its own Atari envs, built
    untimed; times `model.learn(steps)` (the time in updates is that of `model.train()`)."""
    from rlgraph.benchmarks.sb3_peer import require_sb3, timed_learn
    from rlgraph.utils.specifiable import load_spec_file
    sb3 = require_sb3("atari")
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecFrameStack
    hp = ppo_hyperparameters(load_spec_file(config_path))
    cls = {"dummy": DummyVecEnv, "subproc": SubprocVecEnv}[vec_env]
    env = VecFrameStack(make_atari_env(make_sb3_pong, n_envs=hp["n_envs"], seed=SEED, vec_env_cls=cls), n_stack=4)

    def linear(start: float):
        return lambda remaining: remaining * start  # SB3's remaining progress runs from 1 to 0.

    model = sb3.PPO("CnnPolicy", env, n_steps=hp["n_steps"], batch_size=hp["batch_size"], n_epochs=hp["n_epochs"],
                    gamma=hp["gamma"], gae_lambda=hp["gae_lambda"], clip_range=hp["clip_range"],
                    clip_range_vf=hp["clip_range_vf"], ent_coef=hp["ent_coef"], vf_coef=hp["vf_coef"],
                    learning_rate=linear(hp["learning_rate"]), max_grad_norm=hp["max_grad_norm"],
                    policy_kwargs={"optimizer_kwargs": {"eps": hp["adam_epsilon"]}}, seed=SEED, device=device,
                    verbose=0)
    try:
        wall, _, update_s = timed_learn(model, steps, threads, False)
    finally:
        env.close()
    per_epoch = -(-hp["n_envs"] * hp["n_steps"] // hp["batch_size"])
    return _row(f"sb3-{vec_env}", int(model.num_timesteps), wall, update_s, int(model._n_updates) * per_epoch)


def run_dqn_rlgraph(config_path: str, steps: int, threads: int, device: str = "cpu") -> dict:
    """rlgraph's DQN of `config_path` with `DQN_AS_SB3` on one env: built untimed, then
    `execute_timesteps(steps)` timed."""
    from rlgraph.execution.single_threaded_worker import SingleThreadedWorker
    from rlgraph.execution.training import make_agent_and_env, resolve_config
    from rlgraph.utils.specifiable import load_spec_file
    config = dict(load_spec_file(config_path), **DQN_AS_SB3)
    config["policy_spec"] = None
    config["execution_spec"] = dict(config.get("execution_spec", {}), torch_num_threads=threads, device=device)
    config["training_spec"] = dict(config["training_spec"], num_environments=1)
    config = resolve_config(config, backend="pytorch", num_timesteps=steps, seed=SEED)
    agent, env_spec = make_agent_and_env(config)
    worker = SingleThreadedWorker(agent, env_spec, num_environments=1, seed=SEED)
    try:
        wall = time.perf_counter()
        stats = worker.execute_timesteps(steps)
        wall = time.perf_counter() - wall
    finally:
        worker.terminate()
    row = _row("dqn-rlgraph", int(stats["timesteps_executed"]), wall, stats["update_time"], int(agent.num_updates))
    agent.terminate()
    return row


def run_dqn_sb3(config_path: str, steps: int, threads: int, device: str = "cpu") -> dict:
    """SB3's DQN with `DQN_AS_SB3`'s settings (its exploration: `config_path`'s linear decay) on one
    `make_atari_env` env with 4 stacked frames; built untimed, `model.learn(steps)` timed."""
    from rlgraph.benchmarks.sb3_peer import require_sb3, timed_learn
    from rlgraph.utils.specifiable import load_spec_file
    sb3 = require_sb3("atari")
    from stable_baselines3.common.env_util import make_atari_env
    from stable_baselines3.common.vec_env import VecFrameStack
    config = load_spec_file(config_path)
    decay = config["exploration_spec"]["epsilon_spec"]["decay_spec"]
    update = DQN_AS_SB3["update_spec"]
    env = VecFrameStack(make_atari_env(make_sb3_pong, n_envs=1, seed=SEED), n_stack=4)
    model = sb3.DQN("CnnPolicy", env, learning_rate=DQN_AS_SB3["optimizer_spec"]["learning_rate"],
                    buffer_size=DQN_BUFFER, learning_starts=update["steps_before_update"],
                    batch_size=update["batch_size"], gamma=config["discount"], train_freq=update["update_interval"],
                    gradient_steps=update["update_steps"], target_update_interval=update["sync_interval"],
                    exploration_fraction=decay["stop_percentage"], exploration_initial_eps=decay["from"],
                    exploration_final_eps=decay["to"], max_grad_norm=config["optimizer_spec"]["clip_grad_norm"],
                    optimize_memory_usage=False, seed=SEED, device=device, verbose=0)
    try:
        wall, _, update_s = timed_learn(model, steps, threads, False)
    finally:
        env.close()
    return _row("dqn-sb3", int(model.num_timesteps), wall, update_s, int(model._n_updates))


def main(argv: Optional[List[str]] = None) -> dict:
    parser = make_parser("atari", __doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=None,
                        help="PPO env steps per contender (default 10240; quick 2048)")
    parser.add_argument("--dqn-steps", type=int, default=None,
                        help=f"DQN env steps per contender (default 5000; quick 1500; learning from step "
                             f"{DQN_LEARNING_STARTS})")
    parser.add_argument("--threads", type=int, default=1, help="the backend's intra-op threads (default 1)")
    parser.add_argument("--device", default="cpu",
                        help='where both libraries\' networks run: "cpu" (default), "cuda", "cuda:N"')
    parser.add_argument("--contenders", nargs="+", choices=CONTENDERS, default=list(CONTENDERS))
    parser.add_argument("--config", default=CONFIG_FILE, help="the PPO config (default: configs/ppo_pong.json)")
    parser.add_argument("--dqn-config", default=DQN_CONFIG_FILE, help="the DQN config (default: configs/dqn_pong.json)")
    args = parser.parse_args(argv)
    device = check_device(args.device, "benchmark atari", key="--device")
    if device == "auto" or device.startswith("cpu:"):
        raise RLGraphError("--device must name the CPU or one GPU, the same for both libraries",
                           where="benchmark atari(--device)", expected='"cpu", "cuda" or "cuda:N"', received=args.device)
    steps = {"ppo": args.steps or (2048 if args.quick else 10240),
             "dqn": args.dqn_steps or (1500 if args.quick else 5000)}
    configs = {"ppo": args.config, "dqn": args.dqn_config}
    for algo in {_algo(name) for name in args.contenders}:
        if steps[algo] < 1:
            raise RLGraphError(f"the {algo.upper()} steps must be >= 1", where="benchmark atari", received=steps[algo])
        if not os.path.isfile(configs[algo]):
            raise RLGraphError(f"the {algo.upper()} config is missing", where="benchmark atari", received=configs[algo],
                               hint="run from a checkout (configs/) or pass --config / --dqn-config PATH.")
    rows = []
    result = {"benchmark": "atari", "steps": steps["ppo"], "dqn_steps": steps["dqn"], "threads": args.threads,
              "device": device, "cpus": os.cpu_count(), "config": args.config, "dqn_config": args.dqn_config,
              "runs": rows, "complete": False}
    for name in args.contenders:
        algo = _algo(name)
        if algo == "dqn":
            fn, call_args = (run_dqn_rlgraph if name == "dqn-rlgraph" else run_dqn_sb3), ()
        else:
            library, kind = name.split("-", 1)
            fn, call_args = (run_rlgraph if library == "rlgraph" else run_sb3), (kind,)
        outcome = run_isolated(fn, configs[algo], *call_args, steps[algo], args.threads, device)
        rows.append(dict(outcome, contender=name) if failed(outcome) else dict(outcome, algo=algo))
        print(f"{name}: " + (outcome["error"] if failed(outcome) else f"{outcome['steps_per_s']:.1f} env steps/s"),
              flush=True)
        write_results(result, args.out)  # (After each contender: a run cut short keeps what it measured.)
    by_name = {row["contender"]: row for row in rows if not failed(row)}
    for row in by_name.values():
        baseline = by_name.get(BASELINES[row["algo"]])
        row["ratio_vs_sb3"] = row["steps_per_s"] / baseline["steps_per_s"] if baseline else None
    table = [[row["contender"], f"{row['steps_per_s']:.1f}", f"{row['update_s']:.1f}", f"{row['wall_s']:.1f}",
              row["num_updates"], "-" if row["ratio_vs_sb3"] is None else f"{row['ratio_vs_sb3']:.2f}x"]
             if not failed(row) else [row["contender"], row["error"], "", "", "", ""] for row in rows]
    print(f"Pong: PPO {steps['ppo']} / DQN {steps['dqn']} env steps per contender, {args.threads} thread(s), "
          f"networks on {device}; "
          f"ratios against {BASELINES['ppo']} (PPO) and {BASELINES['dqn']} (DQN):")
    print(format_table(["contender", "env steps/s", "update s", "wall s", "gradient steps", "vs SB3"], table))
    result["complete"] = True
    write_results(result, args.out)
    return result


def _algo(contender: str) -> str:
    return "dqn" if contender in DQN_CONTENDERS else "ppo"
