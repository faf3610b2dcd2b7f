"""A griffe extension for the API reference: renders the `>>>` examples of docstrings as code.

rlgraph's docstrings hold doctests (run by pytest's `--doctest-modules`) as plain paragraphs, outside
an "Examples:" section. Markdown would read their `>>>` prompts as nested block quotes and their
outputs (e.g. `[1.5, 1.0]`) as reference links. This extension wraps each run of doctest lines (a
`>>>` line up to the next blank line) in a fenced `pycon` block before the docstring is parsed; the
source is unchanged. Lines already inside a fence are left alone. `mkdocs.yml` loads it into
mkdocstrings' python handler (`extensions`).
"""
from __future__ import annotations

import re
from typing import Any

import griffe

_FENCE = re.compile(r"^\s*(```|~~~)")
_PROMPT = re.compile(r"^(\s*)>>>( |$)")


def fence_doctests(text: str) -> str:
    """Returns `text` with every doctest block wrapped in a fenced `pycon` block."""
    lines = text.split("\n")
    out = []
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if _FENCE.match(line):
            in_fence = not in_fence
        prompt = None if in_fence else _PROMPT.match(line)
        if prompt is None:
            out.append(line)
            i += 1
            continue
        indent = prompt.group(1)
        block = []
        while i < len(lines) and lines[i].strip():
            block.append(lines[i])
            i += 1
        out += [f"{indent}```pycon", *block, f"{indent}```"]
    return "\n".join(out)


class DoctestBlocks(griffe.Extension):
    """Fences the doctests of every docstring (modules, classes, functions, attributes)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:  # noqa: ARG002 - griffe's hook signature
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_doctests(obj.docstring.value)
