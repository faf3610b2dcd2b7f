"""`IMPALAExecutor` without Ray (inline mode: the actors are plain objects in this process, and
every call runs at once, so a run is deterministic).

Setup of every test: CartPole, a dense layer of 8 units, rollouts of T = 10 steps of one env
per actor, batches of 4 rows, weights offered after every rollout (weight_sync_steps = T).

How an inline round goes (worked out once here; the tests check its numbers): a workload starts
one `sample` task per actor (it runs at once). Each round processes every finished task in
actor order: its row goes into the FIFO queue, the actor gets the learner's newest weights if
they are newer than its own, and its next task runs at once. Then the learner takes batches of 4
rows while the queue holds 4. With 2 actors a round adds 20 env steps (2 rows), so update k runs
at the end of round 2k.
"""
import json
import os
import shutil

import numpy as np
import pytest

from rlgraph.execution.distributed_training import executor_class
from rlgraph.execution.ray import IMPALAExecutor
from rlgraph.execution.training import is_distributed
from rlgraph.utils.checkpoint_dir import MANIFEST, file_digest
from rlgraph.utils.rlgraph_errors import RLGraphCheckpointError, RLGraphDistributedError, RLGraphSpecError

CARTPOLE = {"type": "openai-gym", "gym_env": "CartPole-v1"}
NET = [{"type": "dense", "units": 8, "activation": "tanh"}]
T = 10  # worker_sample_size: env steps per rollout row.
BATCH = 4  # rows per learner update.


def _config(backend, executor=None, update=None, capacity=8, **agent):
    executor_spec = dict(mode="inline", num_sample_workers=2, weight_sync_steps=T)
    config = {"type": "impala", "backend": backend, "discount": 0.99, "worker_sample_size": T,
              "fifo_queue_spec": {"capacity": capacity}, "network_spec": NET, "reward_clipping": None,
              "update_spec": dict({"batch_size": BATCH}, **(update or {})),
              "optimizer_spec": {"type": "adam", "learning_rate": 0.01},
              "execution_spec": {"seed": 3, "ray_spec": {"executor_spec": dict(executor_spec, **(executor or {})),
                                                         "worker_spec": {"num_worker_environments": 1}}}}
    config.update(agent)
    return config


def _run(executor, num_timesteps):
    return executor.execute_workload({"num_timesteps": num_timesteps, "report_interval": 100,
                                      "report_interval_min_seconds": 0})


def _copy(weights):
    return {k: np.array(v, copy=True) for k, v in weights.items()}


def _weights_equal(a, b):
    return sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)


# --- Workloads ------------------------------------------------------------------------------------


def test_workload_runs_and_reports(backend):
    with IMPALAExecutor(CARTPOLE, _config(backend)) as executor:
        result = _run(executor, 200)
        # 10 rounds of 2 rollouts: 20 rows, 5 updates of 4 rows, nothing left in the queue.
        assert result["timesteps_executed"] == result["env_frames"] == executor.env_timesteps == 200
        assert result["updates"] == result["learner_updates"] == executor.local_agent.num_updates == 5
        assert result["queue_size"] == len(executor.fifo) == 0 and result["records_lost"] == 0
        # Policy lag (learner version - behaviour version per row). The rollout an actor samples in
        # round j (after round j's weight offer) acts with version floor((j - 1) / 2); update k (k - 1
        # updates done) learns from the rollouts sampled in rounds 2k - 2 and 2k - 1: lags 1 and 0
        # for each actor, except update 1 (lags 0). 20 rows: 8 with lag 1 -> mean 0.4, max 1.
        assert isinstance(result["mean_policy_lag"], float)
        assert result["mean_policy_lag"] == pytest.approx(0.4) and result["max_policy_lag"] == 1
        assert np.isfinite(result["mean_loss"]) and result["restarts"] == 0
        # CartPole pays 1 per step: every reported return is its episode's length.
        returns = result["episode_returns"]
        assert result["episodes"] == len(returns) > 0
        assert returns == [float(n) for n in result["episode_lengths"]] and min(returns) >= 1.0
        assert result["mean_episode_return"] == pytest.approx(np.mean(returns))
        # One entry per actor; each has run one task more than was processed (inline calls run at once).
        by_worker = executor.result_by_worker()
        assert len(by_worker["workers"]) == len(by_worker["episode_rewards"]) == 2
        assert [w["worker_index"] for w in by_worker["workers"]] == [0, 1]
        assert by_worker["episode_timesteps"] == [100 + T, 100 + T]
        assert [w["pid"] for w in by_worker["workers"]] == result["worker_pids"] == [os.getpid()] * 2
        worker_returns = [r for returns_ in by_worker["episode_rewards"] for r in returns_]
        assert all(worker_returns.count(r) >= returns.count(r) for r in returns)
        assert executor.result_by_worker(1) == by_worker["workers"][1]


