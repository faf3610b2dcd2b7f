"""Spec values (not only keys) are checked at construction: types, ranges, NaN/inf, capacities.

Most checks fail before any graph is built, so those tests build nothing (`auto_build=False`
fails even earlier: in the constructor's spec checks).
"""
import json
import logging
import math
import os

import numpy as np
import pytest

from agent_helpers import _spec
from rlgraph.agents import Agent, DQNAgent
from rlgraph.agents.specs import check_bool, check_number, check_seed
from rlgraph.cli.main import main
from rlgraph.components.memories import memory_size
from rlgraph.components.memories.mem_prioritized_replay import MemPrioritizedReplay
from rlgraph.components.memories.memory_size import check_memory_size, format_bytes, record_bytes
from rlgraph.execution.ray.specs import split_ray_spec
from rlgraph.execution.run_files import RunLogs
from rlgraph.execution.training import apply_overrides, resolve_config
from rlgraph.spaces import BoolBox, Dict, FloatBox, IntBox
from rlgraph.utils import RLGraphSpecError

NAN, INF = float("nan"), float("inf")


def _raises(key_path, value, build, *args, **kwargs):
    """Asserts that build(...) raises an RLGraphSpecError naming `key_path` and `value`; returns the message."""
    with pytest.raises(RLGraphSpecError) as info:
        build(*args, **kwargs)
    message = str(info.value)
    assert key_path in message and repr(value) in message, message
    return message


# --- Agent specs --------------------------------------------------------------------------------
BAD_AGENT_VALUES = [
    ("discount", None, 1.5), ("discount", None, -0.1), ("discount", None, NAN), ("discount", None, "0.9"),
    ("update_spec", "sync_tau", 0.0), ("update_spec", "sync_tau", 1.01), ("update_spec", "sync_tau", NAN),
    ("update_spec", "batch_size", NAN), ("update_spec", "batch_size", 0), ("update_spec", "batch_size", 2.5),
    ("update_spec", "batch_size", "64"), ("update_spec", "update_interval", INF),
    ("update_spec", "steps_before_update", -1), ("update_spec", "sync_interval", -32),
    ("update_spec", "update_steps", True), ("update_spec", "do_updates", "no"), ("update_spec", "do_updates", 1),
    ("update_spec", "update_mode", "episodes"),
    ("observe_spec", "buffer_size", 0), ("observe_spec", "buffer_enabled", "yes"),
    ("execution_spec", "seed", -1), ("execution_spec", "seed", 2 ** 32), ("execution_spec", "seed", 1.5),
    ("execution_spec", "tf_num_threads", -3), ("execution_spec", "torch_num_threads", 0),
    ("execution_spec", "torch_num_threads", 2.5), ("execution_spec", "max_timesteps", 0),
    ("execution_spec", "max_timesteps", -100), ("execution_spec", "mode", "distributed"),
    ("execution_spec", "torch_flush_denormal", "true"),
    ("saver_spec", "max_checkpoints", 0), ("saver_spec", "checkpoint_frequency", -5), ("saver_spec", "directory", 3),
    ("summary_spec", "summary_interval", -1), ("summary_spec", "summary_interval", NAN),
    ("summary_spec", "summary_regexp", "(unclosed"), ("summary_spec", "directory", ["logs"]),
    ("memory_spec", "capacity", 0), ("memory_spec", "capacity", INF), ("memory_spec", "capacity", "1e6"),
]


@pytest.mark.parametrize("section, key, value", BAD_AGENT_VALUES)
def test_bad_agent_value_names_the_key_path_and_the_value(section, key, value):
    if key is None:
        overrides = {section: value}
    else:
        base = {"memory_spec": {"type": "replay-memory"}}.get(section, {})
        overrides = {section: dict(base, **{key: value})}
    path = section if key is None else f"{section}.{key}"
    _raises(path, value, DQNAgent, **_spec("pytorch", auto_build=False, **overrides))


def test_messages_state_the_range():
    message = _raises("update_spec.sync_tau", 0.0, DQNAgent, **_spec("pytorch", auto_build=False,
                                                                    update_spec={"sync_tau": 0.0}))
    assert "in (0, 1]" in message
    message = _raises("execution_spec.seed", -1, DQNAgent, **_spec("pytorch", auto_build=False,
                                                                  execution_spec={"seed": -1}))
    assert "[0, 4294967295]" in message
    message = _raises("update_spec.do_updates", "no", DQNAgent, **_spec("pytorch", auto_build=False,
                                                                       update_spec={"do_updates": "no"}))
    assert "true or false" in message


