"""Build time of the CartPole DQN agent, split into backend work and rlgraph's own overhead.

Each build creates a new agent from configs/dqn_cartpole.json (the built-in `DQN_CARTPOLE_SPEC`
where rlgraph is installed without its configs/ folder) with CartPole-v1's spaces and reads
`agent.build_stats`. `backend_time` covers the backend's share of the build: graph functions
run (twice) during the trace, variable creation, and the executor's preparation after the trace
(TF: tracing one `tf.function` per root API method, which the benchmark asks for at build with
`execution_spec.tf_trace_at_build`; an agent built with the default traces each at its first call). `build_overhead` is the rest: rlgraph's
bookkeeping (passes, spaces, records, input-completeness, call plans). The targets are absolute
budgets for the whole build (`BUDGETS`): 25 ms on PyTorch, 500 ms on TF.

The backend is imported before any timing. The first build on each backend in a process
still pays for one-time set-up (TF's runtime, first kernel and trace caches); it is reported on
its own (`first_build`) and left out of the medians. On TF, `backend_time` includes rlgraph's
own Python that runs inside `tf.function` tracing (API method bodies), so there the split
flatters the framework somewhat.
For reference, a hand-written build of the same network on the raw backend is timed too
(PyTorch: online and target `nn.Sequential` + `torch.optim.Adam`; TF: the same variables,
Adam slots, and one traced `tf.function` for acting and one for a double-DQN training step).
Backend threads are set to 1. Run:

    python -m benchmarks.build_time [--backends tf pytorch] [--repeats 3] [--profile] [--quick]
"""
from __future__ import annotations

import copy
import math
import statistics
import time
from typing import Dict, List, Optional

from rlgraph.benchmarks.common import (CONFIG_FILE, format_table, load_agent_spec, make_parser, select_backends,
                                       single_thread, write_results)

BUDGETS = {"pytorch": 0.025, "tf": 0.5}  # Seconds for one DQN CartPole build (total_build_time).
TIMES = ("total_build_time", "backend_time", "build_overhead")
def build_agent(spec: dict, state_space, action_space, backend: str) -> dict:
    """Creates and builds one agent; returns its build_stats plus construction and API counts."""
    from rlgraph.agents import Agent
    start = time.perf_counter()
    agent = Agent.from_spec(copy.deepcopy(spec), state_space=state_space, action_space=action_space,
                            backend=backend, auto_build=False)
    construct = time.perf_counter() - start
    agent.build()
    stats = dict(agent.build_stats, construct_time=construct,
                 api_methods=len(agent.graph_executor.graph_builder.api_signatures))
    agent.terminate()
    return stats


def layer_sizes(spec: dict, state_space, action_space) -> List[int]:
    """[inputs, hidden..., actions] of the spec's dense network (for the raw reference build)."""
    hidden = [layer["units"] for layer in spec["network_spec"]]
    return [int(state_space.shape[0])] + hidden + [int(action_space.num_categories)]


def raw_build_torch(sizes: List[int], learning_rate: float) -> float:
    """Seconds to create online and target networks (ReLU MLPs), sync them, and an Adam optimizer."""
    import torch
    start = time.perf_counter()

    def network():
        layers = []
        for i, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:])):
            layers.append(torch.nn.Linear(n_in, n_out))
            if i < len(sizes) - 2:
                layers.append(torch.nn.ReLU())
        return torch.nn.Sequential(*layers)

    online, target = network(), network()
    target.load_state_dict(online.state_dict())
    torch.optim.Adam(online.parameters(), lr=learning_rate)
    return time.perf_counter() - start


