"""Configurations planned from one compile (docs/plan.md): other dp x mp x pp, micro batches, recompute and
optimizer sharding predicted per stage from the facts of the job as compiled.

What one compile tells (`Basis`, read once from one rank per stage): each parameter's whole shape (its slice
times the split of the operator reading it, `model_dims.weight_splits`; an optimizer-sharded one's slice is
what its gather gives, `optimizer.optimizer_shards`), its role, its layer and its states and buffers (the
memory records); per layer the FLOPs and communication per step (the logical graph's layer rows); per stage
the peak of live tensors by role in the compute phase and in the optimizer (the lifetimes pass's walk) and
the time per layer (`timing.stage_timing`). Every figure of a candidate (`plan`) is either **re-derived**
(the parameters' whole shapes split by the new strategy: weights, optimizer states, accumulation buffers and
the optimizer-parallel traffic) or **scaled** from the compile's, and each says how (`Figure.how`). Nothing
here reads the dump: it reads the records the other passes decided.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any, Iterable

from ..errors import InputError
from ..ir import Dump
from .balance import bubble, in_flight, one_f_one_b, stage_cost, step_time
from .hardware import Profile
from .job import Job
from .lifetime import LIVE_ROLES, Share, block
from .logical import LogicalGraph
from .model_dims import weight_splits
from .optimizer import optimizer_shards
from .order import UnitKey
from .records import ParallelFacts
from .sizes import DTYPE_SIZE
from .slicing import GATHER, MarkedOutput
from .timing import OpWork, StageTiming, Step, TimedHop, UnitTime, simulate, work_seconds

SCHEMA = "irtool.plan/1"
PARAM_ROLES = ("weight", "optimizer-state", "accumulation", "hyperparameter", "unused", "other")
_CR = re.compile(r"^▸?CR_")
# MindSpore's parallel_optimizer_threshold default (KB): smaller parameters are not sharded
THRESHOLD = 64 * 1024


def _name(n: str) -> str:
    return _CR.sub("", n)


@dataclass(frozen=True)
class Param:
    """One parameter of the compile, as a plan re-derives it."""

    name: str
    role: str
    layer: int | None
    place: str  # `layer`, `first` (the embedding's stage), `last` (head, loss), `every` (held on each stage)
    itemsize: int
    held: int  # elements this rank holds in the compile
    nbytes: int
    whole: tuple[int, ...] | None  # a weight's whole shape (None: not re-derivable, kept as compiled)
    split: tuple[int, ...] | None  # the compile's split of each dimension
    shard: int  # the compile's optimizer-shard group (1: none)
    of: str | None  # the weight a state or buffer serves
    traffic: float | None = None  # its optimizer-parallel bytes per step per element gathered (None: not sharded)


@dataclass(frozen=True, eq=False)
class LayerTime:
    """A layer's seconds per step on one stage: compute by phase (forward, backward, recompute) and its exposed
    communication (exposed), and the operators and collectives they time (re-timed at another size)."""

    seconds: dict[str, float]
    work: tuple[OpWork, ...] = ()


@dataclass
class StageBasis:
    """What the compile's rank of one stage tells the plan."""

    stage: int
    rank: int | None
    layers: list[int]
    params: list[Param]
    compute_peak: dict[str, int]  # live bytes by role at the largest point before the optimizer
    optimizer_peak: dict[str, int]  # ... and in the optimizer
    recompute_set: int  # the largest live bytes of recomputed copies (one layer's recompute working set)
    in_flight: float  # micro batches in flight in the compile
    kept_per_micro: int  # activations kept for the backward, one micro batch (the memory records)
    kept_layer_share: float  # the part of them produced by a layer's nodes (the rest: the stage's own, fixed)
    layer_flops: dict[int | None, dict[str, int]]  # per step, by phase
    # per step, bytes by (category, phase); without the gathers of sliced activations (`marked`, decided anew)
    layer_comm: dict[int | None, dict[tuple[str, str], int]]
    layer_time: dict[int | None, LayerTime]  # per step: seconds by phase, and what they time
    tail_seconds: float  # the optimizer and aggregation after the last micro batch
    gather: float | None  # optimizer-parallel bytes per element gathered, the stage's mean (a weight sharded anew)
    reduce: float | None  # gradient-aggregation bytes per element of the weights reduced unsharded over copies
    timing: StageTiming | None  # its times on the profile (the step is played from these)
    marked: list[MarkedOutput]  # outputs a recompute may read sliced (`slicing`)
    notes: list[str] = field(default_factory=list)
    # what is live in the compute phase at each step no other exceeds in every Share (lifetime.Lifetimes.points),
    # and one layer's recompute working set, by Share: each tensor scaled by what splits it (`_factor`); empty:
    # the compute peak's live set, every working set as split by dp and mp
    points: list[dict[Share, int]] = field(default_factory=list)
    recompute_shares: dict[Share, int] = field(default_factory=dict)


@dataclass
class Basis:
    """The compiled job the plan starts from."""

    path: str
    job: Job
    stages: list[StageBasis]
    dp: int
    mp: int
    pp: int
    micro: int
    global_batch: int
    recompute: bool
    opt_shard: bool
    hardware: str | None
    notes: list[str] = field(default_factory=list)
    # per compiled stage, its own time by phase per micro batch (what a candidate's units are scaled against)
    own_time: dict[int, dict[str, float]] = field(default_factory=dict)
    profile: Profile | None = None  # the hardware the times are on (a layer re-timed at another size)
    _retimed: dict[tuple, dict[str, float]] = field(default_factory=dict)

    @property
    def layers(self) -> int:
        return sum(len(s.layers) for s in self.stages)

    @cached_property
    def by_name(self) -> dict[str, Param]:
        return {q.name: q for s in self.stages for q in s.params}

    @property
    def devices(self) -> int:
        return self.dp * self.mp * self.pp

    @property
    def micro_size(self) -> int:
        return self.global_batch // (self.dp * self.micro)


