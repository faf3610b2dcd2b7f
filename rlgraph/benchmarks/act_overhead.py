"""Acting overhead: `agent.get_action(one state)` against hand-written raw-backend acting.

The agent is the CartPole DQN of configs/dqn_cartpole.json ([256, 256] ReLU network, two
actions). The raw baselines get the agent's policy weights, so both compute the same actions
(checked on 200 random states):

- PyTorch: an `nn.Sequential` of `nn.Linear`/`nn.ReLU`, called under `torch.no_grad()` on
  `torch.as_tensor(state)`, then argmax, as numpy.
- TF: one `tf.function` (input signature [None, 4]) with the same matmuls and argmax, called
  the usual way. rlgraph calls its functions' concrete function (the signature is fixed), which
  skips TF's dispatch; the column "vs raw concrete fn" compares with the raw function called
  that way too.

Two modes: "greedy" (`use_exploration=False`; the raw function is forward + argmax: the
comparison the target 1.15x is for) and "explore" (epsilon-greedy at epsilon 0.52; the raw
function adds a hand-written epsilon-greedy draw in the same backend). Each contender is timed
in alternating blocks (see `interleaved_medians`); medians in microseconds. Run:

    python -m benchmarks.act_overhead [--backends tf pytorch] [--calls 20000] [--device cpu|cuda] [--compile] [--quick]

`--device` runs both contenders there (the agent through `execution_spec.device`, the raw
network moved there; one state in, the action back as numpy). `--compile` adds a contender for
greedy acting: a second agent with the same weights whose `get_greedy_actions` is compiled
(`execution_spec.compile`: torch.compile on PyTorch, XLA on TF).
"""
from __future__ import annotations

import copy
from typing import Any, Dict, List, Optional

import numpy as np

from rlgraph.benchmarks.common import (format_table, interleaved_medians, load_agent_spec, make_parser,
                                       select_backends, single_thread, write_results)

ACT_TARGET = 1.15
EXPLORE_TIME = 0.08  # time_percentage of the "explore" mode: epsilon = 1 - 0.96 * 0.08 / 0.16 = 0.52


def make_agent(backend: str, spec: Optional[dict] = None, device: str = "cpu", compile_spec: Any = False):
    """(agent, state_space, action_space): the CartPole DQN agent on `device` (execution_spec.device),
    one backend thread, compiled as `compile_spec` says (execution_spec.compile)."""
    from rlgraph.agents import Agent
    from rlgraph.environments import OpenAIGymEnv
    single_thread(backend)
    env = OpenAIGymEnv("CartPole-v1")
    spec = copy.deepcopy(spec or load_agent_spec()[0])
    execution = spec.setdefault("execution_spec", {})
    execution["torch_num_threads" if backend == "pytorch" else "tf_num_threads"] = 1
    execution["device"] = device
    execution["compile"] = compile_spec
    agent = Agent.from_spec(spec, state_space=env.state_space, action_space=env.action_space, backend=backend)
    env.terminate()
    return agent, agent.state_space, agent.action_space


def compiled_twin(agent, device: str, api_methods: List[str]):
    """A second `make_agent` agent with `agent`'s variables (target network and all) whose `api_methods`
    are compiled (execution_spec.compile)."""
    twin = make_agent(agent.backend, device=device, compile_spec={"api_methods": list(api_methods)})[0]
    twin.graph_executor.set_weights(agent.graph_executor.get_weights())
    return twin


def policy_layers(agent, policy: str = "policy") -> List[tuple]:
    """[(kernel [in, out], bias [out]), ...] of the agent's dense policy network, input to output."""
    root = agent.root_component
    net = getattr(root, policy)
    layers = [layer for layer in net.network.sub_components.values() if getattr(layer, "kernel", None) is not None]
    layers += [adapter.action_layer for adapter in net.action_adapters.values()]
    read = agent.graph_executor.read_variable_values
    return [(read(layer.kernel), read(layer.bias)) for layer in layers]


def raw_device(backend: str, device: str):
    """The backend's device (a `torch.device`; a TF device string) of device name `device`, refused as the
    agent's executor refuses it."""
    from rlgraph.utils.devices import check_device, tf_device, torch_device
    name = check_device(device, "rlgraph benchmark", key="--device")
    return torch_device(name, "rlgraph benchmark") if backend == "pytorch" else tf_device(name, "rlgraph benchmark")


