"""Ape-X without Ray: ray_spec parsing, sample workers, replay shards, ActionRepeatEnv and the
`ApexExecutor` in inline mode (actors as plain objects in this process, deterministic).

Expected numbers come from worked calculations in the comments or from the numpy references
(`rlgraph.utils.numpy`). Executor tests run GridWorld "2x2" with one-hot states and a dense layer of
16 units; the fault and checkpoint tests run on PyTorch only (the executor's bookkeeping does not
depend on the backend; the backend tests above them cover both).

"""
import copy
import json
import logging
import os
import shutil

import numpy as np
import pytest

from rlgraph.agents import ApexAgent, DQNAgent
from rlgraph.agents.records import RECORD_KEYS
from rlgraph.backend_system import is_backend_installed
from rlgraph.environments import ActionRepeatEnv, Environment
from rlgraph.execution import SingleThreadedWorker
from rlgraph.execution.ray import ApexExecutor, ApexSampleWorker, ReplayShard
from rlgraph.execution.ray import specs as ray_specs
from rlgraph.execution.ray.apex.sample_worker import RecordCollector, worker_agent_config, worker_epsilon
from rlgraph.execution.ray.specs import (APEX_REPLAY_SPEC_DEFAULTS, EXECUTOR_SPEC_DEFAULTS, MEMORY_SPEC_DEFAULTS,
                                         WORKER_SPEC_DEFAULTS, split_ray_spec)
from rlgraph.spaces import FloatBox, IntBox
from rlgraph.utils import numpy as rnp
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphDistributedError, RLGraphSpecError

GRID = {"type": "grid-world", "world": "2x2"}
ONE_HOT_2x2 = [{"type": "reshape", "flatten": True, "flatten_categories": 4}]
NET = [{"type": "dense", "units": 16, "activation": "relu"}]
ROUND = {"report_interval": 20, "report_interval_min_seconds": 0}


@pytest.fixture
def pytorch():
    """The backend of the single-backend tests."""
    if not is_backend_installed("pytorch"):
        pytest.skip(reason="PyTorch is not installed")
    return "pytorch"


def _config(backend, executor=None, worker=None, replay=None, update=None, **agent):
    """An inline Ape-X config: 2 workers x 10 env steps per task (one round = 20 env steps), one shard.

    Learning starts once the shard holds 16 records; then 1 update per 4 env steps (inline cadence).
    """
    executor_spec = dict(mode="inline", num_sample_workers=2, num_worker_samples=10, weight_sync_steps=20)
    replay_spec = dict(memory_spec={"capacity": 1000}, min_sample_memory_size=16)
    config = {"type": "apex", "backend": backend, "discount": 0.9, "n_step": 1, "network_spec": NET,
              "preprocessing_spec": ONE_HOT_2x2,
              "update_spec": dict({"batch_size": 8, "sync_interval": 16, "update_interval": 4}, **(update or {})),
              "execution_spec": {"seed": 3, "ray_spec": {"executor_spec": dict(executor_spec, **(executor or {})),
                                                         "worker_spec": dict(worker or {}),
                                                         "apex_replay_spec": dict(replay_spec, **(replay or {}))}}}
    config.update(agent)
    return config


def _executor(config):
    return ApexExecutor(GRID, config)


def _run(executor, num_timesteps):
    return executor.execute_workload(dict(ROUND, num_timesteps=num_timesteps))


def _log_samples(executor):
    """Wraps each inline worker's `sample` to log its metadata in call order (the executor calls
    `sample` of worker 0, then 1 when a workload starts, then again right after each result)."""
    log = []
    for worker in executor.workers:
        obj = worker.handle.obj
        original = obj.sample

        def sample(num_samples, _original=original):
            batch, meta = _original(num_samples)
            log.append(meta)
            return batch, meta
        obj.sample = sample
    return log


def _in_flight(log, num_workers):
    """(metas the executor has processed, the last task of each worker, still in flight)."""
    return log[:-num_workers], log[-num_workers:]


def _weights_equal(a, b):
    return sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)


class _StepRewardEnv(Environment):
    """Deterministic: state [t]; reward r_t = (-1)^t (t + 0.5 + 0.25 a_t); terminal after `length` steps.

    Rewards differ in every step and with the action (so a misaligned fold shows) and alternate in
    sign, with |r| <= 1 only at t = 0 (so clipping changes all but the first of each episode).
    """

    def __init__(self, length=5, seed=None):
        self.length = length
        self.t = 0
        self.total_steps = 0
        super().__init__(FloatBox(shape=(1,)), IntBox(2), seed=seed)

    def reset(self):
        self.t = 0
        return np.array([0.0], np.float32)

    def step(self, actions):
        reward = (-1.0) ** self.t * (self.t + 0.5 + 0.25 * int(actions))
        self.t += 1
        self.total_steps += 1
        return np.array([float(self.t)], np.float32), reward, self.t >= self.length, {}


def _long_episodes():
    return _StepRewardEnv(length=1000)


# --- ray_spec ---------------------------------------------------------------------------------------


def _ray_config(**sections):
    return {"type": "apex", "n_step": 3, "discount": 0.9, "execution_spec": {"seed": 4, "ray_spec": sections}}


def test_min_sample_memory_size_above_the_capacity_is_refused():
    config = _ray_config(apex_replay_spec={"memory_spec": {"capacity": 64}, "min_sample_memory_size": 65})
    with pytest.raises(RLGraphSpecError, match="min_sample_memory_size") as info:
        split_ray_spec(config)
    assert "do_updates" in info.value.hint


