"""Update overhead: `agent.update(batch)` against a hand-written raw-backend DQN training step.

The agent is the CartPole DQN of configs/dqn_cartpole.json: double Q, Huber loss, Adam
(lr 2.3e-3), a [256, 256] ReLU network, batch 64. The raw step starts from the agent's online
and target weights and does the same maths on the same batch (numpy in, as the agent gets it):

- PyTorch: `nn.Sequential` online and target networks; the greedy next action from the online
  network, its target Q-value, the TD target under `no_grad`; `smooth_l1_loss` (Huber, delta 1);
  `zero_grad`, `backward`, `torch.optim.Adam(eps=1e-7, fused=True)` step; the loss as a python float. Like
  the agent's calls, the step runs with flush-to-zero for subnormal floats.
- TF: one `tf.function` with a `GradientTape` over the same maths and Adam written out with
  the same rule (m, v, bias correction) in TF ops.

Both sides' losses are compared over the first three steps from identical weights
(`losses_match`), so the contenders do the same work. Timed in alternating blocks; medians in
microseconds. Run:

    python -m benchmarks.update_overhead [--backends tf pytorch] [--calls 2000] [--device cpu|cuda] [--compile] [--quick]

`--device` runs both contenders there (the batch arrives as numpy and is moved there in each step).
`--compile` adds a third contender: an agent with the same weights whose update is compiled
(`execution_spec.compile`: torch.compile on PyTorch, XLA on TF); its first losses are compared too.
"""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from rlgraph.benchmarks.act_overhead import compiled_twin, make_agent, policy_layers, raw_device, tf_network, \
    torch_network
from rlgraph.benchmarks.common import format_table, interleaved_medians, make_parser, select_backends, write_results

UPDATE_TARGET = 1.10
BATCH_SIZE = 64


def make_batch(state_dim: int, num_actions: int, batch_size: int = BATCH_SIZE, seed: int = 0) -> Dict[str, np.ndarray]:
    rng = np.random.RandomState(seed)
    return dict(states=rng.randn(batch_size, state_dim).astype(np.float32),
                actions=rng.randint(0, num_actions, batch_size).astype(np.int32),
                rewards=rng.randn(batch_size).astype(np.float32), terminals=rng.rand(batch_size) < 0.1,
                next_states=rng.randn(batch_size, state_dim).astype(np.float32))


