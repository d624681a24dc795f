"""A folder's pipeline graph and execution-order graph: plain JSON-ready dicts in Model Explorer's
graph format, drawn from analysis' facts (`parallel.order`: each stage's execution order;
`parallel.pairs`: the one Send/Receive pairing), never re-deriving them.

- The pipeline graph (MindInsight's pipeline view): a column per drawn rank (one per stage), in stage
  order, of its Send/Receive in execution order; a Send red, a Receive green, the backward's paler.
- The execution-order graph (MindInsight's execution overview): a row per drawn rank, in stage order,
  of its units of work (forward, backward of a micro batch on a chunk) left to right in execution
  order, each saying the Receive it waits for and the Send after it, and when it runs in the step.

Both draw each pair (a Send's line to its Receive, or to the unit receiving) and the execution order as
edge overlays (Model Explorer draws lines between boxes of two groups only so, and an overlay's edges are
not data: no box lists them as its inputs or outputs): the pairs always (the page draws them with nothing
selected too), the order edges of the box selected.
"""
from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any, Callable, NamedTuple

from ..dumpdir import Unreadable
from ..parallel import CommNode, ParallelFacts
from ..parallel.balance import in_flight
from ..parallel.job import Job
from ..parallel.order import (
    StageOrder,
    Unit,
    UnitKey,
    hop_key,
    hop_units,
    part_suffix,
    stage_order,
    unit_label,
    unit_nodes,
)
from ..parallel.pairs import pair_ranks
from ..present import DASH, cell, rank_list, shape_text
from ..present.cost import in_flight_figure
from ..present.palette import ORDER_EDGE_COLOR, P2P_BORDERS, P2P_COLORS, PAIR_EDGE_COLOR, UNIT_COLORS
from ..present.timing import seconds_text
from ..selection import not_read
from .graphs import MAX_CHILDREN, _kv, comm_attrs


class StageRank(NamedTuple):
    """One drawn rank of a folder."""

    rank: int
    file: str  # as the panel names it (`rank_4/19_validate_0078.ir.xz`)
    facts: ParallelFacts
    # subgraph -> (its graph's id before a split, the graph that opens: the overview of a split graph)
    graph_ids: Callable[[str], tuple[str, str]]
    name: Callable[[str], str]  # subgraph -> its name in the viewer (`TrainStep`)
    order: StageOrder  # its order as every folder command shows it (`Loaded.order`: the kernel graph's if any)
    figures: dict[str, str] = {}  # what the stage costs (`stage FLOPs`, ...), on its column's and row's box

    def box_id(self, c: CommNode) -> str:
        """A Send/Receive's box: `rank0/TrainStep/%12`."""
        graph, _, key = c.node.rpartition("/")
        return f"rank{self.rank}/{self.name(graph)}/{key}"

    def unit_id(self, u: Unit) -> str:
        """A unit of work's box: `rank0/F3`."""
        return f"rank{self.rank}/{u.label}"

    @property
    def group(self) -> str:
        """The rank's column (row) of boxes: `stage 0 rank 0`."""
        return f"stage {'unknown' if self.facts.stage is None else self.facts.stage} rank {self.rank}"


def _by_stage(ranks: Iterable[StageRank]) -> list[StageRank]:
    return sorted(ranks, key=lambda r: (r.facts.stage is None, r.facts.stage or 0, r.rank))


# A column: its boxes top to bottom, in order (Model Explorer lays a group of boxes without edges out as
# one rank of its layout: left to right by default, top to bottom with `layoutDirection` 1).
COLUMNS = [{"namespaceRegex": "^stage ", "layoutDirection": 1}]
ROWS = [{"namespaceRegex": "^$", "layoutDirection": 1}]  # the top level's groups one under another, each a row


def _tag(c: CommNode) -> str:
    return DASH if c.sr_tag is None else str(c.sr_tag)  # a name: `1572864`, not `1,572,864`


# Labels on the canvas say in words what is not known, or leave it out: its font has no `—` (drawn `?`).
def _unit_text(key: UnitKey | None) -> str:
    """A unit's label: `F3`, `B0.c1`; `F, micro unknown` where the dump marks no micro batch; `unit unknown` for a
    Send/Receive of no unit."""
    if key is None:
        return "unit unknown"
    phase, micro, chunk = key
    return unit_label(key) if micro is not None else phase + part_suffix(chunk) + ", micro unknown"