def test_split_ray_spec_fills_defaults_and_leaves_the_input_alone():
    config = _ray_config(executor_spec={"num_sample_workers": 4, "mode": "inline"},
                         worker_spec={"execution_spec": {"torch_num_threads": 2}},
                         apex_replay_spec={"memory_spec": {"capacity": 64, "alpha": 0.5}})
    original = copy.deepcopy(config)
    agent_config, spec = split_ray_spec(config)
    assert config == original  # Not mutated (nested dicts included).
    assert agent_config == {"type": "apex", "n_step": 3, "discount": 0.9, "execution_spec": {"seed": 4}}
    assert sorted(spec) == ["apex_replay_spec", "executor_spec", "worker_spec"]
    assert spec["executor_spec"] == dict(EXECUTOR_SPEC_DEFAULTS, num_sample_workers=4, mode="inline")
    # n_step_adjustment None -> the agent's n_step; the worker's execution_spec overrides are kept.
    assert spec["worker_spec"] == dict(WORKER_SPEC_DEFAULTS, n_step_adjustment=3,
                                       execution_spec={"torch_num_threads": 2})
    memory = dict(MEMORY_SPEC_DEFAULTS, capacity=64, alpha=0.5)
    del memory["type"]  # Checked (a prioritized memory) and dropped: shards are always prioritized.
    # min_sample_memory_size None -> 1000, but at most the capacity (64 here).
    assert spec["apex_replay_spec"] == dict(APEX_REPLAY_SPEC_DEFAULTS, memory_spec=memory, min_sample_memory_size=64)
    # The returned sections are copies: changing them leaves the input and the defaults alone.
    spec["worker_spec"]["execution_spec"]["torch_num_threads"] = 8
    spec["executor_spec"]["num_sample_workers"] = 9
    assert config == original and EXECUTOR_SPEC_DEFAULTS["num_sample_workers"] == 2


def test_split_ray_spec_without_ray_spec_gives_defaults():
    agent_config, spec = split_ray_spec({"type": "apex"})
    assert agent_config == {"type": "apex", "execution_spec": {}}
    assert spec["executor_spec"] == EXECUTOR_SPEC_DEFAULTS
    assert spec["worker_spec"]["n_step_adjustment"] == 1


@pytest.mark.parametrize("sections, typo, closest", [
    ({"executor_spec": {"num_sample_worker": 3}}, "num_sample_worker", "num_sample_workers"),
    ({"worker_spec": {"worker_frame_skp": 2}}, "worker_frame_skp", "worker_frame_skip"),
    ({"apex_replay_spec": {"min_sample_memory": 10}}, "min_sample_memory", "min_sample_memory_size"),
    ({"executor_specs": {}}, "executor_specs", "executor_spec"),
])
def test_split_ray_spec_unknown_key_names_the_closest_key(sections, typo, closest):
    with pytest.raises(RLGraphSpecError) as info:
        split_ray_spec(_ray_config(**sections))
    message = str(info.value)
    assert typo in message and f"did you mean '{closest}'?" in message


@pytest.mark.parametrize("sections, key", [
    ({"executor_spec": {"num_sample_workers": -1}}, "num_sample_workers"),
    ({"executor_spec": {"num_replay_workers": 0}}, "num_replay_workers"),
    ({"executor_spec": {"mode": "cluster"}}, "mode"),
    ({"executor_spec": {"num_cpus_per_worker": -0.5}}, "num_cpus_per_worker"),
    ({"executor_spec": {"max_num_worker_restarts": -1}}, "max_num_worker_restarts"),
    ({"worker_spec": {"worker_frame_skip": 0}}, "worker_frame_skip"),
    ({"worker_spec": {"n_step_adjustment": 2}}, "n_step_adjustment"),  # The agent's n_step is 3.
    ({"worker_spec": {"sample_exploration": True, "ray_constant_exploration": True}}, "worker_spec"),
    ({"apex_replay_spec": {"memory_spec": {"type": "replay-memory"}}}, "memory_spec.type"),
    ({"apex_replay_spec": {"snapshot_interval": -5}}, "snapshot_interval"),
])
def test_split_ray_spec_bad_values_name_the_key(sections, key):
    with pytest.raises(RLGraphSpecError) as info:
        split_ray_spec(_ray_config(**sections))
    assert key in str(info.value)


def test_n_step_adjustment_zero_means_one():
    config = _ray_config(worker_spec={"n_step_adjustment": 0})
    config["n_step"] = 1
    assert split_ray_spec(config)[1]["worker_spec"]["n_step_adjustment"] == 1


def test_obsolete_keys_are_accepted_with_one_warning_each(caplog, monkeypatch):
    monkeypatch.setattr(ray_specs, "_warned", set())  # (Warnings are once per process.)
    config = _ray_config(worker_spec={"num_background_envs": 2,
                                      "execution_spec": {"session_config": {"a": 1}, "seed": 7}})
    with caplog.at_level(logging.WARNING, logger=ray_specs.__name__):
        _, spec = split_ray_spec(config)
        _, again = split_ray_spec(config)
    assert spec == again
    assert spec["worker_spec"]["execution_spec"] == {"seed": 7}  # The obsolete override is dropped.
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert sum("worker_spec.num_background_envs" in w for w in warnings) == 1
    assert sum("worker_spec.execution_spec.session_config" in w for w in warnings) == 1


# --- Worker exploration -----------------------------------------------------------------------------


