"""Helpers of the policy-gradient agent tests (test_ppo_agent.py, test_actor_critic_agent.py).

Agents are tiny: FloatBox(2) states, IntBox(3) actions, a policy network of one dense layer of
3 tanh units and (unless shared) a value network of one dense layer of 2 tanh units, plain SGD
(learning rate `LR`). The numpy forward pass and the finite-difference gradients run in float64.
"""
import numpy as np

from rlgraph.agents import ActorCriticAgent, PPOAgent
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.utils import numpy as rnp

LR = 0.1
GAMMA, LAMBDA = 0.9, 0.8
NET = [{"type": "dense", "units": 3, "activation": "tanh"}]
VF_NET = [{"type": "dense", "units": 2, "activation": "tanh"}]
STATES, ACTIONS = FloatBox(shape=(2,)), IntBox(3)
# The random env of the worker tests (tests/test_single_threaded_worker.py).
ENV_STATES, ENV_ACTIONS = FloatBox(shape=(3,)), IntBox(4)


def _spec(backend, **overrides):
    spec = dict(state_space=STATES, action_space=ACTIONS, network_spec=NET, value_function_spec=VF_NET,
                optimizer_spec={"type": "sgd", "learning_rate": LR}, discount=GAMMA, gae_lambda=LAMBDA,
                execution_spec={"seed": 1, "max_timesteps": 1000}, backend=backend)
    spec.update(overrides)
    return spec


def _ppo(backend, **overrides):
    """A PPO agent taking one gradient step per update on batches of up to 64 rows (no entropy bonus)."""
    overrides.setdefault("update_spec", {"batch_size": 8, "sample_size": 64, "num_epochs": 1})
    return PPOAgent(**_spec(backend, **overrides))


def _a2c(backend, **overrides):
    overrides.setdefault("update_spec", {"batch_size": 8})
    return ActorCriticAgent(**_spec(backend, **overrides))


def _env_spec(terminal_prob=0.0):
    return {"type": "random-env", "state_space": ENV_STATES, "action_space": ENV_ACTIONS,
            "terminal_prob": terminal_prob}


def _names(agent):
    """{maths name: variable name}: W1, b1 (policy layer), Wa, ba (logits), Wv, bv (value output)
    and, with a value network of its own, V1, c1 (its layer)."""
    scope = agent.name + "/"
    names = {"W1": "policy/neural-network/dense/kernel", "b1": "policy/neural-network/dense/bias",
             "Wa": "policy/action-adapter-0/action-layer/kernel", "ba": "policy/action-adapter-0/action-layer/bias"}
    if agent.value_function_spec is None:
        names.update(Wv="policy/value-function-node/kernel", bv="policy/value-function-node/bias")
    else:
        names.update(V1="value-function/neural-network/dense/kernel", c1="value-function/neural-network/dense/bias",
                     Wv="value-function/value-function-node/kernel", bv="value-function/value-function-node/bias")
    names = {k: scope + v for k, v in names.items()}
    assert sorted(names.values()) == sorted(agent.graph_executor.get_weights())  # No variable left out.
    return names


def _fixed_weights(agent, seed=0):
    """Sets every variable to N(0, 0.7^2) draws of a fixed seed; returns {maths name: float64 array}."""
    rng = np.random.RandomState(seed)
    names = _names(agent)
    weights = {k: rng.normal(scale=0.7, size=v.shape).astype(np.float32)
               for k, v in sorted(agent.graph_executor.get_weights().items())}
    agent.set_weights(weights)
    return {n: weights[k].astype(np.float64) for n, k in names.items()}


def _params(agent):
    """The agent's current variables as {maths name: float64 array}."""
    weights = agent.graph_executor.get_weights()
    return {n: weights[k].astype(np.float64) for n, k in _names(agent).items()}


def _values(p, states):
    s = np.asarray(states, np.float64)
    if "V1" in p:
        return (np.tanh(s @ p["V1"] + p["c1"]) @ p["Wv"] + p["bv"])[:, 0]
    return (np.tanh(s @ p["W1"] + p["b1"]) @ p["Wv"] + p["bv"])[:, 0]


