"""Select part of a dump and fold it by name scope into a small graph ready to draw.

The pipeline is `load_input` (a file or a dump folder) -> `Semantics` (parallel facts per node) ->
`select` (which operator nodes) -> `fold` (boxes and edges). `irtool.export` turns the result into
DOT, SVG, PNG or PDF. Every function returns plain networkx graphs and sets so tests can check the
picture against the model.
"""
from __future__ import annotations

import difflib
import functools
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Union

import networkx as nx

from ..errors import SelectionError
from ..ir import Dump, Node, TypeInfo, build_graph, data_graph
from ..ir.values import parse_type_sig
from ..parallel import CATEGORIES, ParallelFacts
from ..parallel.failure import failure_record
from ..parallel.scope import in_gradients, printed_cells, without_gradients
from ..present import strategy_text
from ..selection import Selection as RankSelection
from ..selection import require_stage, stage_word

MAX_BOXES = 2000  # above this Graphviz layout gets slow: refuse and suggest a deeper fold
READABLE_BOXES = 30  # the automatic depth keeps at most this many boxes
P2P_OPS = ("Send", "Receive")


@dataclass
class Semantics:
    """Parallel facts about the nodes of one dump (from `irtool.parallel`), keyed by node uid."""

    category: dict[str, str] = field(default_factory=dict)  # uid -> communication category
    phase: dict[str, str] = field(default_factory=dict)  # uid -> phase (comm nodes only)
    peer_stage: dict[str, int | None] = field(default_factory=dict)  # uid -> peer stage (p2p)
    strategy: dict[str, str] = field(default_factory=dict)  # uid -> "(2,1)(1,4)"
    # uid -> the scope a comm node is attributed to when it differs from the printed one (CommNode.cell_scope)
    scope: dict[str, str] = field(default_factory=dict)
    stage: int | None = None
    placed: int | None = 0  # the stage a selection files the dump under (`StageInfo.placed`): None unknown
    table: Any = None  # the dump's fact table (`irtool.parallel.facts.NodeFacts`): every node's phase

    @classmethod
    def of(cls, facts: ParallelFacts) -> Semantics:
        """Collect categories, phases, peer stages, strategies and the stage of one dump's facts."""
        sem = cls(stage=facts.stage, placed=facts.stage_info.placed, table=facts.table)
        for c in facts.comm:
            sem.category[c.node] = c.category if c.category in CATEGORIES else "other"
            sem.phase[c.node] = c.phase
            sem.peer_stage[c.node] = c.peer_stage
            if c.cell_scope and c.cell_scope != c.scope:
                sem.scope[c.node] = c.cell_scope
        for s in facts.strategies:
            value = s.shown
            if value is not None and value != [] and value != ():
                sem.strategy[s.node] = strategy_text(value)
        return sem


# --- input -------------------------------------------------------------------------------------

def load_input(sel: str | RankSelection) -> tuple[Dump, ParallelFacts, str]:
    """The dump to draw, its facts and a note on what was chosen, for the CLI's selection (or a
    path): a file, or of a folder the lowest rank of the selected stage (without one, the lowest
    rank; the selection's notes say which)."""
    sel = sel if isinstance(sel, RankSelection) else RankSelection.of(sel)
    got = sel.first()
    if sel.is_file:
        return got.dump, got.facts, f"file {got.file}"
    return got.dump, got.facts, f"rank {got.rank} ({got.file}), {stage_word(got.stage)}"


# --- selection ---------------------------------------------------------------------------------

@dataclass
class Selection:
    """Operator nodes chosen for drawing (uids) and notes explaining the choice."""

    uids: set[str]
    notes: list[str] = field(default_factory=list)


def is_backward(node: Node, sem: Semantics) -> bool:
    """Backward (or recomputed for backward) by the phase the analysis gave the node."""
    return sem.table("phase", node) in ("backward", "recompute")