def test_ray_constant_exploration_epsilons():
    spec = dict(WORKER_SPEC_DEFAULTS, ray_constant_exploration=True)
    rng = np.random.RandomState(0)
    # Ape-X: 0.4 ** (1 + 7 i / (N - 1)); N = 4: exponents 1, 1 + 7/3, 1 + 14/3, 8.
    expected = [0.4, 0.4 ** (10 / 3), 0.4 ** (17 / 3), 0.4 ** 8]
    got = [worker_epsilon(spec, i, 4, rng, 1.0) for i in range(4)]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert got[-1] == pytest.approx(0.00065536)
    assert worker_epsilon(spec, 0, 1, rng, 1.0) == 0.4  # One worker.
    assert worker_epsilon(WORKER_SPEC_DEFAULTS, 0, 4, rng, 1.0) is None  # The config's schedule stays.
    # A worker's agent config acts with that constant epsilon and its own seed (seed + 1 + i).
    agent_config, ray_spec = split_ray_spec(_ray_config(worker_spec={"ray_constant_exploration": True}))
    for i in range(4):
        config = worker_agent_config(agent_config, ray_spec["worker_spec"], i, 4)
        assert config["exploration_spec"]["epsilon_spec"]["decay_spec"] == {"type": "constant", "value": expected[i]}
        assert config["execution_spec"]["seed"] == 4 + 1 + i
        assert config["update_spec"]["do_updates"] is False and config["n_step"] == 3


def _sampled_start_epsilons(num_workers):
    decay = {"type": "linear-decay", "from": 0.8, "to": 0.1}
    config = _ray_config(worker_spec={"sample_exploration": True, "exploration_min_value": 0.2})
    config["exploration_spec"] = {"epsilon_spec": {"decay_spec": decay}}
    agent_config, spec = split_ray_spec(config)
    return [worker_agent_config(agent_config, spec["worker_spec"], i, num_workers)
            ["exploration_spec"]["epsilon_spec"]["decay_spec"]["from"] for i in range(num_workers)]


def test_sample_exploration_start_epsilons_lie_in_range():
    epsilons = _sampled_start_epsilons(4)
    assert all(0.2 <= e < 0.8 for e in epsilons)


def test_sample_exploration_start_epsilons_differ_between_workers():
    assert len(set(_sampled_start_epsilons(4))) == 4


# --- ActionRepeatEnv and reward clipping ------------------------------------------------------------


def test_action_repeat_sums_rewards_and_stops_at_terminal():
    env = Environment.from_spec({"type": "action-repeat", "repeat": 3,
                                 "env_spec": {"type": "grid-world", "world": "2x2", "reward_function": "rich"}})
    assert isinstance(env, ActionRepeatEnv) and env.reset() == 0
    # "down" thrice: into the free field (0.0 - 0.1), then twice against the border (-0.1 each).
    state, reward, terminal, _ = env.step(2)
    assert (state, terminal, env.env._steps) == (2, False, 3)
    assert reward == pytest.approx(-0.3)
    # "right" enters the goal at the first inner step (1.0 - 0.1); the other two repeats are skipped.
    state, reward, terminal, info = env.step(1)
    assert (state, terminal, info["field"], env.env._steps) == (3, True, "G", 4)
    assert reward == pytest.approx(0.9)
    for bad in (0, True, 1.5):
        with pytest.raises(RLGraphSpecError, match="repeat"):
            ActionRepeatEnv(GRID, repeat=bad)


def test_single_threaded_worker_clips_observed_rewards_only(pytorch):
    agent = DQNAgent(state_space=FloatBox(shape=(1,)), action_space=IntBox(2), network_spec=NET,
                     update_spec={"do_updates": False}, execution_spec={"seed": 1}, backend=pytorch)
    agent.replay = collector = RecordCollector()
    seen = []
    worker = SingleThreadedWorker(agent, _StepRewardEnv, hooks=[lambda a, d: seen.append(d)], seed=1,
                                  clip_rewards=True)
    stats = worker.execute_episodes(2)
    raw = np.array([d.reward for d in seen])
    # Two episodes of 5 steps; each return is the raw sum, e.g. 0.5 - 1.5 + 2.5 - 3.5 + 4.5 = 2.5 (all a = 0).
    assert len(raw) == 10 and stats["episode_returns"] == pytest.approx([raw[:5].sum(), raw[5:].sum()])
    records = collector.take()
    np.testing.assert_allclose(records["rewards"], np.clip(raw, -1.0, 1.0), rtol=1e-6)
    assert np.abs(raw).max() > 1.0


# --- ApexAgent ----------------------------------------------------------------------------------------


def test_apex_agent_priorities_and_learn_from_batch_match_numpy(backend):
    agent = ApexAgent(state_space=FloatBox(shape=(2,)), action_space=IntBox(3), network_spec=NET, discount=0.5,
                      n_step=2, execution_spec={"seed": 2, "max_timesteps": 100}, update_spec={"batch_size": 4},
                      backend=backend)
    assert agent.double_q and agent.dueling_q  # Ape-X defaults.
    rng = np.random.RandomState(0)
    batch = dict(states=rng.normal(size=(4, 2)).astype(np.float32), actions=np.array([0, 1, 2, 1]),
                 rewards=np.array([1.0, -0.5, 2.0, 0.25], np.float32), terminals=np.array([False, True, False, False]),
                 next_states=rng.normal(size=(4, 2)).astype(np.float32),
                 importance_weights=np.array([1.0, 0.5, 0.25, 1.0], np.float32))
    q_tm1 = agent.get_q_values(batch["states"])
    q_t = agent.get_q_values(batch["next_states"])
    qt_t, _ = agent.call_api_method("get_target_q_values_and_actions", [batch["next_states"]])
    # Double Q with n = 2: target = r + 0.5^2 (1 - d) qt(s')[argmax q(s')].
    loss_ref, td_ref = rnp.dqn_loss_per_item(q_tm1, batch["actions"], batch["rewards"], batch["terminals"], qt_t,
                                             0.5, q_t=q_t, n_step=2, weights=batch["importance_weights"])
    priorities = agent.get_priorities(batch)
    assert priorities.dtype == np.float32
    np.testing.assert_allclose(priorities, np.abs(td_ref), rtol=1e-5)
    weights_before = agent.get_weights()
    loss, loss_per_item, new_priorities = agent.learn_from_batch(dict(batch))
    # The priorities are the TD errors of this step (before the optimizer moved the weights).
    np.testing.assert_allclose(new_priorities, np.abs(td_ref), rtol=1e-5)
    np.testing.assert_allclose(loss_per_item, loss_ref, rtol=1e-5)
    assert float(loss) == pytest.approx(float(np.mean(loss_ref)), rel=1e-5)
    assert agent.num_updates == 1 and not _weights_equal(weights_before, agent.get_weights())
    assert not np.allclose(agent.get_priorities(batch), priorities)


