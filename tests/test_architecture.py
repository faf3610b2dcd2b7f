"""The package structure as a contract: module sizes, the layer order of DESIGN.md, no import circle
between packages, one package per algorithm under `rlgraph/agents/`.

The imports are read from the source (every `import`, also those inside functions), not by importing
the modules, so a lazy import that runs up the layers is found too.
"""
import ast
import os
from collections import defaultdict

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rlgraph")
MAX_LINES = 450

# DESIGN.md's layers, lowest first: a package may import its own layer and those below it.
LAYERS = ["utils", "backend_system", "spaces", "components", "graphs", "agents", "environments", "execution",
          "tests", "benchmarks", "cli"]
# The package face `rlgraph/__init__.py` is the composition root, outside the layers: Python runs it
# before any submodule, it may import any layer (it imports `rlgraph.environments`, which registers
# the environment maker), and `import rlgraph` (for `__version__`) adds no dependency that is not there.
FACE = "rlgraph"
# Modules of rlgraph/agents/ itself: what every algorithm shares, plus the original RLgraph's module
# paths of the agents (aliases that only re-export).
SHARED_AGENT_MODULES = {"__init__", "agent", "agent_acting", "agent_checkpoints", "agent_core", "agent_observing",
                        "agent_state", "data_checks", "observe_buffers", "original_keys", "policy_export",
                        "policy_export_checks", "policy_export_format", "policy_export_writers", "random_agent",
                        "records", "replay_access", "reward_scaling", "sde_schedule", "specs", "training_scalars"}
ALIAS_AGENT_MODULES = {"dqn_agent", "apex_agent", "dqfd_agent", "impala_agent", "ppo_agent", "actor_critic_agent",
                       "sac_agent"}
ALGORITHM_PACKAGES = {"dqn", "apex", "dqfd", "impala", "pg", "sac", "ddpg", "td3"}


def _modules():
    """{dotted module name: path} of every module under rlgraph/."""
    found = {}
    for directory, _, files in os.walk(ROOT):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                found[rel[:-len(".__init__")] if rel.endswith(".__init__") else rel] = path
    return found


MODULES = _modules()


def _imports(path, source=None):
    """The rlgraph modules `path` (or `source`) imports anywhere in the file, resolved to module names."""
    tree = ast.parse(source if source is not None else open(path, encoding="utf-8").read())
    targets = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from a.b import c`: c may be a module of package a.b.
            names = [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in MODULES else node.module
                     for alias in node.names]
        else:
            continue
        for name in names:
            while name and name not in MODULES and "." in name:
                name = name.rsplit(".", 1)[0]
            if name in MODULES:
                targets.add(name)
    return targets


GRAPH = {module: _imports(path) for module, path in MODULES.items()}


def _layer(module):
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "rlgraph"


def test_no_module_is_over_the_size_limit():
    sizes = {module: sum(1 for _ in open(path, encoding="utf-8")) for module, path in MODULES.items()}
    too_long = {module: n for module, n in sizes.items() if n > MAX_LINES}
    assert not too_long, f"modules over {MAX_LINES} lines: {too_long}"


def test_every_package_is_in_a_layer():
    assert {_layer(module) for module in MODULES} <= set(LAYERS) | {FACE}


def _upward(graph):
    return sorted(f"{module} -> {target}" for module, targets in graph.items() for target in targets
                  if FACE not in (_layer(module), _layer(target))
                  and LAYERS.index(_layer(target)) > LAYERS.index(_layer(module)))


def test_no_import_runs_up_the_layers():
    upward = _upward(GRAPH)
    assert not upward, f"imports from a lower layer to a higher one (DESIGN.md's table): {upward}"


def _strongly_connected(graph):
    """Tarjan's algorithm, iteratively: the components with more than one module."""
    index, low, on_stack, stack, result, counter = {}, {}, set(), [], [], [0]
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    result.append(sorted(members))
    return result


def _package(module):
    path = MODULES[module]
    return module if path.endswith("__init__.py") else module.rsplit(".", 1)[0]


def test_no_import_circle_spans_two_packages():
    spanning = [members for members in _strongly_connected(GRAPH) if len({_package(m) for m in members}) > 1]
    assert not spanning, f"import circles between modules of different packages: {spanning}"


def test_strongly_connected_finds_a_circle():
    # The check above can fail: a three-module circle and a two-module one are found, a chain is not.
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"e"}, "e": {"d"}, "f": {"a"}}
    assert sorted(_strongly_connected(graph)) == [["a", "b", "c"], ["d", "e"]]


def test_every_algorithm_lives_in_one_package():
    agents_dir = os.path.join(ROOT, "agents")
    modules = {name[:-3] for name in os.listdir(agents_dir) if name.endswith(".py")}
    packages = {name for name in os.listdir(agents_dir) if os.path.isfile(os.path.join(agents_dir, name, "__init__.py"))}
    assert modules == SHARED_AGENT_MODULES | ALIAS_AGENT_MODULES, sorted(modules ^ (SHARED_AGENT_MODULES |
                                                                                       ALIAS_AGENT_MODULES))
    assert packages == ALGORITHM_PACKAGES
    # Each core (root component) sits in its algorithm's package; no algorithm module is outside agents/.
    for package in ALGORITHM_PACKAGES - {"apex"}:
        assert f"rlgraph.agents.{package}.core" in MODULES
    assert not [m for m in MODULES if m.startswith("rlgraph.execution.impala")]


@pytest.mark.parametrize("alias", sorted(ALIAS_AGENT_MODULES))
def test_original_module_paths_only_re_export(alias):
    """The original RLgraph's agent module paths import the classes from their package and define nothing."""
    import importlib
    tree = ast.parse(open(os.path.join(ROOT, "agents", f"{alias}.py"), encoding="utf-8").read())
    kinds = {type(node).__name__ for node in tree.body}
    assert kinds <= {"Expr", "ImportFrom", "Assign"}, kinds
    module = importlib.import_module(f"rlgraph.agents.{alias}")
    for name in module.__all__:
        cls = getattr(module, name)
        assert cls.__module__.startswith("rlgraph.agents.") and cls.__module__.count(".") == 3
        assert getattr(importlib.import_module("rlgraph.agents"), name) is cls


def test_the_layer_check_reads_lazy_imports():
    # An import inside a function counts: a component whose only import of an environment is lazy fails the check.
    source = "def make(spec):\n    from rlgraph.environments import Environment\n    return Environment.from_spec(spec)\n"
    edges = _imports(None, source)
    assert edges == {"rlgraph.environments"}
    assert _upward({"rlgraph.components.common.environment_stepper": edges}) == [
        "rlgraph.components.common.environment_stepper -> rlgraph.environments"]
