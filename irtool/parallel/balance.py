"""Balance of a pipeline's stages and the layer-to-stage split that would even it out
(docs/cost.md §3), from one rank per stage (the ranks of a stage hold the same work).

`StageCost` is what one rank tells (made where the rank is read, picklable); `balance` folds one
per stage with the folder's `Job` (stage count, micro batches, layers per stage: never the number
of stages selected or read). The current split, the even split and the advised one are estimated by
one function (`estimate`), from the same per-layer costs, so the advice is never worse than the
even split by that function. Text of these records is presentation's (`irtool.present.cost`).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable
from weakref import WeakKeyDictionary

from .cost import CostFacts, compute_cost
from .hardware import Profile
from .job import Evidence, Job, RankJob
from .lifetime import Lifetimes
from .memory import MemoryFacts, compute_memory, scaled
from .order import StageOrder, stage_order
from .records import Bytes, ParallelFacts
from .timing import StageTiming, Step, simulate, stage_timing

if TYPE_CHECKING:
    from .table import NodeFacts

MEASURE = "forward+backward+recompute FLOPs"
NOISE = 0.01  # by time, a split must shorten the slowest stage by more than this to be advised over the current


@dataclass
class StageCost:
    """One rank's cost: FLOPs, memory (one micro batch of activations), communication, pipeline order."""

    stage: int | None
    rank: int | None
    file: str
    cost: CostFacts
    memory: MemoryFacts
    comm: Bytes  # the rank's communication bytes over one step (docs/parallel.md §5; each node times its runs)
    order: StageOrder
    layers: list[int]  # layers whose parameters its work reads (the job's rule)
    lifetimes: Lifetimes | None = None  # the peak of live tensors (docs/cost.md §2.1)
    timing: StageTiming | None = None  # its times under a hardware profile (asked for)

    @property
    def bytes_per_flop(self) -> float | None:
        return self.comm.total / self.cost.total if self.cost.total and not self.comm.unknown else None

    @property
    def peak_bytes(self) -> int | None:
        """The peak of live tensors, None where the walk is not the step (docs/cost.md §2.1)."""
        lt = self.lifetimes
        return lt.peak_bytes if lt is not None and lt.complete else None


def stage_cost(facts: ParallelFacts, keep_ops: bool = False, hardware: Profile | None = None,
               order: StageOrder | None = None, walk: bool = True) -> StageCost:
    """The cost record of one analysed rank (reading what its dump shows of the job, `facts.job`); `keep_ops`
    keeps each operator's FLOPs (`cost.compute_cost`); `hardware` adds its times (`timing.stage_timing`); `order`:
    the rank's order as a folder command shows it (`dumpdir.rank_order`: its kernel graph's where present), else
    its own dump's `order` fact; `walk` False: without the lifetime walk (`lifetimes` None), for a caller that reads no
    peak (the node overlays, the timeline, a logical graph's FLOPs balance)."""
    job: RankJob = facts.job
    comm = Bytes()
    for c in facts.comm:
        comm += c.step_bytes
    micros = job.micro.value if job.micro.known else None
    cost = _flops(facts.table, keep_ops or hardware is not None)
    order = order or stage_order(facts.table)
    timing = None if hardware is None else stage_timing(facts.table, cost, hardware, facts.groups, order)
    if cost.ops and not keep_ops:
        cost = replace(cost, ops=[])
    memory = _made(facts.table, ("memory", micros), lambda: compute_memory(facts.table, micros))
    return StageCost(stage=facts.stage_info.placed, rank=job.rank, file=job.file, cost=cost, memory=memory, comm=comm,
                     order=order, layers=list(job.layers), lifetimes=facts.table.get("lifetimes") if walk else None,
                     timing=timing)


# each fact table's FLOPs and memory records, made once: a command asking a rank's cost twice (`export` and `view`:
# the node overlays and the timeline) makes them once
_MADE: WeakKeyDictionary[NodeFacts, dict[Any, Any]] = WeakKeyDictionary()


def _made(t: NodeFacts, key: Any, make: Callable[[], Any]) -> Any:
    kept = _MADE.setdefault(t, {})
    if key not in kept:
        kept[key] = make()
    return kept[key]


