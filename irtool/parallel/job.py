"""The job a dump or a folder of dumps compiles (docs/parallel.md §18): world size, rank layout,
pipeline stages and what each holds, micro batches, recompute, optimizer and its sharding,
gradient accumulation — each value with its evidence (`file:line`) or why it is unknown.

One rank tells what its own dump shows (`RankJob`, made in the worker that read the rank, from the
fact table); a folder's `Job` folds its ranks' (`job_of`), and names the stages no rank read is on.
Every command reads the job from here; none works these figures out again.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from math import prod
from typing import Any, Iterable

from .cost import ATTENTION, SEQUENCE_DIM, attention_layout
from .model_dims import ModelDims, ffn_size, heads, kv_heads, model_dims
from .params import WEIGHT_VALUE, layer_index
from .records import CommNode, ParallelFacts, Strategy, _as_dict
from .rules import MIRRORS

# Update primitives of the optimizers MindSpore ships, by the name the job record gives them.
OPTIMIZER_OPS = {"SGD": "SGD", "ApplyMomentum": "Momentum", "Momentum": "Momentum", "Adam": "Adam",
                 "ApplyAdam": "Adam", "FusedAdam": "Adam", "AdamWeightDecay": "AdamWeightDecay",
                 "FusedAdamWeightDecay": "AdamWeightDecay", "FusedCastAdamWeightDecay": "AdamWeightDecay",
                 "AdamW": "AdamW", "Lamb": "Lamb", "LAMB": "Lamb", "ApplyAdagrad": "Adagrad",
                 "ApplyAdagradV2": "Adagrad", "ApplyRMSProp": "RMSProp", "ApplyCenteredRMSProp": "RMSProp",
                 "ApplyAdaMax": "AdaMax", "ApplyFtrl": "FTRL", "ApplyProximalAdagrad": "ProximalAdagrad",
                 "FusedSparseLazyAdam": "LazyAdam", "SparseApplyLazyAdam": "LazyAdam"}
_WORLD = ("_world_group",)


def _optimizer_cell(scope: str | None) -> str | None:
    """`LazyAdam` of a scope `Default/optimizer-LazyAdam/...`: the optimizer cell's class."""
    part = next((p for p in (scope or "").split("/") if "optim" in p.lower() and "-" in p), None)
    return part.split("-", 1)[1] if part else None
Sizes = dict[int, tuple[int, str]]  # group size -> (communication nodes using such a group, evidence of the first)


@dataclass(frozen=True)
class Evidence:
    """A value and where the dump shows it (`file:line`, what it is), or why it is unknown (value None)."""

    value: Any
    where: str  # `rank_0/19_validate_0089.ir:257 (Send to rank 4)`, or the reason it is unknown

    @property
    def known(self) -> bool:
        return self.value is not None

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "evidence" if self.known else "unknown": self.where}


def _at(file: str, c: CommNode | None, what: str) -> str:
    return f"{file}:{c.line} ({what})" if c is not None else what


def _unknown(why: str) -> Evidence:
    return Evidence(None, why)


@dataclass
class RankJob:
    """What one rank's dump shows of the job (picklable: made where the rank was read)."""

    rank: int | None
    file: str
    stage: int | None
    stage_sizes: Sizes  # collective groups within its stage (the largest spans it: dp x mp)
    world: Evidence
    span: Evidence  # ranks per stage from a pipeline peer's rank and stage (`stage_span`)
    mp: Sizes  # operator-forward (tensor-parallel) groups
    ep: Sizes  # expert-parallel (all-to-all dispatch and combine) groups
    sp: Sizes  # sequence-parallel (gather/scatter of sequence-split activations) groups
    cp: Sizes  # context-parallel (ring attention exchange, Ulysses all-to-all) groups
    micro: Evidence  # number of micro batches
    chunks: list[int]  # pipeline chunks / segments this rank's pipeline hops carry
    folded: bool  # they are a folded pipeline's segments (`segment` printed, no `chunk`), not interleaved chunks
    layers: list[int]  # layers whose parameters the rank's work reads
    layers_where: str
    recompute: list[int]  # layers with recomputed work
    dims: ModelDims  # the model's and the data's sizes (`model_dims`)
    optimizer: Evidence
    opt_shard: Sizes  # optimizer-parallel groups
    accumulation: Evidence  # gradient accumulation buffers (`accu_grads.*`) or micro-step mirrors
    training: bool  # the dump has an optimizer, accumulation or backward work
    hops: int = 0  # pipeline Send/Receive (a pass before step_parallel_end has them, but no stage yet)
    last: bool = False  # the last stage: forward work received from upstream, none sent downstream
    backward: bool = False  # the dump has backward work (recomputed copies come with it: before, recompute is unknown)
    parallel: bool = True  # the parallel pass has inserted its communication (no group degree is known before)
    recompute_where: str = ""  # the first recomputed copy, `file:line (op)`


