"""`rlgraph train` options: --seeds (parallel runs and their statistics), --env (changes only the id),
--algo (no config file) and the generated --help."""
import csv
import json
import os
import runpy
import sys
from unittest import mock

import numpy as np
import pytest
import scipy.stats

from rlgraph.agents import Agent
from rlgraph.cli.main import main
from rlgraph.execution import algo_defaults
from rlgraph.execution.algo_defaults import (ALGO_DEFAULTS, TUNED_CONFIGS, algo_config, algo_names,
                                             shipped_config)
from rlgraph.execution.env_ids import env_id
from rlgraph.execution.multi_seed import mean_ci, t_quantile_975, train_seeds
from rlgraph.execution.training import TRAINING_SPEC_DEFAULTS, make_agent_and_env, resolve_config
from rlgraph.utils.rlgraph_errors import RLGraphSpecError
from rlgraph.utils.run_logs import read_csv
from config_helpers import tiny_config_file


def _tiny_cartpole(tmp_path):
    """configs/dqn_cartpole.json cut to 300 steps (no updates) with an evaluation every 100."""
    return tiny_config_file(tmp_path, "dqn_cartpole.json", num_timesteps=300, evaluation_interval=100,
                            evaluation_episodes=2, log_interval=100, stop_at_return=None)