# --- Sample workers ---------------------------------------------------------------------------------


def _sample_worker(backend, n_step=3, clip_rewards=False, seed=5, env=_StepRewardEnv, **worker):
    """Sample worker 0 of 1 on `env` (gamma 0.5, n-step n)."""
    config = {"type": "apex", "backend": backend, "discount": 0.5, "n_step": n_step, "network_spec": NET,
              "execution_spec": {"seed": seed, "ray_spec": {"worker_spec": worker}}}
    agent_config, spec = split_ray_spec(config)
    probe = env()
    return ApexSampleWorker(agent_config, spec["worker_spec"], env, 0, 1, clip_rewards, probe.state_space,
                            probe.action_space)


def _n_step_fold(steps, n, gamma):
    """Numpy n-step records of time-ordered steps (s, a, r, s', d), windows cut at terminals:
    (s_i, a_i, sum_k gamma^k r_{i+k}, d_{j}, s'_{j}) with j = min(i + n, episode end) - 1."""
    out = []
    for i, (s, a, _, _, _) in enumerate(steps):
        window = []
        for step in steps[i:i + n]:
            window.append(step)
            if step[4]:
                break
        ret = sum(gamma ** k * step[2] for k, step in enumerate(window))
        out.append((s, a, ret, window[-1][4], window[-1][3]))
    return out


def test_sample_worker_n_step_records_match_numpy_fold(backend):
    """n = 3, gamma = 0.5, rewards clipped: two `sample(7)` calls over 5-step episodes."""
    worker = _sample_worker(backend, clip_rewards=True)
    seen = []
    worker.worker.hooks.append(lambda agent, data: seen.append(data))
    batches, metas = zip(*[worker.sample(7) for _ in range(2)])
    assert [m["timesteps"] for m in metas] == [7, 7]
    # 14 steps = 2 finished episodes (10 records) + 4 steps of the third: its 4th step waits for the
    # next action (observed then), so 3 are observed and only record 0 has all n = 3 rewards: 11.
    records = {k: np.concatenate([b["records"][k] for b in batches]) for k in RECORD_KEYS}
    assert sum(m["num_records"] for m in metas) == len(records["rewards"]) == 11
    steps = [(d.observation, int(d.action), float(np.clip(d.reward, -1, 1)), d.observation_1, d.done) for d in seen]
    expected = _n_step_fold(steps, n=3, gamma=0.5)[:11]
    np.testing.assert_array_equal(records["states"], np.stack([e[0] for e in expected]))
    np.testing.assert_array_equal(records["actions"], [e[1] for e in expected])
    np.testing.assert_allclose(records["rewards"], [e[2] for e in expected], rtol=1e-6)
    np.testing.assert_array_equal(records["terminals"], [e[3] for e in expected])
    # Terminal records bootstrap from nothing: their next state is not read (the worker stores s_t).
    live = ~records["terminals"]
    assert live.sum() == 5  # Records 0, 1 of each finished episode (2 reaches the terminal), 0 of the third.
    np.testing.assert_array_equal(records["next_states"][live], np.stack([e[4] for e in expected])[live])
    # By hand (|r_t| > 1 for t >= 1, so those clip to +-1): record 0 = (0.5 + 0.25 a_0) - 0.5 + 0.25;
    # record 2 = 1 - 0.5 + 0.25 = 0.75, terminal (its window ends at t = 4).
    assert records["rewards"][0] == pytest.approx(0.25 + 0.25 * records["actions"][0])
    assert records["rewards"][2] == pytest.approx(0.75) and records["terminals"][2]
    # The statistics keep the raw returns of the two finished episodes.
    raw = [d.reward for d in seen]
    assert metas[0]["episode_returns"] + metas[1]["episode_returns"] == pytest.approx([sum(raw[:5]), sum(raw[5:10])])


def test_sample_worker_priorities_are_abs_td_errors(backend):
    worker = _sample_worker(backend)
    batch, _ = worker.sample(12)
    records, priorities = batch["records"], batch["priorities"]
    agent = worker.agent
    np.testing.assert_allclose(priorities, np.abs(agent.get_td_loss(records)[2]), rtol=1e-6)
    q_tm1 = agent.get_q_values(records["states"], apply_preprocessing=False)
    q_t = agent.get_q_values(records["next_states"], apply_preprocessing=False)
    qt_t, _ = agent.call_api_method("get_target_q_values_and_actions", [records["next_states"]])
    _, td = rnp.dqn_loss_per_item(q_tm1, records["actions"], records["rewards"], records["terminals"], qt_t, 0.5,
                                  q_t=q_t, n_step=3)
    np.testing.assert_allclose(priorities, np.abs(td), rtol=1e-5, atol=1e-6)
    # Without worker postprocessing no priorities are sent (the shard gives new records the max).
    assert _sample_worker(backend, worker_executes_postprocessing=False).sample(12)[0]["priorities"] is None


def test_sample_worker_priorities_match_the_learner_after_a_weight_sync(pytorch):
    learner = ApexAgent(state_space=FloatBox(shape=(1,)), action_space=IntBox(2), network_spec=NET, discount=0.5,
                        n_step=3, execution_spec={"seed": 5}, backend=pytorch)
    worker = _sample_worker(pytorch)
    worker.set_weights(learner.get_acting_weights(), 0)  # What the executor sends: policy and target.
    batch, _ = worker.sample(12)
    assert not batch["records"]["terminals"].all()
    np.testing.assert_allclose(batch["priorities"], learner.get_priorities(batch["records"]), rtol=1e-5)


