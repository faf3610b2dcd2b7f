"""`SACAgent`: acting for FloatBox, IntBox and Dict actions; one update against a numpy reference
(losses and the SGD step of every variable, continuous, discrete and discrete containers, with and
without importance weights); prioritized replay (priorities, weights); soft target updates; the
temperature; warm-up; bad inputs; checkpoints; the original RLgraph's config keys.

Agents have FloatBox(2) states, an actor and critics of one dense layer of 3 tanh units, SGD
optimizers and update_spec.sync_interval 1000 (no target sync) unless a test says otherwise.
The numpy references run in float64; their gradients are central differences.

Continuous updates sample a~ = squash(mean + std * eps). The tests set the action layer so that
log_std = -19 and |mean| >= 1: std * eps is then below half a float32 ulp of the mean, a~ is
the squashed mean exactly and the update is deterministic (the reference takes u = mean).
"""
import copy
import itertools
import math

import numpy as np
import pytest

from rlgraph.agents import Agent, SACAgent
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox, Tuple
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphNonFiniteError, RLGraphSpaceError, RLGraphSpecError

B, GAMMA, LR, ALPHA, H_TARGET = 4, 0.9, 0.1, 0.5, -1.5
POLICY, CRITICS, TARGETS = "agent/policy/", "agent/critics/", "agent/target-critics/"
ACTOR = {"W1": POLICY + "neural-network/hidden/kernel", "b1": POLICY + "neural-network/hidden/bias"}
BOX = FloatBox(low=-2.0, high=2.0, shape=(1,))
DICT = Dict(a=FloatBox(low=-1.0, high=1.0, shape=(2,)), b=FloatBox(low=0.0, high=3.0))
TUPLE = Tuple(FloatBox(low=-1.0, high=1.0), FloatBox(low=-5.0, high=5.0, shape=(3,)))
DICT_INT = Dict(a=IntBox(3), b=IntBox(2))  # 6 joint actions, leaves in the order a, b.
TUPLE_INT = Tuple(IntBox(2), IntBox(2), IntBox(3))  # 12 joint actions.
SGD = {"type": "sgd", "learning_rate": LR}
WEIGHTS = np.array([0.5, 1.0, 0.25, 2.0], np.float32)  # Importance weights of a batch.


def _agent(backend, action_space=BOX, **overrides):
    spec = dict(state_space=FloatBox(shape=(2,)), action_space=action_space,
                network_spec=[{"type": "dense", "units": 3, "activation": "tanh", "scope": "hidden"}],
                value_function_spec=[{"type": "dense", "units": 3, "activation": "tanh", "scope": "vf-hidden"}],
                optimizer_spec=SGD, value_function_optimizer_spec=SGD, alpha_optimizer_spec=SGD,
                initial_alpha=ALPHA, target_entropy=H_TARGET, discount=GAMMA,
                memory_spec={"type": "replay-memory", "capacity": 16}, observe_spec={"buffer_size": 1},
                update_spec={"batch_size": B, "sync_interval": 1000}, execution_spec={"seed": 1, "max_timesteps": 100},
                backend=backend)
    spec.update(overrides)
    return SACAgent(**spec)


def _adapter(i):
    return {f"Wa{i}": POLICY + f"action-adapter-{i}/action-layer/kernel",
            f"ba{i}": POLICY + f"action-adapter-{i}/action-layer/bias"}


def _critic(i, prefix=CRITICS):
    scope = prefix + f"critic-{i}/"
    return {f"Wc{i}": scope + "neural-network/vf-hidden/kernel", f"bc{i}": scope + "neural-network/vf-hidden/bias",
            f"Wq{i}": scope + "q-head/kernel", f"bq{i}": scope + "q-head/bias"}


def _set_weights(agent, leaf_dims=(), seed=0):
    """N(0, 0.5^2) weights for actor, critics and targets; for each continuous leaf of `leaf_dims`,
    an action layer giving |mean| >= 1 and log_std = -19 (see the module docstring). Returns them."""
    rng = np.random.RandomState(seed)
    weights = {k: rng.normal(scale=0.5, size=v.shape).astype(np.float32)
               for k, v in sorted(agent.graph_executor.get_weights().items())
               if k.startswith((POLICY, CRITICS, TARGETS))}
    for i, dim in enumerate(leaf_dims):
        kernel, bias = weights[_adapter(i)[f"Wa{i}"]], weights[_adapter(i)[f"ba{i}"]]
        kernel[:, :dim] *= 0.1
        bias[:dim] = np.where(rng.uniform(size=dim) < 0.5, -1.5, 1.5)
        kernel[:, dim:], bias[dim:] = 0.0, -19.0
    agent.set_weights(weights)
    return weights


def _params(weights, names):
    return {n: weights[k].astype(np.float64) for n, k in names.items()}


def _batch(action_space, seed=0):
    rng = np.random.RandomState(seed)
    if isinstance(action_space, IntBox):
        actions = rng.randint(0, action_space.num_categories, size=B)
    else:
        actions = action_space.with_batch_rank().sample(size=B)
    return dict(states=rng.normal(size=(B, 2)).astype(np.float32), actions=actions,
                rewards=rng.uniform(-2.0, 2.0, size=B).astype(np.float32),
                terminals=np.array([False, True, False, False]),
                next_states=rng.normal(size=(B, 2)).astype(np.float32))


