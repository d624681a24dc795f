"""Time from a hardware profile (docs/timing.md §2-§3): each operator's and collective's time on one rank,
each unit of work's (forward, backward with its recompute) with the communication it cannot hide, and the
step played out over the stages' unit orders and their Send -> Receive dependencies.

Operator: roofline, max(FLOPs / (rate x efficiency(FLOPs)), bytes / (HBM bandwidth x efficiency)), the
matrix unit's rate for matrix families (MatMul, grouped MatMul, attention, convolution), else the vector
unit's, by the dtype of its first input. Collective: latency x algorithm steps + ring wire bytes x algorithm
factor / (bandwidth x efficiency) of the tier its group spans (intra-node when every member rank is on one
node of `devices_per_node`). Within a unit, operators run in dependency order on their stream (the kernel
graph's `stream_id`; else compute on one stream, communication on another): a collective hides under the
compute that does not depend on it, and what it does not hide is its exposed part (times the profile's
`overlap` share). Work printed once for every micro batch (a lazy-inline cell's body, run per call) is
spread evenly over the units of its phase; the optimizer and the gradient aggregation after the last
micro batch run after the stage's last unit (`tail`).
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterable

from .cost import ATTENTION, CONVS, GROUPED_MATMULS, MATMULS, CostFacts, bytes_moved
from .hardware import Profile, Tier
from .order import StageOrder, UnitKey
from .pairs import pair_ranks
from .records import Group
from .traffic import collective_of, group_size, wire_bytes

if TYPE_CHECKING:
    from ..ir import Node
    from .table import NodeFacts

MATRIX = MATMULS | GROUPED_MATMULS | CONVS | ATTENTION
# operators of no arithmetic that still run a kernel moving their tensors through HBM
MOVES = frozenset({"Transpose", "Cast", "Concat", "Gather", "GatherV2", "GatherD", "StridedSlice", "Slice", "Split",
                   "SplitV", "Tile", "BroadcastTo", "StridedSliceGrad", "Pad", "ReverseV2", "TensorMove",
                   "SplitWithSize", "Contiguous", "InplaceCopy"})


def comm_seconds(p: Profile, op: str, nbytes: int | None, n: int | None, tier: Tier) -> float | None:
    """Seconds of one collective or Send/Receive of `nbytes` in a group of `n` on `tier`; None when unknown."""
    wire = wire_bytes(op, nbytes, n)
    if wire is None:
        return None
    kind = collective_of(op)
    steps = 1 if kind == "Send" else (2 if kind == "AllReduce" else 1) * max(0, (n or 1) - 1)
    return steps * tier.latency + wire * p.algorithm[kind] / (tier.bandwidth * tier.efficiency)


def op_seconds(p: Profile, op: str, flops: int | None, dtype: str | None, nbytes: int | None) -> float:
    """Roofline seconds of one operator (0 for what is unknown: counted apart by the caller)."""
    matrix = op in MATRIX
    compute = flops / (p.rate(matrix, dtype) * p.efficiency(matrix, flops)) if flops else 0.0
    memory = nbytes / (p.hbm_bandwidth * p.hbm_efficiency) if nbytes else 0.0
    return max(compute, memory)


@dataclass
class UnitTime:
    """Seconds of one unit of work (or of the tail) on its rank."""

    forward: float = 0.0
    backward: float = 0.0
    recompute: float = 0.0
    optimizer: float = 0.0  # the tail's
    comm: float = 0.0  # every collective of the unit
    exposed: float = 0.0  # of it, what compute does not hide
    hideable: float = 0.0  # of it, what the dependencies let run under compute (hidden at the profile's overlap)

    @property
    def compute(self) -> float:
        return self.forward + self.backward + self.recompute + self.optimizer

    @property
    def seconds(self) -> float:
        return self.compute + self.exposed

    def add(self, o: UnitTime, k: float = 1.0) -> None:
        self.forward += o.forward * k
        self.backward += o.backward * k
        self.recompute += o.recompute * k
        self.optimizer += o.optimizer * k
        self.comm += o.comm * k
        self.exposed += o.exposed * k
        self.hideable += o.hideable * k


@dataclass(frozen=True)
class TimedHop:
    """A pipeline Send/Receive as the step simulation reads it (pairs like `pairs.P2P`)."""

    direction: str | None
    peer_rank: int | None
    sr_tag: int | None
    unit: UnitKey | None  # its node's `unit` fact (None: in no unit of work)
    seconds: float  # the transfer


@dataclass(frozen=True)
class OpWork:
    """One timed operator or collective of a layer, as its time is worked out (a plan re-times it at another size)."""

    phase: str
    op: str
    flops: int  # per run (a collective: 0)
    dtype: str | None
    moved: int | None  # bytes moved per run (a collective: its bytes)
    runs: int
    group: int | None = None  # a collective's group size
    tier: Tier | None = None  # ... and the link tier it spans (None: an operator)
    category: str | None = None  # ... and its category (docs/parallel.md §2)


@dataclass
class StageTiming:
    """One rank's times under a profile: per unit in execution order, the tail, the pipeline hops."""

    stage: int | None
    rank: int | None
    profile: str
    order: list[UnitKey]
    fixed: bool
    units: dict[UnitKey, UnitTime]
    tail: UnitTime
    hops: list[TimedHop]
    model_flops: int  # forward + backward FLOPs (MFU counts no recompute)
    peak: float  # the matrix rate of the dtype most matrix FLOPs run in
    unknown_ops: int = 0  # operators of unknown cost: not timed
    unknown_comm: int = 0  # collectives of unknown size or group: not timed
    notes: list[str] = field(default_factory=list)
    layer_seconds: dict[int | None, float] = field(default_factory=dict)  # compute seconds per layer (None: no layer)
    # its collectives' seconds at the units' exposed share (what moves with a layer to another stage)
    layer_exposed: dict[int | None, float] = field(default_factory=dict)
    layer_recompute: dict[int | None, float] = field(default_factory=dict)  # of `layer_seconds`, its recompute's
    layer_forward: dict[int | None, float] = field(default_factory=dict)  # of `layer_seconds`, its forward's
    layer_work: dict[int | None, list[OpWork]] = field(default_factory=dict)  # what `layer_seconds` times, by layer

    def layer_time(self, layer: int | None) -> float:
        return self.layer_seconds.get(layer, 0.0) + self.layer_exposed.get(layer, 0.0)

    def total(self) -> UnitTime:
        out = UnitTime()
        for u in self.units.values():
            out.add(u)
        out.add(self.tail)
        return out