def _hop_text(r: StageRank, c: CommNode, place: int | None) -> str:
    """A Send/Receive box's label: `r0 #3 Send m1 c0 tag 2 -> r4 F`; its place left out where the pass does not fix
    it, the micro batch, tag and peer said unknown."""
    parts = [f"r{r.rank}", *([f"#{cell(place)}"] if place else []), c.op,
             "micro unknown" if c.micro is None else f"m{c.micro}", *([] if c.segment is None else [f"c{c.segment}"]),
             "tag unknown" if c.sr_tag is None else f"tag {c.sr_tag}", "->" if c.direction == "send" else "<-",
             "peer unknown" if c.peer_rank is None else f"r{c.peer_rank}", _phase_letter(c)]
    return " ".join(parts)


def _peer_text(c: CommNode, shown: set[int], in_folder: set[int], unreadable: list[Unreadable]) -> str:
    """The peer as the panel says it: `to rank 4`, or why it is not drawn (`selection.not_read`'s words)."""
    if c.peer_rank is not None and c.peer_rank not in shown:
        where = "in the folder, not drawn (one rank per stage)" if c.peer_rank in in_folder \
            else not_read(c.peer_rank, unreadable)
        return f"peer rank {c.peer_rank}: {where}"
    return f"{'to' if c.direction == 'send' else 'from'} rank {cell(c.peer_rank)}"


def _phase_letter(c: CommNode) -> str:
    return "B" if c.phase == "backward" else "F"