def stage_span(comm: list[CommNode], rank: int | None, stage: int | None, name: str) -> Evidence:
    """Ranks per stage from a pipeline peer: MindSpore numbers the ranks stage by stage (stage s holds ranks
    s*n to s*n+n-1), so a Send/Receive of rank r on stage s with rank p on stage t says n = (p - r) / (t - s).
    A group of the stage cannot say it: its largest may be a loss mean over the data-parallel ranks alone."""
    if rank is None or stage is None:
        return _unknown("the rank or its stage unknown")
    for c in comm:
        if c.category == "pipeline" and c.peer_rank is not None and c.peer_stage not in (None, stage):
            n, rest = divmod(c.peer_rank - rank, c.peer_stage - stage)
            if rest == 0 and n > 0:
                return Evidence(n, _at(name, c, f"{c.op} with rank {c.peer_rank} on stage {c.peer_stage}"))
    return _unknown("no pipeline peer of known rank and stage")


def rank_job(facts: ParallelFacts, rank: int | None, file: str) -> RankJob:
    """The `RankJob` of one analysed dump (reads its fact table: call before `facts.release()`)."""
    t = facts.table
    name = file
    comm = facts.comm

    def sizes(keep: Iterable[CommNode], label: str) -> Sizes:
        out: Sizes = {}
        for c in keep:
            n = len(c.group_ranks) if c.group_ranks else None
            if n:
                count, where = out.get(n, (0, _at(name, c, f"{c.op} {label} on group {c.group}")))
                out[n] = (count + 1, where)
        return out

    collectives = [c for c in comm if c.op not in ("Send", "Receive") and c.group_ranks]
    worlds = [c for c in collectives if (c.group or "").endswith(_WORLD)] + \
             [c for c in comm if (c.group or "").endswith(_WORLD) and c.group_ranks]
    if worlds:
        world = Evidence(len(worlds[0].group_ranks), _at(name, worlds[0], f"{worlds[0].op} on {worlds[0].group}"))
    elif not comm and not facts.no_op_gathers and facts.kind != "pre" and not rank:
        world = Evidence(1, f"{name}: no communication after the parallel pass: one device")
    else:
        world = _unknown("no node of this rank uses the world group")
    span = stage_span(comm, rank, facts.stage, name)
    stage_sizes = sizes([c for c in collectives if c.category in ("gradient-aggregation", "operator-forward",
                                                                   "optimizer-parallel", "redistribution")
                         and not (c.group or "").endswith(_WORLD)], "within the stage")
    nodes = list(t.dump.nodes())
    marked = t.column("micro")
    micros = set(marked.values())
    last = next((n for n, m in marked.items() if m == max(micros)), None) if micros else None
    micro = Evidence(len(micros), f"{name}:{last.line} (micro {max(micros)}, {last.op})") if last is not None else \
        _unknown("no node carries a micro batch (`micro`)")
    params = t.get("parameters")
    layers: Counter = Counter()
    where = ""
    for pname, readers in params.readers.items():
        index = layer_index(pname)
        if index is None:
            continue
        work = next((n for n in readers if t("phase", n) != "optimizer"), None)  # not only updated: computed with
        if work is not None:
            layers[index] += 1
            if not where:
                where = f"{name}:{work.line} (reads {pname})"
    updates = [n for n in nodes if n.op in OPTIMIZER_OPS and t("phase", n) == "optimizer"]
    # without an update primitive (MindFormers' AdamW is written out), the optimizer cell whose nodes read the weights
    opt_scope = None if updates else next((n for readers in params.readers.values() for n in readers
                                           if n.scope and t("phase", n) == "optimizer"), None)
    if updates:
        # the optimizer class the user chose, when the update's scope names its cell (nn.LazyAdam updates its
        # dense parameters with `Adam`: `optimizer-LazyAdam/Adam-op0`), else the update primitive's optimizer
        u = updates[0]
        cell = _optimizer_cell(u.scope)
        named = cell or OPTIMIZER_OPS[u.op]
        how = u.op if named == OPTIMIZER_OPS[u.op] else f"{u.op} in {cell}"
        optimizer = Evidence(named, f"{name}:{u.line} ({how})")
    elif opt_scope is not None:
        cell = _optimizer_cell(opt_scope.scope)
        optimizer = Evidence(cell or opt_scope.scope, f"{name}:{opt_scope.line} (scope {opt_scope.scope})")
    else:
        optimizer = _unknown("no optimizer update in this pass")
    accu = next((n for n in params.readers if n.startswith("accu_grads.")), None)
    step = next((c for c in comm if c.op.startswith("_Mirror") and "Step" in c.op), None)
    accumulation = Evidence(True, f"{name}:{params.readers[accu][0].line} (buffer {accu})") if accu else \
        Evidence(True, _at(name, step, f"{step.op}")) if step is not None else \
        _unknown("no accumulation buffer (`accu_grads.*`) or micro-step mirror")
    # layers with recomputed work: of the weights the copies read (through the Load or Cast they read)
    by_key = t.get("by_key")
    copies = t.get("copies")
    recompute = {i for n in copies for p in params.reached_by(n, by_key[n.graph])
                 if (i := layer_index(p)) is not None}
    backward = any(c.phase == "backward" for c in comm) or any(t("phase", n) == "backward" for n in nodes)
    hops = [c for c in comm if c.category == "pipeline" and c.direction]
    gradients = {c.group_ranks for c in comm if c.category == "gradient-aggregation" and c.group_ranks}
    forward_hops = [c for c in hops if c.phase == "forward"]
    return RankJob(
        rank=rank, file=name, stage=facts.stage, stage_sizes=stage_sizes, world=world, span=span,
        mp=sizes([c for c in collectives if c.category in ("operator-forward", "sequence-parallel")
                  and c.op not in ("AlltoAll", "AllToAll") and not (c.group or "").endswith(_WORLD)
                  and _tensor_parallel(t, c, gradients)], "tensor parallel"),
        ep=sizes([c for c in collectives if c.category == "expert-parallel"], "expert-parallel all-to-all"),
        sp=sizes([c for c in collectives if c.category == "sequence-parallel"], "sequence-parallel"),
        cp=sizes([c for c in comm if c.category == "context-parallel" and c.group_ranks
                  and not (c.group or "").endswith(_WORLD)], "context-parallel") or _sequence_split(t, name, comm),
        micro=micro,
        chunks=sorted({c.segment for c in comm if c.category == "pipeline" and c.segment is not None}),
        folded=any(c.category == "pipeline" and c.segment is not None and c.chunk is None for c in comm),
        layers=sorted(layers), layers_where=where, recompute=sorted(recompute),
        dims=model_dims(t, t.dump, name, whole=facts.kind == "pre"), optimizer=optimizer,
        opt_shard=sizes([c for c in comm if c.category == "optimizer-parallel"], "optimizer shard"),
        accumulation=accumulation, training=optimizer.known or accumulation.known or backward,
        backward=backward, parallel=facts.kind != "pre",
        recompute_where=f"{name}:{copies[0].line} ({copies[0].op}, `duplicated`)" if copies else "",
        # the last stage sends no forward work to a later stage (a folded or interleaved one sends it round to stage 0)
        hops=len(hops), last=facts.stage is not None and bool(forward_hops) and not any(
            c.op == "Send" and (c.peer_stage is None or c.peer_stage > facts.stage) for c in forward_hops))