def raw_build_tf(sizes: List[int], learning_rate: float, discount: float) -> float:
    """Seconds to create the same variables (+ Adam slots) and trace an acting and a training function."""
    import tensorflow as tf
    start = time.perf_counter()

    def network():
        layers = []
        for n_in, n_out in zip(sizes[:-1], sizes[1:]):
            limit = math.sqrt(6.0 / (n_in + n_out))
            weights = tf.Variable(tf.random.uniform([n_in, n_out], -limit, limit))
            layers.append((weights, tf.Variable(tf.zeros([n_out]))))
        return layers

    online, target = network(), network()
    for (w, b), (w_t, b_t) in zip(online, target):
        w_t.assign(w)
        b_t.assign(b)
    params = [v for layer in online for v in layer]
    m = [tf.Variable(tf.zeros_like(p)) for p in params]
    v = [tf.Variable(tf.zeros_like(p)) for p in params]
    step = tf.Variable(0.0)

    def q_values(layers, s):
        for i, (w, b) in enumerate(layers):
            s = tf.matmul(s, w) + b
            if i < len(layers) - 1:
                s = tf.nn.relu(s)
        return s

    states = tf.TensorSpec([None, sizes[0]], tf.float32)

    @tf.function(input_signature=[states])
    def act(s):
        return tf.argmax(q_values(online, s), axis=-1, output_type=tf.int32)

    @tf.function(input_signature=[states, tf.TensorSpec([None], tf.int32), tf.TensorSpec([None], tf.float32),
                                  tf.TensorSpec([None], tf.bool), states])
    def train(s, a, r, d, s_next):
        with tf.GradientTape() as tape:
            q_sa = tf.gather(q_values(online, s), a, batch_dims=1)
            a_star = tf.argmax(q_values(online, s_next), axis=-1, output_type=tf.int32)
            q_next = tf.gather(q_values(target, s_next), a_star, batch_dims=1)
            y = tf.stop_gradient(r + discount * (1.0 - tf.cast(d, tf.float32)) * q_next)
            delta = tf.abs(y - q_sa)
            loss = tf.reduce_mean(tf.where(delta < 1.0, 0.5 * tf.square(delta), delta - 0.5))
        grads = tape.gradient(loss, params)
        step.assign_add(1.0)
        scale = learning_rate * tf.sqrt(1.0 - 0.999 ** step) / (1.0 - 0.9 ** step)
        for p, g, m_p, v_p in zip(params, grads, m, v):
            m_p.assign(0.9 * m_p + 0.1 * g)
            v_p.assign(0.999 * v_p + 0.001 * tf.square(g))
            p.assign_sub(scale * m_p / (tf.sqrt(v_p) + 1e-8))
        return loss

    act.get_concrete_function()
    train.get_concrete_function()
    return time.perf_counter() - start


def measure_backend(backend: str, spec: dict, state_space, action_space, repeats: int) -> dict:
    """One cold build, then `repeats` rounds of (agent build, raw build); medians and samples."""
    single_thread(backend)
    spec = copy.deepcopy(spec)
    threads_key = "torch_num_threads" if backend == "pytorch" else "tf_num_threads"
    # TF traces every API method at build here (`tf_trace_at_build`; by default each is traced at its
    # first call), so that the figure stays the whole cost of a ready agent, as the raw build's is.
    spec["execution_spec"] = dict(spec.get("execution_spec") or {}, **{threads_key: 1},
                                  **({"tf_trace_at_build": True} if backend == "tf" else {}))
    sizes = layer_sizes(spec, state_space, action_space)
    learning_rate = spec.get("optimizer_spec", {}).get("learning_rate", 1e-3)
    raw = (lambda: raw_build_torch(sizes, learning_rate)) if backend == "pytorch" else \
        (lambda: raw_build_tf(sizes, learning_rate, spec.get("discount", 0.99)))
    first = build_agent(spec, state_space, action_space, backend)
    raw()  # Warm-up: the raw path's one-time costs (e.g. TF's gradient registry) are not a build's.
    builds, raw_times = [], []
    for _ in range(repeats):
        builds.append(build_agent(spec, state_space, action_space, backend))
        raw_times.append(raw())
    samples = {key: [b[key] for b in builds] for key in TIMES + ("construct_time",)}
    medians = {key: statistics.median(values) for key, values in samples.items()}
    raw_time = statistics.median(raw_times)
    counters = {k: v for k, v in builds[-1].items() if k not in samples}
    return dict(medians, overhead_share=medians["build_overhead"] / medians["total_build_time"],
                budget=BUDGETS[backend], within_budget=medians["total_build_time"] <= BUDGETS[backend],
                raw_build_time=raw_time, ratio_to_raw=medians["total_build_time"] / raw_time,
                counters=counters, first_build={k: first[k] for k in TIMES},
                samples=dict(samples, raw_build_time=raw_times))