def operator_graph(g: nx.MultiDiGraph) -> nx.MultiDiGraph:
    """Data edges between operator nodes only (no parameters, subgraph nodes, control edges)."""
    dg = data_graph(g)
    return nx.subgraph_view(dg, filter_node=lambda n: g.nodes[n]["kind"] == "node")


def _closest_scopes(prefix: str, nodes: Iterable[Node]) -> str:
    """`; closest: a, b, c` from the scope prefixes of the dump (`Gradients/` also stripped), or ``."""
    prefixes: set[str] = set()
    for scope in {n.scope for n in nodes if n.scope}:
        for s in (scope, without_gradients(scope) if in_gradients(scope) else None):
            parts = (s or "").split("/")
            prefixes.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    prefixes.discard("")
    close = difflib.get_close_matches(prefix, sorted(prefixes), n=3, cutoff=0.5)
    return f"; closest: {', '.join(close)}" if close else ""


def select(dump: Dump, g: nx.MultiDiGraph, sem: Semantics, *, stage: int | None = None,
           subgraph: str | None = None, scope: str | None = None, comm_only: bool = False,
           hops: int = 1, direction: str | None = None) -> Selection:
    """Choose operator nodes of `dump` (graph `g`, semantics `sem`).

    - `stage`: one file is one rank, so its nodes (with its own Send/Receive) are its stage; a dump
      on another stage is the selection's stage error (`irtool.selection`: no pipeline is stage 0).
    - `subgraph`: nodes of that subgraph (name with or without `@`).
    - `scope`: nodes whose scope starts with the prefix (also matched after `Gradients/`); a prefix
      no node of the dump has is a SelectionError naming the closest ones.
    - `comm_only`: communication nodes plus `hops` hops of context on the undirected data graph.
    - `direction`: "forward" or "backward" (scope `Gradients/` or the node's phase).
    """
    notes: list[str] = []
    nodes = {n.uid: n for n in dump.nodes()}
    chosen = set(nodes)
    require_stage(dump.path, stage, [sem.placed])
    if subgraph is not None:
        name = subgraph.lstrip("@")
        if name not in {s.name for s in dump.subgraphs}:
            names = [s.name for s in dump.subgraphs]
            close = difflib.get_close_matches(name, names, n=3, cutoff=0.3) or names[:3]
            raise SelectionError(f"{dump.path}: no subgraph @{name}; closest: {', '.join('@' + c for c in close)}")
        chosen = {u for u in chosen if nodes[u].graph == name}
    if scope is not None:
        prefix = scope.rstrip("/")

        def under(s: str) -> bool:
            s = s if in_gradients(prefix) else without_gradients(s)
            return s == prefix or s.startswith(prefix + "/")

        if not any(under(n.scope or "") for n in nodes.values()):
            close = _closest_scopes(prefix, nodes.values())
            raise SelectionError(f"{dump.path}: no node is under the scope {scope}{close}")
        chosen = {u for u in chosen if under(nodes[u].scope or "")}
    if direction in ("forward", "backward"):
        want = direction == "backward"
        chosen = {u for u in chosen if is_backward(nodes[u], sem) == want}
    if comm_only:
        seeds = [u for u in chosen if u in sem.category]
        if hops > 0 and seeds:
            view = operator_graph(g).subgraph(chosen).to_undirected(as_view=True)
            dist = nx.multi_source_dijkstra_path_length(view, seeds, cutoff=hops, weight=None)
            chosen = set(dist)
        else:
            chosen = set(seeds)
    if not chosen:
        notes.append("the selection is empty")
    return Selection(chosen, notes)


# --- folding -----------------------------------------------------------------------------------

Depth = Union[int, str, None]  # an int, "all", or None for automatic


Scopes = dict[str, str]  # uid -> scope to fold by instead of the printed one (Semantics.scope)


def node_scope(node: Node, scopes: Scopes | None = None) -> str:
    """The scope a node folds under: the one irtool attributed it to, else the printed one."""
    return (scopes or {}).get(node.uid) or node.scope or ""


