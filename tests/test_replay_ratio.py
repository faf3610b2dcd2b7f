"""Ape-X's target replay ratio (`executor_spec.replay_ratio`): records the learner samples
(updates x batch_size) per record inserted into the replay once learning started.

No Ray here. The counting cases run the inline executor, where the learner is stepped by the
loop, and "fake actors": the executor's Ray path (learner thread, sampling tasks, throttle,
catch-up at the end of a workload) with the actors replaced by in-process objects that run each
call at once, so the workers are infinitely fast and the learner is the bottleneck whatever the
machine does. Assertions are on counts, never on times.

Setup (as in tests/test_apex_executor.py): GridWorld 2x2, n_step 1; 2 workers x 10 env steps per
task (one inline round = 20 env steps; a task's batch holds 9-11 records, as the observe buffer
flushes at episode ends), batches of 8, learning starts once the shard holds 16 records.
"""
import math
import time
from fractions import Fraction

import numpy as np
import pytest

from rlgraph.backend_system import is_backend_installed
from rlgraph.execution.ray import ApexExecutor, IMPALAExecutor, ray_executor
from rlgraph.execution.ray.actors import InlineActors
from rlgraph.execution.ray.specs import split_ray_spec
from rlgraph.utils.rlgraph_errors import RLGraphSpecError
from test_apex_executor import _log_samples

GRID = {"type": "grid-world", "world": "2x2"}
ONE_HOT_2x2 = [{"type": "reshape", "flatten": True, "flatten_categories": 4}]
NET = [{"type": "dense", "units": 16, "activation": "relu"}]
BATCH = 8
TASK = 10  # Env steps (= records, n_step 1) per sample task.


@pytest.fixture
def pytorch():
    """The backend of the single-backend tests (the pacing is the executor's bookkeeping)."""
    if not is_backend_installed("pytorch"):
        pytest.skip(reason="PyTorch is not installed")
    return "pytorch"


def _config(backend, replay_ratio=None, executor=None, update=None, **agent):
    executor_spec = dict(mode="inline", num_sample_workers=2, num_worker_samples=TASK, weight_sync_steps=20,
                         replay_ratio=replay_ratio)
    config = {"type": "apex", "backend": backend, "discount": 0.9, "n_step": 1, "network_spec": NET,
              "preprocessing_spec": ONE_HOT_2x2,
              "update_spec": dict({"batch_size": BATCH, "sync_interval": 16, "update_interval": 4}, **(update or {})),
              # (On the CPU: the counts below follow the seeded random stream, which differs on a GPU.)
              "execution_spec": {"seed": 3, "device": "cpu", "ray_spec": {
                  "executor_spec": dict(executor_spec, **(executor or {})),
                  "apex_replay_spec": {"memory_spec": {"capacity": 1000}, "min_sample_memory_size": 16}}}}
    config.update(agent)
    return config


def _run(executor, num_timesteps):
    return executor.execute_workload({"num_timesteps": num_timesteps, "report_interval": 20,
                                      "report_interval_min_seconds": 0})


# --- The key ----------------------------------------------------------------------------------------


def test_replay_ratio_is_off_by_default_and_a_number_when_set():
    assert split_ray_spec(_config("pytorch", executor={"replay_ratio": None}))[1]["executor_spec"][
        "replay_ratio"] is None
    spec = split_ray_spec({"type": "apex", "execution_spec": {"ray_spec": {}}})[1]["executor_spec"]
    assert spec["replay_ratio"] is None
    assert split_ray_spec(_config("pytorch", replay_ratio=4))[1]["executor_spec"]["replay_ratio"] == 4.0


@pytest.mark.parametrize("value", [0, -1, float("nan"), float("inf"), "x", True, 1e30, 10 ** 400, [4]])
def test_bad_replay_ratios_are_refused(value):
    with pytest.raises(RLGraphSpecError, match="replay_ratio") as info:
        split_ray_spec(_config("pytorch", replay_ratio=value))
    assert "ray_spec.executor_spec(replay_ratio)" in str(info.value)


def test_replay_ratio_and_discarding_batches_exclude_each_other(pytorch):
    with pytest.raises(RLGraphSpecError, match="discard_queued_samples"):
        ApexExecutor(GRID, _config(pytorch, replay_ratio=4, executor={"discard_queued_samples": True}))
    with pytest.raises(RLGraphSpecError, match="discard_queued_samples"):
        ApexExecutor(GRID, _config(pytorch, replay_ratio=4), discard_queued_samples=True)


def test_impala_refuses_a_replay_ratio(pytorch):
    # IMPALA learns from each rollout row exactly once (FIFO back-pressure): its ratio is fixed.
    config = {"type": "impala", "backend": pytorch, "worker_sample_size": 10, "network_spec": NET,
              "execution_spec": {"ray_spec": {"executor_spec": {"mode": "inline", "replay_ratio": 2}}}}
    with pytest.raises(RLGraphSpecError, match="replay_ratio") as info:
        IMPALAExecutor({"type": "openai-gym", "gym_env": "CartPole-v1"}, config)
    assert "once" in str(info.value)


