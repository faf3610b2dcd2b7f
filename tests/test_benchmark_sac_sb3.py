"""Smoke test of the `sac-sb3` benchmark: a --quick run per backend, checked for structure and sanity."""
from sb3_peer_helpers import check_missing_sb3, check_rows, check_summary, needs_sb3, quick_run

from rlgraph.benchmarks import sac_vs_sb3


@needs_sb3
def test_quick_run_writes_per_seed_rows_and_a_consistent_summary(backend, tmp_path):
    _, written = quick_run("sac-sb3", backend, tmp_path)
    assert written["env"] == "Pendulum-v1" and written["hyperparameters"]["batch_size"] == 64
    # --quick: 600 env steps, random actions and no updates for the first 100, then one gradient step per env
    # step (rlgraph's first once the memory holds a batch of 64: from step 100 as well).
    rows = check_rows(written, backend, min_steps=600)
    for row in rows.values():
        assert row["env_steps"] == 600 and abs(row["num_updates"] - 500) <= 5
        assert -16.3 * 200 <= row["final_return"] <= 0.0  # Pendulum's reward per step lies in [-16.3, 0].
    check_summary(written, backend, sac_vs_sb3.TARGET_RATIOS)
    assert written["summary"][f"rlgraph-{backend}"]["meets_target"] is None  # No SAC target.


def test_rlgraph_config_matches_the_sb3_settings():
    config = sac_vs_sb3.rlgraph_config(sac_vs_sb3.HYPERPARAMETERS, "pytorch", steps=20_000, seed=3, threads=1)
    assert (config["type"], config["discount"], config["double_q"]) == ("sac", 0.99, True)
    assert (config["initial_alpha"], config["target_entropy"], config["warmup_random_steps"]) == (1.0, "auto", 100)
    assert config["memory_spec"] == {"type": "replay-memory", "capacity": 20_000}  # Never full, as SB3's 1e6.
    assert config["observe_spec"] == {"buffer_size": 1}
    assert config["update_spec"] == {"update_interval": 1, "steps_before_update": 100, "batch_size": 256,
                                     "num_iterations": 1, "sync_interval": 0, "sync_tau": 0.005}
    adam = {"type": "adam", "learning_rate": 1e-3, "epsilon": 1e-8}
    assert config["optimizer_spec"] == config["value_function_optimizer_spec"] == config["alpha_optimizer_spec"] == adam
    for network in (config["network_spec"], config["value_function_spec"]):
        assert [(layer["units"], layer["activation"]) for layer in network] == [(256, "relu"), (256, "relu")]
    assert config["execution_spec"]["max_timesteps"] == 20_000 and config["execution_spec"]["seed"] == 3


def test_actions_reach_pendulum_as_float32_arrays():
    for action in (0.5, [0.5], [[0.5]]):
        converted = sac_vs_sb3.to_env_action(action)
        assert converted.dtype.name == "float32" and converted.tolist() == [0.5]


def test_missing_sb3_names_the_bench_extra(monkeypatch, tmp_path):
    check_missing_sb3(sac_vs_sb3, "sac-sb3", monkeypatch, tmp_path)