def _bucket(t: NodeFacts, n: Node, phase: str | None, cols: tuple[dict, dict, dict], chunks: list[int],
            staged: bool) -> tuple | None:
    """The unit a node's time goes to: its unit of work (the `unit` fact), a spread bucket (printed once for every
    micro batch, or on no one chunk of its micro batch's several: `("each", F|B, chunk)`), or the tail
    (`("tail",)`). A step of no units (`staged` False, no pipeline: no node carries a micro batch) is one tail, on
    one clock: its gradient AllReduce hides under the backward. `cols`: the `unit`, `micro` and `comm` columns."""
    if phase == "optimizer" or not staged:
        return ("tail",)
    unit_of, micro_of, comm_of = cols
    unit = unit_of.get(n)
    if unit is not None:
        return unit
    letter = "F" if phase == "forward" else "B"
    if micro_of.get(n) is None:
        c = comm_of.get(n)
        if c is not None and c.category == "gradient-aggregation":
            return ("tail",)
        return ("each", letter, t("chunk", n) if chunks else None)
    return ("each", letter, None)


def stage_timing(t: NodeFacts, cost: CostFacts, p: Profile, groups: dict[str, Group],
                 order: StageOrder) -> StageTiming:
    """The times of one rank (`cost`: `compute_cost(t, keep_ops=True)`, each operator's FLOPs)."""
    dump, kind = t.dump, t.get("file_kind")
    runs = t.get("graph_runs")
    flops = {o.node: o for o in cost.ops}
    chunks, staged = order.chunks, bool(order.units)
    rank = t.rank
    buckets: dict[tuple, UnitTime] = {}
    counts = {"ops": 0, "comm": 0}
    matrix_by_dtype: dict[str, int] = {}
    by_key = t.get("by_key")
    hops: list[TimedHop] = []
    layer_seconds: dict[int | None, float] = {}
    layer_phase: dict[str, dict[int | None, float]] = {"forward": {}, "recompute": {}}
    layer_comm: dict[int | None, float] = {}  # collective seconds by layer (moved with it, at the exposed share)
    layer_work: dict[int | None, list[OpWork]] = {}
    untimed: list[str] = []
    cols = (t.column("unit"), t.column("micro"), t.column("comm")) if staged else ({}, {}, {})
    layer_of, phase_of, kind_of = t.column("layer"), t.column("phase"), t.column("kind")
    seconds: dict[tuple, float] = {}  # an operator's seconds by what they are worked out from (layers repeat)
    for graph in dump.subgraphs:
        local = by_key[graph.name]
        preds = {n: [local[r] for r in n.node_refs if r in local] for n in local.values()}
        k_runs = runs[graph.name].count
        if k_runs is None:  # a loop body, a graph nothing calls: its per-step time is not known
            n_ops = sum(1 for n in local.values() if kind_of[n] == "compute")
            n_comm = sum(1 for n in local.values() if kind_of[n] == "communication")
            counts["ops"] += n_ops
            counts["comm"] += n_comm
            if n_ops or n_comm:
                untimed.append(f"@{graph.name} runs an unknown number of times ({runs[graph.name].how}): its "
                              f"{n_ops + n_comm} operators not timed")
            continue
        finish: dict[Node, tuple[tuple | None, float]] = {}  # node -> (its bucket, when it ends on that clock)
        cursor: dict[tuple, float] = {}  # (bucket, stream) -> when the stream is free
        here: dict[tuple, UnitTime] = {}
        span: dict[tuple, float] = {}
        ordered = _topological(preds)
        if len(ordered) < len(preds):
            untimed.append(f"{len(preds) - len(ordered)} nodes of {graph.name} read each other in a cycle: not timed")
        for n in ordered:
            ph = phase_of[n]
            b = _bucket(t, n, ph, cols, chunks, staged)
            ready = 0.0  # when what it reads on the same clock has ended
            for x in preds[n]:
                tag, f = finish[x]
                if tag == b and f > ready:
                    ready = f
            nk = kind_of[n]
            if nk != "compute" and nk != "communication":
                finish[n] = (b, ready)
                continue
            dur, is_comm, work = _duration(t, n, nk, ph, p, groups, rank, flops, k_runs, kind, hops,
                                           matrix_by_dtype, counts, seconds)
            if b is None or dur == 0.0:
                finish[n] = (b, ready)
                continue
            sid = t("stream", n)
            stream = (b, sid if sid is not None else ("comm" if is_comm else "compute"))
            end = max(ready, cursor.get(stream, 0.0)) + dur
            finish[n] = (b, end)
            cursor[stream] = end
            span[b] = max(span.get(b, 0.0), end)
            ut = here.setdefault(b, UnitTime())
            if work is not None and b[0] != "tail":
                layer_work.setdefault(layer_of.get(n), []).append(work)
            if is_comm:
                ut.comm += dur
                if b[0] != "tail":
                    layer = layer_of.get(n)
                    layer_comm[layer] = layer_comm.get(layer, 0.0) + dur * k_runs
            else:
                if ph in ("forward", "backward", "recompute"):
                    layer = layer_of.get(n)
                    layer_seconds[layer] = layer_seconds.get(layer, 0.0) + dur * k_runs
                    if ph in layer_phase:
                        layer_phase[ph][layer] = layer_phase[ph].get(layer, 0.0) + dur * k_runs
                ph = ph if ph in ("forward", "backward", "recompute", "optimizer") else "backward"
                setattr(ut, ph, getattr(ut, ph) + dur)
        for b, ut in here.items():
            ut.exposed = max(0.0, span[b] - ut.compute) if ut.comm else 0.0
            buckets.setdefault((b, k_runs), UnitTime()).add(ut)
    out = _fold(t.get("stage_info").stage, rank, p, order, buckets, hops, cost, matrix_by_dtype,
                counts["ops"], counts["comm"])
    comm = sum(u.comm for u in out.units.values())
    share = sum(u.exposed for u in out.units.values()) / comm if comm else 0.0
    out.notes += untimed
    out.layer_seconds = layer_seconds
    out.layer_forward, out.layer_recompute = layer_phase["forward"], layer_phase["recompute"]
    out.layer_exposed = {layer: secs * share for layer, secs in layer_comm.items()}
    out.layer_work = layer_work
    return out


