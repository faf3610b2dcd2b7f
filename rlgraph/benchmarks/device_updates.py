"""Gradient steps per second on one device: rlgraph against Stable-Baselines3, compiled and not.

Two update steps, each library with the same network, batch and optimizer on the same device
(`--device`, both libraries), from a replay memory filled with the same random transitions:

- `dqn-cnn`: DQN with the Nature CNN (three conv layers, a 512-unit dense layer, a Q-value per
  action: SB3's `CnnPolicy`) on 84×84×4 uint8 frames, 6 actions, batch 32, Adam (lr 1e-4), Huber
  loss, no double Q, no dueling (SB3's DQN); each library keeps frames in its own layout (rlgraph
  height-width-channel, SB3 channel-first);
- `sac`: SAC with [256, 256] networks on Pendulum's shapes, batch 256 (`sac-sb3`'s hyperparameters).

One gradient step is, for SB3, `model.train(gradient_steps=1, batch_size)` (it samples its replay
buffer), and for rlgraph `agent.update()` (it samples its in-graph memory). The target networks are
not synchronized while timing (DQN's every 10^9 steps in both; SAC's soft update is part of the step
in both). Two more rlgraph contenders update from one fixed batch (`agent.update(batch)`), without
and with `execution_spec.compile` for the update method, which measures what compiling buys the
update itself on both backends (PyTorch also compiles DQN's `update_from_memory`, sampling included;
TF keeps it uncompiled, its sampling being random: see docs/backends.md). Contenders alternate in blocks
(`interleaved_medians`); the table gives steps/s and the ratio to SB3. Run:

    rlgraph benchmark device [--device cpu|cuda] [--algos dqn-cnn sac] [--backends pytorch tf] [--calls N] [--quick]

SB3 runs on PyTorch; `--backends tf` adds rlgraph on TF (with XLA for the compiled contender).
"""
from __future__ import annotations

import copy
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from rlgraph.benchmarks import sb3_peer
from rlgraph.benchmarks.common import format_table, interleaved_medians, make_parser, select_backends, single_thread, \
    write_results
from rlgraph.benchmarks.sac_vs_sb3 import HYPERPARAMETERS as SAC_HP
from rlgraph.benchmarks.sac_vs_sb3 import make_sb3_model as make_sb3_sac
from rlgraph.benchmarks.sac_vs_sb3 import rlgraph_config as sac_config

NAME = "device"
ALGOS = ("dqn-cnn", "sac")
FRAME = (84, 84, 4)
NUM_ACTIONS = 6
DQN_BATCH, DQN_LR = 32, 1e-4
NATURE_CNN = [{"type": "convert-type", "to_dtype": "float32"}, {"type": "divide", "divisor": 255.0},
              {"type": "conv2d", "filters": 32, "kernel_size": 8, "strides": 4, "activation": "relu"},
              {"type": "conv2d", "filters": 64, "kernel_size": 4, "strides": 2, "activation": "relu"},
              {"type": "conv2d", "filters": 64, "kernel_size": 3, "strides": 1, "activation": "relu"},
              {"type": "reshape", "flatten": True}, {"type": "dense", "units": 512, "activation": "relu"}]
NEVER = 10 ** 9  # Target synchronization interval while timing.


def random_transitions(algo: str, count: int, seed: int = 0) -> Dict[str, np.ndarray]:
    """`count` random transitions with the algorithm's shapes (frames height-width-channel)."""
    rng = np.random.RandomState(seed)
    if algo == "dqn-cnn":
        return dict(states=rng.randint(0, 256, (count,) + FRAME).astype(np.uint8),
                    actions=rng.randint(0, NUM_ACTIONS, count).astype(np.int64), rewards=rng.randn(count).astype(np.float32),
                    terminals=rng.rand(count) < 0.05, next_states=rng.randint(0, 256, (count,) + FRAME).astype(np.uint8))
    return dict(states=rng.uniform(-1, 1, (count, 3)).astype(np.float32),
                actions=rng.uniform(-2, 2, (count, 1)).astype(np.float32), rewards=rng.randn(count).astype(np.float32),
                terminals=np.zeros(count, bool), next_states=rng.uniform(-1, 1, (count, 3)).astype(np.float32))