def _forward(p, states, actions):
    """(log pi(a|s) [B], entropy H [B], V(s) [B]) of the tiny agent in numpy (float64)."""
    h = np.tanh(np.asarray(states, np.float64) @ p["W1"] + p["b1"])
    log_p = rnp.log_softmax(h @ p["Wa"] + p["ba"])
    log_pi = log_p[np.arange(len(log_p)), np.asarray(actions)]
    entropy = -np.sum(np.exp(log_p) * log_p, axis=-1)
    return log_pi, entropy, _values(p, states)


def _fragment(seed, n, terminal_at=(), truncated_end=True):
    """One environment's time-ordered record of n steps: s_{t+1} is the next row's s_t except after a
    terminal (then a fresh episode starts); the last step bootstraps from its next state unless
    `truncated_end` is False (then it is terminal)."""
    rng = np.random.RandomState(seed)
    s = rng.normal(size=(n + 1, 2)).astype(np.float32)
    terminals = np.zeros(n, bool)
    terminals[list(terminal_at)] = True
    if not truncated_end:
        terminals[-1] = True
    next_states = s[1:].copy()
    return dict(states=s[:n], actions=rng.randint(0, 3, size=n), rewards=rng.uniform(-1, 1, n).astype(np.float32),
                terminals=terminals, next_states=next_states)


def _numpy_pg_batch(p, fragments, gamma=GAMMA, lam=LAMBDA):
    """The update batch of `make_batch` in numpy: log mu and V of the weights `p`, GAE per fragment
    (`rnp.gae`, bootstrapping from V of the fragment's last next state) and targets A + V."""
    out = {k: [] for k in ("states", "actions", "log_probs", "values", "advantages")}
    for f in fragments:
        log_mu, _, v = _forward(p, f["states"], f["actions"])
        bootstrap = _values(p, f["next_states"][-1:])[0]
        # Within a fragment s_{t+1} = next row's s_t, so v_{t+1} of rnp.gae is V(next_states[t]) there.
        assert np.array_equal(f["next_states"][:-1][~f["terminals"][:-1]], f["states"][1:][~f["terminals"][:-1]])
        adv = rnp.gae(f["rewards"].astype(np.float64), v, bootstrap, f["terminals"], gamma, lam)
        for key, value in (("states", f["states"]), ("actions", f["actions"]), ("log_probs", log_mu), ("values", v),
                           ("advantages", adv)):
            out[key].append(value)
    out = {k: np.concatenate(v) for k, v in out.items()}
    out["value_targets"] = out["advantages"] + out["values"]
    return out


def _as_batch(batch):
    """A numpy PG batch (float64) as the agent's input (float32, int actions)."""
    return {k: (v.astype(np.float32) if k != "actions" else np.asarray(v)) for k, v in batch.items()}


def _numeric_grads(loss_fn, p0, eps=1e-6):
    """Central differences of loss_fn(params) in float64: {name: array like p0[name]}."""
    grads = {}
    for name, value in p0.items():
        grads[name] = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            plus, minus = dict(p0, **{name: value.copy()}), dict(p0, **{name: value.copy()})
            plus[name][index] += eps
            minus[name][index] -= eps
            grads[name][index] = (loss_fn(plus) - loss_fn(minus)) / (2 * eps)
    return grads


def _assert_sgd_step(p0, p1, grads, lr, names=None):
    """p1 - p0 == -lr * grad per variable (compared as steps: float32 weights round at ~1e-7)."""
    for name in names or p0:
        np.testing.assert_allclose(p1[name] - p0[name], -lr * grads[name], rtol=2e-3, atol=2e-6, err_msg=name)


def _observe(agent, fragment, env_id=0, truncated=True):
    agent.observe(fragment["states"], fragment["actions"], None, fragment["rewards"], fragment["next_states"],
                  fragment["terminals"], env_id=env_id, truncated=truncated)
