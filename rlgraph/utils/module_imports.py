"""Which modules a name read from a file may make rlgraph import.

Importing a module runs its top-level code. So a module named by data that may come from someone
else (a dotted spec "type" such as "mypkg.layers.MyLayer" in a config, a spec file or a checkpoint's
config.json; a hook named in a config file) is imported only when that runs no code, or only code
installed for rlgraph (`may_import`):

- the module is imported already (importing it again runs nothing), or
- it is one of rlgraph's own modules, or
- its top-level package belongs to installed distributions that all require rlgraph (pip's
  metadata: `pip install` or `pip install -e .` of a package that lists rlgraph among its
  dependencies puts it there).

- it is one that this process, or the process that started it, has imported for such a name
  already (`trusted_modules`: a module your own code imported before a spec named it; the list
  goes to subprocesses in the environment variable `TRUSTED_MODULES_VARIABLE`, so that an
  `AsyncVectorEnv`'s, a seed's or a learner's process may import it too).

A module file lying next to a config or in the working directory, and the modules of every other
installed package (the standard library's `antigravity` opens a web browser when imported), are
never imported for such a name. No `__main__` module is ever imported for one (importing a
package's `__main__` runs its command line). Everything here reads metadata only.
"""
from __future__ import annotations

import importlib.metadata
import os
import re
import sys
from typing import Any, FrozenSet, Iterable

CONFIG_IMPORT_RULE = ("a module imported already, one of rlgraph's, or one of an installed distribution that "
                      "requires rlgraph")
# Modules (comma-separated) that a spec may import in this process because the process that started it
# had imported them for a spec (see `trust_modules`).
TRUSTED_MODULES_VARIABLE = "RLGRAPH_TRUSTED_SPEC_MODULES"


def names_main_module(module_name: str) -> bool:
    """Whether dotted `module_name` is or lies within a `__main__` module."""
    return "__main__" in module_name.split(".")


def requires_rlgraph(distribution: str) -> bool:
    """Whether installed distribution `distribution` lists rlgraph among its requirements."""
    try:
        requirements = importlib.metadata.distribution(distribution).requires or []
    except importlib.metadata.PackageNotFoundError:
        return False
    names = (re.match(r"[A-Za-z0-9._-]*", requirement).group(0) for requirement in requirements)
    return any(re.sub(r"[-_.]+", "-", name).lower() == "rlgraph" for name in names)


def made_for_rlgraph(module_name: str) -> bool:
    """Whether `module_name` belongs to rlgraph or to a package installed for it (see the module
    docstring); read from the metadata, nothing is imported."""
    top = module_name.split(".")[0]
    if top == "rlgraph":
        return True
    distributions = importlib.metadata.packages_distributions().get(top)
    # Every distribution that provides the top-level package (a namespace package has several).
    return bool(distributions) and all(requires_rlgraph(name) for name in distributions)


def may_import(module_name: str) -> bool:
    """Whether a name read from a file may make rlgraph import `module_name` (see the module
    docstring): imported already, or made for rlgraph, and never a `__main__` module.

    >>> may_import("rlgraph.spaces"), may_import("json"), may_import("rlgraph.__main__")
    (True, True, False)
    """
    if names_main_module(module_name):
        return False
    return module_name in sys.modules or module_name in trusted_modules() or made_for_rlgraph(module_name)


def trusted_modules() -> FrozenSet[str]:
    """The modules named in `TRUSTED_MODULES_VARIABLE` (see `trust_modules`)."""
    return frozenset(name for name in os.environ.get(TRUSTED_MODULES_VARIABLE, "").split(",") if name)


def trust_modules(module_names: Iterable[str]) -> None:
    """Adds modules that a spec of this process named and that were imported (by the user's code,
    or allowed by `may_import`) to `TRUSTED_MODULES_VARIABLE`, so that processes started from now on
    may import them for the same specs. rlgraph's own modules need no entry."""
    known = trusted_modules()
    added = sorted({name for name in module_names if name.split(".")[0] != "rlgraph" and
                    not names_main_module(name)} - known)
    if added:
        os.environ[TRUSTED_MODULES_VARIABLE] = ",".join(sorted(known | set(added)))


_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", re.ASCII)


def trust_spec_modules(*specs: Any) -> None:
    """Before a process is started that builds `specs` (nested dicts/lists of plain data): the modules
    of their dotted "type"s that this process has imported already become trusted (`trust_modules`),
    so the new process may import them for the same specs. What the process imported nothing for
    stays unknown to it, and so refused there as here. Nothing is imported."""
    found = set()

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            type_ = value.get("type")
            if isinstance(type_, str) and _DOTTED.fullmatch(type_):
                module = type_.rpartition(".")[0]
                if module in sys.modules:
                    found.add(module)
            for child in value.values():
                walk(child)
        elif isinstance(value, (list, tuple)):
            for child in value:
                walk(child)

    for spec in specs:
        walk(spec)
    trust_modules(found)
