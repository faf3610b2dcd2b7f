"""`import rlgraph` (and spaces, utils, environments) must not import TensorFlow or PyTorch,
must be fast, and must not write to the home directory. Each check runs in a fresh interpreter."""
import json
import os
import subprocess
import sys

import pytest

BACKEND_MODULES = ("tensorflow", "torch", "keras", "ray")


def _run(code, env=None):
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("module", ["rlgraph", "rlgraph.spaces", "rlgraph.utils", "rlgraph.environments",
                                    "rlgraph.cli.main", "rlgraph.utils.numpy", "rlgraph.utils.nest",
                                    "rlgraph.utils.decorators", "rlgraph.components", "rlgraph.graphs",
                                    "rlgraph.tests", "rlgraph.agents", "rlgraph.execution",
                                    "rlgraph.execution.training", "rlgraph.utils.run_logs"])
def test_module_imports_no_backend(module):
    code = (f"import sys, json, {module}\n"
            f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {BACKEND_MODULES!r})))")
    assert json.loads(_run(code)) == []


def test_spaces_work_without_backend_imports():
    code = ("import sys\n"
            "from rlgraph.spaces import Dict, IntBox, FloatBox, TextBox\n"
            "s = Dict(a=IntBox(3, shape=(2,)), b=FloatBox(shape=(1,)), c=TextBox(), add_batch_rank=True)\n"
            "assert s.contains(s.sample(4))\n"
            "s.flatten(); s.get_shape(with_batch_rank=True)\n"
            "print(any(m.split('.')[0] in ('tensorflow', 'torch') for m in sys.modules))")
    assert _run(code).strip() == "False"


def test_import_writes_nothing_to_home(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, HOME=str(home))
    _run("import rlgraph, rlgraph.spaces, rlgraph.utils, rlgraph.environments; rlgraph.get_backend()", env=env)
    assert list(home.iterdir()) == []


def test_import_is_fast():
    code = ("import time; t = time.perf_counter(); import rlgraph.spaces, rlgraph.environments; "
            "print(time.perf_counter() - t)")
    # Generous bound for a loaded 2-core machine; a backend import alone takes seconds.
    assert float(_run(code)) < 1.5


def test_components_never_import_environments():
    # DESIGN's layer table: components sit below environments. The EnvironmentStepper gets its environments from a
    # factory or from the maker rlgraph.environments registers (rlgraph/utils/environment_maker.py), never by import.
    import ast
    from pathlib import Path
    root = Path(__file__).resolve().parent.parent / "rlgraph" / "components"
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(root.parent)}:{node.lineno}" for name in names
                      if name == "rlgraph.environments" or name.startswith("rlgraph.environments.")]
    assert found == []