def raw_torch_step(online_layers, target_layers, batch: dict, discount: float, learning_rate: float,
                   wrap_online=None, device=None):
    """fn() -> loss: one hand-written double-DQN Adam step on `batch` (numpy, moved to `device` in each
    step, as the agent gets it); `wrap_online(module)` wraps the online network (e.g. in
    `DistributedDataParallel`, learner_scaling.py)."""
    import torch
    online, target = torch_network(online_layers, device), torch_network(target_layers, device)
    place = device or "cpu"
    if wrap_online is not None:
        online = wrap_online(online)
    # fused=True: torch's fused Adam kernel, which the agent's AdamOptimizer also runs on CPU/CUDA.
    optimizer = torch.optim.Adam(online.parameters(), lr=learning_rate, eps=1e-7, fused=True)

    def step():
        torch.set_flush_denormal(True)  # As the agent runs its updates (execution_spec torch_flush_denormal).
        try:
            return train()
        finally:
            torch.set_flush_denormal(False)

    def train():
        s, sp = torch.as_tensor(batch["states"]).to(place), torch.as_tensor(batch["next_states"]).to(place)
        a = torch.as_tensor(batch["actions"]).to(place).long()
        r, done = torch.as_tensor(batch["rewards"]).to(place), torch.as_tensor(batch["terminals"]).to(place)
        with torch.no_grad():
            best = online(sp).argmax(-1, keepdim=True)
            td_target = r + discount * (~done).float() * target(sp).gather(1, best).squeeze(1)
        q = online(s).gather(1, a.unsqueeze(1)).squeeze(1)
        loss = torch.nn.functional.smooth_l1_loss(q, td_target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()
    return step


def raw_tf_step(online_layers, target_layers, batch: dict, discount: float, learning_rate: float):
    """fn() -> loss: one hand-written double-DQN Adam step on `batch` in one tf.function."""
    import tensorflow as tf
    online, target = tf_network(online_layers), tf_network(target_layers)
    params = [v for pair in online.variables for v in pair]
    m = [tf.Variable(tf.zeros_like(p)) for p in params]
    v = [tf.Variable(tf.zeros_like(p)) for p in params]
    t = tf.Variable(0.0)
    beta_1, beta_2, epsilon = 0.9, 0.999, 1e-7
    state_dim = batch["states"].shape[1]

    @tf.function(input_signature=[tf.TensorSpec([None, state_dim], tf.float32), tf.TensorSpec([None], tf.int32),
                                  tf.TensorSpec([None], tf.float32), tf.TensorSpec([None], tf.bool),
                                  tf.TensorSpec([None, state_dim], tf.float32)])
    def train(s, a, r, done, sp):
        best = tf.argmax(online(sp), axis=-1)
        q_target = tf.gather(target(sp), best, axis=1, batch_dims=1)
        td_target = tf.stop_gradient(r + discount * (1.0 - tf.cast(done, tf.float32)) * q_target)
        with tf.GradientTape() as tape:
            q = tf.gather(online(s), tf.cast(a, tf.int64), axis=1, batch_dims=1)
            error = td_target - q
            loss = tf.reduce_mean(tf.where(tf.abs(error) <= 1.0, 0.5 * tf.square(error), tf.abs(error) - 0.5))
        grads = tape.gradient(loss, params)
        t.assign_add(1.0)
        step_size = learning_rate / (1.0 - beta_1 ** t)
        for p, g, m_i, v_i in zip(params, grads, m, v):
            m_i.assign(beta_1 * m_i + (1.0 - beta_1) * g)
            v_i.assign(beta_2 * v_i + (1.0 - beta_2) * tf.square(g))
            p.assign_sub(step_size * m_i / (tf.sqrt(v_i / (1.0 - beta_2 ** t)) + epsilon))
        return loss

    args = [batch["states"], batch["actions"], batch["rewards"], batch["terminals"], batch["next_states"]]
    return lambda: float(train(*args))


def measure_backend(backend: str, calls: int, rounds: int, device: str = "cpu",
                    compiled: bool = False) -> Dict[str, object]:
    agent, state_space, action_space = make_agent(backend, device=device)
    # With `compiled`: a second agent with the same weights whose update is compiled (execution_spec.compile).
    fast = compiled_twin(agent, device, ["update_from_external_batch"]) if compiled else None
    batch = make_batch(int(state_space.shape[0]), int(action_space.num_categories))
    online, target = policy_layers(agent), policy_layers(agent, "target_policy")
    learning_rate = float(agent.optimizer_spec["learning_rate"])
    place = raw_device(backend, device)
    if backend == "pytorch":
        raw = raw_torch_step(online, target, batch, agent.discount, learning_rate, device=place)
    else:
        import tensorflow as tf
        with tf.device(place):
            raw = raw_tf_step(online, target, batch, agent.discount, learning_rate)
    ours = [float(agent.update(batch)[0]) for _ in range(3)]
    theirs = [raw() for _ in range(3)]
    matches = bool(np.allclose(ours, theirs, rtol=1e-3, atol=1e-6))
    contenders = {"rlgraph": lambda: agent.update(batch), "raw": raw}
    first = {"rlgraph": ours, "raw": theirs}
    if fast is not None:
        first["rlgraph_compiled"] = [float(fast.update(batch)[0]) for _ in range(3)]
        matches = matches and bool(np.allclose(first["rlgraph_compiled"], ours, rtol=1e-3, atol=1e-6))
        contenders["rlgraph_compiled"] = lambda: fast.update(batch)
    medians = interleaved_medians(contenders, calls, rounds=rounds, warmup=min(50, calls))
    agent.terminate()
    result = {"rlgraph_us": medians["rlgraph"] * 1e6, "raw_us": medians["raw"] * 1e6,
              "ratio": medians["rlgraph"] / medians["raw"], "target": UPDATE_TARGET, "losses_match": matches,
              "first_losses": first}
    if fast is not None:
        result.update(compiled_us=medians["rlgraph_compiled"] * 1e6,
                      compiled_ratio=medians["rlgraph_compiled"] / medians["raw"],
                      compile_status={k: dict(v) for k, v in fast.graph_executor.compile_status.items()})
        fast.terminate()
    return result


def main(argv: Optional[List[str]] = None) -> dict:
    parser = make_parser("update", __doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="+", default=None, help="tf and/or pytorch (default: all installed)")
    parser.add_argument("--calls", type=int, default=None, help="timed updates per contender (default 2000)")
    parser.add_argument("--rounds", type=int, default=5, help="alternating blocks (default 5)")
    parser.add_argument("--device", default="cpu", help='where both contenders run: "cpu" (default), "cuda", "cuda:N"')
    parser.add_argument("--compile", action="store_true",
                        help="also time an agent whose update is compiled (execution_spec.compile)")
    args = parser.parse_args(argv)
    calls = args.calls or (30 if args.quick else 2000)
    backends = select_backends(args.backends, "rlgraph benchmark update (--backends)")
    result = {"calls": calls, "rounds": args.rounds, "quick": args.quick, "batch_size": BATCH_SIZE,
              "device": args.device, "backends": {}}
    rows = []
    for backend in backends:
        m = result["backends"][backend] = measure_backend(backend, calls, args.rounds, args.device, args.compile)
        row = [backend, m["rlgraph_us"], m["raw_us"], f"{m['ratio']:.2f}x", f"<= {UPDATE_TARGET:.2f}x"]
        if args.compile:
            status = m["compile_status"]["update_from_external_batch"]
            row += [m["compiled_us"], f"{m['compiled_ratio']:.2f}x", "yes" if status["compiled"] else "no (see log)"]
        rows.append(row + ["yes" if m["losses_match"] else "NO"])
    print(f"agent.update(batch of {BATCH_SIZE}) vs a raw double-DQN Adam step on {args.device}, median us over "
          f"{calls} calls each")
    compiled_columns = ["compiled us", "compiled / raw", "compiled"] if args.compile else []
    print(format_table(["backend", "rlgraph us", "raw us", "ratio", "target"] + compiled_columns + ["same losses"],
                       rows))
    path = write_results(result, args.out)
    if path:
        print(f"wrote {path}")
    return result