def rlgraph_agent(algo: str, backend: str, device: str, capacity: int, compile_spec: Any = False):
    """rlgraph's agent of `algo` on `device`, one backend thread."""
    from rlgraph.agents import Agent
    from rlgraph.spaces import FloatBox, IntBox
    execution = {"seed": 1, "device": device, "compile": compile_spec, "torch_num_threads": 1, "tf_num_threads": 1,
                 "max_timesteps": NEVER}
    if algo == "dqn-cnn":
        spec = {"type": "dqn", "network_spec": copy.deepcopy(NATURE_CNN), "double_q": False, "dueling_q": False,
                "discount": 0.99, "huber_loss": True, "optimizer_spec": {"type": "adam", "learning_rate": DQN_LR},
                "memory_spec": {"type": "replay-memory", "capacity": capacity},
                "update_spec": {"batch_size": DQN_BATCH, "sync_interval": NEVER}, "execution_spec": execution}
        return Agent.from_spec(spec, state_space=IntBox(256, shape=FRAME, dtype="uint8"),
                               action_space=IntBox(NUM_ACTIONS), backend=backend)
    spec = sac_config(SAC_HP, backend, steps=capacity, seed=1, threads=1)
    for key in ("environment_spec", "training_spec", "backend"):
        spec.pop(key)
    spec["execution_spec"].update(execution)
    return Agent.from_spec(spec, state_space=FloatBox(shape=(3,)), action_space=FloatBox(low=-2.0, high=2.0, shape=(1,)),
                           backend=backend)


def fill_rlgraph(agent, data: Dict[str, np.ndarray], chunk: int = 500) -> None:
    for start in range(0, len(data["rewards"]), chunk):
        part = {k: v[start:start + chunk] for k, v in data.items()}
        agent.observe(part["states"], part["actions"], None, part["rewards"], part["next_states"], part["terminals"],
                      truncated=True)


def sb3_model(algo: str, device: str, capacity: int) -> Any:
    """SB3's model of `algo` on `device` with its replay buffer sized `capacity`, logging nowhere."""
    sb3 = sb3_peer.require_sb3(f"benchmark {NAME}")
    import gymnasium as gym
    from stable_baselines3.common.logger import configure
    if algo == "dqn-cnn":
        class Frames(gym.Env):  # Only its spaces are used.
            observation_space = gym.spaces.Box(0, 255, FRAME, np.uint8)
            action_space = gym.spaces.Discrete(NUM_ACTIONS)
        model = sb3.DQN("CnnPolicy", Frames(), buffer_size=capacity, learning_starts=0, batch_size=DQN_BATCH,
                        learning_rate=DQN_LR, gamma=0.99, target_update_interval=NEVER, seed=1, device=device,
                        optimize_memory_usage=False, verbose=0)
    else:
        hp = dict(SAC_HP, buffer_size=capacity)
        # (Made on the device: moving the policy afterwards would leave the entropy coefficient and
        # the replay buffer's samples on the CPU.)
        model = make_sb3_sac(hp, seed=1, device=device)
    model.set_logger(configure(None, []))
    return model


def fill_sb3(model, algo: str, data: Dict[str, np.ndarray]) -> None:
    transpose = (lambda x: np.transpose(x, (2, 0, 1))) if algo == "dqn-cnn" else (lambda x: x)
    for i in range(len(data["rewards"])):
        model.replay_buffer.add(transpose(data["states"][i])[None], transpose(data["next_states"][i])[None],
                                np.array([data["actions"][i]]), np.array([data["rewards"][i]]),
                                np.array([data["terminals"][i]]), [{}])