def test_documented_edge_values_construct_and_are_normalized():
    agent = DQNAgent(**_spec("pytorch", auto_build=False, discount=1, update_spec={
        "sync_tau": 1, "sync_interval": 0, "steps_before_update": 0, "batch_size": 8.0, "do_updates": np.bool_(False)},
        execution_spec={"seed": 2 ** 32 - 1, "max_timesteps": 1e3, "tf_num_threads": 1, "torch_num_threads": None},
        summary_spec={"summary_interval": 0, "summary_regexp": "loss"}, saver_spec={"max_checkpoints": 1},
        memory_spec={"type": "replay-memory", "capacity": 16.0}))
    assert agent.discount == 1.0 and agent.update_spec["batch_size"] == 8 and type(agent.update_spec["batch_size"]) is int
    assert agent.update_spec["do_updates"] is False and agent.execution_spec["max_timesteps"] == 1000
    assert agent.memory_spec["capacity"] == 16 and type(agent.memory_spec["capacity"]) is int
    assert DQNAgent(**_spec("pytorch", auto_build=False, discount=0.0, execution_spec={"seed": 0})).discount == 0.0


def test_summary_regexp_reaches_the_graph_builder():
    agent = DQNAgent(**_spec("pytorch", summary_spec={"summary_regexp": "q-values"}))
    try:
        assert agent.graph_executor.graph_builder.summary_regexp == "q-values"
    finally:
        agent.terminate()


def test_batch_size_above_the_capacity_warns(caplog):
    with caplog.at_level(logging.WARNING, logger="rlgraph.agents.dqn.agent"):
        agent = DQNAgent(**_spec("pytorch", update_spec={"batch_size": 32}))  # capacity 16
    agent.terminate()
    assert any("update_spec.batch_size 32 exceeds the memory's capacity 16" in r.getMessage() for r in caplog.records)


# --- Memory capacities --------------------------------------------------------------------------
def test_record_bytes_and_format_by_hand():
    # A DQN record of FloatBox(4) states and IntBox(3) actions: states 4 * 4 + next_states 4 * 4
    # + actions 4 (int32) + rewards 4 (float32) + terminals 1 (bool) = 41 bytes.
    space = Dict(states=FloatBox(shape=(4,)), next_states=FloatBox(shape=(4,)), actions=IntBox(3),
                 rewards=FloatBox(), terminals=BoolBox())
    assert record_bytes(space) == 41
    assert format_bytes(10 ** 12 * 8) == "7.3 TiB" and format_bytes(1023) == "1023 B"


def test_capacity_beyond_the_ram_is_refused_with_the_figure(monkeypatch):
    monkeypatch.setattr(memory_size, "physical_memory_bytes", lambda: 2 ** 20)  # A 1 MiB machine.
    with pytest.raises(RLGraphSpecError) as info:
        check_memory_size(100_000, 100_000 * 41, "replay-memory")
    message = str(info.value)
    # 4,100,000 B = 3.91 MiB; 1 MiB / 41 B = 25575 records fit.
    assert "capacity 100000 needs ~3.9 MiB (41 B per record)" in message and "1.0 MiB" in message
    assert "25575" in message and "memory_spec.capacity" in message
    check_memory_size(25_000, 25_000 * 41, "replay-memory")  # Fits: no error.


@pytest.mark.parametrize("memory_type", ["replay-memory", "mem-prioritized-replay"])
def test_agent_with_an_impossible_capacity_is_refused_before_allocating(backend, memory_type):
    # 10**15 records of >= 32 bytes are ~30 PiB: more than any machine's RAM.
    with pytest.raises(RLGraphSpecError, match=r"capacity 1000000000000000 needs ~\d+\.\d PiB"):
        DQNAgent(**_spec(backend, memory_spec={"type": memory_type, "capacity": 10 ** 15}))


