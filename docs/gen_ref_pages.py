"""Writes the API reference (`reference/...`) while `mkdocs build` runs (a mkdocs-gen-files script).

One page per public module of the `rlgraph` package: a module is public when no part of its dotted
path starts with an underscore. A module's page documents the classes, functions and documented
attributes the module defines itself; where the module has `__all__`, only the names listed there.
Names a module merely imports (a package's re-exports) get a table that links to the page of the
module defining them, so every object is rendered once. Packages become section index pages that
list their submodules. The navigation of the reference goes into `reference/SUMMARY.md`, which
mkdocs-literate-nav reads.

The pages are derived from the source tree on every build, so a module added to `rlgraph` appears
without any change here. `mkdocs.yml` keeps this file out of the built site (`exclude_docs`).
"""
from __future__ import annotations

import json
from pathlib import Path

import griffe
import mkdocs_gen_files

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "rlgraph"
OUT = Path("reference")
# Modules whose classes also show the members they inherit: `Agent` takes its acting, observing and
# checkpoint methods from mixins (agent_acting.py, ...), and its page is where users look for them.
SHOW_INHERITED = {"rlgraph.agents.agent"}


def public_module_paths() -> dict[str, Path]:
    """Dotted name -> source file of every public module and package, in a stable order."""
    modules = {}
    for source in sorted((ROOT / PACKAGE).rglob("*.py")):
        parts = source.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        elif not (source.parent / "__init__.py").exists():
            continue  # A script in a folder that is no package.
        if any(part.startswith("_") for part in parts):
            continue
        modules[".".join(parts)] = source
    return modules


def is_logger(attribute: griffe.Attribute) -> bool:
    """Whether a module attribute is its logger (`logger = logging.getLogger(__name__)`)."""
    value = attribute.value
    return isinstance(value, griffe.ExprCall) and str(value.function).endswith("getLogger")


def defined_members(module: griffe.Module) -> list[str]:
    """The names `module` documents itself: what it defines (not imports), public by its `__all__`
    or, without one, by having no leading underscore. Module loggers are left out."""
    exports = module.exports
    names = []
    for name, member in module.members.items():
        if member.is_alias or member.is_module:
            continue
        if exports is not None:
            if name not in exports:
                continue
        elif name.startswith("_"):
            continue
        if member.is_attribute and exports is None and is_logger(member):
            continue
        names.append(name)
    return names


def reexports(module: griffe.Module) -> list[tuple[str, str]]:
    """(name, path of the object it names) for every name in `__all__` that `module` imports."""
    rows = []
    for name in module.exports or ():
        if not isinstance(name, str):
            continue  # A reference griffe could not expand (e.g. another module's `__all__`).
        member = module.members.get(name)
        if member is None or not member.is_alias:
            continue
        try:
            target = member.final_target.path
        except (griffe.AliasResolutionError, griffe.CyclicAliasError):
            target = member.target_path
        rows.append((name, target))
    return rows


def summary_line(obj: griffe.Object) -> str:
    """The first line of a docstring, for tables (pipes escaped)."""
    if not obj.docstring:
        return ""
    return obj.docstring.value.strip().splitlines()[0].replace("|", "\\|")


def page_path(dotted: str, is_package: bool) -> Path:
    parts = dotted.split(".")
    return OUT.joinpath(*parts, "index.md") if is_package else OUT.joinpath(*parts[:-1], parts[-1] + ".md")


def main() -> None:
    sources = public_module_paths()
    package = griffe.load(PACKAGE, search_paths=[str(ROOT)], resolve_aliases=True, resolve_external=False)
    modules = {dotted: package.modules_collection.get_member(dotted) for dotted in sources}
    pages = {dotted: page_path(dotted, module.is_package) for dotted, module in modules.items()}
    members = {dotted: defined_members(module) for dotted, module in modules.items()}
    documented = {f"{dotted}.{name}" for dotted, names in members.items() for name in names} | set(modules)

    nav = mkdocs_gen_files.Nav()
    for dotted, module in modules.items():
        page = pages[dotted]
        nav[tuple(dotted.split("."))] = page.relative_to(OUT).as_posix()
        lines = [f"::: {dotted}", "    options:"]
        # A JSON list is a YAML flow sequence whose names YAML cannot misread (`on`, `null`, ...).
        lines.append(f"      members: {json.dumps(members[dotted])}" if members[dotted] else "      members: false")
        if dotted in SHOW_INHERITED:
            lines.append("      inherited_members: true")
        rows = reexports(module)
        if rows:
            lines += ["", "## Re-exported names", "",
                      f"`{dotted}` makes these names available; each is documented where it is defined.", "",
                      "| name | defined in |", "|---|---|"]
            for name, target in rows:
                cell = f"[`{target}`][{target}]" if target in documented else f"`{target}`"
                lines.append(f"| `{name}` | {cell} |")
        children = [(name, sub) for name, sub in module.members.items()
                    if not sub.is_alias and sub.is_module and f"{dotted}.{name}" in modules]
        if children:
            lines += ["", "## Modules", "", "| module | summary |", "|---|---|"]
            for name, sub in sorted(children, key=lambda child: child[0]):
                link = Path(pages[f"{dotted}.{name}"]).relative_to(page.parent).as_posix()
                lines.append(f"| [`{dotted}.{name}`]({link}) | {summary_line(sub)} |")
        with mkdocs_gen_files.open(page, "w") as handle:
            handle.write("\n".join(lines) + "\n")

    with mkdocs_gen_files.open(OUT / "SUMMARY.md", "w") as handle:
        handle.writelines(nav.build_literate_nav())


main()