def test_sample_worker_frame_counts(pytorch):
    worker = _sample_worker(pytorch, env=_long_episodes, worker_frame_skip=3, env_internal_frame_skip=4)
    seen = []
    worker.worker.hooks.append(lambda agent, data: seen.append(data))
    _, meta = worker.sample(10)
    inner = worker.worker.vector_env.environments[0]
    assert isinstance(inner, ActionRepeatEnv)
    assert meta["timesteps"] == 10 and inner.env.total_steps == 30  # 3 env steps per worker step.
    assert meta["env_frames"] == 10 * 3 * 4  # ... of 4 frames each.
    # Each worker step's reward is the sum of its 3 inner rewards: t = 0, 1, 2 with a fixed action a:
    # (0.5 + 0.25a) - (1.5 + 0.25a) + (2.5 + 0.25a) = 1.5 + 0.25a.
    assert seen[0].reward == pytest.approx(1.5 + 0.25 * int(seen[0].action))
    stats = worker.get_statistics()
    assert stats["timesteps"] == 10 and stats["env_frames"] == 120 and stats["num_samples_calls"] == 1


# --- Replay shards ----------------------------------------------------------------------------------


def _records(first, count):
    """`count` records; record j (global index first + j) has state [j'] and reward j' with j' = first + j."""
    index = np.arange(first, first + count, dtype=np.float32)
    return {"states": index[:, None], "actions": (index % 2).astype(np.int64), "rewards": index,
            "terminals": np.zeros(count, dtype=bool), "next_states": index[:, None] + 1}


def _stored_rewards(shard):
    """The rewards in the shard's storage, by position [capacity]."""
    return shard.memory.storage[next(key for key in shard.memory.storage if "rewards" in key)]


def test_replay_shard_add_sets_priorities_with_wrap_around():
    shard = ReplayShard(0, {"capacity": 4, "alpha": 0.5, "beta": 0.0, "epsilon": 0.01}, batch_size=2,
                        min_sample_memory_size=1, seed=1)
    leaves = shard.memory.tree

    def leaf(p):
        return (p + 0.01) ** 0.5  # (|p| + epsilon) ** alpha

    assert shard.add({"records": _records(0, 3), "priorities": np.array([1.0, 2.0, 3.0])}) == 3
    np.testing.assert_allclose(leaves.get(np.arange(3)), leaf(np.array([1.0, 2.0, 3.0])))
    # Records 3, 4, 5 go to positions 3, 0, 1 (the ring wraps).
    assert shard.add({"records": _records(3, 3), "priorities": np.array([4.0, 5.0, 6.0])}) == 4
    np.testing.assert_array_equal(_stored_rewards(shard), [4.0, 5.0, 2.0, 3.0])
    np.testing.assert_allclose(leaves.get(np.arange(4)), leaf(np.array([5.0, 6.0, 3.0, 4.0])))
    # An oversized batch (records 6..11, write index 2): only 8..11 survive, at positions 0..3.
    assert shard.add({"records": _records(6, 6), "priorities": np.arange(7.0, 13.0)}) == 4
    np.testing.assert_array_equal(_stored_rewards(shard), [8.0, 9.0, 10.0, 11.0])
    np.testing.assert_allclose(leaves.get(np.arange(4)), leaf(np.array([9.0, 10.0, 11.0, 12.0])))
    # Without priorities new records get the largest priority so far, 12 + 0.01 (record 12 at position 0).
    shard.add({"records": _records(12, 1), "priorities": None})
    assert leaves.get(0) == pytest.approx(leaf(12.0))
    shard.update_priorities(np.array([1, 3]), np.array([-0.5, 2.0]))
    np.testing.assert_allclose(leaves.get(np.array([1, 3])), leaf(np.array([0.5, 2.0])))
    stats = shard.get_statistics()
    assert (stats["inserted"], stats["size"], stats["priority_updates"]) == (13, 4, 1)


def test_replay_shard_samples_only_from_the_minimum_size():
    shard = ReplayShard(0, {"capacity": 10, "alpha": 0.6, "beta": 0.4}, batch_size=3, min_sample_memory_size=5, seed=2)
    shard.add({"records": _records(0, 4), "priorities": np.ones(4)})
    assert shard.sample() is None
    shard.add({"records": _records(4, 1), "priorities": np.ones(1)})
    batch = shard.sample()
    assert sorted(batch) == sorted(RECORD_KEYS + ("importance_weights", "indices"))
    assert batch["rewards"].shape == (3,) and np.all((0 <= batch["indices"]) & (batch["indices"] < 5))
    np.testing.assert_array_equal(batch["rewards"], batch["indices"])  # Record i holds reward i.
    np.testing.assert_allclose(batch["importance_weights"], 1.0)  # Equal priorities: all weights 1.
    assert shard.get_statistics()["sampled_batches"] == 1


