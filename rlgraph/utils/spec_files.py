"""Reading spec text (JSON and YAML files, `--set` values) within bounds on size, nesting and YAML aliases.

Spec files are bounded (`MAX_SPEC_FILE_BYTES`, `MAX_SPEC_DEPTH`, `MAX_YAML_ALIAS_NODES`) and YAML
is read with safe-load semantics (no python tags). A YAML mapping's keys must be strings, as JSON's
are (`1:`, `true:`, `on:` and `null:` are refused; quote them), so that every spec file has a JSON form.
"""
from __future__ import annotations

import json
import os
from typing import Any, NoReturn

import yaml

from rlgraph.utils.rlgraph_errors import RLGraphSpecError

#: The file name endings of spec files (checked case-insensitively).
SPEC_FILE_EXTENSIONS = (".json", ".yaml", ".yml")

# Limits on spec text (files, `--set` values). The shipped configs are a few KB and nest five
# levels, and a YAML anchor is worth reusing a handful of times; these bounds are far above that
# and far below what exhausts memory or the recursion limit. They also bound the time: JSON at the
# size limit parses in well under a second; PyYAML is pure python (tens of KB per second on a
# busy machine), so a hostile YAML file at the size limit costs at most about a minute of CPU.
MAX_SPEC_FILE_BYTES = 1024 * 1024  # Larger files are refused after reading this much.
MAX_SPEC_DEPTH = 32  # Nesting levels of lists/dicts.
MAX_YAML_ALIAS_NODES = 10000  # YAML nodes reached again through aliases (a "billion laughs" file needs billions).


def load_spec_file(filename: str) -> Any:
    """Reads a JSON or YAML spec file (YAML with safe-load semantics: no python tags).

    Raises:
        RLGraphSpecError: If the file is missing, has an unknown extension, cannot be parsed, is
            larger than `MAX_SPEC_FILE_BYTES`, nests deeper than `MAX_SPEC_DEPTH` or (YAML)
            reaches more than `MAX_YAML_ALIAS_NODES` nodes again through aliases.
    """
    path = os.path.expanduser(filename)
    if not os.path.isfile(path):
        raise RLGraphSpecError("spec file not found", where="from_file", received=repr(filename),
                               hint=f"paths are relative to the working directory ({os.getcwd()}).")
    lowered = path.lower()
    if not lowered.endswith(SPEC_FILE_EXTENSIONS):
        raise RLGraphSpecError("unknown spec file type", where="from_file",
                               expected="a .json, .yaml or .yml file", received=repr(filename))
    with open(path, "rb") as handle:
        data = handle.read(MAX_SPEC_FILE_BYTES + 1)  # Bounded even if the file grows meanwhile.
    _check_size(len(data), repr(filename), "from_file")
    try:
        text = data.decode("utf-8")
        if lowered.endswith(".json"):
            return load_json_text(text, repr(filename))
        return load_yaml_text(text, repr(filename))
    except RLGraphSpecError:
        raise
    except (ValueError, yaml.YAMLError) as error:
        raise RLGraphSpecError("cannot parse spec file", where="from_file", received=repr(filename),
                               hint=str(error)) from None


def load_json_text(text: str, source: str = "spec text", where: str = "from_file") -> Any:
    """`json.loads(text)` within the spec limits (size and nesting depth).

    Raises:
        ValueError: (`json.JSONDecodeError`) If `text` is not JSON.
        RLGraphSpecError: If `text` is too large or nests too deeply.
    """
    _check_size(len(text.encode("utf-8")), source, where)
    try:
        value = json.loads(text)
    except RecursionError:
        _raise_too_deep(source, where)
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_SPEC_DEPTH:
            _raise_too_deep(source, where)
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        stack.extend((child, depth + 1) for child in children)
    return value


def load_yaml_text(text: str, source: str = "spec text", where: str = "from_file") -> Any:
    """`yaml.safe_load(text)` within the spec limits; the node graph is checked before any
    Python object is built, so an alias or merge-key bomb is refused without being expanded.

    Raises:
        yaml.YAMLError: If `text` is not YAML, or uses a python tag.
        RLGraphSpecError: If `text` is too large, nests too deeply, expands too far through aliases
            or has a mapping key that is not a string.
    """
    _check_size(len(text.encode("utf-8")), source, where)
    loader = _BoundedSafeLoader(text)
    loader.spec_source, loader.spec_where = source, where
    try:
        return loader.get_single_data()
    except RecursionError:
        _raise_too_deep(source, where)
    finally:
        loader.dispose()


class _BoundedSafeLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that checks the composed node graph before constructing it."""

    spec_source, spec_where = "spec text", "from_file"
    _depth = 0

    def compose_node(self, parent, index):
        # Stops deep nesting while composing: the scanner slows down with every open level.
        self._depth += 1
        try:
            if self._depth > MAX_SPEC_DEPTH:
                _raise_too_deep(self.spec_source, self.spec_where)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None:
            _check_yaml_nodes(node, self.spec_source, self.spec_where)
        return node


def _check_yaml_nodes(root: yaml.Node, source: str, where: str) -> None:
    # Walks the graph as construction would expand it (an alias target is walked again at every
    # use), stopping at the first node beyond the limits; a cyclic alias fails the depth limit.
    seen, again = set(), 0
    stack = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_SPEC_DEPTH:
            _raise_too_deep(source, where)
        if id(node) in seen:
            again += 1
            if again > MAX_YAML_ALIAS_NODES:
                raise RLGraphSpecError("YAML aliases expand too far", where=where, received=source,
                                       expected=f"at most {MAX_YAML_ALIAS_NODES} nodes reached through aliases",
                                       hint="write the repeated parts out, or reuse fewer/smaller anchors.")
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend((child, depth + 1) for child in node.value)
        elif isinstance(node, yaml.MappingNode):
            for key, _ in node.value:
                # (A merge key "<<" is expanded by construction, before any spec reads the mapping.)
                if key.tag not in ("tag:yaml.org,2002:str", "tag:yaml.org,2002:merge"):
                    _raise_key_not_string(key, source, where)
            stack.extend((child, depth + 1) for pair in node.value for child in pair)


def _raise_key_not_string(key: yaml.Node, source: str, where: str) -> NoReturn:
    what = f"key {key.value!r}" if isinstance(key, yaml.ScalarNode) else f"a {key.id} as a key"
    raise RLGraphSpecError(f"a YAML mapping key is not a string (line {key.start_mark.line + 1})", where=where,
                           expected="string keys, as in JSON", received=f"{source}: {what}",
                           hint='quote the key: "1": rather than 1:, "on": rather than on:.')


def _check_size(num_bytes: int, source: str, where: str) -> None:
    if num_bytes > MAX_SPEC_FILE_BYTES:
        raise RLGraphSpecError("spec text too large", where=where, received=source,
                               expected=f"at most {MAX_SPEC_FILE_BYTES} bytes (MAX_SPEC_FILE_BYTES)",
                               hint="configs are small; keep data (weights, datasets) out of spec files.")


def _raise_too_deep(source: str, where: str) -> NoReturn:
    raise RLGraphSpecError("spec nests too deeply", where=where, received=source,
                           expected=f"at most {MAX_SPEC_DEPTH} levels of lists/dicts (MAX_SPEC_DEPTH)") from None