# --- --seeds ---------------------------------------------------------------------------------------
def test_two_seeds_in_parallel_processes(capsys, tmp_path):
    run = tmp_path / "run"
    assert main(["train", str(_tiny_cartpole(tmp_path)), "--seeds", "1", "2", "--output-dir", str(run)]) == 0
    printed = capsys.readouterr().out
    assert "2 seeds, 2 at a time" in printed and "Student's t" in printed
    rows = list(csv.DictReader(open(run / "summary.csv")))
    assert [row["seed"] for row in rows] == ["1", "2"] and all(row["exit_status"] == "0" for row in rows)
    assert all(row["steps"] == "300" and row["solved_at"] == "" for row in rows)
    for seed in (1, 2):
        config = json.loads((run / f"seed-{seed}" / "config.json").read_text())
        assert config["execution_spec"]["seed"] == seed and config["execution_spec"]["torch_num_threads"] == 1
        assert (run / f"seed-{seed}" / "stderr.log").exists() and not (run / f"seed-{seed}.stderr.log").exists()
    assert (run / "seeds_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # The numbers, recomputed from each seed's evaluations.csv with numpy and scipy's t quantile.
    curves = [read_csv(str(run / f"seed-{seed}" / "evaluations.csv")) for seed in (1, 2)]
    assert all(curve["step"] == [100, 200, 300] for curve in curves)
    returns = np.array([curve["mean_return"] for curve in curves])  # [seeds, points]
    t = scipy.stats.t.ppf(0.975, df=1)
    half_width = t * returns.std(axis=0, ddof=1) / np.sqrt(2)
    aggregate = json.loads((run / "summary.json").read_text())["aggregate"]
    assert aggregate["final_return"]["mean"] == pytest.approx(returns[:, -1].mean())
    assert aggregate["final_return"]["ci95"] == pytest.approx(half_width[-1], rel=1e-5, abs=1e-9)
    assert aggregate["best_return"]["mean"] == pytest.approx(returns.max(axis=1).mean())
    assert [float(row["final_return"]) for row in rows] == pytest.approx(returns[:, -1].tolist())
    band = read_csv(str(run / "seeds_curve.csv"))
    assert band["step"] == [100, 200, 300] and band["mean_return"] == pytest.approx(returns.mean(axis=0).tolist())
    assert [h or 0.0 for h in band["ci95"]] == pytest.approx(half_width.tolist(), rel=1e-5, abs=1e-9)


def _fake_seed_command(config_path, seed, out):
    """Seed 2 fails; seed 1 writes the files of a finished run (two evaluations, solved at 20)."""
    script = ("import os, sys\n"
              f"out = {str(out)!r}\n"
              f"if {seed} == 2:\n"
              "    sys.stderr.write('Traceback: something broke\\n'); sys.exit(3)\n"
              "os.makedirs(out)\n"
              "open(os.path.join(out, 'evaluations.csv'), 'w').write('step,mean_return\\n10,1.5\\n20,4.0\\n')\n"
              "open(os.path.join(out, 'summary.json'), 'w').write('{\"timesteps\": 20, \"solved_at_step\": 20}')\n")
    return [sys.executable, "-c", script]


def test_a_failing_seed_is_reported_and_fails_the_command(capsys, tmp_path):
    run = tmp_path / "run"
    config = resolve_config("configs/dqn_cartpole.json")
    assert train_seeds(config, [1, 2], str(run), command=_fake_seed_command) == 1
    captured = capsys.readouterr()
    assert "seed 2 failed (exit status 3)" in captured.err and "something broke" in captured.err
    assert str(run / "seed-2" / "stderr.log") in captured.err
    rows = list(csv.DictReader(open(run / "summary.csv")))
    assert [(r["seed"], r["exit_status"], r["final_return"], r["best_return"], r["steps"], r["solved_at"])
            for r in rows] == [("1", "0", "4.0", "4.0", "20", "20"), ("2", "3", "", "", "", "")]
    assert "reached stop_at_return: 1 of 1 seeds, at step 20" in captured.out
    # The resolved config all seeds train, without a seed, with one thread per process.
    written = json.loads((run / "config.json").read_text())
    assert "seed" not in written["execution_spec"] and written["execution_spec"]["tf_num_threads"] == 1


def test_seed_options_are_checked(capsys, tmp_path):
    with pytest.raises(SystemExit):  # argparse: --seed and --seeds are exclusive.
        main(["train", "configs/dqn_cartpole.json", "--seed", "1", "--seeds", "1", "2"])
    assert main(["train", "configs/dqn_cartpole.json", "--seeds", "1", "1", "--output-dir", str(tmp_path / "a")]) == 2
    assert "distinct" in capsys.readouterr().err
    assert main(["train", "configs/dqn_cartpole.json", "--seeds", "1", "2", "--jobs", "0"]) == 2
    assert "--jobs" in capsys.readouterr().err
    assert main(["train", "configs/dqn_cartpole.json", "--jobs", "2"]) == 2
    assert "--jobs needs --seeds" in capsys.readouterr().err
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "summary.csv").write_text("")
    assert main(["train", "configs/dqn_cartpole.json", "--seeds", "1", "2", "--output-dir", str(tmp_path / "old")]) == 2
    assert "not empty" in capsys.readouterr().err


def test_t_interval_matches_scipy():
    for df in list(range(1, 40)) + [60, 200, 5000]:
        assert t_quantile_975(df) == pytest.approx(scipy.stats.t.ppf(0.975, df), rel=2e-6)
    # By hand: values 1, 2, 3, 6 -> mean 3, s = sqrt(14 / 3), t(0.975, 3) = 3.182446.
    mean, half_width = mean_ci([1.0, 2.0, 3.0, 6.0])
    assert mean == 3.0 and half_width == pytest.approx(3.182446 * np.sqrt(14 / 3) / 2)
    assert np.isnan(mean_ci([5.0])[1])


