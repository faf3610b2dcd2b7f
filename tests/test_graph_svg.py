"""The Graphviz-free SVG drawing of a built component tree: every scope, API method, graph
function and traced call edge appears, with the node ids the DOT export uses."""
import importlib.util
import xml.etree.ElementTree as ET

from components_for_tests import Top

from rlgraph.components import Component
from rlgraph.graphs.svg import component_graph_to_svg, xml_escape
from rlgraph.graphs.visualization import component_graph_to_dot
from rlgraph.spaces import FloatBox
from rlgraph.tests import ComponentTest

SVG = "{http://www.w3.org/2000/svg}"


def _built_top():
    # The drawing reads only the component tree and the traced calls, which are the same on both
    # backends, so one installed backend suffices.
    return ComponentTest(Top(scope="top"), input_spaces=dict(x=FloatBox(shape=(3,), add_batch_rank=True)),
                         backend="pytorch" if importlib.util.find_spec("torch") else "tf")


def test_svg_of_built_tree():
    test = _built_top()
    edges = test.graph_executor.graph_builder.edges
    root = ET.fromstring(component_graph_to_svg(test.component, edges, title="Top & <friends>"))
    assert root.tag == SVG + "svg"
    assert root.find(SVG + "title").text == "Top & <friends>"

    scopes = [g.get("data-scope") for g in root.iter(SVG + "g") if g.get("class") == "component"]
    assert scopes == ["top", "top/middle", "top/middle/inner"]
    labels = [t.text for t in root.iter(SVG + "text") if t.get("class") == "component-label"]
    assert labels == ["top (Top)", "middle (Middle)", "inner (Scale)"]
    # Components nest as the tree does.
    top = next(g for g in root.iter(SVG + "g") if g.get("data-scope") == "top")
    assert [g.get("data-scope") for g in top.iter(SVG + "g") if g.get("class") == "component"][1:] == \
        ["top/middle", "top/middle/inner"]

    nodes = {g.get("data-node"): g.get("class") for g in root.iter(SVG + "g") if g.get("data-node")}
    for component in (test.component, *test.component.get_all_sub_components()):
        for api in component.api_methods:
            assert nodes[f"{component.global_scope}.{api}"] == "api"
        for fn in component.graph_fns:
            assert nodes[f"{component.global_scope}.{fn}()"] == "graph_fn"
    assert {"top.run", "top.twice", "top/middle.twice", "top/middle/inner.apply",
            "top/middle/inner._graph_fn_apply()"} <= set(nodes)
    variables = {t.text for t in root.iter(SVG + "text") if t.get("class") == "variable"}
    assert variables == {"var w", "var b"}

    drawn = {(p.get("data-caller"), p.get("data-callee")) for p in root.iter(SVG + "path") if p.get("class") == "edge"}
    assert drawn == set(edges) and len(edges) >= 4
    assert ("top.run", "top/middle.twice") in drawn
    assert ("top/middle/inner.apply", "top/middle/inner._graph_fn_apply()") in drawn
    # The same node ids as the DOT export.
    dot = component_graph_to_dot(test.component, edges)
    assert all(f'"{caller}" -> "{callee}"' in dot for caller, callee in drawn)


def test_edges_outside_the_tree_are_left_out_and_names_escaped():
    class Odd(Component):
        pass

    root = Odd(scope='a<b>&"c"')
    svg = component_graph_to_svg(root, edges={("x.y", "z.w")})
    tree = ET.fromstring(svg)
    assert tree.find(SVG + "title").text == 'a<b>&"c"'
    assert [g.get("data-scope") for g in tree.iter(SVG + "g") if g.get("class") == "component"] == ['a<b>&"c"']
    assert not [p for p in tree.iter(SVG + "path") if p.get("class") == "edge"]
    assert "1 edge(s) with ends outside" in svg
    assert xml_escape("a\x01<'b'>") == "a&lt;&#39;b&#39;&gt;"