def _fd_gradient(f, p0, names):
    """Central differences of f(params) for the parameters `names` of p0."""
    grads, eps = {}, 1e-6
    for n in names:
        grads[n] = np.zeros_like(p0[n])
        for index in np.ndindex(p0[n].shape):
            plus, minus = dict(p0, **{n: p0[n].copy()}), dict(p0, **{n: p0[n].copy()})
            plus[n][index] += eps
            minus[n][index] -= eps
            grads[n][index] = (f(plus) - f(minus)) / (2 * eps)
    return grads


def _check_sgd_steps(w0, w1, names, grads, lr=LR):
    for n, k in names.items():
        # Compared as steps (each ~1e-2; float32 rounding of the weights ~1e-7).
        np.testing.assert_allclose(w1[k] - w0[k], -lr * grads[n], rtol=1e-3, atol=2e-6, err_msg=n)


# --- Continuous actions: the numpy reference ---------------------------------------------------------------------

def _squashed_actor(p, s, leaves):
    """(actions [B, dim] per leaf, log pi [B]) of the squashed Gaussians at u = mean."""
    h = np.tanh(s @ p["W1"] + p["b1"])
    actions, logp = [], 0.0
    for i, (dim, low, high) in enumerate(leaves):
        out = h @ p[f"Wa{i}"] + p[f"ba{i}"]
        u, log_std = out[:, :dim], np.clip(out[:, dim:], -20.0, 2.0)
        actions.append(low + (high - low) * (np.tanh(u) + 1.0) / 2.0)
        log_det = 2.0 * (math.log(2.0) - u - rnp.softplus(-2.0 * u)) + math.log((high - low) / 2.0)
        logp = logp + np.sum(-log_std - 0.5 * math.log(2.0 * math.pi) - log_det, axis=-1)
    return actions, logp


def _q(p, i, s, actions):
    x = np.concatenate([s] + actions, axis=-1)
    return (np.tanh(x @ p[f"Wc{i}"] + p[f"bc{i}"]) @ p[f"Wq{i}"] + p[f"bq{i}"])[:, 0]


def _batch_actions(batch, space):
    if isinstance(space, Dict):
        return [batch["actions"]["a"].astype(np.float64), batch["actions"]["b"].astype(np.float64)[:, None]]
    return [batch["actions"].astype(np.float64)]


@pytest.mark.parametrize("action_space,double_q,weights", [(BOX, True, None), (BOX, False, None), (DICT, True, None),
                                                           (BOX, True, WEIGHTS)],
                         ids=["box-twin", "box-single", "dict-twin", "box-twin-weighted"])
def test_continuous_update_matches_numpy(backend, action_space, double_q, weights):
    agent = _agent(backend, action_space, double_q=double_q)
    leaves = [(2, -1.0, 1.0), (1, 0.0, 3.0)] if action_space is DICT else [(1, -2.0, 2.0)]
    w0 = _set_weights(agent, [d for d, _, _ in leaves])
    heads = [0, 1] if double_q else [0]
    actor_names = {**ACTOR, **{k: v for i in range(len(leaves)) for k, v in _adapter(i).items()}}
    critic_names = {k: v for i in heads for k, v in _critic(i).items()}
    p = {**_params(w0, actor_names), **_params(w0, critic_names)}
    pt = _params(w0, {k: v for i in heads for k, v in _critic(i, TARGETS).items()})
    batch = _batch(action_space)
    if weights is not None:
        batch["importance_weights"] = weights
    s, s_next = batch["states"].astype(np.float64), batch["next_states"].astype(np.float64)
    a = _batch_actions(batch, action_space)

    def losses(params):
        a_next, logp_next = _squashed_actor(params, s_next, leaves)
        a_new, logp = _squashed_actor(params, s, leaves)
        tup = lambda f: tuple(f(i) for i in heads) if double_q else f(0)  # noqa: E731
        return rnp.sac_losses(ALPHA, logp_next, tup(lambda i: _q(pt, i, s_next, a_next)),
                              tup(lambda i: _q(params, i, s, a)), logp, tup(lambda i: _q(params, i, s, a_new)),
                              batch["rewards"], batch["terminals"], GAMMA, H_TARGET, importance_weights=weights)

    actor, critic, alpha_loss = (x.mean() for x in losses(p))
    out = agent.get_losses(batch)
    np.testing.assert_allclose([out.actor_loss, out.critic_loss, out.alpha_loss, out.alpha],
                               [actor, critic, alpha_loss, ALPHA], rtol=1e-4, atol=1e-6)
    actor_grads = _fd_gradient(lambda q: losses(q)[0].mean(), p, actor_names)
    critic_grads = _fd_gradient(lambda q: losses(q)[1].mean(), p, critic_names)
    logp = _squashed_actor(p, s, leaves)[1]

    result = agent.update(batch)
    np.testing.assert_allclose([result.actor_loss, result.critic_loss, result.alpha_loss],
                               [actor, critic, alpha_loss], rtol=1e-4, atol=1e-6)
    assert result.loss == pytest.approx(actor + critic + alpha_loss, rel=1e-4) and agent.num_updates == 1
    w1 = agent.graph_executor.get_weights()
    _check_sgd_steps(w0, w1, actor_names, actor_grads)
    _check_sgd_steps(w0, w1, critic_names, critic_grads)
    # d alpha_loss / d log_alpha = -(mean log pi + target entropy).
    assert w1["agent/log-alpha"] - math.log(ALPHA) == pytest.approx(LR * (logp.mean() + H_TARGET), rel=1e-3)
    for k in (v for i in heads for v in _critic(i, TARGETS).values()):  # No sync was due.
        np.testing.assert_array_equal(w1[k], w0[k])