def test_weights_reach_the_actors(backend):
    with IMPALAExecutor(CARTPOLE, _config(backend)) as executor:
        syncs = {0: [], 1: []}
        for actor in executor.actors_list:
            obj = actor.handle.obj
            original = obj.set_weights

            def set_weights(weights, version, _original=original, _index=actor.index):
                # Inline calls run at once: the learner is in the state it had when the weights were sent.
                syncs[_index].append((version, executor.local_agent.num_updates,
                                      _copy(executor.local_agent.get_weights())))
                _original(weights, version)
            obj.set_weights = set_weights
        _run(executor, 200)
        assert executor.local_agent.num_updates == 5
        for actor in executor.actors_list:
            obj = actor.handle.obj
            version, learner_updates, learner_weights = syncs[actor.index][-1]
            # Round 9 offers version 4 (round 10's update 5 comes after its offers).
            assert obj.version == actor.version == version == learner_updates == 4
            assert _weights_equal(obj.agent.get_weights(), learner_weights)
            assert [s[0] for s in syncs[actor.index]] == [1, 2, 3, 4]  # Only newer versions are sent.
            assert obj.stats["weights_set"] == 5  # (+ the initial weights, sent by the constructor.)


def test_a_full_queue_stops_the_actors_and_drops_nothing(backend):
    """Capacity = batch size = 4 rows, updates on: an actor whose rollout finds the queue full gets no
    new task until an update drains it, so the queue holds at most the capacity plus one rollout
    (one env: one row) per actor, and no row is dropped."""
    with IMPALAExecutor(CARTPOLE, _config(backend, capacity=BATCH)) as executor:
        sizes, on_rollout = [], executor._on_rollout

        def record(*args):
            on_rollout(*args)
            sizes.append(len(executor.fifo))
        executor._on_rollout = record
        result = _run(executor, 400)
        steps = result["timesteps_executed"]
        assert max(sizes) == BATCH and steps == 400 and result["updates"] == 400 // T // BATCH
        # No rollout dropped: every processed row is queued or was learned from.
        assert steps == executor.env_timesteps == (result["updates"] * BATCH + len(executor.fifo)) * T
        assert result["discarded"] == 0
        # And every row an actor sampled was processed, or its task is still in flight.
        sampled = sum(executor.result_by_worker()["episode_timesteps"])
        assert sampled == steps + T * sum(len(a.tasks) for a in executor.actors_list)


