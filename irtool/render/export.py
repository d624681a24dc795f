"""Draw a folded graph from `irtool.render`: DOT with pydot; SVG, PNG, PDF with Graphviz `dot`.

Visual language (also drawn as a legend cluster in every picture):
- operator: white box; with a sharding strategy: cream box, strategy printed as `(2,1)(1,4)` (a
  layout as `dev (2,2,2) map ((2,1),-1)`);
- folded scope: blue 3-D box with operator count and marks (strategy, redist, grad-agg, Send, Recv),
  border coloured like the dominant communication category inside;
- communication: filled with its category colour (`irtool.present.palette`, the same as
  `irtool view`'s), one shape per category; Send and Receive are
  arrows (`rarrow`/`larrow`) naming the peer stage;
- analyze_fail.ir: the failing node red and bold, the nodes its inputs are outlined red and dashed.
Every text from the dump is escaped so the output is inert; files are written atomically.
"""
from __future__ import annotations

import os

import networkx as nx
import pydot

from ..atomic import atomic_write
from ..errors import InputError, OutputError, SelectionError
from ..present.palette import CATEGORY_COLORS, CATEGORY_SHAPES, FOLD_BORDER, FOLD_FILL, STRATEGY_FILL

FORMATS = ("dot", "svg", "png", "pdf")

P2P_SHAPES = {"Send": "rarrow", "Receive": "larrow"}


def escape(text: str, tooltip: bool = False) -> str:
    """Quote arbitrary text as a DOT string that Graphviz shows literally.

    Backslashes are doubled (so `\\N`, `\\G`, `\\l` stay text), quotes escaped, newlines become
    DOT line breaks, `&` becomes `&amp;` (Graphviz would otherwise read entities), and control
    characters are dropped. Graphviz expands `\\N` even after a doubled backslash in tooltips, so
    with `tooltip=True` a backslash is shown as `⧵` (U+29F5) instead.
    Labels are never HTML-like and shapes never `record`, so `<>{}|` are plain characters;
    SVG output escapes `<` and `>` itself.
    """
    text = "".join(ch for ch in str(text) if ch in "\n\t" or ord(ch) >= 32)
    if tooltip:
        text = text.replace("\\", "\u29f5")
    text = text.replace("\\", "\\\\").replace('"', '\\"').replace("&", "&amp;")
    text = text.replace("\r", "").replace("\t", " ").replace("\n", "\\n")
    return f'"{text}"'


FAILED_BORDER, FAILED_FILL = "#cc0000", "#f8d0d0"  # analyze_fail.ir: the failing node and its inputs


def _node_style(a: dict) -> dict[str, str]:
    failure = a.get("failure")
    if failure == "failed":
        return {"shape": "box3d" if a["folded"] else "box", "style": "filled,bold", "fillcolor": FAILED_FILL,
                "color": FAILED_BORDER, "penwidth": "4"}
    if failure == "input":
        return {"shape": "box3d" if a["folded"] else "box", "style": "rounded,dashed", "color": FAILED_BORDER,
                "penwidth": "2"}
    if a["folded"]:
        cats = a["comm"]
        colour = CATEGORY_COLORS.get(cats.most_common(1)[0][0], CATEGORY_COLORS["other"]) if cats else FOLD_BORDER
        return {"shape": "box3d", "style": "filled", "fillcolor": FOLD_FILL, "color": colour,
                "penwidth": "3" if cats else "1"}
    cat = a.get("category")
    if cat:
        known = cat if cat in CATEGORY_COLORS else "other"
        fill, shape = CATEGORY_COLORS[known], P2P_SHAPES.get(a["op"], CATEGORY_SHAPES[known])
        return {"shape": shape, "style": "filled", "fillcolor": fill, "penwidth": "2"}
    if a.get("strategy_text"):
        return {"shape": "box", "style": "rounded,filled", "fillcolor": STRATEGY_FILL}
    return {"shape": "box", "style": "rounded", "color": "#555555"}


def _legend(failed: bool = False) -> pydot.Cluster:
    c = pydot.Cluster("legend", label=escape("legend"), style="dashed", fontsize="12")
    items = [("legend_op", "operator", {"shape": "box", "style": "rounded"}),
             ("legend_strategy", "operator with strategy\n(2,1)(1,4)",
              {"shape": "box", "style": "rounded,filled", "fillcolor": STRATEGY_FILL}),
             ("legend_fold", "folded scope\nN ops · marks", {"shape": "box3d", "style": "filled",
                                                             "fillcolor": FOLD_FILL})]
    for cat, fill in CATEGORY_COLORS.items():
        items.append((f"legend_{cat.replace('-', '_')}", cat,
                      {"shape": CATEGORY_SHAPES[cat], "style": "filled", "fillcolor": fill}))
    items.append(("legend_send", "Send\nto stage N", {"shape": "rarrow", "style": "filled",
                                                       "fillcolor": CATEGORY_COLORS["pipeline"]}))
    items.append(("legend_receive", "Receive\nfrom stage N", {"shape": "larrow", "style": "filled",
                                                               "fillcolor": CATEGORY_COLORS["pipeline"]}))
    if failed:
        items.append(("legend_failed", "failing node\n(analyze_fail.ir)", {"shape": "box", "style": "filled,bold",
                      "fillcolor": FAILED_FILL, "color": FAILED_BORDER, "penwidth": "4"}))
        items.append(("legend_failed_input", "input of the\nfailing node", {"shape": "box", "style": "rounded,dashed",
                      "color": FAILED_BORDER, "penwidth": "2"}))
    rows = [items[i:i + 4] for i in range(0, len(items), 4)]
    for r, row in enumerate(rows):
        same = pydot.Subgraph(f"legend_row{r}", rank="same")
        for name, label, style in row:
            same.add_node(pydot.Node(name, label=escape(label), fontsize="10", **style))
        c.add_subgraph(same)
        for (a, _, _), (b, _, _) in zip(row, row[1:]):
            c.add_edge(pydot.Edge(a, b, style="invis"))
        if r:
            c.add_edge(pydot.Edge(rows[r - 1][0][0], row[0][0], style="invis"))
    return c