def _flops(t: NodeFacts, keep_ops: bool) -> CostFacts:
    """`compute_cost(t, keep_ops)`, made once per table (the records with each operator's FLOPs serve both)."""
    kept = _MADE.get(t, {})
    if "ops" in kept or keep_ops:
        return _made(t, "ops", lambda: compute_cost(t, keep_ops=True))
    return _made(t, "flops", lambda: compute_cost(t))


@dataclass(frozen=True)
class InFlight:
    """How many micro batches' activations a stage holds at once, and how that is known."""

    count: int | float | None  # an interleaved stage may hold a fraction (`order.StageOrder.in_flight`)
    how: str
    by_chunk: tuple[tuple[int, int], ...] = ()  # with chunks: (chunk, whole micro batches in flight on it)
    part: str = "chunk"  # what `by_chunk` counts on: a chunk (interleaved), a segment (folded: `Job.folded`)


def one_f_one_b(stages: int, stage: int, micros: int) -> int:
    """1F1B: stage s of S holds min(S - s, m) micro batches in flight (at least one)."""
    return max(1, min(stages - stage, micros))


def in_flight(order: StageOrder, stage: int | None, job: Job) -> InFlight:
    """The one place the micro batches in flight are decided: the most begun forward and not finished
    backward in the order the dump's dependencies fix (`order.py`); else 1F1B, stage s of S holding
    min(S - s, m) (the job's stage count and micro batches); else unknown. A stage of a job with no backward,
    optimizer or accumulation on any rank (`job.training` False: inference) keeps nothing for a backward. Per
    chunk, said as the job's: a folded pipeline's segments (`job.folded`), an interleaved one's chunks."""
    stages, micros = job.pipeline_stages, job.micro_batches
    if job.training is False and order.units:
        return InFlight(0, "no backward work: no activations are kept for one (inference)")
    if order.fixed and order.in_flight is not None:
        part = "segment" if job.folded else "chunk"
        return InFlight(order.in_flight, "the most micro batches begun and not finished backward in the order "
                                         "this dump fixes (" + " ".join(order.work) + ")"
                        + (f"; a micro batch on one {part} holds 1/{len(order.chunks)} of its activations"
                           if order.chunks else ""), tuple(order.in_flight_by_chunk or ()), part)
    if stages.known and stages.value == 1:
        return InFlight(1, "no pipeline: each micro batch's backward runs before the next forward")
    if stage is None:  # a rank of unknown stage in a pipeline is not stage 0
        return InFlight(None, "unknown: this pass does not fix the order and the rank's stage is unknown")
    s = stage
    if stages.known and micros.known:
        n = one_f_one_b(stages.value, s, micros.value)
        return InFlight(n, f"1F1B assumed (this pass does not fix the order): stage {s} of {stages.value} holds "
                           f"min({stages.value} - {s}, {micros.value}) = {n}")
    missing = " and ".join(x for x, e in (("the stage count", stages), ("the micro batches", micros)) if not e.known)
    return InFlight(None, f"unknown: this pass does not fix the order and {missing} unknown (summarize the folder)")


@dataclass(frozen=True)
class StageMemory:
    """A stage's memory under the job: the estimate (parameters + gradients + activations in flight) and,
    where the step could be walked in execution order, the peak of live tensors, which `used` and `fits` take."""

    in_flight: InFlight
    total: Bytes  # with one micro batch of activations when `in_flight` is unknown (then a lower bound)
    lower_bound: bool  # in flight unknown: more micro batches may be held
    peak: Bytes | None = None  # the lifetime walk's peak (None: the order of the step is not known)
    margin: float = 0.0  # how far the peak may be below the compiler's (fits only with this much headroom)

    @property
    def used(self) -> Bytes:
        """What the stage needs at once: the peak when known, else the estimate."""
        return self.peak if self.peak is not None else self.total

    @property
    def used_lower_bound(self) -> bool:
        return self.lower_bound if self.peak is None else False

    def fits(self, limit: int | None) -> bool | None:
        """True/False when it is known; None when unknown sizes or micro batches leave it open."""
        if limit is None:
            return None
        used = self.used
        if used.total > limit:
            return False
        return None if used.unknown or self.used_lower_bound or used.total * (1 + self.margin) > limit else True


def stage_memory(memory: MemoryFacts, flight: InFlight, lifetimes: Lifetimes | None = None) -> StageMemory:
    k = 1 if flight.count is None else flight.count
    peak = lifetimes.peak if lifetimes is not None and lifetimes.complete else None
    return StageMemory(flight, memory.total(k), flight.count is None and memory.activations is not None, peak,
                       lifetimes.margin if peak is not None and lifetimes is not None else 0.0)