# --- --env -----------------------------------------------------------------------------------------
def test_env_changes_only_the_id_and_takes_the_new_reward_threshold():
    config = resolve_config("configs/dqn_cartpole.json", env="CartPole-v0")
    assert config["environment_spec"] == {"type": "openai-gym", "gym_env": "CartPole-v0"}
    assert config["training_spec"]["stop_at_return"] == 195
    # An explicit --set wins; the same id keeps the config's own (tuned) target.
    assert resolve_config("configs/dqn_cartpole.json", env="CartPole-v0",
                          overrides=["training_spec.stop_at_return=150"])["training_spec"]["stop_at_return"] == 150
    assert resolve_config("configs/impala_cartpole.json", env="CartPole-v1")["training_spec"]["stop_at_return"] == 450
    # Atari: frame skip, stacking, no-ops, life loss and fire reset stay; Breakout has no registry threshold.
    pong = json.loads(open("configs/dqn_pong.json").read())
    breakout = resolve_config(pong, env="ALE/Breakout-v5")
    assert breakout["environment_spec"] == dict(pong["environment_spec"], game="ALE/Breakout-v5")
    assert breakout["training_spec"]["stop_at_return"] is None
    # --set on the environment combines with --env.
    config = resolve_config("configs/dqn_cartpole.json", env="Acrobot-v1",
                            overrides=["environment_spec.max_episode_steps=200"])
    assert config["environment_spec"] == {"type": "openai-gym", "gym_env": "Acrobot-v1", "max_episode_steps": 200}
    assert config["training_spec"]["stop_at_return"] == -100
    # A wrapper passes the id on to the environment it wraps.
    wrapped = {"type": "action-repeat", "repeat": 2, "env_spec": {"type": "gym", "gym_env": "CartPole-v1"}}
    assert env_id(resolve_config(dict(pong, environment_spec=wrapped), env="CartPole-v0")["environment_spec"]) == \
        "CartPole-v0"


def test_a_dict_env_replaces_the_section_in_python():
    spec = {"type": "openai-gym", "gym_env": "Acrobot-v1", "max_episode_steps": 100}
    config = resolve_config("configs/dqn_cartpole.json", env=spec)
    assert config["environment_spec"] == spec and config["training_spec"]["stop_at_return"] == -100


def test_env_on_a_type_without_an_id_is_refused(capsys):
    with pytest.raises(RLGraphSpecError, match="has no environment id.*environment_spec.world"):
        resolve_config("configs/dqn_gridworld_4x4.json", env="CartPole-v1")
    assert main(["visualize", "configs/dqn_gridworld_4x4.json", "--env", "CartPole-v1"]) == 2
    assert "'grid-world' has no environment id" in capsys.readouterr().err


# --- --algo ----------------------------------------------------------------------------------------
def test_algo_uses_the_shipped_config_for_its_env(capsys, tmp_path):
    out = tmp_path / "run"
    shipped = json.loads(open("configs/zoo/dqn_cartpole-v1.json").read())  # rl-zoo's pair (test_zoo_configs.py).
    assert main(["train", "--algo", "dqn", "--env", "CartPole-v1", "--steps", "100", "--seed", "1", "--no-progress",
                 "--set", "training_spec.evaluation_interval=0", "--output-dir", str(out)]) == 0
    assert f"config: {shipped_config('zoo/dqn_cartpole-v1.json')}" in capsys.readouterr().out
    written = json.loads((out / "config.json").read_text())
    assert {k: written[k] for k in ("network_spec", "update_spec", "optimizer_spec", "environment_spec", "about")} \
        == {k: shipped[k] for k in ("network_spec", "update_spec", "optimizer_spec", "environment_spec", "about")}
    assert written["training_spec"]["stop_at_return"] is None and written["training_spec"]["num_timesteps"] == 100


@pytest.mark.parametrize("algo, config_file, agent_type", [("ppo", "zoo/ppo_pendulum-v1.json", "PPOAgent"),
                                                         ("td3", "zoo/td3_pendulum-v1.json", "TD3Agent")])
def test_algo_on_pendulum_builds_its_shipped_config(algo, config_file, agent_type):
    config, source = algo_config(algo, "Pendulum-v1")
    assert source == shipped_config(config_file)
    agent, _ = make_agent_and_env(resolve_config(config, backend="pytorch", num_timesteps=100))
    assert type(agent).__name__ == agent_type
    agent.terminate()


