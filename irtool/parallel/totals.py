"""Sums over communication nodes (docs/parallel.md §12, §14): per category, operator and phase,
Send/Receive grouped by peer, gradient aggregation per parameter, scopes, wire traffic and the
stage x stage Send matrix of a folder. Typed records; their JSON is made at output (`as_dict`).

Every byte sum is over one step: each node's bytes times its runs (`CommNode.step_bytes`, the `runs`
fact), a `Bytes`: an unknown size or run count is counted as unknown, never added as 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable

from .records import Bytes, CommNode, Group, ParallelFacts, per_step
from .scope import Scope
from .traffic import FORMULAS, node_wire_bytes


@dataclass
class Tally:
    """Nodes counted, how many times they run in a step (the `runs` fact; None: some unknown) and
    their bytes over the step (each node's size times its runs)."""

    count: int = 0
    bytes: Bytes = field(default_factory=Bytes)
    runs: int | None = 0

    def add(self, c: CommNode) -> None:
        self.count += 1
        self.runs = None if self.runs is None or c.runs is None else self.runs + c.runs
        self.bytes += c.step_bytes

    def merge(self, other: Tally) -> None:
        self.count += other.count
        self.runs = None if self.runs is None or other.runs is None else self.runs + other.runs
        self.bytes += other.bytes

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "runs": self.runs, "bytes": self.bytes.total, "bytes_unknown": self.bytes.unknown}


def _sorted(rows: dict[str, Any]) -> dict[str, Any]:
    return dict(sorted(rows.items()))


@dataclass
class CommTotals:
    """Counts and bytes per category, per operator, per `category/phase`, and overall."""

    by_category: dict[str, Tally] = field(default_factory=dict)
    by_op: dict[str, Tally] = field(default_factory=dict)
    by_category_phase: dict[str, Tally] = field(default_factory=dict)
    total: Tally = field(default_factory=Tally)

    def as_dict(self) -> dict[str, Any]:
        return {"by_category": {k: v.as_dict() for k, v in self.by_category.items()},
                "by_op": {k: v.as_dict() for k, v in self.by_op.items()},
                "by_category_phase": {k: v.as_dict() for k, v in self.by_category_phase.items()},
                "total": self.total.as_dict()}


def comm_totals(comm: Iterable[CommNode]) -> CommTotals:
    out = CommTotals()
    for c in comm:
        out.by_category.setdefault(c.category, Tally()).add(c)
        out.by_op.setdefault(c.op, Tally()).add(c)
        out.by_category_phase.setdefault(f"{c.category}/{c.phase}", Tally()).add(c)
        out.total.add(c)
    out.by_category, out.by_op = _sorted(out.by_category), _sorted(out.by_op)
    out.by_category_phase = _sorted(out.by_category_phase)
    return out


@dataclass
class SendReceive:
    """Send or Receive nodes of one direction, phase, peer (global rank, §7), size and segment."""

    op: str
    phase: str
    peer_stage: int | None
    peer_rank: int | None
    bytes_each: int | None
    micros: list[int] = field(default_factory=list)
    count: int = 0
    segment: int | None = None
    chunk: int | None = None  # `pr.chunk` as printed (§7)

    def as_dict(self) -> dict[str, Any]:
        return {"op": self.op, "phase": self.phase, "peer_stage": self.peer_stage, "peer_rank": self.peer_rank,
                "bytes_each": self.bytes_each, "micros": self.micros, "count": self.count, "segment": self.segment,
                "chunk": self.chunk}


def send_receive(comm: Iterable[CommNode]) -> list[SendReceive]:
    """Send/Receive nodes grouped by direction, phase, peer, size and pipeline segment, with their micro batches."""
    pairs: dict[tuple, SendReceive] = {}
    for c in comm:
        if c.direction is None:
            continue
        key = (c.op, c.phase, c.peer_stage, c.peer_rank, c.bytes, c.segment, c.chunk)
        e = pairs.get(key)
        if e is None:
            e = pairs[key] = SendReceive(c.op, c.phase, c.peer_stage, c.peer_rank, c.bytes, segment=c.segment,
                                         chunk=c.chunk)
        e.count += 1
        if c.micro is not None:
            e.micros.append(c.micro)
    for e in pairs.values():
        e.micros.sort()
    return sorted(pairs.values(), key=lambda e: (e.phase, e.op, str(e.peer_stage), str(e.segment)))


