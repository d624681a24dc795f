"""`irtool render DIR --pipeline`: every stage's Send/Receive in execution order, side by side,
each Send linked to the Receive that takes it (docs/cost.md §4)."""
from __future__ import annotations

import pydot

from ..errors import SelectionError
from ..parallel.schedule import P2PEvent, StageSchedule, stage_schedule
from ..present.palette import CATEGORY_COLORS, DIFF_COLORS
from ..selection import Loaded
from .export import escape


def folder_schedules(picked: list[Loaded], path: str) -> list[tuple[int | None, StageSchedule]]:
    """(rank, schedule) of the ranks picked one per stage (`Selection.per_stage`), by stage."""
    seen = [(p.rank, stage_schedule(p.dump, p.facts)) for p in picked if p.facts.stage is not None]
    if len(seen) < 2:
        raise SelectionError(f"{path}: --pipeline needs a folder of ranks on two or more pipeline stages "
                             f"(found {len(seen)})")
    return seen


def _id(stage: int | None, i: int) -> str:
    return f"s{stage}_{i}"


def pipeline_dot(schedules: list[tuple[int | None, StageSchedule]], title: str) -> str:
    """DOT text: one column per stage, its Send/Receive top to bottom in order, Send -> Receive edges."""
    dot = pydot.Dot("pipeline", graph_type="digraph", rankdir="TB", fontname="Helvetica", newrank="true",
                    label=escape(title), labelloc="t")
    dot.set_node_defaults(fontname="Helvetica", fontsize="10", style="filled")
    where: dict[tuple[int | None, str, str, int | None, int | None], str] = {}
    for rank, s in schedules:
        c = pydot.Cluster(f"stage{s.stage}", label=escape(f"stage {s.stage} (rank {rank})\n{s.schedule}"),
                          fontsize="11", style="rounded")
        prev = None
        for i, e in enumerate(s.events):
            nid = _id(s.stage, i)
            fill = CATEGORY_COLORS["pipeline"] if e.phase == "forward" else DIFF_COLORS["removed"]
            c.add_node(pydot.Node(nid, label=escape(e.label), shape="rarrow" if e.op == "Send" else "larrow",
                                  fillcolor=fill, tooltip=escape(f"{e.node} line {e.line}", tooltip=True)))
            if prev is not None:
                c.add_edge(pydot.Edge(prev, nid, style="dotted" if not s.fixed else "solid", color="#999999",
                                      weight="10", arrowhead="none" if not s.fixed else "normal"))
            prev = nid
            where[(s.stage, e.op, e.phase, e.micro, e.peer_stage)] = nid
        dot.add_subgraph(c)
    for _, s in schedules:
        for i, e in enumerate(s.events):
            if e.op != "Send":
                continue
            target = where.get((e.peer_stage, "Receive", e.phase, e.micro, s.stage))
            if target is not None:
                dot.add_edge(pydot.Edge(_id(s.stage, i), target, color="#1f5fbf" if e.phase == "forward" else "#bf1f1f",
                                        constraint="true"))
    return dot.to_string()


def unmatched(schedules: list[tuple[int | None, StageSchedule]]) -> list[P2PEvent]:
    """Sends whose Receive is on no drawn stage (a stage left out, or a pass that dropped it)."""
    have = {(s.stage, e.op, e.phase, e.micro, e.peer_stage) for _, s in schedules for e in s.events}
    return [e for _, s in schedules for e in s.events
            if e.op == "Send" and (e.peer_stage, "Receive", e.phase, e.micro, s.stage) not in have]