def test_in_graph_memories_are_checked_at_construction(monkeypatch):
    monkeypatch.setattr(memory_size, "physical_memory_bytes", lambda: 2 ** 20)  # A 1 MiB machine.
    # 10**5 records of 41 bytes (see above) plus two float32 trees of 2 * 2**17 nodes (2 MiB):
    # 4,100,000 + 2,097,152 bytes = 5.9 MiB, 62 B per record.
    with pytest.raises(RLGraphSpecError, match=r"capacity 100000 needs ~5\.9 MiB \(62 B per record\)"):
        DQNAgent(**_spec("pytorch", auto_build=False, memory_spec={"type": "prioritized-replay",
                                                                   "capacity": 100_000}))
    # Its indices are int32: beyond 2**31 records it is refused whatever the RAM.
    _raises("capacity", 10 ** 12, DQNAgent, **_spec("pytorch", auto_build=False, memory_spec={
        "type": "prioritized-replay", "capacity": 10 ** 12}))


def test_mem_prioritized_replay_checks_its_record_storage(monkeypatch):
    monkeypatch.setattr(memory_size, "physical_memory_bytes", lambda: 2 ** 30)
    space = Dict(s=FloatBox(shape=(84, 84, 4)))  # 112,896 bytes per record
    with pytest.raises(RLGraphSpecError, match=r"capacity 10000 needs ~1\.1 GiB"):
        MemPrioritizedReplay(capacity=10_000, record_space=space)
    memory = MemPrioritizedReplay(capacity=10_000)  # Records unknown yet: the first insert checks them.
    with pytest.raises(RLGraphSpecError, match="capacity 10000"):
        memory.insert_records({"s": np.zeros((1, 84, 84, 4), np.float32)})
    with pytest.raises(RLGraphSpecError, match="seed"):
        MemPrioritizedReplay(capacity=4, seed=-1)


# --- training_spec and the command line ---------------------------------------------------------
def _config(**training):
    return {"type": "dqn", "network_spec": [{"type": "dense", "units": 4}],
            "environment_spec": {"type": "grid-world", "world": "4x4"}, "training_spec": training}


@pytest.mark.parametrize("key, value", [
    ("log_interval", 0), ("log_interval", -10), ("checkpoint_interval", -1), ("evaluation_interval", -5000),
    ("stop_at_return", "475"), ("stop_at_return", NAN), ("stop_at_return", True), ("num_timesteps", 0),
    ("num_timesteps", 1.5), ("num_environments", 0), ("evaluation_episodes", 0), ("max_timesteps_per_episode", -1),
])
def test_bad_training_spec_value(key, value):
    _raises(f"training_spec.{key}", value, resolve_config, _config(**{key: value}))


def test_training_spec_off_values_and_normalization():
    spec = resolve_config(_config(evaluation_interval=0, checkpoint_interval=0, max_timesteps_per_episode=0,
                                  num_timesteps=1e4, stop_at_return=-3))["training_spec"]
    assert spec["num_timesteps"] == 10000 and type(spec["num_timesteps"]) is int and spec["stop_at_return"] == -3.0


def test_nan_override_fails_at_agent_construction():
    config = apply_overrides(_config(), ["update_spec.batch_size=NaN"])
    assert math.isnan(config["update_spec"]["batch_size"])
    config = resolve_config(config)
    agent_spec = {k: v for k, v in config.items() if k not in ("environment_spec", "training_spec")}
    _raises("update_spec.batch_size", NAN, Agent.from_spec, agent_spec, state_space=FloatBox(shape=(2,)),
            action_space=IntBox(2), backend="pytorch", auto_build=False)


def test_cli_negative_seed_and_nan_override_are_clear_errors(capsys, tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(_config(num_timesteps=10)))
    assert main(["train", str(path), "--seed", "-1", "--output-dir", str(tmp_path / "run"), "--no-progress"]) == 2
    error = capsys.readouterr().err
    assert "--seed" in error and "-1" in error
    _raises("--seed", -1, resolve_config, _config(), seed=-1)  # `train(seed=...)` from python too.
    assert main(["train", str(path), "--set", "update_spec.batch_size=NaN", "--output-dir", str(tmp_path / "run"),
                 "--no-progress"]) == 2
    error = capsys.readouterr().err
    assert "update_spec.batch_size" in error and "nan" in error
    assert not (tmp_path / "run" / "config.json").exists()  # Refused before the run wrote anything.