def torch_network(layers: List[tuple], device=None):
    """An `nn.Sequential` MLP (ReLU between layers) holding `layers`' weights (on `device`, default the CPU)."""
    import torch
    modules = []
    for index, (kernel, bias) in enumerate(layers):
        linear = torch.nn.Linear(kernel.shape[0], kernel.shape[1])
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(kernel.T.copy()))
            linear.bias.copy_(torch.from_numpy(bias))
        modules.append(linear)
        if index < len(layers) - 1:
            modules.append(torch.nn.ReLU())
    return torch.nn.Sequential(*modules).to(device or "cpu")


def tf_network(layers: List[tuple]):
    """fn(x) -> Q-values with `layers`' weights as tf.Variables (call inside a tf.function)."""
    import tensorflow as tf
    variables = [(tf.Variable(kernel), tf.Variable(bias)) for kernel, bias in layers]

    def forward(x):
        for index, (kernel, bias) in enumerate(variables):
            x = tf.matmul(x, kernel) + bias
            if index < len(variables) - 1:
                x = tf.nn.relu(x)
        return x
    forward.variables = variables
    return forward


def raw_actors(backend: str, layers: List[tuple], num_actions: int, state_dim: int,
               device: str = "cpu") -> Dict[str, object]:
    """{"greedy": fn(state) -> action, "explore": fn(state, epsilon) -> action} on the raw backend, on `device`."""
    place = raw_device(backend, device)
    if backend == "pytorch":
        import torch
        net = torch_network(layers, place)

        def greedy(state):
            with torch.no_grad():
                return net(torch.as_tensor(state).unsqueeze(0).to(place)).argmax(-1).cpu().numpy()[0]

        def explore(state, epsilon):
            with torch.no_grad():
                action = net(torch.as_tensor(state).unsqueeze(0).to(place)).argmax(-1)
                random = torch.randint(0, num_actions, (1,), device=place)
                return torch.where(torch.rand(1, device=place) < epsilon, random, action).cpu().numpy()[0]
        return {"greedy": greedy, "explore": explore}
    import tensorflow as tf
    with tf.device(place):
        return _tf_actors(layers, num_actions, state_dim)


def _tf_actors(layers: List[tuple], num_actions: int, state_dim: int) -> Dict[str, object]:
    import tensorflow as tf
    forward = tf_network(layers)

    @tf.function(input_signature=[tf.TensorSpec([None, state_dim], tf.float32)])
    def greedy_fn(x):
        return tf.argmax(forward(x), axis=-1, output_type=tf.int32)

    @tf.function(input_signature=[tf.TensorSpec([None, state_dim], tf.float32), tf.TensorSpec([], tf.float32)])
    def explore_fn(x, epsilon):
        action = tf.argmax(forward(x), axis=-1, output_type=tf.int32)
        random = tf.random.uniform(tf.shape(action), 0, num_actions, dtype=tf.int32)
        return tf.where(tf.random.uniform(tf.shape(action)) < epsilon, random, action)

    greedy_concrete, explore_concrete = greedy_fn.get_concrete_function(), explore_fn.get_concrete_function()
    return {"greedy": lambda state: greedy_fn(state[None]).numpy()[0],
            "explore": lambda state, epsilon: explore_fn(state[None], np.float32(epsilon)).numpy()[0],
            # The same functions called through their concrete function, as rlgraph's TF executor does.
            "greedy_concrete": lambda state: greedy_concrete(state[None]).numpy()[0],
            "explore_concrete": lambda state, epsilon: explore_concrete(state[None], np.float32(epsilon)).numpy()[0]}