# --- Discrete actions: the numpy reference (expectations over pi, arXiv 1910.07207) ----------------------------

def _joint_log_pi(p, x, sizes):
    """log pi(a|x) [B, N] of independent categoricals per leaf, by enumerating the joint actions in
    row-major order (leaf k's logits: the action layer "action-adapter-k")."""
    h = np.tanh(x @ p["W1"] + p["b1"])
    leaves = [rnp.log_softmax(h @ p[f"Wa{k}"] + p[f"ba{k}"]) for k in range(len(sizes))]
    return np.stack([sum(leaves[k][:, a_k] for k, a_k in enumerate(joint))
                     for joint in itertools.product(*(range(n) for n in sizes))], axis=-1)


def _joint_actions(actions, sizes):
    """The taken joint action indices [B] (row-major over the leaves in flatten order)."""
    leaves = [actions[k] for k in sorted(actions)] if isinstance(actions, dict) else \
        list(actions) if isinstance(actions, tuple) else [actions]
    return np.ravel_multi_index(leaves, sizes)


def _discrete_losses(p, pt, batch, heads, alpha, target_entropy, sizes=(3,), weights=None):
    """(actor, critic, alpha, mean expected log pi, td errors [B]) of discrete SAC over the joint actions;
    y and the alpha loss's entropy term are constants."""
    s, s_next = batch["states"].astype(np.float64), batch["next_states"].astype(np.float64)

    def q(params, i, x):
        return np.tanh(x @ params[f"Wc{i}"] + params[f"bc{i}"]) @ params[f"Wq{i}"] + params[f"bq{i}"]

    log_pi = _joint_log_pi(p, s, sizes)
    actor, critic, alpha_loss, td = rnp.discrete_sac_losses(
        alpha, _joint_log_pi(p, s_next, sizes), tuple(q(pt, i, s_next) for i in heads),
        tuple(q(p, i, s) for i in heads), _joint_actions(batch["actions"], sizes), log_pi, batch["rewards"],
        batch["terminals"], GAMMA, target_entropy, weights)
    return actor.mean(), critic.mean(), alpha_loss.mean(), np.sum(np.exp(log_pi) * log_pi, -1).mean(), td


@pytest.mark.parametrize("action_space,double_q,weights", [
    (IntBox(3), True, None), (IntBox(3), False, None), (IntBox(3), True, WEIGHTS), (DICT_INT, True, None),
    (TUPLE_INT, False, WEIGHTS)], ids=["twin", "single", "twin-weighted", "dict-twin", "tuple-single-weighted"])
def test_discrete_update_matches_numpy(backend, action_space, double_q, weights):
    sizes = tuple(leaf.num_categories for leaf in (action_space.flatten().values()
                                                    if not isinstance(action_space, IntBox) else [action_space]))
    agent = _agent(backend, action_space, double_q=double_q)
    w0 = _set_weights(agent, seed=3)
    heads = [0, 1] if double_q else [0]
    actor_names = {**ACTOR, **{k: v for i in range(len(sizes)) for k, v in _adapter(i).items()}}
    critic_names = {k: v for i in heads for k, v in _critic(i).items()}
    p = {**_params(w0, actor_names), **_params(w0, critic_names)}
    pt = _params(w0, {k: v for i in heads for k, v in _critic(i, TARGETS).items()})
    batch = _batch(action_space, seed=4)
    if weights is not None:
        batch["importance_weights"] = weights
    reference = lambda q: _discrete_losses(q, pt, batch, heads, ALPHA, H_TARGET, sizes, weights)  # noqa: E731
    actor, critic, alpha_loss, expected_log_pi, _ = reference(p)
    out = agent.get_losses(batch)
    np.testing.assert_allclose([out.actor_loss, out.critic_loss, out.alpha_loss], [actor, critic, alpha_loss],
                               rtol=1e-4, atol=1e-6)
    actor_grads = _fd_gradient(lambda q: reference(q)[0], p, actor_names)
    critic_grads = _fd_gradient(lambda q: reference(q)[1], p, critic_names)

    result = agent.update(batch)
    np.testing.assert_allclose([result.actor_loss, result.critic_loss, result.alpha_loss],
                               [actor, critic, alpha_loss], rtol=1e-4, atol=1e-6)
    w1 = agent.graph_executor.get_weights()
    _check_sgd_steps(w0, w1, actor_names, actor_grads)
    _check_sgd_steps(w0, w1, critic_names, critic_grads)
    assert w1["agent/log-alpha"] - math.log(ALPHA) == pytest.approx(LR * (expected_log_pi + H_TARGET), rel=1e-4)
    assert agent.get_alpha() == pytest.approx(ALPHA * math.exp(LR * (expected_log_pi + H_TARGET)), rel=1e-4)