@dataclass(frozen=True)
class Candidate:
    """A configuration to predict."""

    dp: int
    mp: int
    pp: int
    micro: int
    recompute: bool
    opt_shard: bool
    global_batch: int
    offset: tuple[int, ...] | None = None  # per stage, MindFormers' `offset` (None: the even split)
    # per stage, how many of its first layers are recomputed (MindFormers' list form); None: `recompute` for all
    recompute_counts: tuple[int, ...] | None = None
    num_layers: int | None = None  # another layer count than the compile's (its layers as the template)

    def label(self) -> str:
        rc = (f"recompute {list(self.recompute_counts)}" if self.recompute_counts is not None else
              "recompute" if self.recompute else "no recompute")
        return (f"dp{self.dp} mp{self.mp} pp{self.pp} m{self.micro} {rc}{' opt-shard' if self.opt_shard else ''}"
                + (f" offset {list(self.offset)}" if self.offset is not None else "")
                + (f" {self.num_layers} layers" if self.num_layers is not None else ""))

    def layers(self, compiled: int) -> int:
        return self.num_layers or compiled

    def recomputed(self, stage: int, layers: list[int]) -> list[bool]:
        """Whether each of a stage's layers is recomputed."""
        if self.recompute_counts is None:
            return [self.recompute] * len(layers)
        n = self.recompute_counts[stage] if stage < len(self.recompute_counts) else 0
        return [i < n for i in range(len(layers))]

    @property
    def any_recompute(self) -> bool:
        return any(self.recompute_counts) if self.recompute_counts is not None else self.recompute


@dataclass(frozen=True)
class Figure:
    """One predicted figure and how it was obtained."""

    value: float | int | None
    how: str


@dataclass
class StagePlan:
    """One stage of a candidate: its layers and figures (per rank, per step)."""

    stage: int
    layers: list[int]
    figures: dict[str, Figure]  # `summarize --cost` names: weight, optimizer-state, accumulation, peak_bytes, ...
    flops: dict[str, int]  # per step by phase, as `summarize --cost`'s `flops`
    comm_by_category: dict[str, int]
    group_sizes: dict[str, list[int]]
    bytes_by_role: dict[str, int] = field(default_factory=dict)  # every parameter role, as `summarize --cost`


@dataclass
class Plan:
    """A candidate predicted, or refused with the reasons."""

    candidate: Candidate
    current: bool
    refused: list[str]
    stages: list[StagePlan] = field(default_factory=list)
    step_seconds: float | None = None
    bubble: float | None = None
    fits: bool | None = None
    played: Step | None = None  # the step played out (None: not played; then the 1F1B formula's step)

    @property
    def peak_bytes(self) -> int | None:
        peaks = [s.figures["peak_bytes"].value for s in self.stages]
        return int(max(peaks)) if peaks and None not in peaks else None  # type: ignore[type-var]

    @property
    def offset(self) -> list[int]:
        return offsets(self.candidate, len({x for s in self.stages for x in s.layers}))


# --- the basis: read once from one rank per stage


def basis(stages: Iterable[tuple[int | None, Dump, ParallelFacts]], job: Job, graph: LogicalGraph,
          hardware: Profile | None, path: str = "") -> Basis:
    """The compile as the plan reads it (`stages`: one analysed rank per stage, facts not released; `graph`:
    the folder's logical graph, for the per-layer rows)."""
    def val(e: Any, what: str) -> int:
        if not e.known:
            raise InputError(f"{path}: cannot plan: the compile's {what} is unknown ({e.where})")
        return int(e.value)

    for what, e in (("model chunks per stage", job.chunks), ("expert parallel", job.ep), ("sequence parallel", job.sp),
                    ("context parallel", job.cp)):
        if e.known and e.value > 1:  # their layouts are not re-derived: refused rather than mispredicted
            raise InputError(f"{path}: cannot plan: {what} {e.value} (only dp x mp x pp, micro batches, recompute "
                             "and optimizer sharding are planned)")
    out = [_stage_basis(rank, dump, facts, job, graph, hardware) for rank, dump, facts in stages]
    out.sort(key=lambda s: s.stage)
    notes = [n for s in out for n in s.notes]
    pp = val(job.pipeline_stages, "pipeline stage count")
    if len(out) != pp:
        raise InputError(f"{path}: cannot plan: every stage must be read, {len(out)} of {pp} are")
    b = Basis(path, job, out, val(job.dp, "dp"), val(job.mp, "mp"), pp, val(job.micro_batches, "micro batch count"),
              val(job.global_batch, "global batch"), bool(job.recompute_layers.value),
              job.optimizer_shard.known and (job.optimizer_shard.value or 1) > 1,
              hardware.name if hardware is not None else None, notes, profile=hardware)
    now = current(b)
    for s in out:
        own = _phases(b, now, s.stage, (s.layers, now.recomputed(s.stage, s.layers)), 1.0)
        b.own_time[s.stage] = {k: v / b.micro for k, v in own.items()}
    return b


def _stage_basis(rank: int | None, dump: Dump, facts: ParallelFacts, job: Job, graph: LogicalGraph,
                 hardware: Profile | None) -> StageBasis:
    t = facts.table
    cost = stage_cost(facts, hardware=hardware)
    stage = cost.stage
    if stage is None:  # a rank of unknown stage is not stage 0: its place in the pipeline scales everything
        raise InputError(f"{cost.file}: cannot plan: the rank's pipeline stage is unknown (its Send/Receive do not say it); "
                         "plan from a pass that decides it (step_parallel_end or later)")
    last = stage == (job.pipeline_stages.value or 1) - 1
    splits = {_name(k): v for k, v in weight_splits(t).items()}
    shards = {_name(s.parameter): s for s in optimizer_shards(facts.comm, facts.groups)}
    params = [_param(p, splits, shards, stage, last) for p in cost.memory.params]
    fwd, bwd, elems = 0, 0, 0
    for s in shards.values():
        if s.full_shape and s.forward_bytes is not None and s.backward_bytes is not None:
            fwd, bwd, elems = fwd + s.forward_bytes, bwd + s.backward_bytes, elems + math.prod(s.full_shape)
    compute, optimizer = cost.lifetimes.parts if cost.lifetimes is not None else (None, None)
    flight = in_flight(cost.order, stage, job).count or 1
    rows = [r for r in graph.layers if r.stage == stage]
    timing = cost.timing
    return StageBasis(
        stage, rank, job.stage_layers.get(stage, []), params, _roles(compute), _roles(optimizer),
        cost.lifetimes.most.get("recompute", 0) if cost.lifetimes is not None else 0, flight,
        cost.memory.activations.per_micro.total if cost.memory.activations else 0, _layer_share(cost.memory),
        {r.layer: dict(r.flops) for r in rows},
        _without_slice_gathers({r.layer: _by_category_phase(r.comm.values()) for r in rows}, facts),
        {} if timing is None else _layer_time(timing),
        0.0 if timing is None else timing.tail.seconds,
        (fwd + bwd) / elems if elems else None,
        _reduce_per_element(params, rows, (job.dp.value or 1) * (job.mp.value or 1)), timing, t.get("marked_outputs"),
        [f"stage {stage}: {n} parameter(s) of unknown size, not counted in any candidate's figures"
         for n in [sum(1 for p in cost.memory.params if p.bytes is None)] if n]
        + [f"stage {stage}: {n} weight(s) no operator with a strategy reads (their whole shape unknown): held as "
           "compiled in every candidate" for n in [sum(1 for q in params if q.role == "weight" and q.whole is None)]
           if n], *((cost.lifetimes.points, cost.lifetimes.recompute_shares) if cost.lifetimes is not None else ()))