def test_replay_shard_snapshot_and_restore(tmp_path):
    path = str(tmp_path / "shard-0.npz")
    spec = {"capacity": 8, "alpha": 0.6, "beta": 0.4}
    shard = ReplayShard(0, spec, batch_size=4, min_sample_memory_size=1, snapshot_interval=3, snapshot_path=path,
                        seed=3)
    assert shard.snapshot() is None  # Empty: nothing written.
    shard.add({"records": _records(0, 2), "priorities": np.array([0.5, 1.0])})
    assert not os.path.exists(path)
    shard.add({"records": _records(2, 2), "priorities": np.array([2.0, 4.0])})  # 4 >= 3 inserted: a snapshot.
    assert os.path.exists(path)
    restored = ReplayShard(0, spec, batch_size=4, min_sample_memory_size=1, restore_from=path, seed=99)
    # The restored shard holds the 4 records with their priorities and the sampling RNG's state.
    assert restored.size() == 4 and restored.get_statistics()["restored_records"] == 4
    np.testing.assert_array_equal(restored.memory.tree.leaves(), shard.memory.tree.leaves())
    original, again = shard.sample(), restored.sample()
    for key in original:
        np.testing.assert_array_equal(original[key], again[key])
    shard.add({"records": _records(4, 2), "priorities": np.ones(2)})  # 2 < 3 since the snapshot: none.
    assert ReplayShard(0, spec, 4, 1, restore_from=path).size() == 4
    # A restart without a snapshot file starts empty.
    assert ReplayShard(0, spec, 4, 1, restore_from=str(tmp_path / "none.npz")).size() == 0


# --- ApexExecutor inline ----------------------------------------------------------------------------


def test_executor_rejects_bad_configs(pytorch):
    with pytest.raises(RLGraphSpecError, match="type"):
        ApexExecutor(GRID, {k: v for k, v in _config(pytorch).items() if k != "type"})
    with pytest.raises(RLGraphSpecError, match="apex"):
        ApexExecutor(GRID, dict(_config(pytorch), type="dqn"))
    with ApexExecutor(GRID, _config(pytorch)) as executor:
        with pytest.raises(RLGraphSpecError, match="num_timesteps"):
            executor.execute_workload({"report_interval": 10})
        with pytest.raises(RLGraphSpecError, match="did you mean 'num_timesteps'"):
            executor.execute_workload({"num_timestep": 10})
    assert executor.terminated


def test_inline_workload_statistics_and_weights(backend):
    executor = _executor(_config(backend))
    try:
        log = _log_samples(executor)
        learner_weights = {}  # Version -> the learner's weights when they were broadcast.
        get_weights = executor.local_agent.get_weights

        def logged_get_weights(names=None):
            weights = get_weights(names)
            learner_weights[executor.learner.version] = {k: np.copy(v) for k, v in weights.items()}
            return weights
        executor.local_agent.get_weights = logged_get_weights
        result = _run(executor, 200)
        processed, in_flight = _in_flight(log, 2)
        # 10 rounds of 2 tasks x 10 steps; each worker has run one more task, not collected yet.
        assert result["timesteps_executed"] == sum(m["timesteps"] for m in processed) == 200
        assert len(processed) == 20 and [m["worker_index"] for m in processed] == [0, 1] * 10
        assert result["env_frames"] == result["total_timesteps"] == executor.env_timesteps == 200
        assert result["episode_returns"] == [r for m in processed for r in m["episode_returns"]]
        assert result["episodes"] == len(result["episode_returns"]) > 0
        assert result["mean_episode_return"] == pytest.approx(np.mean(result["episode_returns"]))
        by_worker = executor.result_by_worker()
        assert sum(by_worker["episode_timesteps"]) == 200 + sum(m["timesteps"] for m in in_flight) == 220
        assert by_worker["episode_rewards"][0] == [r for m in log if m["worker_index"] == 0
                                                   for r in m["episode_returns"]]
        # Every processed task's records went to the shard (n = 1: one record per observed step).
        stats = executor.replay_statistics()[0]
        inserted = sum(m["num_records"] for m in processed)
        assert stats["size"] == stats["inserted"] == inserted
        assert 200 - 2 <= inserted <= 200
        # Learning: every update sampled one batch and sent its priorities back.
        assert result["updates"] > 0
        assert result["updates"] == result["learner_updates"] == executor.learner.version \
            == executor.local_agent.num_updates == stats["sampled_batches"] == stats["priority_updates"] \
            == result["queue_inserts"]
        assert result["restarts"] == 0 and result["records_lost"] == 0 and result["discarded"] == 0
        assert result["worker_pids"] == [os.getpid()] * 2 and result["shard_pids"] == [os.getpid()]
        # Weights: each worker acts with the learner's weights of the version it was sent last.
        assert result["weight_syncs"] == sum(w.handle.obj.stats["weights_set"] for w in executor.workers)
        for worker in executor.workers:
            obj = worker.handle.obj
            assert obj.version == worker.version and obj.version in learner_weights
            assert _weights_equal(obj.agent.get_weights(), learner_weights[obj.version])
        assert max(w.version for w in executor.workers) > 0  # Weights after learning reached the workers.
        assert result["max_policy_lag"] >= result["mean_policy_lag"] >= 0
    finally:
        executor.terminate()


def test_workload_replay_sizes_match_the_shards(pytorch):
    with _executor(_config(pytorch)) as executor:
        result = _run(executor, 200)
        assert result["replay_sizes"] == [s["size"] for s in executor.replay_statistics()]


def test_the_agent_memory_spec_is_reported_as_unused(pytorch, caplog):
    """A top-level memory_spec (original RLgraph Ape-X configs have one) is not the replay under the
    executor: the build log says so and names the shards' memory instead; the learner's own
    placeholder memory (capacity 1, never sampled) brings no batch-size warning."""
    config = _config(pytorch, memory_spec={"type": "prioritized-replay", "capacity": 50})
    with caplog.at_level(logging.INFO, logger="rlgraph.execution.ray.apex.apex_executor"), _executor(config):
        pass
    assert ["Ape-X: the agent config's memory_spec is not used here: the replay is 1 shard(s) of "
            "apex_replay_spec.memory_spec (mem-prioritized-replay, capacity 1000 each)."] == [
        r.getMessage() for r in caplog.records if "memory_spec" in r.getMessage() or "capacity" in r.getMessage()]


