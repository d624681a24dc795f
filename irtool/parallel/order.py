"""The execution order of one stage (docs/cost.md §4): its units of work placed by their compute
nodes and the dependencies between them, the schedule that order amounts to, and the micro batches
in flight. Decided here, once, for every command (`summarize --cost`, memory, balance and advice,
`render --pipeline`, the view's pipeline graph).

A unit is the forward or the backward of one micro batch on one chunk (an interleaved pipeline's
model chunk, a folded one's segment): the compute and call nodes whose `phase`, `micro` and `chunk`
facts say so (a lazy-inline stage's units are its `call` nodes). Recompute runs inside the backward
of its micro batch (its nodes interleave with the backward's, layer by layer), so it is part of
that unit. Unit A runs before unit B when a path of data, Depend or UpdateState edges (what
`irtool.ir.build_graph` calls data and control edges) leads from a node of A to a node of B. The
order is fixed when those paths order every unit; it is never taken from where nodes or
Send/Receive are printed: on stage 0 of a 1F1B pipeline MindSpore prints the Receive of B0 before
the Send of F3, yet that Receive depends on the last Add of F3 (pipeline_4stage_8p rank_0 validate
lines 1729, 1766). A kernel graph (`kernel` fact) is the exception: the backend prints its kernels in the
order the device runs them, which orders the units the dependencies leave unordered (by their first kernels).
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from functools import reduce
from graphlib import TopologicalSorter
from operator import or_
from typing import TYPE_CHECKING, Any, Literal, cast

from .records import CommNode

if TYPE_CHECKING:
    from ..ir import Node
    from .table import NodeFacts

UnitKey = tuple[str, "int | None", "int | None"]  # (F or B, micro batch, chunk; None with one chunk)


class Segment(int):
    """A folded pipeline's segment where a unit's chunk is one (`units`, the `folded` pass): the same number, equal
    and hashed as it, said as a segment wherever a unit is labelled (`part_suffix`)."""

    __slots__ = ()


def part_suffix(chunk: int | None) -> str:
    """`.c1` on an interleaved stage's chunk 1, `.s1` on a folded stage's segment 1 (`Segment`), '' with one."""
    return "" if chunk is None else f".{'s' if isinstance(chunk, Segment) else 'c'}{chunk}"


def unit_label(key: UnitKey) -> str:
    """`F3`; `B0.c1` on chunk 1 of an interleaved stage, `B0.s1` on segment 1 of a folded one."""
    phase, micro, chunk = key
    return f"{phase}{'—' if micro is None else micro}" + part_suffix(chunk)


def hop_units(t: NodeFacts) -> dict[str, UnitKey | None]:
    """Each pipeline Send/Receive of the dump (its node's uid) -> the unit of work it belongs to: its node's `unit`
    fact (None: in none), which placing the hops, timing them and the viewer read."""
    return {c.node: t("unit", n) for n, c in t.column("comm").items() if c.category == "pipeline" and c.direction}


def hop_key(c: CommNode) -> tuple[Any, ...]:
    """What names one pipeline Send/Receive in every pass of one compile: a kernel graph's record of it and the
    front-end pass's node (`view` opens the front-end node of a Send/Receive ordered in the kernel graph)."""
    return c.op, c.phase, c.micro, c.segment, c.sr_tag, c.peer_rank


@dataclass(frozen=True)
class Unit:
    """The forward (`F`) or backward (`B`, recompute included) of one micro batch on one chunk."""

    phase: Literal["F", "B"]
    micro: int
    chunk: int | None  # None: the stage runs one chunk
    nodes: int  # compute and call nodes placing it
    line: int  # where its first node is printed (to locate it; never to order it)

    @property
    def key(self) -> UnitKey:
        return self.phase, self.micro, self.chunk

    @property
    def label(self) -> str:
        return unit_label(self.key)

    def as_dict(self) -> dict[str, Any]:
        return {"unit": self.label, "phase": "forward" if self.phase == "F" else "backward", "micro": self.micro,
                "chunk": self.chunk, "nodes": self.nodes, "line": self.line}


@dataclass
class StageOrder:
    """One stage's units of work in execution order (`fixed`), or, when the dependencies do not order
    them all, in the order forward before backward, chunk, micro batch, with `why`."""

    stage: int | None
    units: list[Unit]
    fixed: bool
    schedule: str  # the schedule's name, or why the order is not known
    warmup: int | None  # forward units before the first backward one
    chunks: list[int]  # the chunks (segments) this stage runs, [] with one
    hops: list[CommNode] = field(default_factory=list)  # pipeline Send/Receive, placed by their unit
    hop_units: dict[str, UnitKey | None] = field(default_factory=dict)  # each hop's unit (`hop_units`), by node
    why: str = ""  # the first two units the dependencies leave unordered, when not fixed
    kernel_graph: str = ""  # the kernel graph beside the dump it came from, when a folder read it there
    launched: bool = False  # read in a kernel graph, which prints its kernels in the order the device launches them

    @property
    def work(self) -> list[str]:
        """`F0 F1 B0 ...` (`F0.c1` on chunk 1)."""
        return [u.label for u in self.units]

    @property
    def in_flight_units(self) -> int | None:
        """The most units begun forward and not yet finished backward at once (None: order not fixed,
        or no backward: nothing is kept for one)."""
        if not self.fixed or not any(u.phase == "B" for u in self.units):
            return None
        held = peak = 0
        for u in self.units:
            held += 1 if u.phase == "F" else -1
            peak = max(peak, held)
        return peak

    @property
    def in_flight(self) -> int | float | None:
        """The micro batches' worth of activations held at the most: the units begun and not finished
        backward at once, in this order; a stage of C chunks holds a C-th of a micro batch's activations per
        unit (a multiplier, said as whole micro batches per chunk: `in_flight_by_chunk`)."""
        units = self.in_flight_units
        if units is None:
            return None
        n = max(1, len(self.chunks))
        return units // n if units % n == 0 else units / n

    @property
    def in_flight_by_chunk(self) -> list[tuple[int, int]] | None:
        """With chunks, (chunk, micro batches begun on it and not finished backward) when the stage holds the
        most units (`in_flight_units`); None with one chunk or when `in_flight` is None."""
        if not self.chunks or self.in_flight_units is None:
            return None
        held = dict.fromkeys(self.chunks, 0)
        best, peak = dict(held), 0
        for u in self.units:
            held[u.chunk or 0] += 1 if u.phase == "F" else -1
            if sum(held.values()) > peak:
                best, peak = dict(held), sum(held.values())
        return sorted(best.items())

    def sequence(self) -> list[Unit | CommNode]:
        """The units and the pipeline Send/Receive as one sequence. Read in a kernel graph (`launched`), as the
        device launches them: by where each is printed (a unit where its first kernel is: on stage 0 of the
        dry-run Llama the device launches F1's forward before the Send of F0). Else each in its own order: a hop
        after every unit before its own unit, a Send after its own unit too (it sends what the unit made), a
        Receive as late as that lets it (before the unit that reads it); the units no hop waits for at the end."""
        if self.launched:
            return sorted([*self.units, *self.hops], key=lambda x: x.line)
        index = {u.key: i for i, u in enumerate(self.units)}
        out: list[Unit | CommNode] = []
        done = 0
        for c in self.hops:
            unit = self.hop_units.get(c.node)
            i = None if unit is None else index.get(unit)
            if i is not None and done < i + (c.direction == "send"):
                out += self.units[done:i + (c.direction == "send")]
                done = i + (c.direction == "send")
            out.append(c)
        return out + self.units[done:]

    def as_dict(self) -> dict[str, Any]:
        by_chunk = self.in_flight_by_chunk
        return {"stage": self.stage, "fixed": self.fixed, "in_flight": self.in_flight,
                "in_flight_by_chunk": None if by_chunk is None else {str(c): n for c, n in by_chunk},
                "schedule": self.schedule,
                "warmup": self.warmup, "order": self.work, "chunks": self.chunks, "why": self.why or None,
                "kernel_graph": self.kernel_graph or None,
                "units": [u.as_dict() for u in self.units],
                "events": [{"op": c.op, "phase": c.phase, "micro": c.micro, "chunk": c.segment, "sr_tag": c.sr_tag,
                            "peer_rank": c.peer_rank, "peer_stage": c.peer_stage, "node": c.node, "line": c.line}
                           for c in self.hops]}


def stage_order(t: NodeFacts) -> StageOrder:
    """The execution order of the stage whose dump `t` is the fact table of (the `order` fact)."""
    return t.get("order")


def unit_nodes(t: NodeFacts) -> dict[UnitKey, list[Node]]:
    """The compute and call nodes of each unit of work (what places it; the viewer shows what a unit holds)."""
    units: dict[UnitKey, list[Node]] = {}
    for n, key in t.column("unit").items():
        if t("kind", n) in _PLACING:
            units.setdefault(key, []).append(n)
    return units


_PLACING = ("compute", "call")  # the kinds of node whose unit places it (`unit_nodes`)


def _work(t: NodeFacts) -> dict[tuple[str, int], set[int | None]]:
    """(F or B, micro batch) -> the chunks of its compute and call nodes (None: a node printing none)."""
    out: dict[tuple[str, int], set[int | None]] = {}
    for n, micro in t.column("micro").items():
        if t("kind", n) in _PLACING and (phase := t("phase", n)) != "optimizer":
            out.setdefault(("F" if phase == "forward" else "B", micro), set()).add(t("chunk", n))
    return out


def stage_chunks(t: NodeFacts) -> list[int]:
    """The `stage_chunks` pass: the chunks (an interleaved pipeline's, a folded one's segments) the stage's work
    runs, by the `chunk` of its compute and call nodes of a micro batch; [] with one (the job's `chunks`, the
    order's and every unit's read this)."""
    if len(set(t.column("chunk").values())) < 2:  # one chunk at most: not every node's phase asked
        return []
    chunks = sorted({c for cs in _work(t).values() for c in cs if c is not None})
    return chunks if len(chunks) > 1 else []


def stage_folded(t: NodeFacts) -> bool:
    """The `folded` pass: whether the stage's chunks are a folded pipeline's segments (its pipeline Send/Receive print
    `segment` and no `chunk`: `pipeline_segments`), not an interleaved pipeline's model chunks (the job's `folded`, the
    order's schedule, read this)."""
    hops = [c for c in t.column("comm").values() if c.category == "pipeline" and c.segment is not None]
    return any(c.chunk is None for c in hops)


def units(t: NodeFacts) -> dict[Node, UnitKey]:
    """The `unit` pass: the unit of work each node runs in (`UnitKey`: F or B, micro batch, chunk) — the forward
    or the backward (recompute included) of its micro batch, on its chunk when the stage runs several; nodes of
    no micro batch and the optimizer's have none. A node printing no chunk on a stage of several joins its micro
    batch's unit when that has one chunk; with several (the loss of an interleaved stage, outside its chunks'
    calls) it is in none. Every command reads this: the order places units by their compute and call nodes
    (`unit_nodes`), the lifetime walk and the timing put each node's bytes and seconds in its unit."""
    chunks = t.get("stage_chunks")
    own = {k: {c for c in cs if c is not None} for k, cs in _work(t).items()} if chunks else {}
    part = Segment if chunks and t.get("folded") else int  # a folded stage's chunks are its segments
    out: dict[Node, UnitKey] = {}
    for n, micro in t.column("micro").items():
        phase = t("phase", n)
        if phase == "optimizer":
            continue
        letter = "F" if phase == "forward" else "B"
        if not chunks:
            out[n] = (letter, micro, None)
            continue
        c = t("chunk", n)
        if c is None:
            mine = own.get((letter, micro), set())
            if len(mine) != 1:
                continue
            c = next(iter(mine))
        out[n] = (letter, micro, part(c))
    return out


def _reach(t: NodeFacts, units: dict[UnitKey, list[Node]]) -> dict[UnitKey, int]:
    """Per unit, the bit set of the units with a path to one of its nodes (itself included): one
    pass in topological order over the graphs holding units, each node carrying the units that reach
    it. The edges are every node a node reads in its subgraph (`node_refs`: data, and the ordering
    inputs of Depend and UpdateState, and a computed callee: `irtool.ir.build_graph`'s data and control
    edges, without parsing every argument); a path never leaves its subgraph."""
    keys = list(units)
    bit = {n: 1 << i for i, k in enumerate(keys) for n in units[k]}
    by_key = t.get("by_key")
    mask: dict[Node, int] = {}
    for graph in {n.graph for n in bit}:
        local = by_key[graph]
        preds = {n: [local[r] for r in ((n.callee, *n.node_refs) if n.callee[0] == "%" else n.node_refs) if r in local]
                 for n in local.values()}
        for v in TopologicalSorter(preds).static_order():
            m = bit.get(v, 0)
            for u in preds[v]:
                m |= mask[u]
            mask[v] = m
    return {k: reduce(or_, (mask[n] for n in units[k]), 0) for k in keys}


def build_order(t: NodeFacts) -> StageOrder:
    """The `order` pass (see the module docstring)."""
    info = t.get("stage_info")
    found, chunks, of_hop = unit_nodes(t), t.get("stage_chunks"), hop_units(t)
    hop_nodes = {n: c for n, c in t.column("comm").items() if c.node in of_hop}
    launched = bool(t.get("kernel"))
    hops = _after_what_they_read(t, hop_nodes)
    units = {k: Unit(cast(Literal["F", "B"], k[0]), k[1], k[2], len(ns), min(n.line for n in ns)) for k, ns in found.items()}
    canonical = sorted(units, key=lambda k: (k[0] != "F", k[2] or 0, k[1]))
    if not units:
        return StageOrder(info.stage, [], False, "no forward or backward work carries a micro batch in this pass: "
                          "no pipeline order", None, chunks, _place(hops, [], of_hop), of_hop, launched=launched)
    reach = _reach(t, found)
    index = {k: i for i, k in enumerate(found)}
    before = {k: {j for j in found if j != k and reach[k] >> index[j] & 1} for k in found}
    ranked = sorted(found, key=lambda k: (len(before[k]), canonical.index(k)))
    why = ""
    for a, b in zip(ranked, ranked[1:]):
        if a not in before[b]:
            why = f"no data, Depend or UpdateState path orders {units[a].label} and {units[b].label}"
        elif b in before[a]:
            why = f"{units[a].label} and {units[b].label} each depend on the other"
        if why:
            break
    if why and launched:  # a kernel graph prints its kernels in the order the device runs them
        ranked, why = sorted(found, key=lambda k: units[k].line), ""
    order = [units[k] for k in (canonical if why else ranked)]
    placed = _place(hops, [] if why else [u.key for u in order], of_hop)
    if why:
        return StageOrder(info.stage, order, False, f"this pass does not fix the order ({why})", None, chunks,
                          placed, of_hop, why, launched=launched)
    schedule, warmup = classify([u.phase for u in order], chunks, "segment" if t.get("folded") else "chunk")
    return StageOrder(info.stage, order, True, schedule, warmup, chunks, placed, of_hop, launched=launched)


def _after_what_they_read(t: NodeFacts, hops: dict[Node, CommNode]) -> list[tuple[CommNode, int]]:
    """Each pipeline Send/Receive with the bit set of the others it depends on (a path of data, Depend or
    UpdateState edges: a 1F1B stage's forward Send reads a `Depend` on the backward Receive of an earlier
    micro batch, pipeline_unequal_8p rank 2 validate lines 671-680)."""
    nodes = list(hops)
    reach = _reach(t, {i: [n] for i, n in enumerate(nodes)})
    return [(hops[n], reach[i] & ~(1 << i)) for i, n in enumerate(nodes)]


def _place(hops: list[tuple[CommNode, int]], order: list[UnitKey], units: dict[str, UnitKey | None]) -> list[CommNode]:
    """The pipeline Send/Receive in the order of their units (`units`: each hop's; a unit's Receive before its Send:
    it receives its input, computes, sends its output), never before one they depend on; hops of no placed unit
    after them, forward before backward, by chunk and micro batch (those of no unit by their record's)."""
    at: dict[tuple, int] = {k: i for i, k in enumerate(order)}

    def key(c: CommNode) -> tuple:
        unit = units.get(c.node)
        if unit is None:
            return len(at), c.phase == "backward", c.segment or 0, -1 if c.micro is None else c.micro, c.op != "Receive"
        return at.get(unit, len(at)), unit[0] != "F", unit[2] or 0, unit[1], c.op != "Receive"

    # Kahn's algorithm over the dependencies, the unit order choosing among the hops that are free to go
    ranked = sorted(range(len(hops)), key=lambda i: key(hops[i][0]))
    waiting = {i: bin(deps).count("1") for i, (_, deps) in enumerate(hops)}
    users: list[list[int]] = [[] for _ in hops]
    for i, (_, deps) in enumerate(hops):
        while deps:
            low = deps & -deps
            users[low.bit_length() - 1].append(i)
            deps ^= low
    rank = {i: r for r, i in enumerate(ranked)}
    ready = [(rank[i], i) for i in ranked if waiting[i] == 0]
    heapq.heapify(ready)
    out: list[CommNode] = []
    while ready:
        _, i = heapq.heappop(ready)
        out.append(hops[i][0])
        for j in users[i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, (rank[j], j))
    return out if len(out) == len(hops) else [hops[i][0] for i in ranked]  # a cycle: a malformed graph


def classify(phases: list[str], chunks: list[int], part: str = "chunk") -> tuple[str, int | None]:
    """Name the schedule of units in execution order (`F`/`B` each): forward only (inference), GPipe
    (every forward before any backward), 1F1B (k forward, then backward and forward alternating, then
    the remaining backward), interleaved (more than one chunk) or other; and the warm-up (forward
    units before the first backward). `part`: what the chunks are (`segment` of a folded pipeline)."""
    n_f = phases.count("F")
    chunked = f", {len(chunks)} {part}s" if chunks else ""
    if n_f == len(phases):
        return f"forward only (no backward: inference){chunked}", None
    warmup = phases.index("B")
    if warmup == n_f:
        return (f"every forward before any backward{chunked}: GPipe, or 1F1B whose warm-up covers all {n_f} "
                "forward"), warmup
    steady = n_f - warmup
    rest = phases[warmup:]
    if rest == ["B", "F"] * steady + ["B"] * (len(rest) - 2 * steady):
        name = "interleaved 1F1B" if chunks else "1F1B"
        return f"{name}{chunked}: {warmup} forward warm-up, then one backward per forward", warmup
    return f"other order{chunked} (neither GPipe nor 1F1B)", warmup