def _without_slice_gathers(rows: dict[int | None, dict[tuple[str, str], int]], facts: ParallelFacts
                           ) -> dict[int | None, dict[tuple[str, str], int]]:
    """The layer rows less the compile's gathers of sliced activations (each in the row the logical graph put it in:
    its operator's layer, else its own): a candidate has them or not by `_slice_gathers`."""
    t = facts.table
    nodes = t.get("by_key")
    for c in facts.comm:
        if c.instance == GATHER:
            graph, _, key = c.node.rpartition("/")
            n = nodes[graph][key]
            placed = t("placement", n)
            k, size = (c.category, c.phase), c.step_bytes.total
            for layer in (placed.layer if placed is not None else None, t("layer", n)):
                row = rows.get(layer, {})
                if row.get(k, 0) >= size:
                    row[k] -= size
                    break
    return rows


def _layer_time(timing: StageTiming) -> dict[int | None, LayerTime]:
    """Per layer, its compute seconds by phase and its exposed communication (`timing.stage_timing`'s), and the work
    they time."""
    out: dict[int | None, LayerTime] = {}
    for k in set(timing.layer_seconds) | set(timing.layer_exposed):
        fwd, rec = timing.layer_forward.get(k, 0.0), timing.layer_recompute.get(k, 0.0)
        out[k] = LayerTime({"forward": fwd, "recompute": rec, "backward": timing.layer_seconds.get(k, 0.0) - fwd - rec,
                            "exposed": timing.layer_exposed.get(k, 0.0)}, tuple(timing.layer_work.get(k, ())))
    return out


