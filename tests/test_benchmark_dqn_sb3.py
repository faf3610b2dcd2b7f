"""Smoke test of the `dqn-sb3` benchmark: a --quick run per backend, checked for structure and sanity."""
import json

from sb3_peer_helpers import check_missing_sb3, check_rows, check_summary, needs_sb3, quick_run

from rlgraph.benchmarks import dqn_vs_sb3


@needs_sb3
def test_quick_run_writes_per_seed_rows_and_a_consistent_summary(backend, tmp_path):
    _, written = quick_run("dqn-sb3", backend, tmp_path)
    # --quick is one seed of 600 steps with updates from step 100.
    rows = check_rows(written, backend, min_steps=600)
    assert all(row["final_return"] >= 1.0 for row in rows.values())  # Every CartPole episode earns >= 1.
    check_summary(written, backend, dqn_vs_sb3.TARGET_RATIOS)


def test_rlgraph_config_matches_the_sb3_settings():
    hp = dqn_vs_sb3.HYPERPARAMETERS
    base = json.loads(open(dqn_vs_sb3.DEFAULT_CONFIG).read())
    config = dqn_vs_sb3.rlgraph_config(base, hp, "pytorch", steps=50_000, seed=3, threads=1)
    assert (config["double_q"], config["dueling_q"], config["huber_loss"]) == (False, False, True)
    assert config["memory_spec"]["capacity"] == 100_000
    assert config["optimizer_spec"] == {"type": "adam", "learning_rate": 2.3e-3, "epsilon": 1e-8,
                                      "clip_grad_norm": 10.0}
    assert config["update_spec"] == dict(base["update_spec"], update_interval=256, steps_before_update=1000,
                                         batch_size=64, sync_interval=10, update_steps=128)
    decay = config["exploration_spec"]["epsilon_spec"]["decay_spec"]
    assert (decay["from"], decay["to"], decay["stop_percentage"]) == (1.0, 0.04, 0.16)
    assert config["execution_spec"]["max_timesteps"] == 50_000
    assert [layer["units"] for layer in config["network_spec"]] == [256, 256]


def test_missing_sb3_names_the_bench_extra(monkeypatch, tmp_path):
    check_missing_sb3(dqn_vs_sb3, "dqn-sb3", monkeypatch, tmp_path)


@needs_sb3
def test_sb3_runs_leave_nothing_in_the_temp_dir(tmp_path, monkeypatch):
    """SB3's default logger makes an empty SB3-<time> directory in the temp dir for every `learn`; the
    peers give their models a logger that writes nothing (quiet_logger)."""
    import tempfile

    import stable_baselines3 as sb3

    from rlgraph.benchmarks.sb3_peer import quiet_logger
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.delenv("SB3_LOGDIR", raising=False)
    sb3.DQN("MlpPolicy", "CartPole-v1", learning_starts=10, seed=1).learn(20)
    made = list(tmp_path.glob("SB3-*"))
    assert len(made) == 1  # SB3's own default
    made[0].rmdir()
    quiet_logger(sb3.DQN("MlpPolicy", "CartPole-v1", learning_starts=10, seed=1)).learn(20)
    assert list(tmp_path.glob("SB3-*")) == []
