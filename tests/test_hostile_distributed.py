"""Issue 34, distributed part: actor deaths outside sampling, lost-record accounting, isolated benchmark contenders.

- A replay shard or sample worker that died is restarted (and counted) when a checkpoint or a
  statistics call finds it dead, as sampling does; beyond `max_num_worker_restarts` the call raises
  `RLGraphDistributedError` (inline here; `test_dead_actors_outside_sampling_on_ray` on a real Ray).
- `records_lost` counts the records sent to a shard after its last snapshot (or the checkpoint
  it was loaded from), also once the shard is full.
- `rlgraph benchmark impala` runs each contender in a spawned process: one that fails is a row with
  its error in the table, and the others' figures are kept.

The inline Ape-X config: GridWorld 2x2, 2 workers x 10 env steps per task (one round = 20 env
steps), one shard of capacity 40 that snapshots once 25 records came in since its last snapshot.
A task's batch holds 9-11 records (n-step 1: the agent's observe buffer flushes at episode ends),
so each test logs the batches (`_log_samples`) and checks them before it counts the snapshots.
"""
import json
import os

import numpy as np
import pytest

import test_impala_executor as impala_tests
from rlgraph.benchmarks import common, impala
from rlgraph.execution.ray import ApexExecutor, IMPALAExecutor
from rlgraph.utils.rlgraph_errors import RLGraphDistributedError
from test_apex_executor import GRID, _config, _log_samples, _run, pytorch  # noqa: F401 - pytorch is a fixture

CAPACITY, SNAPSHOT_INTERVAL = 40, 25


def _apex(backend, max_restarts=10):
    replay = {"memory_spec": {"capacity": CAPACITY}, "snapshot_interval": SNAPSHOT_INTERVAL}
    config = _config(backend, executor={"max_num_worker_restarts": max_restarts}, replay=replay,
                     update={"update_interval": 20})
    # (On the CPU: FIRST_100 is the seeded stream's sample on the CPU; a GPU's random stream differs.)
    config["execution_spec"]["device"] = "cpu"
    return ApexExecutor(GRID, config)


def _records(log):
    return [meta["num_records"] for meta in log]


def _snapshot(executor, index=0):
    """(records in shard `index`'s snapshot, its insert count)."""
    with np.load(os.path.join(executor.snapshot_dir, f"shard-{index}.npz")) as snapshot:
        return int(snapshot["size"]), int(snapshot["extra_inserted_since_load"])


# Batches of the first 100 env steps (the 11th and 12th are the tasks in flight at the end):
# 9 + 10 + 11 = 30 >= 25: snapshot at 30; 10 + 10 + 9 = 29: at 59; 10 + 11 + 9 = 30: at 89; then 10.
FIRST_100 = [9, 10, 11, 10, 10, 9, 10, 11, 9, 10, 10, 10]


# --- Item 12: checkpoints and statistics restart dead actors ----------------------------------------


def test_checkpoint_restarts_a_dead_shard_and_holds_its_snapshot(pytorch, tmp_path):
    with _apex(pytorch) as executor:
        log = _log_samples(executor)
        _run(executor, 100)
        assert _records(log) == FIRST_100 and _snapshot(executor) == (CAPACITY, 89)
        dead = executor.shards[0].handle
        executor.actors.kill(dead)
        path = executor.store_checkpoint(str(tmp_path / "ckpt"))
        assert executor.num_restarts == 1 and [(r["kind"], r["index"]) for r in executor.restart_log] == \
            [("replay shard", 0)]
        assert executor.shards[0].handle is not dead and executor.shards[0].generation == 1
        with open(os.path.join(path, "executor_state.json")) as handle:
            state = json.load(handle)
        # The checkpoint holds the restored shard (a full one); the 10 records after the snapshot are lost.
        assert (state["shard_sizes"], state["restarts"], state["records_lost"]) == ([CAPACITY], 1, 10)
        # The run goes on, and the checkpoint loads.
        assert _run(executor, 20)["timesteps_executed"] == 20
        with _apex(pytorch) as second:
            second.load_checkpoint(path)
            assert (second.num_restarts, second.records_lost, second.shards[0].size) == (1, 10, CAPACITY)