def scope_parts(node: Node, scopes: Scopes | None = None) -> list[str]:
    """The cell path of a node's scope, without the operator's own last component and without the
    per-operator `Grad_Op` wrappers of backward scopes (so a cell's gradient folds as one box)."""
    return list(_scope_parts(node_scope(node, scopes)))


@functools.lru_cache(maxsize=65536)
def _scope_parts(scope: str) -> tuple[str, ...]:
    # the cell (without the node's own `Op-opN`: sorted-order and step_parallel_end dumps print the cell only)
    return printed_cells(scope)


def fold_key(node: Node, depth: int | None, scopes: Scopes | None = None) -> tuple[str, bool]:
    """(box key, folded?) for a node at `depth` (None = no folding).

    A backward scope `Gradients/<forward scope>/Grad_Op/...` folds like its forward scope, so the
    gradient of a cell lands in one box `Gradients/<cell>` next to the cell's forward box.
    """
    if depth is None:
        return node.uid, False
    parts = _scope_parts(node_scope(node, scopes))
    if not parts:
        return f"(no scope)/@{node.graph}", True
    if in_gradients(parts[0]):
        return "/".join(parts[: depth + 1]), True
    return "/".join(parts[:depth]), True


def max_depth(nodes: Iterable[Node], scopes: Scopes | None = None) -> int:
    return max((len(scope_parts(n, scopes)) for n in nodes), default=0)


def box_name(key: str) -> str:
    """A short title for a folded box: the last two cells, `∇` before a backward scope."""
    grad = without_gradients(key) != key
    parts = key.split("/")[1:] if grad else key.split("/")
    short = "/".join(parts[-2:]) if len(parts) > 1 else parts[0]
    return ("∇ " if grad else "") + short


def count_boxes(nodes: list[Node], depth: int | None, scopes: Scopes | None = None) -> int:
    return len({fold_key(n, depth, scopes)[0] for n in nodes}) if depth is not None else len(nodes)


def choose_depth(nodes: list[Node], limit: int = READABLE_BOXES, scopes: Scopes | None = None) -> int | None:
    """The deepest fold that keeps at most `limit` boxes (None = unfolded if that fits)."""
    if len(nodes) <= limit:
        return None
    best = 1
    for d in range(1, max_depth(nodes, scopes) + 1):
        if count_boxes(nodes, d, scopes) > limit:
            break
        best = d
    return best


def parse_depth(text: str | None) -> Depth:
    """CLI text -> depth: None (automatic), "all", or a positive int."""
    if text is None or text == "auto":
        return None
    if text == "all":
        return "all"
    try:
        value = int(text)
    except ValueError:
        raise SelectionError(f"--depth must be a number, 'all' or 'auto', not {text!r}") from None
    if value < 1:
        raise SelectionError("--depth must be at least 1")
    return value


def output_text(node: Node) -> str:
    """The printed output type of a node, e.g. `(<Tensor[Float32], (8, 4)>)` (Return: its input)."""
    if not node.type_lines:
        return ""
    line = node.type_lines[0]
    return line.rsplit("->", 1)[1].strip() if "->" in line else line.lstrip(": ").strip()


def shape_label(output: str) -> str:
    """`(<Tensor[Float32], (8, 4)>)` -> `(8, 4)`; a type without shape gives its kind."""
    if not output:
        return ""
    outs = parse_type_sig(f": () -> {output}")[1]
    return shape_text(outs[0] if outs else None)


def shape_text(t: TypeInfo | None) -> str:
    if t is None:
        return ""
    if t.shape is None:
        return t.kind
    s = t.shape
    if isinstance(s, tuple) and s and all(isinstance(x, tuple) for x in s):
        return "(" + ", ".join(str(x) for x in s) + ")"
    return str(s).replace(",)", ")")