def _topological(preds: dict[Node, list[Node]]) -> list[Node]:
    """The nodes in an order where each comes after what it reads: each group of ready nodes in the order they
    became ready, the first group in the order the nodes are first named (graphlib's `TopologicalSorter` order,
    without its cycle search: nodes in a cycle, which a graph's references cannot form, are left out)."""
    named: dict[Node, None] = {}
    for n, ps in preds.items():
        named[n] = None
        named.update(dict.fromkeys(ps))
    users: dict[Node, list[Node]] = {n: [] for n in named}
    waiting = dict.fromkeys(named, 0)
    for n, ps in preds.items():
        waiting[n] += len(ps)
        for x in ps:
            users[x].append(n)
    ready = [n for n, w in waiting.items() if not w]
    out: list[Node] = []
    while ready:
        out += ready
        nxt = []
        for n in ready:
            for u in users[n]:
                waiting[u] -= 1
                if not waiting[u]:
                    nxt.append(u)
        ready = nxt
    return out


def _duration(t: NodeFacts, n: Node, nk: str, phase: str | None, p: Profile, groups: dict[str, Group],
              rank: int | None, flops: dict, k_runs: int, kind: str, hops: list[TimedHop],
              matrix_by_dtype: dict[str, int], counts: dict[str, int],
              seconds: dict[tuple, float]) -> tuple[float, bool, OpWork | None]:
    """Seconds of one run of a node of kind `nk`, whether it is a collective, and what was timed; a pipeline
    Send/Receive is kept as a hop (no time in its unit: the step simulation waits for it). What was timed is kept
    as run `k_runs` times in `phase`; `seconds`: operators' seconds already worked out."""
    if nk == "communication":
        c = t("comm", n)
        if c is None:
            return 0.0, False, None
        if c.category == "pipeline" and c.direction:
            peer = (rank, c.peer_rank) if rank is not None and c.peer_rank is not None else None
            secs = comm_seconds(p, c.op, c.bytes, 2, p.tier(peer, 2)[0])
            hops.append(TimedHop(c.direction, c.peer_rank, c.sr_tag, t("unit", n), secs or 0.0))
            return 0.0, False, None
        size = group_size(c, groups)
        members = c.group_ranks or (groups[c.group].ranks if c.group in groups else None)
        tier = p.tier(members, size)[0]
        secs = comm_seconds(p, c.op, c.bytes, size, tier)
        if secs is None:
            counts["comm"] += 1
        return secs or 0.0, True, OpWork(phase, c.op, 0, None, c.bytes, k_runs, size, tier, c.category) if secs else None
    o = flops.get(n.uid)
    if o is not None and o.flops is None:
        counts["ops"] += 1
        return 0.0, False, None
    if o is None and n.op not in MOVES:
        return 0.0, False, None
    per_run = (o.flops // k_runs) if o is not None and o.flops and k_runs else 0
    dtype = next((x.dtype for x in n.input_types if x is not None and x.dtype), None)
    moved = None if o is not None and n.op in MATRIX else bytes_moved(n, kind)
    if o is not None and n.op in MATRIX and o.flops and o.phase != "optimizer":
        matrix_by_dtype[dtype or ""] = matrix_by_dtype.get(dtype or "", 0) + o.flops
    key = (n.op, per_run, dtype, moved)
    secs = seconds.get(key)
    if secs is None:
        secs = seconds[key] = op_seconds(p, n.op, per_run, dtype, moved)
    return secs, False, OpWork(phase, n.op, per_run, dtype, moved, k_runs)


def work_seconds(p: Profile, w: OpWork, scale: float = 1.0, group: int | None = None) -> float:
    """Seconds over the step of `w` with its FLOPs and bytes times `scale` (a collective: in a group of `group`,
    else its own): what a plan re-times a layer by."""
    if w.tier is not None:
        secs = comm_seconds(p, w.op, round((w.moved or 0) * scale), group or w.group, w.tier)
        return (secs or 0.0) * w.runs
    moved = round(w.moved * scale) if w.moved else w.moved
    return op_seconds(p, w.op, round(w.flops * scale), w.dtype, moved) * w.runs


def _fold(stage: int | None, rank: int | None, p: Profile, order: StageOrder, buckets: dict[tuple, UnitTime],
          hops: list[TimedHop], cost: CostFacts, matrix_by_dtype: dict[str, int], unknown_ops: int,
          unknown_comm: int) -> StageTiming:
    """Buckets -> units: a unit's own, plus its share of the spread buckets (times the runs of their graph);
    the exposed share scaled by the profile's overlap."""
    keys = [u.key for u in order.units]
    units = {k: UnitTime() for k in keys}
    tail = UnitTime()
    notes = []
    for (b, k_runs), ut in buckets.items():
        ut.hideable = ut.comm - ut.exposed
        ut.exposed += ut.hideable * (1 - p.overlap)
        if b[0] == "tail":
            tail.add(ut, k_runs)
        elif b[0] == "each":
            targets = [k for k in keys if k[0] == b[1] and (b[2] is None or k[2] == b[2])]
            if not targets:
                tail.add(ut, k_runs)
                notes.append(f"{b[1]} work of no micro batch and no unit of its phase: timed after the last unit")
                continue
            for k in targets:
                units[k].add(ut, k_runs / len(targets))
        elif b in units:
            units[b].add(ut, k_runs)
        else:
            tail.add(ut, k_runs)
    dtype = max(matrix_by_dtype, key=lambda d: matrix_by_dtype[d], default="")
    return StageTiming(stage, rank, p.name, keys, order.fixed, units, tail, hops,
                       cost.flops["forward"] + cost.flops["backward"], p.rate(True, dtype or "BFloat16"),
                       unknown_ops, unknown_comm, notes)


# --- the step -------------------------------------------------------------------------------------------

@dataclass
class Box:
    """One unit as played out: on which stage, when."""

    stage: int
    unit: UnitKey
    start: float
    end: float
    time: UnitTime


@dataclass
class Arrow:
    """A Send -> Receive dependency as played out: from the end of the sending unit to the receiving one."""

    src: Box
    dst: Box
    seconds: float


@dataclass
class StageStep:
    stage: int
    rank: int | None
    busy: float  # compute (forward + backward + recompute, tail included)
    exposed: float  # communication not hidden
    idle: float  # bubble: step - busy - exposed
    model_flops: int
    peak: float

    def share(self, step: float) -> float:
        return self.idle / step if step else 0.0

    def mfu(self, step: float) -> float | None:
        """Its forward + backward FLOPs per second of the step over the peak."""
        return self.model_flops / self.peak / step if step else None


@dataclass
class Step:
    """The step played out: its time, each stage's busy / exposed / idle seconds, the boxes and arrows."""

    seconds: float
    stages: list[StageStep]
    boxes: list[Box]
    arrows: list[Arrow]
    profile: str
    cannot: str | None = None  # why the step could not be played out (then seconds is 0)
    unknown_ops: int = 0  # operators of unknown cost over the stages: not timed (the step is a lower bound)
    unknown_comm: int = 0  # collectives of unknown size or group: not timed

    @property
    def bubble(self) -> float:
        """The idle share of the stages' time (mean over stages)."""
        return sum(s.idle for s in self.stages) / (len(self.stages) * self.seconds) if self.seconds else 0.0

    @property
    def exposed_share(self) -> float:
        """The exposed communication's share of the stages' time (mean over stages)."""
        return sum(s.exposed for s in self.stages) / (len(self.stages) * self.seconds) if self.seconds else 0.0

    @property
    def mfu(self) -> float | None:
        """Model FLOPs (forward + backward) per second over the peak, over the stages' ranks."""
        if not self.seconds or not self.stages:
            return None
        return sum(s.model_flops / s.peak for s in self.stages) / (len(self.stages) * self.seconds)


def simulate(timings: Iterable[StageTiming], time_of: Callable[[int, UnitKey], float] | None = None,
             hop_time: Callable[[TimedHop], float] | None = None) -> Step:
    """Play the stages' units out in time: each unit starts when the previous unit of its stage has ended and
    every unit sending it a Receive has ended plus the transfer; the stage's tail follows its last unit.
    `time_of(stage, unit)` and `hop_time(hop)` replace the profile's times (a balanced case, a test).
    Linear in units and hops (one pass in dependency order)."""
    ts = sorted(timings, key=lambda s: s.stage or 0)
    if not ts:
        return Step(0.0, [], [], [], "", "no stage")
    profile = ts[0].profile
    # a stage of no units (no pipeline) is its tail; one stage alone waits for no other, so any order of its units
    # (gradient accumulation without a pipeline: nothing orders the micro batches) takes the same time
    unfixed = [s.stage or 0 for s in ts if s.order and not s.fixed]
    if unfixed and len(ts) > 1:
        return Step(0.0, [], [], [], profile, f"the dump does not fix the order of stage {unfixed[0]}")
    dur = {(s.stage or 0, k): (time_of(s.stage or 0, k) if time_of else s.units[k].seconds)
           for s in ts for k in s.order}
    preds: dict[tuple[int, UnitKey], list[tuple[tuple[int, UnitKey], float, TimedHop | None]]] = {n: [] for n in dur}
    for s in ts:
        for a, b in zip(s.order, s.order[1:]):
            preds[(s.stage or 0, b)].append(((s.stage or 0, a), 0.0, None))
    stage_of = {s.rank: s.stage or 0 for s in ts}
    pairs = pair_ranks({s.rank: s.hops for s in ts if s.rank is not None})
    for lp in pairs.links:
        src_rank, dst_rank = lp.link
        for send, recv in lp.pairs:
            a, b = (stage_of[src_rank], send.unit), (stage_of[dst_rank], recv.unit)
            if a in dur and b in dur and a != b:
                preds[b].append((a, hop_time(send) if hop_time else send.seconds, send))
    succ: dict[tuple[int, UnitKey], list[tuple[int, UnitKey]]] = {n: [] for n in dur}
    for b, ps in preds.items():
        for a, _, _ in ps:
            succ[a].append(b)
    waiting = {n: len(ps) for n, ps in preds.items()}
    queue = deque(n for n, w in waiting.items() if w == 0)
    end: dict[tuple[int, UnitKey], float] = {}
    boxes: dict[tuple[int, UnitKey], Box] = {}
    by_stage = {s.stage or 0: s for s in ts}
    while queue:
        n = queue.popleft()
        start = max((end[a] + d for a, d, _ in preds[n]), default=0.0)
        end[n] = start + dur[n]
        boxes[n] = Box(n[0], n[1], start, end[n], by_stage[n[0]].units[n[1]])
        for m in succ[n]:
            waiting[m] -= 1
            if waiting[m] == 0:
                queue.append(m)
    if len(end) < len(dur):
        stuck = next(n for n in dur if n not in end)
        return Step(0.0, [], [], [], profile, f"the orders and Send -> Receive pairs wait on each other in a cycle "
                                              f"(stage {stuck[0]} waits at {stuck[1]})")
    finish = {s.stage or 0: max((end[(s.stage or 0, k)] for k in s.order), default=0.0)
              + (0.0 if time_of else s.tail.seconds) for s in ts}
    step = max(finish.values(), default=0.0)
    rows = []
    for s in ts:
        st = s.stage or 0
        work = UnitTime()
        if time_of:
            work.forward = sum(dur[(st, k)] for k in s.order)
        else:
            for k in s.order:
                work.add(s.units[k])
            work.add(s.tail)
        idle = step - work.compute - work.exposed
        rows.append(StageStep(st, s.rank, work.compute, work.exposed, idle if idle > step * 1e-9 else 0.0,
                              s.model_flops, s.peak))  # a residue of rounding is no idle time
    arrows = [Arrow(boxes[a], boxes[b], d) for b, ps in preds.items() for a, d, h in ps if h is not None]
    return Step(step, rows, sorted(boxes.values(), key=lambda x: (x.stage, x.start)), arrows, profile, None,
                sum(s.unknown_ops for s in ts), sum(s.unknown_comm for s in ts))