@dataclass
class StageFigures:
    """One stage's record in the balance."""

    cost: StageCost
    memory: StageMemory
    layers: list[int]  # the job's layers of this stage

    @property
    def stage(self) -> int | None:
        return self.cost.stage


@dataclass(frozen=True)
class SplitEstimate:
    """A layer-to-stage split and what it gives (`estimate`)."""

    groups: list[list[int]]  # layers per stage (interleaved/folded: per chunk, `stage_of` says whose)
    stage_of: list[int]  # the stage of each group
    loads: list[int]  # known compute FLOPs per stage
    memory: list[Bytes]  # per stage
    lower_bound: list[bool]  # per stage: its in-flight micro batches unknown
    bubble: float | None
    fits: bool | None
    seconds: list[float] | None = None  # per stage under the hardware profile (`SplitModel.layer_time`)
    step: float | None = None  # the step those times give (`step_time`)

    @property
    def heaviest(self) -> int:
        return max(self.loads)

    @property
    def lightest(self) -> int:
        return min(self.loads)

    @property
    def ratio(self) -> float | None:
        return self.heaviest / self.lightest if self.lightest else None

    def layer_counts(self) -> list[list[int]]:
        """Layers per stage, per chunk: counts[chunk][stage]."""
        chunks = len(self.groups) // max(1, len(self.loads))
        out = [[0] * len(self.loads) for _ in range(chunks)]
        seen = [0] * len(self.loads)
        for g, s in zip(self.groups, self.stage_of):
            out[seen[s]][s] = len(g)
            seen[s] += 1
        return out


@dataclass(frozen=True)
class SplitModel:
    """What `estimate` needs: per stage its fixed work and memory, per layer its cost and bytes (all
    measured where the layer runs now)."""

    base: list[int]  # compute FLOPs of a stage that no layer split moves (embedding, head, loss)
    layer_cost: dict[int, int]
    base_static: list[Bytes]  # parameters and gradients not of a layer it holds
    layer_static: dict[int, Bytes]
    base_act: list[Bytes]  # activations per micro batch not of a layer it holds
    layer_act: dict[int, Bytes]
    in_flight: list[int | float]  # micro batches held at once (1 when unknown: a lower bound)
    flight_known: list[bool]
    micro_batches: int | None
    device_memory: int | None
    chunks: int = 1
    base_time: list[float] | None = None  # seconds per stage that no split moves (tail and exposed included)
    layer_time: dict[int, float] | None = None  # seconds per layer (`StageTiming.layer_time`: what moves with it)
    # recompute (`weigh_recompute`): per layer its recompute's and its forward's seconds (`StageTiming`), the
    # activations per micro batch it would keep were it not recomputed (`Activations.recomputed_by_layer`); per
    # stage the recomputed copies live at its peak (`Lifetimes.by_role`) and the peak's margin
    layer_recompute: dict[int, float] = field(default_factory=dict)
    layer_forward: dict[int, float] = field(default_factory=dict)
    recompute_act: dict[int, Bytes] = field(default_factory=dict)
    recompute_live: list[int] = field(default_factory=list)
    margin: list[float] = field(default_factory=list)


def estimate(model: SplitModel, groups: list[list[int]], stage_of: list[int]) -> SplitEstimate:
    """The one evaluation of a split: per stage the compute (its fixed work + its layers' FLOPs), the
    memory (fixed bytes + its layers' + activations x micro batches in flight), the bubble and fit."""
    n = len(model.base)
    loads = list(model.base)
    static = list(model.base_static)
    act = list(model.base_act)
    for g, s in zip(groups, stage_of):
        for i in g:
            loads[s] += model.layer_cost[i]
            static[s] += model.layer_static.get(i, Bytes())
            act[s] += model.layer_act.get(i, Bytes())
    memory = [static[s] + scaled(act[s], model.in_flight[s]) for s in range(n)]
    lower = [not model.flight_known[s] for s in range(n)]
    fits: bool | None = None
    if model.device_memory is not None:
        over = any(m.total > model.device_memory for m in memory)
        fits = False if over else (None if any(m.unknown for m in memory) or any(lower) else True)
    m, v = model.micro_batches, model.chunks
    seconds = None
    if model.base_time is not None and model.layer_time is not None:
        seconds = list(model.base_time)
        for g, s in zip(groups, stage_of):
            for i in g:
                seconds[s] += model.layer_time[i]
    weights = seconds if seconds is not None else loads
    return SplitEstimate(groups, stage_of, loads, memory, lower,
                         None if m is None else bubble([x / m for x in weights], m, v), fits, seconds,
                         None if m is None or seconds is None else step_time([x / m for x in seconds], m, v))


