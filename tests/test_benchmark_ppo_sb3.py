"""Smoke test of the `ppo-sb3` benchmark: a --quick run per backend, checked for structure and sanity."""
import math

from sb3_peer_helpers import check_missing_sb3, check_rows, check_summary, needs_sb3, quick_run

from rlgraph.benchmarks import ppo_vs_sb3, sb3_peer


@needs_sb3
def test_quick_run_writes_per_seed_rows_and_a_consistent_summary(backend, tmp_path):
    _, written = quick_run("ppo-sb3", backend, tmp_path)
    assert written["hyperparameters"]["n_epochs"] == 2
    # --quick: one seed of 1,024 env steps on 8 envs = 4 rollouts of 256, 2 epochs each.
    rows = check_rows(written, backend, min_steps=1024)
    assert all(row["env_steps"] == 1024 for row in rows.values())  # A multiple of 8 envs and of 256.
    assert all(row["final_return"] >= 1.0 for row in rows.values())  # A CartPole episode earns >= 1.
    assert rows["sb3"]["num_updates"] == 4 * 2  # 4 rollouts x 2 epochs x one minibatch of 256.
    # rlgraph updates once its rollout holds >= 256 transitions; the 4th waits for one more step.
    assert rows[f"rlgraph-{backend}"]["num_updates"] >= 3 * 2
    check_summary(written, backend, ppo_vs_sb3.TARGET_RATIOS)


def test_rlgraph_config_matches_the_sb3_settings():
    config = ppo_vs_sb3.rlgraph_config(ppo_vs_sb3.HYPERPARAMETERS, "pytorch", steps=100_000, seed=3, threads=1)
    assert (config["type"], config["discount"], config["gae_lambda"]) == ("ppo", 0.98, 0.8)
    assert config["clip_ratio"] == ["linear", 0.2, 0.0] and config["standardize_advantages"] is True
    assert (config["weight_entropy"], config["weight_vf"]) == (0.0, 1.0)  # rlgraph halves the squared error.
    assert config["update_spec"] == {"batch_size": 8 * 32, "sample_size": 256, "num_epochs": 20}
    assert config["optimizer_spec"] == {"type": "adam", "learning_rate": ["linear", 1e-3, 0.0], "epsilon": 1e-5,
                                        "clip_grad_norm": 0.5}
    for network in (config["network_spec"], config["value_function_spec"]):
        assert [(layer["units"], layer["activation"]) for layer in network] == [(64, "tanh"), (64, "tanh")]
        assert all(layer["weights_spec"] == {"type": "orthogonal", "gain": math.sqrt(2)} for layer in network)
    assert config["action_adapter_spec"]["weights_spec"] == {"type": "orthogonal", "gain": 0.01}
    assert config["execution_spec"]["max_timesteps"] == 100_000 and config["execution_spec"]["seed"] == 3
    assert config["training_spec"]["num_environments"] == 8


def test_summary_means_ratios_and_targets():
    def row(library, seed, steps_per_s, final):
        return sb3_peer.make_row(library, seed, wall=100.0, cpu=90.0, env_steps=int(steps_per_s * 100), updates=1,
                                 final=final, update_s=60.0)
    rows = [row("rlgraph-pytorch", 1, 1300.0, 500.0), row("sb3", 1, 1000.0, 400.0),
            row("rlgraph-pytorch", 2, 1200.0, 300.0), row("sb3", 2, 1000.0, 500.0)]
    summary = sb3_peer.summarize(rows, ["pytorch"], {"pytorch": 1.3})
    assert (summary["rlgraph-pytorch"]["steps_per_s"], summary["sb3"]["steps_per_s"]) == (1250.0, 1000.0)
    assert summary["rlgraph-pytorch"]["ratio_vs_sb3"] == 1.25 and summary["rlgraph-pytorch"]["meets_target"] is False
    assert (summary["rlgraph-pytorch"]["final_return"], summary["sb3"]["final_return"]) == (400.0, 450.0)
    assert rows[0]["collect_s"] == 40.0
    assert sb3_peer.summarize(rows, ["pytorch"], {})["rlgraph-pytorch"]["meets_target"] is None


def test_missing_sb3_names_the_bench_extra(monkeypatch, tmp_path):
    check_missing_sb3(ppo_vs_sb3, "ppo-sb3", monkeypatch, tmp_path)