def test_statistics_restart_dead_workers_and_shards(pytorch):
    with _apex(pytorch) as executor:
        log = _log_samples(executor)
        _run(executor, 40)
        assert _records(log) == [9, 10, 11, 10, 10, 10] and _snapshot(executor) == (30, 30)  # At 30 of 40.
        dead_worker, dead_shard = executor.workers[0].handle, executor.shards[0].handle
        executor.actors.kill(dead_worker)
        by_worker = executor.result_by_worker()
        assert executor.num_restarts == 1 and executor.workers[0].handle is not dead_worker
        # Worker 1: two tasks done and one in flight; the new worker 0 ran its first task (inline
        # calls run at once).
        assert by_worker["episode_timesteps"] == [10, 30] and by_worker["workers"][0]["worker_index"] == 0
        executor.actors.kill(dead_shard)
        assert executor.result_by_worker(1)["worker_index"] == 1  # (Workers only: the dead shard is not asked.)
        stats = executor.replay_statistics()
        assert executor.num_restarts == 2 and executor.shards[0].handle is not dead_shard
        assert [(r["kind"], r["index"]) for r in executor.restart_log] == [("sample worker", 0), ("replay shard", 0)]
        assert (stats[0]["size"], stats[0]["restored_records"], executor.records_lost) == (30, 30, 10)
        result = _run(executor, 40)
        assert result["timesteps_executed"] == 40 and result["restarts"] == 2


def test_dead_actor_beyond_the_restart_budget_raises_from_checkpoints_and_statistics(pytorch, tmp_path):
    with _apex(pytorch, max_restarts=0) as executor:
        _run(executor, 40)
        executor.actors.kill(executor.shards[0].handle)
        with pytest.raises(RLGraphDistributedError, match="max_num_worker_restarts"):
            executor.store_checkpoint(str(tmp_path / "ckpt"))
        assert not os.path.exists(tmp_path / "ckpt")  # Nothing half-written.
        with pytest.raises(RLGraphDistributedError, match="max_num_worker_restarts"):
            executor.replay_statistics()
    with _apex(pytorch, max_restarts=0) as executor:
        _run(executor, 20)
        executor.actors.kill(executor.workers[1].handle)
        with pytest.raises(RLGraphDistributedError, match="sample worker 1 died"):
            executor.result_by_worker()


def test_impala_result_by_worker_restarts_a_dead_actor(pytorch):
    with IMPALAExecutor(impala_tests.CARTPOLE, impala_tests._config(pytorch, executor={"max_num_worker_restarts": 1})) \
            as executor:
        impala_tests._run(executor, 40)
        dead = executor.actors_list[1].handle
        executor.actors.kill(dead)
        by_worker = executor.result_by_worker()
        assert executor.num_restarts == 1 and executor.actors_list[1].handle is not dead
        assert [(r["kind"], r["index"]) for r in executor.restart_log] == [("IMPALA actor", 1)]
        # The new actor ran its first task already (inline calls run at once): one rollout of T steps.
        assert by_worker["episode_timesteps"][1] == impala_tests.T
        executor.actors.kill(executor.actors_list[0].handle)
        with pytest.raises(RLGraphDistributedError, match="max_num_worker_restarts"):
            executor.result_by_worker(0)


# --- Item 13: records_lost --------------------------------------------------------------------------