def test_inline_runs_are_deterministic(backend):
    runs = []
    for _ in range(2):
        with _executor(_config(backend)) as executor:
            result = _run(executor, 120)
            runs.append((result["episode_returns"], result["updates"], executor.local_agent.get_weights(),
                         executor.shards[0].handle.obj.memory.tree.leaves()))
    (returns_a, updates_a, weights_a, leaves_a), (returns_b, updates_b, weights_b, leaves_b) = runs
    assert returns_a == returns_b and updates_a == updates_b > 0
    assert _weights_equal(weights_a, weights_b)
    np.testing.assert_array_equal(leaves_a, leaves_b)


# --- Faults -------------------------------------------------------------------------------------------


def test_killed_worker_is_restarted_and_the_run_goes_on(pytorch):
    with _executor(_config(pytorch, executor={"max_num_worker_restarts": 3})) as executor:
        sizes, steps = [], []
        for chunk in range(6):
            if chunk == 2:
                dead = executor.workers[0].handle
                executor.actors.kill(dead)
                slot_steps = executor.workers[0].timesteps
            steps.append(_run(executor, 40)["timesteps_executed"])
            sizes.append(executor.replay_statistics()[0]["size"])
        # Rounds of 20 env steps; the round that notices the dead worker collects only worker 1's 10.
        assert steps == [40, 40, 50, 40, 40, 40] and executor.env_timesteps == 250
        assert executor.num_restarts == 1
        assert [(r["kind"], r["index"]) for r in executor.restart_log] == [("sample worker", 0)]
        assert executor.workers[0].handle is not dead and executor.workload_results[-1]["restarts"] == 1
        # The records already in the shard survive the worker's death: the size never drops.
        assert sizes == sorted(sizes) and sizes[-1] > sizes[1]
        # The new worker continues its slot's epsilon schedule and acts with the learner's weights.
        fresh = executor.workers[0].handle.obj
        assert fresh.agent.timesteps >= slot_steps > 0
        assert fresh.version == executor.workers[0].version >= 0
        assert executor.workload_results[-1]["updates"] > 0


def test_restarts_beyond_the_budget_raise(pytorch):
    with _executor(_config(pytorch, executor={"max_num_worker_restarts": 1})) as executor:
        _run(executor, 20)
        executor.actors.kill(executor.workers[0].handle)
        _run(executor, 40)  # Restart 1 of 1.
        assert executor.num_restarts == 1
        executor.actors.kill(executor.workers[1].handle)
        with pytest.raises(RLGraphDistributedError, match="max_num_worker_restarts"):
            _run(executor, 40)


def _kill_shard_and_run_a_round(executor):
    """Kills shard 0 between workloads, then runs one round (20 steps).

    Returns:
        (shard size before, snapshot size, records of the tasks in flight at the kill, the round's result).
    """
    log = _log_samples(executor)
    _run(executor, 100)
    size_before = executor.replay_statistics()[0]["size"]
    with np.load(os.path.join(executor.snapshot_dir, "shard-0.npz")) as snapshot:
        snapshot_size = int(snapshot["size"])
    # The tasks in flight were run already; their records go to the dead shard in the next round.
    in_flight = sum(m["num_records"] for m in _in_flight(log, 2)[1])
    executor.actors.kill(executor.shards[0].handle)
    return size_before, snapshot_size, in_flight, _run(executor, 20)


def test_killed_shard_restores_its_snapshot(pytorch):
    """One update per round (update_interval = 20 env steps), snapshots every 35 records."""
    config = _config(pytorch, replay={"snapshot_interval": 35}, update={"update_interval": 20})
    with _executor(config) as executor:
        size_before, snapshot_size, in_flight, result = _kill_shard_and_run_a_round(executor)
        assert 0 < snapshot_size < size_before and in_flight > 0
        assert executor.num_restarts == 1 and executor.restart_log[0]["kind"] == "replay shard"
        stats = executor.replay_statistics()[0]
        assert stats["restored_records"] == stats["size"] == executor.shards[0].size == snapshot_size
        # Lost: the records since the snapshot plus those sent to the dead shard.
        assert executor.records_lost == result["records_lost"] == size_before - snapshot_size + in_flight
        # The run goes on with the restored shard.
        result = _run(executor, 60)
        assert result["updates"] > 0 and executor.replay_statistics()[0]["size"] > snapshot_size


def test_one_killed_shard_counts_one_restart(pytorch):
    """Five updates per round (update_interval = 4): the dead shard is noticed at the first."""
    with _executor(_config(pytorch, replay={"snapshot_interval": 35})) as executor:
        size_before, snapshot_size, in_flight, _ = _kill_shard_and_run_a_round(executor)
        assert executor.num_restarts == 1
        assert executor.records_lost == size_before - snapshot_size + in_flight


# --- Checkpoints --------------------------------------------------------------------------------------


def _state(executor):
    return {"weights": executor.local_agent.get_weights(), "version": executor.learner.version,
            "updates": executor.local_agent.num_updates, "env_timesteps": executor.env_timesteps,
            "env_frames": executor.env_frames, "sizes": [s["size"] for s in executor.replay_statistics()]}


def _assert_state(executor, state):
    now = _state(executor)
    assert _weights_equal(now.pop("weights"), state["weights"])
    assert now == {k: v for k, v in state.items() if k != "weights"}


