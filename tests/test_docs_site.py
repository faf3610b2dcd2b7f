"""The documentation site (mkdocs.yml) builds with `mkdocs build --strict`, and its API reference has an
entry for every public class and function of every public rlgraph module."""
import importlib
import inspect
import os
import pkgutil
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="mkdocs is not installed (the `docs` and `test` extras install it)")

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Builds the site once, strictly (every warning fails the build), into a temporary folder."""
    site_dir = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true")  # Banners, not warnings.
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir)],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    seconds = time.perf_counter() - start
    log = result.stdout + result.stderr
    assert result.returncode == 0, f"mkdocs build --strict failed after {seconds:.1f} s:\n{log[-6000:]}"
    return site_dir


def _inventory(site_dir: Path) -> dict:
    """name -> (role, uri) of the site's Sphinx-style objects.inv (four header lines, then zlib)."""
    raw = (site_dir / "objects.inv").read_bytes()
    header = raw.split(b"\n", 4)
    assert header[0] == b"# Sphinx inventory version 2" and b"zlib" in header[3]
    entries = {}
    for line in zlib.decompress(header[4]).decode().splitlines():
        name, role, _priority, uri, _display = line.split(" ", 4)
        entries[name] = (role, uri)
    return entries


def _public_modules() -> list:
    """Every module of rlgraph without a leading underscore in any part of its name."""
    import rlgraph
    names = ["rlgraph"] + [info.name for info in pkgutil.walk_packages(rlgraph.__path__, "rlgraph.")]
    return [name for name in names if not any(part.startswith("_") for part in name.split("."))]


def _public_definitions(module_name: str) -> set:
    """The public classes and functions `module_name` defines: the names of its `__all__`, or without one
    those without a leading underscore, leaving out what it imports from other modules."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [name for name in vars(module) if not name.startswith("_")]
    found = set()
    for name in names:
        obj = getattr(module, name)
        if (inspect.isclass(obj) or inspect.isfunction(obj)) and getattr(obj, "__module__", None) == module_name:
            found.add(f"{module_name}.{name}")
    return found


def test_site_builds_strictly(site):
    assert (site / "index.html").exists()
    assert (site / "tutorial" / "index.html").exists()
    for page in ("dqn", "apex", "impala", "ppo", "sac", "ddpg", "td3"):
        assert (site / "agents" / page / "index.html").exists(), page
    assert (site / "reference" / "rlgraph" / "index.html").exists()
    assert not (site / "gen_ref_pages.py").exists() and not (site / "griffe_doctests.py").exists()


def test_api_reference_has_every_public_name(site):
    inventory = _inventory(site)
    modules = _public_modules()
    assert {"rlgraph.tests", "rlgraph.benchmarks", "rlgraph.cli", "rlgraph.agents.dqn.agent", "rlgraph.agents.dqn_agent"} <= set(modules)
    missing_modules = [name for name in modules if inventory.get(name, ("",))[0] != "py:module"]
    assert not missing_modules, f"modules without a reference page: {missing_modules}"
    expected = set()
    for name in modules:
        expected |= _public_definitions(name)
    assert {"rlgraph.tests.component_test.ComponentTest", "rlgraph.agents.dqn.agent.DQNAgent",
            "rlgraph.spaces.float_box.FloatBox", "rlgraph.backend_system.set_backend"} <= expected
    missing = sorted(expected - set(inventory))
    assert not missing, f"{len(missing)} public classes/functions are not in the API reference: {missing}"
    # Each entry points at the page of the module that defines it.
    role, uri = inventory["rlgraph.tests.component_test.ComponentTest"]
    assert role == "py:class" and uri.startswith("reference/rlgraph/tests/component_test/")
    assert (site / uri.split("#")[0] / "index.html").exists()


def test_the_agent_page_shows_the_methods_agent_inherits_from_its_mixins(site):
    inventory = _inventory(site)
    for name in ("get_action", "observe", "store_model", "load_model", "from_spec"):
        role, uri = inventory[f"rlgraph.agents.agent.Agent.{name}"]
        assert uri.startswith("reference/rlgraph/agents/agent/"), (name, uri)