@pytest.mark.parametrize("algo, env", [("dqn", "Acrobot-v1"), ("ppo", "MountainCarContinuous-v0"),
                                       ("a2c", "Acrobot-v1"), ("sac", "Acrobot-v1"),
                                       ("sac", "MountainCarContinuous-v0"), ("ddpg", "MountainCarContinuous-v0"),
                                       ("td3", "MountainCarContinuous-v0"), ("impala", "Acrobot-v1"),
                                       ("apex", "Acrobot-v1")])
def test_algo_defaults_build(algo, env, monkeypatch):
    # (Most of these pairs have a zoo config: the defaults are what an env outside the table gets.)
    monkeypatch.setattr(algo_defaults, "zoo_config_name", lambda cls, new_id: None)
    config, source = algo_config(algo, env)
    assert source.endswith("defaults") and config["environment_spec"] == {"type": "openai-gym", "gym_env": env}
    assert config["training_spec"]["stop_at_return"] == {"Acrobot-v1": -100, "MountainCarContinuous-v0": 90}[env]
    agent, _ = make_agent_and_env(resolve_config(config, backend="pytorch", num_timesteps=100))
    assert isinstance(agent, Agent.resolve_type(algo))
    agent.terminate()


def test_algo_on_another_atari_game_uses_its_atari_config():
    config, source = algo_config("dqn", "ALE/Breakout-v5")
    assert source == shipped_config("dqn_pong.json")
    assert config["environment_spec"]["game"] == "ALE/Breakout-v5" and config["environment_spec"]["frame_stack"] == 4


@pytest.mark.parametrize("argv, message", [
    (["--algo", "nonsense", "--env", "CartPole-v1"], "unknown algorithm. Expected one of dqn, ppo"),
    (["--algo", "dqfd", "--env", "CartPole-v1"], "demonstrations"),
    (["--algo", "ddpg", "--env", "CartPole-v1"], "ddpg needs continuous actions"),
    (["--algo", "td3", "--env", "CartPole-v1"], "td3 needs continuous actions"),
    (["--algo", "dqn", "--env", "Pendulum-v1"], "dqn needs discrete actions"),
    (["--algo", "ppo", "--env", "ALE/Breakout-v5"], "no Atari config for ppo"),
    (["--algo", "dqn"], "--algo needs an environment"),
    (["configs/dqn_cartpole.json", "--algo", "dqn", "--env", "CartPole-v1"], "not both"),
    ([], "nothing to train"),
])
def test_algo_errors(capsys, argv, message):
    assert main(["train"] + argv) == 2
    assert message in capsys.readouterr().err


def test_tuned_configs_match_their_files():
    for (cls, new_id), name in TUNED_CONFIGS.items():
        config = json.loads(open(os.path.join("configs", name)).read())
        assert Agent.resolve_type(config["type"]) is cls and env_id(config["environment_spec"]) == new_id, name
        assert shipped_config(name) == os.path.abspath(os.path.join("configs", name))
    assert set(algo_names()) == {name for name, _ in ALGO_DEFAULTS.values()}


def test_setup_installs_the_configs_with_the_package():
    import setuptools
    captured = {}
    with mock.patch.object(setuptools, "setup", lambda **kwargs: captured.update(kwargs)):
        runpy.run_path("setup.py")
    assert "rlgraph.configs" in captured["packages"] and captured["package_dir"]["rlgraph.configs"] == "configs"
    assert captured["package_data"]["rlgraph.configs"] == ["*.json", "zoo/*.json"]


# --- --help ----------------------------------------------------------------------------------------
def test_help_lists_the_training_spec_keys(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--help"])
    assert exit_info.value.code == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    for key, default in TRAINING_SPEC_DEFAULTS.items():
        assert any(line.split() == [key, json.dumps(default)] for line in lines), key
    assert "--set training_spec.stop_at_return=null" in text and "--seeds" in text and "--algo" in text