def step_time(times: list[float], micros: int, chunks: int = 1) -> float:
    """Step of a pipeline of per-micro-batch stage times `times` (all chunks of a stage), `micros` micro
    batches and `chunks` model chunks per stage: (sum(t) + (v*m - 1) * max(t)) / v (the first micro batch
    crosses every stage, a chunk at a time, then the slowest stage runs the rest)."""
    v, m = max(1, chunks), max(1, micros)
    return (sum(times) + (v * m - 1) * max(times, default=0.0)) / v


def bubble(times: list[float], micros: int, chunks: int = 1) -> float:
    """Idle share of `step_time`: 1 - m * sum(t) / (S * T); equal stages give (S - 1) / (v*m + S - 1)
    (1F1B: (S - 1) / (m + S - 1))."""
    if not times or not any(times):
        return 0.0
    return 1.0 - max(1, micros) * sum(times) / (len(times) * step_time(times, micros, chunks))


@dataclass
class Advice:
    """The current, even and advised splits, estimated alike; or why there is no advice."""

    current: SplitEstimate | None
    even: SplitEstimate | None
    advised: SplitEstimate | None
    cannot: str | None  # why no split is advised
    num_layers: int
    chunks: int  # model chunks per stage (interleaved) or fold segments; 1 without either
    recomputed: list[int]  # layers recomputed now (they keep their recompute where they go)
    recompute: list[RecomputeChange] = field(default_factory=list)  # per stage of the advised split
    recompute_step: float | None = None  # the advised split's step with those changes
    recompute_not: str | None = "no advised split"  # why recompute was not weighed (None: it was)
    device_memory: int | None = None  # the limit it was weighed against

    @property
    def recomputed_after(self) -> list[int]:
        """The layers recomputed with the advised changes."""
        off = {i for c in self.recompute for i in c.off}
        return sorted({i for i in self.recomputed if i not in off} | {i for c in self.recompute for i in c.on})


@dataclass(frozen=True)
class RecomputeChange:
    """Recompute turned off (`off`) or on (`on`) for layers of one stage of the advised split, and what it gives."""

    stage: int
    off: list[int]
    on: list[int]
    seconds: float  # the stage's seconds per step after minus before (negative: shorter)
    before: int  # the stage's peak (the estimate of the advised split), bytes
    after: int  # with the change