# --- Inline: the learner follows the ratio exactly ----------------------------------------------------


def _inline_run(executor):
    """Runs 60 then 20 env steps with the workers' batches logged. Returns both results and the
    records of the batches the executor inserted: round 1 (2 batches), rounds 2-3 (4), round 4 (2).
    A batch holds 9-11 records (n-step 1: the observe buffer flushes at episode ends), so the
    expected counts below are worked out from the logged batches, not assumed to be 10 each."""
    log = _log_samples(executor)
    first, second = _run(executor, 60), _run(executor, 20)
    records = [meta["num_records"] for meta in log][:8]  # (Each workload ends with 2 tasks in flight.)
    assert len(records) == 8 and all(9 <= n <= 11 for n in records)
    assert records[0] < 16 <= records[0] + records[1]  # The shard can be sampled from round 2 on.
    return first, second, records


@pytest.mark.parametrize("ratio", [4, 2.5, 0.25])
def test_inline_updates_follow_the_replay_ratio(pytorch, ratio):
    with ApexExecutor(GRID, _config(pytorch, replay_ratio=ratio)) as executor:
        first, second, records = _inline_run(executor)
        # Round 1 fills the shard past 16 records; the records of rounds 2 and 3 count for the first
        # workload, round 4's for the second: floor(r * records counted so far / batch) updates in all.
        counted = [sum(records[2:6]), sum(records[6:8])]
        due = [math.floor(Fraction(repr(ratio)) * sum(counted[:i + 1]) / BATCH) for i in range(2)]
        updates = [due[0], due[1] - due[0]]
        assert [first["updates"], second["updates"]] == updates and updates[0] >= 1
        assert first["replay_ratio_target"] == second["replay_ratio_target"] == ratio
        assert first["replay_ratio"] == updates[0] * BATCH / counted[0]
        assert second["replay_ratio"] == updates[1] * BATCH / counted[1]
        assert second["records_inserted"] == sum(records)
        # The achieved ratio over the run lies within one batch of the target: floor() only.
        assert 0 <= ratio * sum(counted) - sum(updates) * BATCH < BATCH


def test_inline_replay_ratio_worked_example(pytorch):
    # Seed 3's batches, worked by hand: round 1 = 9 + 10 = 19 records (the shard can be sampled),
    # rounds 2-3 = 11 + 10 + 10 + 10 = 41, round 4 = 10 + 10 = 20. Ratio 2.5: floor(2.5 * 41 / 8)
    # = floor(12.8) = 12 updates, then floor(2.5 * 61 / 8) = floor(19.06) = 19, i.e. 7 more.
    with ApexExecutor(GRID, _config(pytorch, replay_ratio=2.5)) as executor:
        first, second, records = _inline_run(executor)
        assert records == [9, 10, 11, 10, 10, 10, 10, 10]
        assert (first["updates"], second["updates"]) == (12, 7)
        assert (first["replay_ratio"], second["replay_ratio"]) == (12 * 8 / 41, 7 * 8 / 20)


def test_without_a_replay_ratio_the_update_spec_cadence_is_unchanged(pytorch):
    # 1 update per update_interval = 4 env steps from the round in which the shard can be sampled
    # (tests/test_apex_executor.py::test_update_rate_follows_the_update_spec): 40 env steps, 10
    # updates, then 20 env steps, 5; the achieved ratio is reported per record of those rounds: 10 * 8 / records.
    with ApexExecutor(GRID, _config(pytorch)) as executor:
        first, second, records = _inline_run(executor)
        assert (first["updates"], second["updates"]) == (10, 5) and executor.learner.version == 15
        assert first["replay_ratio_target"] is None
        assert first["replay_ratio"] == 10 * BATCH / sum(records[2:6])


# --- Fake actors: a slow learner is throttled to the ratio ---------------------------------------------


@pytest.fixture
def fake_actors(monkeypatch):
    """The executor in mode "ray" (learner thread, sampling tasks, throttle, catch-up) with
    in-process actors that run each call at once, and no Ray."""
    monkeypatch.setattr(ray_executor.RayExecutor, "_start_ray", lambda self: None)
    monkeypatch.setattr(ray_executor.RayExecutor, "check_resources", lambda self, cpus, gpus: None)
    monkeypatch.setattr(ray_executor, "make_actors", lambda mode: InlineActors())


def _count_learner_updates(executor, delay):
    """Wraps the learner's `learn_from_batch`: counts its calls and sleeps `delay` s in each."""
    agent, calls = executor.local_agent, []
    learn = agent.learn_from_batch

    def learn_from_batch(batch):
        time.sleep(delay)
        calls.append(1)
        return learn(batch)
    agent.learn_from_batch = learn_from_batch
    return calls


