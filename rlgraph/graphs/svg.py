"""A self-contained SVG drawing of a built component tree, without Graphviz (for `rlgraph visualize`).

Each component is a box titled "scope (ClassName)". Its API methods (blue, rounded) and graph
functions (grey, pill-shaped, with "()") are listed down its left side, its variables below them,
and its sub-components are boxes stacked on the right, so the tree reads from left to right. Every
traced call edge (caller -> callee) is a curve with an arrowhead. Node ids are the ones
`component_graph_to_dot` and the build tracer use: "<global scope>.<api>" and
"<global scope>.<graph_fn>()"; each item carries its id in a `data-node` attribute and each edge
its ends in `data-caller` / `data-callee`.

The layout is computed here from estimated text widths (monospace font), so the file needs no
external tool, stylesheet or font to display.
"""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Tuple

from rlgraph.graphs.visualization import api_node_id, graph_fn_node_id

FONT_SIZE = 12
CHAR_WIDTH = 7.3  # Width of one monospace character at FONT_SIZE, slightly generous.
PAD = 10
GAP = 12
HEADER = 24
ITEM_HEIGHT = 18
ITEM_GAP = 5
TITLE_HEIGHT = 30
BOX_FILLS = ("#f7f9fc", "#eef3f9", "#e5edf6", "#f3f1fa", "#ece9f6")

_ITEM_STYLE = {  # kind -> (fill, stroke, corner radius)
    "api": ("#d6e6f8", "#3f6fb0", 4),
    "graph_fn": ("#e4e4e4", "#777777", ITEM_HEIGHT / 2),
}
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")


def xml_escape(text: object) -> str:
    """`text` made safe for XML character data and quoted attributes (control characters dropped)."""
    text = _XML_INVALID.sub("", str(text))
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


def _text_width(text: str) -> float:
    return len(text) * CHAR_WIDTH