@dataclass
class Balance:
    """The stages of a folder side by side under its job: compute (the measure), memory, bubble, advice."""

    stages: list[StageFigures]
    stage_count: Evidence
    micro_batches: Evidence
    absent: list[int]  # stages of the pipeline no rank read is on
    selected: int | None  # --stage: only this stage is shown
    heaviest: int | None  # stage doing the most compute
    lightest: int | None
    compute_ratio: float | None
    forward_ratio: float | None  # the same stages' forward FLOPs
    unknown_ops: int  # compute operators of unknown cost over the stages (not counted in the ratio)
    bubble: float | None
    device_memory: int | None
    advice: Advice
    step: Step | None = None  # the step played out under the hardware profile (every stage timed)
    seconds: dict[int, float] = field(default_factory=dict)  # stage -> compute + exposed seconds, when all timed
    slowest: int | None = None  # by `seconds`
    fastest: int | None = None
    time_ratio: float | None = None  # slowest / fastest seconds
    measure: str = MEASURE
    notes: list[str] = field(default_factory=list)
    unknown_dominates: list[tuple[int, int, int]] = field(default_factory=list)  # (stage, unknown, all): no ratio
    micro_seen: list[int] = field(default_factory=list)  # every micro batch count the ranks read (several: they disagree)

    @property
    def played(self) -> Step | None:
        """The step played out (None: not every stage timed, or it cannot be played): `bubble` is then its."""
        return self.step if self.step is not None and not self.step.cannot else None


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def balance(costs: list[StageCost], job: Job, device_memory: int | None = None,
            selected: int | None = None) -> Balance:
    """The balance of one `StageCost` per stage under the folder's job (`selected`: the --stage shown)."""
    costs = sorted(costs, key=lambda c: (c.stage is None, c.stage or 0))  # a file of unknown stage: alone, last
    figures = [StageFigures(c, stage_memory(c.memory, in_flight(c.order, c.stage, job), c.lifetimes),
                            job.stage_layers.get(c.stage, c.layers)) for c in costs]
    compute = [f.cost.cost.compute for f in figures]
    heavy = max(range(len(figures)), key=lambda i: compute[i], default=None)
    light = min((i for i in range(len(figures)) if i != heavy or len(figures) == 1), key=lambda i: compute[i],
                default=None)  # another stage than the heaviest, even when they tie
    m = job.micro_batches.value if job.micro_batches.known else None
    v = job.chunks.value if job.chunks.known else 1
    # ranks that disagree on the micro batches do not run one step: no step, bubble or advice is estimated
    complete = len(job.micro_seen) < 2 and not job.stages_absent and job.pipeline_stages.known \
        and len(figures) == job.pipeline_stages.value
    timed = [f.cost.timing for f in figures if f.cost.timing is not None]
    step = simulate(timed) if complete and timed and len(timed) == len(figures) else None
    b = Balance(
        stages=figures, stage_count=job.pipeline_stages, micro_batches=job.micro_batches,
        absent=list(job.stages_absent), selected=selected,
        heaviest=None if heavy is None else figures[heavy].stage, lightest=None if light is None else figures[light].stage,
        compute_ratio=None if heavy is None else _ratio(compute[heavy], compute[light]),
        forward_ratio=None if heavy is None else _ratio(figures[heavy].cost.cost.flops["forward"],
                                                         figures[light].cost.cost.flops["forward"]),
        unknown_ops=sum(f.cost.cost.compute_unknown for f in figures),
        bubble=(step.bubble if step is not None and not step.cannot else
                bubble([c / m for c in compute], m, v) if complete and m else None),
        device_memory=device_memory, advice=advise(figures, job, device_memory), step=step,
        micro_seen=list(job.micro_seen))
    if timed and len(timed) == len(figures) > 1:
        b.seconds = {f.stage: x.total().seconds for f, x in zip(figures, timed)}
        b.slowest, b.fastest = max(b.seconds, key=b.seconds.__getitem__), min(b.seconds, key=b.seconds.__getitem__)
        b.time_ratio = b.seconds[b.slowest] / b.seconds[b.fastest] if b.seconds[b.fastest] else None
    # a stage whose operators are mostly of unknown cost: the known ones cannot say which stage is heavier
    b.unknown_dominates = [(f.stage, c.compute_unknown, c.compute_unknown + c.compute_known) for f in figures
                           if (c := f.cost.cost).compute_unknown > c.compute_known]
    if b.unknown_dominates:
        b.compute_ratio = b.forward_ratio = b.time_ratio = None
    return b