def measure(algo: str, backends: List[str], device: str, calls: int, rounds: int, capacity: int) -> Dict[str, Any]:
    data = random_transitions(algo, capacity)
    batch_size = DQN_BATCH if algo == "dqn-cnn" else SAC_HP["batch_size"]
    batch = {k: v[:batch_size] for k, v in data.items()}
    model = sb3_model(algo, device, capacity)
    fill_sb3(model, algo, data)
    contenders: Dict[str, Callable[[], Any]] = {"sb3": lambda: model.train(gradient_steps=1, batch_size=batch_size)}
    agents, first_losses = [], {}
    for backend in backends:
        single_thread(backend)
        own = rlgraph_agent(algo, backend, device, capacity)
        fill_rlgraph(own, data)
        plain = rlgraph_agent(algo, backend, device, capacity)
        fast = rlgraph_agent(algo, backend, device, capacity, compile_spec={"api_methods": _update_api(plain)})
        fast.graph_executor.set_weights(plain.graph_executor.get_weights())
        first_losses[backend] = [_first_losses(agent, batch) for agent in (plain, fast)]
        contenders[f"rlgraph-{backend}"] = own.update
        contenders[f"rlgraph-{backend} batch"] = lambda agent=plain: agent.update(batch)
        contenders[f"rlgraph-{backend} batch, compiled"] = lambda agent=fast: agent.update(batch)
        agents += [own, plain, fast]
    medians = interleaved_medians(contenders, calls, rounds=rounds, warmup=min(10, calls))
    result = {"steps_per_s": {k: 1.0 / v for k, v in medians.items()},
              "ratio_to_sb3": {k: medians["sb3"] / v for k, v in medians.items()},
              "first_losses": first_losses, "compile_status": {}}
    for agent in agents[2::3]:
        result["compile_status"][agent.backend] = {k: dict(v) for k, v in agent.graph_executor.compile_status.items()}
    for agent in agents:
        agent.terminate()
    return result


def _update_api(agent) -> List[str]:
    """The root API methods that `agent.update(batch)` calls (SAC's syncing variant too)."""
    return sorted(n for n in agent.graph_executor._converters if n.startswith("update_from_external_batch"))


def _first_losses(agent, batch: Dict[str, np.ndarray]) -> List[float]:
    """The losses of two updates from the batch, the backend's generator seeded first (the agents of
    one process share it)."""
    agent.graph_executor.seed(1)
    return [_loss(agent.update(batch)) for _ in range(2)]


def _loss(output: Any) -> float:
    return float(np.asarray(output[0] if isinstance(output, (tuple, list)) else output).mean())


def main(argv: Optional[List[str]] = None) -> dict:
    parser = make_parser(NAME, __doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu", help='where both libraries run: "cpu" (default), "cuda", "cuda:N"')
    parser.add_argument("--algos", nargs="+", choices=ALGOS, default=list(ALGOS), help="the update steps to time")
    parser.add_argument("--backends", nargs="+", default=["pytorch"], help="rlgraph's backends (default: pytorch)")
    parser.add_argument("--calls", type=int, default=None, help="timed gradient steps per contender (default 300)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating blocks (default 3)")
    args = parser.parse_args(argv)
    sb3_peer.require_sb3(f"benchmark {NAME}")
    backends = select_backends(args.backends, f"rlgraph benchmark {NAME} (--backends)")
    calls = args.calls or (4 if args.quick else 300)
    capacity = 300 if args.quick else 10_000
    result = {"device": args.device, "calls": calls, "rounds": args.rounds, "capacity": capacity, "quick": args.quick,
              "algos": {}}
    rows: List[Tuple[Any, ...]] = []
    for algo in args.algos:
        m = result["algos"][algo] = measure(algo, backends, args.device, calls, args.rounds, capacity)
        for name, rate in m["steps_per_s"].items():
            rows.append((algo, name, rate, f"{m['ratio_to_sb3'][name]:.2f}x"))
    print(f"gradient steps/s on {args.device}, medians over {calls} steps per contender ({args.rounds} alternating "
          f"blocks), replay of {capacity:,} random transitions")
    print(format_table(["update", "contender", "steps/s", "vs SB3"], rows))
    path = write_results(result, args.out)
    if path:
        print(f"wrote {path}")
    return result