def test_without_updates_the_queue_keeps_the_newest_rows(backend):
    """Updates off: nothing drains the queue, so instead of stalling the actors (a workload would
    never end) the oldest rows are dropped and counted; the queue holds the capacity, the newest."""
    config = _config(backend, update={"do_updates": False}, capacity=BATCH)
    with IMPALAExecutor(CARTPOLE, config) as executor:
        first = _run(executor, 60)  # (Rounds of 2 actors x 10 steps.)
        second = _run(executor, 100)  # (Used to hang: both actors waited for room that never came.)
        assert (first["timesteps_executed"], second["timesteps_executed"]) == (60, 100)
        assert first["updates"] == second["updates"] == 0 and len(executor.fifo) == BATCH
        assert second["discarded"] == (160 // T) - BATCH  # One row per rollout; all but the newest 4 dropped.


# --- Faults -------------------------------------------------------------------------------------------


def test_killed_actor_is_restarted_and_the_run_goes_on(backend):
    with IMPALAExecutor(CARTPOLE, _config(backend, executor={"max_num_worker_restarts": 2})) as executor:
        first = _run(executor, 40)
        dead = executor.actors_list[0].handle
        executor.actors.kill(dead)
        # The dead actor's task in flight had run before the kill, so it still counts; its next
        # task fails, which the round after notices: it collects only actor 1's 10 steps.
        # Rounds: 20, 10, 20, 20, 20, 20 env steps.
        second = _run(executor, 100)
        assert (first["timesteps_executed"], second["timesteps_executed"]) == (40, 110)
        assert executor.num_restarts == second["restarts"] == 1
        assert [(r["kind"], r["index"]) for r in executor.restart_log] == [("IMPALA actor", 0)]
        fresh = executor.actors_list[0]
        assert fresh.handle is not dead and not fresh.handle.dead and dead.dead
        assert fresh.handle.obj.version == fresh.version >= 2  # It got the learner's newest weights.
        third = _run(executor, 100)
        assert third["timesteps_executed"] == 100 and third["updates"] > 0 and third["restarts"] == 1
        assert executor.env_timesteps == 250 == sum(r["timesteps_executed"] for r in (first, second, third))
        assert len(executor.result_by_worker()["workers"]) == 2


def test_death_beyond_the_restart_budget_raises(backend):
    config = _config(backend, executor={"max_num_worker_restarts": 0, "num_sample_workers": 1})
    with IMPALAExecutor(CARTPOLE, config) as executor:
        _run(executor, 20)
        executor.actors.kill(executor.actors_list[0].handle)
        with pytest.raises(RLGraphDistributedError, match="max_num_worker_restarts"):
            _run(executor, 40)
        assert executor.num_restarts == 1


# --- Checkpoints --------------------------------------------------------------------------------------


def _state(executor):
    return {"weights": _copy(executor.local_agent.get_weights()), "updates": executor.local_agent.num_updates,
            "env_timesteps": executor.env_timesteps, "env_frames": executor.env_frames,
            "actor_versions": [a.handle.obj.version for a in executor.actors_list]}


def _assert_state(executor, state):
    now = _state(executor)
    assert _weights_equal(now.pop("weights"), state["weights"])
    assert now == {k: v for k, v in state.items() if k != "weights"}


def test_checkpoint_round_trip(backend, tmp_path):
    config = _config(backend, executor={"num_sample_workers": 1})
    with IMPALAExecutor(CARTPOLE, config) as first:
        _run(first, 100)  # 10 rows: 2 updates.
        state = _state(first)
        path = first.store_checkpoint(str(tmp_path / "ckpt"))
        assert state["updates"] == 2 and state["env_timesteps"] == 100
    with IMPALAExecutor(CARTPOLE, config) as second:
        assert not _weights_equal(second.local_agent.get_weights(), state["weights"])
        second.load_checkpoint(path)
        assert _weights_equal(second.local_agent.get_weights(), state["weights"])
        assert (second.env_timesteps, second.env_frames, second.local_agent.num_updates) == (100, 100, 2)
        # The actor acts with the restored weights, as version 2.
        obj = second.actors_list[0].handle.obj
        assert obj.version == second.actors_list[0].version == 2
        assert _weights_equal(obj.agent.get_weights(), state["weights"])
        result = _run(second, 40)
        assert result["timesteps_executed"] == 40 and second.env_timesteps == 140 and result["updates"] == 1


def _resign(path, name):
    """Makes the manifest match file `name` again (as if the damaged state had been saved so)."""
    manifest_file = os.path.join(path, MANIFEST)
    with open(manifest_file) as handle:
        manifest = json.load(handle)
    full = os.path.join(path, name)
    manifest["files"][name] = {"bytes": os.path.getsize(full), "sha256": file_digest(full)}
    with open(manifest_file, "w") as handle:
        json.dump(manifest, handle)


def _damage(path, kind):
    state_file = os.path.join(path, "executor_state.json")
    with open(state_file) as handle:
        text = handle.read()
    state = json.loads(text)
    if kind == "missing":
        os.remove(state_file)
    elif kind == "truncated":
        content = text[:len(text) // 2]
    elif kind == "edited":
        content = json.dumps(dict(state, env_timesteps=7))
    else:  # Re-signed below: only the executor's own checks can refuse these.
        content = json.dumps({"not a dict": [1, 2], "negative counter": dict(state, env_timesteps=-1),
                              "bool counter": dict(state, env_frames=True),
                              "other executor": dict(state, executor="ApexExecutor")}[kind])
    if kind != "missing":
        with open(state_file, "w") as handle:
            handle.write(content)
    if kind not in ("missing", "truncated", "edited"):
        _resign(path, "executor_state.json")


def test_corrupted_checkpoints_are_refused_and_change_nothing(backend, tmp_path):
    with IMPALAExecutor(CARTPOLE, _config(backend, executor={"num_sample_workers": 1})) as executor:
        _run(executor, 40)
        good = executor.store_checkpoint(str(tmp_path / "good"))
        _run(executor, 60)  # The executor moves on: a load would now change it.
        state = _state(executor)
        for kind in ("missing", "truncated", "edited", "not a dict", "negative counter", "bool counter",
                     "other executor"):
            path = str(tmp_path / kind.replace(" ", "-"))
            shutil.copytree(good, path)
            _damage(path, kind)
            with pytest.raises(RLGraphCheckpointError):
                executor.load_checkpoint(path)
            _assert_state(executor, state)
        with pytest.raises(RLGraphCheckpointError, match="no checkpoint directory"):
            executor.load_checkpoint(str(tmp_path / "nowhere"))
        _assert_state(executor, state)
        executor.load_checkpoint(good)  # (The good one still loads.)
        assert executor.env_timesteps == 40


# --- Configs ------------------------------------------------------------------------------------------


def test_a_non_impala_agent_is_refused(backend):
    config = _config(backend)
    config["type"] = "dqn"
    with pytest.raises(RLGraphSpecError, match="impala") as info:
        IMPALAExecutor(CARTPOLE, config)
    assert "dqn" in str(info.value)
    with pytest.raises(RLGraphSpecError, match="no distributed executor"):
        executor_class({"type": "dqn"})


def test_impala_configs_are_distributed():
    assert executor_class({"type": "single-impala"}) is IMPALAExecutor
    assert is_distributed({"type": "single-impala"}) and is_distributed({"type": "impala"})
    assert not is_distributed({"type": "dqn"}) and not is_distributed({"type": "no-such-agent"})
    config = IMPALAExecutor.learner_config({"type": "single-impala", "num_workers": 3, "environment_spec": CARTPOLE,
                                            "fifo_queue_spec": {"capacity": 16}, "execution_spec": {"seed": 1}})
    assert (config["type"], config["role"], config["fifo_queue_spec"]) == ("impala", "learner", {"capacity": 16})
    assert config["execution_spec"] == {"seed": 1} and "num_workers" not in config
