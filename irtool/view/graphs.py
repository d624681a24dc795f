"""Dumps as Model Explorer graphs: plain JSON-ready dicts in Model Explorer's graph format.

One graph per subgraph of a dump: a node per operator (id `graph/%N`, label the operator,
namespace the name scope without the operator's own `Op-opN`, so forward `Default/...`, backward
`Gradients/...` and recompute `recompute_Default/...` parts are separate trees), a node per
parameter or free variable it reads, data edges from arguments, `subgraphIds` for the graphs a
node calls. The side panel shows the dump's own text (file, line, attributes, types, source lines)
and irtool's facts (strategy, communication category, phase, rule, group, bytes, peer, what it
serves). Folded scopes carry counts of operators with strategies, redistribution and
gradient-aggregation nodes. Node data (Model Explorer's per-node overlay) colours nodes by
category and by bytes; for a diff, by added / removed / changed.

Nothing here imports Model Explorer: the dicts are its JSON format, so `irtool export` works
without it, and `irtool view` serves them as JSON text (no dataclass copies of 40 k nodes).
"""
from __future__ import annotations

import os
import re
from collections import defaultdict
from typing import Any, Iterable

from ..ir import Dump, Node
from ..parallel import CATEGORIES, CommNode, ParallelFacts
from ..present import DASH, cell, rank_list, strategy_text
from ..present.palette import CATEGORY_COLORS, DIFF_COLORS

_GRAPH_TOKEN = re.compile(r"@@?([^\s,()\[\]]+)")
MAX_VALUE = 2000  # characters of one attribute shown in the side panel (the dump line has them all)


def namespace_of(scope: str | None) -> str:
    """`Default/network-Net/fc1-Dense/MatMul-op0` -> `Default/network-Net/fc1-Dense`."""
    parts = [p for p in (scope or "").split("/") if p]
    return "/".join(parts[:-1])


def _kv(key: str, value: Any) -> dict[str, str]:
    text = value if isinstance(value, str) else cell(value)
    if len(text) > MAX_VALUE:
        text = text[:MAX_VALUE] + f" (+{len(text) - MAX_VALUE} characters, see the dump line)"
    return {"key": key, "value": text}


def _graph_refs(node: Node, names: set[str]) -> list[str]:
    """Subgraphs this node refers to: `@g` arguments, `call @g`, `[@FuncUnion(@a, @b)]` callees."""
    found: list[str] = []
    for inp in node.inputs:
        found += [r.name.lstrip("@") for r in ((inp.ref,) if inp.ref else inp.nested) if r.kind == "graph"]
    found += _GRAPH_TOKEN.findall(node.text[: node.args_start])
    return [g for g in dict.fromkeys(found) if g in names]


def comm_attrs(c: CommNode) -> list[dict[str, str]]:
    """What irtool derived about a communication node, for the side panel."""
    rows = [("category", c.category), ("phase", c.phase), ("rule", c.rule), ("group", c.group),
            ("group ranks", rank_list(c.group_ranks) if c.group_ranks else None), ("shape", c.shape),
            ("dtype", c.dtype), ("bytes", c.bytes), ("micro", c.micro), ("peer rank", c.peer_rank),
            ("peer stage", c.peer_stage), ("segment", c.segment), ("serves", c.serves),
            ("serves op", c.serves_op), ("serves strategy", strategy_text(c.serves_strategy) if c.serves_strategy
                                          is not None else None),
            ("parameter", c.parameter)]
    return [_kv(f"comm {k}", v) for k, v in rows if v is not None and v != ""]


class _Context:
    """Per dump: facts by node uid, parameters, subgraph names."""

    def __init__(self, dump: Dump, facts: ParallelFacts) -> None:
        self.dump = dump
        self.comm = {c.node: c for c in facts.comm}
        self.strategy = {s.node: s for s in facts.strategies}
        self.params = {p.ref: p for p in dump.params}
        self.names = {g.name for g in dump.subgraphs}
        self.file = os.path.basename(dump.path)


def _node_attrs(node: Node, ctx: _Context) -> list[dict[str, str]]:
    attrs = [_kv("operator", node.op), _kv("name", node.name), _kv("file", f"{ctx.file}:{node.line}")]
    if node.scope:
        attrs.append(_kv("scope", node.scope))
    if node.is_call:
        attrs.append(_kv("callee", node.callee))
    inst = node.instance_name
    if inst:
        attrs.append(_kv("instance name", inst))
    s = ctx.strategy.get(node.uid)
    if s is not None:
        for key, value in s.values().items():
            if value is not None:
                attrs.append(_kv(key.replace("_", " "), strategy_text(value)))
    c = ctx.comm.get(node.uid)
    if c is not None:
        attrs += comm_attrs(c)
    for inp in node.inputs:
        if inp.ref is None and not inp.nested:  # constants are not edges: show them
            attrs.append(_kv(f"input {inp.index}", inp.text))
    tail = node.tail.strip()
    if tail:  # as printed: parsing every operator's attributes would cost seconds on a large dump
        attrs.append(_kv("attributes", tail))
    attrs += [_kv(f"source {i + 1}", line.lstrip("# ")) for i, line in enumerate(node.sources[:3])]
    return attrs