def to_pydot(graph: nx.DiGraph, legend: bool = True, title: str | None = None) -> pydot.Dot:
    """The folded graph as a pydot graph: box ids as DOT ids, escaped labels and tooltips."""
    dot = pydot.Dot("irtool", graph_type="digraph", rankdir="TB", fontname="Helvetica", newrank="true")
    label = title if title is not None else graph.graph.get("title", "")
    notes = graph.graph.get("notes") or []
    if notes:
        label = "\n".join([label, *notes]) if label else "\n".join(notes)
    if label:
        dot.set("label", escape(label))
        dot.set("labelloc", "t")
    dot.set_node_defaults(fontname="Helvetica", fontsize="11")
    dot.set_edge_defaults(fontname="Helvetica", fontsize="9", color="#666666")
    for bid, a in graph.nodes(data=True):
        dot.add_node(pydot.Node(bid, label=escape(a["label"]), tooltip=escape(a.get("tooltip", ""), tooltip=True),
                                **_node_style(a)))
    for u, v, e in graph.edges(data=True):
        attrs = {"label": escape(e.get("label", ""))} if e.get("label") else {}
        if e.get("count", 1) > 1:
            attrs["penwidth"] = str(min(1 + e["count"] / 4, 5))
        dot.add_edge(pydot.Edge(u, v, **attrs))
    if legend:
        dot.add_subgraph(_legend(any(a.get("failure") for _, a in graph.nodes(data=True))))
    return dot


def format_for(path: str, fmt: str | None = None) -> str:
    """The output format: `fmt` if given, otherwise OUT's suffix."""
    fmt = fmt or os.path.splitext(path)[1].lstrip(".").lower()
    if fmt not in FORMATS:
        raise InputError(f"unknown output format {fmt!r}: use --format with one of {', '.join(FORMATS)}")
    return fmt


# Graphviz's layout time grows much faster than the picture (measured on the bundled dumps with
# bench/layout_bench.py: 19 boxes / 54 edges 0.1 s, 63 / 383 45 s, 690 / 820 18 s, 255 / 1108 and
# 1500 / 1645 over 90 s). Above these a picture is refused before Graphviz runs.
MAX_LAYOUT_EDGES = 350
MAX_LAYOUT_BOXES = 700


def check_layout_cost(graph: nx.DiGraph) -> None:
    """SelectionError, with advice, when laying out `graph` would take Graphviz more than about a minute."""
    boxes, edges = graph.number_of_nodes(), graph.number_of_edges()
    if edges > MAX_LAYOUT_EDGES or boxes > MAX_LAYOUT_BOXES:
        raise SelectionError(
            f"{boxes} boxes and {edges} edges would keep Graphviz busy for minutes (limits: {MAX_LAYOUT_BOXES} boxes, "
            f"{MAX_LAYOUT_EDGES} edges); fold more with a smaller --depth, narrow with --scope, --stage or "
            "--comm-only, write --format dot, or explore the whole graph with `irtool view`")


def to_bytes(graph: nx.DiGraph, fmt: str, legend: bool = True) -> bytes:
    """The picture as bytes in `fmt` (dot text, or Graphviz output for svg/png/pdf; refused when
    the layout would take minutes, see `check_layout_cost`)."""
    if fmt != "dot":
        check_layout_cost(graph)
    return dot_bytes(to_pydot(graph, legend=legend).to_string(), fmt)


def dot_bytes(text: str, fmt: str) -> bytes:
    """DOT `text` as bytes in `fmt`: the text itself for dot, else Graphviz's picture of it."""
    if fmt == "dot":
        return text.encode("utf-8")
    import graphviz

    try:
        return graphviz.Source(text).pipe(format=fmt)
    except graphviz.ExecutableNotFound as exc:
        raise OutputError(f"Graphviz 'dot' is not installed; use --format dot ({exc})") from None
    except graphviz.CalledProcessError as exc:
        last = str(exc.stderr or exc).strip().splitlines()
        raise OutputError(f"Graphviz failed: {last[-1] if last else exc.returncode}") from None


def export(graph: nx.DiGraph, path: str, fmt: str | None = None, legend: bool = True,
           protect: tuple[str, ...] = ()) -> str:
    """Write the picture to `path` atomically (never over a file in `protect`, the inputs);
    returns the format used."""
    fmt = format_for(path, fmt)
    atomic_write(path, to_bytes(graph, fmt, legend=legend), protect=protect)
    return fmt
