"""Checks and error messages of the build: root input spaces, stuck components."""
from __future__ import annotations

import re
from typing import Any, Dict, List

from rlgraph.spaces import Space
from rlgraph.utils.rlgraph_errors import RLGraphError, RLGraphInputIncompleteError


def expand_var_positional(root, input_spaces: Dict[str, Any]) -> Dict[str, Any]:
    """Lets `*args` items be given under the bare name: `inputs=space` means `inputs[0]`, and
    `inputs=[space0, space1]` (a python list) means `inputs[0]` and `inputs[1]`. A name that is
    also a plain argument of another API method (`apply(*inputs)` next to `hidden(inputs)`) gives
    its space to both."""
    var_names = {info.var_positional for info in root.api_methods.values() if info.var_positional}
    arg_names = {a for info in root.api_methods.values() for a in info.arg_names}
    out = {}
    for key, value in input_spaces.items():
        if key in var_names and f"{key}[0]" not in input_spaces:
            items = value if isinstance(value, list) and key not in arg_names else [value]
            out.update({f"{key}[{i}]": item for i, item in enumerate(items)})
        if key not in var_names or key in arg_names:
            out[key] = value
    return out


def check_root_input_spaces(root, input_spaces: Dict[str, Space]) -> Dict[str, list]:
    """Which root API methods to trace, each with its (argument name, space) list.

    API methods with `must_be_complete=False` whose required arguments have no space are left
    out; any other missing root argument space is an error naming the API method.
    """
    known_args = {a for info in root.api_methods.values() for a in info.arg_names}
    var_names = {info.var_positional for info in root.api_methods.values() if info.var_positional}
    unknown = sorted(k for k in input_spaces if k not in known_args and _var_item_name(k) not in var_names)
    if unknown:
        raise RLGraphError(f"input spaces given for unknown argument(s) {unknown}", where=root.global_scope,
                           expected="argument names of the root's API methods: " +
                           ", ".join(sorted(a for a in known_args if "[" not in a)))
    signatures, missing = {}, {}
    for name, info in root.api_methods.items():
        lacking = [a for a in info.required if a not in input_spaces]
        if lacking:
            if info.must_be_complete:
                missing[name] = lacking
            continue
        args = [(a, input_spaces[a]) for a in info.arg_names if a in input_spaces]
        if info.var_positional:
            i = 0
            while f"{info.var_positional}[{i}]" in input_spaces:
                args.append((f"{info.var_positional}[{i}]", input_spaces[f"{info.var_positional}[{i}]"]))
                i += 1
        # Optional arguments without a space are left out of the call; they must be trailing.
        positions = [info.arg_names.index(a) for a, _ in args if a in info.arg_names]
        if positions != list(range(len(positions))):
            gap = [a for a in info.arg_names[:max(positions) + 1] if a not in input_spaces]
            raise RLGraphError(f"optional argument(s) {gap} of API method '{name}' need a space too, because a "
                               "later argument has one", where=root.global_scope)
        signatures[name] = args
    if missing:
        lines = [f"  - API method '{api}': argument(s) {', '.join(args)}" for api, args in sorted(missing.items())]
        raise RLGraphInputIncompleteError(
            root, "the root component needs input spaces for the arguments of all its API methods:\n" +
            "\n".join(lines), where=root.global_scope,
            hint="pass them in input_spaces={name: space}, or mark an API method must_be_complete=False.")
    return signatures


def _var_item_name(key: str):
    """"args[2]" -> "args" (an item of a `*args` parameter), else None."""
    match = re.fullmatch(r"(\w+)\[\d+\]", key)
    return match.group(1) if match else None


def incomplete_error(root, components, remaining: List[str], deferred: list, states) -> RLGraphInputIncompleteError:
    """The error for a build that stopped making progress (`states`: the builder's `BuildStates`)."""
    lines = []
    for component in components:
        if component.variables_created:
            continue
        for api, args in sorted(states.missing(component).items()):
            what = "its input_spaces_needed" if api == "input_spaces_needed" else f"API method '{api}'"
            lines.append(f"  - '{component.global_scope}' ({type(component).__name__}): {what} "
                         f"never received a space for argument(s) {', '.join(args)}")
    seen = set()
    for scope, graph_fn, reason in deferred:
        if (scope, graph_fn) not in seen:
            seen.add((scope, graph_fn))
            lines.append(f"  - graph function '{graph_fn}' of '{scope}' cannot run: {reason}")
    if remaining:
        lines.append(f"  - root API method(s) that could not be traced: {', '.join(remaining)}")
    return RLGraphInputIncompleteError(
        root, "the build cannot complete:\n" + "\n".join(lines), where=root.global_scope,
        hint="make sure a parent calls every API method of these components (or mark the method "
             "must_be_complete=False), and that no graph function needs a space only a later call provides.")