def measure_backend(backend: str, calls: int, rounds: int, device: str = "cpu",
                    compiled: bool = False) -> Dict[str, dict]:
    agent, state_space, action_space = make_agent(backend, device=device)
    # With `compiled`: a second agent whose greedy method is compiled (execution_spec.compile), timed
    # greedy only (exploring get_actions stays uncompiled on both backends, see graphs/compilation.py).
    fast = compiled_twin(agent, device, ["get_greedy_actions"]) if compiled else None
    layers = policy_layers(agent)
    raw = raw_actors(backend, layers, int(action_space.num_categories), int(state_space.shape[0]), device)
    rng = np.random.RandomState(0)
    states = rng.randn(200, *state_space.shape).astype(np.float32)
    matches = all(int(agent.get_action(s, use_exploration=False)) == int(raw["greedy"](s)) for s in states)
    epsilon = float(agent.root_component.exploration.epsilon_exploration.decay.value_at(EXPLORE_TIME))
    state = states[0]
    results = {}
    contenders = {
        "greedy": {"rlgraph": lambda: agent.get_action(state, use_exploration=False),
                   "raw": lambda: raw["greedy"](state)},
        "explore": {"rlgraph": lambda: agent.get_action(state, time_percentage=EXPLORE_TIME),
                    "raw": lambda: raw["explore"](state, epsilon)},
    }
    if fast is not None:
        matches = matches and all(int(fast.get_action(s, use_exploration=False)) == int(raw["greedy"](s))
                                  for s in states)
        contenders["greedy"]["rlgraph_compiled"] = lambda: fast.get_action(state, use_exploration=False)
    if "greedy_concrete" in raw:
        contenders["greedy"]["raw_concrete"] = lambda: raw["greedy_concrete"](state)
        contenders["explore"]["raw_concrete"] = lambda: raw["explore_concrete"](state, epsilon)
    for mode, fns in contenders.items():
        medians = interleaved_medians(fns, calls, rounds=rounds, warmup=min(200, calls))
        results[mode] = {"rlgraph_us": medians["rlgraph"] * 1e6, "raw_us": medians["raw"] * 1e6,
                         "ratio": medians["rlgraph"] / medians["raw"]}
        if "rlgraph_compiled" in medians:
            results[mode]["compiled_us"] = medians["rlgraph_compiled"] * 1e6
            results[mode]["compiled_ratio"] = medians["rlgraph_compiled"] / medians["raw"]
        if "raw_concrete" in medians:
            results[mode]["raw_concrete_us"] = medians["raw_concrete"] * 1e6
            results[mode]["ratio_vs_concrete"] = medians["rlgraph"] / medians["raw_concrete"]
    results["greedy"]["target"] = ACT_TARGET
    results["actions_match"] = matches
    results["epsilon"] = epsilon
    agent.terminate()
    if fast is not None:
        results["compile_status"] = {k: dict(v) for k, v in fast.graph_executor.compile_status.items()}
        fast.terminate()
    return results


def main(argv: Optional[List[str]] = None) -> dict:
    parser = make_parser("act", __doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=None, help="tf and/or pytorch (default: all installed)")
    parser.add_argument("--calls", type=int, default=None, help="timed calls per contender (default 20000)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating blocks (default 5)")
    parser.add_argument("--device", default="cpu", help='where both contenders run: "cpu" (default), "cuda", "cuda:N"')
    parser.add_argument("--compile", action="store_true",
                        help="also time greedy acting of an agent with execution_spec.compile (torch.compile / XLA)")
    args = parser.parse_args(argv)
    calls = args.calls or (300 if args.quick else 20000)
    backends = select_backends(args.backends, "rlgraph benchmark act (--backends)")
    result = {"calls": calls, "rounds": args.rounds, "quick": args.quick, "device": args.device, "backends": {}}
    rows = []
    for backend in backends:
        measured = measure_backend(backend, calls, args.rounds, args.device, args.compile)
        result["backends"][backend] = measured
        for mode in ("greedy", "explore"):
            m = measured[mode]
            target = f"<= {m['target']:.2f}x" if "target" in m else "-"
            concrete = f"{m['ratio_vs_concrete']:.2f}x" if "ratio_vs_concrete" in m else "-"
            row = [backend, mode, m["rlgraph_us"], m["raw_us"], f"{m['ratio']:.2f}x", target, concrete]
            if args.compile:
                row += [m["compiled_us"], f"{m['compiled_ratio']:.2f}x"] if "compiled_us" in m else ["-", "-"]
            rows.append(row + ["yes" if measured["actions_match"] else "NO"])
    print(f"agent.get_action(one CartPole state) vs raw backend on {args.device}, median us over {calls} calls per "
          f"contender")
    compiled_columns = ["compiled us", "compiled / raw"] if args.compile else []
    print(format_table(["backend", "mode", "rlgraph us", "raw us", "ratio", "target", "vs raw concrete fn"]
                       + compiled_columns + ["same actions"], rows))
    path = write_results(result, args.out)
    if path:
        print(f"wrote {path}")
    return result