def _tensor_parallel(t: Any, c: CommNode, gradients: set[tuple[int, ...]]) -> bool:
    """The collective does tensor-parallel work: a sequence-parallel gather or scatter, the communication of an
    operator splitting a weight (a MatMul's contracted dimension, an embedding's vocabulary: one of its inputs is a
    parameter's value, `_weight_input`, split over ranks), or one of an operator of no weight on other ranks than the
    gradients are reduced over (a vocabulary-parallel loss's maximum and sum). The mean of a loss or a MoE router's
    expert load reduces activations split by batch over the ranks the gradients are reduced over, the data-parallel
    ones (`gradients`): an operator-forward AllReduce, not tensor parallelism (issue 37). Where the operator served
    shows no strategy (a kernel graph) the collective counts."""
    if c.category == "sequence-parallel" or not c.serves or "/%" not in c.serves or c.group_ranks not in gradients:
        return True
    graph, _, key = c.serves.rpartition("/")
    try:
        local = t.get("by_key")[graph]
    except KeyError:  # not a graph of this dump
        return True
    n = local.get(key)
    s = t.column("strategy").get(n) if n is not None else None
    if s is None:
        return True
    splits = _input_splits(s)
    params = t.get("parameters")
    return any(k is None or k > 1 for i, k in enumerate(splits) if _weight_input(n, i, local, params))