def test_records_lost_counts_the_inserts_since_the_snapshot_of_a_full_shard(pytorch):
    with _apex(pytorch) as executor:
        log = _log_samples(executor)
        _run(executor, 100)
        assert _records(log) == FIRST_100 and executor.shards[0].size == CAPACITY
        assert _snapshot(executor) == (CAPACITY, 89)
        executor.actors.kill(executor.shards[0].handle)
        # The next round's two batches (the tasks in flight, 10 + 10 records) go to the dead shard.
        result = _run(executor, 20)
        # Lost: the 10 records after the snapshot and the 20 sent to the dead shard. (The old count,
        # max(largest size - restored size, 0) + in flight, gave 0 + 20 once the shard was full.)
        assert executor.num_restarts == 1 and executor.records_lost == result["records_lost"] == 30
        stats = executor.replay_statistics()[0]
        # The restarted shard counts on from its snapshot's 89.
        assert (stats["restored_records"], stats["inserted"], stats["inserted_since_load"]) == (CAPACITY, 0, 89)
        # A second death loses what came after the restarted shard's own last snapshot: it gets
        # the batches of tasks 13-16, 10 + 9 + 10 = 29 >= 25 (snapshot at 89 + 29 = 118), then 11.
        _run(executor, 40)
        assert _records(log)[12:16] == [10, 9, 10, 11] and _snapshot(executor) == (CAPACITY, 118)
        executor.actors.kill(executor.shards[0].handle)
        executor.replay_statistics()
        assert executor.num_restarts == 2 and executor.records_lost == 30 + 11


def test_records_lost_after_loading_a_checkpoint_counts_from_the_loaded_shard(pytorch, tmp_path):
    with _apex(pytorch) as first:
        _run(first, 100)
        path = first.store_checkpoint(str(tmp_path / "ckpt"))
    with _apex(pytorch) as second:
        second.load_checkpoint(path)  # The loaded shard is its snapshot (the executor wrote none yet).
        assert _snapshot(second) == (CAPACITY, 0)
        log = _log_samples(second)
        second.actors.kill(second.shards[0].handle)
        _run(second, 20)  # The first round's two batches go to the dead shard.
        stats = second.replay_statistics()[0]
        # The restarted shard holds the loaded records; only the round's 9 + 10 are lost (the old count,
        # from the executor's own snapshot, which did not exist, gave 40 + 19).
        assert second.num_restarts == 1 and stats["size"] == stats["restored_records"] == CAPACITY
        assert _records(log)[:2] == [9, 10] and second.records_lost == 19


# --- Item 15a: benchmark contenders in their own processes ------------------------------------------


def failing_contender(job):
    """A contender that fails as RLlib's did after a Ray restart in the same process."""
    raise IndexError("list index out of range (the actor never ran - it was cancelled before it started running)")


@pytest.mark.slow  # Two spawned processes, one of them builds and runs two agents.
def test_impala_benchmark_reports_a_failed_contender_and_keeps_the_others(pytorch, monkeypatch, capsys):
    monkeypatch.setitem(impala.CONTENDERS, "executor", failing_contender)
    result = impala.main(["--mode", "inline", "--no-rllib", "--backend", pytorch, "--actors", "1",
                          "--timesteps", "100"])
    measured = result["backends"][pytorch]
    for name in ("CartPole-v1-1", "SleepyCartPole-1"):
        run = measured["runs"][name]
        assert run["single"]["frames_per_s"] > 0 and run["single"]["updates"] > 0
        assert run["executor"] == {"error": "IndexError: list index out of range (the actor never ran - it was "
                                            "cancelled before it started running)"}
    assert measured["scaling_executor"] is None and measured["scaling_single"] == pytest.approx(1.0)
    table = capsys.readouterr().out
    rows = [line for line in table.splitlines()
            if line.startswith(("CartPole-v1 ", "SleepyCartPole ")) and "actors:" not in line]
    assert len(rows) == 2 and all("failed: IndexError: list index out of range" in row for row in rows)
    assert "IMPALAExecutor -" in table  # (No scaling without the executor's runs.)


def test_a_contender_whose_process_dies_is_an_error():
    assert common.run_isolated(os._exit, 3)["error"].startswith("the process died")
    assert common.run_isolated(divmod, 7, 2) == (3, 1)