def tooltip(node: Node) -> str:
    """Full attributes and source lines of a node as plain text (escaped by the exporter)."""
    lines = [f"{node.uid} {node.name} = {node.op}", f"scope: {node.scope or ''}", f"line: {node.line}"]
    for group, values in node.attrs.items():
        lines.append(f"{group}: {values}")
    if node.unreadable_attrs is not None:
        lines.append(f"attributes (unreadable: {node.unreadable_attrs.reason}): {node.unreadable_attrs.text}")
    if node.type_lines:
        lines.append(f"type: {node.type_lines[0].strip()}")
    lines.extend(f"source: {s.strip()}" for s in node.sources[:3])
    text = "\n".join(lines)
    return text if len(text) <= 3000 else text[:3000] + "..."


def fold(dump: Dump, g: nx.MultiDiGraph, sem: Semantics, selection: Selection, depth: Depth = None,
         marks: dict[str, str] | None = None) -> nx.DiGraph:
    """Fold the selected nodes by name scope into boxes; returns a DiGraph ready for export.

    Boxes are keyed `b0, b1, ...` (also their DOT ids and SVG titles). Every box has `key` (scope
    prefix or node uid), `label`, `folded`, `count`, and the counters `strategy`, `redistribution`,
    `gradient`, `send`, `receive`, `comm` (Counter of categories). Unfolded boxes also have `op`,
    `name`, `scope`, `category` (or None), `strategy_text`, `peer_stage`, `tooltip`. Edges carry
    `count` and `shapes` (Counter of the producer's output shape) and a `label`.
    `marks` (uid -> `failed:<operator>` or `input`, `failure_marks`) set a box's `failure`: `failed` (and
    `failed_op`) when it holds the node whose evaluation failed, else `input` when it holds one of its inputs.
    Graph attributes: `depth` (int or None for unfolded), `notes`.
    Raises SelectionError when more than MAX_BOXES boxes would be drawn.
    """
    nodes = {n.uid: n for n in dump.nodes() if n.uid in selection.uids}
    ordered = sorted(nodes.values(), key=lambda n: n.line)
    if depth == "all":
        d: int | None = None
    elif depth is None:
        d = choose_depth(ordered, scopes=sem.scope)
    else:
        d = int(depth)
    n_boxes = count_boxes(ordered, d, sem.scope)
    if n_boxes > MAX_BOXES:
        raise SelectionError(f"{n_boxes} boxes is too many to lay out (limit {MAX_BOXES}); "
                          f"fold deeper with a smaller --depth or narrow with --scope/--stage/--comm-only")
    out = nx.DiGraph(depth=d, notes=list(selection.notes))
    box_of: dict[str, str] = {}
    ids: dict[str, str] = {}
    for n in ordered:
        key, folded = fold_key(n, d, sem.scope)
        bid = ids.get(key)
        if bid is None:
            bid = ids[key] = f"b{len(ids)}"
            out.add_node(bid, key=key, folded=folded, count=0, strategy=0, redistribution=0, gradient=0,
                         send=0, receive=0, comm=Counter(), ops=Counter(), line=n.line)
        box_of[n.uid] = bid
        a = out.nodes[bid]
        a["count"] += 1
        a["ops"][n.op] += 1
        mark = (marks or {}).get(n.uid)
        if mark is not None and a.get("failure") != "failed":
            a["failure"], _, op = mark.partition(":")
            if op:
                a["failed_op"] = op
        cat = sem.category.get(n.uid)
        if n.uid in sem.strategy:
            a["strategy"] += 1
        if cat:
            a["comm"][cat] += 1
            a["redistribution"] += cat == "redistribution"
            a["gradient"] += cat == "gradient-aggregation"
            a["send"] += n.op == "Send"
            a["receive"] += n.op == "Receive"
        if not folded:
            a.update(op=n.op, name=n.name, scope=n.scope or "", category=cat, strategy_text=sem.strategy.get(n.uid, ""),
                     peer_stage=sem.peer_stage.get(n.uid), tooltip=tooltip(n), uid=n.uid)
    for _, a in out.nodes(data=True):
        a["label"] = box_label(a)
        if a["folded"]:
            a["tooltip"] = f"{a['key']}\n{a['count']} operators: " + ", ".join(
                f"{op} x{c}" for op, c in a["ops"].most_common(12))
    # Data edges between selected operators (box_of holds only those). Shapes are counted by their
    # printed text and parsed once per distinct text: a stage of a large model has 20 k edges.
    for u, v, kind in g.edges(data="kind"):
        bu, bv = box_of.get(u), box_of.get(v)
        if kind != "data" or bu is None or bv is None or bu == bv:
            continue
        if not out.has_edge(bu, bv):
            out.add_edge(bu, bv, count=0, shapes=Counter())
        e = out.edges[bu, bv]
        e["count"] += 1
        e["shapes"][output_text(nodes[u])] += 1
    for _, _, e in out.edges(data=True):
        shapes: Counter = Counter()
        for text, count in e["shapes"].items():
            shapes[shape_label(text)] += count
        e["shapes"] = shapes
        e["label"] = edge_label(e)
    return out