def _input_splits(s: Strategy) -> list[int | None]:
    """Into how many pieces each input of an operator is split: the product of its `in_strategy` row, or of the
    device-matrix dimensions its `in_layout` tensor map names (counted from the right, -1 none); None unreadable."""
    out: list[int | None] = []
    if isinstance(s.in_strategy, (tuple, list)):
        for row in s.in_strategy:
            ok = isinstance(row, (tuple, list)) and all(isinstance(x, int) for x in row)
            out.append(prod(row) if ok else None)
        return out
    for layout in s.in_layout if isinstance(s.in_layout, (tuple, list)) else ():
        matrix = layout.get("device_matrix") if isinstance(layout, dict) else None
        tmap = layout.get("tensor_map") if isinstance(layout, dict) else None
        if not isinstance(matrix, (tuple, list)) or not isinstance(tmap, (tuple, list)):
            out.append(None)
            continue
        axes = [a for m in tmap for a in (m if isinstance(m, (tuple, list)) else (m,))]
        ok = all(isinstance(a, int) and -1 <= a < len(matrix) for a in axes)
        out.append(prod([matrix[len(matrix) - 1 - a] for a in axes if a != -1]) if ok else None)
    return out


def _weight_input(n: Any, index: int, local: dict, params: Any) -> bool:
    """Input `index` of `n` is a parameter's value: a header parameter, or a `Load` (which reads a Parameter, not an
    activation: a lazy-inline layer's weights come in as its graph's parameters and are loaded there), through what
    passes a weight's value on (casts, the optimizer-parallel gather of its shard, before autodiff a mirror or
    `_VirtualAssignAdd`)."""
    for _ in range(8):
        ins = n.inputs
        ref = ins[index].ref if len(ins) > index else None
        index = 0
        if ref is None:
            return False
        if ref.kind != "node":
            return params.name_of(ref.name) is not None
        src = local.get(ref.name)
        if src is None or not (src.op in WEIGHT_VALUE or src.op in MIRRORS or src.op.startswith("_Virtual")):
            return False
        if src.op == "Load":
            return True
        n = src
    return False


def _sequence_split(t: Any, file: str, comm: list[CommNode]) -> Sizes:
    """Context parallelism over the world group (ring attention's Send/Receive or NeighborExchange name their
    peers on `nccl_world_group`: the group says nothing of the ring): the split of the sequence dimension of
    the attention's query in its `in_strategy` (flash_attention_sp_8p: BSH `(2, 2, 2)`, 2)."""
    if not any(c.category == "context-parallel" for c in comm):
        return {}
    out: Sizes = {}
    for n, s in t.column("strategy").items():
        if n.op not in ATTENTION or not isinstance(s.in_strategy, (tuple, list)) or not s.in_strategy:
            continue
        dim = SEQUENCE_DIM.get(attention_layout(n))
        first = s.in_strategy[0]
        if dim is not None and isinstance(first, (tuple, list)) and dim < len(first) and isinstance(first[dim], int):
            count, where = out.get(first[dim], (0, f"{file}:{n.line} ({n.op} splits the sequence {first[dim]} ways: "
                                                      f"in_strategy {s.in_strategy[0]})"))
            out[first[dim]] = (count + 1, where)
    return out


@dataclass
class Job:
    """A folder's job (or one file's, as far as it tells), every field an `Evidence`."""

    ranks: list[int | None]  # read
    world_size: Evidence
    pipeline_stages: Evidence
    stages_read: list[int]
    stages_absent: list[int]  # stages of the pipeline no rank read is on
    dp: Evidence
    mp: Evidence
    ep: Evidence
    sp: Evidence
    cp: Evidence
    micro_batches: Evidence
    chunks: Evidence  # model chunks per stage (interleaved) or pipeline segments (folded); 1 without either
    folded: bool  # `chunks` are a folded pipeline's segments (`pipeline_segments`), not interleaved model chunks
    stage_ranks: dict[int, list[int | None]]
    stage_layers: dict[int, list[int]]
    stage_layers_where: dict[int, str]
    recompute: dict[int, list[int]]  # stage -> layers with recomputed work
    recompute_layers: Evidence  # every stage's, sorted; unknown in a pass without backward work
    optimizer: Evidence
    optimizer_shard: Evidence  # group size of the optimizer-parallel shards (1: not sharded)
    gradient_accumulation: Evidence
    # the model's and the data's sizes (`model_dims`): what changes the work besides the parallel layout
    global_batch: Evidence  # samples per training step, every micro batch and data-parallel rank
    num_layers: Evidence  # the layers of every stage, when every stage was read
    hidden_size: Evidence
    ffn_size: Evidence
    heads: Evidence  # attention heads
    kv_heads: Evidence  # key-value heads (fewer than the heads: grouped-query attention)
    vocab_size: Evidence
    sequence_length: Evidence
    training: bool
    notes: list[str] = field(default_factory=list)
    micro_seen: list[int] = field(default_factory=list)  # every count of micro batches a rank read says (JSON: notes)

    def as_dict(self) -> dict[str, Any]:
        d = _as_dict(self, skip=("micro_seen",))
        for k, v in vars(self).items():
            if isinstance(v, Evidence):
                d[k] = v.as_dict()
        d["stage_ranks"] = {str(k): v for k, v in self.stage_ranks.items()}
        d["stage_layers"] = {str(k): v for k, v in self.stage_layers.items()}
        d["stage_layers_where"] = {str(k): v for k, v in self.stage_layers_where.items()}
        d["recompute"] = {str(k): v for k, v in self.recompute.items()}
        return d