def _log_task_starts(executor, calls):
    """Wraps each worker's `sample` (it runs when the executor hands out a task): logs (records
    inserted so far, learner updates so far, the records of this task)."""
    starts = []
    for worker in executor.workers:
        obj = worker.handle.obj
        sample = obj.sample

        def logged(num_samples, _sample=sample):
            inserted, done = executor.records_inserted, len(calls)
            batch, meta = _sample(num_samples)
            starts.append((inserted, done, meta["num_records"]))
            return batch, meta
        obj.sample = logged
    return starts


def _records_in_flight(executor):
    return sum(executor.actors.get(meta)["num_records"] for w in executor.workers for meta, _ in w.tasks)


@pytest.mark.parametrize("delay", [0.0, 0.005])
def test_a_slow_learner_gets_the_target_updates_per_record(pytorch, fake_actors, delay):
    """Workers that are infinitely fast and a learner as fast as it is or 5 ms slower per update.

    After each workload the learner has done floor(4 * R / 8) updates for the R records inserted
    since learning started; so over a workload of dR records it did 4 * dR / 8 updates up to the
    floor's rounding: |d updates - 4 * dR / 8| < 1. And no worker was handed a task while the
    learner owed more than `slack` updates (< slack + 1 without the floor).
    """
    ratio = 4
    # The workers may run one round ahead: ceil(4 * 2 workers * 10 records / 8) = 10 updates owed.
    slack = math.ceil(ratio * 2 * TASK / BATCH)
    executor = ApexExecutor(GRID, _config(pytorch, replay_ratio=ratio, executor={"mode": "ray"}))
    try:
        calls = _count_learner_updates(executor, delay)
        _run(executor, 100)  # Learning starts somewhere in here.
        starts = _log_task_starts(executor, calls)
        records, updates, in_flight = executor.records_inserted, len(calls), _records_in_flight(executor)
        for _ in range(3):
            before = executor.records_inserted
            result = _run(executor, 100)
            assert executor.learner.version == len(calls)
            new_records = executor.records_inserted - before
            assert abs(result["updates"] * BATCH - ratio * new_records) < BATCH
            assert result["replay_ratio"] == result["updates"] * BATCH / new_records
        # The records counted are those of the tasks collected: in flight before, run since, not in flight now.
        assert executor.records_inserted - records == in_flight + sum(s[2] for s in starts) - \
            _records_in_flight(executor)
        # 3 x 100 env steps collected are >= 30 tasks, of which only the 2 in flight before were not logged.
        assert len(starts) >= 28
        owed = [ratio * (inserted - records) / BATCH - (done - updates) for inserted, done, _ in starts]
        assert max(owed) < slack + 1
    finally:
        executor.mode = "inline"  # (So that terminate() also ends the in-process workers' agents.)
        executor.terminate()


# --- Learning ---------------------------------------------------------------------------------------


@pytest.mark.learning
@pytest.mark.slow
def test_apex_grid_world_2x2_solves_with_a_replay_ratio(pytorch):
    """The 2x2 world's Q-table is Q* (tests/test_apex_executor.py::
    test_apex_inline_learns_grid_world_2x2_q_table has the worked values) with the learner paced
    by a replay ratio of 8 samples per record (twice the update_spec cadence of 4)."""
    config = _config(pytorch, replay_ratio=8, update={"batch_size": 16, "sync_interval": 32},
                     optimizer_spec={"type": "adam", "learning_rate": 0.01})
    config["execution_spec"]["ray_spec"]["worker_spec"] = {"ray_constant_exploration": True}
    config["execution_spec"]["ray_spec"]["apex_replay_spec"]["min_sample_memory_size"] = 32
    with ApexExecutor(GRID, config) as executor:
        result = executor.execute_workload({"num_timesteps": 1000, "report_interval": 500,
                                            "report_interval_min_seconds": 0})
        q = executor.local_agent.get_q_values(np.array([0, 2]))
        assert result["replay_ratio"] == 8.0
    np.testing.assert_allclose(q, [[0.81, -1.0, 0.9, 0.81], [0.81, 1.0, 0.9, 0.9]], atol=0.1)


class _Logs:
    """Records what `_log_workload` writes."""

    def __init__(self):
        self.scalars = []

    def log_episodes(self, steps, returns, lengths):
        pass

    def log_scalars(self, step, scalars):
        self.scalars.append((step, scalars))


def test_rlgraph_train_logs_the_achieved_replay_ratio(pytorch):
    from rlgraph.execution.distributed_training import _log_workload
    logs = _Logs()
    with ApexExecutor(GRID, _config(pytorch, replay_ratio=2.5)) as executor:
        for steps in (20, 80):  # No records count before the shard can be sampled: no scalar yet.
            _log_workload(logs, _run(executor, steps - executor.env_timesteps), steps, executor.local_agent)
    assert "train/replay_ratio" not in logs.scalars[0][1]
    # floor(2.5 * 60 / 8) = 18 updates over the 60 records inserted once the shard could be sampled.
    assert logs.scalars[1][0] == 80 and logs.scalars[1][1]["train/replay_ratio"] == 18 * 8 / 60