def _runs(layers: list[int]) -> list[list[int]]:
    """[0, 1, 4, 5] -> [[0, 1], [4, 5]]."""
    out: list[list[int]] = []
    for i in sorted(layers):
        if out and out[-1][-1] == i - 1:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def split_model(figures: list[StageFigures], micros: int | None, device_memory: int | None,
                chunks: int = 1) -> SplitModel | str:
    """The per-layer costs and per-stage fixed work of the current split, or why they cannot be had."""
    held: dict[int, int] = {}
    for f in figures:
        for i in f.layers:
            if i in held:
                return f"layer {i} is on stages {held[i]} and {f.stage}"
            held[i] = f.stage
    if not held:
        return "no stage reads a layer's parameters"
    if sorted(held) != list(range(len(held))):
        missing = sorted(set(range(max(held) + 1)) - set(held))
        return f"layers {', '.join(map(str, missing))} are on no stage read"
    layer_cost: dict[int, int] = {}
    base, base_static, base_act = [], [], []
    layer_static: dict[int, Bytes] = {}
    layer_act: dict[int, Bytes] = {}
    unknown = []
    for f in figures:
        per_layer = f.cost.cost.layer_compute()
        mine = set(f.layers)
        for i in mine:
            flops, unknown_ops = per_layer.get(i, (0, 0))
            layer_cost[i] = flops
            if unknown_ops:
                unknown.append(f"layer {i}: {unknown_ops}")
        base.append(f.cost.cost.compute - sum(layer_cost[i] for i in mine))
        mem = f.cost.memory
        static = mem.static_by_layer()
        acts = mem.activations.by_layer if mem.activations else {}
        fixed_static, fixed_act = Bytes(), Bytes()
        for k, v in static.items():
            if k in mine:
                layer_static[k] = v
            else:
                fixed_static += v
        for k, v in acts.items():
            if k in mine:
                layer_act[k] = v
            else:
                fixed_act += v
        if f.memory.peak is not None:  # what the estimate misses of the walked peak stays with the stage
            fixed_static += Bytes(f.memory.peak.total - f.memory.total.total)
        base_static.append(fixed_static)
        base_act.append(fixed_act)
    if unknown:
        return "operators of unknown cost in the layers (" + "; ".join(unknown) + "): their FLOPs are not known"
    # a stage whose layers carry none of its work (all of it of no layer): moving a layer would move work the
    # estimate does not see with it (issue 37: an inference pipeline advised 1.14x for a split giving 3.3x)
    idle = [f for f in figures if f.layers and f.cost.cost.compute and not sum(layer_cost[i] for i in f.layers)]
    if idle:
        said = "; ".join(f"stage {f.stage}: layers {', '.join(map(str, f.layers))} carry 0 of its "
                         f"{f.cost.cost.compute:,} FLOPs" for f in idle)
        return f"the layers carry none of the work ({said}; all of it work of no layer): a moved layer's cost is unknown"
    flights = [f.memory.in_flight.count for f in figures]
    model = SplitModel(base, layer_cost, base_static, layer_static, base_act, layer_act,
                       [1 if c is None else c for c in flights], [c is not None for c in flights], micros,
                       device_memory, chunks)
    timed = [f.cost.timing for f in figures]
    if all(x is not None for x in timed):  # rank by time (FLOPs beside it)
        layer_time = {i: x.layer_time(i) for f, x in zip(figures, timed) for i in f.layers}
        base_time = [x.total().seconds - sum(layer_time[i] for i in f.layers) for f, x in zip(figures, timed)]
        model = replace(model, base_time=base_time, layer_time=layer_time,
                        layer_recompute={i: x.layer_recompute.get(i, 0.0) for f, x in zip(figures, timed) for i in f.layers},
                        layer_forward={i: x.layer_forward.get(i, 0.0) for f, x in zip(figures, timed) for i in f.layers})
    acts = [f.cost.memory.activations for f in figures]
    return replace(model, recompute_act={i: a.recomputed_by_layer[i] for f, a in zip(figures, acts) if a is not None
                                         for i in f.layers if i in a.recomputed_by_layer},
                   recompute_live=[f.cost.lifetimes.by_role.get("recompute", 0)
                                   if f.cost.lifetimes is not None and f.memory.peak is not None else 0 for f in figures],
                   margin=[f.memory.margin for f in figures])


