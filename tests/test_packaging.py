"""The install story: README commands, CI script, extras and pins stay consistent."""
import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands():
    text = (ROOT / "README.md").read_text()
    return [line.strip() for line in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_readme_has_the_two_setup_commands():
    commands = _readme_commands()
    assert any("rlgraph train configs/dqn_cartpole.json" in c for c in commands)
    assert any("pytest" in c for c in commands)
    assert all("-c constraints.txt" in c for c in commands if "pip install" in c)


def test_ci_runs_the_readme_test_command_verbatim():
    test_command = next(c for c in _readme_commands() if "pytest" in c)
    assert test_command in (ROOT / ".ci" / "run").read_text().splitlines()


def test_constraints_pin_the_tested_versions():
    pins = dict(line.split("==") for line in (ROOT / "constraints.txt").read_text().splitlines()
                if "==" in line and not line.startswith("#"))
    assert pins["torch"] == "2.13.0"
    assert pins["tensorflow-cpu"].startswith("2.21")
    assert pins["gymnasium"].startswith("1.")
    assert "dm-tree" in pins and "ray" in pins


def test_setup_declares_the_extras():
    tree = ast.parse((ROOT / "setup.py").read_text())
    extras = next(node.value for node in ast.walk(tree)
                  if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "extras")
    keys = {key.value for key in extras.keys}
    assert {"tf", "torch", "ray", "atari", "test", "docs", "export"} <= keys


def _extras() -> dict:
    """setup.py's extras_require, from running it with setuptools.setup stubbed out."""
    import runpy
    from unittest import mock

    import setuptools
    captured = {}
    with mock.patch.object(setuptools, "setup", lambda **kwargs: captured.update(kwargs)):
        runpy.run_path(str(ROOT / "setup.py"))
    return captured["extras_require"]


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~;\[ ]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_docs_extra_is_tested_and_pinned():
    """The site's packages: the docs extra, also in the test extra (CI builds the site), all pinned."""
    extras = _extras()
    docs = {_name(req) for req in extras["docs"]}
    assert {"mkdocs", "mkdocs-material", "mkdocstrings-python", "mkdocs-gen-files", "mkdocs-literate-nav",
            "mkdocs-section-index"} <= docs
    assert set(extras["docs"]) <= set(extras["test"]) and set(extras["docs"]) <= set(extras["all"])
    pins = {_name(line.split("==")[0]) for line in (ROOT / "constraints.txt").read_text().splitlines()
            if "==" in line and not line.startswith("#")}
    assert docs | {"griffelib", "mkdocs-autorefs", "pymdown-extensions", "markdown"} <= pins


def test_export_extra_is_tested_and_pinned():
    """ONNX export's packages: the export extra, also in the test extra (the suite loads every
    format), all pinned."""
    extras = _extras()
    export = {_name(req) for req in extras["export"]}
    assert export == {"onnx", "onnxscript", "onnxruntime"}
    assert set(extras["export"]) <= set(extras["test"]) and set(extras["export"]) <= set(extras["all"])
    pins = {_name(line.split("==")[0]) for line in (ROOT / "constraints.txt").read_text().splitlines()
            if "==" in line and not line.startswith("#")}
    assert export | {"onnx-ir"} <= pins


def test_layout():
    for path in ("setup.py", "rlgraph", "tests", "configs", "docs", "examples", ".ci/run"):
        assert (ROOT / path).exists(), path


def test_ci_script_fails_when_pytest_collects_nothing_or_fails(tmp_path):
    import subprocess
    script = (ROOT / ".ci" / "run").read_text()
    test_command = next(c for c in _readme_commands() if "pytest" in c)
    (tmp_path / ".ci").mkdir()
    outcomes = {}
    for status in (0, 1, 5):
        (tmp_path / ".ci" / "run").write_text(script.replace(test_command, f"(exit {status})"))
        outcomes[status] = subprocess.run(["bash", str(tmp_path / ".ci" / "run")], capture_output=True).returncode
    assert outcomes == {0: 0, 1: 1, 5: 1}