def test_checkpoint_round_trip(pytorch, tmp_path):
    path = str(tmp_path / "ckpt")
    with _executor(_config(pytorch)) as first:
        _run(first, 200)
        state = _state(first)
        first.store_checkpoint(path)
        first_memory = first.shards[0].handle.obj.memory
        worker_steps = [w.timesteps for w in first.workers]
        with _executor(_config(pytorch)) as second:
            assert not _weights_equal(second.local_agent.get_weights(), state["weights"])
            second.load_checkpoint(path)
            _assert_state(second, state)
            assert [s.size for s in second.shards] == state["sizes"] and state["sizes"][0] > 0
            memory = second.shards[0].handle.obj.memory
            np.testing.assert_array_equal(memory.tree.leaves(), first_memory.tree.leaves())
            for key, values in first_memory.storage.items():
                np.testing.assert_array_equal(memory.storage[key], values)
            # The workers act with the restored weights and go on with their slots' schedules.
            for worker, steps in zip(second.workers, worker_steps):
                obj = worker.handle.obj
                assert obj.version == state["version"] and obj.agent.timesteps == worker.timesteps == steps
                assert _weights_equal(obj.agent.get_weights(), state["weights"])
            result = _run(second, 40)
            assert result["timesteps_executed"] == 40 and second.env_timesteps == 240 and result["updates"] > 0


def test_resumed_run_keeps_the_update_cadence(pytorch, tmp_path):
    path = str(tmp_path / "ckpt")
    with _executor(_config(pytorch)) as first:
        _run(first, 200)
        first.store_checkpoint(path)
        uninterrupted = _run(first, 20)["updates"]
        assert uninterrupted == 5  # 20 env steps / update_interval 4.
    with _executor(_config(pytorch)) as second:
        second.load_checkpoint(path)
        assert _run(second, 20)["updates"] == uninterrupted


def _write_bad_state(path, kind):
    state_file = os.path.join(path, "executor_state.json")
    if kind == "missing":
        os.remove(state_file)
    elif kind == "truncated":
        text = open(state_file).read()
        with open(state_file, "w") as handle:
            handle.write(text[:len(text) // 2])
    elif kind == "other format":
        state = json.load(open(state_file))
        with open(state_file, "w") as handle:
            json.dump(dict(state, format=99), handle)
    elif kind == "not a dict":
        with open(state_file, "w") as handle:
            json.dump([1, 2], handle)
    elif kind == "shard file missing":
        os.remove(os.path.join(path, "replay-0.npz"))


def test_bad_checkpoints_raise_and_change_nothing(pytorch, tmp_path):
    with _executor(_config(pytorch)) as executor:
        _run(executor, 100)
        good = executor.store_checkpoint(str(tmp_path / "good"))
        _run(executor, 100)  # The executor moves on: a load would now change it.
        state = _state(executor)
        for kind in ("missing", "truncated", "other format", "not a dict", "shard file missing"):
            path = str(tmp_path / kind.replace(" ", "-"))
            shutil.copytree(good, path)
            _write_bad_state(path, kind)
            with pytest.raises(RLGraphCheckpointError):
                executor.load_checkpoint(path)
            _assert_state(executor, state)
        with pytest.raises(RLGraphCheckpointError, match="no checkpoint directory"):
            executor.load_checkpoint(str(tmp_path / "nowhere"))
        _assert_state(executor, state)


@pytest.mark.parametrize("damage", ["state without learner_version", "damaged replay file"])
def test_damaged_checkpoint_raises_before_anything_changes(pytorch, tmp_path, damage):
    with _executor(_config(pytorch)) as executor:
        _run(executor, 100)
        path = executor.store_checkpoint(str(tmp_path / "ckpt"))
        _run(executor, 100)
        state = _state(executor)
        if damage == "damaged replay file":
            with open(os.path.join(path, "replay-0.npz"), "wb") as handle:
                handle.write(b"not an npz file")
        else:
            content = json.load(open(os.path.join(path, "executor_state.json")))
            del content["learner_version"]
            with open(os.path.join(path, "executor_state.json"), "w") as handle:
                json.dump(content, handle)
        with pytest.raises(RLGraphCheckpointError):
            executor.load_checkpoint(path)
        _assert_state(executor, state)


# --- Learning -----------------------------------------------------------------------------------------


@pytest.mark.learning
@pytest.mark.slow
def test_apex_inline_learns_grid_world_2x2_q_table(backend):
    """The upstream RLgraph check (DQN/Ape-X on the 2x2 world): the learned Q-table is Q*.

    World "SH / _G", actions up, right, down, left; the hole (-1) and the goal (+1) end the episode,
    walls keep the agent in place (reward 0). With gamma = 0.9 and V*(start) = 0.9, V*(field 2) = 1:
        Q*(0) = (0.81, -1, 0.9, 0.81): up/left stay (gamma V*(0)), right is the hole, down reaches field 2.
        Q*(2) = (0.81, 1, 0.9, 0.9): up back to the start, right the goal, down/left stay (gamma V*(2)).
    Worker i of 2 explores with the constant epsilon 0.4 ** (1 + 7 i).
    """
    config = _config(backend, worker={"ray_constant_exploration": True},
                     replay={"min_sample_memory_size": 32},
                     update={"batch_size": 16, "sync_interval": 32},
                     optimizer_spec={"type": "adam", "learning_rate": 0.01})
    with _executor(config) as executor:
        result = executor.execute_workload({"num_timesteps": 1500, "report_interval": 500,
                                            "report_interval_min_seconds": 0})
        q = executor.local_agent.get_q_values(np.array([0, 2]))
        assert result["updates"] > 300
    np.testing.assert_allclose(q, [[0.81, -1.0, 0.9, 0.81], [0.81, 1.0, 0.9, 0.9]], atol=0.1)


def test_update_rate_follows_the_update_spec(pytorch):
    # Learning starts in the round where the shard first holds 16 records (round 1: 20 records);
    # from then on 1 update per 4 env steps: 2 more rounds of 20 steps -> 10 updates. With
    # do_updates false there are none, whatever the replay holds.
    with _executor(_config(pytorch)) as executor:
        _run(executor, 60)
        assert executor.learner.version == 10
    with _executor(_config(pytorch, update={"do_updates": False})) as executor:
        result = _run(executor, 60)
        assert executor.learner.version == result["updates"] == 0
        assert result["replay_sizes"] == [60]