def advise(figures: list[StageFigures], job: Job, device_memory: int | None) -> Advice:
    """Estimate the current split and the even one, and advise the contiguous split (layers in order)
    whose heaviest stage is lightest (exact dynamic programme; ties: the lightest stage heaviest), each
    stage keeping its fixed work; with `device_memory`, only splits where every stage fits. Each layer
    keeps its cost, bytes and recompute where it goes. Interleaved and folded jobs: the current and even
    splits only (a split per chunk is not searched), said so."""
    chunks = job.chunks.value if job.chunks.known else 1
    recomputed = sorted({i for v in job.recompute.values() for i in v})
    n_layers = sum(len(f.layers) for f in figures)
    none = Advice(None, None, None, "", n_layers, chunks, recomputed)
    if len(job.micro_seen) > 1:
        none.cannot = f"ranks disagree on the number of micro batches ({' or '.join(map(str, job.micro_seen))})"
        return none
    if job.stages_absent:
        absent = job.stages_absent
        none.cannot = f"stage{'s' if len(absent) > 1 else ''} {', '.join(map(str, absent))} not read"
        return none
    if not figures:
        none.cannot = "no rank of a known stage read"
        return none
    if len(figures) < 2 and job.pipeline_stages.known:
        none.cannot = "one stage"
        return none
    if not job.pipeline_stages.known or job.pipeline_stages.value != len(figures):
        of = job.pipeline_stages.value if job.pipeline_stages.known else "an unknown number"
        none.cannot = f"{len(figures)} stage{'s' if len(figures) != 1 else ''} read of {of}"
        return none
    micros = job.micro_batches.value if job.micro_batches.known else None
    model = split_model(figures, micros, device_memory, chunks)
    if isinstance(model, str):
        none.cannot = model
        return none
    s = len(figures)
    runs = [(run, k) for k, f in enumerate(figures) for run in _runs(f.layers)]
    runs.sort(key=lambda r: r[0][0])
    current = estimate(model, [r for r, _ in runs], [k for _, k in runs])
    pattern = [k for _, k in runs] if chunks > 1 else list(range(s))
    if chunks > 1 and len(pattern) != s * chunks:
        pattern = [v % s for v in range(s * chunks)]
    even = estimate(model, _even(n_layers, len(pattern)), pattern)
    if chunks > 1:
        part = "segment" if job.folded else "chunk"  # a folded pipeline's parts are segments, as the job says them
        return Advice(current, even, None, f"{chunks} {part}s per stage: a split per {part} is not searched",
                      n_layers, chunks, recomputed)
    if n_layers < s:
        return Advice(current, even, None, f"{n_layers} layers for {s} stages", n_layers, chunks, recomputed)
    timed = model.layer_time is not None and model.base_time is not None
    # by time when timed: the search runs on seconds (as its loads), then the split is estimated on both
    best = _search(replace(model, base=model.base_time, layer_cost=model.layer_time) if timed else model,  # type: ignore[arg-type]
                   n_layers, device_memory)
    if best is not None and timed:
        best = estimate(model, best.groups, best.stage_of)
    candidates = [e for e in (best, even, current) if e is not None]
    fits_first = (lambda e: e.fits is False) if device_memory is not None else (lambda e: False)
    heaviest = (lambda e: (max(e.seconds), -min(e.seconds))) if timed else (lambda e: (e.heaviest, -e.lightest))
    advised = min(candidates, key=lambda e: (fits_first(e), *heaviest(e)))
    if timed and advised.seconds and current.seconds and fits_first(current) == fits_first(advised) and \
            max(current.seconds) <= max(advised.seconds) * (1 + NOISE):
        advised = current  # a gain the estimate cannot tell from its own error is no advice
    out = Advice(current, even, advised, None, n_layers, chunks, recomputed, device_memory=device_memory)
    out.recompute, out.recompute_step, out.recompute_not = weigh_recompute(model, advised, set(recomputed))
    return out


def weigh_recompute(model: SplitModel, e: SplitEstimate, recomputed: set[int]) \
        -> tuple[list[RecomputeChange], float | None, str | None]:
    """Per stage of split `e`, recompute turned off or on (docs/cost.md §3): a stage that fits and recomputes
    layers stops recomputing them, most seconds per byte first, while its peak plus their kept activations
    (per micro batch x in flight), less the recomputed copies live at its peak once none is left, still fits;
    a stage that does not fit recomputes its other layers, most bytes per second first, until it fits (its
    peak less their activations x in flight, plus one micro batch of the largest's recomputed copies), else
    nothing. The changes, the step they give, or why recompute is not weighed."""
    limit, m = model.device_memory, model.micro_batches
    if limit is None:
        return [], None, "no device memory to fit (--device-memory SIZE or a named --hardware)"
    if e.seconds is None or m is None or not model.margin:
        return [], None, "not timed (a hardware profile and the micro batches are needed)"
    changes = []
    for s in range(len(e.loads)):
        mem = e.memory[s]
        if mem.unknown or e.lower_bound[s]:
            continue
        mine = [i for g, k in zip(e.groups, e.stage_of) if k == s for i in g]
        room = limit / (1 + model.margin[s])  # "fits" keeps the peak's margin of headroom
        k = model.in_flight[s]
        if mem.total <= room:
            c = _recompute_off(model, s, [i for i in mine if i in recomputed], mem.total, room, k)
        else:
            c = _recompute_on(model, s, [i for i in mine if i not in recomputed], mem.total, room, k,
                              any(i in recomputed for i in mine))
        if c is not None:
            changes.append(c)
    if not changes:
        return [], None, None
    seconds = list(e.seconds)
    for c in changes:
        seconds[c.stage] += c.seconds
    return changes, step_time([x / m for x in seconds], m, model.chunks), None