def test_checkpoint_frequency_sets_the_checkpoint_interval():
    config = dict(_config(), saver_spec={"checkpoint_frequency": 200})
    assert resolve_config(config)["training_spec"]["checkpoint_interval"] == 200
    config = dict(_config(checkpoint_interval=300), saver_spec={"checkpoint_frequency": 200})
    with pytest.raises(RLGraphSpecError, match="checkpoint_frequency"):
        resolve_config(config)
    with pytest.raises(RLGraphSpecError, match="saver_spec.max_checkpoints"):
        resolve_config(dict(_config(), saver_spec={"max_checkpoints": -1}))


def test_max_checkpoints_keeps_the_newest_periodic_checkpoints(tmp_path):
    logs = RunLogs(str(tmp_path), dict(_config(), saver_spec={"max_checkpoints": 2}))

    def store(path, extra_files=None):
        os.makedirs(path)
        return path

    for step in (100, 200, 300):
        logs.periodic_checkpoint(step, store)
    logs.checkpoint("final", store)
    logs.close()
    assert sorted(os.listdir(tmp_path / "checkpoints")) == ["final", "step-200", "step-300"]


def test_summary_spec_directory_and_interval(tmp_path):
    config = dict(_config(), summary_spec={"directory": str(tmp_path / "tb"), "summary_interval": 100})
    logs = RunLogs(str(tmp_path / "run"), config)
    points = []
    logs.tensorboard.add_scalar = lambda name, value, step: points.append(step)
    for step in (50, 100, 150, 200, 260):
        logs.log_scalars(step, {"train/loss": 1.0})
    logs.close()
    assert points == [50, 150, 260]  # At most one point per 100 env steps.
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(tmp_path / "tb"))


# --- Ape-X ray_spec -----------------------------------------------------------------------------
@pytest.mark.parametrize("section, key, value", [
    ("executor_spec", "num_cpus_per_worker", INF), ("executor_spec", "num_gpus_per_worker", NAN),
    ("executor_spec", "actor_start_timeout", 0), ("executor_spec", "num_cpus", -2),
    ("executor_spec", "discard_queued_samples", "no"), ("executor_spec", "redis_address", 6379),
    ("worker_spec", "exploration_min_value", 1.5), ("worker_spec", "seed", -1),
    ("worker_spec", "worker_executes_exploration", "yes"),
    ("apex_replay_spec", "clip_rewards", 0), ("apex_replay_spec", "snapshot_interval", NAN),
])
def test_bad_ray_spec_value(section, key, value):
    config = {"type": "apex", "execution_spec": {"ray_spec": {section: {key: value}}}}
    message = _raises(key, value, split_ray_spec, config)
    assert section in message


@pytest.mark.parametrize("key, value", [("alpha", -0.5), ("beta", NAN), ("epsilon", 0.0), ("capacity", 1.5)])
def test_bad_ray_memory_spec_value(key, value):
    config = {"type": "apex", "execution_spec": {"ray_spec": {"apex_replay_spec": {"memory_spec": {key: value}}}}}
    _raises(f"memory_spec.{key}", value, split_ray_spec, config)


# --- The helpers --------------------------------------------------------------------------------
def test_check_helpers():
    assert check_number(3.0, "k", "o", low=1, integer=True) == 3 and check_number(0.5, "k", "o", 0, 1) == 0.5
    # Integers are int64 downstream (numpy, the backends): 2**63 - 1 is the largest count.
    assert check_number(2 ** 63 - 1, "k", "o", low=1, integer=True) == 2 ** 63 - 1
    for huge in (2 ** 63, 10 ** 30, 1e30, -(2 ** 64)):
        _raises("s.k", huge, check_number, huge, "s.k", "owner", integer=True)
    assert check_number(1e30, "k", "o") == 1e30  # (A float needs only be finite.)
    assert check_number(None, "k", "o", allow_none=True) is None and check_seed(None, "k", "o") is None
    assert check_bool(np.bool_(True), "k", "o") is True
    for value in (np.float32("nan"), np.bool_(True), [1], None):
        _raises("s.k", value, check_number, value, "s.k", "owner")
    _raises("s.k", 1.0, check_number, 1.0, "s.k", "owner", 0, 1, high_inclusive=False)
    _raises("s.k", 0, check_bool, 0, "s.k", "owner")
