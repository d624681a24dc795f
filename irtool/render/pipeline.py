"""`irtool render DIR --pipeline`: every stage's pipeline Send/Receive in execution order, side by
side, each Send linked to the Receive that takes it (docs/cost.md §4). The order is analysis'
(`parallel.order`), as every folder command reads it (`Loaded.order`: the kernel graph's where the rank's
folder holds one, whose Send/Receive are then drawn), the pairs too (`parallel.pairs`, as `check` pairs them)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import pydot

from ..errors import SelectionError
from ..parallel.order import StageOrder, UnitKey, unit_label
from ..parallel.pairs import Pairs, pair_ranks
from ..parallel.records import CommNode
from ..present import cell
from ..present.palette import P2P_COLORS
from ..selection import Loaded
from .export import escape


@dataclass
class Column:
    """One stage as drawn: the rank picked for it, its order, and the Send/Receive it pairs, in dump order (of the
    file the order was read in: the kernel graph's pipeline Send/Receive, when read there)."""

    rank: int
    order: StageOrder
    hops: list[CommNode]


@dataclass
class Drawing:
    columns: list[Column]
    pairs: Pairs[CommNode]


def folder_pipeline(picked: list[Loaded], path: str, lenient: bool = False) -> Drawing:
    """The columns of the ranks picked one per stage (`Selection.per_stage`), by stage, and their pairs."""
    ranks = [p for p in picked if p.facts.stage is not None and p.rank is not None]
    if len(ranks) < 2:
        raise SelectionError(f"{path}: --pipeline needs a folder of ranks on two or more pipeline stages "
                             f"(found {len(ranks)})")
    columns = [_column(p, p.order(lenient)) for p in ranks]
    return Drawing(columns, pair_ranks({col.rank: col.hops for col in columns}))


def _column(p: Loaded, order: StageOrder) -> Column:
    hops = sorted(order.hops, key=lambda c: c.line) if order.kernel_graph else [c for c in p.facts.comm if c.direction]
    return Column(cast(int, p.rank), order, hops)


def column_title(col: Column) -> str:
    """`stage 0 (rank 0)`, its schedule, and the kernel graph the order was read in (when it was)."""
    s = col.order
    where = f"\norder of the kernel graph {s.kernel_graph}" if s.kernel_graph else ""
    return f"stage {s.stage} (rank {col.rank})\n{s.schedule}{where}"


def label(c: CommNode, unit: UnitKey | None) -> str:
    """`F0.c1 Send to stage 1 (rank 2)`: the unit it belongs to (`StageOrder.hop_units`: forward/backward, micro batch,
    chunk or segment on a stage of several; `—` of none), the direction and the peer."""
    arrow = "to" if c.op == "Send" else "from"
    unit_text = cell(None) if unit is None else unit_label(unit)
    return f"{unit_text} {c.op} {arrow} stage {cell(c.peer_stage)} (rank {cell(c.peer_rank)})"


def _id(rank: int, c: CommNode) -> str:
    return f"r{rank}_{c.line}"


def pipeline_dot(d: Drawing, title: str) -> str:
    """DOT text: one column per stage, its pipeline Send/Receive top to bottom in execution order (a
    dotted column: order not fixed), one edge from each Send to the Receive it pairs with."""
    dot = pydot.Dot("pipeline", graph_type="digraph", rankdir="TB", fontname="Helvetica", newrank="true",
                    label=escape(title), labelloc="t")
    dot.set_node_defaults(fontname="Helvetica", fontsize="10", style="filled")
    drawn: dict[int, str] = {}  # id(record) -> node id
    for col in d.columns:
        s = col.order
        c = pydot.Cluster(f"stage{s.stage}", label=escape(column_title(col)),
                          fontsize="11", style="rounded")
        prev = None
        for e in s.hops:
            nid = drawn[id(e)] = _id(col.rank, e)
            # as the view's pipeline graph draws them: a Send red, a Receive green, the backward's paler
            fill = P2P_COLORS[("send" if e.op == "Send" else "receive", "B" if e.phase == "backward" else "F")]
            c.add_node(pydot.Node(nid, label=escape(label(e, s.hop_units.get(e.node))),
                                  shape="rarrow" if e.op == "Send" else "larrow",
                                  fillcolor=fill, tooltip=escape(f"{e.node} line {e.line} tag {e.sr_tag}",
                                                                 tooltip=True)))
            if prev is not None:
                c.add_edge(pydot.Edge(prev, nid, style="dotted" if not s.fixed else "solid", color="#999999",
                                      weight="10", arrowhead="none" if not s.fixed else "normal"))
            prev = nid
        dot.add_subgraph(c)
    for lp in d.pairs.links:
        for send, receive in lp.pairs:
            if id(send) in drawn and id(receive) in drawn:
                dot.add_edge(pydot.Edge(drawn[id(send)], drawn[id(receive)], constraint="true",
                                        color="#1f5fbf" if send.phase != "backward" else "#bf1f1f"))
    return dot.to_string()


def unmatched(d: Drawing) -> list[CommNode]:
    """Pipeline Sends whose Receive is on no drawn stage (a stage left out, another rank of the stage,
    or no Receive anywhere)."""
    partner = d.pairs.partner()
    drawn = {id(e) for col in d.columns for e in col.order.hops}
    return [e for col in d.columns for e in col.order.hops
            if e.op == "Send" and (id(e) not in partner or id(partner[id(e)]) not in drawn)]