@dataclass
class GradientAggregation:
    """Backward gradient-aggregation and optimizer-parallel nodes of one parameter."""

    parameter: str
    ops: list[str] = field(default_factory=list)
    groups: list[str | None] = field(default_factory=list)
    tally: Tally = field(default_factory=Tally)

    def as_dict(self) -> dict[str, Any]:
        return {"parameter": self.parameter, "ops": self.ops, "groups": self.groups, **self.tally.as_dict()}


def gradient_aggregation(comm: Iterable[CommNode]) -> list[GradientAggregation]:
    grads: dict[str, GradientAggregation] = {}
    for c in comm:
        if c.category not in ("gradient-aggregation", "optimizer-parallel") or c.phase != "backward":
            continue
        name = c.parameter or c.node
        e = grads.setdefault(name, GradientAggregation(name))
        e.tally.add(c)
        if c.op not in e.ops:
            e.ops.append(c.op)
        if c.group not in e.groups:
            e.groups.append(c.group)
    return sorted(grads.values(), key=lambda e: e.parameter)


@dataclass
class ScopeTotal:
    """Communication of one cell (the scope a node is attributed to, without its own operator)."""

    scope: str
    tally: Tally = field(default_factory=Tally)

    def as_dict(self) -> dict[str, Any]:
        return {"scope": self.scope, **self.tally.as_dict()}


def scope_totals(comm: Iterable[CommNode]) -> list[ScopeTotal]:
    """Every cell that communicates, the most bytes first."""
    scopes: dict[str, ScopeTotal] = {}
    for c in comm:
        cell = Scope(c.cell_scope or c.scope).cell
        scopes.setdefault(cell, ScopeTotal(cell)).tally.add(c)
    return sorted(scopes.values(), key=lambda e: (-e.tally.bytes.total, -e.tally.count, e.scope))


@dataclass
class TrafficRow:
    """Nodes, their tensor bytes (§5) and estimated per-rank wire bytes (§14)."""

    count: int = 0
    bytes: Bytes = field(default_factory=Bytes)
    wire: Bytes = field(default_factory=Bytes)

    def as_dict(self) -> dict[str, Any]:
        return {"count": self.count, "bytes": self.bytes.total, "bytes_unknown": self.bytes.unknown,
                "wire_bytes": self.wire.total, "wire_unknown": self.wire.unknown}


@dataclass
class Traffic:
    """Tensor and wire bytes per operator, per category and overall, with the formulas used."""

    by_op: dict[str, TrafficRow] = field(default_factory=dict)
    by_category: dict[str, TrafficRow] = field(default_factory=dict)
    total: TrafficRow = field(default_factory=TrafficRow)

    def as_dict(self) -> dict[str, Any]:
        return {"formulas": dict(FORMULAS), "by_op": {k: v.as_dict() for k, v in self.by_op.items()},
                "by_category": {k: v.as_dict() for k, v in self.by_category.items()}, "total": self.total.as_dict()}


def traffic(comm: Iterable[CommNode], groups: dict[str, Group]) -> Traffic:
    out = Traffic()
    for c in comm:
        wire = per_step(node_wire_bytes(c, groups), c.runs)
        for e in (out.by_op.setdefault(c.op, TrafficRow()), out.by_category.setdefault(c.category, TrafficRow()),
                  out.total):
            e.count += 1
            e.bytes += c.step_bytes
            e.wire += wire
    out.by_op, out.by_category = _sorted(out.by_op), _sorted(out.by_category)
    return out


@dataclass
class StageLink:
    """Pipeline Sends from one stage to another over a folder (each transfer counted at its sender)."""

    from_stage: int
    to_stage: int
    tally: Tally = field(default_factory=Tally)

    def as_dict(self) -> dict[str, Any]:
        return {"from_stage": self.from_stage, "to_stage": self.to_stage, **self.tally.as_dict()}


def stage_matrix(ranks: Iterable[ParallelFacts]) -> list[StageLink]:
    """One row per (from stage, to stage) with the Send nodes of every rank of the sending stage."""
    cells: dict[tuple[int, int], StageLink] = {}
    for facts in ranks:
        own = facts.stage
        for c in facts.comm:
            if c.op != "Send" or own is None or c.peer_stage is None:
                continue
            cells.setdefault((own, c.peer_stage), StageLink(own, c.peer_stage)).tally.add(c)
    return [cells[k] for k in sorted(cells)]