def profile_build(backend: str, spec: dict, state_space, action_space, builds: int = 20, lines: int = 25) -> str:
    """pyinstrument's flat report (self time, then total time per function) of `builds` agent builds.

    Only `agent.build()` is sampled; the builds are pooled into one profile because a single
    PyTorch build lasts a few tens of milliseconds.
    """
    from rlgraph.agents import Agent
    from rlgraph.environments.env_utils import import_optional
    pyinstrument = import_optional("pyinstrument", where="rlgraph benchmark build --profile")
    profiler = pyinstrument.Profiler(interval=0.0005)
    for _ in range(builds):
        agent = Agent.from_spec(copy.deepcopy(spec), state_space=state_space, action_space=action_space,
                                backend=backend, auto_build=False)
        profiler.start()
        agent.build()
        profiler.stop()
        agent.terminate()
    reports = []
    for flat_time in ("self", "total"):
        text = profiler.output_text(flat=True, flat_time=flat_time, show_all=True)
        body = [line for line in text.splitlines() if line.strip()]
        reports.append(f"-- {flat_time} time per function (s, {builds} builds), top {lines}:\n" +
                       "\n".join(_top_lines(body, lines)))
    return "\n".join(reports)


def _top_lines(report_lines: List[str], count: int) -> List[str]:
    """The first `count` lines of a flat pyinstrument report after its banner."""
    start = next((i for i, line in enumerate(report_lines) if line.lstrip()[:1].isdigit()), 0)
    return report_lines[start:start + count]


def main(argv: Optional[List[str]] = None) -> Dict:
    """Runs the benchmark; returns the results (also written as JSON)."""
    parser = make_parser("build", __doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", help="tf and/or pytorch (default: those installed)")
    parser.add_argument("--repeats", type=int, help="builds per backend after the first (default 3, --quick 1)")
    parser.add_argument("--config", help=f"agent config (default: {CONFIG_FILE}, else the built-in spec)")
    parser.add_argument("--profile", action="store_true", help="also print a pyinstrument profile of one build")
    args = parser.parse_args(argv)
    repeats = args.repeats or (1 if args.quick else 3)
    backends = select_backends(args.backends, "rlgraph benchmark build (--backends)")
    spec, source = load_agent_spec(args.config)
    from rlgraph.environments import OpenAIGymEnv
    env = OpenAIGymEnv("CartPole-v1")
    state_space, action_space = env.state_space, env.action_space
    env.terminate()
    results = {backend: measure_backend(backend, spec, state_space, action_space, repeats) for backend in backends}

    print(f"DQN agent build ({source}), CartPole-v1 spaces, median of {repeats} build(s) after the first (ms)")
    rows = [[backend, r["total_build_time"] * 1e3, f"{r['budget'] * 1e3:g}" + ("" if r["within_budget"] else
                                                                                 " (over)"),
             r["backend_time"] * 1e3, r["build_overhead"] * 1e3, f"{100 * r['overhead_share']:.1f}%",
             r["raw_build_time"] * 1e3, f"{r['ratio_to_raw']:.2f}x", r["construct_time"] * 1e3,
             r["first_build"]["total_build_time"] * 1e3] for backend, r in results.items()]
    print(format_table(["backend", "total", "budget", "backend", "overhead", "overhead share", "raw build",
                        "total/raw", "construct", "first build"], rows))
    counter_keys = sorted({k for r in results.values() for k in r["counters"]})
    print(format_table(["backend"] + counter_keys,
                       [[backend] + [r["counters"].get(k, "-") for k in counter_keys] for backend, r in
                        results.items()]))
    result = {"benchmark": "build", "config": source, "repeats": repeats, "quick": args.quick, "backends": results}
    if args.profile:
        for backend in backends:
            print(f"\npyinstrument profile of one build on {backend}:")
            print(profile_build(backend, spec, state_space, action_space))
    path = write_results(result, args.out)
    if path:
        print(f"wrote {path}")
    return result


if __name__ == "__main__":
    main()