def _one(sizes: Sizes, what: str, default: int | None = None, default_why: str = "") -> Evidence:
    """One degree from the group sizes the ranks show: the size most of the nodes use (the others said)."""
    if not sizes:
        return Evidence(default, default_why) if default is not None else _unknown(default_why or f"no {what} group")
    ranked = sorted(sizes.items(), key=lambda kv: (-kv[1][0], kv[0]))
    (size, (count, where)), rest = ranked[0], ranked[1:]
    if rest and rest[0][1][0] == count:
        return _unknown(f"{what} groups of sizes {', '.join(str(k) for k, _ in ranked)}, as many nodes each")
    also = "; also " + ", ".join(f"groups of {k} ({n} nodes)" for k, (n, _) in rest) if rest else ""
    return Evidence(size, f"{where}, {count} nodes{also}")


def _add(into: Sizes, sizes: Sizes) -> None:
    for k, (n, where) in sizes.items():
        into[k] = (into.get(k, (0, where))[0] + n, into.get(k, (0, where))[1])


class JobFold:
    """The job of a folder folded rank by rank as the ranks arrive (`add`), holding sets and the first
    evidence of each value, never the ranks' records: a thousand ranks cost what eight do."""

    def __init__(self) -> None:
        self.ranks: list[int | None] = []
        self.world: Evidence | None = None
        self.span: Evidence | None = None
        self.top_rank: int | None = None
        self.stage_sizes: Sizes = {}
        self.mp: Sizes = {}
        self.ep: Sizes = {}
        self.sp: Sizes = {}
        self.cp: Sizes = {}
        self.opt_shard: Sizes = {}
        self.micro: dict[int, Evidence] = {}
        self.chunks: set[int] = set()
        self.folded = False
        self.stage_ranks: dict[int, list[int | None]] = {}
        self.stage_layers: dict[int, set[int]] = {}
        self.where: dict[int, str] = {}
        self.recompute: dict[int, set[int]] = {}
        self.staged = False
        self.optimizer: Evidence | None = None
        self.accumulation: Evidence | None = None
        self.first: RankJob | None = None
        self.training = False
        self.backward = False
        self.parallel = False
        self.recompute_where = ""
        self.last: Evidence | None = None  # the stage count a rank of the last stage tells
        self.dims: dict[str, Evidence] = {}  # ModelDims field -> the first rank's that knows it
        self.per_rank = False  # the data input printed is one data-parallel rank's
        self.layer_weights: tuple = ()  # the lowest layer's 2-D MatMul weights a rank read (`ModelDims.layer_weights`)
        self.attention: tuple = ()  # the 4-D BatchMatMuls the ranks read (`ModelDims.attention`), each shape once

    def add(self, r: RankJob) -> None:
        self.first = self.first or r
        self.ranks.append(r.rank)
        if r.rank is not None:
            self.top_rank = max(r.rank, self.top_rank or 0)
        if self.world is None and r.world.known:
            self.world = r.world
        if self.span is None and r.span.known:
            self.span = r.span
        for mine, theirs in ((self.stage_sizes, r.stage_sizes), (self.mp, r.mp), (self.ep, r.ep), (self.sp, r.sp),
                             (self.cp, r.cp), (self.opt_shard, r.opt_shard)):
            _add(mine, theirs)
        if r.micro.known:
            self.micro.setdefault(r.micro.value, r.micro)
        self.chunks.update(r.chunks)
        self.folded |= r.folded
        self.staged |= r.stage is not None or bool(r.chunks) or r.hops > 0
        if r.last and r.stage is not None and self.last is None:
            self.last = Evidence(r.stage + 1, f"rank {r.rank} is on the last stage, {r.stage}: it sends no forward work "
                                              f"to a later stage ({r.file})")
        s = r.stage if r.stage is not None else 0
        self.stage_ranks.setdefault(s, []).append(r.rank)
        if r.layers:
            self.stage_layers.setdefault(s, set()).update(r.layers)
            self.where.setdefault(s, r.layers_where)
        if r.recompute:
            self.recompute.setdefault(s, set()).update(r.recompute)
        if self.optimizer is None and r.optimizer.known:
            self.optimizer = r.optimizer
        if self.accumulation is None and r.accumulation.known:
            self.accumulation = r.accumulation
        self.training |= r.training
        self.backward |= r.backward
        self.parallel |= r.parallel
        self.recompute_where = self.recompute_where or r.recompute_where
        for name, seen in vars(r.dims).items():
            if name == "per_rank":
                self.per_rank |= seen
            elif name == "layer_weights":  # the lowest layer's of every rank's
                if seen and (not self.layer_weights or seen[0][0] < self.layer_weights[0][0]):
                    self.layer_weights = seen
            elif name == "attention":
                self.attention += tuple(a for a in seen if all(a[:2] != b[:2] for b in self.attention))
            elif name not in self.dims or (seen[0] is not None and not self.dims[name].known):
                self.dims[name] = Evidence(*seen)

    def job(self) -> Job:
        notes: list[str] = []
        world = self.world or _unknown("no node uses the world group" + (
            f"; at least {self.top_rank + 1} (rank {self.top_rank} read)" if self.top_rank is not None else ""))
        top = max(self.stage_sizes, default=None)  # without a pipeline peer, the largest group within a stage
        stage_size = self.span or (Evidence(top, self.stage_sizes[top][1]) if top is not None
                                   else _unknown("no collective group"))
        read_per_stage = max((len(v) for v in self.stage_ranks.values()), default=0)
        if stage_size.known and read_per_stage > stage_size.value:  # the folder shows more ranks on a stage
            stage_size = Evidence(read_per_stage, f"{read_per_stage} ranks read on one stage")
        elif not stage_size.known and read_per_stage:
            stage_size = _unknown(f"at least {read_per_stage} (ranks read on one stage); " + stage_size.where)
        if not self.staged:
            stages = Evidence(1, "no pipeline Send/Receive: one stage")
        elif self.last is not None:
            stages = self.last
        elif world.known and stage_size.known and world.value % stage_size.value == 0:
            stages = Evidence(world.value // stage_size.value,
                              f"world size {world.value} / {stage_size.value} ranks per stage ({stage_size.where})")
        else:
            seen = ", ".join(map(str, sorted(s for s in self.stage_ranks if s is not None)))
            stages = _unknown(f"stages {seen or 'unknown'} seen; the world size, the ranks per stage and the last "
                              "stage unknown")
        if stages.known and world.known and stages.value and world.value % stages.value == 0 and \
                (not stage_size.known or stage_size.value * stages.value != world.value):
            stage_size = Evidence(world.value // stages.value, f"world size {world.value} / {stages.value} stages")
        elif not world.known and self.staged and stages.known and stage_size.known:
            world = Evidence(stage_size.value * stages.value,
                             f"{stage_size.value} ranks per stage x {stages.value} stages; {stage_size.where}")
        # before the parallel pass no group is inserted yet: a degree is unknown, not 1
        one = 1 if self.parallel else None

        def why(text: str) -> str:
            return text if self.parallel else "a pass before the parallel pass: no communication inserted yet"

        mp = _one(self.mp, "tensor-parallel", one, why("no tensor-parallel collective"))
        cp = _one(self.cp, "context-parallel", one, why("no context-parallel exchange"))
        # context parallelism splits the sequence over ranks of its own; sequence parallelism runs on the
        # tensor-parallel group and expert parallelism within the data-parallel ranks: neither takes ranks
        split = mp.value * cp.value if mp.known and cp.known else None
        what = f"mp {mp.value}" + (f" x cp {cp.value}" if cp.value != 1 else "") if split else ""
        if self.staged and stage_size.known and split and stage_size.value % split == 0:
            dp = Evidence(stage_size.value // split, f"{stage_size.value} ranks per stage / {what}")
        elif not self.staged and world.known and split and world.value % split == 0:
            dp = Evidence(world.value // split, f"world size {world.value} / {what}")
        else:
            dp = _unknown("the ranks per stage, mp or cp unknown")
        if len(self.micro) > 1:
            notes.append("ranks disagree on the number of micro batches: " + "; ".join(
                f"{m} ({e.where})" for m, e in sorted(self.micro.items())))
        micro = self.micro[max(self.micro)] if self.micro else \
            Evidence(1, "no pipeline and no node carries a micro batch (`micro`): the batch at once") \
            if not self.staged else _unknown("no node carries a micro batch (`micro`)")
        kind = "segments" if self.folded else "chunks"
        chunks = Evidence(len(self.chunks), f"pipeline Send/Receive of {kind} {', '.join(map(str, sorted(self.chunks)))}") \
            if self.chunks else Evidence(1, "no chunk or segment on pipeline Send/Receive" if self.staged else "no pipeline")
        absent = [s for s in range(stages.value) if s not in self.stage_ranks] if stages.known else []
        first = self.first
        layers = sorted({i for v in self.recompute.values() for i in v})
        recompute = Evidence(layers, self.recompute_where) if layers else \
            Evidence([], "no recomputed copy (`duplicated`) in a pass with backward work") if self.backward else \
            _unknown("no backward work in this pass: recomputed copies come with it")
        return Job(ranks=list(self.ranks), world_size=world, pipeline_stages=stages, stages_read=sorted(self.stage_ranks),
                   stages_absent=absent, dp=dp, mp=mp,
                   ep=_one(self.ep, "expert-parallel", one, why("no expert-parallel all-to-all")),
                   sp=_one(self.sp, "sequence-parallel", one, why("no sequence-parallel gather or scatter")),
                   cp=cp,
                   micro_batches=micro, chunks=chunks, folded=self.folded,
                   stage_ranks=dict(sorted(self.stage_ranks.items())),
                   stage_layers={s: sorted(v) for s, v in sorted(self.stage_layers.items())},
                   stage_layers_where=dict(sorted(self.where.items())),
                   recompute={s: sorted(v) for s, v in sorted(self.recompute.items())}, recompute_layers=recompute,
                   optimizer=self.optimizer or (first.optimizer if first else _unknown("no rank read")),
                   optimizer_shard=_one(self.opt_shard, "optimizer-parallel", one,
                                        why("no optimizer-parallel communication")),
                   gradient_accumulation=self.accumulation or (first.accumulation if first else _unknown("no rank read")),
                   global_batch=self._batch(dp, micro), num_layers=self._layer_count(stages, absent),
                   hidden_size=self._dim("hidden"), vocab_size=self._dim("vocab"), sequence_length=self._dim("sequence"),
                   ffn_size=self._with_hidden(ffn_size, self.layer_weights),
                   heads=self._with_hidden(heads, self.attention), kv_heads=self._with_hidden(kv_heads, self.attention),
                   training=self.training, notes=notes, micro_seen=sorted(self.micro))

    def _dim(self, name: str) -> Evidence:
        return self.dims.get(name) or _unknown("no rank read")

    def _with_hidden(self, rule: Any, seen: tuple) -> Evidence:
        """A size read beside the hidden size (`model_dims.ffn_size`, `model_dims.heads`, `model_dims.kv_heads`)."""
        hidden = self._dim("hidden")
        return Evidence(*rule(hidden.value, seen)) if hidden.known else _unknown("the hidden size unknown")

    def _batch(self, dp: Evidence, micro: Evidence) -> Evidence:
        """The global batch, and what it is made of: per data-parallel rank and micro batch x dp x micro batches."""
        e = self._dim("global_batch")
        if e.known and self.per_rank:
            e = Evidence(e.value * dp.value, f"{e.where}: one data-parallel rank's, x dp {dp.value}") if dp.known else \
                _unknown(f"{e.where}: one data-parallel rank's; dp unknown")
        if e.known and dp.known and micro.known and e.value % (dp.value * micro.value) == 0:
            return Evidence(e.value, f"{e.where}: {e.value // (dp.value * micro.value)} per data-parallel rank and "
                                     f"micro batch x dp {dp.value} x {micro.value} micro batches")
        return e

    def _layer_count(self, stages: Evidence, absent: list[int]) -> Evidence:
        held = sorted(set().union(*self.stage_layers.values()))
        if not held:
            return _unknown("no parameter of a numbered layer read")
        if not stages.known or absent:
            why = f"stage{'s' if len(absent) > 1 else ''} {', '.join(map(str, absent))} not read" if absent \
                else "the stage count unknown"
            return _unknown(f"layers {_ranges(held)} read; {why}")
        first = self.where[min(self.where)]
        return Evidence(len(held), f"layers {_ranges(held)} on the {stages.value} stage(s) read ({first})")


def _ranges(indices: list[int]) -> str:
    """[0, 1, 2, 4] -> `0-2, 4`."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def job_of(ranks: Iterable[RankJob]) -> Job:
    """The job of some ranks' evidence (`JobFold` over them)."""
    fold = JobFold()
    for r in ranks:
        fold.add(r)
    return fold.job()


# --- two jobs compared (`irtool diff` says this first, docs/diff.md) --------------------------------

# Fields whose change makes two compilations different parallel configurations of one network: the
# diff then compares them as one logical graph (`irtool.parallel.logical`), not rank with rank.
# The model's and the data's sizes: not the parallel layout, said before it (a FLOPs or weight ratio is theirs first).
MODEL = ("global_batch", "num_layers", "hidden_size", "ffn_size", "heads", "kv_heads", "vocab_size", "sequence_length")
STRUCTURAL = frozenset({*MODEL, "world_size", "dp", "mp", "pipeline_stages", "ep", "sp", "cp", "chunks",
                        "micro_batches", "stage_layers", "recompute_layers", "optimizer_shard"})
# The compared fields, in the order they are said.
_COMPARED = (*MODEL, "world_size", "dp", "mp", "pipeline_stages", "ep", "sp", "cp", "chunks", "micro_batches",
             "stage_layers", "recompute_layers", "optimizer", "optimizer_shard", "gradient_accumulation")


@dataclass(frozen=True)
class JobChange:
    """One field of the job that differs between two compilations, both values known (an unknown is
    never a change). `stage_layers` is per stage (`stage`); there a side without that stage at all
    (fewer pipeline stages) has the value None."""

    field: str  # a Job field name: micro_batches, stage_layers, recompute_layers, optimizer, dp, ...
    old: Any
    new: Any
    old_where: str = ""  # the evidence of each value
    new_where: str = ""
    stage: int | None = None

    @property
    def structural(self) -> bool:
        return self.field in STRUCTURAL

    @property
    def model(self) -> bool:
        """A size of the model or its data (`MODEL`), not of the parallel layout."""
        return self.field in MODEL

    def as_dict(self) -> dict[str, Any]:
        return {"field": self.field, "stage": self.stage, "old": self.old, "new": self.new,
                "old_evidence": self.old_where, "new_evidence": self.new_where, "structural": self.structural,
                "model": self.model}


def _stage_value(job: Job, stage: int) -> tuple[bool, list[int] | None, str]:
    """(known, layers, evidence) of one stage's layers: its layers when a rank on it was read; None
    when the pipeline has no such stage; unknown when the stage exists and was not read."""
    if stage in job.stage_ranks:
        return True, job.stage_layers.get(stage, []), job.stage_layers_where.get(stage, "")
    if job.pipeline_stages.known and stage >= job.pipeline_stages.value:
        return True, None, f"{job.pipeline_stages.value} pipeline stages ({job.pipeline_stages.where})"
    return False, None, ""


def _layers_known(job: Job) -> set[int] | None:
    """The layers whose recompute the job knows: those of the stages read; None (all) when every stage was read."""
    if job.pipeline_stages.known and not job.stages_absent:
        return None
    return set().union(*job.stage_layers.values())


def job_changes(old: Job, new: Job) -> list[JobChange]:
    """The fields of two jobs that differ, both values known, in the order they are said
    (configuration first: ranks, degrees, micro batches, stages and their layers, recompute, optimizer)."""
    out: list[JobChange] = []
    for name in _COMPARED:
        if name == "stage_layers":
            if old.stage_layers or new.stage_layers:  # a pass that shows what stages hold
                for s in sorted(set(old.stage_ranks) | set(new.stage_ranks)):
                    (ka, a, wa), (kb, b, wb) = _stage_value(old, s), _stage_value(new, s)
                    if ka and kb and a != b:
                        out.append(JobChange(name, a, b, wa, wb, stage=s))
            continue
        ea, eb = getattr(old, name), getattr(new, name)
        a, b = ea.value, eb.value
        if name == "recompute_layers" and ea.known and eb.known:
            # a layer's recompute is known where a stage holding it was read, or where every stage was read (a layer
            # the job does not have is not recomputed): the layers only one side's unread stages may hold are left out
            ka, kb = _layers_known(old), _layers_known(new)
            a = sorted(i for i in a if kb is None or i in kb)
            b = sorted(i for i in b if ka is None or i in ka)
        if ea.known and eb.known and a != b:
            out.append(JobChange(name, a, b, ea.where, eb.where))
    return out