def _reduce_per_element(params: list[Param], rows: list[Any], ranks: int) -> float | None:
    """The compile's gradient-aggregation bytes over the elements of the weights it reduces: each unsharded weight
    held by more than one rank of the stage (a weight mp does not split is reduced over dp x mp copies)."""
    elems = sum(q.held for q in params if q.role == "weight" and q.split and q.shard == 1
                and ranks // math.prod(q.split) > 1)
    reduced = sum(u.bytes.total for r in rows for u in r.comm.values() if u.category == "gradient-aggregation")
    return reduced / elems if elems else None


def _layer_share(memory: Any) -> float:
    acts = memory.activations
    if acts is None or not acts.per_micro.total:
        return 1.0
    return sum(b.total for k, b in acts.by_layer.items() if k is not None) / acts.per_micro.total


def _by_category_phase(uses: Iterable[Any]) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for u in uses:
        out[(u.category, u.phase)] = out.get((u.category, u.phase), 0) + u.bytes.total
    return out


def _roles(live: tuple[int, ...] | None) -> dict[str, int]:
    return {r: v for r, v in zip(LIVE_ROLES, live or ()) if v}


def _param(p: Any, splits: dict, shards: dict, stage: int, last: bool) -> Param:
    size = DTYPE_SIZE.get(p.dtype or "", 0) or (p.bytes // max(1, math.prod(p.shape or (1,))) if p.bytes else 4)
    held = math.prod(p.shape) if isinstance(p.shape, tuple) else 0
    name = _name(p.name)
    weight = p.of and _name(p.of) or name
    place = "layer" if p.layer is not None else ("every" if p.role in ("hyperparameter", "other") else
                                                 "first" if stage == 0 else "last" if last else "every")
    whole = split = None
    shard = 1
    if p.role in ("weight", "unused") and name in splits:
        sp = splits[name]
        sl = shards[name].full_shape if name in shards else p.shape
        if isinstance(sl, tuple) and len(sl) == len(sp):
            whole, split = tuple(a * b for a, b in zip(sl, sp)), tuple(sp)
        shard = held and math.prod(sl) // held if name in shards and isinstance(sl, tuple) else 1
    return Param(name, p.role, p.layer, place, int(size), held, p.bytes or 0, whole, split, shard or 1,
                 None if weight == name else weight, _traffic(shards.get(name)))


def _traffic(s: Any) -> float | None:
    """An optimizer-sharded weight's gather and reduce-scatter bytes per step per element of its gathered shape."""
    if s is None or not s.full_shape or s.forward_bytes is None or s.backward_bytes is None:
        return None
    return (s.forward_bytes + s.backward_bytes) / math.prod(s.full_shape)


# --- candidates


def offsets(c: Candidate, layers: int) -> list[int]:
    """MindFormers' `offset`: each stage's layers beyond `num_layers // pipeline_stage`; by default the first
    `layers % pp` stages take one more."""
    if c.offset is not None:
        return list(c.offset)
    return [1 if s < layers % c.pp else 0 for s in range(c.pp)]


def stage_layers(c: Candidate, layers: int) -> list[list[int]]:
    base, out, i = layers // c.pp, [], 0
    for o in offsets(c, layers):
        out.append(list(range(i, i + base + o)))
        i += base + o
    return out


def refusals(b: Basis, c: Candidate, devices: int) -> list[str]:
    """Why the network cannot run `c` (empty: it can)."""
    why = []
    job = b.job
    if c.dp * c.mp * c.pp != devices:
        why.append(f"dp x mp x pp = {c.dp * c.mp * c.pp}, not the {devices} devices")
    for what, e in (("attention heads", job.heads), ("key-value heads", job.kv_heads), ("vocabulary", job.vocab_size),
                    ("FFN size", job.ffn_size)):
        if e.known and e.value % c.mp:
            why.append(f"{what} {e.value} not divisible by mp {c.mp}")
    n = c.layers(b.layers)
    if n < c.pp:
        why.append(f"{n} layers, fewer than {c.pp} stages")
    if c.micro < c.pp:
        why.append(f"{c.micro} micro batch{'es' if c.micro != 1 else ''}, fewer than {c.pp} stages")
    if c.global_batch % (c.dp * c.micro):
        why.append(f"global batch {c.global_batch} not divisible by dp x micro batches = {c.dp * c.micro}")
    if c.offset is not None and (len(c.offset) != c.pp or any(len(g) < 1 for g in stage_layers(c, n))
                                 or sum(len(g) for g in stage_layers(c, n)) != n):
        why.append(f"offset {list(c.offset)} does not give each of {c.pp} stages a layer of {n}")
    if c.recompute_counts is not None and len(c.recompute_counts) != c.pp:
        why.append(f"recompute {list(c.recompute_counts)} does not name each of {c.pp} stages")
    if c.pp == 1 < b.pp:  # measured: dryrun_llama_dp4mp2pp1 used 193M where the pipelined stages' scaling gave 91 MiB
        why.append("no pipeline from a pipelined compile: a step of every micro batch in one stage keeps other "
                   "working sets than a pipeline's stages (compile it once to plan from it)")
    if c.any_recompute and not b.recompute:
        why.append("recompute on from a compile without recompute: the checkpoints are not predicted")
    for p in _weights(b):
        for d, (w, s) in enumerate(zip(p.whole or (), p.split or ())):
            if s > 1 and (s * c.mp) % b.mp:  # split by more than mp (an auto-parallel search's layout)
                why.append(f"{p.name} {p.whole}: dimension {d} split {s} under mp {b.mp}, which does not scale "
                           f"to mp {c.mp}")
                return why
            if s > 1 and w % (s * c.mp // b.mp):
                why.append(f"{p.name} {p.whole}: dimension {d} ({w}) not divisible by mp {c.mp}")
                return why
    return why


def _weights(b: Basis) -> Iterable[Param]:
    for s in b.stages:
        yield from (p for p in s.params if p.whole is not None)


def candidates(b: Basis, devices: int | None = None, global_batch: int | None = None,
               micro: Iterable[int] = (), num_layers: int | None = None) -> list[Candidate]:
    """dp x mp x pp over the devices, micro batches (the compile's, `micro`, and 1, 2, 4 times the stages),
    recompute (`_recomputes`), offsets (`_offsets`), optimizer sharding on and off where dp > 1; the compiled
    configuration first when it is one of them."""
    n = devices or b.devices
    gb = global_batch or b.global_batch
    now = current(b)
    out = [now] if (n, gb, num_layers or b.layers) == (b.devices, b.global_batch, b.layers) else []
    for pp in _divisors(n):
        for mp in _divisors(n // pp):
            dp = n // pp // mp
            micros = sorted({b.micro, *micro} | ({pp, 2 * pp, 4 * pp} if pp > 1 else {1}))
            for m in micros:
                for os_ in ((True, False) if dp > 1 else (False,)):
                    even = offsets(Candidate(1, 1, pp, pp, False, False, 1), num_layers or b.layers)
                    for off in _offsets(num_layers or b.layers, pp):
                        rcs = _recomputes(num_layers or b.layers, pp, off, b.recompute)
                        if off is not None and max(abs(x - y) for x, y in zip(off, even)) > 1:
                            rcs = rcs[:2]  # several layers moved: all or none recomputed (not every first k)
                        for rc in rcs:
                            c = Candidate(dp, mp, pp, m, bool(rc) if isinstance(rc, bool) else any(rc), os_,
                                          gb, off, None if isinstance(rc, bool) else rc, num_layers)
                            if not out or not _same(b, c, now):
                                out.append(c)
    return out


def _offsets(layers: int, pp: int) -> list[tuple[int, ...] | None]:
    """The even split (None), and each split moving k layers between neighbouring stages of it: one layer at every
    boundary; up to half a stage's layers at the boundaries of the first and last stages (the embedding's and the
    head's, where a stage's own working sets weigh: MindFormers' `offset` of large models moves several layers off
    them), the giver keeping one at least."""
    if pp == 1 or layers < pp:
        return [None]
    even = offsets(Candidate(1, 1, pp, pp, False, False, 1), layers)
    out: list[tuple[int, ...] | None] = [None]
    base = layers // pp
    for s in range(pp - 1):
        most = max(1, base // 2) if s in (0, pp - 2) else 1
        for give, take in ((s, s + 1), (s + 1, s)):
            for k in range(1, most + 1):
                o = list(even)
                o[give] -= k
                o[take] += k
                if base + o[give] >= 1:
                    out.append(tuple(o))
    return out


def _recomputes(layers: int, pp: int, offset: tuple[int, ...] | None, compiled: bool) -> list[bool | tuple[int, ...]]:
    """All, none, and (with a compile that recomputes) the first k layers of every stage, k below the smallest
    stage's layers."""
    out: list[bool | tuple[int, ...]] = [True, False] if compiled else [False]
    if compiled:
        counts = [len(g) for g in stage_layers(Candidate(1, 1, pp, pp, False, False, 1, offset), layers)]
        out += [tuple(min(k, n) for n in counts) for k in range(1, max(counts))]
    return out


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def current(b: Basis) -> Candidate:
    """The compiled configuration: its offsets and, per stage, its recomputed layers (as a count of first layers)."""
    counts = [len(s.layers) - b.layers // b.pp for s in b.stages]
    rc = tuple(len(b.job.recompute.get(s.stage, [])) for s in b.stages)
    whole = all(n == len(s.layers) for n, s in zip(rc, b.stages)) or not any(rc)
    return Candidate(b.dp, b.mp, b.pp, b.micro, b.recompute, b.opt_shard, b.global_batch,
                     None if counts == [1 if i < b.layers % b.pp else 0 for i in range(b.pp)] else tuple(counts),
                     None if whole else rc)


def _recompute_key(c: Candidate, layers: int) -> tuple[int, ...]:
    return tuple(sum(c.recomputed(s, g)) for s, g in enumerate(stage_layers(c, layers)))


# --- prediction


def plan(b: Basis, cands: Iterable[Candidate], devices: int | None = None, device_memory: int | None = None
         ) -> list[Plan]:
    """Each candidate predicted (or refused), the ones that fit fastest first, then the rest, then the refused."""
    now = current(b)
    out = []
    for c in cands:
        why = refusals(b, c, devices or b.devices)
        p = Plan(c, not why and _same(b, c, now), why)
        if not why:
            _predict(b, c, p, device_memory)
        out.append(p)
    return sorted(out, key=lambda p: (bool(p.refused), p.fits is False, p.step_seconds or math.inf, p.peak_bytes or 0))


def _same(b: Basis, c: Candidate, now: Candidate) -> bool:
    key = lambda x: (x.dp, x.mp, x.pp, x.micro, x.opt_shard, x.global_batch, x.layers(b.layers),  # noqa: E731
                     tuple(offsets(x, x.layers(b.layers))), _recompute_key(x, x.layers(b.layers)))
    return key(c) == key(now)


def _source(b: Basis, s: int, pp: int) -> list[StageBasis]:
    """The compile's stages whose dynamic memory a new stage `s` of `pp` is scaled from: the same stage under the
    same stage count; else the first stage's (the embedding's), the last's (head and loss), a middle stage a middle
    one's (the first's when the compile has none); one stage: both (the larger)."""
    first, last = b.stages[0], b.stages[-1]
    if pp == b.pp:
        return [b.stages[s]]
    if pp == 1:
        return [first, last] if first is not last else [first]
    if s in (0, pp - 1):
        return [first if s == 0 else last]
    return [b.stages[min(b.pp - 2, max(1, round(s * (b.pp - 1) / (pp - 1))))] if b.pp > 2 else first]


def _predict(b: Basis, c: Candidate, p: Plan, device_memory: int | None) -> None:
    sb = (c.global_batch / (c.dp * c.micro)) / b.micro_size  # micro-batch size, new / compiled
    sw = sb * b.mp / c.mp  # tensors split by mp: working sets, FLOPs
    times: list[float] = []  # per micro batch
    work: list[float] = []  # compute FLOPs per micro batch: the bubble without a profile
    tails: list[float] = []
    timings: list[StageTiming | None] = []
    for s, layers in enumerate(stage_layers(c, c.layers(b.layers))):
        st, phases, weights = _stage_plan(b, c, s, layers, (sb, sw))
        src = _source(b, s, c.pp)[0]
        p.stages.append(st)
        times.append(sum(phases.values()) / c.micro)
        work.append(st.figures["compute_flops"].value / c.micro)  # type: ignore[operator]
        tails.append(src.tail_seconds * weights)
        timings.append(_timing(b, c, (s, src), phases, (weights, sb)))
    # the step played out as summarize --cost plays the compile's (docs/timing.md §3); else the 1F1B formula
    played = simulate([t for t in timings if t is not None]) if timings and None not in timings else None
    if played is not None and not played.cannot and played.seconds:
        p.step_seconds, p.bubble, p.played = played.seconds, played.bubble, played
    else:
        if all(times):
            p.step_seconds = step_time(times, c.micro) + max(tails, default=0.0)
        p.bubble = bubble(times if all(times) else work, c.micro)
    peak = p.peak_bytes
    p.fits = None if device_memory is None or peak is None else peak <= device_memory


def _timing(b: Basis, c: Candidate, where: tuple[int, StageBasis], phases: dict[str, float],
            scale: tuple[float, float]) -> StageTiming | None:
    """Stage `s` of `c` as the step simulation plays it: the compile's units of its source stage `src`, each phase
    scaled by the new stage's time over the source's (per micro batch), the tail by the weights (`scale[0]`), the
    pipeline transfers by the micro-batch size (`scale[1]`). With the compile's stages and micro batches, its own
    order and Send/Receive; else 1F1B (stage s of pp: min(pp - s, m) forwards, then one backward, one forward) of
    its mean forward and backward units (the last backward apart: the gradient work after the last micro batch),
    and one transfer each way per boundary and micro batch. None when the compile's step is not played."""
    (s, src), (weights, sb) = where, scale
    t = src.timing
    if t is None or not t.order or not t.fixed:
        return None
    base = b.own_time.get(src.stage, {})
    r = {k: v / c.micro / base[k] if base.get(k) else 1.0 for k, v in phases.items()}

    def scaled(u: UnitTime) -> UnitTime:
        return UnitTime(u.forward * r["forward"], u.backward * r["backward"], u.recompute * r["recompute"],
                        u.optimizer, u.comm * r["exposed"], u.exposed * r["exposed"], u.hideable * r["exposed"])

    tail = UnitTime()
    tail.add(t.tail, weights)
    if (c.pp, c.micro) == (b.pp, b.micro):
        return StageTiming(s, t.rank, t.profile, t.order, True, {k: scaled(u) for k, u in t.units.items()}, tail,
                           [replace(h, seconds=h.seconds * sb) for h in t.hops], 0, t.peak)
    fwd = [t.units[k] for k in t.order if k[0] == "F"]
    bwd = [t.units[k] for k in t.order if k[0] == "B"]
    if not fwd or not bwd:
        return None
    w = one_f_one_b(c.pp, s, c.micro)
    order: list[UnitKey] = [("F", i, None) for i in range(w)]
    for i in range(c.micro - w):
        order += [("B", i, None), ("F", w + i, None)]
    order += [("B", i, None) for i in range(c.micro - w, c.micro)]
    f, last, mid = scaled(_mean(fwd)), scaled(bwd[-1]), scaled(_mean(bwd[:-1] or bwd))
    units = {k: f if k[0] == "F" else last if k[1] == c.micro - 1 else mid for k in order}
    hop = sum(h.seconds for h in t.hops) / len(t.hops) * sb if t.hops else 0.0
    hops = []
    for i in range(c.micro):
        if s > 0:
            hops += [TimedHop("receive", s - 1, i, ("F", i, None), hop), TimedHop("send", s - 1, i, ("B", i, None), hop)]
        if s < c.pp - 1:
            hops += [TimedHop("send", s + 1, i, ("F", i, None), hop), TimedHop("receive", s + 1, i, ("B", i, None), hop)]
    return StageTiming(s, s, t.profile, order, True, units, tail, hops, 0, t.peak)


def _mean(units: list[UnitTime]) -> UnitTime:
    out = UnitTime()
    for u in units:
        out.add(u, 1 / len(units))
    return out


_EXACT = "re-derived: each parameter's whole shape split by the new strategy"
_HOW = {
    "weight": _EXACT + " (mp, then the optimizer shard over identical copies)",
    "optimizer-state": _EXACT + " (shaped as its weight's shard)",
    "accumulation": _EXACT + " (as in the compile: the mp slice, or the shard; none without a pipeline and one "
                             "micro batch)",
    "peak_bytes": "scaled: parameters re-derived (as pool blocks); the compile's live sets before (every step no other "
                  "exceeds in every share) and in the optimizer: kept activations x micro-batch size x micro batches "
                  "in flight (their layers' share x layers), each working-set tensor by what splits it (made from the "
                  "data: x micro-batch size; split by mp: / (new mp / compiled mp)), pipeline buffers per boundary, "
                  "the weights' compute copies (gathered or cast) as re-derived, optimizer temporaries x the weights' "
                  "shards",
    "micro_batches_in_flight": "1F1B: stage s of pp holds min(pp - s, micro batches)",
    "activations_per_micro_bytes": "scaled: the compile's kept tensors x micro-batch size (their layers' share x "
                                   "layers); a layer not recomputed adds its recompute working set, each tensor by "
                                   "what splits it",
    "activations_bytes": "activations per micro batch x in flight",
    "compute_flops": "scaled: the compile's per layer x micro batches x micro-batch size / (new mp / compiled mp); "
                     "recompute's dropped where off",
    "comm_bytes": "per category: tensor-parallel x micro batches x micro-batch size; pipeline per stage boundary and "
                  "micro batch; optimizer-parallel and gradient aggregation re-derived from the weights' shards and "
                  "copies",
}


def _stage_plan(b: Basis, c: Candidate, s: int, layers: list[int], scale: tuple[float, float]
                ) -> tuple[StagePlan, dict[str, float], float]:
    """Stage `s` of `c` holding `layers`: its figures, its seconds per step by phase and its weights over its source
    stage's (what its optimizer tail scales by)."""
    sb, sw = scale
    params = _stage_params(b, s, c.pp, layers, b.layers)
    if c.pp == 1 and c.micro == 1:  # neither a pipeline nor gradient accumulation: no accumulation buffers
        params = [(q, x) for q, x in params if q.role != "accumulation"]
    held = {r: 0 for r in PARAM_ROLES}
    blocks = 0
    slices: dict[tuple[str, str, int | None], float] = {}
    for q, copy in params:
        n = _held(q, c, b, slices, copy) * q.itemsize
        held[q.role] = held.get(q.role, 0) + n
        blocks += block(n)
    flight = one_f_one_b(c.pp, s, c.micro)
    rc = c.recomputed(s, layers)
    full = rc.count(False) if b.recompute else 0  # layers whose whole forward is kept
    gathered = sum(n for (kind, *_), n in slices.items() if kind in ("gathered", "cast"))
    src = _source(b, s, c.pp)
    peak = max(_peak(b, x, c, (blocks, gathered, held["weight"]), (len(layers), full, s), flight, scale) for x in src)
    kept = src[0].kept_per_micro * sb * _layers_factor(b, src[0], (len(layers), s, c), c.mp) + \
        full * _working(b, c, src[0].recompute_shares or None, (src[0].recompute_set, "recompute"), scale)
    flops = _flops(b, c, s, layers, rc, sw)
    comm, sizes = _comm(b, c, s, (layers, rc), sb, slices)
    values: dict[str, float | int] = {
        "weight": held["weight"], "optimizer-state": held["optimizer-state"], "accumulation": held["accumulation"],
        "peak_bytes": peak, "micro_batches_in_flight": flight, "activations_per_micro_bytes": round(kept),
        "activations_bytes": round(kept * flight),
        "compute_flops": round(sum(v for k, v in flops.items() if k != "optimizer")), "comm_bytes": sum(comm.values())}
    base_weights = sum(q.nbytes for q in src[0].params if q.role == "weight")
    return (StagePlan(s, layers, {k: Figure(v, _HOW[k]) for k, v in values.items()},
                      {k: round(v) for k, v in flops.items()}, comm, sizes, held),
            _phases(b, c, s, (layers, rc), sw), held["weight"] / max(1, base_weights))


def _stage_params(b: Basis, s: int, pp: int, layers: list[int], compiled: int) -> list[tuple[Param, int | None]]:
    """A new stage's parameters, each with the layer it is held for (a layer beyond the compile's takes the
    parameters of compiled layer `x % compiled`: the layers of one model have the same shapes)."""
    by_layer: dict[int, list[Param]] = {}
    for st in b.stages:
        for q in st.params:
            if q.place == "layer" and q.layer is not None:
                by_layer.setdefault(q.layer, []).append(q)
    out: list[tuple[Param, int | None]] = [(q, x) for x in layers for q in by_layer.get(x % compiled, [])]
    out += [(q, None) for q in b.stages[0].params if q.place == "first" and s == 0]
    out += [(q, None) for q in b.stages[-1].params if q.place == "last" and s == pp - 1]
    out += [(q, None) for q in b.stages[0 if s < pp - 1 else -1].params if q.place == "every"]
    return out


def _held(q: Param, c: Candidate, b: Basis, slices: dict, copy: int | None = None) -> int:
    """Elements a rank of `c` holds of `q` (re-derived for weights and what is shaped like them)."""
    w = b.by_name.get(q.of) if q.of else q
    if w is None or w.whole is None or w.split is None:
        return q.held
    split = [s * c.mp // b.mp if s > 1 else 1 for s in w.split]
    piece = [d // s for d, s in zip(w.whole, split)]
    sl = math.prod(piece)
    copies = c.dp * c.mp // math.prod(split)
    shard = copies if (c.opt_shard and copies > 1 and sl * w.itemsize >= THRESHOLD and piece[0] % copies == 0) else 1
    if q is w:
        slices[("slice", w.name, copy)] = sl
        if shard > 1:
            slices[("gathered", w.name, copy)] = sl * w.itemsize
            slices[("shard", w.name, copy)] = shard
            if w.traffic is not None:
                slices[("traffic", w.name, copy)] = sl * w.traffic
            else:  # sharded anew: at the stage's mean bytes per element
                slices[("sharded anew", w.name, copy)] = sl
        elif copies > 1:
            slices[("reduced", w.name, copy)] = sl
            slices[("copies", w.name, copy)] = copies
        if shard == 1 and w.shard > 1:  # the compile gathers its compute copy; unsharded, a Cast keeps it all step
            slices[("cast", w.name, copy)] = sl * w.itemsize
    if q.role == "accumulation" and q.held == w.held * w.shard:
        return sl  # the compile's buffer is the mp slice, not the shard: so it stays
    return q.held * (sl // shard) // max(1, w.held) if q is not w else sl // shard


def _ends(stage: int, pp: int) -> int:
    """Pipeline boundaries a stage sends and receives across."""
    return 0 if pp == 1 else (1 if stage in (0, pp - 1) else 2)


def _transfer(b: Basis, src: StageBasis) -> int:
    """One pipeline transfer of the compile (one micro batch, one boundary, one way), from its stage's traffic."""
    pipe = sum(v for row in src.layer_comm.values() for (cat, _), v in row.items() if cat == "pipeline")
    ends = _ends(src.stage, b.pp)
    return pipe // (2 * ends * b.micro) if ends else 0


def _peak(b: Basis, src: StageBasis, c: Candidate, held: tuple[int, int, int], counts: tuple[int, int, int],
          flight: int, scale: tuple[float, float]) -> int:
    """A new stage's peak from the compile's stage `src`: the largest of its live sets in the compute phase (each step
    no other exceeds in every Share: scaled by their own factors, any may be the largest; dp1 x mp4 at micro-batch
    size 2 peaks in a backward where dp2 x mp2 peaks in the loss) and in the optimizer, each with the parameters
    re-derived (`held`: their pool blocks, the gathered weights' bytes, the weights' bytes) and what a step makes
    scaled (`_HOW["peak_bytes"]`)."""
    (blocks, gathered, new_w), (n_layers, full, c_stage), (sb, _) = held, counts, scale
    lk = _layers_factor(b, src, (n_layers, c_stage, c), c.mp)
    cp, op = src.compute_peak, src.optimizer_peak
    fixed = blocks + cp.get("constant", 0) + round(cp.get("input", 0) * c.global_batch / b.global_batch)
    # communication buffers live at the peak: the pipeline's (a transfer's block for each boundary, and two more:
    # fitted on the dry runs, 3 on an end stage and 4 on a middle one of dp1 x mp2 x pp4) and the weights the
    # optimizer shard gathered (the rest, as re-derived)
    one = _transfer(b, src)
    pipe_base = block(one) * (2 + _ends(src.stage, b.pp)) if one else 0
    pipe = block(round(one * sb)) * (2 + _ends(c_stage, c.pp)) if one and c.pp > 1 else 0
    base_gathered = sum(q.held * q.shard * q.itemsize for q in src.params if q.shard > 1 and q.role == "weight")
    # a layer not recomputed keeps its working set for each micro batch in flight; MindFormers recomputes a stage's
    # first layers, so their recompute runs after the kept layers' backward freed the current micro batch's: with
    # both, the larger of (recompute live, one micro batch fewer kept) and (no recompute live, every one kept)
    # (recompute [1, 1] of dp2 x mp2 x pp2: +17.5 % on stage 0 counting both in full, +0.7 % so)
    one_set = full * _working(b, c, src.recompute_shares or None, (src.recompute_set, "recompute"), scale)
    compute = 0.0
    # every point where the candidate's stage is the compile's in the same place and recomputes as it does; else
    # the compute peak's only (another stage's own working sets, a recompute's copies turned into kept ones)
    points = src.points if full == 0 and c.pp == b.pp else src.points[:1]
    for shares in points or [None]:
        live = _live(shares) if shares is not None else cp
        act = live.get("activation", 0) * sb * flight / src.in_flight * lk
        rec = _working(b, c, shares, (live.get("recompute", 0), "recompute"), scale) if full < n_layers else 0
        rec = max(rec + (flight - 1) * one_set, flight * one_set) if full else rec
        comm = live.get("communication", 0)
        rest = max(0, comm - pipe_base)
        comm = max(0.0, comm + pipe - pipe_base + rest * ((gathered / base_gathered if base_gathered else sb) - 1))
        work = _working(b, c, shares, (live.get("backward", 0) + live.get("temporary", 0), "backward", "temporary"),
                        scale)
        compute = max(compute, fixed + act + rec + comm + work)
    base_w = sum(q.nbytes for q in src.params if q.role == "weight") or 1
    dyn_opt = sum(v for r, v in op.items() if r not in PARAM_ROLES and r not in ("constant", "input"))
    optim = fixed + dyn_opt * new_w / base_w
    return round(max(compute, optim))


def _live(shares: dict[Share, int]) -> dict[str, int]:
    out: dict[str, int] = {}
    for (role, *_), v in shares.items():
        out[role] = out.get(role, 0) + v
    return out


def _working(b: Basis, c: Candidate, shares: dict[Share, int] | None, what: tuple[Any, ...],
             scale: tuple[float, float]) -> float:
    """The live bytes of some roles (`what`: their total, then the roles), each tensor scaled by what splits it
    (`_factor`); without `shares` (a walk not read by share), all as split by dp and mp."""
    total, *roles = what
    if shares is None:
        return total * scale[1]
    return sum(v * _factor(b, c, k, scale) for k, v in shares.items() if k[0] in roles)


def _factor(b: Basis, c: Candidate, share: Share, scale: tuple[float, float]) -> float:
    """How a live tensor of the compile grows in `c` (`scale`: micro-batch size new / compiled, and that over new mp /
    compiled mp), from what splits it (lifetime.Share): one made from the step's data grows with the micro-batch
    size (its dimension 0, the batch, split by dp: that many of its pieces; not split by dp: with the micro batch
    over every dp rank); its other pieces are mp's (split by the new mp as the compile's); a tensor of the weights or
    constants only grows with its mp split; of unknown pieces, as split by dp and mp. A compile of mp 1 cannot tell
    which tensors mp would split: every one made from the data, as before."""
    _, data, pieces = share
    sb, sw = scale
    if pieces is None:
        return sw
    mp = b.mp / c.mp
    if not data:
        return mp if pieces > 1 else 1.0
    dp = b.dp if pieces % b.dp == 0 else 1
    grow = sb if dp == b.dp else sb * c.dp / b.dp
    return grow * (mp if pieces // dp > 1 or b.mp == 1 else 1.0)


def _layers_factor(b: Basis, src: StageBasis, where: tuple[int, int, Candidate], mp: int) -> float:
    """Kept activations for stage `where[1]` of `where[2]`, holding `where[0]` layers, against the compile's stage:
    its layers' share scales by the layers (a layer's output, split by dp only), the rest, the stage's own, stays (the
    embedding's output) but on the last stage (the head's logits, split by mp over the vocabulary: x compiled mp /
    new mp) and on a middle stage scaled from the first, which has no embedding (dp1 x mp2 x pp4 from dp2 x mp2 x pp2:
    +7.3 % and +3.9 % with the embedding's, -1.1 % and -1.6 % without)."""
    (n_layers, stage, c), share = where, src.kept_layer_share
    own = b.mp / mp if src.stage == b.pp - 1 else 0.0 if src.stage == 0 < stage < c.pp - 1 else 1.0
    return (1 - share) * own + share * n_layers / max(1, len(src.layers))


def _scale_layers(src: dict[int | None, Any], layers: list[int]) -> list[Any]:
    """The compile's rows for `layers` (a layer beyond the compile's: compiled layer `x % layers`'s row)."""
    have = [k for k in src if k is not None]
    return [src[x] if x in src else src[have[x % len(have)]] for x in layers] if have else []


def _rows(b: Basis, s: int, pp: int, attr: str) -> tuple[dict[int | None, Any], list[Any]]:
    merged: dict[int | None, Any] = {}
    for st in b.stages:
        merged.update({k: v for k, v in getattr(st, attr).items() if k is not None})
    extra = []
    for src in _source(b, s, pp):
        if pp == b.pp or (s == 0 and src is b.stages[0]) or (s == pp - 1 and src is b.stages[-1]):
            if None in getattr(src, attr):
                extra.append(getattr(src, attr)[None])
    return merged, extra


def _flops(b: Basis, c: Candidate, s: int, layers: list[int], rc: list[bool], sw: float) -> dict[str, float]:
    merged, extra = _rows(b, s, c.pp, "layer_flops")
    k = sw * c.micro / b.micro
    out: dict[str, float] = {}
    for row, on in zip(_scale_layers(merged, layers) + extra, rc + [any(rc)] * len(extra)):
        for ph, f in row.items():
            if ph == "recompute" and not on:
                continue
            out[ph] = out.get(ph, 0) + f * (k if ph != "optimizer" else 1)
    return out


def _comm(b: Basis, c: Candidate, s: int, which: tuple[list[int], list[bool]], sb: float, slices: dict
          ) -> tuple[dict[str, int], dict[str, list[int]]]:
    layers, rc = which
    merged, extra = _rows(b, s, c.pp, "layer_comm")
    k = sb * c.micro / b.micro
    out: dict[str, float] = {}
    for row, on in zip(_scale_layers(merged, layers) + extra, rc + [any(rc)] * len(extra)):
        for (cat, phase), v in row.items():
            if cat in ("optimizer-parallel", "gradient-aggregation", "pipeline") or \
                    (cat == "operator-forward" and c.mp == 1):
                continue
            if phase == "recompute" and not on:  # a recomputed copy's collectives run again with it
                continue
            out[cat] = out.get(cat, 0) + v * k
    src = _source(b, s, c.pp)[0]
    base_pipe = sum(v for row in src.layer_comm.values() for (x, _), v in row.items() if x == "pipeline")
    ends = _ends
    if c.pp > 1 and base_pipe and ends(src.stage, b.pp):
        out["pipeline"] = base_pipe / ends(src.stage, b.pp) * ends(s, c.pp) * k
    traffic = sum(n for (kind, *_), n in slices.items() if kind == "traffic")
    anew = sum(n for (kind, *_), n in slices.items() if kind == "sharded anew")
    if traffic or (anew and src.gather is not None):
        out["optimizer-parallel"] = traffic + anew * (src.gather or 0.0)
    gathers = _slice_gathers(b, c, (layers, rc), sb)
    if gathers:
        out["redistribution"] = out.get("redistribution", 0) + gathers  # rules.py R6s: a layout gathered back
    reduced = sum(n for (kind, *_), n in slices.items() if kind == "reduced")
    if reduced and src.reduce is not None:
        out["gradient-aggregation"] = reduced * src.reduce
    sizes = {"operator-forward": [c.mp], "pipeline": [2],
             "gradient-aggregation": sorted({slices[k] for k in slices if k[0] == "copies"}),
             "optimizer-parallel": sorted({slices[k] for k in slices if k[0] == "shard"})}
    return {k: round(v) for k, v in sorted(out.items()) if v}, {k: v for k, v in sizes.items() if k in out}


def _slice_gathers(b: Basis, c: Candidate, which: tuple[list[int], list[bool]], sb: float) -> float:
    """Bytes per step of the AllGathers that bring back activations kept sliced (`slicing`): each layer's marked
    output read by the next layer on the stage when that one is recomputed, sliced over the ranks holding identical
    copies of it (its split re-derived: dimension 0, the batch, by dp; another split dimension as mp's) when its
    dimension 0 at the new micro-batch size divides by them; once per micro batch, the whole output."""
    layers, rc = which
    marked = {m.layer: m for st in b.stages for m in st.marked if m.layer is not None}
    if not marked:
        return 0.0
    out = 0.0
    for i, x in enumerate(layers[:-1]):
        m = marked.get(x % b.layers)
        if m is None or not rc[i + 1] or m.split is None or not m.dim0 or not m.nbytes or not m.runs:
            continue
        split = [c.dp if d == 0 else (v * c.mp // b.mp if v > 1 else 1) for d, v in enumerate(m.split)]
        copies = c.dp * c.mp // max(1, math.prod(split))
        dim0 = m.dim0 * sb
        if copies > 1 and dim0 == int(dim0) and int(dim0) % copies == 0:
            out += m.nbytes * sb * m.runs * c.micro / b.micro
    return out


def _phases(b: Basis, c: Candidate, s: int, which: tuple[list[int], list[bool]], sw: float) -> dict[str, float]:
    """Stage `s`'s seconds per step by phase (and its exposed communication): the compile's per layer x micro batches,
    each layer re-timed at the new size (`_retime`); a layer's recompute dropped where it is not recomputed."""
    layers, rc = which
    merged, extra = _rows(b, s, c.pp, "layer_time")
    sb = sw * c.mp / b.mp
    k = c.micro / b.micro
    out = dict.fromkeys(("forward", "backward", "recompute", "exposed"), 0.0)
    for row, on in zip(_scale_layers(merged, layers) + extra, rc + [any(rc)] * len(extra)):
        for ph, v in _retime(b, row, (sw, sb, c.mp)).items():
            if ph != "recompute" or on:
                out[ph] += v * k
    return out


def _retime(b: Basis, row: LayerTime, scale: tuple[float, float, int]) -> dict[str, float]:
    """A layer's seconds per step at the new size (`scale`: tensors split by mp x micro-batch size, micro-batch size,
    mp): each operator re-timed on the profile (roofline: a small matrix product does not run at its FLOPs' share)
    with its FLOPs and bytes x the first, each tensor-parallel collective with its bytes x the second in a group of
    the new mp (latency per ring step), other collectives as they are (the weights' traffic); each phase x the
    re-timed work over the compile's. Without a profile or the work: x the first (the exposed time x the second)."""
    sw, sb, mp = scale
    key = (id(row), sw, sb, mp)
    if key in b._retimed:
        return b._retimed[key]
    p = b.profile
    out = {}
    for ph, v in row.seconds.items():
        work = [w for w in row.work if (w.tier is not None) == (ph == "exposed") and (ph == "exposed" or w.phase == ph)]
        old = sum(work_seconds(p, w) for w in work) if p is not None else 0.0
        if not old:
            out[ph] = v * (sb if ph == "exposed" else sw)
            continue
        new = sum(work_seconds(p, w, sb, mp) if w.category in _MP_COMM and w.group == b.mp else  # type: ignore[arg-type]
                  work_seconds(p, w, 1.0 if w.tier is not None else sw) for w in work)  # weights' traffic: as is
        out[ph] = v * new / old
    b._retimed[key] = out
    return out


_MP_COMM = frozenset({"operator-forward", "redistribution"})  # tensor-parallel collectives: groups of mp
