"""The `rlgraph` console script."""
import json
import subprocess
import sys

import pytest

import rlgraph
from rlgraph.cli.main import EXIT_UNAVAILABLE, main


def test_info(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert f"rlgraph {rlgraph.__version__}" in out and "backend tf" in out and "default backend: pytorch" in out


def test_train_reads_the_config_and_says_it_is_not_available(capsys, tmp_path):
    config = tmp_path / "agent.json"
    config.write_text(json.dumps({"type": "dqn"}))
    assert main(["train", str(config)]) == EXIT_UNAVAILABLE
    captured = capsys.readouterr()
    assert "agent type 'dqn'" in captured.out
    assert "not available yet" in captured.err and "Nothing was run" in captured.err


def test_train_with_a_missing_config(capsys):
    assert main(["train", "no/such/config.json"]) == 2
    assert "spec file not found" in capsys.readouterr().err


def test_shipped_config_parses(capsys):
    assert main(["train", "configs/dqn_cartpole.json"]) == EXIT_UNAVAILABLE


def test_version_flag():
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0


def test_console_script_is_installed():
    result = subprocess.run([sys.executable, "-m", "rlgraph.cli.main", "info"], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0 and "rlgraph" in result.stdout
