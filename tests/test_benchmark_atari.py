"""`rlgraph benchmark atari`: PPO on Pong, rlgraph against SB3 with the same hyperparameters."""
import importlib.util
import json

import pytest
from sb3_peer_helpers import needs_sb3

from rlgraph.benchmarks import BENCHMARKS, atari
from rlgraph.utils.rlgraph_errors import RLGraphError
from rlgraph.utils.specifiable import load_spec_file

needs_atari = pytest.mark.skipif(not all(importlib.util.find_spec(m) for m in ("ale_py", "cv2")),
                                 reason="the atari extra (ale-py, OpenCV) is not installed")


def test_sb3_gets_the_hyperparameters_of_the_shipped_config():
    """configs/ppo_pong.json read as SB3's arguments: CleanRL's / the zoo's Atari PPO."""
    assert BENCHMARKS["atari"][0] == "rlgraph.benchmarks.atari"
    hp = atari.ppo_hyperparameters(load_spec_file(atari.CONFIG_FILE))
    assert hp == {"n_envs": 8, "n_steps": 128, "batch_size": 256, "n_epochs": 4, "gamma": 0.99, "gae_lambda": 0.95,
                  "clip_range": 0.1, "clip_range_vf": 0.1, "ent_coef": 0.01, "vf_coef": 0.5,
                  "learning_rate": 0.00025, "adam_epsilon": 1e-05, "max_grad_norm": 0.5}


@needs_sb3
@needs_atari
def test_a_tiny_run_times_rlgraph_and_sb3_with_the_same_updates(tmp_path):
    """2 envs x 8 steps, minibatches of 8, one epoch: 32 env steps are 2 rollouts of 2 gradient steps."""
    config = load_spec_file(atari.CONFIG_FILE)
    config["update_spec"] = {"batch_size": 16, "sample_size": 8, "num_epochs": 1}
    config["training_spec"]["num_environments"] = 2
    path = tmp_path / "ppo_pong_tiny.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "atari.json"
    result = atari.main(["--steps", "32", "--config", str(path), "--contenders", "rlgraph-sync", "sb3-subproc",
                         "--out", str(out)])
    runs = {run["contender"]: run for run in result["runs"]}
    assert set(runs) == {"rlgraph-sync", "sb3-subproc"}, result["runs"]
    assert runs["sb3-subproc"]["env_steps"] == 32 and runs["rlgraph-sync"]["env_steps"] == 34
    assert runs["rlgraph-sync"]["num_updates"] == runs["sb3-subproc"]["num_updates"] == 4
    assert all(run["steps_per_s"] > 0 and run["ratio_vs_sb3"] is None for run in runs.values())  # (No sb3-dummy.)
    written = json.loads(out.read_text())
    assert written["steps"] == 32 and written["device"] == "cpu" and written["complete"] is True


def test_a_run_cut_short_keeps_the_contenders_it_measured(tmp_path, monkeypatch):
    """The results are written after each contender (a device lease or a timeout may end the run):
    the file then holds the finished contenders and says the run is not complete."""
    calls = []

    def run_isolated(fn, *args):
        calls.append(fn.__name__)
        if len(calls) == 2:
            raise KeyboardInterrupt  # (The run is stopped during the second contender.)
        return {"contender": "x", "env_steps": 10, "wall_s": 1.0, "steps_per_s": 10.0, "update_s": 0.5,
                "num_updates": 2}

    monkeypatch.setattr(atari, "run_isolated", run_isolated)
    out = tmp_path / "atari.json"
    with pytest.raises(KeyboardInterrupt):
        atari.main(["--contenders", "rlgraph-sync", "sb3-dummy", "--out", str(out)])
    written = json.loads(out.read_text())
    assert written["complete"] is False and [run["algo"] for run in written["runs"]] == ["ppo"]
    assert written["runs"][0]["steps_per_s"] == 10.0 and calls == ["run_rlgraph", "run_sb3"]


@pytest.mark.parametrize("device", ["auto", "cpu:1", "tpu"])
def test_a_device_that_is_not_one_for_both_libraries_is_refused_before_any_run(device, tmp_path, monkeypatch):
    """Both libraries' networks run on --device: "auto" (which could differ between them), a logical
    CPU (SB3 has none) and a name of no device are refused, naming the option, before a contender runs."""
    monkeypatch.setattr(atari, "run_isolated", lambda *args: pytest.fail("a contender ran"))
    with pytest.raises(RLGraphError, match=r"--device") as error:
        atari.main(["--device", device, "--contenders", "rlgraph-sync", "--out", str(tmp_path / "x.json")])
    assert repr(device) in str(error.value) or device in str(error.value)


@needs_sb3
@needs_atari
def test_a_tiny_dqn_run_gives_both_libraries_the_same_updates(tmp_path, monkeypatch):
    """Learning from step 140 (rlgraph's memory, which configs/dqn_pong.json fills through an observe
    buffer of 100 records, holds a batch of 32 by then), a batch every 4 steps: 200 env steps are 15
    gradient steps in both."""
    monkeypatch.setattr(atari, "DQN_AS_SB3", dict(atari.DQN_AS_SB3, update_spec=dict(
        atari.DQN_AS_SB3["update_spec"], steps_before_update=140)))
    rows = {name: atari.run_dqn_rlgraph(atari.DQN_CONFIG_FILE, 200, 1) if name == "dqn-rlgraph" else
            atari.run_dqn_sb3(atari.DQN_CONFIG_FILE, 200, 1) for name in atari.DQN_CONTENDERS}
    assert {name: (row["env_steps"], row["num_updates"]) for name, row in rows.items()} == {
        "dqn-rlgraph": (200, 15), "dqn-sb3": (200, 15)}