def _recompute_off(model: SplitModel, s: int, layers: list[int], peak: int, room: float,
                   k: int | float) -> RecomputeChange | None:
    def after(off: list[int]) -> int:  # once no layer is recomputed, no recomputed copy is live at the peak
        freed = model.recompute_live[s] if len(off) == len(layers) else 0
        return peak + scaled(sum((model.recompute_act[j] for j in off), Bytes()), k).total - freed

    known = [i for i in layers if i in model.recompute_act and not model.recompute_act[i].unknown]
    known.sort(key=lambda i: -model.layer_recompute.get(i, 0.0) / max(1, model.recompute_act[i].total))
    off: list[int] = []
    for i in known:
        if after(off + [i]) <= room:
            off.append(i)
    if not off:
        return None
    return RecomputeChange(s, sorted(off), [], -sum(model.layer_recompute.get(i, 0.0) for i in off), peak, after(off))


def _recompute_on(model: SplitModel, s: int, layers: list[int], peak: int, room: float, k: int | float,
                  some: bool) -> RecomputeChange | None:
    known = [i for i in layers if i in model.layer_act and not model.layer_act[i].unknown]
    known.sort(key=lambda i: -model.layer_act[i].total / max(1e-12, model.layer_forward.get(i, 0.0)))
    on: list[int] = []
    for i in known:
        on.append(i)
        # one micro batch of the largest newly recomputed layer's copies is live in its backward (when the stage
        # recomputes layers already, their copies are: not added again)
        transient = 0 if some else max(model.layer_act[j].total for j in on)
        after = peak - scaled(sum((model.layer_act[j] for j in on), Bytes()), k).total + transient
        if after <= room:
            return RecomputeChange(s, [], sorted(on), sum(model.layer_forward.get(j, 0.0) for j in on), peak, after)
    return None


def _even(n: int, parts: int) -> list[list[int]]:
    """n layers in `parts` contiguous groups as even as can be (the first n % parts one larger)."""
    out, at = [], 0
    for k in range(parts):
        size = n // parts + (1 if k < n % parts else 0)
        out.append(list(range(at, at + size)))
        at += size
    return out


def _search(model: SplitModel, n_layers: int, device_memory: int | None) -> SplitEstimate | None:
    """The contiguous split (one layer or more per stage) whose heaviest stage is lightest, then whose
    lightest stage is heaviest, where every stage fits `device_memory` (when given); None when none fits."""
    s = len(model.base)
    prefix = [0]
    for i in range(n_layers):
        prefix.append(prefix[-1] + model.layer_cost[i])

    def load(k: int, i: int, j: int) -> int:
        return model.base[k] + prefix[j] - prefix[i]

    def fits(k: int, i: int, j: int) -> bool:
        if device_memory is None:
            return True
        static, act = model.base_static[k], model.base_act[k]
        for x in range(i, j):
            static += model.layer_static.get(x, Bytes())
            act += model.layer_act.get(x, Bytes())
        return (static + scaled(act, model.in_flight[k])).total <= device_memory

    inf = float("inf")
    # best[k][j]: the lightest heaviest stage for layers [0, j) on stages [0, k)
    best = [[inf] * (n_layers + 1) for _ in range(s + 1)]
    best[0][0] = 0
    for k in range(1, s + 1):
        for j in range(k, n_layers - (s - k) + 1):
            for i in range(k - 1, j):
                if best[k - 1][i] < inf and fits(k - 1, i, j):
                    best[k][j] = min(best[k][j], max(best[k - 1][i], load(k - 1, i, j)))
    top = best[s][n_layers]
    if top == inf:
        return None
    # among the splits whose stages are all <= top: the heaviest lightest stage
    low = [[-inf] * (n_layers + 1) for _ in range(s + 1)]
    cut = [[0] * (n_layers + 1) for _ in range(s + 1)]
    low[0][0] = inf
    for k in range(1, s + 1):
        for j in range(k, n_layers - (s - k) + 1):
            for i in range(k - 1, j):
                x = load(k - 1, i, j)
                if low[k - 1][i] > -inf and x <= top and fits(k - 1, i, j) and min(low[k - 1][i], x) > low[k][j]:
                    low[k][j], cut[k][j] = min(low[k - 1][i], x), i
    groups: list[list[int]] = []
    j = n_layers
    for k in range(s, 0, -1):
        i = cut[k][j]
        groups.insert(0, list(range(i, j)))
        j = i
    return estimate(model, groups, list(range(s)))