def _output_metadata(node: Node) -> list[dict[str, Any]]:
    attrs = [_kv("__tensor_tag", node.key)]
    t = node.output_type
    if t is not None:
        if t.shape is not None:
            attrs.append(_kv("shape", t.shape))
        if t.dtype:
            attrs.append(_kv("dtype", t.dtype))
        attrs.append(_kv("type", t.text))
    return [{"id": "0", "attrs": attrs}]


def subgraph_graph(ctx: _Context, name: str, graph_id: str | None = None) -> dict[str, Any]:
    """The Model Explorer graph of one subgraph of the dump."""
    sg = ctx.dump.subgraph(name)
    known = {n.key for n in sg.nodes}
    own_params = set(sg.params)
    aux: dict[str, dict[str, Any]] = {}  # parameter and free-variable nodes, by reference
    nodes: list[dict[str, Any]] = []
    counts: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def source(ref_kind: str, ref_name: str, ns: str) -> str:
        if ref_name not in aux:
            p = ctx.params.get(ref_name)
            label = ref_name[ref_name.index("_") + 1 :] if ref_kind == "param" and "_" in ref_name else ref_name
            kind = "free variable" if ref_kind == "free" else \
                ("subgraph parameter" if ref_name in own_params else "parameter")
            attrs = [_kv("operator", "Parameter" if ref_kind == "param" else "FreeVariable"), _kv("kind", kind),
                     _kv("reference", ref_name)]
            meta = [_kv("__tensor_tag", ref_name)]
            if p is not None:
                attrs.append(_kv("file", f"{ctx.file}:{p.line}"))
                t = p.type
                if t is not None:
                    meta += [_kv("shape", t.shape), _kv("dtype", t.dtype), _kv("type", t.text)]
            aux[ref_name] = {"id": ref_name, "label": label, "namespace": ns, "attrs": attrs,
                             "incomingEdges": [], "outputsMetadata": [{"id": "0", "attrs": meta}]}
        return ref_name

    for node in sg.nodes:
        ns = namespace_of(node.scope)
        edges = []
        for inp in node.inputs:
            for ref in (inp.ref,) if inp.ref else inp.nested:
                if ref.kind == "node":
                    if ref.name not in known:
                        continue
                    src = ref.name
                elif ref.kind in ("param", "free"):
                    src = source(ref.kind, ref.name, ns)
                else:
                    continue
                edges.append({"sourceNodeId": src, "sourceNodeOutputId": "0", "targetNodeInputId": str(inp.index)})
        c = ctx.comm.get(node.uid)
        entry: dict[str, Any] = {
            "id": node.key, "label": node.op if not node.is_call else f"call {node.callee}"[:60], "namespace": ns,
            "attrs": _node_attrs(node, ctx), "incomingEdges": edges, "outputsMetadata": _output_metadata(node)}
        subs = _graph_refs(node, ctx.names)
        if subs:
            entry["subgraphIds"] = subs
        if c is not None:
            entry["style"] = {"backgroundColor": CATEGORY_COLORS[c.category], "borderColor": "#424242"}
        nodes.append(entry)
        # counts of a folded scope include everything below it
        parts = ns.split("/") if ns else []
        for depth in range(1, len(parts) + 1):
            box = counts["/".join(parts[:depth])]
            box["operators"] += 1
            box["with strategy"] += node.uid in ctx.strategy
            if c is not None:
                box["communication"] += 1
                box["redistribution"] += c.category == "redistribution"
                box["gradient aggregation"] += c.category == "gradient-aggregation"
    group_attrs = {ns: {k: str(v) for k, v in box.items()} for ns, box in counts.items()}
    group_attrs[""] = {"dump": ctx.file, "subgraph": name, "nodes": str(len(sg.nodes)),
                       "parameters": str(len(aux)), "entry": "yes" if ctx.dump.entry == name else "no"}
    return {"id": graph_id or name, "nodes": list(aux.values()) + nodes, "groupNodeAttributes": group_attrs}


def dump_graphs(dump: Dump, facts: ParallelFacts, prefix: str = "") -> list[dict[str, Any]]:
    """One graph per subgraph, the entry graph first; graph ids are `prefix` + the subgraph name."""
    ctx = _Context(dump, facts)
    names = sorted((g.name for g in dump.subgraphs), key=lambda n: n != dump.entry)
    return [subgraph_graph(ctx, n, prefix + n) for n in names]


# --- pipeline view ---------------------------------------------------------------------------