def test_container_q_values_are_indexed_by_joint_action(backend):
    """Q(s, .) [B, 6] of Dict(a=IntBox(3), b=IntBox(2)): column 2 * a + b; greedy acting takes the
    per-leaf argmax (the joint argmax of a factorized policy)."""
    agent = _agent(backend, DICT_INT)
    w = _set_weights(agent, seed=5)
    p = _params(w, {**ACTOR, **_adapter(0), **_adapter(1), **_critic(0)})
    states = np.random.RandomState(1).normal(size=(5, 2)).astype(np.float32)
    q = agent.get_q_values(states)[0]
    expected = np.tanh(states @ p["Wc0"] + p["bc0"]) @ p["Wq0"] + p["bq0"]
    np.testing.assert_allclose(q, expected, rtol=1e-5, atol=1e-6)
    greedy = agent.get_action(states, use_exploration=False)
    log_pi = _joint_log_pi(p, states.astype(np.float64), (3, 2))
    np.testing.assert_array_equal(2 * greedy["a"] + greedy["b"], np.argmax(log_pi, axis=-1))


def test_default_target_entropies():
    from rlgraph.agents.sac.networks import default_target_entropy
    assert default_target_entropy(BOX, "continuous") == -1.0
    assert default_target_entropy(DICT, "continuous") == -3.0  # 2 + 1 action elements.
    assert default_target_entropy(IntBox(4), "discrete") == pytest.approx(0.98 * math.log(4))
    assert default_target_entropy(DICT_INT, "discrete") == pytest.approx(0.98 * math.log(6))  # log 3 + log 2.


# --- Acting -------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("action_space", [BOX, IntBox(3), DICT, TUPLE, DICT_INT],
                         ids=["box", "intbox", "dict", "tuple", "dict-intbox"])
def test_build_and_act(backend, action_space):
    agent = _agent(backend, action_space)
    states = np.random.RandomState(0).normal(size=(64, 2)).astype(np.float32)
    sampled, greedy = agent.get_action(states), agent.get_action(states, use_exploration=False)
    batched = action_space.with_batch_rank()
    assert batched.contains(sampled) and batched.contains(greedy)
    # Greedy actions are the policy's mode (repeatable); exploration samples.
    assert all(np.array_equal(x, y) for x, y in zip(_leaves(greedy), _leaves(agent.get_action(states, use_exploration=False))))
    assert all(not np.array_equal(x, y) for x, y in zip(_leaves(sampled), _leaves(agent.get_action(states))))
    single = agent.get_action(states[0])
    assert action_space.contains(single)
    discrete = agent.action_mode == "discrete"
    q = agent.get_q_values(states[:5], None if discrete else _slice(greedy, 5))
    assert len(q) == 2 and q[0].shape == ({IntBox: (5, 3), Dict: (5, 6)}[type(action_space)] if discrete else (5,))
    with pytest.raises(RLGraphSpecError, match=r"get_q_values\(actions\)"):
        agent.get_q_values(states[:5], _slice(greedy, 5) if discrete else None)


def _leaves(actions):
    if isinstance(actions, (dict, tuple)):
        return list(actions.values()) if isinstance(actions, dict) else list(actions)
    return [actions]


def _slice(actions, n):
    if isinstance(actions, dict):
        return {k: v[:n] for k, v in actions.items()}
    return tuple(v[:n] for v in actions) if isinstance(actions, tuple) else actions[:n]


def test_warmup_random_steps_then_the_policy(backend):
    agent = _agent(backend, DICT, warmup_random_steps=3)
    _set_weights(agent, [2, 1])  # A nearly deterministic policy (std = e^-19).
    states = np.zeros((200, 2), np.float32)
    random, preprocessed = agent.get_action(states, extra_returns="preprocessed_states")
    np.testing.assert_array_equal(preprocessed, states)
    assert DICT.with_batch_rank().contains(random)
    assert np.std(random["a"]) > 0.4 and np.std(random["b"]) > 0.6  # Uniform on [-1, 1] and [0, 3].
    greedy = agent.get_action(states, use_exploration=False)  # Never random.
    assert np.std(greedy["b"]) < 1e-6
    for _ in range(3):
        agent.observe(states[0], agent.get_action(states[0]), None, 0.0, states[0], False)
    policy = agent.get_action(states)
    np.testing.assert_allclose(policy["b"], greedy["b"], atol=1e-5)


# --- Targets, temperature, iterations -----------------------------------------------------------------------------