def _hop_box(r: StageRank, c: CommNode, label: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A Send/Receive box: its colour (Send red, Receive green, the backward's paler), its rows, a way
    into its stage graph (the subgraph icon opens the graph, the `stage graph` row the node in it, the
    `comm serves` row the node it serves there)."""
    graph, _, node = c.node.rpartition("/")
    whole, opened = r.graph_ids(graph)
    facts = comm_attrs(c)
    if c.serves and "/%" in c.serves:  # a node of the stage graph, not of this one: a link to it there
        sub, _, served = c.serves.rpartition("/")
        facts = [_kv("comm serves", f"{r.graph_ids(sub)[0]} {served}") if a["key"] == "comm serves" else a
                 for a in facts]
    look = (c.direction or "send", _phase_letter(c))
    return {"id": r.box_id(c), "label": label, "namespace": r.group,
            "attrs": [*rows, _kv("file", f"{r.file}:{c.line}"), _kv("stage graph", f"{whole} {node}"), *facts],
            "incomingEdges": [], "subgraphIds": [opened],
            "style": {"backgroundColor": P2P_COLORS[look], "borderColor": P2P_BORDERS[look]},
            "outputsMetadata": [{"id": "0", "attrs": [_kv("shape", shape_text(c.shape)), _kv("dtype", c.dtype),
                                                      _kv("bytes", cell(c.bytes))]}]}


Pair = tuple[str, str, str]  # (Send box, Receive box, the line's label: the Send's unit and tag)


def _paired(ranks: list[StageRank]) -> tuple[list[Pair], int]:
    """(Send box, Receive box, the Send's unit and tag) of each pair among the drawn ranks (`parallel.pairs`), and
    their count."""
    by_rank = {r.rank: r for r in ranks}
    pairs = pair_ranks({r.rank: [c for c in r.facts.comm if c.direction is not None] for r in ranks})
    units = {lp.link[0]: hop_units(by_rank[lp.link[0]].facts.table) for lp in pairs.links}
    out = [(by_rank[lp.link[0]].box_id(s), by_rank[lp.link[1]].box_id(rc),
            _unit_text(units[lp.link[0]].get(s.node)) + ("" if s.sr_tag is None else f" tag {s.sr_tag}"))
           for lp in pairs.links for s, rc in lp.pairs]
    return out, pairs.paired


PAIRS = "pairs (Send -> Receive)"
ORDER = "execution order"
LANES = ("pipeline", "execution order")  # the graphs' ids: their groups, a rank each, are shown expanded


def _overlays(graph_id: str, pairs: list[Pair], columns: dict[str, list[str]]) -> dict[str, Any]:
    """The pairs (every Send's line to the Receive it pairs with, labelled with its unit and tag; drawn
    while any box is selected) and the execution order (each box to the next of its rank; drawn for
    the box selected), as edge overlays."""
    pair_edges = [{"sourceNodeId": s, "targetNodeId": rc, "label": label} for s, rc, label in pairs]
    order_edges = [{"sourceNodeId": a, "targetNodeId": b} for ids in columns.values() for a, b in zip(ids, ids[1:])]
    overlays = []
    if pair_edges:
        overlays.append({"name": PAIRS, "edgeColor": PAIR_EDGE_COLOR, "edgeWidth": 2, "edges": pair_edges,
                         "showEdgesConnectedToSelectedNodeOnly": False})
    if order_edges:
        overlays.append({"name": ORDER, "edgeColor": ORDER_EDGE_COLOR, "edgeWidth": 1, "edges": order_edges,
                         "showEdgesConnectedToSelectedNodeOnly": True})
    data = {"type": "edge_overlays", "name": "pipeline", "graphName": graph_id, "overlays": overlays}
    return {"edgeOverlaysDataListLeftPane": [data], "edgeOverlaysDataListRightPane": [data]}


def _bounded(nodes: list[dict[str, Any]], micro: dict[str, int | None]) -> None:
    """A column of more than MAX_CHILDREN boxes: its boxes by micro batch, in their order (a group a column too)."""
    per: Counter = Counter(n["namespace"] for n in nodes)
    for n in nodes:
        if per[n["namespace"]] > MAX_CHILDREN:
            n["namespace"] = f"{n['namespace']}/micro {cell(micro[n['id']])}"


def _matched(o: StageOrder, facts: ParallelFacts) -> dict[str, CommNode]:
    """The order's record of each of the dump's Send/Receive (node -> record): the node itself when the order
    is the dump's own; when it was read in the kernel graph, that graph's record of the same hop (`hop_key`)."""
    if not o.kernel_graph:
        return {c.node: c for c in o.hops}
    theirs: dict[tuple[Any, ...], list[CommNode]] = defaultdict(list)
    for c in o.hops:
        theirs[hop_key(c)].append(c)
    return {c.node: theirs[hop_key(c)].pop(0) for c in sorted(facts.comm, key=lambda c: c.line)
            if c.direction is not None and theirs.get(hop_key(c))}


def _hops(o: StageOrder, facts: ParallelFacts) -> tuple[list[CommNode], dict[str, tuple[int, CommNode]]]:
    """A rank's Send/Receive (its own dump's: the boxes open its nodes) in execution order (`o`'s, which may be
    read in its kernel graph; dump order where the order is not fixed), and each placed one's place in that
    order with the order's record of it (the kernel graph's node, when read there)."""
    at = {id(c): i for i, c in enumerate(o.hops, 1)} if o.fixed else {}
    placed = {node: (at[id(c)], c) for node, c in _matched(o, facts).items() if id(c) in at}
    hops = sorted((c for c in facts.comm if c.direction is not None),
                  key=lambda c: (placed[c.node][0] if c.node in placed else len(at) + 1, c.line))
    return hops, placed


def _order_text(o: StageOrder) -> str:
    """Where a rank's order was read: `the kernel graph rank_0/graph_build_0_0154.ir.xz`, or its own dump."""
    return f"the kernel graph {o.kernel_graph}" if o.kernel_graph else "this dump"


def first_box(ranks: list[StageRank]) -> str | None:
    """The pipeline graph's first box: the first Send/Receive of the lowest stage's rank (the page opens
    with it selected, which draws the pairs)."""
    for r in _by_stage(ranks):
        hops, _ = _hops(r.order, r.facts)
        if hops:
            return r.box_id(hops[0])
    return None


def pipeline_graph(ranks: list[StageRank], graph_id: str = LANES[0], folder: Iterable[int] | None = None,
                   unreadable: Iterable[Unreadable] = ()) -> dict[str, Any]:
    """MindInsight's pipeline view: a column per drawn rank (one per stage), in stage order, of its
    Send/Receive in execution order (`parallel.order`: `#3`; no number and dump order where the pass does not
    fix it), each box a Send (red) or Receive (green), forward or backward (paler, `F`/`B`), saying its
    micro batch, chunk, tag and peer, opening its node in the stage graph; the pairs and the order as
    edge overlays. A peer that is not drawn is said to be in the folder, unreadable or not in the
    folder (`folder`: every rank of the folder not known unreadable)."""
    nodes: list[dict[str, Any]] = []
    shown = {r.rank for r in ranks}
    in_folder = set(folder) if folder is not None else shown
    unreadable = list(unreadable)
    unread = {u.rank for u in unreadable}
    outside: set[int] = set()
    groups: dict[str, dict[str, str]] = {}
    micro: dict[str, int | None] = {}
    columns: dict[str, list[str]] = {}
    for r in _by_stage(ranks):
        o = r.order
        hops, placed = _hops(o, r.facts)
        units = hop_units(r.facts.table)
        groups[r.group] = {"rank": str(r.rank), "stage": cell(r.facts.stage), "file": r.file, "schedule": o.schedule,
                           "order read in": _order_text(o), "Send/Receive": str(len(hops)), **r.figures}
        for c in hops:
            key = units.get(c.node)
            if c.peer_rank is not None and c.peer_rank not in in_folder:
                outside.add(c.peer_rank)
            place, theirs = placed.get(c.node, (None, c))
            label = _hop_text(r, c, place)
            order = f"{place} of {len(o.hops)} on rank {r.rank}" if place else "not fixed by this pass"
            kernel = [_kv("kernel graph", f"{o.kernel_graph}:{theirs.line}")] if place and o.kernel_graph else []
            box = _hop_box(r, c, label, [
                _kv("operator", c.op), _kv("rank", r.rank), _kv("stage", cell(r.facts.stage)),
                _kv("execution order", order), *kernel, _kv("unit", _unit_text(key)), _kv("tag", _tag(c)),
                _kv("peer", _peer_text(c, shown, in_folder, unreadable))])
            micro[box["id"]] = c.micro
            nodes.append(box)
            columns.setdefault(r.group, []).append(box["id"])
    pairs, paired = _paired(ranks)
    by_id = {n["id"]: n for n in nodes}
    for s, rc, _ in pairs:
        by_id[s]["attrs"].append(_kv("pairs with", {"type": "node_ids", "nodeIds": [rc]}))
        by_id[rc]["attrs"].append(_kv("pairs with", {"type": "node_ids", "nodeIds": [s]}))
    _bounded(nodes, micro)
    info = {"Send/Receive": str(len(nodes)), "pairs": str(paired), "ranks drawn": rank_list(sorted(shown)),
            "colours": "Send red, Receive green; backward (B) pale, forward (F) full",
            "lines": "each Send's line to the Receive it pairs with, drawn whether or not a box is selected; a "
                     "selected box's line to the next of its rank (Edge overlays menu)"}
    for what, which in (("peers unreadable", outside & unread), ("peers not in the folder", outside - unread)):
        if which:
            info[what] = rank_list(sorted(which))
    used = {n["style"]["backgroundColor"] for n in nodes}
    key = [[P2P_COLORS[look], f"{'Send' if look[0] == 'send' else 'Receive'}, {PHASE_WORDS[look[1]]}"]
           for look in P2P_COLORS if P2P_COLORS[look] in used]
    return {"id": graph_id, "nodes": nodes, "groupNodeAttributes": {"": info, **groups}, "groupNodeConfigs": COLUMNS,
            "tasksData": _overlays(graph_id, pairs, columns), KEY: {"title": "Send/Receive", "rows": key}}


# the key of a lane graph's own colours (`KEY`: title, [colour, text] rows), the page's legend where no overlay is shown
KEY = "irtoolKey"
PHASE_WORDS = {"F": "forward", "B": "backward", "recompute": "backward recomputing forward work"}

UnitTimes = dict[int, dict[UnitKey, tuple[float, float]]]  # rank -> unit -> (start, end) in the step, seconds


def execution_graph(ranks: list[StageRank], job: Job, graph_id: str = LANES[1], times: UnitTimes | None = None
                    ) -> dict[str, Any]:
    """MindInsight's execution overview: a row per drawn rank (one per stage), in stage order, of its
    units of work left to right in execution order (`parallel.order`, as every folder command reads it: the
    kernel graph's where the rank's folder holds one; the forward `F0` or backward `B0.c1` of a micro batch
    on a chunk); units coloured forward, backward and backward that recomputes forward work, each saying the
    Receive it waits for and the Send after it (`StageOrder.sequence`), the layers its operators read (rows
    `layer-3`: search `layer-3:` to light them up in every row; Model Explorer's search reads a space as two
    words) and, with `times` (the step played out, `render --timeline`'s), when it runs (the page places it so);
    each opens its first operator in the stage graph. The Send/Receive themselves are the pipeline graph's: here
    each pair is a line from the unit sending to the unit receiving (a row of units alone reads at fit). `job`: the
    folder's (`Selection.job()`, of every rank, not only those drawn), whose stages and micro batches the micro
    batches in flight are read with."""
    nodes: list[dict[str, Any]] = []
    groups: dict[str, dict[str, str]] = {}
    micro: dict[str, int | None] = {}
    columns: dict[str, list[str]] = {}
    unit_of: dict[str, str] = {}  # a Send/Receive's box in the pipeline graph -> the box of its unit here
    units = 0
    for r in _by_stage(ranks):
        t = r.facts.table
        o = r.order
        held = unit_nodes(t)
        own = {u.key: u for u in stage_order(t).units}  # the boxes are this dump's units, in `o`'s order
        groups[r.group] = {"rank": str(r.rank), "stage": cell(r.facts.stage), "file": r.file, "schedule": o.schedule,
                           "order": ("fixed by the dependencies" if o.fixed else f"not fixed: {o.why or o.schedule}")
                           + f", read in {_order_text(o)}",
                           "units": str(len(o.units)),
                           "micro batches in flight": in_flight_figure(in_flight(o, r.facts.stage, job)),
                           **r.figures}
        mine = {c.node: c for c in r.facts.comm}
        of_hop = hop_units(t)
        back = {id(theirs): mine[node] for node, theirs in _matched(o, r.facts).items()}
        hops: dict[UnitKey, list[tuple[str, str]]] = defaultdict(list)  # unit -> (row, what) of its Send/Receive
        lost = 0
        for step in o.sequence():
            if isinstance(step, Unit):
                continue
            if id(step) not in back:  # a Send/Receive of the kernel graph this dump has none of: said
                lost += 1
                continue
            c = back.pop(id(step))
            _hop_row(r, c, of_hop, hops, unit_of)
        for c in sorted(back.values(), key=lambda c: c.line):  # of no place in the order
            if c.category == "pipeline" and c.direction:
                _hop_row(r, c, of_hop, hops, unit_of)
        if lost:
            groups[r.group]["not in this dump"] = f"{lost} Send/Receive of {_order_text(o)}"
        recomputed = unit_values(r, {n.uid: runs for g in t.dump.subgraphs for n in g.nodes
                                     if t("phase", n) == "recompute" and (runs := t("runs", n))})
        row = [_unit_box(r, own.get(u.key, u), held.get(u.key, []), hops.get(u.key, []),
                         (times or {}).get(r.rank, {}).get(u.key), recomputed.get(r.unit_id(u), 0)) for u in o.units]
        units += len(row)
        if o.kernel_graph:  # where the order was read
            for box, u in zip(row, o.units):
                box["attrs"].append(_kv("kernel graph", f"{o.kernel_graph}:{u.line}"))
        for n in row:
            micro[n["id"]] = n.pop("micro batch")
        nodes += row
        columns[r.group] = [n["id"] for n in row]
    ids = {n["id"] for n in nodes}
    pairs = [(unit_of[s], unit_of[rc], c) for s, rc, c in _paired(ranks)[0]
             if unit_of.get(s) in ids and unit_of.get(rc) in ids]
    _bounded(nodes, micro)
    info = {"units": str(units), "pairs": str(len(pairs)),
            "ranks drawn": rank_list(sorted(r.rank for r in ranks)),
            "colours": "forward blue, backward orange, backward that recomputes forward work purple",
            "lines": "each Send's line from the unit sending to the unit receiving (its Send and Receive are the "
                     "pipeline graph's boxes)",
            "layers": "search `layer-3:` to light up the units whose operators read layer 3 (their `layer-N` rows)"}
    if times:
        info["time"] = "each unit where it runs in the step on the default hardware profile (`render --timeline`); " \
                       "a step too long for the screen wraps onto lines, each the same stretch of time in every row"
    used = {n["style"]["backgroundColor"] for n in nodes}
    key = [[colour, PHASE_WORDS[look]] for look, colour in UNIT_COLORS.items() if colour in used]
    return {"id": graph_id, "nodes": nodes, "groupNodeAttributes": {"": info, **groups}, "groupNodeConfigs": ROWS,
            "tasksData": _overlays(graph_id, pairs, columns), KEY: {"title": "units of work", "rows": key}}


def _hop_row(r: StageRank, c: CommNode, units: dict[str, UnitKey | None], hops: dict[UnitKey, list[tuple[str, str]]],
             unit_of: dict[str, str]) -> None:
    """A Send/Receive as a row of the unit it serves (`waits for` a Receive, `then` a Send; `units`: each hop's,
    `hop_units`), and its unit's box; none of no unit."""
    key = units.get(c.node)
    if key is None:
        return
    arrow = "->" if c.direction == "send" else "<-"
    hops[key].append(("then" if c.direction == "send" else "waits for",
                      f"{c.op} tag {_tag(c)} {arrow} rank {cell(c.peer_rank)} ({r.file}:{c.line})"))
    unit_of[r.box_id(c)] = f"rank{r.rank}/{unit_label(key)}"


def _unit_box(r: StageRank, u: Unit, members: list[Any], hops: list[tuple[str, str]],
              time: tuple[float, float] | None, recomputed: int) -> dict[str, Any]:
    """A unit of work: its phase, micro batch, chunk, when it runs, its Send/Receive, operators (`recomputed`:
    the recompute operators it runs, those of the graphs it calls included, as the timeline times them), the
    layers they read."""
    t = r.facts.table
    first = min(members, key=lambda n: n.line) if members else None
    layers = Counter(t("layer", n) for n in members)
    rows = [_kv("unit", u.label), _kv("phase", "forward" if u.phase == "F" else "backward"), _kv("micro", u.micro),
            _kv("chunk", cell(u.chunk)), _kv("operators", u.nodes), _kv("recomputed operators", recomputed),
            _kv("rank", r.rank), _kv("stage", cell(r.facts.stage))]
    if time is not None:  # `<start> to <end>`: the page places the box at its start
        rows.append(_kv("time", f"{seconds_text(time[0])} to {seconds_text(time[1])}"))
    rows += [_kv(row, what) for row, what in hops]
    opened = ""
    if first is not None:
        whole, opened = r.graph_ids(first.graph)
        rows += [_kv("file", f"{r.file}:{first.line}"), _kv("stage graph", f"{whole} {first.key}")]
    rows += [_kv(f"layer-{layer}", f"{n} operators") for layer, n in sorted(
        (x for x in layers.items() if x[0] is not None), key=lambda x: x[0])]
    look = "recompute" if recomputed else u.phase
    return {"id": r.unit_id(u), "label": _unit_text(u.key),  # recomputing: its colour (a word more cut the font at fit)
            "namespace": r.group, "attrs": rows, "incomingEdges": [], "subgraphIds": [opened] if opened else [],
            "style": {"backgroundColor": UNIT_COLORS[look], "borderColor": "#616161"}, "outputsMetadata": [],
            "micro batch": u.micro}


def unit_values(r: StageRank, values: dict[str, int]) -> dict[str, int]:
    """Each unit box's sum of its operators' values (`values`: node uid -> value in the step, a reused cell's
    operators times their runs), a call's its callee's for one call (a lazy-inline stage's units are calls);
    none for a unit none of whose operators has one, or holding a call whose graph the dump does not name (a
    bprop closure passed along: its work is unknown, never 0)."""
    t = r.facts.table
    held = unit_nodes(t)
    names = {g.name for g in t.dump.subgraphs}
    per_call: dict[str, Any] = {}

    def one_run(n: Any) -> Any:
        """A node's value for one run of it: an operator's over its runs a step (the `runs` fact), a call's its
        callees' (`call @g`, a closure naming its graph); `_UNNAMED` for a call of no named graph."""
        if n.uid in values:
            runs = t("runs", n)
            return values[n.uid] // runs if runs else None
        if not n.is_call:
            return None
        graphs = [g for g in n.called_graphs if g in names]
        return _total([one_call(g) for g in graphs]) if graphs else _UNNAMED

    def one_call(graph: str) -> Any:
        if graph not in per_call:
            per_call[graph] = None  # a graph calling itself adds nothing more
            per_call[graph] = _total([one_run(n) for n in t.dump.subgraph(graph).nodes])
        return per_call[graph]

    out = {}
    for u in r.order.units:
        value = _total([one_run(n) for n in held.get(u.key, [])])
        if value is not None and value is not _UNNAMED:
            out[r.unit_id(u)] = value
    return out


_UNNAMED = object()  # the value of work the dump does not name (a call of no named graph): unknown, never 0


def _total(values: list[Any]) -> Any:
    """The sum of the known values; `_UNNAMED` when any is; None when none is known."""
    if any(v is _UNNAMED for v in values):
        return _UNNAMED
    known = [v for v in values if v is not None]
    return sum(known) if known else None