def box_label(a: dict) -> str:
    """The visible text of a box (plain text; the exporter escapes it)."""
    if not a["folded"]:
        lines = [a["op"], a["name"]]
        if a.get("failure"):
            lines.insert(0, f"FAILED HERE: {a.get('failed_op', '')}" if a["failure"] == "failed"
                         else "input of the failing node")
        if a.get("strategy_text"):
            lines.append(a["strategy_text"])
        if a["op"] in P2P_OPS:
            peer = a.get("peer_stage")
            lines.append(f"{'to' if a['op'] == 'Send' else 'from'} stage {'?' if peer is None else peer}")
        elif a.get("category"):
            lines.append(f"[{a['category']}]")
        return "\n".join(lines)
    lines = [box_name(a["key"]), f"{a['count']} ops"]
    if a.get("failure"):
        lines.append("holds the failing node" if a["failure"] == "failed" else "holds an input of the failing node")
    marks = []
    for label, k in (("strategy", "strategy"), ("redist", "redistribution"), ("grad-agg", "gradient"),
                     ("Send", "send"), ("Recv", "receive")):
        if a[k]:
            marks.append(f"{label} {a[k]}")
    other = sum(a["comm"].values()) - a["redistribution"] - a["gradient"] - a["send"] - a["receive"]
    if other:
        marks.append(f"comm {other}")
    if marks:
        lines.append(" · ".join(marks))
    return "\n".join(lines)


def edge_label(e: dict) -> str:
    shapes = [s for s, _ in e["shapes"].most_common() if s]
    text = shapes[0] if shapes else ""
    if len(shapes) > 1:
        text += f" +{len(shapes) - 1}"
    return f"{text} ×{e['count']}" if e["count"] > 1 else text


def render_graph(dump: Dump, facts: ParallelFacts, *, stage: int | None = None, subgraph: str | None = None,
                 scope: str | None = None, comm_only: bool = False, hops: int = 1,
                 direction: str | None = None, depth: Depth = None) -> nx.DiGraph:
    """Selection and folding in one call: the graph `irtool.render.export` draws."""
    sem = Semantics.of(facts)
    g = build_graph(dump)
    sel = select(dump, g, sem, stage=stage, subgraph=subgraph, scope=scope, comm_only=comm_only,
                 hops=hops, direction=direction)
    out = fold(dump, g, sem, sel, depth, failure_marks(dump))
    out.graph["title"] = os.path.basename(dump.path) + (f" stage {sem.stage}" if sem.stage is not None else "")
    return out


def failure_marks(dump: Dump) -> dict[str, str]:
    """analyze_fail.ir: the uid of the node whose evaluation failed (`failed`) and of the nodes its
    inputs are (`input`); empty for any other dump."""
    r = failure_record(dump)
    if r is None:
        return {}
    marks = {f"{r.graph}/{i.text}": "input" for i in r.inputs if i.text[:1] == "%" and i.text[1:].isdigit()}
    marks[f"{r.graph}/{r.node}"] = f"failed:{r.operator}"
    return marks