def _num(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


class _Box:
    """Layout of one component: its items and child boxes, sizes and (after `place`) position."""

    def __init__(self, component, depth: int):
        self.component = component
        self.depth = depth
        self.header = f"{component.scope} ({type(component).__name__})"
        self.items: List[Tuple[str, str, Optional[str]]] = []  # (kind, label, node id)
        self.items += [("api", api, api_node_id(component, api)) for api in sorted(component.api_methods)]
        self.items += [("graph_fn", f"{fn}()", graph_fn_node_id(component, fn))
                       for fn in sorted(component.graph_fns)]
        self.items += [("variable", f"var {name}", None) for name in sorted(getattr(component, "variables", {}))]
        self.children = [_Box(child, depth + 1) for child in component.sub_components.values()]

        self.items_width = max((_text_width(label) + 16 for _, label, _ in self.items), default=0.0)
        items_height = len(self.items) * (ITEM_HEIGHT + ITEM_GAP) - (ITEM_GAP if self.items else 0)
        children_width = max((child.width for child in self.children), default=0.0)
        children_height = sum(child.height for child in self.children) + GAP * max(0, len(self.children) - 1)
        inner = self.items_width + (GAP if self.items and self.children else 0) + children_width
        self.width = max(inner, _text_width(self.header)) + 2 * PAD
        self.height = HEADER + max(items_height, children_height) + PAD
        self.x = self.y = 0.0

    def place(self, x: float, y: float, anchors: Dict[str, Tuple[float, float, float]]):
        """Fixes positions (this box at x, y) and records item anchors: node id -> (left, right, mid y)."""
        self.x, self.y = x, y
        for index, (_, label, node) in enumerate(self.items):
            top = y + HEADER + index * (ITEM_HEIGHT + ITEM_GAP)
            if node is not None:
                left = x + PAD
                anchors[node] = (left, left + _text_width(label) + 16, top + ITEM_HEIGHT / 2)
        child_x = x + PAD + self.items_width + (GAP if self.items else 0)
        child_y = y + HEADER
        for child in self.children:
            child.place(child_x, child_y, anchors)
            child_y += child.height + GAP

    def render(self, out: List[str], indent: str):
        """Appends this box, its items and its children (nested groups) to `out`."""
        component = self.component
        fill = BOX_FILLS[self.depth % len(BOX_FILLS)]
        out.append(f'{indent}<g class="component" data-scope="{xml_escape(component.global_scope)}">')
        out.append(f'{indent}  <rect x="{_num(self.x)}" y="{_num(self.y)}" width="{_num(self.width)}" '
                   f'height="{_num(self.height)}" rx="6" fill="{fill}" stroke="#8a97a8"/>')
        out.append(f'{indent}  <text class="component-label" x="{_num(self.x + PAD)}" y="{_num(self.y + 16)}" '
                   f'font-weight="bold">{xml_escape(self.header)}</text>')
        for index, (kind, label, node) in enumerate(self.items):
            top = self.y + HEADER + index * (ITEM_HEIGHT + ITEM_GAP)
            left = self.x + PAD
            if kind == "variable":
                out.append(f'{indent}  <text class="variable" x="{_num(left + 4)}" y="{_num(top + 13)}" '
                           f'fill="#555555" font-style="italic">{xml_escape(label)}</text>')
                continue
            item_fill, stroke, radius = _ITEM_STYLE[kind]
            out.append(f'{indent}  <g class="{kind}" data-node="{xml_escape(node)}">')
            out.append(f'{indent}    <rect x="{_num(left)}" y="{_num(top)}" width="{_num(_text_width(label) + 16)}" '
                       f'height="{ITEM_HEIGHT}" rx="{_num(radius)}" fill="{item_fill}" stroke="{stroke}"/>')
            out.append(f'{indent}    <text x="{_num(left + 8)}" y="{_num(top + 13)}">{xml_escape(label)}</text>')
            out.append(f'{indent}  </g>')
        for child in self.children:
            child.render(out, indent + "  ")
        out.append(f"{indent}</g>")


def _edge_path(start: Tuple[float, float, float], end: Tuple[float, float, float]) -> str:
    """A cubic curve from the caller's right edge to the callee's left edge, or, when the callee
    is not to the right (same column, or further left), a loop out to the right into its right edge."""
    x1, y1 = start[1], start[2]
    if end[0] > x1 + 8:
        x2, y2 = end[0], end[2]
        bend = (x2 - x1) / 2
        return _curve(x1, y1, x1 + bend, y1, x2 - bend, y2, x2, y2)
    x2, y2 = end[1], end[2]
    out_x = max(x1, x2) + 30 + min(abs(y2 - y1), 120) / 4
    return _curve(x1, y1, out_x, y1, out_x, y2, x2, y2)


def _curve(*xy: float) -> str:
    """SVG path data of one cubic Bezier through start, two control points and end (8 numbers)."""
    points = [f"{_num(xy[i])},{_num(xy[i + 1])}" for i in range(0, 8, 2)]
    return f"M{points[0]} C{points[1]} {points[2]} {points[3]}"


def component_graph_to_svg(root, edges: Optional[Iterable[Tuple[str, str]]] = None,
                           title: Optional[str] = None) -> str:
    """A standalone SVG document drawing `root`'s component tree and the traced call `edges`.

    Args:
        root: The root component (built, so that scopes, API methods and variables are final).
        edges: (caller, callee) node ids, e.g. `graph_executor.graph_builder.edges`. Edges whose
            ends are not in the tree are left out (an XML comment says how many).
        title: The heading (default: the root's global scope).

    Returns:
        The SVG source (UTF-8 text starting with "<svg").

    >>> from rlgraph.components import Component
    >>> print(component_graph_to_svg(Component(scope="empty"))[:44])
    <svg xmlns="http://www.w3.org/2000/svg" widt
    """
    box = _Box(root, depth=0)
    anchors: Dict[str, Tuple[float, float, float]] = {}
    box.place(PAD, TITLE_HEIGHT, anchors)
    heading = title if title is not None else root.global_scope

    drawn, skipped = [], 0
    for caller, callee in sorted(set(edges or ())):
        if caller in anchors and callee in anchors:
            drawn.append((caller, callee, _edge_path(anchors[caller], anchors[callee])))
        else:
            skipped += 1
    # Loops to the right of a box may reach past it; leave room for them.
    loop_room = 60 if drawn else 0
    width = max(box.width + 2 * PAD + loop_room, _text_width(heading) * 1.3 + 2 * PAD)
    height = TITLE_HEIGHT + box.height + PAD

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_num(width)}" height="{_num(height)}" '
           f'viewBox="0 0 {_num(width)} {_num(height)}" font-family="monospace" font-size="{FONT_SIZE}">',
           f"  <title>{xml_escape(heading)}</title>",
           '  <defs>',
           '    <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
           'orient="auto-start-reverse">',
           '      <path d="M0,0 L10,5 L0,10 z" fill="#c0504d"/>',
           '    </marker>',
           '  </defs>',
           '  <rect width="100%" height="100%" fill="white"/>',
           f'  <text class="title" x="{PAD}" y="20" font-size="16" font-weight="bold">{xml_escape(heading)}</text>']
    box.render(out, "  ")
    out.append('  <g class="edges" fill="none" stroke="#c0504d" stroke-width="1.3">')
    for caller, callee, path in drawn:
        out.append(f'    <path class="edge" data-caller="{xml_escape(caller)}" data-callee="{xml_escape(callee)}" '
                   f'd="{path}" marker-end="url(#arrow)"><title>{xml_escape(caller)} -&gt; '
                   f'{xml_escape(callee)}</title></path>')
    out.append("  </g>")
    if skipped:
        out.append(f"  <!-- {skipped} edge(s) with ends outside this component tree were left out -->")
    out.append("</svg>")
    return "\n".join(out) + "\n"
