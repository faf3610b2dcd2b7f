"""DOT rendering of a built component tree: nested clusters per component, a node per API
method and graph function, and an edge per call the build traced (for `rlgraph visualize`)."""
from __future__ import annotations

from typing import Optional


def api_node_id(component, api: str) -> str:
    """The node id of API method `api` of `component` (as the build tracer records call edges)."""
    return f"{component.global_scope}.{api}"


def graph_fn_node_id(component, graph_fn: str) -> str:
    """The node id of graph function `graph_fn` of `component` (as the build tracer records it)."""
    return f"{component.global_scope}.{graph_fn}()"


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def component_graph_to_dot(root, edges: Optional[set] = None, title: Optional[str] = None) -> str:
    """The DOT source of `root`'s component tree with traced call `edges` ((caller, callee) node ids).

    Node ids are "<global scope>.<api>" for API methods and "<global scope>.<graph_fn>()" for
    graph functions. Render with Graphviz: `dot -Tsvg graph.dot -o graph.svg`.
    """
    edges = set(edges or ())
    lines = ["digraph rlgraph {", "  compound=true;", "  rankdir=LR;",
             f"  label={_quote(title or root.global_scope)};", "  node [shape=box, style=rounded];"]
    counter = [0]

    def emit(component, indent: str):
        counter[0] += 1
        lines.append(f"{indent}subgraph cluster_{counter[0]} {{")
        lines.append(f"{indent}  label={_quote(f'{component.scope} ({type(component).__name__})')};")
        for api in sorted(component.api_methods):
            lines.append(f"{indent}  {_quote(api_node_id(component, api))} [label={_quote(api)}];")
        for graph_fn in sorted(component.graph_fns):
            node = graph_fn_node_id(component, graph_fn)
            lines.append(f"{indent}  {_quote(node)} [label={_quote(graph_fn)}, shape=ellipse, style=filled, "
                         f"fillcolor=lightgrey];")
        variables = sorted(component.variables)
        if variables:
            text = "\\n".join(variables)
            lines.append(f"{indent}  {_quote(component.global_scope + '#variables')} "
                         f"[label=\"{text}\", shape=note];")
        for child in component.sub_components.values():
            emit(child, indent + "  ")
        lines.append(f"{indent}}}")

    emit(root, "  ")
    for caller, callee in sorted(edges):
        lines.append(f"  {_quote(caller)} -> {_quote(callee)};")
    lines.append("}")
    return "\n".join(lines) + "\n"