def _targets(agent):
    return {k: v for k, v in agent.graph_executor.get_weights().items() if k.startswith(TARGETS)}


def _online(agent, targets):
    weights = agent.graph_executor.get_weights()
    return {k: weights[k.replace(TARGETS, CRITICS)] for k in targets}


def test_soft_target_update_after_the_step(backend):
    agent = _agent(backend, update_spec={"batch_size": B, "sync_interval": 0, "sync_tau": 0.3})
    _set_weights(agent, [1])  # Targets differ from the critics.
    t0 = _targets(agent)
    c0 = _online(agent, t0)
    agent.update(_batch(BOX))
    t1, c1 = _targets(agent), _online(agent, t0)
    for k in t0:  # Q' <- tau Q + (1 - tau) Q', with Q after its SGD step.
        assert not np.allclose(c1[k], c0[k], rtol=0, atol=1e-5), k
        np.testing.assert_allclose(t1[k], 0.3 * c1[k] + 0.7 * t0[k], rtol=1e-5, atol=1e-6, err_msg=k)


def test_sync_interval_counts_env_steps_and_every_iteration_can_sync(backend):
    lr0 = {"type": "sgd", "learning_rate": 0.0}  # Critics stay put: the targets' arithmetic is exact.
    agent = _agent(backend, value_function_optimizer_spec=lr0,
                   update_spec={"batch_size": B, "sync_interval": 3, "sync_tau": 0.5})
    _set_weights(agent, [1])
    t0 = _targets(agent)
    c = _online(agent, t0)
    state = np.zeros(2, np.float32)
    for _ in range(2):
        agent.observe(state, np.zeros(1, np.float32), None, 0.0, state, False)
    agent.update(_batch(BOX))  # 2 env steps since the last sync (at 0): not due.
    assert all(np.array_equal(_targets(agent)[k], t0[k]) for k in t0)
    agent.observe(state, np.zeros(1, np.float32), None, 0.0, state, False)
    agent.update(_batch(BOX))
    assert agent.last_sync_timestep == 3
    for k in t0:
        np.testing.assert_allclose(_targets(agent)[k], 0.5 * c[k] + 0.5 * t0[k], rtol=1e-6, atol=1e-7)

    agent = _agent(backend, value_function_optimizer_spec=lr0,
                   update_spec={"batch_size": B, "sync_interval": 0, "sync_tau": 0.5, "num_iterations": 3})
    _set_weights(agent, [1])
    agent.update(_batch(BOX))
    assert agent.num_updates == 3
    for k in t0:  # Three syncs: Q' = Q + 0.5^3 (Q'_0 - Q).
        np.testing.assert_allclose(_targets(agent)[k], c[k] + 0.125 * (t0[k] - c[k]), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("target_entropy,direction", [(5.0, 1), (-50.0, -1)])
def test_alpha_moves_towards_the_target_entropy(backend, target_entropy, direction):
    """A target above the policy's entropy raises alpha (more exploration), one below lowers it."""
    agent = _agent(backend, target_entropy=target_entropy)
    batch = _batch(BOX)
    alphas = [agent.get_alpha()]
    for _ in range(3):
        alphas.append(agent.update(batch).alpha)
    alphas.append(agent.get_alpha())
    assert all(direction * (b - a) > 0 for a, b in zip(alphas[1:], alphas[2:])), alphas


def test_fixed_alpha(backend):
    agent = _agent(backend, IntBox(3), target_entropy=None, initial_alpha=0.2)
    result = agent.update(_batch(IntBox(3)))
    result = agent.update(_batch(IntBox(3)))
    assert result.alpha_loss == 0.0 and result.alpha == pytest.approx(0.2) and agent.get_alpha() == pytest.approx(0.2)
    assert not any("alpha-optimizer" in k for k in agent.graph_executor.get_weights())


def test_ready_to_update_once_the_memory_holds_a_batch(backend):
    agent = _agent(backend)
    state = np.zeros(2, np.float32)
    for i in range(B):
        assert not agent.ready_to_update()
        agent.observe(state, np.zeros(1, np.float32), None, 1.0, state, i == B - 1)
    assert agent.ready_to_update() and agent.memory_size() == B
    result = agent.update()
    assert np.isfinite(result.loss) and agent.num_updates == 1


# --- Prioritized replay ---------------------------------------------------------------------------------------------

PRIORITIZED = ["prioritized-replay", "mem-prioritized-replay"]


def _priorities(agent, n):
    """The stored priorities p_i^alpha of records 0..n-1."""
    if agent.replay.in_graph:
        memory = agent.root_component.memory
        return agent.graph_executor.get_weights()["agent/prioritized-replay/sum_tree"][memory.capacity_pow2:][:n]
    return agent.replay.memory.tree.get(np.arange(n))


def _observe_batch(agent, batch):
    for i in range(B):
        actions = {k: v[i] for k, v in batch["actions"].items()} if isinstance(batch["actions"], dict) \
            else batch["actions"][i]
        agent.observe(batch["states"][i], actions, None, batch["rewards"][i], batch["next_states"][i],
                      batch["terminals"][i])


@pytest.mark.parametrize("memory_type", PRIORITIZED)
def test_priorities_become_the_mean_absolute_td_errors(backend, memory_type):
    """4 records of priority 1 and a batch of 4: stratified sampling draws each record once, and
    after the update record i has priority (mean_i |Q_i(s, a) - y| + epsilon)^alpha, from the
    critics before the step (numpy reference)."""
    agent = _agent(backend, DICT_INT, memory_spec={"type": memory_type, "capacity": 8, "alpha": 0.5, "beta": 1.0})
    w0 = _set_weights(agent, seed=3)
    batch = _batch(DICT_INT, seed=4)
    _observe_batch(agent, batch)
    np.testing.assert_array_equal(_priorities(agent, B), np.ones(B))
    heads = [0, 1]
    p = _params(w0, {**ACTOR, **_adapter(0), **_adapter(1), **{k: v for i in heads for k, v in _critic(i).items()}})
    pt = _params(w0, {k: v for i in heads for k, v in _critic(i, TARGETS).items()})
    actor, critic, _, _, td = _discrete_losses(p, pt, batch, heads, ALPHA, H_TARGET, (3, 2))
    result = agent.update()
    # All weights are 1 (equal priorities): the losses are the unweighted ones.
    np.testing.assert_allclose([result.actor_loss, result.critic_loss], [actor, critic], rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(_priorities(agent, B), (td + 1e-6) ** 0.5, rtol=1e-5)
    assert len(set(np.round(td, 6))) == B  # (Distinct errors: every record's priority is checked.)


def test_the_numpy_memory_weights_its_samples(backend):
    """The second update samples by the new priorities: its critic loss is the mean of w_i times the
    items' losses, w_i = (p_i / p_min)^-beta of the sample (predicted from a copy of the memory)."""
    agent = _agent(backend, IntBox(3), memory_spec={"type": "mem-prioritized-replay", "capacity": 8, "alpha": 1.0,
                                                    "beta": 1.0},
                   value_function_optimizer_spec={"type": "sgd", "learning_rate": 0.0})  # Critics stay put.
    w0 = _set_weights(agent, seed=3)
    batch = _batch(IntBox(3), seed=4)
    _observe_batch(agent, batch)
    agent.update()
    records, _, weights = copy.deepcopy(agent.replay.memory).get_records(B)
    assert len(set(weights.tolist())) > 1  # Unequal priorities now.
    w1 = agent.graph_executor.get_weights()
    heads = [0, 1]
    p = _params(w1, {**ACTOR, **_adapter(0), **{k: v for i in heads for k, v in _critic(i).items()}})
    pt = _params(w0, {k: v for i in heads for k, v in _critic(i, TARGETS).items()})
    actor, critic, alpha_loss, _, _ = _discrete_losses(p, pt, records, heads, agent.get_alpha(), H_TARGET,
                                                       weights=weights)
    result = agent.update()
    np.testing.assert_allclose([result.actor_loss, result.critic_loss, result.alpha_loss],
                               [actor, critic, alpha_loss], rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("case,pattern", [
    (np.array([1.0, 1.0, -1.0, 1.0], np.float32), r"importance_weights.*>= 0"),
    (np.ones(3, np.float32), r"importance_weights.*shape \(3,\)"),
])
def test_bad_importance_weights_are_refused(backend, case, pattern):
    agent = _agent(backend, IntBox(3))
    with pytest.raises(RLGraphSpaceError, match=pattern):
        agent.update(dict(_batch(IntBox(3)), importance_weights=case))
    assert agent.num_updates == 0


# --- Bad inputs ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case,error,pattern", [
    ("states", RLGraphSpaceError, r"update\(batch\)\['states'\].*shape \(4, 3\)"),
    ("rewards", RLGraphNonFiniteError, r"\['rewards'\].*nan"),
    ("next_states", RLGraphNonFiniteError, r"\['next_states'\].*inf"),
    ("actions", RLGraphSpaceError, r"\['actions'\]"),
    ("missing", RLGraphError, r"lacks \['next_states'\]"),
])
def test_bad_batches_are_refused_before_updating(backend, case, error, pattern):
    agent = _agent(backend, IntBox(3))
    batch = _batch(IntBox(3))
    bad = {"states": dict(batch, states=np.zeros((B, 3), np.float32)),
           "rewards": dict(batch, rewards=np.array([0.0, np.nan, 0.0, 0.0], np.float32)),
           "next_states": dict(batch, next_states=np.full((B, 2), np.inf, np.float32)),
           "actions": dict(batch, actions=np.array([0, 1, 3, 0])),  # 3 is outside IntBox(3).
           "missing": {k: v for k, v in batch.items() if k != "next_states"}}[case]
    before = agent.graph_executor.get_weights()
    with pytest.raises(error, match=pattern):
        agent.update(bad)
    with pytest.raises(error, match=pattern.replace("update", "get_losses")):
        agent.get_losses(bad)
    assert agent.num_updates == 0
    for k, v in agent.graph_executor.get_weights().items():
        np.testing.assert_array_equal(v, before[k])


def test_wrong_state_shapes_when_acting(backend):
    agent = _agent(backend)
    with pytest.raises(RLGraphSpaceError, match=r"get_action\(states\)"):
        agent.get_action(np.zeros((3, 5), np.float32))


@pytest.mark.parametrize("kwargs,pattern", [
    (dict(initial_alpha=0.0), r"initial_alpha"),
    (dict(target_entropy="high"), r"target_entropy"),
    (dict(double_q="yes"), r"double_q"),
    (dict(warmup_random_steps=-1), r"warmup_random_steps"),
    (dict(gumbel_softmax_temperature=0), r"gumbel_softmax_temperature"),
    (dict(memory_spec={"type": "ring-buffer", "capacity": 16}), r"memory_spec.*prioritized-replay"),
    (dict(memory_spec={"type": "mem-prioritized-replay", "alpah": 0.5}), r"memory_spec.*did you mean 'alpha'"),
    (dict(update_spec={"num_iteration": 2}), r"update_spec.*did you mean 'num_iterations'"),
    (dict(update_spec={"num_iterations": 0}), r"update_spec.num_iterations"),
    (dict(update_spec={"sync_tau": 0.0}), r"update_spec.sync_tau"),
    (dict(value_function_sync_spec={"sync_tua": 0.1}), r"value_function_sync_spec.*did you mean 'sync_tau'"),
    (dict(value_function_sync_spec={"sync_tau": 0.1}, update_spec={"sync_tau": 0.2}),
     r"value_function_sync_spec.sync_tau and update_spec.sync_tau differ"),
    (dict(value_function_spec=[]), r"value_function_spec"),
    (dict(network_spec=None), r"network_spec"),
    (dict(action_space=Dict(a=IntBox(2), b=FloatBox(low=-1.0, high=1.0))), r"action_space/a.*IntBox"),
    (dict(action_space=Dict(a=IntBox(100), b=IntBox(100))), r"too many joint discrete actions.*10000"),
    (dict(action_space=Dict(a=IntBox(2), b=IntBox(3, shape=(2,)))), r"action_space/b.*one discrete action per IntBox"),
    (dict(action_space=IntBox(3, shape=(2,))), r"one discrete action"),
    (dict(action_space=BoolBox()), r"action_space"),
    (dict(action_space=FloatBox(shape=(1,))), r"bounded"),
])
def test_constructor_errors_name_the_argument(kwargs, pattern):
    with pytest.raises(RLGraphSpecError, match=pattern):
        _agent("pytorch", **kwargs)


def test_unknown_constructor_key_names_the_closest_match():
    with pytest.raises(RLGraphSpecError, match=r"'discont'.*did you mean 'discount'"):
        Agent.from_spec({"type": "sac", "discont": 0.9, "state_space": FloatBox(shape=(2,)), "action_space": BOX,
                         "network_spec": [{"type": "dense", "units": 3}]}, backend="pytorch")


# --- Checkpoints, configs -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("memory_type", ["replay-memory", "mem-prioritized-replay"])
def test_checkpoint_round_trip(backend, tmp_path, memory_type):
    memory_spec = {"type": memory_type, "capacity": 16}
    agent = _agent(backend, IntBox(3), optimizer_spec={"type": "adam", "learning_rate": 0.01},
                   alpha_optimizer_spec={"type": "adam", "learning_rate": 0.1}, memory_spec=memory_spec)
    rng = np.random.RandomState(0)
    for i in range(10):
        agent.observe(rng.normal(size=2).astype(np.float32), i % 3, None, 1.0, rng.normal(size=2).astype(np.float32),
                      i % 4 == 3)
    for _ in range(3):
        agent.update()
    assert agent.get_alpha() != pytest.approx(ALPHA)
    path = agent.store_model(str(tmp_path / "ckpt"), add_timestep=False)
    batch = _batch(IntBox(3))
    expected, weights = agent.get_losses(batch), agent.graph_executor.get_weights()

    other = _agent(backend, IntBox(3), optimizer_spec={"type": "adam", "learning_rate": 0.01},
                   alpha_optimizer_spec={"type": "adam", "learning_rate": 0.1}, execution_spec={"seed": 7},
                   memory_spec=memory_spec)
    other.load_model(path)
    restored = other.graph_executor.get_weights()
    assert sorted(restored) == sorted(weights) and "agent/log-alpha" in restored
    for k, v in weights.items():  # Actor, critics, targets, log-alpha, optimizer slots, memory.
        np.testing.assert_array_equal(restored[k], v, err_msg=k)
    assert (other.timesteps, other.num_updates, other.memory_size()) == (10, 3, agent.memory_size())
    assert other.get_alpha() == agent.get_alpha()
    assert other.get_losses(batch) == expected  # (Discrete: no sampling in the losses.)
    if memory_type == "mem-prioritized-replay":  # The numpy memory and its priorities, from their file.
        np.testing.assert_array_equal(_priorities(other, 10), _priorities(agent, 10))
        assert len(set(_priorities(agent, 10).tolist())) > 1
    states = rng.normal(size=(5, 2)).astype(np.float32)
    np.testing.assert_array_equal(other.get_action(states, use_exploration=False),
                                  agent.get_action(states, use_exploration=False))


def _original_pendulum_config():
    """The keys and values of the original RLgraph's tests/configs/sac_agent_for_pendulum.json."""
    hidden = lambda prefix: [{"type": "dense", "units": 256, "activation": "relu", "scope": f"{prefix}hidden{i}"}  # noqa: E731
                             for i in (1, 2)]
    return {"type": "sac", "discount": 0.99, "initial_alpha": 1.0, "double_q": True,
            "memory_spec": {"type": "replay", "capacity": 10000}, "preprocessing_spec": [],
            "observe_spec": {"buffer_size": 200}, "execution_spec": {"seed": 15},
            "network_spec": hidden(""), "value_function_spec": hidden("vf-"),
            "update_spec": {"do_updates": True, "update_mode": "time_steps", "update_interval": 1,
                            "sync_interval": 1, "sync_tau": 5e-3, "batch_size": 256, "num_iterations": 1},
            "optimizer_spec": {"type": "adam", "learning_rate": 3e-4},
            "value_function_optimizer_spec": {"type": "adam", "learning_rate": 3e-4}}


def test_the_original_configs_keys_are_accepted(backend):
    agent = Agent.from_spec(_original_pendulum_config(), state_space=FloatBox(low=-8.0, high=8.0, shape=(3,)),
                            action_space=FloatBox(low=-2.0, high=2.0, shape=(1,)), backend=backend)
    assert isinstance(agent, SACAgent) and agent.double_q and agent.target_entropy == -1.0
    assert agent.update_spec["sync_tau"] == 0.005 and agent.update_spec["num_iterations"] == 1
    assert agent.root_component.memory.capacity == 10000 and agent.get_alpha() == 1.0
    assert "agent/critics/critic-1/neural-network/vf-hidden2/kernel" in agent.graph_executor.get_weights()
    # The original's discrete-action keys, and its value_function_sync_spec.
    discrete = Agent.from_spec({"type": "sac-agent", "double_q": False, "gumbel_softmax_temperature": 1.0,
                                "initial_alpha": 0.2, "network_spec": [{"type": "dense", "units": 8}],
                                "value_function_sync_spec": {"sync_interval": 4, "sync_tau": 0.05},
                                "update_spec": {"batch_size": 8}},
                               state_space=FloatBox(shape=(4,)), action_space=IntBox(2), backend=backend)
    assert (discrete.update_spec["sync_interval"], discrete.update_spec["sync_tau"]) == (4, 0.05)
    assert len(discrete.root_component.critic_list) == 1
    assert discrete.target_entropy == pytest.approx(0.98 * math.log(2))


def _original_container_config():
    """The original RLgraph's tests/configs/sac_agent_for_2x2_gridworld_with_container_actions.json."""
    return {"type": "sac", "discount": 0.99, "initial_alpha": 0.2, "gumbel_softmax_temperature": 1.0, "double_q": False,
            "memory_spec": {"type": "replay", "capacity": 64},
            "preprocessing_spec": [{"type": "convert-type", "to_dtype": "float32"}],
            "network_spec": [{"type": "dense", "units": 32, "activation": "relu", "scope": "hidden1"}],
            "value_function_spec": [{"type": "dense", "units": 32, "activation": "relu", "scope": "vf-hidden1"}],
            "update_spec": {"update_mode": "time_steps", "do_updates": True, "update_interval": 1, "sync_interval": 1,
                            "sync_tau": 0.005, "batch_size": 32, "num_iterations": 1},
            "optimizer_spec": {"type": "adam", "learning_rate": 0.0002},
            "value_function_optimizer_spec": {"type": "adam", "learning_rate": 0.0004}}


def test_the_original_container_and_prioritized_configs_run(backend):
    from rlgraph.components.memories.prioritized_replay import PrioritizedReplay
    from rlgraph.environments import GridWorld
    from rlgraph.execution import SingleThreadedWorker
    env_spec = {"type": "grid-world", "world": "2x2", "action_type": "ftj", "state_representation": "xy+orientation"}
    env = GridWorld("2x2", action_type="ftj", state_representation="xy+orientation")
    for memory_spec in (None, {"type": "prioritized_replay", "capacity": 128}):  # The second: ray_sac_pong_test's.
        config = _original_container_config()
        if memory_spec is not None:
            config["memory_spec"] = memory_spec
        agent = Agent.from_spec(config, state_space=env.state_space, action_space=env.action_space, backend=backend)
        assert agent.action_mode == "discrete" and agent.target_entropy == pytest.approx(0.98 * math.log(3 * 2 * 3))
        assert isinstance(agent.root_component.memory, PrioritizedReplay) == (memory_spec is not None)
        stats = SingleThreadedWorker(agent, env_spec, seed=1).execute_timesteps(60)
        assert stats["timesteps_executed"] == 60 and stats["num_updates"] > 0 and np.isfinite(agent.get_alpha())
        assert agent.get_q_values(np.zeros((2, 3), np.int32))[0].shape == (2, 18)
        agent.terminate()
