"""observe_spec.normalize_rewards: the scaled rewards against SB3's RunningMeanStd, in observe's two
paths, per environment, and through a checkpoint."""
import numpy as np
import pytest

from rlgraph.agents import Agent
from rlgraph.agents.reward_scaling import RewardScaler
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphSpecError

SPEC = {"gamma": 0.9, "clip": 5.0}


def _reference(rewards, ends, gamma=0.9, clip=5.0, epsilon=1e-8):
    """SB3's VecNormalize reward path for one env, with its own RunningMeanStd."""
    from stable_baselines3.common.running_mean_std import RunningMeanStd
    rms, running, out = RunningMeanStd(shape=()), 0.0, []
    for reward, end in zip(rewards, ends):
        running = running * gamma + reward
        rms.update(np.array([running]))
        out.append(np.clip(reward / np.sqrt(rms.var + epsilon), -clip, clip))
        if end:
            running = 0.0
    return np.array(out)


def test_scaled_rewards_equal_sb3s_running_mean_std():
    pytest.importorskip("stable_baselines3")
    rng = np.random.RandomState(0)
    rewards = rng.randn(300) * 3.0 + 1.0
    ends = rng.rand(300) < 0.05
    scaler = RewardScaler(**SPEC)
    ours = np.concatenate([scaler.scale("e", rewards[:120], ends[:120]), scaler.scale("e", rewards[120:], ends[120:])])
    np.testing.assert_allclose(ours, _reference(rewards, ends), rtol=1e-10, atol=1e-12)
    assert np.abs(ours).max() <= 5.0


def _agent(backend, **observe):
    return Agent.from_spec({"type": "dqn", "backend": backend,
                            "network_spec": [{"type": "dense", "units": 8, "scope": "hidden"}],
                            "memory_spec": {"type": "replay-memory", "capacity": 64},
                            "observe_spec": dict({"buffer_size": 50, "normalize_rewards": SPEC}, **observe),
                            "execution_spec": {"seed": 1}},
                           state_space={"type": "float-box", "shape": (2,)}, action_space={"type": "int-box", "high": 2})


def _observe_stream(agent, rng, steps):
    """Two envs, interleaved one transition at a time; returns env id -> (rewards, ends) observed."""
    seen = {0: ([], []), 1: ([], [])}
    for t in range(steps):
        env = t % 2
        reward, terminal = float(rng.randn() * 2.0), bool(rng.rand() < 0.1) and t < steps - 4
        state = rng.randn(2).astype(np.float32)
        agent.observe(state, np.int32(rng.randint(2)), None, reward, state, terminal, env_id=env)
        seen[env][0].append(reward)
        seen[env][1].append(terminal)
    return seen


def test_observe_scales_each_environments_rewards(backend):
    agent = _agent(backend)
    seen = _observe_stream(agent, np.random.RandomState(1), 40)
    # The reference: one scaler fed the same interleaved stream (statistics pooled over the envs).
    reference = RewardScaler(**SPEC)
    expected = {0: [], 1: []}
    for t in range(40):
        env = t % 2
        rewards, ends = seen[env]
        expected[env].append(float(reference.scale(env, np.array([rewards[t // 2]]), np.array([ends[t // 2]]))[0]))
    for env in (0, 1):
        # What is still buffered is the tail of each env's stream after its last episode end.
        buffered = [tr.reward for tr in agent.buffers.buffers.get(env, [])]
        assert buffered and buffered == pytest.approx(expected[env][-len(buffered):], rel=1e-12)
        assert buffered != pytest.approx(seen[env][0][-len(buffered):])  # (They were scaled.)
    # The batched path: a time-ordered batch with an episode end inside, then truncated at its end.
    rewards = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    terminals = np.array([False, True, False, False])
    states = np.zeros((4, 2), np.float32)
    agent.observe(states, np.zeros(4, np.int32), None, rewards, states, terminals, env_id="batch", truncated=True)
    check = RewardScaler(**SPEC)
    check.count, check.mean, check.var = reference.count, reference.mean, reference.var
    scaled = check.scale("batch", rewards, np.array([False, True, False, True]))
    np.testing.assert_allclose(agent.reward_scaler.returns["batch"], 0.0)  # Truncated: the return restarts.
    assert (agent.reward_scaler.count, agent.reward_scaler.mean) == pytest.approx((check.count, check.mean))
    assert scaled.dtype == np.float32
    agent.terminate()


def test_checkpoint_keeps_the_statistics_and_running_returns(backend, tmp_path):
    agent = _agent(backend)
    _observe_stream(agent, np.random.RandomState(2), 30)
    agent.store_model(str(tmp_path / "ckpt"))
    twin = _agent(backend)
    twin.load_model(str(tmp_path / "ckpt"))
    a, b = agent.reward_scaler, twin.reward_scaler
    assert (a.count, a.mean, a.var, a.returns) == (b.count, b.mean, b.var, b.returns)
    assert a.returns[0] != 0.0 or a.returns[1] != 0.0
    # Both go on scaling identically.
    ra = _observe_stream(agent, np.random.RandomState(3), 6)
    rb = _observe_stream(twin, np.random.RandomState(3), 6)
    assert ra == rb and [t.reward for t in agent.buffers.buffers[0]] == [t.reward for t in twin.buffers.buffers[0]]
    agent.terminate()
    twin.terminate()


def test_damaged_state_and_bad_specs():
    scaler = RewardScaler()
    decode = lambda encoded, where: encoded["int"]  # noqa: E731
    good = scaler.state(lambda env_id: {"int": env_id})
    assert scaler.checked_state(good, decode, "here")["count"] == pytest.approx(1e-4)
    for damage in ({"var": -1.0}, {"mean": float("nan")}, {"count": 0.0}, {"returns": [{"env_id": {"int": 1}}]}):
        with pytest.raises(RLGraphCheckpointError, match="reward scaler|running return"):
            scaler.checked_state(dict(good, **damage), decode, "here")
    with pytest.raises(RLGraphSpecError, match="normalize_rewards must be"):
        RewardScaler.from_spec("yes", "DQNAgent")
    with pytest.raises(RLGraphSpecError, match=r"normalize_rewards\.gamma"):
        RewardScaler.from_spec({"gamma": 2.0}, "DQNAgent")
    with pytest.raises(RLGraphSpecError, match="normalize_rewards must be"):
        RewardScaler.from_spec({"gama": 0.9}, "DQNAgent")
    assert RewardScaler.from_spec(False, "x") is None and RewardScaler.from_spec(True, "x").clip == 10.0