def comm_id(rank: int, c: CommNode) -> str:
    """Node id of a Send/Receive in the pipeline graph: `rank0/graph/%12`."""
    return f"rank{rank}/{c.node}"


def pipeline_graph(ranks: list[tuple[int, str, ParallelFacts]], graph_id: str = "pipeline") -> dict[str, Any]:
    """Every Send/Receive of the given ranks (one per stage), a namespace per stage, and an edge from
    each Send to the Receive it pairs with: same sender and receiver, matched in order by tag and
    micro batch (the label carries micro batch, shape and bytes)."""
    nodes: dict[str, dict[str, Any]] = {}
    comm: dict[str, CommNode] = {}
    sends: dict[tuple, list[str]] = defaultdict(list)
    receives: dict[tuple, list[str]] = defaultdict(list)
    for rank, file, facts in ranks:
        stage = DASH if facts.stage is None else str(facts.stage)
        for c in facts.comm:
            if c.direction is None:
                continue
            nid = comm_id(rank, c)
            comm[nid] = c
            peer = f"{'to' if c.direction == 'send' else 'from'} rank {cell(c.peer_rank)}"
            nodes[nid] = {"id": nid, "label": c.op, "namespace": f"stage {stage} (rank {rank})/{c.phase}",
                          "attrs": [_kv("file", f"{file}:{c.line}"), _kv("peer", peer), *comm_attrs(c)],
                          "incomingEdges": [], "style": {"backgroundColor": CATEGORY_COLORS[c.category]},
                          "outputsMetadata": [{"id": "0", "attrs": [
                              _kv("__tensor_tag", f"micro {cell(c.micro)}"), _kv("shape", c.shape),
                              _kv("dtype", c.dtype), _kv("bytes", c.bytes)]}]}
            link = (rank, c.peer_rank) if c.direction == "send" else (c.peer_rank, rank)
            (sends if c.direction == "send" else receives)[(*link, c.sr_tag, c.micro)].append(nid)
    for key, senders in sends.items():
        for s, r in zip(senders, receives.get(key, [])):
            nodes[r]["incomingEdges"].append({"sourceNodeId": s, "sourceNodeOutputId": "0", "targetNodeInputId": "0"})
    paired = sum(len(n["incomingEdges"]) for n in nodes.values())
    return {"id": graph_id, "nodes": list(nodes.values()),
            "groupNodeAttributes": {"": {"Send/Receive": str(len(nodes)), "pairs": str(paired)}}}


# --- node data -------------------------------------------------------------------------------

def _node_data(name: str, results: dict[str, dict[str, Any]], thresholds: list | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "results": results}
    if thresholds:
        out["thresholds"] = thresholds
    return out


def _in_subgraph(facts: ParallelFacts, subgraph: str) -> list[tuple[CommNode, str]]:
    """The communication nodes of one subgraph, each with its node key (`%N`)."""
    out = []
    for c in facts.comm:
        graph, _, key = c.node.rpartition("/")
        if graph == subgraph:
            out.append((c, key))
    return out


def category_node_data(graphs: Iterable[tuple[str, ParallelFacts, str]]) -> dict[str, Any]:
    """Model Explorer node data: communication nodes valued by category (index in
    `irtool.parallel.CATEGORIES`) and coloured by it; `graphs` is (graph id, facts, subgraph)."""
    out = {}
    for graph_id, facts, subgraph in graphs:
        res = {key: {"value": CATEGORIES.index(c.category), "bgColor": CATEGORY_COLORS[c.category]}
               for c, key in _in_subgraph(facts, subgraph)}
        out[graph_id] = _node_data("comm category", res)
    return out


BYTES_THRESHOLDS = [{"value": 64 * 1024, "bgColor": "#c8e6c9"}, {"value": 1024 * 1024, "bgColor": "#fff59d"},
                    {"value": 16 * 1024 * 1024, "bgColor": "#ffcc80"}, {"value": 2 ** 62, "bgColor": "#ef9a9a"}]


def bytes_node_data(graphs: Iterable[tuple[str, ParallelFacts, str]]) -> dict[str, Any]:
    """Model Explorer node data: bytes of each communication node whose size the dump gives,
    coloured green (< 64 KiB), yellow (< 1 MiB), orange (< 16 MiB), red."""
    out = {}
    for graph_id, facts, subgraph in graphs:
        res = {key: {"value": c.bytes} for c, key in _in_subgraph(facts, subgraph) if c.bytes is not None}
        out[graph_id] = _node_data("comm bytes", res, BYTES_THRESHOLDS)
    return out


def diff_node_data(graph_id: str, changes: dict[str, str]) -> dict[str, Any]:
    """Model Explorer node data marking nodes (`%N` keys) `added`, `removed` or `changed`."""
    kinds = ["added", "removed", "changed"]
    return {graph_id: _node_data("diff", {k: {"value": kinds.index(v) + 1, "bgColor": DIFF_COLORS[v]}
                                          for k, v in changes.items()})}
