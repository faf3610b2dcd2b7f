"""One learner of the 2-learner equivalence test (test_learner_group.py), run as a script:

    python learner_group_child.py RANK SIZE BACKEND ADDRESSES OUT_JSON

For the DQN, PPO and IMPALA update steps: a reference agent (outside the group, `suspended`)
takes 3 Adam steps on the whole batch; then a group agent from the same initial weights takes
3 steps on this rank's half. Writes, per case, the largest difference between the two and how far
the reference moved; and the broadcast check (rank 1's own weights replaced by rank 0's).
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from rlgraph.utils import learner_group  # noqa: E402

STEPS = 3
ADAM = {"type": "adam", "learning_rate": 0.01}
NET = [{"type": "dense", "units": 8, "activation": "tanh"}]


def _spaces():
    from rlgraph.spaces import FloatBox, IntBox
    return dict(state_space=FloatBox(shape=(4,)), action_space=IntBox(3))


def dqn_case(backend):
    from rlgraph.agents import DQNAgent
    rng = np.random.RandomState(5)
    n = 8
    batch = dict(states=rng.normal(size=(n, 4)).astype(np.float32), actions=rng.randint(0, 3, size=n),
                 rewards=rng.uniform(-3, 3, size=n).astype(np.float32), terminals=np.arange(n) % 3 == 2,
                 next_states=rng.normal(size=(n, 4)).astype(np.float32))

    def make():
        return DQNAgent(network_spec=NET, optimizer_spec=dict(ADAM, clip_grad_norm=0.5), double_q=True,
                        memory_spec={"type": "replay-memory", "capacity": 64},
                        execution_spec={"seed": 1, "max_timesteps": 1000}, backend=backend, **_spaces())
    return make, batch, lambda agent, b: agent.update(b)


def ppo_case(backend):
    from rlgraph.agents import PPOAgent
    rng = np.random.RandomState(6)
    n = 8
    batch = dict(states=rng.normal(size=(n, 4)).astype(np.float32), actions=rng.randint(0, 3, size=n),
                 log_probs=np.log(rng.uniform(0.2, 0.5, size=n)).astype(np.float32),
                 values=rng.normal(size=n).astype(np.float32), advantages=rng.normal(size=n).astype(np.float32),
                 value_targets=rng.normal(size=n).astype(np.float32))

    def make():
        return PPOAgent(network_spec=NET, optimizer_spec=ADAM, execution_spec={"seed": 1, "max_timesteps": 1000},
                        backend=backend,
                        **_spaces())

    def step(agent, b):
        agent.call_api_method("update_from_batch", [b, np.float32(0.0), np.float32(0.2), np.float32(0.01)])
    return make, batch, step


def impala_case(backend):
    from rlgraph.agents import IMPALAAgent
    rng = np.random.RandomState(7)
    b, t = 4, 3
    batch = dict(states=rng.normal(size=(b, t, 4)).astype(np.float32),
                 bootstrap_states=rng.normal(size=(b, 4)).astype(np.float32),
                 actions=rng.randint(0, 3, size=(b, t)),
                 action_probs=rng.dirichlet(np.ones(3), size=(b, t)).astype(np.float32),
                 rewards=rng.uniform(-1, 1, size=(b, t)).astype(np.float32),
                 terminals=rng.uniform(size=(b, t)) < 0.3)

    def make():
        return IMPALAAgent(network_spec=NET, optimizer_spec=ADAM, worker_sample_size=t,
                           execution_spec={"seed": 1, "max_timesteps": 1000}, backend=backend, **_spaces())
    return make, batch, lambda agent, rows: agent.update(rows)


def half(batch, rank, size):
    n = len(batch["actions"])
    rows = slice(rank * n // size, (rank + 1) * n // size)
    return {k: v[rows] for k, v in batch.items()}


def main():
    rank, size, backend, addresses, out = sys.argv[1:6]
    rank, size = int(rank), int(size)
    group = learner_group.join(rank, size, backend, addresses.split(","), timeout=120)
    results = {}
    for name, case in (("dqn", dqn_case), ("ppo", ppo_case), ("impala", impala_case)):
        make, batch, step = case(backend)
        with learner_group.suspended():
            reference = make()
            start = reference.get_weights()
            for _ in range(STEPS):
                step(reference, batch)
            expected = reference.get_weights()
        agent = make()
        agent.set_weights(start)
        for _ in range(STEPS):
            step(agent, half(batch, rank, size))
        got = agent.get_weights()
        results[name] = {"max_diff": max(float(np.max(np.abs(got[k] - expected[k]))) for k in expected),
                         "moved": max(float(np.max(np.abs(expected[k] - start[k]))) for k in expected)}
    own = {"w": np.full(3, float(rank + 1)), "n": np.array([rank + 7], np.int64)}
    shared = group.broadcast(own)
    results["broadcast"] = {"w": shared["w"].tolist(), "n": int(shared["n"][0]), "dtype": str(shared["n"].dtype)}
    results["gathered"] = group.gather_scalars(float(rank) + 0.5).tolist()
    from rlgraph.execution.learner_sync import WeightCheck
    if rank == 1:  # Weights that went their own way are found at the next check.
        weights = agent.get_weights()
        name = sorted(weights)[0]
        agent.set_weights({name: weights[name] + 1e-3})
    check = WeightCheck(group, interval=1)
    try:
        check.maybe_check(agent)
        results["divergence"] = "not found"
    except Exception as error:  # noqa: BLE001 - its message is checked by the test.
        results["divergence"] = str(error)
    with open(out, "w") as f:
        json.dump(results, f)
    learner_group.leave()


if __name__ == "__main__":
    main()
