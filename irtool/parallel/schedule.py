"""The pipeline in execution order (docs/cost.md §4): a stage's Send/Receive ordered by the data,
Depend and UpdateState edges between them, and the schedule that order amounts to."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..ir import Dump, build_graph
from .records import ParallelFacts


@dataclass(frozen=True)
class P2PEvent:
    """One pipeline Send/Receive: which micro batch, forward or backward, to/from which stage."""

    op: str
    phase: str  # forward, backward
    micro: int | None
    peer_stage: int | None
    node: str
    line: int

    @property
    def label(self) -> str:
        arrow = "to" if self.op == "Send" else "from"
        micro = "?" if self.micro is None else self.micro
        peer = "?" if self.peer_stage is None else self.peer_stage
        return f"{'F' if self.phase != 'backward' else 'B'}{micro} {self.op} {arrow} stage {peer}"

    def as_dict(self) -> dict[str, Any]:
        return {"op": self.op, "phase": self.phase, "micro": self.micro, "peer_stage": self.peer_stage,
                "node": self.node, "line": self.line}


@dataclass
class StageSchedule:
    stage: int | None
    events: list[P2PEvent]  # in execution order when `fixed`, else in print order
    fixed: bool  # every consecutive pair ordered by a path of edges
    schedule: str
    warmup: int | None  # forward micro batches before the first backward
    chunks: list[int] = field(default_factory=list)

    @property
    def work(self) -> list[str]:
        """`F0 F1 B0 ...`: each micro batch's forward/backward at its last Send/Receive (the point by
        which this stage's own work on it is done or starts: ordered the same way)."""
        last: dict[tuple[str, int | None], int] = {}
        for i, e in enumerate(self.events):
            last[("F" if e.phase != "backward" else "B", e.micro)] = i
        return [f"{k}{'?' if m is None else m}" for (k, m), _ in sorted(last.items(), key=lambda kv: kv[1])]

    @property
    def in_flight(self) -> int | None:
        """Most micro batches begun forward and not yet finished backward at once, in this order."""
        if not self.fixed:
            return None
        held = peak = 0
        for w in self.work:
            held += 1 if w[0] == "F" else -1
            peak = max(peak, held)
        return peak

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "fixed": self.fixed, "in_flight": self.in_flight, "schedule": self.schedule,
                "warmup": self.warmup, "order": self.work, "chunks": self.chunks,
                "events": [e.as_dict() for e in self.events]}


def stage_schedule(dump: Dump, facts: ParallelFacts) -> StageSchedule:
    """Order this rank's pipeline Send/Receive nodes and name the schedule."""
    import networkx as nx

    p2p = [c for c in facts.comm if c.category == "pipeline" and c.op in ("Send", "Receive")]
    events = [P2PEvent(c.op, "backward" if c.phase == "backward" else "forward", c.micro, c.peer_stage, c.node, c.line)
              for c in p2p]
    chunks = list(facts.stage_info.chunks)
    if not events:
        return StageSchedule(facts.stage, [], False, "no pipeline Send/Receive in this pass", None, chunks)
    g = build_graph(dump)
    order_graph = nx.DiGraph()
    order_graph.add_edges_from((u, v) for u, v, k in g.edges(data="kind") if k != "call")
    ids = {e.node for e in events}
    after = {e.node: (nx.descendants(order_graph, e.node) & ids) if e.node in order_graph else set() for e in events}
    ranked = sorted(events, key=lambda e: (-len(after[e.node]), e.line))
    fixed = all(b.node in after[a.node] for a, b in zip(ranked, ranked[1:]))
    if not fixed:
        return StageSchedule(facts.stage, sorted(events, key=lambda e: e.line), False,
                             "this pass does not fix the order (Send/Receive not chained by data, Depend or "
                             "UpdateState edges)", None, chunks)
    s = StageSchedule(facts.stage, ranked, True, "", None, chunks)
    s.schedule, s.warmup = classify(s.work, chunks)
    return s


def classify(work: list[str], chunks: list[int]) -> tuple[str, int | None]:
    """GPipe (every forward before any backward), 1F1B (k forward, then backward and forward
    alternating, then the remaining backward), interleaved (more than one chunk), or other."""
    kinds = [w[0] for w in work]
    warmup = next((i for i, k in enumerate(kinds) if k == "B"), len(kinds))
    n_f = kinds.count("F")
    if len(set(chunks)) > 1:
        return f"interleaved, {len(set(chunks))} chunks", warmup
    if warmup == n_f:
        return ("all forward before backward: GPipe (1F1B looks the same when its warm-up covers every micro "
                "batch)"), warmup
    rest = kinds[warmup:]
    steady = n_f - warmup
    if rest == ["B", "F"] * steady + ["B"] * (len(rest) - 2 * steady):
        return f"1F1B: {warmup} forward warm-up, then one backward per forward", warmup
    return "other order (neither GPipe nor 1F1B)", warmup
